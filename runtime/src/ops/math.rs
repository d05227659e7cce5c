//! Elementwise math beyond arithmetic (trigonometric, hyperbolic,
//! logarithms, rounding, predicates, two-argument functions), each as the
//! float64 function of Rust's `std` applied pointwise, with its derivative
//! for the backward ([`Pointwise`], [`Pointwise2`]); the device rounds the
//! result once to its dtype ([`Ctx::out`]), as an accurate kernel does.
//! One name each (`Torch.X`): the method forms, in-place forms and aliases
//! are derived ([`super::derive`]).

use candle_core::{CpuStorage, CustomOp1, CustomOp2, CustomOp3, DType, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::{float_of, one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::{broadcast2, operand, result_type, Ctx};
use crate::device::host_values;
use crate::dtype::{Category, TDType};
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The values of a contiguous CPU storage as f64 (stored back by [`store`]).
pub(super) fn values(storage: &CpuStorage, layout: &Layout) -> candle_core::Result<Vec<f64>> {
    let (start, end) = layout.contiguous_offsets().ok_or_else(|| candle_core::Error::Msg("pointwise: a non-contiguous input".into()))?;
    Ok(match storage {
        CpuStorage::F64(v) => v[start..end].to_vec(),
        CpuStorage::F32(v) => v[start..end].iter().map(|&x| x as f64).collect(),
        _ => return Err(candle_core::Error::Msg("pointwise: a float storage expected".into())),
    })
}

/// f64 values stored as `like`'s dtype (float32 rounded once).
pub(super) fn store(like: &CpuStorage, v: Vec<f64>) -> CpuStorage {
    match like {
        CpuStorage::F32(_) => CpuStorage::F32(v.into_iter().map(|x| x as f32).collect()),
        _ => CpuStorage::F64(v),
    }
}

/// Elements one thread takes at least in a pointwise pass: a small tensor
/// stays on the calling thread.
const MIN_PER_THREAD: usize = 1 << 14;

/// `f` of each value of a contiguous float32 or float64 storage, stored
/// in its dtype (float32 rounded once). Each element is computed alone,
/// so the values do not depend on the number of threads sharing them.
fn map1(storage: &CpuStorage, layout: &Layout, f: impl Fn(f64) -> f64 + Sync) -> candle_core::Result<CpuStorage> {
    Ok(match storage {
        CpuStorage::F64(_) => {
            CpuStorage::F64(host_values::<f64>("pointwise", storage, layout)?.par_iter().with_min_len(MIN_PER_THREAD).map(|&x| f(x)).collect())
        }
        CpuStorage::F32(_) => CpuStorage::F32(
            host_values::<f32>("pointwise", storage, layout)?.par_iter().with_min_len(MIN_PER_THREAD).map(|&x| f(f64::from(x)) as f32).collect(),
        ),
        _ => return Err(candle_core::Error::Msg("pointwise: a float storage expected".into())),
    })
}

/// `f` of each pair of values of two contiguous storages of one float
/// dtype, as [`map1`]; `None` for storages of two dtypes.
fn map2(s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout, f: impl Fn(f64, f64) -> f64 + Sync) -> candle_core::Result<Option<CpuStorage>> {
    let both = |a: &[f64], b: &[f64]| a.par_iter().zip(b).with_min_len(MIN_PER_THREAD).map(|(&a, &b)| f(a, b)).collect();
    Ok(Some(match (s1, s2) {
        (CpuStorage::F64(_), CpuStorage::F64(_)) => CpuStorage::F64(both(host_values("pointwise", s1, l1)?, host_values("pointwise", s2, l2)?)),
        (CpuStorage::F32(_), CpuStorage::F32(_)) => {
            let (a, b) = (host_values::<f32>("pointwise", s1, l1)?, host_values::<f32>("pointwise", s2, l2)?);
            CpuStorage::F32(a.par_iter().zip(b).with_min_len(MIN_PER_THREAD).map(|(&a, &b)| f(f64::from(a), f64::from(b)) as f32).collect())
        }
        _ => return Ok(None),
    }))
}

/// `f` pointwise, with `df` its derivative (none: no gradient flows): one
/// pass forward and one backward, where a composite of candle ops would
/// allocate and differentiate every intermediate (gelu uses it too).
pub(super) struct Pointwise {
    pub(super) f: fn(f64) -> f64,
    pub(super) df: Option<fn(f64) -> f64>,
}

impl CustomOp1 for Pointwise {
    fn name(&self) -> &'static str {
        "pointwise"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        Ok((map1(storage, layout, self.f)?, layout.shape().clone()))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let Some(df) = self.df else { return Ok(None) };
        let arg = arg.contiguous()?;
        if grad_res.dtype() == arg.dtype() && grad_res.dims() == arg.dims() {
            return Ok(Some(arg.apply_op2_no_bwd(&grad_res.contiguous()?, &Slope1 { df })?));
        }
        let slope = arg.apply_op1_no_bwd(&Pointwise { f: df, df: None })?;
        Ok(Some((grad_res * slope)?))
    }
}

/// `dy·df(x)` of `(x, dy)` in one pass: the product `dy * slope` of the
/// slope stored in the dtype first, as the two-step backward computes it.
struct Slope1 {
    df: fn(f64) -> f64,
}

impl CustomOp2 for Slope1 {
    fn name(&self) -> &'static str {
        "pointwise-slope"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let df = self.df;
        let out = match (s1, s2) {
            (CpuStorage::F64(_), CpuStorage::F64(_)) => {
                let (x, g) = (host_values::<f64>("pointwise", s1, l1)?, host_values::<f64>("pointwise", s2, l2)?);
                CpuStorage::F64(x.par_iter().zip(g).with_min_len(MIN_PER_THREAD).map(|(&x, &g)| g * df(x)).collect())
            }
            (CpuStorage::F32(_), CpuStorage::F32(_)) => {
                let (x, g) = (host_values::<f32>("pointwise", s1, l1)?, host_values::<f32>("pointwise", s2, l2)?);
                CpuStorage::F32(x.par_iter().zip(g).with_min_len(MIN_PER_THREAD).map(|(&x, &g)| g * df(f64::from(x)) as f32).collect())
            }
            _ => return Err(candle_core::Error::Msg("pointwise: float operands of one dtype expected".into())),
        };
        Ok((out, l1.shape().clone()))
    }
}

