//! `cov` and `corrcoef`: the covariance matrix of variables in rows and
//! observations in columns (one variable for a 1-D input), composed as
//! torch's `Correlation.cpp` does (weighted mean, centred product, the
//! normalization `Σw - correction`, or with `aweights` `Σw - correction·Σ(w·a)/Σw`),
//! so that the gradient is autograd's; `corrcoef` divides by the
//! standard deviations and clips to [-1, 1].

use candle_core::Tensor;

use super::{one, Op, Standard};
use crate::bind::Bound;
use crate::ctx::{operand, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::Value;

/// The covariance of a `[vars, obs]` (or `[obs]`) input, `[vars, vars]`
/// squeezed as torch's, and the result's dtype.
fn covariance(ctx: &Ctx, b: &Bound, correction: f64, fweights: Option<Tensor>, aweights: Option<Tensor>) -> Result<(Tensor, TDType)> {
    let x = b.tensor("input")?;
    if x.rank() > 2 {
        return Err(Error::Arg(format!("cov: expected a tensor of at most 2 dims, got {:?}", x.dims())));
    }
    let dtype = if x.dtype.is_float() { x.dtype } else { TDType::F32 };
    let t = operand(ctx, b.value("input"), dtype)?;
    let t = if x.rank() < 2 { t.reshape((1, t.elem_count()))? } else { t };
    let obs = t.dims()[1];
    let w = match (fweights, aweights.clone()) {
        (Some(f), Some(a)) => Some((f * a)?),
        (f, a) => f.or(a),
    };
    let w_sum = match &w {
        Some(w) => w.sum_all()?,
        None => Tensor::new(obs as f64, t.device())?.to_dtype(t.dtype())?,
    };
    let weighted = |v: &Tensor| -> Result<Tensor> {
        Ok(match &w {
            Some(w) => v.broadcast_mul(&w.unsqueeze(0)?)?,
            None => v.clone(),
        })
    };
    let avg = weighted(&t)?.sum_keepdim(1)?.broadcast_div(&w_sum)?;
    let norm = match (&w, &aweights) {
        (Some(w), Some(a)) if correction != 0.0 => (&w_sum - ((w * a)?.sum_all()? / &w_sum)?.affine(correction, 0.0)?)?,
        _ => w_sum.affine(1.0, -correction)?,
    };
    // torch warns and divides by zero (inf or NaN) where the factor is not positive.
    let norm = norm.relu()?;
    let centered = t.broadcast_sub(&avg)?;
    let c = centered.matmul(&weighted(&centered)?.t()?)?.broadcast_div(&norm)?;
    let c = if x.rank() < 2 { c.squeeze(0)?.squeeze(0)? } else { c };
    Ok((c, dtype))
}

/// The float weight tensor argument `name` as an operand of `dtype`, if given.
fn weights(ctx: &Ctx, b: &Bound, name: &str, dtype: TDType) -> Result<Option<Tensor>> {
    match b.value(name) {
        Value::None => Ok(None),
        v => Ok(Some(operand(ctx, v, dtype)?)),
    }
}

/// `cov(input, *, correction=1, fweights=None, aweights=None)`.
fn cov(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = if b.tensor("input")?.dtype.is_float() { b.tensor("input")?.dtype } else { TDType::F32 };
    let (f, a) = (weights(ctx, b, "fweights", dtype)?, weights(ctx, b, "aweights", dtype)?);
    let (c, dtype) = covariance(ctx, b, b.float("correction")?, f, a)?;
    one(ctx.out(c, dtype)?)
}

/// `corrcoef(input)`: the covariance over the outer product of the
/// standard deviations, clipped to [-1, 1].
fn corrcoef(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (c, dtype) = covariance(ctx, b, 1.0, None, None)?;
    if c.rank() == 0 {
        // torch divides the 0-d covariance by itself (NaN for a constant input).
        return one(ctx.out(c.broadcast_div(&c)?, dtype)?);
    }
    let n = c.dims()[0];
    let eye = Tensor::eye(n, c.dtype(), c.device())?;
    let std = (&c * eye)?.sum(1)?.sqrt()?;
    let r = c.broadcast_div(&std.unsqueeze(1)?)?.broadcast_div(&std.unsqueeze(0)?)?;
    one(ctx.out(r.clamp(-1.0, 1.0)?, dtype)?)
}

/// The covariance entries (the Tensor methods by rule).
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.cov"],
        sig: "input, *, correction=1, fweights=None, aweights=None",
        forward: cov,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.corrcoef"], sig: "input", forward: corrcoef, backward: true, standard: Standard::Accuracy, random: false, facts: &[] },
];
