//! Factories and casts.

use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::{operand, result_type, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

fn arange(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, e) = (b.value("start"), b.value("end"));
    let (start, end) = match e {
        Value::None => (0.0, b.float("start")?),
        _ => (b.float("start")?, b.float("end")?),
    };
    let step = b.float("step")?;
    if step == 0.0 {
        return Err(Error::Arg("arange: step must be nonzero".into()));
    }
    let n = ((end - start) / step).ceil().max(0.0);
    if !(n <= usize::MAX as f64) {
        return Err(Error::Arg(format!("arange: {n} elements")));
    }
    let n = n as usize;
    ctx.fits(&[n])?;
    let all_int = [a, e, b.value("step")].iter().all(|v| matches!(v, Value::Int(_) | Value::None));
    let dtype = b.opt_dtype("dtype")?.unwrap_or(if all_int { TDType::I64 } else { TDType::F32 });
    let values: Vec<f64> = (0..n).map(|i| start + i as f64 * step).collect();
    one(T::from_f64(values, &[n], dtype, ctx.compute, &ctx.device)?)
}

fn filled_like(ctx: &Ctx, b: &Bound, v: f64) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dtype = b.opt_dtype("dtype")?.unwrap_or(x.dtype);
    one(ctx.out(ctx.full(x.dims(), v, dtype)?, dtype)?)
}

/// full_like(input, fill_value, *, dtype=None): the value cast to the
/// result's dtype as torch casts it (2.7 into an int tensor is 2).
fn full_like(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    fill(ctx, b.value("fill_value"), x.dims(), b.opt_dtype("dtype")?.unwrap_or(x.dtype))
}

/// A tensor of `shape` and `dtype` holding `v` cast as torch casts it.
fn fill(ctx: &Ctx, v: &Value, shape: &[usize], dtype: TDType) -> Result<Vec<Value>> {
    let own = result_type(&[v])?;
    let value = ctx.cast(&T { t: operand(ctx, v, own)?, dtype: own }, dtype)?;
    ctx.fits(shape)?;
    one(ctx.out(value.t.broadcast_as(shape)?.contiguous()?, dtype)?)
}

/// fill(input, value): the value in the input's shape and dtype; a float
/// input's gradient is zero (a pointwise 0 with a zero slope: NaN-safe).
fn fill_input(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let filled = fill(ctx, b.value("value"), x.dims(), x.dtype)?;
    if !x.dtype.is_float() {
        return Ok(filled);
    }
    let Some(Value::Tensor(v)) = filled.into_iter().next() else { return Err(Error::Arg("fill: no result".into())) };
    let zero = x.t.contiguous()?.apply_op1(super::math::Pointwise { f: |_| 0.0, df: Some(|_| 0.0) })?;
    one(ctx.out((zero + v.t)?, x.dtype)?)
}

/// full(size, fill_value, *, dtype=None): the dtype by default the value's
/// (bool, int64, or the default float32), the value cast as torch casts it.
fn full(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let shape: Vec<usize> = b.ints("size")?.iter().map(|&d| d.max(0) as usize).collect();
    let v = b.value("fill_value");
    let natural = match v {
        Value::Bool(_) => TDType::Bool,
        Value::Int(_) => TDType::I64,
        Value::Float(_) => TDType::F32,
        Value::Tensor(t) if t.rank() == 0 => t.dtype,
        _ => return Err(Error::Arg("full: fill_value must be a number".into())),
    };
    fill(ctx, v, &shape, b.opt_dtype("dtype")?.unwrap_or(natural))
}

/// eye(n, m=None): ones on the diagonal of an `n × m` matrix (float32 by default).
fn eye(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let n = b.int("n")?;
    let m = if b.is_none("m") { n } else { b.int("m")? };
    if n < 0 || m < 0 {
        return Err(Error::Arg(format!("eye: n and m must be non-negative, got {n} and {m}")));
    }
    let (n, m) = (n as usize, m as usize);
    ctx.fits(&[n, m])?;
    let dtype = b.opt_dtype("dtype")?.unwrap_or(TDType::F32);
    let values: Vec<f64> = (0..n * m).map(|k| if k / m.max(1) == k % m.max(1) { 1.0 } else { 0.0 }).collect();
    one(T::from_f64(values, &[n, m], dtype, ctx.compute, &ctx.device)?)
}

