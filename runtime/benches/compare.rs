//! Throughput of the metric pass on two f32 tensors (`cargo bench -p runtime`).
//! The reference point: NumPy's float64 metrics (msprobe style) read about
//! 0.4 GB/s on the development machine (shared/reference/candle.md, section 5).

use std::time::Instant;

fn main() {
    let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(50_000_000);
    let bench: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.618_034).sin()).collect();
    let tested: Vec<f32> = bench.iter().enumerate().map(|(i, v)| v + 1e-4 * ((i % 7) as f32 - 3.0)).collect();
    for round in 0..3 {
        let start = Instant::now();
        let m = runtime::compare::compare_f32(&tested, &bench).expect("equal lengths");
        let secs = start.elapsed().as_secs_f64();
        let gbs = (2 * n * std::mem::size_of::<f32>()) as f64 / secs / 1e9;
        println!(
            "round {round}: {n} elements in {secs:.3} s ({gbs:.2} GB/s), cosine {:.9}, max_abs {:.3e}, binned {}",
            m.cosine,
            m.max_abs,
            m.rel_hist.iter().sum::<u64>()
        );
    }
}
