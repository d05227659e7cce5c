//! gelu's tanh form (`approximate="tanh"`, GPT-2's) in float64 as one pass
//! forward and one backward over slices, on a tanh written out so that the
//! loops vectorize. libm's `tanh` is a call per element (about 10 ns
//! here): in a GPT-2 block's gelu of `[1, 512, 3072]` the two tanh passes
//! were half of the call's 44 ms, against torch's 16 ms for the same call
//! with its files read.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Tensor};
use rayon::prelude::*;

use crate::device::{host_values, with_host_values};

/// √(2/π), the tanh form's constant.
const C: f64 = 0.7978845608028654;
/// Elements per parallel task.
const CHUNK: usize = 1 << 14;
/// 1.5·2^52: adding it rounds a float64 of magnitude below 2^51 to an
/// integer, which the sum's low bits then hold.
const ROUND: f64 = 6755399441055744.0;
/// ln 2 in two parts, the first with trailing zero bits (k·LN2_HI exact).
const LN2_HI: f64 = 0.6931471803691238;
const LN2_LO: f64 = 1.9082149292705877e-10;

/// `e^x - 1` for `x` in [-40, 0]: `x = k·ln 2 + r` with |r| ≤ ln 2 / 2,
/// expm1(r) by its Taylor series to r^13 (the next term below 2^-53·|r|),
/// then `2^k·expm1(r) + (2^k - 1)`, whose terms cancel at most by half
/// (`|2^k·expm1(r)| ≤ 0.21` where `|2^k - 1| ≥ 0.5`). No branch and no
/// call, so a loop of it vectorizes.
#[inline(always)]
fn expm1_nonpositive(x: f64) -> f64 {
    let rounded = x * std::f64::consts::LOG2_E + ROUND;
    let k = rounded - ROUND;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut p = 1.0 / 6227020800.0;
    for inverse_factorial in [
        1.0 / 479001600.0,
        1.0 / 39916800.0,
        1.0 / 3628800.0,
        1.0 / 362880.0,
        1.0 / 40320.0,
        1.0 / 5040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
    ] {
        p = p * r + inverse_factorial;
    }
    let expm1_r = r + r * r * p;
    // 2^k from k's two's complement in the rounded sum's low bits.
    let scale = f64::from_bits(rounded.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(1023) << 52);
    scale * expm1_r + (scale - 1.0)
}

/// tanh(u) as `-t/(t + 2)` with `t = expm1(-2|u|)`, the sign of `u`
/// restored: within 3 ulps of libm's (the test sweeps 2.8·10^7 values), exact
/// at ±0, ±1 from |u| ≥ 20 (tanh(20) rounds to 1), NaN kept.
#[inline(always)]
pub(super) fn tanh(u: f64) -> f64 {
    let t = expm1_nonpositive(-2.0 * u.abs().min(20.0));
    let y = (-t / (t + 2.0)).copysign(u);
    if u.is_nan() {
        u
    } else {
        y
    }
}

/// The tanh form, `x·½(1 + tanh(√(2/π)(x + 0.044715x³)))`.
#[inline(always)]
fn gelu(x: f64) -> f64 {
    (x * 0.5) * (tanh((x + x * x * x * 0.044715) * C) + 1.0)
}

/// Its derivative, `½(1 + th) + ½x(1 - th²)·√(2/π)(1 + 3·0.044715x²)`.
#[inline(always)]
fn slope(x: f64) -> f64 {
    let th = tanh((x + x * x * x * 0.044715) * C);
    0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * C * (1.0 + 3.0 * 0.044715 * x * x)
}

/// `y = gelu(x)`, element by element.
#[inline(always)]
fn gelu_loop(y: &mut [f64], x: &[f64]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y = gelu(x);
    }
}

/// `dx = 0 + dy·gelu'(x)`, element by element: the gradient summed into
/// zeros, as autograd sums every input's gradient (a -0 comes out +0), so
/// that [`gradients`] gives autograd's values without it.
#[inline(always)]
fn slope_loop(dx: &mut [f64], x: &[f64], dy: &[f64]) {
    for ((dx, &x), &g) in dx.iter_mut().zip(x).zip(dy) {
        *dx = 0.0 + g * slope(x);
    }
}

/// The loops' AVX2 twins ([`crate::simd`]).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[target_feature(enable = "avx2")]
    pub(super) fn gelu_loop(y: &mut [f64], x: &[f64]) {
        super::gelu_loop(y, x)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn slope_loop(dx: &mut [f64], x: &[f64], dy: &[f64]) {
        super::slope_loop(dx, x, dy)
    }
}

/// gelu of each element, the output first touched by the pool's threads.
fn forward(x: &[f64]) -> Vec<f64> {
    let mut y = crate::heap::filled(0.0, x.len());
    y.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK)).for_each(|(y, x)| {
        #[cfg(target_arch = "x86_64")]
        if crate::simd::has_avx2() {
            // SAFETY: the CPU has AVX2 (simd::has_avx2).
            return unsafe { avx2::gelu_loop(y, x) };
        }
        gelu_loop(y, x)
    });
    y
}

