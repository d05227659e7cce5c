//! Softmax as one float64 kernel with its exact backward: the composite of
//! candle ops (max, subtract, exp, sum, divide) allocates and differentiates
//! every intermediate, which at attention's sizes costs several times the
//! op. The same arithmetic in the same order: max-shifted (the shift is a
//! constant of the backward), each row summed from its first element.
//! Attention's scale and causal mask fold into the same pass
//! (`scaled_dot_product_attention`: the composite's scaled copy, its `-inf`
//! fill, mask and select were four more full-size tensors, each
//! differentiated).

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Tensor};

/// Softmax along `dim` of a contiguous float64 tensor, of its elements
/// times `scale` (1 multiplies exactly), with `causal` the elements of a
/// last-dim row `i` (of the last two dims' matrix) past column `i` taken as
/// `-inf`, as attention's `is_causal` masks them.
struct Softmax {
    dim: usize,
    scale: f64,
    causal: bool,
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
        // Rows of the last two dims' matrix, for the causal mask (a last dim only).
        let rows = if dims.len() >= 2 { dims[dims.len() - 2] } else { 1 };
        let mut out = vec![0.0; x.len()];
        if n * inner > 0 {
            for (r, (x, out)) in x.chunks(n * inner).zip(out.chunks_mut(n * inner)).enumerate() {
                // The columns that take part: all, or up to the row's own index.
                let cols = if self.causal { (r % rows + 1).min(n) } else { n };
                for i in 0..inner {
                    softmax_row(&x[i..], &mut out[i..], inner, cols, self.scale);
                }
            }
        }
        Ok((CpuStorage::F64(out), layout.shape().clone()))
    }

    /// `dx = y ⊙ (dy − Σ_dim dy ⊙ y)`, times the scale (masked elements:
    /// `y = 0`, no gradient).
    fn bwd(&self, _arg: &Tensor, res: &Tensor, grad_res: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let s = (grad_res * res)?.sum_keepdim(self.dim)?;
        let dx = (res * grad_res.broadcast_sub(&s)?)?;
        Ok(Some(if self.scale == 1.0 { dx } else { (dx * self.scale)? }))
    }
}

/// The softmax of one row of `x · scale`, its elements `inner` apart,
/// written to the same places of `out`: the first `cols` elements take
/// part (a causal mask's columns), the rest are left as they are. Max-shifted,
/// summed from the row's first element, each divided by the sum; a NaN
/// anywhere in the row makes the whole row NaN, as in torch.
pub(super) fn softmax_row(x: &[f64], out: &mut [f64], inner: usize, cols: usize, scale: f64) {
    let at = |j: usize| x[j * inner] * scale;
    let m = (0..cols).map(at).fold(f64::NEG_INFINITY, |m, v| if v > m || v.is_nan() { v } else { m });
    let mut sum = 0.0;
    for j in 0..cols {
        let e = (at(j) - m).exp();
        out[j * inner] = e;
        sum += e;
    }
    for j in 0..cols {
        out[j * inner] /= sum;
    }
}

/// Softmax along `d`: the fused kernel for float64 (the bench, and every
/// op the runtime computes in float64 before rounding once) on the host,
/// `None` for other dtypes, which keep the composite's per-op rounding, and
/// off the host, where the composite runs on the tensor's own device.
pub(super) fn softmax_f64(x: &Tensor, d: usize) -> candle_core::Result<Option<Tensor>> {
    if d >= x.rank() {
        return Err(candle_core::Error::Msg(format!("softmax: dim {d} of a rank-{} tensor", x.rank())));
    }
    fused(x, Softmax { dim: d, scale: 1.0, causal: false })
}

/// Attention's weights from its logits `x` (`[.., L, S]`): softmax along the
/// last dim of `x · scale`, with `causal` row `i` masked past column `i`;
/// the composite's arithmetic (`(x · scale)` masked with `-inf`, then
/// softmax), for float64 on the host like [`softmax_f64`].
pub(super) fn attention_weights_f64(x: &Tensor, scale: f64, causal: bool) -> candle_core::Result<Option<Tensor>> {
    if x.rank() < 2 {
        return Err(candle_core::Error::Msg(format!("attention: logits of rank {}", x.rank())));
    }
    fused(x, Softmax { dim: x.rank() - 1, scale, causal })
}

fn fused(x: &Tensor, op: Softmax) -> candle_core::Result<Option<Tensor>> {
    if x.dtype() != DType::F64 || !crate::device::is_host(x) {
        return Ok(None);
    }
    x.contiguous()?.apply_op1(op).map(Some)
}

#[cfg(test)]
mod tests {
    use candle_core::{Tensor, Var};

    use super::*;

    /// The composite the kernel replaces (`nn::softmax_t` for other dtypes).
    fn composite(x: &Tensor, d: usize) -> candle_core::Result<Tensor> {
        let m = x.max_keepdim(d)?.detach();
        let e = x.broadcast_sub(&m)?.exp()?;
        e.broadcast_div(&e.sum_keepdim(d)?)
    }

