//! Reductions and norms.

use candle_core::{DType, Tensor};

use super::{float_of, one, Fact, Op, Rounding, Standard};
use crate::bind::{bind, Bound};
use crate::ctx::{dim, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The dims a reduction covers (`None` or `[]` = all), sorted, deduplicated.
fn reduce_dims(b: &Bound, x: &T) -> Result<Vec<usize>> {
    let mut dims = match b.opt_ints("dim")? {
        None => (0..x.rank()).collect(),
        Some(v) if v.is_empty() => (0..x.rank()).collect(),
        Some(v) => v.iter().map(|&d| dim(d, x.rank())).collect::<Result<Vec<_>>>()?,
    };
    dims.sort_unstable();
    dims.dedup();
    Ok(dims)
}

/// `r`, reduced from `t` over `dims` with the dims kept, without them unless `keepdim`.
fn drop_dims(t: &Tensor, r: Tensor, dims: &[usize], keepdim: bool) -> candle_core::Result<Tensor> {
    if keepdim {
        Ok(r)
    } else {
        let shape: Vec<usize> = t.dims().iter().enumerate().filter(|(i, _)| !dims.contains(i)).map(|(_, &n)| n).collect();
        r.reshape(shape)
    }
}

/// Sum over `dims`, keeping them or not.
fn sum_dims(t: &Tensor, dims: &[usize], keepdim: bool) -> candle_core::Result<Tensor> {
    if t.rank() == 0 {
        return Ok(t.clone());
    }
    drop_dims(t, t.sum_keepdim(dims.to_vec())?, dims, keepdim)
}

fn input_as(ctx: &Ctx, b: &Bound) -> Result<T> {
    let x = b.tensor("input")?;
    Ok(match b.opt_dtype("dtype")? {
        Some(d) => ctx.cast(x, d)?,
        None => x.clone(),
    })
}

fn mean(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = input_as(ctx, b)?;
    if !x.dtype.is_float() {
        return Err(Error::Unsupported(format!("mean of a {} tensor (torch needs a float dtype)", x.dtype.name())));
    }
    let dims = reduce_dims(b, &x)?;
    let n: usize = dims.iter().map(|&d| x.dims().get(d).copied().unwrap_or(1)).product();
    let s = sum_dims(&x.t, &dims, b.bool("keepdim")?)?;
    one(ctx.out((s / n as f64)?, x.dtype)?)
}

fn sum(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = input_as(ctx, b)?;
    let dims = reduce_dims(b, &x)?;
    let dtype = if x.dtype.is_float() { x.dtype } else { TDType::I64 };
    one(ctx.out(sum_dims(&x.t, &dims, b.bool("keepdim")?)?, dtype)?)
}

/// ‖x‖_ord over `dims`: ord 2 as sqrt(Σx²) (exact gradient, NaN-free at 0
/// only where torch is too), ±inf as max/min |x|, other p as (Σ|x|^p)^(1/p).
fn norm_t(x: &Tensor, ord: f64, dims: &[usize], keepdim: bool) -> Result<Tensor> {
    Ok(if ord == 2.0 {
        sum_dims(&x.sqr()?, dims, keepdim)?.sqrt()?
    } else if ord == 1.0 {
        sum_dims(&x.abs()?, dims, keepdim)?
    } else if ord.is_infinite() {
        // Reduced one dim at a time, so that any subset of dims works (torch
        // allows ord=±inf over part of the dims; this used to be refused).
        let mut m = x.abs()?;
        for &d in dims {
            m = if ord > 0.0 { m.max_keepdim(d)? } else { m.min_keepdim(d)? };
        }
        drop_dims(x, m, dims, keepdim)?
    } else if ord == 0.0 {
        sum_dims(&x.ne(0.0)?.to_dtype(x.dtype())?, dims, keepdim)?
    } else {
        sum_dims(&x.abs()?.powf(ord)?, dims, keepdim)?.powf(1.0 / ord)?
    })
}

fn vector_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = input_as(ctx, b)?;
    if !x.dtype.is_float() {
        return Err(Error::Unsupported(format!("vector_norm of a {} tensor", x.dtype.name())));
    }
    let dims = reduce_dims(b, &x)?;
    one(ctx.out(norm_t(&x.t, b.float("ord")?, &dims, b.bool("keepdim")?)?, x.dtype)?)
}

/// `frobenius_norm(input, dim, keepdim=False)`: the 2-norm over `dim`.
fn frobenius_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if !x.dtype.is_float() {
        return Err(Error::Unsupported(format!("frobenius_norm of a {} tensor", x.dtype.name())));
    }
    one(ctx.out(norm_t(&x.t, 2.0, &reduce_dims(b, x)?, b.bool("keepdim")?)?, x.dtype)?)
}

