//! Accuracy metrics of a tested result against its bench, computed exactly
//! as the generated Python scripts do (`metrics` and `compare_leaf` in
//! `python/msprobe_rs/repro/`, the scripts' machinery), so that a native replay and a
//! script give the same verdicts and messages.
//!
//! Over the elements finite on both sides: cosine similarity (1.0 when both
//! sides are all zero, 0.0 when exactly one is, clamped to [-1, 1]), max
//! absolute error `max|t - b|` and max relative error
//! `max(|t - b| / (|b| + 1e-8 * [b == 0]))`; over all elements: NaN and Inf
//! counts and whether their positions (and the signs of the infinities)
//! agree. Everything is accumulated in f64 in one pass over both slices,
//! split into fixed chunks that run in parallel for large inputs and are
//! combined in order, so the result does not depend on the thread count.

use std::cmp::Ordering;
use std::fmt;

use rayon::prelude::*;

use crate::pyfmt::{format_g6, repr};

/// Elements per chunk: the unit of parallel work and of partial sums.
const CHUNK: usize = 1 << 16;
/// Below this many elements, threads cost more than they save.
const PARALLEL_MIN: usize = 1 << 17;
/// Largest magnitudes for which unscaled f64 sums of squares can neither
/// overflow nor lose the largest terms to underflow; outside it, the cosine
/// is recomputed on values divided by their max-abs, as NumPy's code does.
const SAFE_MAGNITUDE: std::ops::RangeInclusive<f64> = 1e-100..=1e100;

/// Bins of [`Metrics::rel_hist`], the histogram of the element-wise relative
/// errors `|t - b| / (|b| + 1e-8 * [b == 0])` over the pairs finite on both
/// sides, counted in the metric pass itself: bin 0 holds exact matches,
/// bin 1 errors below `2^HIST_MIN_EXP`, bin `i` in `2..HIST_BINS - 1` errors
/// in `[2^(HIST_MIN_EXP + 3(i-2)), 2^(HIST_MIN_EXP + 3(i-1)))` (log-spaced,
/// about 0.9 decade each), the last bin errors of `2^(HIST_MIN_EXP + 3(HIST_BINS-3))`
/// (512) and more. The bin is read off the float's exponent bits: no log.
pub const HIST_BINS: usize = 18;
/// The binary exponent of the lower edge of bin 2 (2^-36 ≈ 1.5e-11).
pub const HIST_MIN_EXP: i32 = -36;

/// The lower edge of histogram bin `i` (0 for bins 0 and 1).
pub fn hist_lower_edge(i: usize) -> f64 {
    if i < 2 {
        0.0
    } else {
        2f64.powi(HIST_MIN_EXP + 3 * (i as i32 - 2))
    }
}

/// The histogram bin of a nonzero relative error by its biased exponent
/// (0 for subnormals, which fall in bin 1).
static BIN_OF_EXP: [u8; 2048] = {
    let mut t = [0u8; 2048];
    let mut e = 0;
    while e < 2048 {
        let k = e as i32 - 1023 - HIST_MIN_EXP;
        let bin = if k < 0 { 1 } else { 2 + k as usize / 3 };
        t[e] = if bin > HIST_BINS - 1 { (HIST_BINS - 1) as u8 } else { bin as u8 };
        e += 1;
    }
    t
};

/// The histogram bin of a finite, non-negative relative error.
#[inline(always)]
fn rel_bin(r: f64) -> usize {
    let bits = r.to_bits();
    usize::from(BIN_OF_EXP[(bits >> 52) as usize & 0x7ff]) * usize::from(bits << 1 != 0)
}

/// The verdict of one details row, as the report writes it. The order is
/// the severity a result row and the exit code take the worst of:
/// `Pass < Warning < Skip < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Within the standard's bounds (the device is accurate here).
    Pass,
    /// Between a standard's pass and error bounds (only `--standard api`
    /// defines one): worth a look, not a failure.
    Warning,
    /// This call cannot be judged here (unknown op, unsupported argument,
    /// a framework without a kernel, an unreadable input in a batch): the
    /// tool's coverage, not the device's accuracy. The reason is in Message.
    Skip,
    /// The device's result is outside the standard's bounds.
    Error,
}