    /// Element for element within `rel` of the composite (NaN where it is NaN).
    fn close(a: &[f64], b: &[f64], rel: f64, what: &str) {
        assert_eq!(a.len(), b.len(), "{what}");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x.is_nan() && y.is_nan()) || (x - y).abs() <= rel * y.abs().max(1e-300), "{what}: element {i}: {x} vs {y}");
        }
    }

    #[test]
    fn matches_the_composite_forward_and_backward_along_every_dim() {
        let dev = crate::device::host();
        let values: Vec<f64> = (0..60).map(|i| ((i * 37 % 23) as f64 - 11.0) * 3.5).collect();
        let x = Tensor::from_vec(values, (3, 4, 5), &dev).unwrap();
        let g = Tensor::from_vec((0..60).map(|i| (i as f64 * 0.37).sin()).collect::<Vec<f64>>(), (3, 4, 5), &dev).unwrap();
        for d in 0..3 {
            let (a, b) = (Var::from_tensor(&x).unwrap(), Var::from_tensor(&x).unwrap());
            let (ya, yb) = (softmax_f64(a.as_tensor(), d).unwrap().unwrap(), composite(b.as_tensor(), d).unwrap());
            close(&ya.flatten_all().unwrap().to_vec1().unwrap(), &yb.flatten_all().unwrap().to_vec1().unwrap(), 1e-15, &format!("forward, dim {d}"));
            let (ga, gb) = ((&ya * &g).unwrap().sum_all().unwrap().backward().unwrap(), (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap());
            let (ga, gb) = (ga.get(a.as_tensor()).unwrap(), gb.get(b.as_tensor()).unwrap());
            // dx = y·(g − Σgy) cancels where g ≈ Σgy, so both sides' rounding is
            // bounded by y·(|g| + |Σgy|) ≤ 2·y·max|g| (|g| ≤ 1 here), not by |dx|.
            let (ga, gb): (Vec<f64>, Vec<f64>) = (ga.flatten_all().unwrap().to_vec1().unwrap(), gb.flatten_all().unwrap().to_vec1().unwrap());
            let y: Vec<f64> = yb.flatten_all().unwrap().to_vec1().unwrap();
            for (i, ((a, b), y)) in ga.iter().zip(&gb).zip(&y).enumerate() {
                assert!((a - b).abs() <= 1e-14 * 2.0 * y.abs() + 1e-300, "backward, dim {d}: element {i}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn masked_and_nan_rows_are_what_the_composite_gives() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        let rows = vec![0.0, -inf, 1.0, -inf, -inf, -inf, 1.0, nan, 2.0, 1e308, -1e308, 0.0];
        let x = Tensor::from_vec(rows, (4, 3), &crate::device::host()).unwrap();
        let got: Vec<f64> = softmax_f64(&x, 1).unwrap().unwrap().flatten_all().unwrap().to_vec1().unwrap();
        let want: Vec<f64> = composite(&x, 1).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        close(&got, &want, 1e-15, "rows");
        assert!(got[3..9].iter().all(|v| v.is_nan()), "a fully masked row and a row holding NaN are NaN, as in torch: {got:?}");
        assert_eq!(&got[9..], &[1.0, 0.0, 0.0]);
    }

    #[test]
    fn attention_weights_are_the_scaled_masked_composite_forward_and_backward() {
        let dev = crate::device::host();
        let values: Vec<f64> = (0..2 * 4 * 5).map(|i| ((i * 37 % 23) as f64 - 11.0) * 0.7).collect();
        let x = Tensor::from_vec(values, (2, 4, 5), &dev).unwrap();
        let g = Tensor::from_vec((0..40).map(|i| (i as f64 * 0.37).sin()).collect::<Vec<f64>>(), (2, 4, 5), &dev).unwrap();
        let allowed: Vec<u8> = (0..4).flat_map(|i| (0..5).map(move |j| u8::from(j <= i))).collect();
        let allowed = Tensor::from_vec(allowed, (4, 5), &dev).unwrap().broadcast_as((2, 4, 5)).unwrap();
        let neg_inf = Tensor::full(f64::NEG_INFINITY, (2, 4, 5), &dev).unwrap();
        for causal in [false, true] {
            let (a, b) = (Var::from_tensor(&x).unwrap(), Var::from_tensor(&x).unwrap());
            let ya = attention_weights_f64(a.as_tensor(), 0.125, causal).unwrap().unwrap();
            let scaled = (b.as_tensor() * 0.125).unwrap();
            let masked = if causal { allowed.where_cond(&scaled, &neg_inf).unwrap() } else { scaled };
            let yb = composite(&masked, 2).unwrap();
            let flat = |t: &Tensor| -> Vec<f64> { t.flatten_all().unwrap().to_vec1().unwrap() };
            assert_eq!(flat(&ya), flat(&yb), "forward, causal {causal}: the same arithmetic");
            let (ga, gb) = ((&ya * &g).unwrap().sum_all().unwrap().backward().unwrap(), (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap());
            let (ga, gb) = (flat(ga.get(a.as_tensor()).unwrap()), flat(gb.get(b.as_tensor()).unwrap()));
            let y = flat(&yb);
            for (i, ((p, q), y)) in ga.iter().zip(&gb).zip(&y).enumerate() {
                assert!((p - q).abs() <= 1e-14 * 2.0 * y.abs() * 0.125 + 1e-300, "backward, causal {causal}: element {i}: {p} vs {q}");
            }
            if causal {
                assert!(ga.iter().zip(flat(&allowed.to_dtype(DType::F64).unwrap())).all(|(g, ok)| ok == 1.0 || *g == 0.0), "no gradient past the diagonal");
            }
        }
    }

    #[test]
    fn other_dtypes_and_empty_or_bad_dims() {
        let dev = crate::device::host();
        assert!(softmax_f64(&Tensor::zeros((2, 3), DType::F32, &dev).unwrap(), 1).unwrap().is_none());
        let empty = softmax_f64(&Tensor::zeros((2, 0, 3), DType::F64, &dev).unwrap(), 1).unwrap().unwrap();
        assert_eq!(empty.dims(), &[2, 0, 3]);
        let err = softmax_f64(&Tensor::zeros((2, 3), DType::F64, &dev).unwrap(), 2).unwrap_err();
        assert!(err.to_string().contains("softmax: dim 2 of a rank-2 tensor"), "{err}");
    }
}