/// `norm_except_dim(v, pow=2, dim=0)` (weight_norm's): the `pow`-norm over
/// every dim but `dim`, kept as size-1 dims; over all of them (a 0-d
/// result) for `dim=-1`.
fn norm_except_dim(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("v")?;
    if !x.dtype.is_float() {
        return Err(Error::Unsupported(format!("norm_except_dim of a {} tensor", x.dtype.name())));
    }
    let (p, d) = (b.float("pow")?, b.int("dim")?);
    let all: Vec<usize> = (0..x.rank()).collect();
    let out = if d == -1 {
        norm_t(&x.t, p, &all, false)?
    } else {
        let keep = dim(d, x.rank())?;
        norm_t(&x.t, p, &all.into_iter().filter(|&i| i != keep).collect::<Vec<_>>(), true)?
    };
    one(ctx.out(out, x.dtype)?)
}

/// `renorm(input, p, dim, maxnorm)`: each slice along `dim` whose p-norm
/// (over the other dims) exceeds `maxnorm` scaled by `maxnorm / (norm +
/// 1e-7)`, the others kept; differentiated through the norm, as torch's.
fn renorm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if !x.dtype.is_float() {
        return Err(Error::Arg(format!("renorm: a floating point input expected, got {}", x.dtype.name())));
    }
    let (p, maxnorm) = (b.float("p")?, b.float("maxnorm")?);
    if p <= 0.0 || maxnorm < 0.0 {
        return Err(Error::Arg(format!("renorm: p = {p} must be positive and maxnorm = {maxnorm} non-negative")));
    }
    let keep = dim(b.int("dim")?, x.rank().max(1))?;
    let others: Vec<usize> = (0..x.rank()).filter(|&i| i != keep).collect();
    let norm = norm_t(&x.t, p, &others, true)?;
    let factor = norm.gt(maxnorm)?.where_cond(&((&norm + 1e-7)?.recip()? * maxnorm)?, &norm.ones_like()?)?;
    one(ctx.out(x.t.broadcast_mul(&factor)?, x.dtype)?)
}

/// `embedding_renorm_(weight, indices, max_norm, norm_type)`: the rows
/// `indices` names (each once) whose `norm_type`-norm exceeds `max_norm`
/// scaled by `max_norm / (norm + 1e-7)`; the updated weight (torch runs it
/// without a gradient).
fn embedding_renorm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let w = b.tensor("input")?;
    if w.rank() != 2 || !w.dtype.is_float() {
        return Err(Error::Arg(format!("embedding_renorm_: a 2-D float weight expected, got {} {:?}", w.dtype.name(), w.dims())));
    }
    let rows = w.dims()[0];
    let mut named = vec![false; rows];
    for v in b.tensor("indices")?.to_f64_vec()? {
        let i = usize::try_from(v as i64)
            .ok()
            .filter(|&i| i < rows)
            .ok_or_else(|| Error::Arg(format!("embedding_renorm_: index {v} out of range for {rows} rows")))?;
        named[i] = true;
    }
    let (max_norm, p) = (b.float("max_norm")?, b.float("norm_type")?);
    let norm = norm_t(&w.t.detach(), p, &[1], true)?;
    let named = Tensor::from_vec(named.into_iter().map(u8::from).collect::<Vec<_>>(), (rows, 1), w.t.device())?;
    let scale = named.where_cond(&norm.gt(max_norm)?.to_dtype(DType::U8)?, &named.zeros_like()?)?;
    let factor = scale.where_cond(&((&norm + 1e-7)?.recip()? * max_norm)?, &norm.ones_like()?)?;
    one(ctx.out(w.t.detach().broadcast_mul(&factor)?, w.dtype)?)
}

/// Tensor.norm(p='fro', dim=None, keepdim=False, dtype=None): 'fro' is the
/// 2-norm over the dims; a number p the vector p-norm.
fn norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = input_as(ctx, b)?;
    if !x.dtype.is_float() {
        return Err(Error::Unsupported(format!("norm of a {} tensor", x.dtype.name())));
    }
    let ord = match b.value("p") {
        Value::None => 2.0,
        Value::Str(s) if s == "fro" => 2.0,
        Value::Str(s) => return Err(Error::Unsupported(format!("norm: p={s:?} (only 'fro' and numbers are replayed)"))),
        _ => b.float("p")?,
    };
    let dims = reduce_dims(b, &x)?;
    one(ctx.out(norm_t(&x.t, ord, &dims, b.bool("keepdim")?)?, x.dtype)?)
}

/// torch._foreach_norm(tensors, ord=2): one 0-d norm per tensor.
fn foreach_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let ord = b.float("ord")?;
    b.tensors("tensors")?
        .into_iter()
        .map(|x| {
            let dims: Vec<usize> = (0..x.rank()).collect();
            Ok(Value::Tensor(ctx.out(norm_t(&x.t, ord, &dims, false)?, x.dtype)?))
        })
        .collect()
}