impl Status {
    /// The CSV spelling: `pass`, `warning`, `skip` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warning => "warning",
            Status::Skip => "skip",
            Status::Error => "error",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The two sides cannot be compared element by element.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot compare: tested has {tested} elements, bench has {bench}")]
pub struct CompareError {
    /// Elements on the tested side.
    pub tested: usize,
    /// Elements on the bench side.
    pub bench: usize,
}

/// The metrics of one output: what a details row reports and what the
/// verdict is decided on.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// Elements compared (both sides have this many).
    pub len: usize,
    /// Cosine similarity over the elements finite on both sides.
    pub cosine: f64,
    /// Max absolute error over the elements finite on both sides.
    pub max_abs: f64,
    /// Max relative error over the elements finite on both sides.
    pub max_rel: f64,
    /// NaN elements of the tested side.
    pub tested_nan: usize,
    /// Infinite elements of the tested side.
    pub tested_inf: usize,
    /// NaN elements of the bench side.
    pub bench_nan: usize,
    /// Infinite elements of the bench side.
    pub bench_inf: usize,
    /// True when NaN positions, Inf positions or Inf signs differ.
    pub nonfinite_differ: bool,
    /// Element-wise relative errors over the finite pairs, binned (see [`HIST_BINS`]).
    pub rel_hist: [u64; HIST_BINS],
}

/// Compares `tested` against `bench`, element by element.
pub fn compare(tested: &[f64], bench: &[f64]) -> Result<Metrics, CompareError> {
    compare_with(tested, bench, tested.len() >= PARALLEL_MIN)
}

/// [`compare`] for f32 data (accumulating in f64), without first widening
/// whole tensors: half the memory traffic for the common dtype.
pub fn compare_f32(tested: &[f32], bench: &[f32]) -> Result<Metrics, CompareError> {
    compare_with(tested, bench, tested.len() >= PARALLEL_MIN)
}

impl Metrics {
    /// The verdict and message of a details row, with the Python script's
    /// exact texts: a NaN/Inf disagreement, a cosine not above
    /// `cos_threshold`, a max absolute error not below `abs_threshold`
    /// (joined by `"; "`); a note when the bench has NaN/Inf in the same
    /// places; `"empty tensor"` (a pass) when there are no elements, in
    /// which case the row carries no metrics.
    pub fn status(&self, cos_threshold: f64, abs_threshold: f64) -> (Status, String) {
        if self.len == 0 {
            return (Status::Pass, "empty tensor".into());
        }
        let mut problems = Vec::new();
        if self.nonfinite_differ {
            problems.push(format!(
                "NaN/Inf differ: tested has {} NaN and {} Inf, bench has {} NaN and {} Inf",
                self.tested_nan, self.tested_inf, self.bench_nan, self.bench_inf
            ));
        }
        // `not x > th` / `not x < th` in Python: a NaN fails both.
        if self.cosine.partial_cmp(&cos_threshold) != Some(Ordering::Greater) {
            problems.push(format!("cosine similarity {} is not above the threshold {}", format_g6(self.cosine), repr(cos_threshold)));
        }
        if self.max_abs.partial_cmp(&abs_threshold) != Some(Ordering::Less) {
            problems.push(format!("max absolute error {} is not below the threshold {}", format_g6(self.max_abs), repr(abs_threshold)));
        }
        if !problems.is_empty() {
            (Status::Error, problems.join("; "))
        } else if self.bench_nan + self.bench_inf > 0 {
            (Status::Pass, "NaN/Inf at the same places on both sides; metrics over the finite elements".into())
        } else {
            (Status::Pass, String::new())
        }
    }
}

/// The element types the metrics read.
trait Element: Copy + Send + Sync {
    fn widen(self) -> f64;
}

impl Element for f64 {
    fn widen(self) -> f64 {
        self
    }
}

impl Element for f32 {
    fn widen(self) -> f64 {
        f64::from(self)
    }
}

/// Sums and extremes of one chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Partial {
    finite: usize,
    dot: f64,
    tt: f64,
    bb: f64,
    max_t: f64,
    max_b: f64,
    max_abs: f64,
    max_rel: f64,
    t_nan: usize,
    t_inf: usize,
    b_nan: usize,
    b_inf: usize,
    differ: bool,
    hist: [u64; HIST_BINS],
}

/// Lanes of the fast pass: independent accumulators the compiler can keep
/// in vector registers.
const LANES: usize = 8;

