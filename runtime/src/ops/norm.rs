//! Batch and group normalization, composed from candle primitives (means
//! and biased variances over the normalized elements), so that the
//! gradients of the input, weight and bias are autograd's, exact.

use candle_core::Tensor;

use super::batch_norm_kernel;
use super::batch_norm_parts::batch_norm_parts;
use super::{one, Fact, Inert, Op, Parts, Rest, Rounding, Slicing, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The shape `[1, C, 1, ...]` of a per-channel parameter of an `[N, C, *]` input.
fn channel_shape(x: &T) -> Vec<usize> {
    (0..x.rank()).map(|i| if i == 1 { x.dims()[1] } else { 1 }).collect()
}

/// `y * weight + bias` with per-channel (dim 1) parameters, each optional.
fn affine(b: &Bound, x: &T, mut y: Tensor) -> Result<Tensor> {
    let shape = channel_shape(x);
    let c = x.dims()[1];
    for (name, scale) in [("weight", true), ("bias", false)] {
        let Some(p) = b.opt_tensor(name)? else { continue };
        if p.t.elem_count() != c {
            return Err(Error::Arg(format!("{name} of shape {:?} for {c} channels", p.dims())));
        }
        let p = p.t.reshape(shape.as_slice())?;
        y = if scale { y.broadcast_mul(&p)? } else { y.broadcast_add(&p)? };
    }
    Ok(y)
}

/// An `[N, C, *]` input: normalization layers need the channel dim.
fn channels_input<'a>(b: &'a Bound, what: &str) -> Result<&'a T> {
    let x = b.tensor("input")?;
    if x.rank() < 2 {
        return Err(Error::Arg(format!("{what}: expected an input of at least 2 dims [N, C, *], got {:?}", x.dims())));
    }
    Ok(x)
}

/// torch.nn.functional.batch_norm: in training (or without running
/// statistics) the batch's mean and biased variance per channel, else the
/// running ones. The running statistics are never differentiated (torch
/// refuses them as gradient inputs; MindSpore records `None` for them) and
/// never updated: the result does not depend on the update.
pub(super) fn batch_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = channels_input(b, "batch_norm")?;
    let eps = b.float("eps")?;
    let shape = channel_shape(x);
    let (rm, rv) = (b.opt_tensor("running_mean")?, b.opt_tensor("running_var")?);
    let (mean, var) = match (b.bool("training")?, rm, rv) {
        (false, Some(m), Some(v)) => (m.t.detach().reshape(shape.as_slice())?, v.t.detach().reshape(shape.as_slice())?),
        (false, _, _) => return Err(Error::Arg("batch_norm: running_mean and running_var must be given in evaluation mode".into())),
        (true, _, _) => {
            let dims: Vec<usize> = (0..x.rank()).filter(|&d| d != 1).collect();
            let n: usize = dims.iter().map(|&d| x.dims()[d]).product();
            if n <= 1 {
                return Err(Error::Arg(format!("batch_norm: expected more than 1 value per channel when training, got input of shape {:?}", x.dims())));
            }
            if let Some(y) = fused_batch_norm(b, x, eps)? {
                return one(ctx.out(y, x.dtype)?);
            }
            let mean = (x.t.sum_keepdim(dims.clone())? / n as f64)?;
            let var = (x.t.broadcast_sub(&mean)?.sqr()?.sum_keepdim(dims)? / n as f64)?;
            (mean, var)
        }
    };
    let y = x.t.broadcast_sub(&mean)?.broadcast_div(&(var + eps)?.sqrt()?)?;
    one(ctx.out(affine(b, x, y)?, x.dtype)?)
}

/// Training-mode batch_norm by the fused kernel, with
/// the call's weight and bias or ones and zeros; `None` where the kernel
/// does not apply.
fn fused_batch_norm(b: &Bound, x: &T, eps: f64) -> Result<Option<Tensor>> {
    Ok(batch_norm_kernel::fused_batch_norm(&x.t, &channel_param(b, x, "weight", 1.0)?, &channel_param(b, x, "bias", 0.0)?, eps)?)
}

