//! scaled_dot_product_attention in float64 as one kernel with its backward,
//! head by head. The composite (the logits' product, the fused weights of
//! [`super::fused`], the product with the values) kept every head's
//! `[L, S]` logits, weights and their gradients as full tensors, a dozen of
//! them differentiated node by node: on a GPT-2 block's `[1, 12, 512, 64]`
//! call, about 320 MB touched for 3 MB of output, most of the call's time
//! in first-touch page faults. Here each head's weights live in one `[L, S]`
//! buffer, and the backward computes them again. The arithmetic is the
//! composite's, product for product on the same `gemm` kernels and the
//! softmax row for row ([`super::fused::softmax_row`]), so the bench's
//! values do not change. Float32 (the emulated device, the rounding probe)
//! keeps the composite and its per-op rounding.

use candle_core::{CpuStorage, CustomOp3, DType, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::fused::softmax_row;
use super::gemm_into::{gemm_into, Strided};
use crate::device::{host_values, with_host_values};

fn msg(m: &str) -> candle_core::Error {
    candle_core::Error::Msg(format!("attention: {m}"))
}

/// `softmax(Q·Kᵀ · scale) · V` over the leading (batch, head) dims, with
/// `causal` row `i` of the weights masked past column `i`.
struct Attention {
    scale: f64,
    causal: bool,
}

/// The sizes of one call: heads (the leading dims together), query rows
/// `l`, key rows `s`, the query/key width `e` and the value width `ev`.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    heads: usize,
    l: usize,
    s: usize,
    e: usize,
    ev: usize,
}

impl Sizes {
    /// The sizes of `q` `[.., L, E]`, `k` `[.., S, E]`, `v` `[.., S, Ev]`
    /// with the same leading dims; `None` for anything else (broadcast
    /// batches, grouped heads), which the composite replays.
    fn of(q: &[usize], k: &[usize], v: &[usize]) -> Option<Sizes> {
        let r = q.len();
        if r < 2 || k.len() != r || v.len() != r || q[..r - 2] != k[..r - 2] || q[..r - 2] != v[..r - 2] || q[r - 1] != k[r - 1] || k[r - 2] != v[r - 2] {
            return None;
        }
        Some(Sizes { heads: q[..r - 2].iter().product(), l: q[r - 2], s: k[r - 2], e: q[r - 1], ev: v[r - 1] })
    }
}

impl Attention {
    /// One head's weights `P = softmax(Q·Kᵀ · scale)` into `p` (`[L, S]`).
    fn weights(&self, q: &[f64], k: &[f64], z: Sizes, p: &mut [f64]) -> candle_core::Result<()> {
        let Sizes { l, s, e, .. } = z;
        gemm_into(p, Strided::row_major(l, s), false, q, Strided::row_major(l, e), k, Strided::row_major(s, e).t())?;
        let mut logits = vec![0.0; s];
        if s > 0 {
            for (i, row) in p.chunks_mut(s).enumerate() {
                let cols = if self.causal { (i + 1).min(s) } else { s };
                logits.copy_from_slice(row);
                softmax_row(&logits, row, 1, cols, self.scale);
                row[cols..].iter_mut().for_each(|w| *w = 0.0);
            }
        }
        Ok(())
    }
}