/// amax/amin over `dims`. Ties split the gradient evenly, as torch does
/// (candle's own max sends all of it to every tied element): the value is
/// the extreme itself, the gradient that of the mean of the tied elements.
pub(super) fn extreme(ctx: &Ctx, b: &Bound, max: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = reduce_dims(b, x)?;
    let mut m = x.t.detach();
    for &d in &dims {
        m = if max { m.max_keepdim(d)? } else { m.min_keepdim(d)? };
    }
    let tied = x.t.detach().broadcast_eq(&m)?.to_dtype(x.t.dtype())?;
    let (mut sum, mut count) = ((&x.t * &tied)?, tied);
    for &d in &dims {
        sum = sum.sum_keepdim(d)?;
        count = count.sum_keepdim(d)?;
    }
    let mean = (sum / count)?;
    // Exactly the extreme forward (a sum of k copies / k can round), the mean's gradient backward.
    let t = (&m + (&mean - mean.detach())?)?;
    one(ctx.out(drop_dims(&x.t, t, &dims, b.bool("keepdim")?)?, x.dtype)?)
}

/// argmax/argmin: the first index of the extreme, as int64 (no gradient).
fn arg_extreme(ctx: &Ctx, b: &Bound, max: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let values = x.to_f64_vec()?;
    let better = |a: f64, cur: f64| if max { a > cur || (a.is_nan() && !cur.is_nan()) } else { a < cur || (a.is_nan() && !cur.is_nan()) };
    let pick = |vals: &mut dyn Iterator<Item = f64>| {
        let mut best: Option<(usize, f64)> = None;
        for (i, v) in vals.enumerate() {
            if best.is_none_or(|(_, cur)| better(v, cur)) {
                best = Some((i, v));
            }
        }
        best.map_or(0.0, |(i, _)| i as f64)
    };
    let keepdim = b.bool("keepdim")?;
    let (out, shape): (Vec<f64>, Vec<usize>) = match b.opt_int("dim")? {
        None => (vec![pick(&mut values.iter().copied())], if keepdim { vec![1; x.rank()] } else { vec![] }),
        Some(d) => {
            let d = dim(d, x.rank())?;
            let dims = x.dims();
            let (outer, n, inner): (usize, usize, usize) = (dims[..d].iter().product(), dims[d], dims[d + 1..].iter().product());
            let mut out = Vec::with_capacity(outer * inner);
            for o in 0..outer {
                for i in 0..inner {
                    out.push(pick(&mut (0..n).map(|k| values[(o * n + k) * inner + i])));
                }
            }
            let shape = dims.iter().enumerate().filter_map(|(i, &s)| if i == d { keepdim.then_some(1) } else { Some(s) }).collect();
            (out, shape)
        }
    };
    one(T::from_f64(out, &shape, TDType::I64, ctx.compute, &ctx.device)?)
}

/// torch.max/min in its three forms: `max(input)`, a 0-d extreme (ties
/// split the gradient, as amax); `max(input, dim, keepdim=False)`, the
/// values and int64 indices (the first index of the extreme, which takes
/// the gradient); `max(input, other)`, the elementwise maximum.
fn max_any(ctx: &Ctx, b: &Bound, max: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    match (b.value("dim"), b.value("other")) {
        (Value::Tensor(o), Value::None) | (Value::None, Value::Tensor(o)) => {
            let pair = bind("maximum", "input, other", vec![Value::Tensor(x.clone()), Value::Tensor(o.clone())], vec![])?;
            super::compare::extreme(ctx, &pair, max)
        }
        (Value::None, Value::None) => extreme(ctx, b, max),
        (Value::Int(d), Value::None) => max_dim(ctx, x, *d, b.bool("keepdim")?, max),
        (d, o) => Err(Error::Arg(format!("max/min: expects (input), (input, dim, keepdim) or (input, other), got dim {} and other {}", d.kind(), o.kind()))),
    }
}

/// max/min over one dim: (values, indices); the value is gathered at the
/// first index of the extreme, so that index alone takes the gradient.
fn max_dim(ctx: &Ctx, x: &T, d: i64, keepdim: bool, max: bool) -> Result<Vec<Value>> {
    if x.rank() == 0 {
        dim(d, 1)?;
        let index = T::from_f64(vec![0.0], &[], TDType::I64, ctx.compute, &ctx.device)?;
        return Ok(vec![Value::Tensor(x.clone()), Value::Tensor(index)]);
    }
    let d = dim(d, x.rank())?;
    let at = bind("argmax", "input, dim=None, keepdim=False", vec![Value::Tensor(x.clone()), Value::Int(d as i64), Value::Bool(true)], vec![])?;
    let Some(Value::Tensor(index)) = arg_extreme(ctx, &at, max)?.into_iter().next() else {
        return Err(Error::Arg("max/min: no indices".into()));
    };
    let values = x.t.gather(&index.t.to_dtype(DType::U32)?.contiguous()?, d)?;
    let (values, index) = if keepdim { (values, index.t) } else { (values.squeeze(d)?, index.t.squeeze(d)?) };
    Ok(vec![Value::Tensor(ctx.out(values, x.dtype)?), Value::Tensor(T { t: index, dtype: TDType::I64 })])
}

