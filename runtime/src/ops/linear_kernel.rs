//! A linear layer's product `y = x·Wᵀ` (`x` of shape `[.., K]`, `W` of
//! `[N, K]`) as one matrix product over all leading dims, forward and
//! backward (`dx = dy·W`, `dW = dyᵀ·x`), each written in place on the
//! `gemm` crate's kernels ([`super::gemm_into`]; `y` and `dx` of a batch
//! of at most 16 rows on [`super::few_rows`]'s), as torch's linear folds
//! the leading dims into one product. candle broadcast the weight's
//! transpose over the leading dims and differentiated the broadcast, the
//! transpose and the product as three nodes, each gradient a zero tensor
//! added into (a quarter of a GPT-2 block's linear calls' time outside
//! the products).

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor, WithDType};
use rayon::prelude::*;

use super::few_rows::{self, Float};
use super::gemm_into::{gemm_into, Strided};
use crate::device::{host_values, with_host_values};

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

fn forward<T: WithDType + Float>(x: &[T], w: &[T], (m, k, n): (usize, usize, usize)) -> candle_core::Result<Vec<T>> {
    if m <= few_rows::FEW {
        return Ok(few_rows::forward(x, w, (m, k, n)));
    }
    let mut y = vec![T::zero(); m * n];
    gemm_into(&mut y, Strided::row_major(m, n), false, x, Strided::row_major(m, k), w, Strided::row_major(n, k).t())?;
    Ok(y)
}

/// `(dx, dW) = (dy·W, dyᵀ·x)`; with `transposed`, `dW` is written as its
/// transpose `[K, N]`: gemm writes the same product through a transposed
/// view of the output, the same bits.
fn backward<T: WithDType + Float>(x: &[T], w: &[T], dy: &[T], (m, k, n): (usize, usize, usize), transposed: bool) -> candle_core::Result<(Vec<T>, Vec<T>)> {
    let positive = |v: &mut [T]| v.par_iter_mut().with_min_len(1 << 14).for_each(|v| *v += T::zero());
    // A zero as autograd's sum into a zero tensor leaves it, +0: gemm's
    // matrix-vector path can write the -0 of a sum of -0 products (the
    // few-rows kernels sum from +0).
    let dx = if m <= few_rows::FEW {
        few_rows::backward_input(dy, w, (m, k, n))
    } else {
        let mut dx = crate::heap::filled(T::zero(), m * k);
        gemm_into(&mut dx, Strided::row_major(m, k), false, dy, Strided::row_major(m, n), w, Strided::row_major(n, k))?;
        positive(&mut dx);
        dx
    };
    let mut dw = crate::heap::filled(T::zero(), n * k);
    let dw_view = if transposed { Strided::row_major(k, n).t() } else { Strided::row_major(n, k) };
    gemm_into(&mut dw, dw_view, false, dy, Strided::row_major(m, n).t(), x, Strided::row_major(m, k))?;
    positive(&mut dw);
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
        let (dx, dw) = products_back(&x.detach(), &w.detach(), &dy.detach(), false)?;
        Ok((Some(dx), Some(dw)))
    }
}

/// `(dx, dW)` of host operands of one float dtype, shaped like `x` and `W`;
/// with `transposed`, `dW` is the transposed view of a contiguous `[K, N]`
/// tensor (its layout when the dump recorded `weight.t()`'s gradient).
fn products_back(x: &Tensor, w: &Tensor, dy: &Tensor, transposed: bool) -> candle_core::Result<(Tensor, Tensor)> {
    let (x, w, dy) = (x.contiguous()?, w.contiguous()?, dy.contiguous()?);
    let mnk = sizes(x.dims(), w.dims())?;
    let (_, k, n) = mnk;
    // dW as written: `[N, K]`, or with `transposed` `[K, N]` viewed as `[N, K]`.
    fn tensors<T: WithDType>((dx, dw): (Vec<T>, Vec<T>), x: &Tensor, (k, n): (usize, usize), transposed: bool) -> candle_core::Result<(Tensor, Tensor)> {
        let dev = x.device();
        let dw = if transposed { Tensor::from_vec(dw, (k, n), dev)?.t()? } else { Tensor::from_vec(dw, (n, k), dev)? };
        Ok((Tensor::from_vec(dx, x.shape(), dev)?, dw))
    }
    match x.dtype() {
        DType::F64 => tensors(with_host_values("linear", [&x, &w, &dy], |[x, w, g]| backward::<f64>(x, w, g, mnk, transposed))?, &x, (k, n), transposed),
        DType::F32 => tensors(with_host_values("linear", [&x, &w, &dy], |[x, w, g]| backward::<f32>(x, w, g, mnk, transposed))?, &x, (k, n), transposed),
        _ => Err(msg("float32 or float64 operands expected")),
    }
}