impl Partial {
    /// The chunk's partial: the fast pass, or the careful one when the fast
    /// pass reveals a NaN, an Inf or an overflow.
    fn of<T: Element>(tested: &[T], bench: &[T]) -> Self {
        #[cfg(target_arch = "x86_64")]
        if crate::simd::has_avx2() {
            // SAFETY: the CPU has AVX2 (simd::has_avx2).
            if let Some(p) = unsafe { Self::fast_avx2(tested, bench) } {
                return p;
            }
            return Self::careful(tested, bench);
        }
        match Self::fast(tested, bench) {
            Some(p) => p,
            None => Self::careful(tested, bench),
        }
    }

    /// [`Partial::fast`]'s AVX2 twin ([`crate::simd`]).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn fast_avx2<T: Element>(tested: &[T], bench: &[T]) -> Option<Self> {
        Self::fast(tested, bench)
    }

    /// Sums and maxima with no NaN/Inf bookkeeping. Its own results tell
    /// whether that was valid: any NaN or Inf (or a square that overflows)
    /// makes a sum of squares non-finite, and then `None` is returned.
    #[inline(always)]
    fn fast<T: Element>(tested: &[T], bench: &[T]) -> Option<Self> {
        // dot, tt, bb, max_t, max_b, max_abs, max_rel
        let mut acc = [[0.0f64; LANES]; 7];
        // One histogram per lane: neighbouring errors mostly fall in one
        // bin, and a single table's count would wait on its own previous
        // store element after element.
        let mut hists = [[0u64; HIST_BINS]; LANES];
        let lane = |k: usize, t: f64, b: f64, acc: &mut [[f64; LANES]; 7]| -> f64 {
            let d = (t - b).abs();
            let den = b.abs() + if b == 0.0 { 1e-8 } else { 0.0 };
            acc[0][k] += t * b;
            acc[1][k] += t * t;
            acc[2][k] += b * b;
            acc[3][k] = fmax(acc[3][k], t.abs());
            acc[4][k] = fmax(acc[4][k], b.abs());
            acc[5][k] = fmax(acc[5][k], d);
            let rel = d / den;
            acc[6][k] = fmax(acc[6][k], rel);
            rel
        };
        // The bins of a block's relative errors, counted after its
        // arithmetic so that stays vectorized: a table lookup on the
        // exponent bits, no branch. (A NaN or Inf makes the pass invalid
        // anyway, checked below; its bin is then discarded.)
        let mut count = |rels: &[f64]| {
            for (hist, &r) in hists.iter_mut().zip(rels) {
                hist[rel_bin(r)] += 1;
            }
        };
        let (tc, bc) = (tested.chunks_exact(LANES), bench.chunks_exact(LANES));
        let (tr, br) = (tc.remainder(), bc.remainder());
        for (t, b) in tc.zip(bc) {
            let mut rels = [0.0f64; LANES];
            for k in 0..LANES {
                rels[k] = lane(k, t[k].widen(), b[k].widen(), &mut acc);
            }
            count(&rels);
        }
        let mut rels = [0.0f64; LANES];
        for (k, (&t, &b)) in tr.iter().zip(br).enumerate() {
            rels[k] = lane(k, t.widen(), b.widen(), &mut acc);
        }
        count(&rels[..tr.len()]);
        let sum = |a: &[f64; LANES]| a.iter().sum::<f64>();
        let max = |a: &[f64; LANES]| a.iter().fold(0.0f64, |m, &x| fmax(m, x));
        let mut hist = [0u64; HIST_BINS];
        for lane in &hists {
            for (h, n) in hist.iter_mut().zip(lane) {
                *h += n;
            }
        }
        let p = Partial {
            finite: tested.len(),
            dot: sum(&acc[0]),
            tt: sum(&acc[1]),
            bb: sum(&acc[2]),
            max_t: max(&acc[3]),
            max_b: max(&acc[4]),
            max_abs: max(&acc[5]),
            max_rel: max(&acc[6]),
            hist,
            ..Partial::default()
        };
        (p.tt.is_finite() && p.bb.is_finite() && p.dot.is_finite() && p.max_abs.is_finite() && p.max_rel.is_finite()).then_some(p)
    }

    fn careful<T: Element>(tested: &[T], bench: &[T]) -> Self {
        let mut p = Partial::default();
        for (&t, &b) in tested.iter().zip(bench) {
            let (t, b) = (t.widen(), b.widen());
            let (t_nan, b_nan, t_inf, b_inf) = (t.is_nan(), b.is_nan(), t.is_infinite(), b.is_infinite());
            p.t_nan += usize::from(t_nan);
            p.b_nan += usize::from(b_nan);
            p.t_inf += usize::from(t_inf);
            p.b_inf += usize::from(b_inf);
            p.differ |= (t_nan != b_nan) | (t_inf != b_inf) | (t_inf & b_inf & (t != b));
            // Pairs not finite on both sides count as (0, 0): they add nothing.
            let finite = t.is_finite() & b.is_finite();
            let (t, b) = if finite { (t, b) } else { (0.0, 0.0) };
            p.finite += usize::from(finite);
            p.dot += t * b;
            p.tt += t * t;
            p.bb += b * b;
            p.max_t = fmax(p.max_t, t.abs());
            p.max_b = fmax(p.max_b, b.abs());
            let diff = (t - b).abs();
            p.max_abs = fmax(p.max_abs, diff);
            let rel = diff / if b == 0.0 { 1e-8 } else { b.abs() };
            p.max_rel = fmax(p.max_rel, rel);
            if finite && rel.is_finite() {
                p.hist[rel_bin(rel)] += 1;
            }
        }
        p
    }

    fn merge(mut self, o: &Partial) -> Self {
        self.finite += o.finite;
        self.dot += o.dot;
        self.tt += o.tt;
        self.bb += o.bb;
        self.max_t = self.max_t.max(o.max_t);
        self.max_b = self.max_b.max(o.max_b);
        self.max_abs = self.max_abs.max(o.max_abs);
        self.max_rel = self.max_rel.max(o.max_rel);
        self.t_nan += o.t_nan;
        self.t_inf += o.t_inf;
        self.b_nan += o.b_nan;
        self.b_inf += o.b_inf;
        self.differ |= o.differ;
        for (h, o) in self.hist.iter_mut().zip(&o.hist) {
            *h += o;
        }
        self
    }
}