/// var/std with Bessel's `correction` (default 1).
fn var(ctx: &Ctx, b: &Bound, sqrt: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = reduce_dims(b, x)?;
    one(var_of(ctx, x, &dims, b.opt_float("correction")?.unwrap_or(1.0), b.bool("keepdim")?, sqrt)?)
}

/// torch.var_mean / std_mean: the variance (or standard deviation) and
/// the mean over the same dims, as a pair.
fn var_mean(ctx: &Ctx, b: &Bound, sqrt: bool) -> Result<Vec<Value>> {
    var_mean_of(ctx, b, b.opt_float("correction")?.unwrap_or(1.0), b.bool("keepdim")?, sqrt)
}

/// [`var_mean`] with the `correction` and `keepdim` given (MindSpore's
/// `ddof` and `keepdims`).
pub(super) fn var_mean_of(ctx: &Ctx, b: &Bound, correction: f64, keepdim: bool, sqrt: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = reduce_dims(b, x)?;
    let v = var_of(ctx, x, &dims, correction, keepdim, sqrt)?;
    let n: usize = dims.iter().map(|&d| x.dims().get(d).copied().unwrap_or(1)).product();
    let mean = x.t.sum_keepdim(dims.clone())?.affine(1.0 / n as f64, 0.0)?;
    let mean = ctx.out(drop_dims(&x.t, mean, &dims, keepdim)?, x.dtype)?;
    Ok(vec![Value::Tensor(v), Value::Tensor(mean)])
}

/// MindSpore's Tensor.var/std(axis=None, ddof=0, keepdims=False): ddof 0
/// by default (torch's correction is 1); its torch-style overload
/// (`correction=`, `keepdim=`) has torch's default.
fn ms_var(ctx: &Ctx, b: &Bound, sqrt: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = reduce_dims(b, x)?;
    let (correction, keepdim) = if b.is_none("correction") && b.is_none("keepdim") {
        (b.float("ddof")?, b.bool("keepdims")?)
    } else {
        (b.opt_float("correction")?.unwrap_or(1.0), !b.is_none("keepdim") && b.bool("keepdim")?)
    };
    one(var_of(ctx, x, &dims, correction, keepdim, sqrt)?)
}

/// The variance (or standard deviation) of `x` over `dims`, divided by n − correction.
fn var_of(ctx: &Ctx, x: &T, dims: &[usize], correction: f64, keepdim: bool, sqrt: bool) -> Result<T> {
    let n: usize = dims.iter().map(|&d| x.dims().get(d).copied().unwrap_or(1)).product();
    let mean = x.t.sum_keepdim(dims.to_vec())?.affine(1.0 / n as f64, 0.0)?;
    let ss = x.t.broadcast_sub(&mean)?.sqr()?.sum_keepdim(dims.to_vec())?;
    let v = (ss / (n as f64 - correction).max(0.0))?;
    let v = if sqrt { v.sqrt()? } else { v };
    ctx.out(drop_dims(&x.t, v, dims, keepdim)?, x.dtype)
}

/// MindSpore's Tensor.sum(axis=None, dtype=None, keepdims=False,
/// initial=None), or its torch-style overload sum(dim, keepdim, *, dtype)
/// (a bool in the second place is keepdim).
fn ms_sum(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (dtype, keepdim) = match (b.value("dtype"), b.value("keepdims")) {
        (Value::Bool(k), Value::DType(d)) => (Some(*d), *k),
        (Value::Bool(k), _) => (None, *k),
        _ => (b.opt_dtype("dtype")?, b.bool("keepdims")?),
    };
    let keepdim = keepdim || (!b.is_none("keepdim") && b.bool("keepdim")?);
    let x = b.tensor("input")?;
    let x = match dtype {
        Some(d) => ctx.cast(x, d)?,
        None => x.clone(),
    };
    let dims = reduce_dims(b, &x)?;
    let dtype = if x.dtype.is_float() { x.dtype } else { TDType::I64 };
    let mut t = sum_dims(&x.t, &dims, keepdim)?;
    if let Some(initial) = b.opt_float("initial")? {
        t = (t + initial)?;
    }
    one(ctx.out(t, dtype)?)
}

