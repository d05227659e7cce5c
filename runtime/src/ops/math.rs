//! Elementwise math beyond arithmetic (trigonometric, hyperbolic,
//! logarithms, rounding, predicates, two-argument functions), each as the
//! float64 function of Rust's `std` applied pointwise, with its derivative
//! for the backward ([`Pointwise`], [`Pointwise2`]); the device rounds the
//! result once to its dtype ([`Ctx::out`]), as an accurate kernel does.
//! One name each (`Torch.X`): the method forms, in-place forms and aliases
//! are derived ([`super::derive`]).

use candle_core::{CpuStorage, CustomOp1, CustomOp2, DType, Layout, Shape, Tensor};

use super::{float_of, one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::{broadcast2, operand, result_type, Ctx};
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
        let v = values(storage, layout)?;
        Ok((store(storage, v.into_iter().map(self.f).collect()), layout.shape().clone()))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let Some(df) = self.df else { return Ok(None) };
        let slope = arg.contiguous()?.apply_op1_no_bwd(&Pointwise { f: df, df: None })?;
        Ok(Some((grad_res * slope)?))
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
        let (a, b) = (values(s1, l1)?, values(s2, l2)?);
        Ok((store(s1, a.into_iter().zip(b).map(|(a, b)| (self.f)(a, b)).collect()), l1.shape().clone()))
    }

    fn bwd(&self, a: &Tensor, b: &Tensor, _res: &Tensor, grad_res: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (a, b) = (a.contiguous()?, b.contiguous()?);
        let partial = |d: Option<fn(f64, f64) -> f64>| -> candle_core::Result<Option<Tensor>> {
            match d {
                Some(d) => Ok(Some((grad_res * a.apply_op2_no_bwd(&b, &Pointwise2 { f: d, da: None, db: None })?)?)),
                None => Ok(None),
            }
        };
        Ok((partial(self.da)?, partial(self.db)?))
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