/// linspace's points as torch computes them: `start + i·step` for the first
/// half and `end - (steps - 1 - i)·step` for the second, so both ends are exact.
fn linspace_points(b: &Bound, what: &str) -> Result<Vec<f64>> {
    let (start, end, steps) = (b.float("start")?, b.float("end")?, b.int("steps")?);
    if steps < 0 {
        return Err(Error::Arg(format!("{what}: number of steps must be non-negative, got {steps}")));
    }
    Ok(linspace_values(start, end, steps as usize))
}

/// `steps` points from `start` to `end` as torch's linspace kernel computes
/// them (each half from its own end); one step is `start`.
pub(super) fn linspace_values(start: f64, end: f64, steps: usize) -> Vec<f64> {
    if steps == 1 {
        return vec![start];
    }
    let step = (end - start) / (steps as f64 - 1.0);
    let half = steps / 2;
    (0..steps).map(|i| if i < half { start + i as f64 * step } else { end - (steps - 1 - i) as f64 * step }).collect()
}

/// A 1-D result computed in float64, rounded to `dtype` as an output is
/// (the bench keeps float64).
pub(super) fn points(ctx: &Ctx, v: Vec<f64>, dtype: TDType) -> Result<Vec<Value>> {
    ctx.fits(&[v.len()])?;
    let n = v.len();
    one(ctx.out(candle_core::Tensor::from_vec(v, n, &ctx.device)?.to_dtype(ctx.compute)?, dtype)?)
}

/// linspace(start, end, steps) in float32 by default.
fn linspace(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = b.opt_dtype("dtype")?.unwrap_or(TDType::F32);
    if !dtype.is_float() {
        return Err(Error::Unsupported(format!("linspace into {} (integer points are truncated after float arithmetic)", dtype.name())));
    }
    points(ctx, linspace_points(b, "linspace")?, dtype)
}

/// logspace(start, end, steps, base=10.0): `base` to linspace's points.
fn logspace(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = b.opt_dtype("dtype")?.unwrap_or(TDType::F32);
    if !dtype.is_float() {
        return Err(Error::Unsupported(format!("logspace into {}", dtype.name())));
    }
    let base = b.float("base")?;
    points(ctx, linspace_points(b, "logspace")?.into_iter().map(|p| base.powf(p)).collect(), dtype)
}

fn filled(ctx: &Ctx, b: &Bound, v: f64) -> Result<Vec<Value>> {
    filled_as(ctx, b, v, TDType::F32)
}

/// A tensor of the argument `size` filled with `v`, of the argument
/// `dtype` or else `default`.
fn filled_as(ctx: &Ctx, b: &Bound, v: f64, default: TDType) -> Result<Vec<Value>> {
    let shape: Vec<usize> = b.ints("size")?.iter().map(|&d| d.max(0) as usize).collect();
    let dtype = b.opt_dtype("dtype")?.unwrap_or(default);
    one(ctx.out(ctx.full(&shape, v, dtype)?, dtype)?)
}

/// torch.empty and kin (`empty_strided`): their values are whatever memory
/// held, so the replay makes zeros of the shape and dtype, and only the
/// shape is judged ([`Standard::Undefined`]). Strides do not change the
/// shape.
fn empty(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    filled(ctx, b, 0.0)
}

/// `torch.empty_like`: [`empty`] of the input's shape and dtype.
fn empty_like(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    filled_like(ctx, b, 0.0)
}

/// `Tensor.new_empty(_strided)`: [`empty`] of the input's dtype by default.
fn new_empty(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    filled_as(ctx, b, 0.0, b.tensor("input")?.dtype)
}

/// `Tensor.new_ones`, `new_zeros`: [`filled_as`] of the input's dtype by default.
fn new_filled(ctx: &Ctx, b: &Bound, v: f64) -> Result<Vec<Value>> {
    filled_as(ctx, b, v, b.tensor("input")?.dtype)
}

/// `Tensor.to(...)`: only the dtype part matters for replay (device and
/// memory-format arguments are accepted and ignored).
fn to(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let mut dtype = b.opt_dtype("dtype")?;
    if let Value::List(rest) = b.value("args") {
        for v in rest {
            match v {
                Value::DType(d) => dtype = Some(*d),
                Value::Tensor(other) => dtype = Some(other.dtype),
                _ => {}
            }
        }
    }
    match dtype {
        Some(d) => one(ctx.cast(x, d)?),
        None => one(x.clone()),
    }
}

