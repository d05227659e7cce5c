//! A linear layer's two products with the weight when the input has few
//! rows (a small batch through a wide layer: ResNet-50's fc multiplies 8
//! rows of 2048 by a `[1000, 2048]` weight), reading the weight once, in
//! place, row by row: `y = x·Wᵀ` as a few weight rows at a time times `xᵀ`
//! (held in cache, its rows padded to a fixed width so the sums sit in
//! registers), and `dx = dy·W` as a few weight rows at a time added into
//! the rows of `dx`, a band of columns at a time. gemm's kernels first copy
//! (pack) the whole weight for each product, which costs more than the
//! product itself when the rows are so few.
//!
//! Every sum is the schoolbook one: from `+0`, one term after the other in
//! the order of the summed index, with no fused multiply-add (the loops'
//! AVX2 twins only widen the lanes, [`crate::simd`]). The values depend on
//! neither the CPU nor the thread count.

use std::ops::{Add, Mul};

use rayon::prelude::*;

/// The most rows the kernels take: above it, gemm's packing pays for itself.
pub(super) const FEW: usize = 16;

/// Weight rows read together: `dx`'s band is loaded and stored once for
/// them, and `y`'s sums of them share each load of `xᵀ`.
const STEP: usize = 4;

/// Columns of `dx` a task owns: `FEW` rows of them stay in the first-level cache.
const BAND: usize = 128;

/// The float types the kernels run (float64 on the bench, float32 or
/// float64 on the emulated device).
pub(super) trait Float: Copy + Default + Send + Sync + Add<Output = Self> + Mul<Output = Self> {}

impl Float for f32 {}
impl Float for f64 {}

/// `y = x·Wᵀ` for `x` of `[m, k]` (`m <= FEW`) and `w` of `[n, k]`, as `[m, n]`.
pub(super) fn forward<T: Float>(x: &[T], w: &[T], (m, k, n): (usize, usize, usize)) -> Vec<T> {
    match m {
        0..=4 => forward_padded::<T, 4>(x, w, (m, k, n)),
        5..=8 => forward_padded::<T, 8>(x, w, (m, k, n)),
        _ => forward_padded::<T, 16>(x, w, (m, k, n)),
    }
}

/// [`forward`] with `xᵀ`'s rows padded to `M` (at least `m`) with zeros.
fn forward_padded<T: Float, const M: usize>(x: &[T], w: &[T], (m, k, n): (usize, usize, usize)) -> Vec<T> {
    let mut xt = vec![T::default(); k * M];
    for (i, row) in x.chunks(k.max(1)).take(m).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            xt[c * M + i] = v;
        }
    }
    // Per weight row, its M sums (yᵀ, padded), then laid out as y.
    let mut yt = vec![[T::default(); M]; n];
    if k > 0 {
        yt.par_chunks_mut(STEP).zip(w.par_chunks(STEP * k)).with_min_len(4).for_each(|(out, rows)| {
            #[cfg(target_arch = "x86_64")]
            if crate::simd::has_avx2() {
                // SAFETY: the CPU has AVX2 (simd::has_avx2).
                return unsafe { avx2::sums(out, &xt, rows, k) };
            }
            sums(out, &xt, rows, k);
        });
    }
    let mut y = vec![T::default(); m * n];
    for (j, col) in yt.iter().enumerate() {
        for (i, &v) in col.iter().take(m).enumerate() {
            y[i * n + j] = v;
        }
    }
    y
}

/// `out[q] = Σ_c rows[q][c]·xt[c]` for the (up to [`STEP`]) weight rows in
/// `rows`, each sum in the order of `c`.
#[inline(always)]
fn sums<T: Float, const M: usize>(out: &mut [[T; M]], xt: &[T], rows: &[T], k: usize) {
    if out.len() == STEP {
        let rows: [&[T]; STEP] = std::array::from_fn(|q| &rows[q * k..(q + 1) * k]);
        let mut acc = [[T::default(); M]; STEP];
        for (c, xc) in xt.chunks_exact(M).enumerate() {
            for q in 0..STEP {
                let wv = rows[q][c];
                for i in 0..M {
                    acc[q][i] = acc[q][i] + wv * xc[i];
                }
            }
        }
        out.copy_from_slice(&acc);
        return;
    }
    for (o, row) in out.iter_mut().zip(rows.chunks(k)) {
        let mut acc = [T::default(); M];
        for (xc, &wv) in xt.chunks_exact(M).zip(row) {
            for i in 0..M {
                acc[i] = acc[i] + wv * xc[i];
            }
        }
        *o = acc;
    }
}

/// `dx = dy·W` for `dy` of `[m, n]` and `w` of `[n, k]`, as `[m, k]`.
pub(super) fn backward_input<T: Float>(dy: &[T], w: &[T], (m, k, n): (usize, usize, usize)) -> Vec<T> {
    let bands: Vec<Vec<T>> = (0..k.div_ceil(BAND))
        .into_par_iter()
        .map(|b| {
            let (c0, width) = (b * BAND, BAND.min(k - b * BAND));
            let mut band = vec![T::default(); m * width];
            #[cfg(target_arch = "x86_64")]
            if crate::simd::has_avx2() {
                // SAFETY: the CPU has AVX2 (simd::has_avx2).
                unsafe { avx2::updates(&mut band, dy, w, (m, k, n), c0) };
                return band;
            }
            updates(&mut band, dy, w, (m, k, n), c0);
            band
        })
        .collect();
    let mut dx = vec![T::default(); m * k];
    for (b, band) in bands.iter().enumerate() {
        let (c0, width) = (b * BAND, BAND.min(k - b * BAND));
        for (i, row) in band.chunks(width).enumerate() {
            dx[i * k + c0..i * k + c0 + width].copy_from_slice(row);
        }
    }
    dx
}

