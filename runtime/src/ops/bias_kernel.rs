//! A bias added along one dim, with its gradient summed in float64 and
//! rounded once. candle's broadcast add differentiates into a sum over the
//! broadcast dims in the storage dtype, one element after another: in
//! float32 the gradient of a GPT-2 linear's bias (512 rows of one sign)
//! came out 24 ULPs off, beyond the Sums bound, and the emulated device
//! failed a row no real kernel fails (devices sum in blocks or wider).

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor, WithDType};
use rayon::prelude::*;

use crate::device::{host_values, with_host_values};

fn msg(m: &str) -> candle_core::Error {
    candle_core::Error::Msg(format!("bias add: {m}"))
}

/// `x + bias` with `bias` (`[C]`) along dim `dim` of `x` (of size C there).
struct BiasAdd {
    dim: usize,
}

/// `x`'s sizes around `dim`: (outer, C, inner).
fn around(dims: &[usize], dim: usize) -> (usize, usize, usize) {
    (dims[..dim].iter().product(), dims[dim], dims[dim + 1..].iter().product())
}

fn forward<T: WithDType>(x: &[T], bias: &[T], (_, c, inner): (usize, usize, usize)) -> Vec<T> {
    let mut y = x.to_vec();
    if inner > 0 {
        y.par_chunks_mut(inner).enumerate().for_each(|(row, y)| {
            let b = bias[row % c];
            y.iter_mut().for_each(|v| *v += b);
        });
    }
    y
}

/// Per channel, the gradient's sum over every other index, in float64,
/// rounded once: each channel's terms added from zero in index order.
fn bias_gradient<T: WithDType>(dy: &[T], (outer, c, inner): (usize, usize, usize)) -> Vec<T> {
    if inner == 1 {
        return last_dim_gradient(dy, (outer, c));
    }
    (0..c)
        .into_par_iter()
        .map(|ch| {
            let mut sum = 0.0f64;
            for o in 0..outer {
                dy[(o * c + ch) * inner..(o * c + ch + 1) * inner].iter().for_each(|v| sum += v.to_f64());
            }
            T::from_f64(sum)
        })
        .collect()
}

/// Channels along the last dim a thread sums at a time, over every row.
const CHANNELS: usize = 256;

/// [`bias_gradient`] with the channels along the last dim (a linear's
/// bias): the rows are added into a block of channels' sums one row after
/// another, reading the gradient in order, where a channel at a time read
/// one element every C (in the same order per channel, so the same sums).
fn last_dim_gradient<T: WithDType>(dy: &[T], (outer, c): (usize, usize)) -> Vec<T> {
    let mut sums = vec![0.0f64; c];
    sums.par_chunks_mut(CHANNELS).enumerate().for_each(|(block, sums)| {
        let (first, width) = (block * CHANNELS, sums.len());
        for row in dy.chunks_exact(c).take(outer) {
            sums.iter_mut().zip(&row[first..first + width]).for_each(|(s, v)| *s += v.to_f64());
        }
    });
    sums.into_iter().map(T::from_f64).collect()
}

impl CustomOp2 for BiasAdd {
    fn name(&self) -> &'static str {
        "bias-add"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let sizes = around(l1.dims(), self.dim);
        let y = match (s1, s2) {
            (CpuStorage::F64(_), CpuStorage::F64(_)) => CpuStorage::F64(forward(host_values("bias add", s1, l1)?, host_values("bias add", s2, l2)?, sizes)),
            (CpuStorage::F32(_), CpuStorage::F32(_)) => CpuStorage::F32(forward(host_values("bias add", s1, l1)?, host_values("bias add", s2, l2)?, sizes)),
            _ => return Err(msg("float32 or float64 operands of one dtype expected")),
        };
        Ok((y, l1.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, bias: &Tensor, _res: &Tensor, dy: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let db = summed(&dy.detach(), bias, around(x.dims(), self.dim))?;
        Ok((Some(dy.clone()), Some(db)))
    }
}

/// The bias gradient of a host `dy` of sizes (outer, C, inner), shaped like `bias`.
fn summed(dy: &Tensor, bias: &Tensor, sizes: (usize, usize, usize)) -> candle_core::Result<Tensor> {
    let dy = dy.contiguous()?;
    match dy.dtype() {
        DType::F64 => Tensor::from_vec(with_host_values("bias add", [&dy], |[g]| Ok(bias_gradient::<f64>(g, sizes)))?, bias.shape(), bias.device()),
        DType::F32 => Tensor::from_vec(with_host_values("bias add", [&dy], |[g]| Ok(bias_gradient::<f32>(g, sizes)))?, bias.shape(), bias.device()),
        _ => Err(msg("a float32 or float64 gradient expected")),
    }
}

/// Whether the kernel takes `x + bias` along `dim`: `bias` 1-D of `x`'s
/// size there, both on the host in float32 or float64 of one dtype.
fn takes(x: &Tensor, bias: &Tensor, dim: usize) -> bool {
    let fits = dim < x.rank() && bias.rank() == 1 && bias.dims()[0] == x.dims()[dim];
    fits && matches!(x.dtype(), DType::F64 | DType::F32) && bias.dtype() == x.dtype() && crate::device::is_host(x)
}

/// `x + bias` with `bias` (`[C]`, 1-D) along `dim` of `x`: the kernel on
/// the host in float32 or float64 (operands of one dtype), `None` otherwise
/// (candle's broadcast add then).
pub(super) fn bias_add(x: &Tensor, bias: &Tensor, dim: usize) -> candle_core::Result<Option<Tensor>> {
    if !takes(x, bias, dim) {
        return Ok(None);
    }
    x.contiguous()?.apply_op2(&bias.contiguous()?, BiasAdd { dim }).map(Some)
}

/// The bias's gradient as the kernel's backward gives it, for an output
/// gradient `dy` of an `x + bias` along `dim` the kernel takes; `None`
/// otherwise.
pub(super) fn gradient(dy: &Tensor, bias: &Tensor, dim: usize) -> candle_core::Result<Option<Tensor>> {
    if !takes(dy, bias, dim) {
        return Ok(None);
    }
    summed(dy, bias, around(dy.dims(), dim)).map(Some)
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Tensor, Var};