fn cast_to(ctx: &Ctx, b: &Bound, d: TDType) -> Result<Vec<Value>> {
    one(ctx.cast(b.tensor("input")?, d)?)
}

fn type_as(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let other = b.tensor("other")?;
    one(ctx.cast(b.tensor("input")?, other.dtype)?)
}

/// A tensor of one value, made from no float input: exact, no backward.
const fn constant(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: false, standard: Standard::Exact, random: false, facts: &[] }
}

/// The entry of an uninitialized-memory factory (torch.empty and kin):
/// values undefined, no gradient.
const fn uninitialized(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: false, standard: Standard::Undefined, random: false, facts: &[] }
}

/// The factory and cast entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.arange", "Mint.arange", "MS.Functional.range"],
        sig: "start, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad=False",
        forward: arange,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["MS.Functional.arange"],
        sig: "start=0, end=None, step=1, *, dtype=None",
        forward: arange,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    uninitialized(&["Torch.empty"], "*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, memory_format=None", empty),
    uninitialized(&["Torch.empty_like"], "input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None", empty_like),
    uninitialized(&["Torch.empty_strided"], "size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False", empty),
    uninitialized(&["Tensor.new_empty"], "input, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False", new_empty),
    uninitialized(
        &["Tensor.new_empty_strided"],
        "input, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False",
        new_empty,
    ),
    Op {
        names: &["Tensor.new_ones"],
        sig: "input, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False",
        forward: |c, b| new_filled(c, b, 1.0),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.new_zeros"],
        sig: "input, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False",
        forward: |c, b| new_filled(c, b, 0.0),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.ones_like", "Mint.ones_like", "MS.Functional.ones_like"],
        sig: "input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None",
        forward: |c, b| filled_like(c, b, 1.0),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.zeros_like", "Mint.zeros_like", "MS.Functional.zeros_like"],
        sig: "input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None",
        forward: |c, b| filled_like(c, b, 0.0),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    // torch.fill(input, value): what Tensor.fill_ writes, in the input's dtype.
    Op { names: &["Torch.fill"], sig: "input, value", forward: fill_input, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.full_like", "MS.Functional.full_like"],
        sig: "input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None",
        forward: full_like,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.full", "MS.Functional.full"],
        sig: "size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False",
        forward: full,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.eye"],
        sig: "n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False",
        forward: eye,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.linspace", "MS.Functional.linspace"],
        sig: "start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False",
        forward: linspace,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.logspace", "MS.Functional.logspace"],
        sig: "start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False",
        forward: logspace,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    constant(&["Mint.ones", "Torch.ones"], "*size, dtype=None", |c, b| filled(c, b, 1.0)),
    // mindspore.ops.ones/zeros(shape, dtype=None): the dtype may be positional.
    constant(&["MS.Functional.ones"], "size, dtype=None", |c, b| filled(c, b, 1.0)),
    constant(&["MS.Functional.zeros"], "size, dtype=None", |c, b| filled(c, b, 0.0)),
    Op {
        names: &["Mint.zeros", "Torch.zeros"],
        sig: "*size, dtype=None",
        forward: |c, b| filled(c, b, 0.0),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.to", "NPU.npu_dtype_cast"],
        sig: "input, *args, dtype=None, non_blocking=False, copy=False, memory_format=None, device=None",
        forward: to,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth), Fact::NoopCast],
    },
    Op {
        names: &["Tensor.float"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::F32),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth), Fact::NoopCast],
    },
    Op {
        names: &["Tensor.half"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::F16),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth), Fact::NoopCast],
    },
    Op {
        names: &["Tensor.bfloat16"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::BF16),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth), Fact::NoopCast],
    },
    Op {
        names: &["Tensor.double"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::F64),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth), Fact::NoopCast],
    },
    Op {
        names: &["Tensor.long"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::I64),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.int"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::I32),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.short"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::I16),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.char"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::I8),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.byte"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::U8),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.bool"],
        sig: "input, memory_format=None",
        forward: |c, b| cast_to(c, b, TDType::Bool),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.type_as"],
        sig: "input, other",
        forward: type_as,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth), Fact::NoopCast],
    },
];
