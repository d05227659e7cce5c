//! Training-mode batch normalization as one kernel with its exact
//! backward, computed in float64 and rounded once to the storage dtype. The composite of candle ops (two per-channel reductions over
//! dims 0 and 2.., a subtract, square, divide and the affine) allocates and
//! differentiates every intermediate, and candle reduces over non-trailing
//! dims element by element: 1.6 s a run on `[8, 64, 112, 112]`, and the
//! rounding bound reruns the op two dozen times. The forward is the same
//! arithmetic in the same order as the composite (each channel summed in
//! memory order, divided as `sum * (1/n)`), so the bench's values do not
//! change; the backward is the closed form
//! `dx = w/σ · (dy − Σdy/n − x̂·Σ(dy·x̂)/n)`, `dw = Σ dy·x̂`, `db = Σ dy`.
//! In float32 (the emulated device, the rounding probe) it is the kernel a
//! device runs: statistics accumulated in a wider type and each result
//! rounded once. The composite's float32 chain instead summed 10⁵ squares
//! one by one in float32 and left every element of a `[8, 64, 112, 112]`
//! output 12 ULPs off, a systematic error no real kernel shows.

use candle_core::{CpuStorage, CustomOp3, DType, Layout, Shape, Tensor, WithDType};
use rayon::prelude::*;

use crate::device::{host_values, with_host_values};

fn msg(m: &str) -> candle_core::Error {
    candle_core::Error::Msg(format!("batch_norm: {m}"))
}

/// Training-mode batch normalization of a contiguous `[N, C, S]` float32 or
/// float64 input (S: the product of the dims after the channel's), with per-channel
/// weight and bias.
struct BatchNorm {
    eps: f64,
}

/// `x`'s `[N, C, S]` sizes.
fn sizes(dims: &[usize]) -> (usize, usize, usize) {
    (dims[0], dims[1], dims[2..].iter().product())
}

/// Per channel: the batch mean and `sqrt(var + eps)` (biased variance), as
/// the composite computes them.
fn statistics<T: WithDType>(x: &[T], (n, c, s): (usize, usize, usize), eps: f64) -> Vec<(f64, f64)> {
    let scale = 1.0 / (n * s) as f64;
    (0..c)
        .into_par_iter()
        .map(|ch| {
            let rows = || (0..n).map(move |i| &x[(i * c + ch) * s..(i * c + ch + 1) * s]);
            let mut sum = 0.0;
            rows().for_each(|r| r.iter().for_each(|&v| sum += v.to_f64()));
            let mean = sum * scale + 0.0;
            let mut squares = 0.0;
            rows().for_each(|r| {
                r.iter().for_each(|&v| {
                    let d = v.to_f64() - mean;
                    squares += d * d;
                })
            });
            let var = squares * scale + 0.0;
            (mean, (var * 1.0 + eps).sqrt())
        })
        .collect()
}

impl CustomOp3 for BatchNorm {
    fn name(&self) -> &'static str {
        "batch_norm"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout, s3: &CpuStorage, l3: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let y = match s1 {
            CpuStorage::F64(_) => CpuStorage::F64(forward::<f64>(self.eps, (s1, l1), (s2, l2), (s3, l3))?),
            CpuStorage::F32(_) => CpuStorage::F32(forward::<f32>(self.eps, (s1, l1), (s2, l2), (s3, l3))?),
            _ => return Err(msg("a float32 or float64 input expected")),
        };
        Ok((y, l1.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, w: &Tensor, _b: &Tensor, _res: &Tensor, dy: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (x, w, dy) = (x.detach().contiguous()?, w.detach().contiguous()?, dy.detach().contiguous()?);
        let (dx, dw, db) = match x.dtype() {
            DType::F64 => backward::<f64>(self.eps, &x, &w, &dy)?,
            DType::F32 => backward::<f32>(self.eps, &x, &w, &dy)?,
            _ => return Err(msg("a float32 or float64 input expected")),
        };
        Ok((Some(dx), Some(dw), Some(db)))
    }
}

/// `y = (x − mean) / σ · w + b`, rounded once to `T`.
fn forward<T: WithDType>(eps: f64, x: (&CpuStorage, &Layout), w: (&CpuStorage, &Layout), b: (&CpuStorage, &Layout)) -> candle_core::Result<Vec<T>> {
    let (dims, x) = (sizes(x.1.dims()), host_values::<T>("batch_norm", x.0, x.1)?);
    let (w, b) = (host_values::<T>("batch_norm", w.0, w.1)?, host_values::<T>("batch_norm", b.0, b.1)?);
    let stats = statistics(x, dims, eps);
    let (c, s) = (dims.1, dims.2);
    let mut y = crate::heap::filled(T::from_f64(0.0), x.len());
    if s > 0 {
        y.par_chunks_mut(s).zip(x.par_chunks(s)).enumerate().for_each(|(row, (y, x))| {
            let ch = row % c;
            let (mean, std) = stats[ch];
            let (w, b) = (w[ch].to_f64(), b[ch].to_f64());
            for (y, &x) in y.iter_mut().zip(x) {
                *y = T::from_f64((x.to_f64() - mean) / std * w + b);
            }
        });
    }
    Ok(y)
}

/// The gradients of the input, weight and bias, each rounded once to `T`.
fn backward<T: WithDType>(eps: f64, x: &Tensor, w: &Tensor, dy: &Tensor) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
    with_host_values("batch_norm", [x, w, dy], |[xv, wv, gv]| backward_of::<T>(eps, (x, xv), wv, gv))
}