/// `f(a, b)` pointwise with its partial derivatives.
pub(super) struct Pointwise2 {
    pub(super) f: fn(f64, f64) -> f64,
    pub(super) da: Option<fn(f64, f64) -> f64>,
    pub(super) db: Option<fn(f64, f64) -> f64>,
}

impl CustomOp2 for Pointwise2 {
    fn name(&self) -> &'static str {
        "pointwise2"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        if let Some(out) = map2(s1, l1, s2, l2, self.f)? {
            return Ok((out, l1.shape().clone()));
        }
        let (a, b) = (values(s1, l1)?, values(s2, l2)?);
        Ok((store(s1, a.into_iter().zip(b).map(|(a, b)| (self.f)(a, b)).collect()), l1.shape().clone()))
    }

    fn bwd(&self, a: &Tensor, b: &Tensor, _res: &Tensor, grad_res: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (a, b) = (a.contiguous()?, b.contiguous()?);
        let fused = a.dtype() == b.dtype() && grad_res.dtype() == a.dtype() && grad_res.dims() == a.dims() && b.dims() == a.dims();
        let g = if fused { grad_res.contiguous()? } else { grad_res.clone() };
        let partial = |d: Option<fn(f64, f64) -> f64>| -> candle_core::Result<Option<Tensor>> {
            match d {
                Some(d) if fused => Ok(Some(a.apply_op3_no_bwd(&b, &g, &Slope2 { d })?)),
                Some(d) => Ok(Some((grad_res * a.apply_op2_no_bwd(&b, &Pointwise2 { f: d, da: None, db: None })?)?)),
                None => Ok(None),
            }
        };
        Ok((partial(self.da)?, partial(self.db)?))
    }
}

/// `dy·d(a, b)` of `(a, b, dy)` in one pass, as [`Slope1`].
struct Slope2 {
    d: fn(f64, f64) -> f64,
}

impl CustomOp3 for Slope2 {
    fn name(&self) -> &'static str {
        "pointwise2-slope"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout, s3: &CpuStorage, l3: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let d = self.d;
        let out = match (s1, s2, s3) {
            (CpuStorage::F64(_), CpuStorage::F64(_), CpuStorage::F64(_)) => {
                let (a, b, g) = (host_values::<f64>("pointwise", s1, l1)?, host_values::<f64>("pointwise", s2, l2)?, host_values::<f64>("pointwise", s3, l3)?);
                CpuStorage::F64(a.par_iter().zip(b).zip(g).with_min_len(MIN_PER_THREAD).map(|((&a, &b), &g)| g * d(a, b)).collect())
            }
            (CpuStorage::F32(_), CpuStorage::F32(_), CpuStorage::F32(_)) => {
                let (a, b, g) = (host_values::<f32>("pointwise", s1, l1)?, host_values::<f32>("pointwise", s2, l2)?, host_values::<f32>("pointwise", s3, l3)?);
                CpuStorage::F32(
                    a.par_iter().zip(b).zip(g).with_min_len(MIN_PER_THREAD).map(|((&a, &b), &g)| g * d(f64::from(a), f64::from(b)) as f32).collect(),
                )
            }
            _ => return Err(candle_core::Error::Msg("pointwise: float operands of one dtype expected".into())),
        };
        Ok((out, l1.shape().clone()))
    }
}

/// A unary function of a float result (integers promote to float32).
fn unary(ctx: &Ctx, b: &Bound, f: fn(f64) -> f64, df: Option<fn(f64) -> f64>) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dtype = float_of(x.dtype);
    let t = operand(ctx, b.value("input"), dtype)?.contiguous()?;
    one(ctx.out(t.apply_op1(Pointwise { f, df })?, dtype)?)
}

