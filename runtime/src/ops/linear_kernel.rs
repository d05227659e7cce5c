//! A linear layer's product `y = x·Wᵀ` (`x` of shape `[.., K]`, `W` of
//! `[N, K]`) as one matrix product over all leading dims, forward and
//! backward (`dx = dy·W`, `dW = dyᵀ·x`), each written in place on the
//! `gemm` crate's kernels ([`super::gemm_into`]), as torch's linear folds
//! the leading dims into one product. candle broadcast the weight's
//! transpose over the leading dims and differentiated the broadcast, the
//! transpose and the product as three nodes, each gradient a zero tensor
//! added into (a quarter of a GPT-2 block's linear calls' time outside
//! the products).

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Storage, Tensor, WithDType};

use super::gemm_into::{gemm_into, Strided};
use crate::device::host_values;

fn msg(m: &str) -> candle_core::Error {
    candle_core::Error::Msg(format!("linear: {m}"))
}

/// `x·Wᵀ` over the leading dims of `x`.
struct Linear;

/// (M, K, N): the rows of `x` (its leading dims together), the features in
/// and out; an error unless `x` is `[.., K]` and `W` is `[N, K]`.
fn sizes(x: &[usize], w: &[usize]) -> candle_core::Result<(usize, usize, usize)> {
    match (x.split_last(), w) {
        (Some((&k, lead)), &[n, wk]) if k == wk => Ok((lead.iter().product(), k, n)),
        _ => Err(msg(&format!("an input [.., K] and a weight [N, K], got {x:?} and {w:?}"))),
    }
}

fn forward<T: WithDType>(x: &[T], w: &[T], (m, k, n): (usize, usize, usize)) -> candle_core::Result<Vec<T>> {
    let mut y = vec![T::zero(); m * n];
    gemm_into(&mut y, Strided::row_major(m, n), false, x, Strided::row_major(m, k), w, Strided::row_major(n, k).t())?;
    Ok(y)
}

/// `(dx, dW) = (dy·W, dyᵀ·x)`.
fn backward<T: WithDType>(x: &[T], w: &[T], dy: &[T], (m, k, n): (usize, usize, usize)) -> candle_core::Result<(Vec<T>, Vec<T>)> {
    let mut dx = vec![T::zero(); m * k];
    gemm_into(&mut dx, Strided::row_major(m, k), false, dy, Strided::row_major(m, n), w, Strided::row_major(n, k))?;
    let mut dw = vec![T::zero(); n * k];
    gemm_into(&mut dw, Strided::row_major(n, k), false, dy, Strided::row_major(m, n).t(), x, Strided::row_major(m, k))?;
    Ok((dx, dw))
}

impl CustomOp2 for Linear {
    fn name(&self) -> &'static str {
        "linear-as-one-product"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let mnk = sizes(l1.dims(), l2.dims())?;
        let y = match (s1, s2) {
            (CpuStorage::F64(_), CpuStorage::F64(_)) => CpuStorage::F64(forward(host_values("linear", s1, l1)?, host_values("linear", s2, l2)?, mnk)?),
            (CpuStorage::F32(_), CpuStorage::F32(_)) => CpuStorage::F32(forward(host_values("linear", s1, l1)?, host_values("linear", s2, l2)?, mnk)?),
            _ => return Err(msg("float32 or float64 operands of one dtype expected")),
        };
        let mut dims = l1.dims().to_vec();
        if let Some(last) = dims.last_mut() {
            *last = mnk.2;
        }
        Ok((y, Shape::from(dims)))
    }

    fn bwd(&self, x: &Tensor, w: &Tensor, _res: &Tensor, dy: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (x, w, dy) = (x.detach().contiguous()?, w.detach().contiguous()?, dy.detach().contiguous()?);
        let mnk = sizes(x.dims(), w.dims())?;
        let (xs, xl) = x.storage_and_layout();
        let (ws, wl) = w.storage_and_layout();
        let (gs, gl) = dy.storage_and_layout();
        let (Storage::Cpu(xs), Storage::Cpu(ws), Storage::Cpu(gs)) = (&*xs, &*ws, &*gs) else { return Err(msg("host tensors expected")) };
        let dev = x.device();
        let (dx, dw) = match x.dtype() {
            DType::F64 => {
                let (dx, dw) = backward::<f64>(host_values("linear", xs, xl)?, host_values("linear", ws, wl)?, host_values("linear", gs, gl)?, mnk)?;
                (Tensor::from_vec(dx, x.shape(), dev)?, Tensor::from_vec(dw, w.shape(), dev)?)
            }
            DType::F32 => {
                let (dx, dw) = backward::<f32>(host_values("linear", xs, xl)?, host_values("linear", ws, wl)?, host_values("linear", gs, gl)?, mnk)?;
                (Tensor::from_vec(dx, x.shape(), dev)?, Tensor::from_vec(dw, w.shape(), dev)?)
            }
            _ => return Err(msg("float32 or float64 operands expected")),
        };
        Ok((Some(dx), Some(dw)))
    }
}