impl CustomOp3 for Attention {
    fn name(&self) -> &'static str {
        "attention"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout, s3: &CpuStorage, l3: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let z = Sizes::of(l1.dims(), l2.dims(), l3.dims()).ok_or_else(|| msg("query, key and value of matching sizes expected"))?;
        let (q, k, v) = (host_values::<f64>("attention", s1, l1)?, host_values::<f64>("attention", s2, l2)?, host_values::<f64>("attention", s3, l3)?);
        let mut out = crate::heap::filled(0.0, z.heads * z.l * z.ev);
        if z.l * z.ev > 0 {
            out.par_chunks_mut(z.l * z.ev).enumerate().try_for_each(|(h, o)| {
                let mut p = vec![0.0; z.l * z.s];
                self.weights(&q[h * z.l * z.e..][..z.l * z.e], &k[h * z.s * z.e..][..z.s * z.e], z, &mut p)?;
                gemm_into(
                    o,
                    Strided::row_major(z.l, z.ev),
                    false,
                    &p,
                    Strided::row_major(z.l, z.s),
                    &v[h * z.s * z.ev..][..z.s * z.ev],
                    Strided::row_major(z.s, z.ev),
                )
            })?;
        }
        let mut dims = l1.dims().to_vec();
        if let Some(last) = dims.last_mut() {
            *last = z.ev;
        }
        Ok((CpuStorage::F64(out), Shape::from(dims)))
    }

    /// Per head, as the composite differentiates it: `dV = Pᵀ·dO`,
    /// `dP = dO·Vᵀ`, `dS = P ⊙ (dP − Σ_row dP ⊙ P) · scale`, `dQ = dS·K`,
    /// `dK = (Qᵀ·dS)ᵀ`.
    fn bwd(&self, q: &Tensor, k: &Tensor, v: &Tensor, _res: &Tensor, dy: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (q, k, v, dy) = (q.detach().contiguous()?, k.detach().contiguous()?, v.detach().contiguous()?, dy.detach().contiguous()?);
        let z = Sizes::of(q.dims(), k.dims(), v.dims()).ok_or_else(|| msg("query, key and value of matching sizes expected"))?;
        let Sizes { l, s, e, ev, .. } = z;
        type Head = (Vec<f64>, Vec<f64>, Vec<f64>);
        let heads: Vec<Head> = with_host_values("attention", [&q, &k, &v, &dy], |[qv, kv, vv, gv]| {
            (0..z.heads)
                .into_par_iter()
                .map(|h| {
                    let (q, k, v, go) = (&qv[h * l * e..][..l * e], &kv[h * s * e..][..s * e], &vv[h * s * ev..][..s * ev], &gv[h * l * ev..][..l * ev]);
                    let mut p = vec![0.0; l * s];
                    self.weights(q, k, z, &mut p)?;
                    let mut dv = vec![0.0; s * ev];
                    gemm_into(&mut dv, Strided::row_major(s, ev), false, &p, Strided::row_major(l, s).t(), go, Strided::row_major(l, ev))?;
                    let mut ds = vec![0.0; l * s];
                    gemm_into(&mut ds, Strided::row_major(l, s), false, go, Strided::row_major(l, ev), v, Strided::row_major(s, ev).t())?;
                    if s > 0 {
                        for (dp, p) in ds.chunks_mut(s).zip(p.chunks(s)) {
                            let mut sum = 0.0;
                            dp.iter().zip(p).for_each(|(d, p)| sum += d * p);
                            for (d, &p) in dp.iter_mut().zip(p) {
                                let g = p * (*d - sum);
                                *d = if self.scale == 1.0 { g } else { g * self.scale + 0.0 };
                            }
                        }
                    }
                    let mut dq = vec![0.0; l * e];
                    gemm_into(&mut dq, Strided::row_major(l, e), false, &ds, Strided::row_major(l, s), k, Strided::row_major(s, e))?;
                    let mut dkt = vec![0.0; e * s];
                    gemm_into(&mut dkt, Strided::row_major(e, s), false, q, Strided::row_major(l, e).t(), &ds, Strided::row_major(l, s))?;
                    let dk = (0..s * e).map(|at| dkt[(at % e) * s + at / e]).collect();
                    Ok((dq, dk, dv))
                })
                .collect()
        })?;
        let (mut dq, mut dk, mut dv) = (Vec::with_capacity(q.elem_count()), Vec::with_capacity(k.elem_count()), Vec::with_capacity(v.elem_count()));
        for (q, k, v) in heads {
            dq.extend(q);
            dk.extend(k);
            dv.extend(v);
        }
        let dev = q.device();
        Ok((Some(Tensor::from_vec(dq, q.shape(), dev)?), Some(Tensor::from_vec(dk, k.shape(), dev)?), Some(Tensor::from_vec(dv, v.shape(), dev)?)))
    }
}