/// The kernel's per-channel parameter `name` as `[C]`, or `fill` in every
/// channel when the call has none.
fn channel_param(b: &Bound, x: &T, name: &str, fill: f64) -> Result<Tensor> {
    let c = x.dims()[1];
    match b.opt_tensor(name)? {
        Some(p) if p.t.elem_count() != c => Err(Error::Arg(format!("{name} of shape {:?} for {c} channels", p.dims()))),
        Some(p) => Ok(p.t.reshape(c)?),
        None => Ok((Tensor::ones(c, x.t.dtype(), x.t.device())? * fill)?),
    }
}

/// batch_norm's [`super::Gradients`]: the fused kernel's backward, where
/// the forward runs on the kernel (training, a float32 or float64 input
/// this side keeps as computed) with parameters of the input's dtype.
fn batch_norm_gradients(ctx: &Ctx, b: &Bound, dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let x = channels_input(b, "batch_norm")?;
    let Some(Some(dy)) = dy.first() else { return Ok(None) };
    let dims: Vec<usize> = (0..x.rank()).filter(|&d| d != 1).collect();
    if !b.bool("training")? || dims.iter().map(|&d| x.dims()[d]).product::<usize>() <= 1 || !ctx.keeps(&x.t, x.dtype) {
        return Ok(None);
    }
    let (weight, bias) = (b.opt_tensor("weight")?, b.opt_tensor("bias")?);
    let w = channel_param(b, x, "weight", 1.0)?;
    // A gradient passed as dumped (the forward skipped) takes the output's storage dtype, as a run's would.
    let dy = dy.t.to_dtype(x.t.dtype())?;
    let Some((dx, dw, db)) = batch_norm_kernel::fused_batch_norm_gradients(&x.t, &w, &dy, b.float("eps")?)? else { return Ok(None) };
    let mut grads = vec![("input", dx)];
    for (name, p, g) in [("weight", weight, dw), ("bias", bias, db)] {
        if let Some(p) = p {
            grads.push((name, g.reshape(p.dims())?));
        }
    }
    Ok(Some(grads))
}

/// torch.nn.functional.group_norm: mean and biased variance over each
/// group of `C / num_groups` channels (and every spatial element) of each sample.
fn group_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = channels_input(b, "group_norm")?;
    let groups = b.int("num_groups")?;
    let (n, c) = (x.dims()[0], x.dims()[1]);
    if groups <= 0 || c % groups as usize != 0 {
        return Err(Error::Arg(format!("group_norm: {c} channels are not divisible into {groups} groups")));
    }
    let g = groups as usize;
    let flat = x.t.reshape((n, g, x.t.elem_count() / (n * g).max(1)))?;
    let mean = flat.mean_keepdim(2)?;
    let centered = flat.broadcast_sub(&mean)?;
    let var = centered.sqr()?.mean_keepdim(2)?;
    let y = centered.broadcast_div(&(var + b.float("eps")?)?.sqrt()?)?.reshape(x.dims())?;
    one(ctx.out(affine(b, x, y)?, x.dtype)?)
}