/// `x·Wᵀ` for an input `[.., K]` and a weight `[N, K]` on the host in
/// float32 or float64 (operands of one dtype), `None` otherwise (candle's
/// matmul then).
pub(super) fn linear(x: &Tensor, w: &Tensor) -> candle_core::Result<Option<Tensor>> {
    let dtype = x.dtype();
    let fits = x.rank() >= 1 && sizes(x.dims(), w.dims()).is_ok();
    if !fits || !matches!(dtype, DType::F64 | DType::F32) || w.dtype() != dtype || !crate::device::is_host(x) {
        return Ok(None);
    }
    x.contiguous()?.apply_op2(&w.contiguous()?, Linear).map(Some)
}

#[cfg(test)]
mod tests {
    use candle_core::{Tensor, Var};

    use super::*;

    fn data(len: usize, k: f64) -> Vec<f64> {
        (0..len).map(|i| ((i * 37 % 23) as f64 - 11.0) * k + (i as f64 * 0.1).sin()).collect()
    }

    /// Forward and both gradients as candle's broadcast matmul gives them,
    /// for 1-, 2- and 3-d inputs.
    #[test]
    fn agrees_with_candles_matmul_forward_and_backward() {
        let dev = crate::device::host();
        for (x, w) in [(vec![5], [3, 5]), (vec![4, 6], [7, 6]), (vec![2, 5, 3], [4, 3]), (vec![3, 1, 2, 8], [1, 8])] {
            let xt = Tensor::from_vec(data(x.iter().product(), 0.3), x.as_slice(), &dev).unwrap();
            let wt = Tensor::from_vec(data(w.iter().product(), 0.2), &w, &dev).unwrap();
            let (xa, wa, xb, wb) =
                (Var::from_tensor(&xt).unwrap(), Var::from_tensor(&wt).unwrap(), Var::from_tensor(&xt).unwrap(), Var::from_tensor(&wt).unwrap());
            let ya = linear(xa.as_tensor(), wa.as_tensor()).unwrap().unwrap();
            let x2 = xb.as_tensor().reshape(((), w[1])).unwrap();
            let mut dims = x.clone();
            *dims.last_mut().unwrap() = w[0];
            let yb = x2.matmul(&wb.as_tensor().t().unwrap()).unwrap().reshape(dims.as_slice()).unwrap();
            assert_eq!(ya.dims(), yb.dims());
            let g = Tensor::from_vec(data(ya.elem_count(), 1.1), ya.dims(), &dev).unwrap();
            let flat = |t: &Tensor| -> Vec<f64> { t.flatten_all().unwrap().to_vec1().unwrap() };
            let ga = (&ya * &g).unwrap().sum_all().unwrap().backward().unwrap();
            let gb = (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap();
            let pairs = [
                ("output", flat(&ya), flat(&yb)),
                ("input gradient", flat(ga.get(xa.as_tensor()).unwrap()), flat(gb.get(xb.as_tensor()).unwrap())),
                ("weight gradient", flat(ga.get(wa.as_tensor()).unwrap()), flat(gb.get(wb.as_tensor()).unwrap())),
            ];
            for (what, a, b) in pairs {
                let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                for (i, (p, q)) in a.iter().zip(&b).enumerate() {
                    assert!((p - q).abs() <= 1e-12 * scale, "{x:?} {w:?} {what} element {i}: {p} vs {q}");
                }
            }
        }
        let x = Tensor::zeros((2, 3), candle_core::DType::F64, &dev).unwrap();
        assert!(linear(&x, &Tensor::zeros((4, 2), candle_core::DType::F64, &dev).unwrap()).unwrap().is_none());
    }
}