/// `scaled_dot_product_attention(q, k, v)` without a mask tensor or
/// dropout: the kernel for float64 operands on the host of matching
/// leading dims, `None` otherwise (the composite runs).
pub(super) fn fused_attention(q: &Tensor, k: &Tensor, v: &Tensor, scale: f64, causal: bool) -> candle_core::Result<Option<Tensor>> {
    let host = [q, k, v].iter().all(|t| t.dtype() == DType::F64 && crate::device::is_host(t));
    if !host || Sizes::of(q.dims(), k.dims(), v.dims()).is_none() {
        return Ok(None);
    }
    q.contiguous()?.apply_op3(&k.contiguous()?, &v.contiguous()?, Attention { scale, causal }).map(Some)
}

#[cfg(test)]
mod tests {
    use candle_core::{Tensor, Var, D};

    use super::*;

    /// The composite the kernel replaces (`nn::sdpa` on float64 without a mask).
    fn composite(q: &Tensor, k: &Tensor, v: &Tensor, scale: f64, causal: bool) -> candle_core::Result<Tensor> {
        let logits = q.broadcast_matmul(&k.transpose(D::Minus2, D::Minus1)?)?;
        let weights = super::super::fused::attention_weights_f64(&logits, scale, causal)?.expect("float64 on the host");
        weights.broadcast_matmul(v)
    }

    fn data(dims: &[usize], k: f64) -> Tensor {
        let n: usize = dims.iter().product();
        Tensor::from_vec(
            (0..n).map(|i| ((i as f64 * k).sin() * 3.0).round() / 4.0 + (i as f64 * 0.013).cos()).collect::<Vec<f64>>(),
            dims,
            &crate::device::host(),
        )
        .unwrap()
    }

    fn flat(t: &Tensor) -> Vec<f64> {
        t.flatten_all().unwrap().to_vec1().unwrap()
    }

    #[test]
    fn forward_and_backward_are_the_composites_bit_for_bit() {
        // Two batches of three heads; more keys than queries, a value width of its own.
        let (q, k, v) = (data(&[2, 3, 5, 4], 0.37), data(&[2, 3, 7, 4], 0.11), data(&[2, 3, 7, 6], 0.23));
        let dy = data(&[2, 3, 5, 6], 0.71);
        for (scale, causal) in [(0.5, false), (0.5, true), (1.0, true)] {
            let vars = |t: &Tensor| Var::from_tensor(t).unwrap();
            let (a, b) = ([vars(&q), vars(&k), vars(&v)], [vars(&q), vars(&k), vars(&v)]);
            let ya = fused_attention(a[0].as_tensor(), a[1].as_tensor(), a[2].as_tensor(), scale, causal).unwrap().unwrap();
            let yb = composite(b[0].as_tensor(), b[1].as_tensor(), b[2].as_tensor(), scale, causal).unwrap();
            assert_eq!(ya.dims(), &[2, 3, 5, 6]);
            assert_eq!(flat(&ya), flat(&yb), "forward, scale {scale}, causal {causal}");
            let ga = (&ya * &dy).unwrap().sum_all().unwrap().backward().unwrap();
            let gb = (&yb * &dy).unwrap().sum_all().unwrap().backward().unwrap();
            for (i, name) in ["query", "key", "value"].iter().enumerate() {
                let (x, y) = (flat(ga.get(a[i].as_tensor()).unwrap()), flat(gb.get(b[i].as_tensor()).unwrap()));
                assert_eq!(x, y, "{name}'s gradient, scale {scale}, causal {causal}");
            }
        }
    }

    #[test]
    fn other_dtypes_and_unmatched_batches_are_left_to_the_composite() {
        let dev = crate::device::host();
        let f32s = Tensor::zeros((2, 3, 4), DType::F32, &dev).unwrap();
        assert!(fused_attention(&f32s, &f32s, &f32s, 0.5, false).unwrap().is_none());
        let (q, k) = (data(&[2, 3, 4], 0.3), data(&[1, 3, 4], 0.5));
        assert!(fused_attention(&q, &k, &k, 0.5, false).unwrap().is_none(), "a broadcast batch");
        let empty = data(&[2, 0, 4], 0.3);
        assert_eq!(fused_attention(&empty, &data(&[2, 3, 4], 0.5), &data(&[2, 3, 2], 0.5), 0.5, true).unwrap().unwrap().dims(), &[2, 0, 2]);
    }
}