/// logsumexp(input, dim, keepdim=False) as torch computes it: the maximum
/// (0 where infinite) taken out before the exponentials; -inf over no elements.
fn logsumexp(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dtype = float_of(x.dtype);
    let t = if x.dtype.is_float() { x.t.clone() } else { ctx.cast(x, dtype)?.t };
    if t.rank() == 0 {
        return one(ctx.out(t, dtype)?);
    }
    let dims = reduce_dims(b, x)?;
    let keepdim = b.bool("keepdim")?;
    if dims.iter().any(|&d| t.dims()[d] == 0) || t.elem_count() == 0 {
        let shape: Vec<usize> = t.dims().iter().enumerate().filter_map(|(i, &n)| if dims.contains(&i) { keepdim.then_some(1) } else { Some(n) }).collect();
        return one(ctx.out(ctx.full(&shape, f64::NEG_INFINITY, dtype)?, dtype)?);
    }
    let mut m = t.detach();
    for &d in &dims {
        m = m.max_keepdim(d)?;
    }
    let m = m.abs()?.eq(f64::INFINITY)?.where_cond(&m.zeros_like()?, &m)?;
    let s = (t.broadcast_sub(&m)?.exp()?.sum_keepdim(dims.clone())?.log()? + &m)?;
    one(ctx.out(drop_dims(&t, s, &dims, keepdim)?, dtype)?)
}

/// mindspore.ops.clip_by_global_norm(x, clip_norm=1.0, use_norm=None): every
/// tensor times clip_norm / max(global norm, clip_norm), the global norm
/// from each tensor's square sum (in its dtype, then float32) as MindSpore
/// computes it; the global norm takes the gradient where it is ≥ clip_norm.
fn clip_by_global_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !b.is_none("use_norm") {
        return Err(Error::Arg("clip_by_global_norm: use_norm must be None".into()));
    }
    let xs = b.tensors("input")?;
    let mut total: Option<Tensor> = None;
    for x in &xs {
        let square_sum = ctx.out(x.t.sqr()?.sum_all()?, x.dtype)?;
        let square_sum = ctx.cast(&square_sum, TDType::F32)?.t;
        total = Some(match total {
            Some(t) => ctx.out((t + square_sum)?, TDType::F32)?.t,
            None => square_sum,
        });
    }
    let Some(total) = total else { return Ok(vec![]) };
    let norm = ctx.out(total.sqrt()?, TDType::F32)?.t;
    let clip = ctx.out(ctx.scalar(b.float("clip_norm")?, TDType::F32)?, TDType::F32)?.t;
    let norm = norm.detach().ge(&clip)?.where_cond(&norm, &clip)?;
    xs.iter()
        .map(|x| {
            // x · [clip_norm] / norm: a 0-d tensor comes out of shape [1], as in MindSpore.
            let t = if x.rank() == 0 { x.t.reshape(1)? } else { x.t.clone() };
            Ok(Value::Tensor(ctx.out(t.broadcast_mul(&clip)?.broadcast_div(&norm)?, x.dtype)?))
        })
        .collect()
}

/// cumsum(input, dim, *, dtype=None).
fn cumsum(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = input_as(ctx, b)?;
    let d = dim(b.int("dim")?, x.rank())?;
    let dtype = if x.dtype.is_float() { x.dtype } else { TDType::I64 };
    if x.rank() == 0 {
        return one(ctx.out(x.t.clone(), dtype)?);
    }
    // Accumulated in float64 and rounded once, as torch's CPU kernel does
    // (its accumulator for float32 is a double): a float32 running sum would
    // drift by up to n ulps along the dim.
    one(ctx.out(x.t.to_dtype(DType::F64)?.cumsum(d)?, dtype)?)
}

/// cummax / cummin along `dim`: the running extreme and the index of its
/// last occurrence (torch's, `>=`/`<=`), NaN sticking once met; the
/// gradient goes to that index.
fn cum_extreme(ctx: &Ctx, b: &Bound, max: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = if x.rank() == 0 { 0 } else { dim(b.int("dim")?, x.rank())? };
    let t = if x.rank() == 0 { x.t.reshape(1)? } else { x.t.clone() };
    let moved = t.transpose(d, t.rank() - 1)?.contiguous()?;
    let len = moved.dims()[moved.rank() - 1];
    let rows = moved.elem_count() / len.max(1);
    let values = moved.detach().to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let mut at = vec![0u32; values.len()];
    for r in 0..rows {
        let row = &values[r * len..(r + 1) * len];
        let mut best = 0usize;
        for (i, &v) in row.iter().enumerate() {
            let cur = row[best];
            let better = if cur.is_nan() { v.is_nan() } else { v.is_nan() || if max { v >= cur } else { v <= cur } };
            if i == 0 || better {
                best = i;
            }
            at[r * len + i] = best as u32;
        }
    }
    let index = Tensor::from_vec(at.clone(), moved.dims(), moved.device())?;
    let picked = moved.gather(&index, moved.rank() - 1)?;
    let back = |v: Tensor| -> Result<Tensor> {
        let v = v.transpose(d, v.rank() - 1)?.contiguous()?;
        Ok(if x.rank() == 0 { v.reshape(())? } else { v })
    };
    let positions = Tensor::from_vec(at.iter().map(|&i| i as f64).collect::<Vec<f64>>(), moved.dims(), moved.device())?;
    Ok(vec![Value::Tensor(ctx.out(back(picked)?, x.dtype)?), Value::Tensor(ctx.out(back(positions)?, TDType::I64)?)])
}