/// Columns `c0..c0 + width` of `dy·W` into `band` (`[m, width]`): the
/// weight rows' pieces added into every row, [`STEP`] rows at a time, in
/// the order of the rows.
#[inline(always)]
fn updates<T: Float>(band: &mut [T], dy: &[T], w: &[T], (m, k, n): (usize, usize, usize), c0: usize) {
    let width = band.len() / m.max(1);
    let piece = |j: usize| &w[j * k + c0..j * k + c0 + width];
    let mut j = 0;
    while j + STEP <= n {
        let p: [&[T]; STEP] = std::array::from_fn(|q| piece(j + q));
        for (i, out) in band.chunks_mut(width.max(1)).enumerate() {
            let s: [T; STEP] = std::array::from_fn(|q| dy[i * n + j + q]);
            for c in 0..out.len() {
                out[c] = out[c] + s[0] * p[0][c] + s[1] * p[1][c] + s[2] * p[2][c] + s[3] * p[3][c];
            }
        }
        j += STEP;
    }
    for j in j..n {
        let p = piece(j);
        for (i, out) in band.chunks_mut(width.max(1)).enumerate() {
            let s = dy[i * n + j];
            for (o, &v) in out.iter_mut().zip(p) {
                *o = *o + s * v;
            }
        }
    }
}

/// The kernels' AVX2 twins ([`crate::simd`]).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::Float;

    #[target_feature(enable = "avx2")]
    pub(super) fn sums<T: Float, const M: usize>(out: &mut [[T; M]], xt: &[T], rows: &[T], k: usize) {
        super::sums(out, xt, rows, k)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn updates<T: Float>(band: &mut [T], dy: &[T], w: &[T], mkn: (usize, usize, usize), c0: usize) {
        super::updates(band, dy, w, mkn, c0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, salt: f64) -> Vec<f64> {
        (0..len).map(|i| ((i as f64 + salt) * 0.731).sin() * if i % 5 == 0 { -1e-3 } else { 1.0 }).collect()
    }

    /// Both products are the schoolbook sums in the summed index's order,
    /// bit for bit, in float64 and float32, for row counts around the
    /// padded widths and inner sizes around the steps and bands.
    #[test]
    fn products_are_the_schoolbook_sums_in_order() {
        fn check<T: Float + PartialEq + std::fmt::Debug>(to: impl Fn(f64) -> T) {
            for (m, k, n) in [(1, 1, 1), (3, 7, 5), (4, 8, 3), (5, 17, 9), (8, 300, 257), (9, 129, 31), (16, 3, 6), (2, 0, 3), (0, 4, 2)] {
                let v = |len: usize, salt: f64| values(len, salt).into_iter().map(&to).collect::<Vec<T>>();
                let (x, w, dy) = (v(m * k, 0.5), v(n * k, 1.5), v(m * n, 2.5));
                let want_y: Vec<T> = (0..m * n).map(|e| (0..k).fold(T::default(), |s, c| s + x[e / n * k + c] * w[e % n * k + c])).collect();
                let want_dx: Vec<T> = (0..m * k).map(|e| (0..n).fold(T::default(), |s, j| s + dy[e / k * n + j] * w[j * k + e % k])).collect();
                assert_eq!(forward(&x, &w, (m, k, n)), want_y, "{m} {k} {n}: y");
                assert_eq!(backward_input(&dy, &w, (m, k, n)), want_dx, "{m} {k} {n}: dx");
                // The plain loops, which the kernels take on a CPU without AVX2.
                let mut band = vec![T::default(); m * k];
                if m > 0 && k > 0 {
                    updates(&mut band, &dy, &w, (m, k, n), 0);
                    let mut out = vec![[T::default(); 16]; n];
                    let mut xt = vec![T::default(); k * 16];
                    (0..m * k).for_each(|e| xt[e % k * 16 + e / k] = x[e]);
                    out.chunks_mut(STEP).zip(w.chunks(STEP * k)).for_each(|(o, rows)| sums(o, &xt, rows, k));
                    let plain_y: Vec<T> = (0..m * n).map(|e| out[e % n][e / n]).collect();
                    assert_eq!(plain_y, want_y, "{m} {k} {n}: y, plain");
                }
                assert_eq!(band, want_dx, "{m} {k} {n}: dx, plain");
            }
        }
        check(|v| v);
        check(|v| v as f32);
    }

    /// A sum of -0 products is +0, as autograd's sum into a zero tensor gives.
    #[test]
    fn sums_of_negative_zeros_are_positive_zeros() {
        let (x, w) = (vec![-0.0f64; 6], vec![1.0f64; 6]);
        assert!(forward(&x, &w, (2, 3, 2)).iter().all(|v| v.to_bits() == 0));
        assert!(backward_input(&x[..4], &w, (2, 3, 2)).iter().all(|v| v.to_bits() == 0));
    }
}
