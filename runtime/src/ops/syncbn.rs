//! The kernels of `nn.SyncBatchNorm` that torch exposes as `torch.X` and
//! msprobe hooks: `batch_norm_stats`, `batch_norm_gather_stats(_with_counts)`,
//! `batch_norm_update_stats`, `batch_norm_elemt`,
//! `batch_norm_backward_reduce`, `batch_norm_backward_elemt`. SyncBatchNorm
//! calls them inside its own autograd function, so no gradient of theirs is
//! recorded (no backward here). Their values follow torch's CUDA kernels:
//! per-channel statistics over every dim but 1, `invstd = 1/sqrt(var + eps)`
//! of the biased variance, the ranks' statistics merged by their counts.
//! The running statistics they update in place are not results.

use candle_core::{DType, Tensor};

use super::aten::stats_dtype;
use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::{operand, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// `x` (`[N, C, *]`) as `[C, N·*]`, float64 for the sums.
fn per_channel(x: &T, what: &str) -> Result<Tensor> {
    if x.rank() < 2 {
        return Err(Error::Arg(format!("{what}: expected an input of at least 2 dims [N, C, *], got {:?}", x.dims())));
    }
    let c = x.dims()[1];
    Ok(x.t.transpose(0, 1)?.contiguous()?.reshape((c, x.t.elem_count() / c.max(1)))?.to_dtype(DType::F64)?)
}

/// A per-channel `[C]` vector as `[1, C, 1, ..]` for an input of `rank`.
fn channel(v: &Tensor, rank: usize) -> Result<Tensor> {
    let shape: Vec<usize> = (0..rank).map(|i| if i == 1 { v.elem_count() } else { 1 }).collect();
    Ok(v.reshape(shape)?)
}

fn tensor(ctx: &Ctx, t: Tensor, dtype: TDType) -> Result<Value> {
    Ok(Value::Tensor(ctx.out(t, dtype)?))
}

/// The float64 operand of the tensor argument `name`.
fn f64_arg(ctx: &Ctx, b: &Bound, name: &str) -> Result<Tensor> {
    Ok(operand(ctx, b.value(name), b.tensor(name)?.dtype)?.to_dtype(DType::F64)?)
}

/// `batch_norm_stats(input, eps)`: the mean and invstd per channel.
fn stats(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let flat = per_channel(x, "batch_norm_stats")?;
    let mean = flat.mean_keepdim(1)?;
    let var = flat.broadcast_sub(&mean)?.sqr()?.mean(1)?;
    let invstd = (var + b.float("eps")?)?.sqrt()?.recip()?;
    let dtype = stats_dtype(x.dtype);
    Ok(vec![tensor(ctx, mean.squeeze(1)?, dtype)?, tensor(ctx, invstd, dtype)?])
}

/// `batch_norm_update_stats(input, running_mean, running_var, momentum)`:
/// the mean and the biased variance per channel.
fn update_stats(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let flat = per_channel(x, "batch_norm_update_stats")?;
    let mean = flat.mean_keepdim(1)?;
    let var = flat.broadcast_sub(&mean)?.sqr()?.mean(1)?;
    let dtype = stats_dtype(x.dtype);
    Ok(vec![tensor(ctx, mean.squeeze(1)?, dtype)?, tensor(ctx, var, dtype)?])
}

/// The ranks' `[W, C]` means and invstds merged with their `[W]` counts:
/// the total mean and the invstd of the total biased variance.
fn gather(ctx: &Ctx, b: &Bound, counts: Tensor) -> Result<Vec<Value>> {
    let (mean, invstd) = (f64_arg(ctx, b, "mean")?, f64_arg(ctx, b, "invstd")?);
    let eps = b.float("eps")?;
    if mean.rank() != 2 || invstd.dims() != mean.dims() || counts.elem_count() != mean.dims()[0] {
        return Err(Error::Arg(format!("batch_norm_gather_stats: mean {:?}, invstd {:?} and {} counts", mean.dims(), invstd.dims(), counts.elem_count())));
    }
    let n = counts.reshape((mean.dims()[0], 1))?;
    let total = n.sum_all()?;
    let m = mean.broadcast_mul(&n)?.sum(0)?.broadcast_div(&total)?;
    let var = (invstd.sqr()?.recip()? - eps)?;
    let spread = (var + mean.broadcast_sub(&m.unsqueeze(0)?)?.sqr()?)?;
    let var = spread.broadcast_mul(&n)?.sum(0)?.broadcast_div(&total)?;
    let dtype = stats_dtype(b.tensor("mean")?.dtype);
    Ok(vec![tensor(ctx, m, dtype)?, tensor(ctx, (var + eps)?.sqrt()?.recip()?, dtype)?])
}

/// `batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean,
/// running_var, momentum, eps, counts)`.
fn gather_with_counts(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    gather(ctx, b, f64_arg(ctx, b, "counts")?)
}

/// `batch_norm_gather_stats(input, mean, invstd, running_mean, running_var,
/// momentum, eps, count)`: every rank with `count` elements.
fn gather_equal(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let ranks = b.tensor("mean")?.dims().first().copied().unwrap_or(0);
    gather(ctx, b, Tensor::full(b.int("count")? as f64, ranks, &ctx.device)?)
}

/// `batch_norm_elemt(input, weight, bias, mean, invstd, eps)`:
/// `(x - mean)·invstd·weight + bias`.
fn elemt(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let r = x.rank();
    let mut y = x.t.to_dtype(DType::F64)?.broadcast_sub(&channel(&f64_arg(ctx, b, "mean")?, r)?)?.broadcast_mul(&channel(&f64_arg(ctx, b, "invstd")?, r)?)?;
    if !b.is_none("weight") {
        y = y.broadcast_mul(&channel(&f64_arg(ctx, b, "weight")?, r)?)?;
    }
    if !b.is_none("bias") {
        y = y.broadcast_add(&channel(&f64_arg(ctx, b, "bias")?, r)?)?;
    }
    Ok(vec![tensor(ctx, y, x.dtype)?])
}

/// `batch_norm_backward_reduce(grad_out, input, mean, invstd, weight,
/// input_g, weight_g, bias_g)`: `Σdy` and `Σdy·(x - mean)` per channel
/// (with `input_g`), the weight's gradient `Σdy·(x - mean)·invstd` (with
/// `weight_g`) and the bias's `Σdy` (with `bias_g`); None where not asked.
fn backward_reduce(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (g, x) = (b.tensor("grad_out")?, b.tensor("input")?);
    let (dy, xs) = (per_channel(g, "batch_norm_backward_reduce")?, per_channel(x, "batch_norm_backward_reduce")?);
    let mean = f64_arg(ctx, b, "mean")?;
    let sum_dy = dy.sum(1)?;
    let sum_dy_xmu = (&dy * xs.broadcast_sub(&mean.unsqueeze(1)?)?)?.sum(1)?;
    let stats = stats_dtype(x.dtype);
    let weight_dtype = if b.is_none("weight") { stats } else { b.tensor("weight")?.dtype };
    let some = |on: bool, t: Tensor, dtype: TDType| -> Result<Value> {
        if on {
            tensor(ctx, t, dtype)
        } else {
            Ok(Value::None)
        }
    };
    let grad_weight = (&sum_dy_xmu * f64_arg(ctx, b, "invstd")?)?;
    Ok(vec![
        some(b.bool("input_g")?, sum_dy.clone(), stats)?,
        some(b.bool("input_g")?, sum_dy_xmu, stats)?,
        some(b.bool("weight_g")?, grad_weight, weight_dtype)?,
        some(b.bool("bias_g")?, sum_dy, weight_dtype)?,
    ])
}

/// `batch_norm_backward_elemt(grad_out, input, mean, invstd, weight,
/// sum_dy, sum_dy_xmu, count)`: the input's gradient,
/// `(dy - Σdy/N - (x - mean)·invstd²·Σdy(x - mean)/N)·invstd·weight`, N = Σcount.
fn backward_elemt(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (g, x) = (b.tensor("grad_out")?, b.tensor("input")?);
    let r = x.rank();
    let n = f64_arg(ctx, b, "count")?.sum_all()?.to_scalar::<f64>()?;
    let (mean, invstd) = (f64_arg(ctx, b, "mean")?, f64_arg(ctx, b, "invstd")?);
    let mean_dy = (f64_arg(ctx, b, "sum_dy")? / n)?;
    let factor_1 = (invstd.sqr()? * (f64_arg(ctx, b, "sum_dy_xmu")? / n)?)?;
    let factor_2 = if b.is_none("weight") { invstd.clone() } else { (&invstd * f64_arg(ctx, b, "weight")?)? };
    let centered = x.t.to_dtype(DType::F64)?.broadcast_sub(&channel(&mean, r)?)?;
    let y = g.t.to_dtype(DType::F64)?.broadcast_sub(&channel(&mean_dy, r)?)?.sub(&centered.broadcast_mul(&channel(&factor_1, r)?)?)?;
    Ok(vec![tensor(ctx, y.broadcast_mul(&channel(&factor_2, r)?)?, g.dtype)?])
}

/// The entry of one of these kernels: forward only.
const fn kernel(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: false, standard: Standard::Accuracy, random: false, facts: &[] }
}

/// The SyncBatchNorm kernel entries.
pub static OPS: &[Op] = &[
    kernel(&["Torch.batch_norm_stats"], "input, eps", stats),
    kernel(&["Torch.batch_norm_update_stats"], "input, running_mean, running_var, momentum", update_stats),
    kernel(&["Torch.batch_norm_gather_stats_with_counts"], "input, mean, invstd, running_mean, running_var, momentum, eps, counts", gather_with_counts),
    kernel(&["Torch.batch_norm_gather_stats"], "input, mean, invstd, running_mean, running_var, momentum, eps, count", gather_equal),
    kernel(&["Torch.batch_norm_elemt"], "input, weight, bias, mean, invstd, eps", elemt),
    kernel(&["Torch.batch_norm_backward_reduce"], "grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g", backward_reduce),
    kernel(&["Torch.batch_norm_backward_elemt"], "grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count", backward_elemt),
];