/// diff(input, n=1, dim=-1, prepend=None, append=None): `n` times the
/// differences of neighbours along `dim`, after `prepend` and `append`
/// are concatenated there (a bool input's difference is xor).
fn diff(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() == 0 {
        return Err(Error::Arg("diff expects a tensor of at least one dimension".into()));
    }
    let n = b.int("n")?;
    if n < 0 {
        return Err(Error::Arg(format!("diff: order must be non-negative, got {n}")));
    }
    let d = dim(b.int("dim")?, x.rank())?;
    let mut parts = vec![];
    for name in ["prepend", "append"] {
        if let Some(p) = b.opt_tensor(name)? {
            if p.dtype != x.dtype {
                return Err(Error::Arg(format!("diff: {name} of dtype {} for an input of {}", p.dtype.name(), x.dtype.name())));
            }
            parts.push((name, p.t.clone()));
        }
    }
    let mut t = x.t.clone();
    for (name, p) in parts {
        t = if name == "prepend" { Tensor::cat(&[&p, &t], d)? } else { Tensor::cat(&[&t, &p], d)? };
    }
    let bool_input = x.dtype == TDType::Bool;
    for _ in 0..n {
        let len = t.dims()[d];
        if len == 0 {
            break;
        }
        let (hi, lo) = (t.narrow(d, 1, len - 1)?, t.narrow(d, 0, len - 1)?);
        t = if bool_input { hi.ne(&lo)?.to_dtype(DType::F64)? } else { (hi - lo)? };
    }
    one(ctx.out(t, x.dtype)?)
}

/// all / any over `dim` (one int, a list, or every dim): a bool result.
fn truth_reduce(ctx: &Ctx, b: &Bound, all: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = reduce_dims(b, x)?;
    let truth = x.t.ne(0.0)?.to_dtype(DType::F64)?;
    if x.rank() == 0 {
        return one(ctx.out(truth, TDType::Bool)?);
    }
    let hits = sum_dims(&truth, &dims, b.bool("keepdim")?)?;
    let n: usize = dims.iter().map(|&d| x.dims()[d]).product();
    let r = if all { hits.ge(n as f64)? } else { hits.gt(0.0)? };
    one(ctx.out(r.to_dtype(DType::F64)?, TDType::Bool)?)
}

/// The product along `d` as a tree of pairwise products (ones pad an odd
/// count), so that the gradient is candle's autograd through products.
fn prod_along(t: &Tensor, d: usize) -> candle_core::Result<Tensor> {
    let mut t = t.clone();
    while t.dims()[d] > 1 {
        let n = t.dims()[d];
        if n % 2 == 1 {
            let mut shape = t.dims().to_vec();
            shape[d] = 1;
            t = Tensor::cat(&[&t, &Tensor::ones(shape, t.dtype(), t.device())?], d)?;
        }
        let half = t.dims()[d] / 2;
        t = (t.narrow(d, 0, half)? * t.narrow(d, half, half)?)?;
    }
    Ok(t)
}

/// prod(input, dim=None, keepdim=False, *, dtype=None): integers give int64.
fn prod(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = input_as(ctx, b)?;
    let dtype = if x.dtype.is_float() { x.dtype } else { TDType::I64 };
    let keepdim = b.bool("keepdim")?;
    if x.rank() == 0 {
        return one(ctx.out(x.t.clone(), dtype)?);
    }
    let r = match b.opt_int("dim")? {
        None => prod_along(&x.t.flatten_all()?, 0)?.reshape(if keepdim { vec![1; x.rank()] } else { vec![] })?,
        Some(d) => {
            let d = dim(d, x.rank())?;
            let r = if x.dims()[d] == 0 {
                let mut shape = x.dims().to_vec();
                shape[d] = 1;
                Tensor::ones(shape, x.t.dtype(), x.t.device())?
            } else {
                prod_along(&x.t, d)?
            };
            drop_dims(&x.t, r, &[d], keepdim)?
        }
    };
    one(ctx.out(r, dtype)?)
}