/// A rounding function: the input's dtype, integers unchanged (`ints`:
/// mapped too, as sign maps them), a zero gradient.
fn rounding(ctx: &Ctx, b: &Bound, f: fn(f64) -> f64, ints: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    match x.dtype.category() {
        Category::Float => one(ctx.out(x.t.contiguous()?.apply_op1(Pointwise { f, df: Some(|_| 0.0) })?, x.dtype)?),
        Category::Int if ints => one(ctx.out(x.t.contiguous()?.apply_op1_no_bwd(&Pointwise { f, df: None })?, x.dtype)?),
        _ => one(ctx.out(x.t.clone(), x.dtype)?),
    }
}

fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x * 0.0
    }
}

/// A predicate of each element: a bool tensor.
fn predicate(ctx: &Ctx, b: &Bound, f: fn(f64) -> bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let v: Vec<f64> = x.t.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?.into_iter().map(|x| f(x) as u8 as f64).collect();
    one(ctx.out(Tensor::from_vec(v, x.dims(), x.t.device())?, TDType::Bool)?)
}

/// A binary function of a float result, broadcast, with promotion.
pub(super) fn binary(ctx: &Ctx, b: &Bound, op: Pointwise2) -> Result<Vec<Value>> {
    let (a, o) = (b.value("input"), b.value("other"));
    let dtype = float_of(result_type(&[a, o])?);
    let (x, y) = broadcast2(&operand(ctx, a, dtype)?, &operand(ctx, o, dtype)?)?;
    one(ctx.out(x.contiguous()?.apply_op2(&y.contiguous()?, op)?, dtype)?)
}

/// A binary function that keeps integer dtypes (fmod, remainder, floor_divide, copysign's integer case excepted).
fn binary_keeps(ctx: &Ctx, b: &Bound, op: Pointwise2) -> Result<Vec<Value>> {
    binary_keeps_of(ctx, b.value("input"), b.value("other"), op)
}

/// [`binary_keeps`] of `a` and `o` (a reflected operator swaps them).
fn binary_keeps_of(ctx: &Ctx, a: &Value, o: &Value, op: Pointwise2) -> Result<Vec<Value>> {
    let dtype = result_type(&[a, o])?;
    if dtype == TDType::Bool {
        return Err(Error::Unsupported("this op on bool tensors".into()));
    }
    let (x, y) = broadcast2(&operand(ctx, a, dtype)?, &operand(ctx, o, dtype)?)?;
    let (x, y) = (x.contiguous()?, y.contiguous()?);
    let t = if dtype.is_float() { x.apply_op2(&y, op)? } else { x.apply_op2_no_bwd(&y, &op)? };
    one(ctx.out(t, dtype)?)
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let p = std::f64::consts::PI * x;
        p.sin() / p
    }
}

fn dsinc(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        let p = std::f64::consts::PI * x;
        (p.cos() * p - p.sin()) / (p * x)
    }
}

/// `Tensor.__bool__`: the truth of a one-element tensor, a Python bool
/// (torch refuses more elements as ambiguous, and no elements).
fn truth(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    match x.to_f64_vec()?.as_slice() {
        [v] => Ok(vec![Value::Bool(*v != 0.0)]),
        [] => Err(Error::Arg("Boolean value of Tensor with no values is ambiguous".into())),
        _ => Err(Error::Arg("Boolean value of Tensor with more than one value is ambiguous".into())),
    }
}