/// `0 + dy·gelu'(x)` of each element.
fn backward(x: &[f64], dy: &[f64]) -> Vec<f64> {
    let mut dx = crate::heap::filled(0.0, x.len());
    dx.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK).zip(dy.par_chunks(CHUNK))).for_each(|(dx, (x, dy))| {
        #[cfg(target_arch = "x86_64")]
        if crate::simd::has_avx2() {
            // SAFETY: the CPU has AVX2 (simd::has_avx2).
            return unsafe { avx2::slope_loop(dx, x, dy) };
        }
        slope_loop(dx, x, dy)
    });
    dx
}

struct GeluTanh;

impl CustomOp1 for GeluTanh {
    fn name(&self) -> &'static str {
        "gelu-tanh"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        Ok((CpuStorage::F64(forward(host_values::<f64>("gelu", storage, layout)?)), layout.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, _res: &Tensor, dy: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let (x, dy) = (x.detach().contiguous()?, dy.detach().to_dtype(DType::F64)?.contiguous()?);
        let dx = with_host_values::<f64, _, 2>("gelu", [&x, &dy], |[x, dy]| Ok(backward(x, dy)))?;
        Ok(Some(Tensor::from_vec(dx, x.shape(), x.device())?))
    }
}

/// gelu's tanh form of a float64 tensor, with its exact backward: on the
/// host by this kernel, elsewhere by the pointwise op of the same functions.
pub(super) fn gelu_tanh(x: &Tensor) -> candle_core::Result<Tensor> {
    let x = x.contiguous()?;
    if x.dtype() == DType::F64 && crate::device::is_host(&x) {
        x.apply_op1(GeluTanh)
    } else {
        x.apply_op1(super::math::Pointwise { f: gelu, df: Some(slope) })
    }
}

/// The input's gradient of the tanh form under `dy` without autograd (its
/// zeros tensor and sum, a third of the backward's time), where the bench
/// runs it: `x` and `dy` float64 host tensors of one shape; `None` else.
pub(super) fn gradients(x: &Tensor, dy: &Tensor) -> candle_core::Result<Option<Tensor>> {
    if x.dtype() != DType::F64 || dy.dtype() != DType::F64 || x.dims() != dy.dims() || !crate::device::is_host(x) || !crate::device::is_host(dy) {
        return Ok(None);
    }
    let (x, dy) = (x.contiguous()?, dy.contiguous()?);
    let dx = with_host_values::<f64, _, 2>("gelu", [&x, &dy], |[x, dy]| Ok(backward(x, dy)))?;
    Tensor::from_vec(dx, x.shape(), x.device()).map(Some)
}

#[cfg(test)]
mod tests {
    use candle_core::Var;

    use super::*;

    /// The distance in ulps of two finite float64 values of one sign.
    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    /// Within 3 ulps of libm's tanh from 10^-300 to 30 (both signs, a
    /// factor 1.00005 apart: 2.8·10^7 values), and equal at the edges.
    #[test]
    fn tanh_is_within_three_ulps_of_libms() {
        let mut u = 1e-300f64;
        let mut worst = (0, 0.0);
        while u < 30.0 {
            for v in [u, -u] {
                let d = ulps(tanh(v), v.tanh());
                if d > worst.0 {
                    worst = (d, v);
                }
            }
            u *= 1.00005;
        }
        assert!(worst.0 <= 3, "{worst:?}");
        for v in [0.0, -0.0, 5e-324, -5e-324, 20.0, -20.0, 1e300, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(tanh(v).to_bits(), v.tanh().to_bits(), "{v}");
        }
        assert!(tanh(f64::NAN).is_nan());
    }

    /// The kernel's values and gradients are the scalar functions' at each
    /// element, across chunks, [`gradients`] autograd's bit for bit, and within 1e-14·max(|x|, 1) of the form on
    /// libm's tanh.
    #[test]
    fn gelu_tanh_forward_and_backward_per_element() {
        let dev = crate::device::host();
        let n = CHUNK * 2 + 37;
        let xs: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.37).sin() * 6.0).collect();
        let gs: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.11).cos()).collect();
        let x = Var::from_tensor(&Tensor::from_vec(xs.clone(), n, &dev).unwrap()).unwrap();
        let y = gelu_tanh(x.as_tensor()).unwrap();
        let g = Tensor::from_vec(gs.clone(), n, &dev).unwrap();
        let grads = (&y * &g).unwrap().sum_all().unwrap().backward().unwrap();
        let (y, dx) = (y.to_vec1::<f64>().unwrap(), grads.get(x.as_tensor()).unwrap().to_vec1::<f64>().unwrap());
        for i in 0..n {
            let x = xs[i];
            assert_eq!(y[i].to_bits(), gelu(x).to_bits(), "{i}");
            assert_eq!(dx[i].to_bits(), (0.0 + gs[i] * slope(x)).to_bits(), "{i}");
            let th = ((x + x * x * x * 0.044715) * C).tanh();
            let libm = (x * 0.5) * (th + 1.0);
            assert!((y[i] - libm).abs() <= 1e-14 * x.abs().max(1.0), "{i}: {} {libm}", y[i]);
        }
        let direct = gradients(x.as_tensor(), &g).unwrap().unwrap().to_vec1::<f64>().unwrap();
        assert_eq!(direct.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), dx.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        let y32 = gelu_tanh(&x.as_tensor().to_dtype(DType::F32).unwrap()).unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(y32[5], gelu(f64::from(xs[5] as f32)) as f32);
    }
}
