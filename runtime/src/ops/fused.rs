//! Softmax as one float64 kernel with its exact backward: the composite of
//! candle ops (max, subtract, exp, sum, divide) allocates and differentiates
//! every intermediate, which at attention's sizes costs several times the
//! op. The same arithmetic in the same order: max-shifted (the shift is a
//! constant of the backward), each row summed from its first element.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Tensor};

/// Softmax along `dim` of a contiguous float64 tensor.
struct Softmax {
    dim: usize,
}

impl CustomOp1 for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let CpuStorage::F64(all) = storage else { return Err(candle_core::Error::Msg("softmax: a float64 storage expected".into())) };
        let (start, end) = layout.contiguous_offsets().ok_or_else(|| candle_core::Error::Msg("softmax: a non-contiguous input".into()))?;
        let x = &all[start..end];
        let dims = layout.dims();
        let (n, inner) = (dims[self.dim], dims[self.dim + 1..].iter().product::<usize>());
        let mut out = vec![0.0; x.len()];
        if n * inner > 0 {
            for (x, out) in x.chunks(n * inner).zip(out.chunks_mut(n * inner)) {
                for i in 0..inner {
                    // A NaN anywhere in the row makes the whole row NaN, as in torch.
                    let m = (0..n).map(|j| x[j * inner + i]).fold(f64::NEG_INFINITY, |m, v| if v > m || v.is_nan() { v } else { m });
                    let mut sum = 0.0;
                    for j in 0..n {
                        let e = (x[j * inner + i] - m).exp();
                        out[j * inner + i] = e;
                        sum += e;
                    }
                    for j in 0..n {
                        out[j * inner + i] /= sum;
                    }
                }
            }
        }
        Ok((CpuStorage::F64(out), layout.shape().clone()))
    }

    /// `dx = y ⊙ (dy − Σ_dim dy ⊙ y)`.
    fn bwd(&self, _arg: &Tensor, res: &Tensor, grad_res: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let s = (grad_res * res)?.sum_keepdim(self.dim)?;
        Ok(Some((res * grad_res.broadcast_sub(&s)?)?))
    }
}

/// Softmax along `d`: the fused kernel for float64 (the bench, and every
/// op the runtime computes in float64 before rounding once), `None` for
/// other dtypes, which keep the composite's per-op rounding.
pub(super) fn softmax_f64(x: &Tensor, d: usize) -> candle_core::Result<Option<Tensor>> {
    if x.dtype() != DType::F64 {
        return Ok(None);
    }
    x.contiguous()?.apply_op1(Softmax { dim: d }).map(Some)
}