/// Python's modulo: the sign of the divisor.
fn remainder(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

/// A bitwise op of integer or bool tensors (and Python ints), computed on
/// their int64 values: no gradient.
fn bitwise(ctx: &Ctx, b: &Bound, f: fn(i64, i64) -> i64) -> Result<Vec<Value>> {
    let (a, o) = (b.value("input"), b.value("other"));
    let dtype = result_type(&[a, o])?;
    if dtype.is_float() {
        return Err(Error::Arg(format!("bitwise ops are not implemented for {}", dtype.name())));
    }
    let (x, y) = broadcast2(&operand(ctx, a, dtype)?, &operand(ctx, o, dtype)?)?;
    let (xs, ys) = (x.flatten_all()?.to_vec1::<f64>()?, y.flatten_all()?.to_vec1::<f64>()?);
    let v: Vec<f64> = xs.iter().zip(&ys).map(|(&p, &q)| f(p as i64, q as i64) as f64).collect();
    one(ctx.out(Tensor::from_vec(v, x.dims(), x.device())?, dtype)?)
}

fn bitwise_not(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let v: Vec<f64> = match x.dtype {
        TDType::Bool => x.t.flatten_all()?.to_vec1::<f64>()?.into_iter().map(|p| (p == 0.0) as u8 as f64).collect(),
        d if d.is_float() => return Err(Error::Arg(format!("bitwise_not is not implemented for {}", d.name()))),
        _ => x.t.flatten_all()?.to_vec1::<f64>()?.into_iter().map(|p| !(p as i64) as f64).collect(),
    };
    one(ctx.out(Tensor::from_vec(v, x.dims(), x.t.device())?, x.dtype)?)
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i64
}

/// Round half to even at `decimals` places, as torch.round.
fn round(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let decimals = b.int("decimals")?;
    if !x.dtype.is_float() {
        return one(ctx.out(x.t.clone(), x.dtype)?);
    }
    let t = x.t.contiguous()?;
    let t = if decimals == 0 {
        t.apply_op1(Pointwise { f: f64::round_ties_even, df: Some(|_| 0.0) })?
    } else {
        let scale = 10f64.powi(decimals as i32);
        ((t * scale)?.apply_op1(Pointwise { f: f64::round_ties_even, df: Some(|_| 0.0) })? / scale)?
    };
    one(ctx.out(t, x.dtype)?)
}

/// clamp_min / clamp_max: `input` where it lies on the bound's side (the
/// bound included), else the bound; the gradient reaches `input` there.
fn clamp_side(ctx: &Ctx, b: &Bound, name: &str, min: bool) -> Result<Vec<Value>> {
    let (a, m) = (b.value("input"), b.value(name));
    let dtype = result_type(&[a, m])?;
    let (x, y) = broadcast2(&operand(ctx, a, dtype)?, &operand(ctx, m, dtype)?)?;
    let keep = if min { x.ge(&y)? } else { x.le(&y)? };
    // NaN input stays NaN.
    let keep = (keep.to_dtype(DType::F64)? + x.ne(&x)?.to_dtype(DType::F64)?)?.gt(0.0)?;
    one(ctx.out(keep.where_cond(&x, &y)?, dtype)?)
}

/// fmax / fmin: the larger (smaller) one, NaN only where both are NaN; the
/// picked side takes the gradient (ties: the first).
fn fextreme(ctx: &Ctx, b: &Bound, max: bool) -> Result<Vec<Value>> {
    let (a, o) = (b.value("input"), b.value("other"));
    let dtype = result_type(&[a, o])?;
    let (x, y) = broadcast2(&operand(ctx, a, dtype)?, &operand(ctx, o, dtype)?)?;
    let better = if max { x.ge(&y)? } else { x.le(&y)? };
    let y_nan = y.ne(&y)?.to_dtype(DType::F64)?;
    let x_ok = x.eq(&x)?.to_dtype(DType::F64)?;
    let pick_x = ((better.to_dtype(DType::F64)? + (y_nan * x_ok)?)?.gt(0.0)?.to_dtype(DType::F64)?
        + x.ne(&x)?.to_dtype(DType::F64)?.mul(&y.ne(&y)?.to_dtype(DType::F64)?)?)?
    .gt(0.0)?;
    one(ctx.out(pick_x.where_cond(&x, &y)?, dtype)?)
}

/// float_power: both operands in float64, a float64 result.
fn float_power(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, e) = (b.value("input"), b.value("exponent"));
    let (x, y) = broadcast2(&operand(ctx, a, TDType::F64)?, &operand(ctx, e, TDType::F64)?)?;
    let op = p2(f64::powf, |x, y| if y == 0.0 { 0.0 } else { y * x.powf(y - 1.0) }, |x, y| if x == 0.0 && y >= 0.0 { 0.0 } else { x.powf(y) * x.ln() });
    one(ctx.out(x.contiguous()?.apply_op2(&y.contiguous()?, op)?, TDType::F64)?)
}

/// logit(input, eps=None): ln(p / (1 - p)), p clamped to [eps, 1 - eps].
fn logit(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dtype = float_of(x.dtype);
    let t = operand(ctx, b.value("input"), dtype)?.contiguous()?;
    let t = match b.opt_float("eps")? {
        None => t.apply_op1(Pointwise { f: |p| (p / (1.0 - p)).ln(), df: Some(|p| 1.0 / (p * (1.0 - p))) })?,
        Some(eps) => {
            let inside = (t.ge(eps)?.to_dtype(DType::F64)? * t.le(1.0 - eps)?.to_dtype(DType::F64)?)?.gt(0.0)?;
            let clamped = inside.where_cond(&t, &t.clamp(eps, 1.0 - eps)?.detach())?;
            clamped.contiguous()?.apply_op1(Pointwise { f: |p| (p / (1.0 - p)).ln(), df: Some(|p| 1.0 / (p * (1.0 - p))) })?
        }
    };
    one(ctx.out(t, dtype)?)
}

/// nan_to_num(input, nan=0.0, posinf=None, neginf=None): the dtype's largest
/// and smallest finite values by default; a gradient of 1 where finite.
fn nan_to_num(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if !x.dtype.is_float() {
        return one(ctx.out(x.t.clone(), x.dtype)?);
    }
    let max = match x.dtype {
        TDType::F16 => 65504.0,
        TDType::BF16 => 3.3895313892515355e38,
        TDType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    };
    let nan = b.float("nan")?;
    let pos = b.opt_float("posinf")?.unwrap_or(max);
    let neg = b.opt_float("neginf")?.unwrap_or(-max);
    let t = &x.t;
    let full = |v: f64| -> Result<Tensor> { Ok((t.ones_like()? * v)?) };
    let y = t.ne(t)?.where_cond(&full(nan)?, t)?;
    let y = t.eq(f64::INFINITY)?.where_cond(&full(pos)?, &y)?;
    let y = t.eq(f64::NEG_INFINITY)?.where_cond(&full(neg)?, &y)?;
    one(ctx.out(y, x.dtype)?)
}