/// `a.max(b)` without NaN handling, which costs a few percent of the pass:
/// no operand is NaN, since pairs not finite on both sides are zeroed.
fn fmax(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// Applies `f` to matching chunks of both sides and merges the results in chunk order.
fn over_chunks<T: Element, R: Send>(t: &[T], b: &[T], parallel: bool, f: impl Fn(&[T], &[T]) -> R + Sync) -> Vec<R> {
    if parallel {
        t.par_chunks(CHUNK).zip(b.par_chunks(CHUNK)).map(|(t, b)| f(t, b)).collect()
    } else {
        t.chunks(CHUNK).zip(b.chunks(CHUNK)).map(|(t, b)| f(t, b)).collect()
    }
}

fn compare_with<T: Element>(tested: &[T], bench: &[T], parallel: bool) -> Result<Metrics, CompareError> {
    if tested.len() != bench.len() {
        return Err(CompareError { tested: tested.len(), bench: bench.len() });
    }
    let p = over_chunks(tested, bench, parallel, Partial::of).iter().fold(Partial::default(), Partial::merge);
    let cosine = if p.finite == 0 || (p.max_t == 0.0 && p.max_b == 0.0) {
        1.0
    } else if p.max_t == 0.0 || p.max_b == 0.0 {
        0.0
    } else {
        let (dot, tt, bb) = if SAFE_MAGNITUDE.contains(&p.max_t) && SAFE_MAGNITUDE.contains(&p.max_b) {
            (p.dot, p.tt, p.bb)
        } else {
            scaled_sums(tested, bench, p.max_t, p.max_b, parallel)
        };
        (dot / (tt.sqrt() * bb.sqrt())).clamp(-1.0, 1.0)
    };
    Ok(Metrics {
        len: tested.len(),
        cosine,
        max_abs: p.max_abs,
        max_rel: p.max_rel,
        tested_nan: p.t_nan,
        tested_inf: p.t_inf,
        bench_nan: p.b_nan,
        bench_inf: p.b_inf,
        nonfinite_differ: p.differ,
        rel_hist: p.hist,
    })
}

/// Dot product and squared norms of the finite pairs divided by each side's
/// max-abs (NumPy's `t / scale_t`), for magnitudes whose squares would
/// overflow or underflow.
fn scaled_sums<T: Element>(tested: &[T], bench: &[T], scale_t: f64, scale_b: f64, parallel: bool) -> (f64, f64, f64) {
    let sums = over_chunks(tested, bench, parallel, |tested, bench| {
        let mut s = (0.0, 0.0, 0.0);
        for (&t, &b) in tested.iter().zip(bench) {
            let (t, b) = (t.widen(), b.widen());
            if t.is_finite() & b.is_finite() {
                let (t, b) = (t / scale_t, b / scale_b);
                s = (s.0 + t * b, s.1 + t * t, s.2 + b * b);
            }
        }
        s
    });
    sums.iter().fold((0.0, 0.0, 0.0), |a, s| (a.0 + s.0, a.1 + s.1, a.2 + s.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAN: f64 = f64::NAN;
    const INF: f64 = f64::INFINITY;

    fn m(t: &[f64], b: &[f64]) -> Metrics {
        compare(t, b).unwrap()
    }

    #[test]
    fn hand_computed_metrics() {
        // dot = 1*1 + 2*2 + 3*4 = 17; |t| = sqrt(14), |b| = sqrt(21).
        let r = m(&[1.0, 2.0, 3.0], &[1.0, 2.0, 4.0]);
        assert!((r.cosine - 17.0 / (14f64.sqrt() * 21f64.sqrt())).abs() < 1e-15);
        assert_eq!((r.max_abs, r.max_rel), (1.0, 0.25));
        // b == 0: the denominator is 1e-8.
        let r = m(&[1e-9, 1.0], &[0.0, 1.0]);
        assert_eq!(r.max_rel, 1e-9 / 1e-8);
        // 13 / (sqrt(13) * sqrt(13)) rounds to 1.0000000000000002: clamped.
        assert_eq!(m(&[2.0, 3.0], &[2.0, 3.0]).cosine, 1.0);
        assert!((m(&[1.0, -2.0], &[-1.0, 2.0]).cosine + 1.0).abs() < 1e-15);
    }

    #[test]
    fn all_zero_sides() {
        assert_eq!(m(&[0.0, 0.0], &[0.0, -0.0]).cosine, 1.0);
        assert_eq!(m(&[0.0, 0.0], &[0.0, 1.0]).cosine, 0.0);
        assert_eq!(m(&[1.0, 0.0], &[0.0, 0.0]).cosine, 0.0);
    }

    #[test]
    fn nan_and_inf_patterns() {
        let same = m(&[1.0, NAN, INF, -INF], &[1.0, NAN, INF, -INF]);
        assert!(!same.nonfinite_differ);
        assert_eq!((same.cosine, same.max_abs, same.max_rel), (1.0, 0.0, 0.0));
        assert_eq!(same.status(0.99, 1e-4), (Status::Pass, "NaN/Inf at the same places on both sides; metrics over the finite elements".into()));
        let sign = m(&[INF, 1.0], &[-INF, 1.0]);
        assert!(sign.nonfinite_differ);
        let moved = m(&[NAN, 1.0, 2.0], &[1.0, NAN, 2.0]);
        assert!(moved.nonfinite_differ);
        assert_eq!((moved.tested_nan, moved.bench_nan, moved.cosine), (1, 1, 1.0));
        assert_eq!(moved.status(0.99, 1e-4).1, "NaN/Inf differ: tested has 1 NaN and 0 Inf, bench has 1 NaN and 0 Inf");
        // Nothing finite on both sides: Python's metrics return (1.0, 0.0, 0.0).
        let none = m(&[NAN, INF], &[1.0, 2.0]);
        assert_eq!((none.cosine, none.max_abs, none.max_rel), (1.0, 0.0, 0.0));
    }

    #[test]
    fn empty_input_and_length_mismatch() {
        let e = m(&[], &[]);
        assert_eq!((e.len, e.cosine), (0, 1.0));
        assert_eq!(e.status(0.99, 1e-4), (Status::Pass, "empty tensor".into()));
        assert_eq!(compare(&[1.0], &[]).unwrap_err().to_string(), "cannot compare: tested has 1 elements, bench has 0");
    }

    #[test]
    fn verdict_messages_match_the_python_script() {
        let r = Metrics {
            len: 4,
            cosine: 0.9719641,
            max_abs: 1.110350001,
            max_rel: 3.0,
            tested_nan: 0,
            tested_inf: 2,
            bench_nan: 1,
            bench_inf: 0,
            nonfinite_differ: true,
            rel_hist: [0; HIST_BINS],
        };
        assert_eq!(
            r.status(0.99, 0.0001),
            (
                Status::Error,
                "NaN/Inf differ: tested has 0 NaN and 2 Inf, bench has 1 NaN and 0 Inf; \
                 cosine similarity 0.971964 is not above the threshold 0.99; \
                 max absolute error 1.11035 is not below the threshold 0.0001"
                    .into()
            )
        );
        let ok = Metrics { nonfinite_differ: false, bench_nan: 0, cosine: 0.999, max_abs: 1e-6, ..r };
        assert_eq!(ok.status(0.99, 1e-5), (Status::Pass, String::new()));
        // Equal to the threshold fails both ("not above", "not below").
        let edge = Metrics { cosine: 0.99, max_abs: 1e-5, ..ok };
        assert_eq!(
            edge.status(0.99, 1e-5).1,
            "cosine similarity 0.99 is not above the threshold 0.99; max absolute error 1e-05 is not below the threshold 1e-05"
        );
        assert_eq!(Metrics { cosine: NAN, ..ok }.status(0.99, 1e-5).0, Status::Error);
    }

    #[test]
    fn extreme_magnitudes_use_the_scaled_cosine() {
        let big = m(&[1e200, 2e200], &[1e200, 2e200]);
        assert!((big.cosine - 1.0).abs() < 1e-15);
        let tiny = m(&[5e-324, 1e-310], &[5e-324, 1e-310]);
        assert!((tiny.cosine - 1.0).abs() < 1e-15);
        let mixed = m(&[1e-200, 0.0], &[0.0, 1e-200]);
        assert_eq!(mixed.cosine, 0.0);
    }

    #[test]
    fn relative_error_histogram_counts_finite_pairs_by_log_bin() {
        // rel errors: 0, 0.25, 1e-12 (below 2^-36), 1000 (overflow bin); NaN pair not counted.
        let r = m(&[1.0, 5.0, 1.0 + 1e-12, 1001.0, NAN], &[1.0, 4.0, 1.0, 1.0, NAN]);
        assert_eq!(r.rel_hist.iter().sum::<u64>(), 4);
        assert_eq!((r.rel_hist[0], r.rel_hist[1], r.rel_hist[HIST_BINS - 1]), (1, 1, 1));
        // 0.25 = 2^-2: k = 34, bin 2 + 11 = 13, whose range [2^-3, 2^0) holds it.
        assert_eq!(r.rel_hist[13], 1);
        assert!(hist_lower_edge(13) <= 0.25 && 0.25 < hist_lower_edge(14));
        // The fast pass (all finite, more than one block of lanes) bins the same.
        let b: Vec<f64> = (1..=20).map(f64::from).collect();
        let mut t = b.clone();
        t[3] *= 1.25; // rel 0.25
        t[17] += 1e-12 * t[17]; // rel ~1e-12: bin 1
        let f = m(&t, &b);
        assert_eq!(f.rel_hist.iter().sum::<u64>(), 20);
        assert_eq!((f.rel_hist[0], f.rel_hist[1], f.rel_hist[13]), (18, 1, 1));
        assert_eq!(compare_f32(&[1.0, 0.0], &[1.0, 0.0]).unwrap().rel_hist[0], 2);
    }

    #[test]
    fn f32_entry_point_widens() {
        let r = compare_f32(&[1.0, 2.0, 3.0], &[1.0, 2.0, 4.0]).unwrap();
        assert_eq!(r, m(&[1.0, 2.0, 3.0], &[1.0, 2.0, 4.0]));
    }

    #[test]
    fn parallel_and_sequential_agree_bitwise() {
        // A deterministic pseudo-random pair with NaN/Inf sprinkled in.
        let mut x: u64 = 0x9e3779b97f4a7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let b: Vec<f64> = (0..1_000_000).map(|i| if i % 99_991 == 0 { NAN } else { next() }).collect();
        let t: Vec<f64> = b.iter().map(|v| v + 1e-3 * next()).collect();
        let seq = compare_with(&t, &b, false).unwrap();
        let par = compare_with(&t, &b, true).unwrap();
        assert_eq!(seq, par);
        assert!(seq.cosine > 0.99 && seq.cosine < 1.0);
        assert_eq!(seq.bench_nan, 11);
        assert!(!seq.nonfinite_differ);
    }
}