/// [`backward`] of the operands' values (`x` for its shape and device).
fn backward_of<T: WithDType>(eps: f64, (x, xv): (&Tensor, &[T]), wv: &[T], gv: &[T]) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
    let dims @ (n, c, s) = sizes(x.dims());
    let stats = statistics(xv, dims, eps);
    // Per channel: Σ dy and Σ dy·x̂.
    let sums: Vec<(f64, f64)> = (0..c)
        .into_par_iter()
        .map(|ch| {
            let (mean, std) = stats[ch];
            let (mut db, mut dw) = (0.0, 0.0);
            for i in 0..n {
                let at = (i * c + ch) * s..(i * c + ch + 1) * s;
                for (&g, &v) in gv[at.clone()].iter().zip(&xv[at]) {
                    let g = g.to_f64();
                    db += g;
                    dw += g * ((v.to_f64() - mean) / std);
                }
            }
            (db, dw)
        })
        .collect();
    let count = (n * s) as f64;
    let mut dx = crate::heap::filled(T::from_f64(0.0), xv.len());
    if s > 0 {
        dx.par_chunks_mut(s).enumerate().for_each(|(row, dx)| {
            let ch = row % c;
            let ((mean, std), (db, dw)) = (stats[ch], sums[ch]);
            let scale = wv[ch].to_f64() / std;
            let at = row * s..(row + 1) * s;
            for ((d, &g), &v) in dx.iter_mut().zip(&gv[at.clone()]).zip(&xv[at]) {
                let xhat = (v.to_f64() - mean) / std;
                // `+ 0.0`: autograd adds each gradient into zeros, which makes a -0 +0.
                *d = T::from_f64(scale * (g.to_f64() - db / count - xhat * dw / count) + 0.0);
            }
        });
    }
    let device = x.device();
    let per_channel = |f: fn(&(f64, f64)) -> f64| Tensor::from_vec(sums.iter().map(|p| T::from_f64(f(p) + 0.0)).collect::<Vec<T>>(), c, device);
    Ok((Tensor::from_vec(dx, x.shape(), device)?, per_channel(|p| p.1)?, per_channel(|p| p.0)?))
}

/// Training-mode batch normalization of `x` (`[N, C, *]`) with per-channel
/// `weight` and `bias` (`[C]`, ones and zeros when the call has none): the
/// fused kernel for a float32 or float64 `x` on the host, `None` otherwise
/// (off the host the composite runs on the tensor's own device).
pub(super) fn fused_batch_norm(x: &Tensor, weight: &Tensor, bias: &Tensor, eps: f64) -> candle_core::Result<Option<Tensor>> {
    if !matches!(x.dtype(), DType::F64 | DType::F32) || !crate::device::is_host(x) || x.rank() < 2 {
        return Ok(None);
    }
    let (w, b) = (weight.to_dtype(x.dtype())?.contiguous()?, bias.to_dtype(x.dtype())?.contiguous()?);
    x.contiguous()?.apply_op3(&w, &b, BatchNorm { eps }).map(Some)
}

/// The gradients of [`fused_batch_norm`]'s input, weight and bias under the
/// output gradient `dy` (the input's shape and dtype), without autograd:
/// what autograd gives through the kernel, bit for bit (its sums into zeros
/// are the kernel's `+ 0`). `None` where the kernel does not apply or `w`
/// or `dy` is not of the input's dtype.
pub(super) fn fused_batch_norm_gradients(x: &Tensor, weight: &Tensor, dy: &Tensor, eps: f64) -> candle_core::Result<Option<(Tensor, Tensor, Tensor)>> {
    if !matches!(x.dtype(), DType::F64 | DType::F32) || !crate::device::is_host(x) || x.rank() < 2 {
        return Ok(None);
    }
    if weight.dtype() != x.dtype() || dy.dtype() != x.dtype() || dy.dims() != x.dims() || weight.elem_count() != x.dims()[1] {
        return Ok(None);
    }
    let (x, w, dy) = (x.contiguous()?, weight.flatten_all()?.contiguous()?, dy.contiguous()?);
    match x.dtype() {
        DType::F64 => backward::<f64>(eps, &x, &w, &dy),
        _ => backward::<f32>(eps, &x, &w, &dy),
    }
    .map(Some)
}

