//! Reductions and norms.

use candle_core::Tensor;

use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

fn one(t: T) -> Result<Vec<Value>> {
    Ok(vec![Value::Tensor(t)])
}

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
fn norm_t(ctx: &Ctx, x: &Tensor, ord: f64, dims: &[usize], keepdim: bool) -> Result<Tensor> {
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
        sum_dims(&x.ne(0.0)?.to_dtype(ctx.compute)?, dims, keepdim)?
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
    one(ctx.out(norm_t(ctx, &x.t, b.float("ord")?, &dims, b.bool("keepdim")?)?, x.dtype)?)
}

/// torch._foreach_norm(tensors, ord=2): one 0-d norm per tensor.
fn foreach_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let ord = b.float("ord")?;
    b.tensors("tensors")?
        .into_iter()
        .map(|x| {
            let dims: Vec<usize> = (0..x.rank()).collect();
            Ok(Value::Tensor(ctx.out(norm_t(ctx, &x.t, ord, &dims, false)?, x.dtype)?))
        })
        .collect()
}

/// The reduction entries.
pub static OPS: &[Op] = &[
    Op { names: &["Torch.mean", "Tensor.mean", "Mint.mean"], sig: "input, dim=None, keepdim=False, *, dtype=None", forward: mean, backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Torch.sum", "Tensor.sum", "Mint.sum"], sig: "input, dim=None, keepdim=False, *, dtype=None", forward: sum, backward: true, standard: Standard::Accuracy, random: false },
    Op {
        names: &["Torch.vector_norm"],
        sig: "input, ord=2, dim=None, keepdim=False, *, dtype=None",
        forward: vector_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
    },
    Op { names: &["Torch._foreach_norm"], sig: "tensors, ord=2", forward: foreach_norm, backward: false, standard: Standard::Accuracy, random: false },
];