/// isclose's test of each broadcast pair: |a − b| ≤ atol + rtol·|b|,
/// infinities equal only to themselves; with the broadcast shape.
fn close_pairs(ctx: &Ctx, b: &Bound) -> Result<(Vec<bool>, Vec<usize>)> {
    let (rtol, atol, equal_nan) = (b.float("rtol")?, b.float("atol")?, b.bool("equal_nan")?);
    let (a, o) = (b.value("input"), b.value("other"));
    let dtype = result_type(&[a, o])?;
    let (x, y) = broadcast2(&operand(ctx, a, dtype)?, &operand(ctx, o, dtype)?)?;
    let (xs, ys) = (x.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?, y.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?);
    let close = xs
        .iter()
        .zip(&ys)
        .map(|(&p, &q)| p == q || (equal_nan && p.is_nan() && q.is_nan()) || (p.is_finite() && q.is_finite() && (p - q).abs() <= atol + rtol * q.abs()));
    Ok((close.collect(), x.dims().to_vec()))
}

/// isclose: a bool tensor of [`close_pairs`].
fn isclose(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (close, shape) = close_pairs(ctx, b)?;
    let v: Vec<f64> = close.into_iter().map(|c| c as u8 as f64).collect();
    one(ctx.out(Tensor::from_vec(v, shape, &ctx.device)?, TDType::Bool)?)
}

/// allclose: whether every pair is close (a Python bool).
fn allclose(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    Ok(vec![Value::Bool(close_pairs(ctx, b)?.0.into_iter().all(|c| c))])
}

/// equal: the same shape and every element equal (NaN equals nothing).
fn equal(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("input")?, b.tensor("other")?);
    Ok(vec![Value::Bool(x.dims() == y.dims() && x.to_f64_vec()? == y.to_f64_vec()?)])
}

/// frexp: the mantissa in [0.5, 1) by magnitude (the input's dtype, its
/// gradient `2^-exponent`) and the int32 exponent; 0, ±inf and NaN keep
/// themselves with exponent 0.
fn frexp(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if !x.dtype.is_float() {
        return Err(Error::Arg(format!("frexp only supports floating-point dtypes, got {}", x.dtype.name())));
    }
    let exponents: Vec<i32> = x.to_f64_vec()?.into_iter().map(|v| if v.is_finite() { libm::frexp(v).1 } else { 0 }).collect();
    // 2^-e in two halves: a subnormal's 2^1074 is past float64's range.
    let half = |part: fn(i32) -> i32| -> Result<Tensor> {
        let v: Vec<f64> = exponents.iter().map(|&e| 2f64.powi(-part(e))).collect();
        Ok(Tensor::from_vec(v, x.dims(), x.t.device())?.to_dtype(x.t.dtype())?)
    };
    let mantissa = ctx.out(((&x.t * half(|e| e / 2)?)? * half(|e| e - e / 2)?)?, x.dtype)?;
    let e: Vec<f64> = exponents.into_iter().map(f64::from).collect();
    Ok(vec![Value::Tensor(mantissa), Value::Tensor(T::from_f64(e, x.dims(), TDType::I32, ctx.compute, &ctx.device)?)])
}

/// A differentiable elementwise entry of rounding class `rounding`.
pub(super) const fn smooth(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: false, facts: &[Fact::Rounding(Rounding::Smooth)] }
}

/// An entry whose results are exact (predicates): equality, no gradient.
const fn exact(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: false, standard: Standard::Exact, random: false, facts: &[] }
}

/// A rounding entry: exact values, a zero gradient.
pub(super) const fn stepwise(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Exact, random: false, facts: &[] }
}

const fn p2(f: fn(f64, f64) -> f64, da: fn(f64, f64) -> f64, db: fn(f64, f64) -> f64) -> Pointwise2 {
    Pointwise2 { f, da: Some(da), db: Some(db) }
}