/// Whether the kernel takes `x` and `w`: an input `[.., K]` and a weight
/// `[N, K]` on the host, float32 or float64 of one dtype.
fn takes(x: &Tensor, w: &Tensor) -> bool {
    let fits = x.rank() >= 1 && sizes(x.dims(), w.dims()).is_ok();
    fits && matches!(x.dtype(), DType::F64 | DType::F32) && w.dtype() == x.dtype() && crate::device::is_host(x)
}

/// `(dx, dW) = (dy·W, dyᵀ·x)` as the kernel's backward gives them, for
/// operands it takes and an output gradient `dy` of their dtype; `None`
/// otherwise. With `transposed`, `dW` is a transposed view of a contiguous
/// `[K, N]` tensor: the same values, laid out as a dump that recorded
/// `weight.t()`'s gradient holds them.
pub(super) fn gradients(x: &Tensor, w: &Tensor, dy: &Tensor, transposed: bool) -> candle_core::Result<Option<(Tensor, Tensor)>> {
    if !takes(x, w) || dy.dtype() != x.dtype() || !crate::device::is_host(dy) {
        return Ok(None);
    }
    products_back(x, w, dy, transposed).map(Some)
}

/// `x·Wᵀ` for an input `[.., K]` and a weight `[N, K]` on the host in
/// float32 or float64 (operands of one dtype), `None` otherwise (candle's
/// matmul then).
pub(super) fn linear(x: &Tensor, w: &Tensor) -> candle_core::Result<Option<Tensor>> {
    if !takes(x, w) {
        return Ok(None);
    }
    x.contiguous()?.apply_op2(&w.contiguous()?, Linear).map(Some)
}

#[cfg(test)]
mod tests {
    use candle_core::Tensor;

    use super::super::kernel_check::assert_agrees;
    use super::*;

    /// Forward and both gradients as candle's matmul of the rows gives
    /// them, for 1- to 4-d inputs; a weight that does not fit is left to candle.
    #[test]
    fn agrees_with_candles_matmul_forward_and_backward() {
        for (x, w) in [(vec![5], [3, 5]), (vec![4, 6], [7, 6]), (vec![2, 5, 3], [4, 3]), (vec![3, 1, 2, 8], [1, 8])] {
            let rows = |x: &Tensor, w: &Tensor| {
                let mut dims = x.dims().to_vec();
                *dims.last_mut().unwrap() = w.dims()[0];
                x.reshape(((), w.dims()[1])).unwrap().matmul(&w.t().unwrap()).unwrap().reshape(dims).unwrap()
            };
            assert_agrees(&format!("{x:?} {w:?}"), &x, &w, |x, w| linear(x, w).unwrap().unwrap(), rows);
        }
        let dev = crate::device::host();
        let x = Tensor::zeros((2, 3), candle_core::DType::F64, &dev).unwrap();
        assert!(linear(&x, &Tensor::zeros((4, 2), candle_core::DType::F64, &dev).unwrap()).unwrap().is_none());
    }

    /// The weight's gradient written transposed has the very bits of the
    /// one written as the weight, on every path gemm takes (a product of
    /// one row, of an inner size of 1 or 2, small, blocked), in both dtypes.
    #[test]
    fn a_transposed_weight_gradient_has_the_same_bits() {
        let dev = crate::device::host();
        for (m, k, n) in [(8, 300, 257), (1, 7, 5), (3, 1, 9), (2, 4, 1), (5, 6, 3), (70, 33, 130)] {
            let values =
                |len: usize, salt: f64| (0..len).map(|i| ((i as f64 + salt) * 0.731).sin() * if i % 7 == 0 { -1e-3 } else { 1.0 }).collect::<Vec<f64>>();
            for dtype in [candle_core::DType::F64, candle_core::DType::F32] {
                let t = |v: Vec<f64>, dims: &[usize]| Tensor::from_vec(v, dims, &dev).unwrap().to_dtype(dtype).unwrap();
                let (x, w, dy) = (t(values(m * k, 0.5), &[m, k]), t(values(n * k, 1.5), &[n, k]), t(values(m * n, 2.5), &[m, n]));
                let (dx, dw) = gradients(&x, &w, &dy, false).unwrap().unwrap();
                let (dx_t, dw_t) = gradients(&x, &w, &dy, true).unwrap().unwrap();
                assert_eq!(dw_t.dims(), &[n, k]);
                assert!(!dw_t.is_contiguous() || n == 1 || k == 1, "{m} {k} {n}: a view");
                assert!(dw_t.t().unwrap().is_contiguous(), "{m} {k} {n}: of a contiguous [K, N]");
                let bits = |t: &Tensor| {
                    t.to_dtype(candle_core::DType::F64)
                        .unwrap()
                        .flatten_all()
                        .unwrap()
                        .to_vec1::<f64>()
                        .unwrap()
                        .iter()
                        .map(|v| v.to_bits())
                        .collect::<Vec<_>>()
                };
                assert_eq!(bits(&dw_t), bits(&dw), "{m} {k} {n} {dtype:?}");
                assert_eq!(bits(&dx_t), bits(&dx), "{m} {k} {n} {dtype:?}");
            }
        }
    }
}
