//! Matrix products written into a slice the caller owns, with any strides,
//! on the `gemm` crate's kernels (the ones candle's matmul runs on). The
//! host kernels ([`super::conv_kernel`]) call it per sample: candle's
//! matmul allocates every product and its operands must be tensors, which
//! cost a copy in and a copy out of each sample's columns, gradients and
//! results (a quarter of a ResNet-50 step's time in `memmove` and page
//! faults).

use candle_core::WithDType;

/// A matrix view into a slice: `rows × cols`, element `(i, j)` at
/// `i·rs + j·cs`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Strided {
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

impl Strided {
    /// A row-major `rows × cols` matrix.
    pub fn row_major(rows: usize, cols: usize) -> Strided {
        Strided { rows, cols, rs: cols, cs: 1 }
    }

    /// The transpose of this view (the same elements).
    pub fn t(self) -> Strided {
        Strided { rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs }
    }

    /// Whether every element lies inside a slice of `len`.
    fn fits(&self, len: usize) -> bool {
        self.rows == 0 || self.cols == 0 || (self.rows - 1) * self.rs + (self.cols - 1) * self.cs < len
    }
}

/// `dst = lhs · rhs`, or `dst += lhs · rhs` with `accumulate`, for float32
/// or float64 (the types the host kernels run); an error when a view does
/// not fit its slice or the shapes do not chain.
pub(super) fn gemm_into<T: WithDType>(dst: &mut [T], d: Strided, accumulate: bool, lhs: &[T], l: Strided, rhs: &[T], r: Strided) -> candle_core::Result<()> {
    let chained = d.rows == l.rows && d.cols == r.cols && l.cols == r.rows;
    if !chained || !d.fits(dst.len()) || !l.fits(lhs.len()) || !r.fits(rhs.len()) || !matches!(T::DTYPE, candle_core::DType::F32 | candle_core::DType::F64) {
        return Err(candle_core::Error::Msg(format!("gemm_into: {d:?} = {l:?} · {r:?} does not fit its slices or dtype {:?}", T::DTYPE)));
    }
    if d.rows == 0 || d.cols == 0 {
        return Ok(());
    }
    if l.cols == 0 {
        if !accumulate {
            (0..d.rows).for_each(|i| (0..d.cols).for_each(|j| dst[i * d.rs + j * d.cs] = T::zero()));
        }
        return Ok(());
    }
    let threads = rayon::current_num_threads();
    let parallelism = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
    let stride = |s: usize| s as isize;
    // SAFETY: every view was checked to lie inside its slice (`fits`), the
    // shapes chain, T is f32 or f64 (gemm's kernels of those types), and
    // `dst` is borrowed mutably, so it overlaps neither operand.
    unsafe {
        gemm::gemm(
            d.rows,
            d.cols,
            l.cols,
            dst.as_mut_ptr(),
            stride(d.cs),
            stride(d.rs),
            accumulate,
            lhs.as_ptr(),
            stride(l.cs),
            stride(l.rs),
            rhs.as_ptr(),
            stride(r.cs),
            stride(r.rs),
            if accumulate { T::one() } else { T::zero() },
            T::one(),
            false,
            false,
            false,
            parallelism,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain and transposed views, written and accumulated, against the
    /// schoolbook product; a view beyond its slice is refused.
    #[test]
    fn products_of_strided_views_are_the_schoolbook_ones() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f64> = (0..m * k).map(|i| (i as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..k * n).map(|i| (i as f64 * 0.11).cos()).collect();
        let at: Vec<f64> = (0..k * m).map(|i| a[(i % m) * k + i / m]).collect();
        let want: Vec<f64> = (0..m * n).map(|i| (0..k).map(|p| a[i / n * k + p] * b[p * n + i % n]).sum()).collect();
        let mut c = vec![0.0; m * n];
        gemm_into(&mut c, Strided::row_major(m, n), false, &a, Strided::row_major(m, k), &b, Strided::row_major(k, n)).unwrap();
        c.iter().zip(&want).for_each(|(x, y)| assert!((x - y).abs() < 1e-12, "{x} {y}"));
        gemm_into(&mut c, Strided::row_major(m, n), true, &at, Strided::row_major(k, m).t(), &b, Strided::row_major(k, n)).unwrap();
        c.iter().zip(&want).for_each(|(x, y)| assert!((x - 2.0 * y).abs() < 1e-12, "{x} {y}"));
        let mut ct = vec![0.0; n * m];
        gemm_into(&mut ct, Strided::row_major(n, m).t(), false, &a, Strided::row_major(m, k), &b, Strided::row_major(k, n)).unwrap();
        (0..m * n).for_each(|i| assert!((ct[i % n * m + i / n] - want[i]).abs() < 1e-12));
        assert!(gemm_into(&mut c[1..], Strided::row_major(m, n), false, &a, Strided::row_major(m, k), &b, Strided::row_major(k, n)).is_err());
        assert!(gemm_into(&mut c, Strided::row_major(m, n), false, &a, Strided::row_major(m, k), &b, Strided::row_major(n, k)).is_err());
    }
}