/// The elementwise math entries.
pub static OPS: &[Op] = &[
    smooth(&["Torch.tan"], "input", |c, b| unary(c, b, f64::tan, Some(|x| 1.0 / (x.cos() * x.cos())))),
    smooth(&["Torch.asin"], "input", |c, b| unary(c, b, f64::asin, Some(|x| 1.0 / (1.0 - x * x).sqrt()))),
    smooth(&["Torch.acos"], "input", |c, b| unary(c, b, f64::acos, Some(|x| -1.0 / (1.0 - x * x).sqrt()))),
    smooth(&["Torch.atan"], "input", |c, b| unary(c, b, f64::atan, Some(|x| 1.0 / (1.0 + x * x)))),
    smooth(&["Torch.sinh"], "input", |c, b| unary(c, b, f64::sinh, Some(f64::cosh))),
    smooth(&["Torch.cosh"], "input", |c, b| unary(c, b, f64::cosh, Some(f64::sinh))),
    smooth(&["Torch.asinh"], "input", |c, b| unary(c, b, f64::asinh, Some(|x| 1.0 / (x * x + 1.0).sqrt()))),
    smooth(&["Torch.acosh"], "input", |c, b| unary(c, b, f64::acosh, Some(|x| 1.0 / ((x - 1.0).sqrt() * (x + 1.0).sqrt())))),
    smooth(&["Torch.atanh"], "input", |c, b| unary(c, b, f64::atanh, Some(|x| 1.0 / (1.0 - x * x)))),
    smooth(&["Torch.log10"], "input", |c, b| unary(c, b, f64::log10, Some(|x| 1.0 / (x * std::f64::consts::LN_10)))),
    smooth(&["Torch.log2"], "input", |c, b| unary(c, b, f64::log2, Some(|x| 1.0 / (x * std::f64::consts::LN_2)))),
    smooth(&["Torch.log1p"], "input", |c, b| unary(c, b, f64::ln_1p, Some(|x| 1.0 / (1.0 + x)))),
    smooth(&["Torch.expm1"], "input", |c, b| unary(c, b, f64::exp_m1, Some(f64::exp))),
    smooth(&["Torch.exp2"], "input", |c, b| unary(c, b, f64::exp2, Some(|x| x.exp2() * std::f64::consts::LN_2))),
    smooth(&["Torch.sinc"], "input", |c, b| unary(c, b, sinc, Some(dsinc))),
    smooth(&["Torch.deg2rad"], "input", |c, b| unary(c, b, f64::to_radians, Some(|_| std::f64::consts::PI / 180.0))),
    smooth(&["Torch.rad2deg"], "input", |c, b| unary(c, b, f64::to_degrees, Some(|_| 180.0 / std::f64::consts::PI))),
    stepwise(&["Torch.ceil"], "input", |c, b| rounding(c, b, f64::ceil, false)),
    stepwise(&["Torch.floor"], "input", |c, b| rounding(c, b, f64::floor, false)),
    stepwise(&["Torch.trunc"], "input", |c, b| rounding(c, b, f64::trunc, false)),
    stepwise(&["Torch.sign", "Torch.sgn"], "input", |c, b| rounding(c, b, sign, true)),
    exact(&["Torch.isfinite"], "input", |c, b| predicate(c, b, f64::is_finite)),
    exact(&["Torch.isinf"], "input", |c, b| predicate(c, b, f64::is_infinite)),
    exact(&["Torch.isnan"], "input", |c, b| predicate(c, b, f64::is_nan)),
    exact(&["Torch.isposinf"], "input", |c, b| predicate(c, b, |x| x == f64::INFINITY)),
    exact(&["Torch.isneginf"], "input", |c, b| predicate(c, b, |x| x == f64::NEG_INFINITY)),
    exact(&["Torch.signbit", "MS.Functional.signbit", "MS.Tensor.signbit"], "input", |c, b| predicate(c, b, f64::is_sign_negative)),
    smooth(&["Torch.frac"], "input", |c, b| {
        let x = b.tensor("input")?;
        if !x.dtype.is_float() {
            return Err(Error::Unsupported("frac of an integer tensor".into()));
        }
        one(c.out(x.t.contiguous()?.apply_op1(Pointwise { f: f64::fract, df: Some(|_| 1.0) })?, x.dtype)?)
    }),
    smooth(&["Torch.atan2"], "input, other", |c, b| binary(c, b, p2(f64::atan2, |y, x| x / (x * x + y * y), |y, x| -y / (x * x + y * y)))),
    smooth(&["Torch.hypot"], "input, other", |c, b| binary(c, b, p2(f64::hypot, |a, o| a / a.hypot(o), |a, o| o / a.hypot(o)))),
    smooth(&["Torch.logaddexp"], "input, other", |c, b| {
        binary(
            c,
            b,
            p2(
                |a, o| {
                    let m = a.max(o);
                    if m.is_infinite() && a == o {
                        a
                    } else {
                        m + ((a - m).exp() + (o - m).exp()).ln()
                    }
                },
                |a, o| 1.0 / (1.0 + (o - a).exp()),
                |a, o| 1.0 / (1.0 + (a - o).exp()),
            ),
        )
    }),
    smooth(&["Torch.logaddexp2"], "input, other", |c, b| {
        binary(
            c,
            b,
            p2(
                |a, o| {
                    let m = a.max(o);
                    if m.is_infinite() && a == o {
                        a
                    } else {
                        m + ((a - m).exp2() + (o - m).exp2()).log2()
                    }
                },
                |a, o| 1.0 / (1.0 + (o - a).exp2()),
                |a, o| 1.0 / (1.0 + (a - o).exp2()),
            ),
        )
    }),
    smooth(&["Torch.xlogy", "MS.Functional.xlogy", "MS.Tensor.xlogy"], "input, other", |c, b| {
        binary(
            c,
            b,
            p2(
                |x, y| {
                    if y.is_nan() {
                        f64::NAN
                    } else if x == 0.0 {
                        0.0
                    } else {
                        x * y.ln()
                    }
                },
                |x, y| if x == 0.0 && !y.is_nan() { 0.0 } else { y.ln() },
                |x, y| x / y,
            ),
        )
    }),
    smooth(&["Torch.fmod", "MS.Functional.truncate_mod"], "input, other", |c, b| binary_keeps(c, b, p2(|a, o| a % o, |_, _| 1.0, |a, o| -(a / o).trunc()))),
    smooth(&["Torch.remainder", "MS.Functional.floor_mod"], "input, other", |c, b| binary_keeps(c, b, p2(remainder, |_, _| 1.0, |a, o| -(a / o).floor()))),
    smooth(&["Torch.copysign"], "input, other", |c, b| binary(c, b, p2(f64::copysign, |a, o| if a == 0.0 { 0.0 } else { a.copysign(o) / a }, |_, _| 0.0))),
    Op {
        names: &["Torch.bitwise_and"],
        sig: "input, other",
        forward: |c, b| bitwise(c, b, |p, q| p & q),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.bitwise_or"],
        sig: "input, other",
        forward: |c, b| bitwise(c, b, |p, q| p | q),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.bitwise_xor"],
        sig: "input, other",
        forward: |c, b| bitwise(c, b, |p, q| p ^ q),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.bitwise_left_shift"],
        sig: "input, other",
        forward: |c, b| bitwise(c, b, |p, q| p.wrapping_shl(q as u32)),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.bitwise_right_shift"],
        sig: "input, other",
        forward: |c, b| bitwise(c, b, |p, q| p.wrapping_shr(q as u32)),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.gcd"],
        sig: "input, other",
        forward: |c, b| bitwise(c, b, gcd),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.lcm"],
        sig: "input, other",
        forward: |c, b| bitwise(c, b, |p, q| if p == 0 || q == 0 { 0 } else { (p / gcd(p, q) * q).abs() }),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    exact(&["Torch.bitwise_not", "MS.Functional.invert"], "input", bitwise_not),
    // torch defines no derivative for floor_divide.
    Op {
        names: &["Torch.floor_divide", "MS.Functional.floor_div"],
        sig: "input, other",
        forward: |c, b| binary_keeps(c, b, p2(|a, o| (a / o).floor(), |_, _| 0.0, |_, _| 0.0)),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    stepwise(&["Torch.round", "MS.Functional.round", "MS.Tensor.round"], "input, *, decimals=0", round),
    smooth(&["Torch.clamp_min"], "input, min", |c, b| clamp_side(c, b, "min", true)),
    smooth(&["Torch.clamp_max"], "input, max", |c, b| clamp_side(c, b, "max", false)),
    smooth(&["Torch.fmax"], "input, other", |c, b| fextreme(c, b, true)),
    smooth(&["Torch.fmin"], "input, other", |c, b| fextreme(c, b, false)),
    smooth(&["Torch.float_power"], "input, exponent", float_power),
    exact(&["Torch.heaviside"], "input, values", |c, b| {
        let (a, v) = (b.value("input"), b.value("values"));
        let dtype = result_type(&[a, v])?;
        let (x, y) = broadcast2(&operand(c, a, dtype)?, &operand(c, v, dtype)?)?;
        let step = x.gt(0.0)?.to_dtype(x.dtype())?;
        one(c.out(x.eq(0.0)?.where_cond(&y, &step)?, dtype)?)
    }),
    smooth(&["Torch.ldexp"], "input, other", |c, b| {
        let (a, e) = (b.value("input"), b.value("other"));
        let dtype = float_of(result_type(&[a, e])?);
        let (x, y) = broadcast2(&operand(c, a, dtype)?, &operand(c, e, dtype)?)?;
        one(c.out((x * y.detach().contiguous()?.apply_op1_no_bwd(&Pointwise { f: f64::exp2, df: None })?)?, dtype)?)
    }),
    smooth(&["Torch.logit"], "input, eps=None", logit),
    smooth(&["Torch.nan_to_num", "MS.Functional.nan_to_num", "MS.Tensor.nan_to_num"], "input, nan=0.0, posinf=None, neginf=None", nan_to_num),
    smooth(&["Torch.erfc"], "input", |c, b| {
        let x = b.tensor("input")?;
        let dtype = float_of(x.dtype);
        let t = operand(c, b.value("input"), dtype)?;
        one(c.out(t.erf()?.affine(-1.0, 1.0)?, dtype)?)
    }),
    exact(&["Torch.isclose"], "input, other, rtol=1e-05, atol=1e-08, equal_nan=False", isclose),
    exact(&["Tensor.allclose"], "input, other, rtol=1e-05, atol=1e-08, equal_nan=False", allclose),
    exact(&["Torch.equal"], "input, other", equal),
    Op { names: &["Torch.frexp"], sig: "input, *, out=None", forward: frexp, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    exact(&["Tensor.__bool__", "Torch.is_nonzero"], "input", truth),
    // `other % self`: remainder with the operands swapped (torch defines no
    // derivative for a scalar's remainder by a tensor).
    Op {
        names: &["Tensor.__rmod__"],
        sig: "input, other",
        forward: |c, b| binary_keeps_of(c, b.value("other"), b.value("input"), p2(remainder, |_, _| 1.0, |a, o| -(a / o).floor())),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
];

#[cfg(test)]
mod tests {
    use candle_core::{Tensor, Var};

    use super::*;

    /// The one-thread passes the parallel ones replaced: the map, then the
    /// backward as the slope stored in the dtype times the output gradient.
    struct Sequential(fn(f64) -> f64, fn(f64) -> f64);

    impl CustomOp1 for Sequential {
        fn name(&self) -> &'static str {
            "sequential"
        }

        fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
            Ok((store(storage, values(storage, layout)?.into_iter().map(self.0).collect()), layout.shape().clone()))
        }

        fn bwd(&self, arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> candle_core::Result<Option<Tensor>> {
            let slope = arg.contiguous()?.apply_op1_no_bwd(&Sequential(self.1, self.1))?;
            Ok(Some((grad_res * slope)?))
        }
    }

    /// [`Sequential`] of two arguments.
    struct Sequential2(fn(f64, f64) -> f64, fn(f64, f64) -> f64, fn(f64, f64) -> f64);

    impl CustomOp2 for Sequential2 {
        fn name(&self) -> &'static str {
            "sequential2"
        }

        fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
            let (a, b) = (values(s1, l1)?, values(s2, l2)?);
            Ok((store(s1, a.into_iter().zip(b).map(|(a, b)| (self.0)(a, b)).collect()), l1.shape().clone()))
        }

        fn bwd(&self, a: &Tensor, b: &Tensor, _res: &Tensor, grad_res: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
            let (a, b) = (a.contiguous()?, b.contiguous()?);
            let partial = |d| a.apply_op2_no_bwd(&b, &Sequential2(d, d, d)).and_then(|p| grad_res * p);
            Ok((Some(partial(self.1)?), Some(partial(self.2)?)))
        }
    }

    fn bits(t: &Tensor) -> Vec<u64> {
        t.flatten_all().unwrap().to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap().into_iter().map(f64::to_bits).collect()
    }

    /// Values on both sides of 0, signed zeros, NaN and infinities, `n` of them.
    fn values_of(n: usize) -> Vec<f64> {
        let special = [0.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-310, -3.5];
        (0..n).map(|i| if i % 97 < special.len() { special[i % 97] } else { ((i as f64) * 0.37).sin() * 4.0 }).collect()
    }

    /// The parallel passes give the values and gradients of the one-thread
    /// ones ([`Sequential`]) bit for bit, in float64 and float32, for
    /// tensors under and over one thread's share.
    #[test]
    fn parallel_passes_are_the_sequential_ones() {
        let dev = crate::device::host();
        let f: fn(f64) -> f64 = |x| (x * 0.7).tanh() * x;
        let df: fn(f64) -> f64 = |x| {
            let t = (x * 0.7).tanh();
            t + x * 0.7 * (1.0 - t * t)
        };
        let f2: fn(f64, f64) -> f64 = |a, b| a.atan2(b);
        let da: fn(f64, f64) -> f64 = |a, b| b / (a * a + b * b);
        let db: fn(f64, f64) -> f64 = |a, b| -a / (a * a + b * b);
        for n in [5, 3 * MIN_PER_THREAD + 7] {
            for dtype in [DType::F64, DType::F32] {
                let of = |skip: usize| Tensor::from_vec(values_of(n + skip)[skip..].to_vec(), n, &dev).unwrap().to_dtype(dtype).unwrap();
                let (x, y, g) = (of(0), of(3), of(11));
                let (va, vb) = (Var::from_tensor(&x).unwrap(), Var::from_tensor(&x).unwrap());
                let (ya, yb) = (va.as_tensor().apply_op1(Pointwise { f, df: Some(df) }).unwrap(), vb.as_tensor().apply_op1(Sequential(f, df)).unwrap());
                assert_eq!(bits(&ya), bits(&yb), "{dtype:?} {n}: forward");
                let ga = (&ya * &g).unwrap().sum_all().unwrap().backward().unwrap();
                let gb = (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap();
                assert_eq!(bits(ga.get(va.as_tensor()).unwrap()), bits(gb.get(vb.as_tensor()).unwrap()), "{dtype:?} {n}: backward");

                let vars: Vec<Var> = [&x, &y, &x, &y].iter().map(|t| Var::from_tensor(t).unwrap()).collect();
                let ya = vars[0].as_tensor().apply_op2(vars[1].as_tensor(), Pointwise2 { f: f2, da: Some(da), db: Some(db) }).unwrap();
                let yb = vars[2].as_tensor().apply_op2(vars[3].as_tensor(), Sequential2(f2, da, db)).unwrap();
                assert_eq!(bits(&ya), bits(&yb), "{dtype:?} {n}: forward of two");
                let ga = (&ya * &g).unwrap().sum_all().unwrap().backward().unwrap();
                let gb = (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap();
                for i in 0..2 {
                    let (a, b) = (ga.get(vars[i].as_tensor()).unwrap(), gb.get(vars[i + 2].as_tensor()).unwrap());
                    assert_eq!(bits(a), bits(b), "{dtype:?} {n}: backward of two, argument {i}");
                }
            }
        }
    }
}