/// torch.nn.functional.instance_norm: with `use_input_stats`, the mean and
/// biased variance of each sample's channel over its spatial elements, else
/// the running statistics (never differentiated, never updated, as batch_norm's).
fn instance_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = channels_input(b, "instance_norm")?;
    let eps = b.float("eps")?;
    let (n, c) = (x.dims()[0], x.dims()[1]);
    let spatial = x.t.elem_count() / (n * c).max(1);
    let y = if b.bool("use_input_stats")? {
        if spatial <= 1 {
            return Err(Error::Arg(format!("instance_norm: expected more than 1 spatial element when training, got input of shape {:?}", x.dims())));
        }
        let flat = x.t.reshape((n, c, spatial))?;
        let mean = flat.mean_keepdim(2)?;
        let centered = flat.broadcast_sub(&mean)?;
        let var = centered.sqr()?.mean_keepdim(2)?;
        centered.broadcast_div(&(var + eps)?.sqrt()?)?.reshape(x.dims())?
    } else {
        let (Some(m), Some(v)) = (b.opt_tensor("running_mean")?, b.opt_tensor("running_var")?) else {
            return Err(Error::Arg("instance_norm: running_mean and running_var must be given when use_input_stats is False".into()));
        };
        let shape = channel_shape(x);
        let (m, v) = (m.t.detach().reshape(shape.as_slice())?, v.t.detach().reshape(shape.as_slice())?);
        x.t.broadcast_sub(&m)?.broadcast_div(&(v + eps)?.sqrt()?)?
    };
    one(ctx.out(affine(b, x, y)?, x.dtype)?)
}

/// torch.nn.functional.local_response_norm: `x / (k + α·mean(x²))^β`, the
/// mean over `size` neighbouring channels, zero-padded (`size / 2` before,
/// `(size - 1) / 2` after).
fn local_response_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() < 3 {
        return Err(Error::Arg(format!("local_response_norm: expected an input of at least 3 dims, got {:?}", x.dims())));
    }
    let size = b.int("size")?;
    if size <= 0 {
        return Err(Error::Arg(format!("local_response_norm: size must be positive, got {size}")));
    }
    let (size, c) = (size as usize, x.dims()[1]);
    let sq = x.t.sqr()?;
    let (before, after) = (size / 2, (size - 1) / 2);
    let zeros = |k: usize| -> Result<Tensor> {
        let mut shape = x.dims().to_vec();
        shape[1] = k;
        Ok(Tensor::zeros(shape.as_slice(), sq.dtype(), sq.device())?)
    };
    let padded = Tensor::cat(&[&zeros(before)?, &sq, &zeros(after)?], 1)?;
    let mut sum = padded.narrow(1, 0, c)?;
    for i in 1..size {
        sum = (sum + padded.narrow(1, i, c)?)?;
    }
    let div = (((sum / size as f64)? * b.float("alpha")?)? + b.float("k")?)?.powf(b.float("beta")?)?;
    one(ctx.out((&x.t / div)?, x.dtype)?)
}

/// The normalization entries (layer_norm and rms_norm are with the other
/// neural-network functions).
pub static OPS: &[Op] = &[
    Op {
        names: &["Functional.batch_norm", "MintFunctional.batch_norm"],
        // mindspore.ops.batch_norm binds the same (`input_x` is an alias of `input`).
        sig: "input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05",
        forward: batch_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[
            Fact::Slicing(Slicing::Channels),
            Fact::Inert(Inert { when: Some("training"), params: &["running_mean", "running_var"] }),
            Fact::Rounding(Rounding::Parts(Parts { name: "batch_norm", rest: Rest::Nothing, magnitude: batch_norm_parts })),
            Fact::Gradients(batch_norm_gradients),
        ],
    },
    Op {
        names: &["Functional.group_norm", "MintFunctional.group_norm"],
        sig: "input, num_groups, weight=None, bias=None, eps=1e-05",
        forward: group_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.group_norm"],
        sig: "input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True",
        forward: group_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.instance_norm"],
        sig: "input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-05",
        forward: instance_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Inert(Inert { when: Some("use_input_stats"), params: &["running_mean", "running_var"] })],
    },
    Op {
        // torch.instance_norm, ATen's order of the same parameters.
        names: &["Torch.instance_norm"],
        sig: "input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled",
        forward: instance_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Inert(Inert { when: Some("use_input_stats"), params: &["running_mean", "running_var"] })],
    },
    Op {
        names: &["Functional.local_response_norm"],
        sig: "input, size, alpha=0.0001, beta=0.75, k=1.0",
        forward: local_response_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
];