    use super::*;

    #[test]
    fn adds_along_a_dim_and_sums_the_gradient_wide() {
        let dev = crate::device::host();
        for (dims, dim) in [(vec![2, 3, 4], 1), (vec![5, 3], 1), (vec![2, 4, 3], 2)] {
            let len: usize = dims.iter().product();
            let c = dims[dim];
            let x = Tensor::from_vec((0..len).map(|i| i as f64 * 0.5).collect::<Vec<f64>>(), dims.as_slice(), &dev).unwrap();
            let b = Tensor::from_vec((0..c).map(|i| i as f64 - 1.0).collect::<Vec<f64>>(), c, &dev).unwrap();
            let (xa, ba, xb, bb) = (Var::from_tensor(&x).unwrap(), Var::from_tensor(&b).unwrap(), Var::from_tensor(&x).unwrap(), Var::from_tensor(&b).unwrap());
            let ya = bias_add(xa.as_tensor(), ba.as_tensor(), dim).unwrap().unwrap();
            let shape: Vec<usize> = (0..dims.len()).map(|i| if i == dim { c } else { 1 }).collect();
            let yb = xb.as_tensor().broadcast_add(&bb.as_tensor().reshape(shape).unwrap()).unwrap();
            let flat = |t: &Tensor| -> Vec<f64> { t.flatten_all().unwrap().to_vec1().unwrap() };
            assert_eq!(flat(&ya), flat(&yb));
            let g = Tensor::from_vec((0..len).map(|i| (i as f64 * 0.7).sin()).collect::<Vec<f64>>(), dims.as_slice(), &dev).unwrap();
            let ga = (&ya * &g).unwrap().sum_all().unwrap().backward().unwrap();
            let gb = (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap();
            assert_eq!(flat(ga.get(xa.as_tensor()).unwrap()), flat(gb.get(xb.as_tensor()).unwrap()));
            for (p, q) in flat(ga.get(ba.as_tensor()).unwrap()).iter().zip(flat(gb.get(bb.as_tensor()).unwrap())) {
                assert!((p - q).abs() <= 1e-13, "{dims:?} along {dim}: {p} vs {q}");
            }
        }
        // In float32 the sum of 4096 ones and one 2^-24 each is their float64 sum rounded once.
        let dy = Tensor::from_vec(vec![1.0f32 + f32::EPSILON; 4096], (4096, 1), &dev).unwrap();
        let want = (4096.0 * (1.0 + f32::EPSILON as f64)) as f32;
        assert_eq!(bias_gradient::<f32>(&dy.flatten_all().unwrap().to_vec1::<f32>().unwrap(), (4096, 1, 1)), vec![want]);
        assert_eq!(dy.dtype(), DType::F32);
    }

    #[test]
    fn a_last_dim_bias_sums_each_channel_in_index_order() {
        // Terms of mixed magnitudes, where another order rounds otherwise;
        // more channels than one block, and a block left over.
        let (outer, c) = (37, 2 * CHANNELS + 88);
        let dy: Vec<f64> = (0..outer * c).map(|i| (i as f64 * 0.37).sin() * 10f64.powi((i % 17) as i32 - 8)).collect();
        let one_by_one: Vec<f64> = (0..c).map(|ch| (0..outer).fold(0.0, |s, o| s + dy[o * c + ch])).collect();
        let got = bias_gradient::<f64>(&dy, (outer, c, 1));
        assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), one_by_one.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        let reordered: Vec<f64> = (0..c).map(|ch| (0..outer).rev().fold(0.0, |s, o| s + dy[o * c + ch])).collect();
        assert_ne!(got, reordered, "the terms are such that the order shows");
        let dy32: Vec<f32> = dy.iter().map(|&v| v as f32).collect();
        let want32: Vec<f32> = (0..c).map(|ch| (0..outer).fold(0.0f64, |s, o| s + f64::from(dy32[o * c + ch])) as f32).collect();
        assert_eq!(bias_gradient::<f32>(&dy32, (outer, c, 1)), want32);
    }
}