/// nansum / nanmean: NaN counts as absent (zero in the sum, not in the count).
pub(super) fn nan_reduce(ctx: &Ctx, b: &Bound, mean: bool) -> Result<Vec<Value>> {
    let x = input_as(ctx, b)?;
    let dims = reduce_dims(b, &x)?;
    let keepdim = b.bool("keepdim")?;
    let present = x.t.eq(&x.t)?;
    let clean = present.where_cond(&x.t, &x.t.zeros_like()?)?;
    let dtype = if x.dtype.is_float() {
        x.dtype
    } else if mean {
        return Err(Error::Unsupported("nanmean of an integer tensor".into()));
    } else {
        TDType::I64
    };
    let s = sum_dims(&clean, &dims, keepdim)?;
    if !mean {
        return one(ctx.out(s, dtype)?);
    }
    let count = sum_dims(&present.to_dtype(x.t.dtype())?, &dims, keepdim)?;
    one(ctx.out((s / count)?, dtype)?)
}

/// cumprod(input, dim, *, dtype=None) as a Hillis-Steele scan of products.
fn cumprod(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = input_as(ctx, b)?;
    let dtype = if x.dtype.is_float() { x.dtype } else { TDType::I64 };
    if x.rank() == 0 {
        return one(ctx.out(x.t.clone(), dtype)?);
    }
    let d = dim(b.int("dim")?, x.rank())?;
    let n = x.dims()[d];
    let mut t = x.t.clone();
    let mut shift = 1;
    while shift < n {
        let mut shape = t.dims().to_vec();
        shape[d] = shift;
        let shifted = Tensor::cat(&[&Tensor::ones(shape, t.dtype(), t.device())?, &t.narrow(d, 0, n - shift)?], d)?;
        t = (t * shifted)?;
        shift *= 2;
    }
    one(ctx.out(t, dtype)?)
}

/// logcumsumexp(input, dim): `m + log(cumsum(exp(x − m)))` with `m` the
/// (constant) maximum along the dim.
fn logcumsumexp(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if !x.dtype.is_float() {
        return Err(Error::Unsupported("logcumsumexp of an integer tensor".into()));
    }
    if x.rank() == 0 {
        return one(ctx.out(x.t.clone(), x.dtype)?);
    }
    let d = dim(b.int("dim")?, x.rank())?;
    let m = x.t.max_keepdim(d)?.detach();
    let m = m.ne(&m)?.where_cond(&m.zeros_like()?, &m)?;
    let m = m.abs()?.eq(f64::INFINITY)?.where_cond(&m.zeros_like()?, &m)?;
    let r = x.t.broadcast_sub(&m)?.exp()?.cumsum(d)?.log()?.broadcast_add(&m)?;
    one(ctx.out(r, x.dtype)?)
}

/// count_nonzero(input, dim=None): int64.
fn count_nonzero(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = reduce_dims(b, x)?;
    let hits = x.t.ne(0.0)?.to_dtype(DType::F64)?;
    one(ctx.out(sum_dims(&hits, &dims, false)?, TDType::I64)?)
}

/// normalize(input, p=2.0, dim=1, eps=1e-12): `x / max(‖x‖_p, eps)` along `dim`.
fn normalize(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (p, eps) = (b.float("p")?, b.float("eps")?);
    let d = dim(b.int("dim")?, x.rank().max(1))?;
    let t = if x.rank() == 0 { x.t.reshape(1)? } else { x.t.clone() };
    let norm = if p == 2.0 {
        // sqrt only of positive sums: a zero vector's norm has gradient 0, as torch's.
        let ss = t.sqr()?.sum_keepdim(d)?;
        let pos = ss.gt(0.0)?;
        pos.where_cond(&pos.where_cond(&ss, &ss.ones_like()?)?.sqrt()?, &ss.zeros_like()?)?
    } else {
        norm_t(&t, p, &[d], true)?
    };
    let norm = norm.ge(eps)?.where_cond(&norm, &(norm.zeros_like()? + eps)?)?;
    let y = t.broadcast_div(&norm)?.reshape(x.dims())?;
    one(ctx.out(y, float_of(x.dtype))?)
}