#[cfg(test)]
mod tests {
    use candle_core::{Tensor, Var};

    use super::*;

    /// The composite the kernel replaces (`norm::batch_norm` in training).
    fn composite(x: &Tensor, w: &Tensor, b: &Tensor, eps: f64) -> candle_core::Result<Tensor> {
        let shape: Vec<usize> = (0..x.rank()).map(|i| if i == 1 { x.dims()[1] } else { 1 }).collect();
        let dims: Vec<usize> = (0..x.rank()).filter(|&d| d != 1).collect();
        let n: usize = dims.iter().map(|&d| x.dims()[d]).product();
        let mean = (x.sum_keepdim(dims.clone())? / n as f64)?;
        let var = (x.broadcast_sub(&mean)?.sqr()?.sum_keepdim(dims)? / n as f64)?;
        let y = x.broadcast_sub(&mean)?.broadcast_div(&(var + eps)?.sqrt()?)?;
        y.broadcast_mul(&w.reshape(shape.as_slice())?)?.broadcast_add(&b.reshape(shape.as_slice())?)
    }

    fn data(len: usize, k: f64) -> Vec<f64> {
        (0..len).map(|i| ((i * 37 % 23) as f64 - 11.0) * k + (i as f64 * 0.1).sin()).collect()
    }

    #[test]
    fn the_forward_is_the_composites_and_the_backward_autograds() {
        let dev = crate::device::host();
        for dims in [vec![3, 4, 5, 2], vec![6, 3], vec![2, 5, 7]] {
            let len: usize = dims.iter().product();
            let c = dims[1];
            let x = Tensor::from_vec(data(len, 0.7), dims.as_slice(), &dev).unwrap();
            let w = Tensor::from_vec(data(c, 0.3), c, &dev).unwrap();
            let b = Tensor::from_vec(data(c, 0.2), c, &dev).unwrap();
            let g = Tensor::from_vec(data(len, 1.3), dims.as_slice(), &dev).unwrap();
            let vars = |t: &Tensor| Var::from_tensor(t).unwrap();
            let (xa, wa, ba) = (vars(&x), vars(&w), vars(&b));
            let (xb, wb, bb) = (vars(&x), vars(&w), vars(&b));
            let ya = fused_batch_norm(xa.as_tensor(), wa.as_tensor(), ba.as_tensor(), 1e-5).unwrap().unwrap();
            let yb = composite(xb.as_tensor(), wb.as_tensor(), bb.as_tensor(), 1e-5).unwrap();
            let flat = |t: &Tensor| -> Vec<f64> { t.flatten_all().unwrap().to_vec1().unwrap() };
            assert_eq!(flat(&ya), flat(&yb), "{dims:?}: the same arithmetic in the same order");
            let ga = (&ya * &g).unwrap().sum_all().unwrap().backward().unwrap();
            let gb = (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap();
            for (what, a, b) in [("input", &xa, &xb), ("weight", &wa, &wb), ("bias", &ba, &bb)] {
                let (a, b) = (flat(ga.get(a.as_tensor()).unwrap()), flat(gb.get(b.as_tensor()).unwrap()));
                let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                for (i, (p, q)) in a.iter().zip(&b).enumerate() {
                    assert!((p - q).abs() <= 1e-12 * scale, "{dims:?} {what} element {i}: {p} vs {q}");
                }
            }
        }
    }

    #[test]
    fn float32_is_the_float64_result_rounded_once() {
        let dev = crate::device::host();
        let x = Tensor::from_vec(data(2 * 3 * 40, 0.7), (2, 3, 40), &dev).unwrap();
        let (w, b) = (Tensor::from_vec(data(3, 0.3), 3, &dev).unwrap(), Tensor::from_vec(data(3, 0.2), 3, &dev).unwrap());
        let wide = fused_batch_norm(&x, &w, &b, 1e-5).unwrap().unwrap();
        let f32s = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
        let narrow = fused_batch_norm(&f32s(&x), &f32s(&w), &f32s(&b), 1e-5).unwrap().unwrap();
        // The float32 inputs are the float64 ones rounded; the statistics of
        // those are not exactly the float64 ones, so within a few roundings.
        let (p, q): (Vec<f32>, Vec<f32>) = (f32s(&wide).flatten_all().unwrap().to_vec1().unwrap(), narrow.flatten_all().unwrap().to_vec1().unwrap());
        for (i, (p, q)) in p.iter().zip(&q).enumerate() {
            assert!((p - q).abs() <= 4.0 * f32::EPSILON * p.abs().max(1.0), "element {i}: {p} vs {q}");
        }
        let ints = Tensor::zeros((2, 3), DType::U8, &dev).unwrap();
        assert!(fused_batch_norm(&ints, &w, &b, 1e-5).unwrap().is_none());
    }
}
