//! relu as one selection pass forward (`x` where `x > 0`, else 0) and one
//! backward (the output gradient where `x > 0`, else 0), on float32 or
//! float64 host tensors. candle's `where_cond` composite held a zero
//! tensor and a mask beside the output, and its backward made two more
//! selections and two zero tensors: a random-data relu of a ResNet-50
//! step's `[8, 64, 112, 112]` peaked at 30 float64 copies of its input.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Tensor, WithDType};
use rayon::prelude::*;

use crate::device::{host_values, with_host_values};

/// Each element of `x` where `keep(x)`, else 0; `pick` the value kept.
fn select<T: WithDType>(x: &[T], pick: Option<&[T]>) -> Vec<T> {
    let zero = T::zero();
    match pick {
        None => x.par_iter().map(|&v| if v > zero { v } else { zero }).collect(),
        Some(g) => x.par_iter().zip(g.par_iter()).map(|(&v, &g)| if v > zero { g } else { zero }).collect(),
    }
}

struct Relu;

impl CustomOp1 for Relu {
    fn name(&self) -> &'static str {
        "relu-select"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let y = match storage {
            CpuStorage::F64(_) => CpuStorage::F64(select(host_values::<f64>("relu", storage, layout)?, None)),
            CpuStorage::F32(_) => CpuStorage::F32(select(host_values::<f32>("relu", storage, layout)?, None)),
            _ => return Err(candle_core::Error::Msg("relu: a float32 or float64 input expected".into())),
        };
        Ok((y, layout.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, _res: &Tensor, dy: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let (x, dy) = (x.detach().contiguous()?, dy.detach().to_dtype(x.dtype())?.contiguous()?);
        let dx = match x.dtype() {
            DType::F64 => Tensor::from_vec(with_host_values::<f64, _, 2>("relu", [&x, &dy], |[xv, g]| Ok(select(xv, Some(g))))?, x.shape(), x.device())?,
            DType::F32 => Tensor::from_vec(with_host_values::<f32, _, 2>("relu", [&x, &dy], |[xv, g]| Ok(select(xv, Some(g))))?, x.shape(), x.device())?,
            _ => return Err(candle_core::Error::Msg("relu: a float32 or float64 input expected".into())),
        };
        Ok(Some(dx))
    }
}

/// relu of a float32 or float64 host tensor by selection; `None` for any
/// other (the `where_cond` composite then).
pub(super) fn relu(x: &Tensor) -> candle_core::Result<Option<Tensor>> {
    if !matches!(x.dtype(), candle_core::DType::F64 | candle_core::DType::F32) || !crate::device::is_host(x) {
        return Ok(None);
    }
    x.contiguous()?.apply_op1(Relu).map(Some)
}

#[cfg(test)]
mod tests {
    use candle_core::{Tensor, Var};

    use super::*;

    /// The composite's values and gradients bit for bit, at 0, -0, NaN and
    /// infinities, with a NaN and an infinite output gradient where the
    /// input is not positive (selected away, not multiplied by 0).
    #[test]
    fn selects_as_the_where_composite_does() {
        let dev = crate::device::host();
        let xs = vec![-2.0, -0.0, 0.0, 1e-300, 3.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 2.0];
        let gs = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, f64::NAN, f64::INFINITY];
        let x = Tensor::from_vec(xs.clone(), xs.len(), &dev).unwrap();
        let g = Tensor::from_vec(gs, xs.len(), &dev).unwrap();
        let bits = |t: &Tensor| -> Vec<u64> { t.to_vec1::<f64>().unwrap().into_iter().map(f64::to_bits).collect() };
        let (va, vb) = (Var::from_tensor(&x).unwrap(), Var::from_tensor(&x).unwrap());
        let ya = relu(va.as_tensor()).unwrap().unwrap();
        let yb = vb.as_tensor().gt(0.0).unwrap().where_cond(vb.as_tensor(), &vb.as_tensor().zeros_like().unwrap()).unwrap();
        assert_eq!(bits(&ya), bits(&yb));
        let ga = (&ya * &g).unwrap().sum_all().unwrap().backward().unwrap();
        let gb = (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap();
        // Through the product's backward both see the same output gradient.
        assert_eq!(bits(ga.get(va.as_tensor()).unwrap()), bits(gb.get(vb.as_tensor()).unwrap()));
        let x32 = x.to_dtype(candle_core::DType::F32).unwrap();
        assert_eq!(relu(&x32).unwrap().unwrap().to_vec1::<f32>().unwrap()[..5], [0.0, 0.0, 0.0, 0.0, 3.5]);
    }
}