/// The reduction entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.mean", "Tensor.mean", "Mint.mean", "MS.Functional.mean"],
        sig: "input, dim=None, keepdim=False, *, dtype=None",
        forward: mean,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.sum", "Tensor.sum", "Mint.sum"],
        sig: "input, dim=None, keepdim=False, *, dtype=None",
        forward: sum,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["MS.Tensor.sum"],
        sig: "input, dim=None, dtype=None, keepdims=False, initial=None, *, keepdim=None",
        forward: ms_sum,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.logsumexp", "Tensor.logsumexp", "Mint.logsumexp", "MS.Functional.logsumexp"],
        sig: "input, dim, keepdim=False",
        forward: logsumexp,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.vector_norm"],
        sig: "input, ord=2, dim=None, keepdim=False, *, dtype=None",
        forward: vector_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.norm"],
        sig: "input, p='fro', dim=None, keepdim=False, dtype=None",
        forward: norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.norm"],
        sig: "input, p='fro', dim=None, keepdim=False, out=None, dtype=None",
        forward: norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.amax", "Tensor.amax", "Mint.amax"],
        sig: "input, dim=None, keepdim=False",
        forward: |c, b| extreme(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.amin", "Tensor.amin", "Mint.amin"],
        sig: "input, dim=None, keepdim=False",
        forward: |c, b| extreme(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.max", "Tensor.max"],
        sig: "input, dim=None, keepdim=False, *, other=None",
        forward: |c, b| max_any(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.min", "Tensor.min"],
        sig: "input, dim=None, keepdim=False, *, other=None",
        forward: |c, b| max_any(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.argmax", "Tensor.argmax", "Mint.argmax"],
        sig: "input, dim=None, keepdim=False",
        forward: |c, b| arg_extreme(c, b, true),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.argmin", "Tensor.argmin", "Mint.argmin"],
        sig: "input, dim=None, keepdim=False",
        forward: |c, b| arg_extreme(c, b, false),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.var", "Tensor.var"],
        sig: "input, dim=None, *, correction=None, keepdim=False",
        forward: |c, b| var(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.std", "Tensor.std"],
        sig: "input, dim=None, *, correction=None, keepdim=False",
        forward: |c, b| var(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["MS.Tensor.var", "MS.Functional.var"],
        sig: "input, dim=None, ddof=0, keepdims=False, *, correction=None, keepdim=None",
        forward: |c, b| ms_var(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["MS.Tensor.std", "MS.Functional.std"],
        sig: "input, dim=None, ddof=0, keepdims=False, *, correction=None, keepdim=None",
        forward: |c, b| ms_var(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.cumsum", "Tensor.cumsum", "Mint.cumsum"],
        sig: "input, dim, *, dtype=None",
        forward: cumsum,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch._foreach_norm"],
        sig: "tensors, ord=2",
        forward: foreach_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["MS.Functional.clip_by_global_norm"],
        sig: "input, clip_norm=1.0, use_norm=None",
        forward: clip_by_global_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.all"],
        sig: "input, dim=None, keepdim=False",
        forward: |c, b| truth_reduce(c, b, true),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.any", "MS.Functional.any", "MS.Tensor.any"],
        sig: "input, dim=None, keepdim=False",
        forward: |c, b| truth_reduce(c, b, false),
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.prod"],
        sig: "input, dim=None, keepdim=False, *, dtype=None",
        forward: prod,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.nansum"],
        sig: "input, dim=None, keepdim=False, *, dtype=None",
        forward: |c, b| nan_reduce(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.nanmean"],
        sig: "input, dim=None, keepdim=False, *, dtype=None",
        forward: |c, b| nan_reduce(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.cumprod", "MS.Functional.cumprod", "MS.Tensor.cumprod"],
        sig: "input, dim, *, dtype=None",
        forward: cumprod,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.logcumsumexp"], sig: "input, dim", forward: logcumsumexp, backward: true, standard: Standard::Accuracy, random: false, facts: &[] },
    Op {
        names: &["Torch.count_nonzero"],
        sig: "input, dim=None",
        forward: count_nonzero,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.normalize"],
        sig: "input, p=2.0, dim=1, eps=1e-12, out=None",
        forward: normalize,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.embedding_renorm_"],
        sig: "input, indices, max_norm, norm_type",
        forward: embedding_renorm,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.renorm", "MS.Functional.renorm", "MS.Tensor.renorm"],
        sig: "input, p, dim, maxnorm",
        forward: renorm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.frobenius_norm"],
        sig: "input, dim, keepdim=False",
        forward: frobenius_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.norm_except_dim"],
        sig: "v, pow=2, dim=0",
        forward: norm_except_dim,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        // The deprecated `torch._aminmax(input, dim=None, keepdim=False)`, dim
        // positional, without a derivative in torch.
        names: &["Torch._aminmax"],
        sig: "input, dim=None, keepdim=False",
        forward: |c, b| {
            let mut out = extreme(c, b, false)?;
            out.extend(extreme(c, b, true)?);
            Ok(out)
        },
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.aminmax"],
        sig: "input, *, dim=None, keepdim=False",
        forward: |c, b| {
            let mut out = extreme(c, b, false)?;
            out.extend(extreme(c, b, true)?);
            Ok(out)
        },
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.var_mean"],
        sig: "input, dim=None, *, correction=None, keepdim=False",
        forward: |c, b| var_mean(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.std_mean"],
        sig: "input, dim=None, *, correction=None, keepdim=False",
        forward: |c, b| var_mean(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.cummax", "MS.Functional.cummax", "MS.Tensor.cummax"],
        sig: "input, dim",
        forward: |c, b| cum_extreme(c, b, true),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.cummin"],
        sig: "input, dim",
        forward: |c, b| cum_extreme(c, b, false),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.diff", "MS.Functional.diff", "MS.Tensor.diff"],
        sig: "input, n=1, dim=-1, prepend=None, append=None",
        forward: diff,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
];
