//! Distances between two batches of vectors (`torch.nn.functional` and
//! their `torch` spellings): `cosine_similarity` and `pairwise_distance`,
//! the operands broadcast against each other.

use candle_core::Tensor;

use super::activation::abs_t;
use super::{one, Op, Standard};
use crate::bind::Bound;
use crate::ctx::{broadcast2, dim, operand, result_type, Ctx};
use crate::error::{Error, Result};
use crate::value::Value;

/// `x1` and `x2` in their common float dtype, broadcast to one shape.
fn operands(ctx: &Ctx, b: &Bound, what: &str) -> Result<(Tensor, Tensor, crate::dtype::TDType)> {
    let (x1, x2) = (b.value("x1"), b.value("x2"));
    let dtype = result_type(&[x1, x2])?;
    if !dtype.is_float() {
        return Err(Error::Arg(format!("{what} of {} tensors (torch needs a floating input)", dtype.name())));
    }
    let (x1, x2) = broadcast2(&operand(ctx, x1, dtype)?, &operand(ctx, x2, dtype)?)?;
    Ok((x1, x2, dtype))
}

/// cosine_similarity: `Σ (x1 / max(‖x1‖, eps)) · (x2 / max(‖x2‖, eps))`
/// along `dim` (torch's order: each operand normalized first).
fn cosine_similarity(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x1, x2, dtype) = operands(ctx, b, "cosine_similarity")?;
    let d = dim(b.int("dim")?, x1.rank())?;
    let eps = b.float("eps")?;
    // torch clamps the norms in place without recording it: the value is
    // max(‖x‖, eps), the gradient the norm's own.
    let unit = |x: &Tensor| -> candle_core::Result<Tensor> {
        let n = x.sqr()?.sum_keepdim(d)?.sqrt()?;
        let clamped = n.ge(eps)?.where_cond(&n, &n.ones_like()?.affine(eps, 0.0)?)?;
        x.broadcast_div(&(&n + (clamped - &n)?.detach())?)
    };
    let s = (unit(&x1)? * unit(&x2)?)?.sum(d)?;
    one(ctx.out(s, dtype)?)
}

/// pairwise_distance: `‖x1 - x2 + eps‖_p` along the last dimension.
fn pairwise_distance(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x1, x2, dtype) = operands(ctx, b, "pairwise_distance")?;
    let p = b.float("p")?;
    if !(p.is_finite() && p > 0.0) {
        return Err(Error::Unsupported(format!("pairwise_distance with p = {p} (only finite positive p)")));
    }
    one(ctx.out(p_distance(&x1, &x2, p, b.float("eps")?, b.bool("keepdim")?)?, dtype)?)
}

/// `‖x1 - x2 + eps‖_p` along the last dimension of two operands of one
/// shape (pairwise_distance's, and triplet_margin_loss's distances).
pub(super) fn p_distance(x1: &Tensor, x2: &Tensor, p: f64, eps: f64, keepdim: bool) -> Result<Tensor> {
    let (rank, last) = (x1.rank(), x1.rank().saturating_sub(1));
    let a = abs_t(&((x1 - x2)? + eps)?)?;
    let s = if p == 2.0 { a.sqr()?.sum_keepdim(last)?.sqrt()? } else { a.powf(p)?.sum_keepdim(last)?.powf(1.0 / p)? };
    Ok(if keepdim || rank == 0 { s } else { s.squeeze(last)? })
}

/// The distance entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Functional.cosine_similarity", "Torch.cosine_similarity"],
        sig: "x1, x2, dim=1, eps=1e-08",
        forward: cosine_similarity,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.pairwise_distance", "Torch.pairwise_distance"],
        sig: "x1, x2, p=2.0, eps=1e-06, keepdim=False",
        forward: pairwise_distance,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
];
