//! ATen's own functions that torch exposes as `torch.X` and msprobe hooks
//! (`Torch._add_relu`, `_softmax_backward_data`, `native_layer_norm`,
//! `native_group_norm`, `native_batch_norm`): the public functions they
//! implement, with the statistics torch returns beside the result (the
//! mean and reciprocal standard deviation; float32 for a float16 or
//! bfloat16 input, its accumulation type), differentiated where torch
//! differentiates them (group norm's) and detached where it does not.

use candle_core::{Tensor, D};

use super::activation::relu_t;
use super::{nn, norm, Op, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, operand, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::Value;

/// `_add_relu(input, other, *, alpha=1)`: `relu(input + alpha·other)`
/// (torch defines no derivative for it).
fn add_relu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dtype = match b.value("other") {
        Value::Tensor(o) => TDType::promote(x.dtype, o.dtype),
        _ => x.dtype,
    };
    let (a, o) = (operand(ctx, b.value("input"), dtype)?, operand(ctx, b.value("other"), dtype)?);
    let sum = a.broadcast_add(&(o * b.float("alpha")?)?)?;
    Ok(vec![Value::Tensor(ctx.out(relu_t(&sum)?, dtype)?)])
}

/// `_softmax_backward_data(grad_output, output, dim, input_dtype)`:
/// softmax's input gradient `y·(g - Σ g·y)` over `dim`, of `input_dtype`.
fn softmax_backward_data(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (g, y) = (b.tensor("grad_output")?, b.tensor("output")?);
    let d = dim(b.int("dim")?, y.rank())?;
    let dtype = b.opt_dtype("input_dtype")?.ok_or_else(|| Error::Arg("_softmax_backward_data: input_dtype must be a dtype".into()))?;
    let gy = g.t.broadcast_mul(&y.t)?;
    let out = (&gy - y.t.broadcast_mul(&gy.sum_keepdim(d)?)?)?;
    Ok(vec![Value::Tensor(ctx.out(out, dtype)?)])
}

/// The dtype torch gives the statistics of a normalization of `dtype`
/// (float32 for half precision, the accumulation type; SyncBatchNorm's too).
pub(super) fn stats_dtype(dtype: TDType) -> TDType {
    match dtype {
        TDType::F16 | TDType::BF16 => TDType::F32,
        d => d,
    }
}

/// The mean and `1/sqrt(var + eps)` (biased variance) of each row of
/// `flat`'s last dim, kept, detached.
fn row_stats(flat: &Tensor, eps: f64) -> Result<(Tensor, Tensor)> {
    let flat = flat.detach();
    let mean = flat.mean_keepdim(D::Minus1)?;
    let var = flat.broadcast_sub(&mean)?.sqr()?.mean_keepdim(D::Minus1)?;
    Ok((mean, (var + eps)?.sqrt()?.recip()?))
}

/// `native_layer_norm(input, normalized_shape, weight, bias, eps)`:
/// layer_norm's result, and the mean and rstd of shape
/// `input.shape[:axis] + [1] * len(normalized_shape)`.
fn native_layer_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let mut out = nn::layer_norm(ctx, b)?;
    let x = b.tensor("input")?;
    let k = b.ints("normalized_shape")?.len();
    let axis = x.rank() - k;
    let inner: usize = x.dims()[axis..].iter().product();
    let (mean, rstd) = row_stats(&x.t.reshape([x.dims()[..axis].to_vec(), vec![inner]].concat())?, b.float("eps")?)?;
    let shape = [x.dims()[..axis].to_vec(), vec![1; k]].concat();
    for s in [mean, rstd] {
        out.push(Value::Tensor(ctx.out(s.reshape(shape.as_slice())?, stats_dtype(x.dtype))?));
    }
    Ok(out)
}

/// `native_group_norm(input, weight, bias, N, C, HxW, group, eps)`: the
/// input's `C` channels in `group` groups normalized over each sample's
/// group, the per-channel affine; the mean and rstd of shape `[N, group]`,
/// differentiable (torch's backward takes their gradients too).
fn native_group_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (n, c, hw, groups) = (b.int("N")? as usize, b.int("C")? as usize, b.int("HxW")? as usize, b.int("group")?.max(1) as usize);
    if n * c * hw != x.t.elem_count() || c % groups != 0 {
        return Err(Error::Arg(format!("native_group_norm: N={n}, C={c}, HxW={hw}, group={groups} for an input of shape {:?}", x.dims())));
    }
    let eps = b.float("eps")?;
    let flat = x.t.reshape((n, groups, c / groups * hw))?;
    let mean = flat.mean_keepdim(2)?;
    let centered = flat.broadcast_sub(&mean)?;
    let rstd = (centered.sqr()?.mean_keepdim(2)? + eps)?.sqrt()?.recip()?;
    let mut y = centered.broadcast_mul(&rstd)?.reshape((n, c, hw))?;
    if let Some(w) = b.opt_tensor("weight")? {
        y = y.broadcast_mul(&w.t.reshape((1, c, 1))?)?;
    }
    if let Some(bias) = b.opt_tensor("bias")? {
        y = y.broadcast_add(&bias.t.reshape((1, c, 1))?)?;
    }
    let stats = stats_dtype(x.dtype);
    Ok(vec![
        Value::Tensor(ctx.out(y.reshape(x.dims())?, x.dtype)?),
        Value::Tensor(ctx.out(mean.reshape((n, groups))?, stats)?),
        Value::Tensor(ctx.out(rstd.reshape((n, groups))?, stats)?),
    ])
}

/// `native_batch_norm(input, weight, bias, running_mean, running_var,
/// training, momentum, eps)`: batch_norm's result, and in training the
/// batch's per-channel mean and `1/sqrt(var + eps)`, in evaluation two
/// empty tensors (torch's).
fn native_batch_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let mut out = norm::batch_norm(ctx, b)?;
    let x = b.tensor("input")?;
    let stats = stats_dtype(x.dtype);
    let (mean, rstd) = if b.bool("training")? {
        let c = x.dims()[1];
        let per_channel = x.t.transpose(0, 1)?.contiguous()?.reshape((c, x.t.elem_count() / c.max(1)))?;
        let (mean, rstd) = row_stats(&per_channel, b.float("eps")?)?;
        (mean.squeeze(1)?, rstd.squeeze(1)?)
    } else {
        let empty = Tensor::zeros(0, x.t.dtype(), x.t.device())?;
        (empty.clone(), empty)
    };
    out.push(Value::Tensor(ctx.out(mean, stats)?));
    out.push(Value::Tensor(ctx.out(rstd, stats)?));
    Ok(out)
}

/// The ATen entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch._add_relu", "Torch._add_relu_"],
        sig: "input, other, *, alpha=1",
        forward: add_relu,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch._softmax_backward_data"],
        sig: "grad_output, output, dim, input_dtype",
        forward: softmax_backward_data,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.native_layer_norm"],
        sig: "input, normalized_shape, weight, bias, eps",
        forward: native_layer_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.native_group_norm"],
        sig: "input, weight, bias, N, C, HxW, group, eps",
        forward: native_group_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.native_batch_norm"],
        sig: "input, weight, bias, running_mean, running_var, training, momentum, eps",
        forward: native_batch_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
];
