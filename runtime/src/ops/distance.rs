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
    let p = finite_p(b, "pairwise_distance")?;
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

/// The p-norm of `diff` over its last dim, finite at zero distance with a
/// zero gradient there (torch's cdist and pdist backward).
fn norm_last(diff: &Tensor, p: f64) -> Result<Tensor> {
    let last = diff.rank() - 1;
    let a = abs_t(diff)?;
    if p == 1.0 {
        return Ok(a.sum(last)?);
    }
    let s = if p == 2.0 { diff.sqr()?.sum(last)? } else { a.powf(p)?.sum(last)? };
    let zero = s.detach().eq(0.0)?;
    let safe = zero.where_cond(&s.ones_like()?, &s)?;
    let root = if p == 2.0 { safe.sqrt()? } else { safe.powf(1.0 / p)? };
    Ok(zero.where_cond(&s.zeros_like()?, &root)?)
}

/// dist(input, other, p=2): the p-norm of the broadcast difference, a
/// zero gradient where it is 0.
fn dist(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.value("input"), b.value("other"));
    let dtype = result_type(&[x, y])?;
    if !dtype.is_float() {
        return Err(Error::Arg(format!("dist only supports floating-point dtypes, got {}", dtype.name())));
    }
    let p = finite_p(b, "dist")?;
    let diff = operand(ctx, x, dtype)?.broadcast_sub(&operand(ctx, y, dtype)?)?;
    one(ctx.out(norm_last(&diff.flatten_all()?.unsqueeze(0)?, p)?.squeeze(0)?, dtype)?)
}

/// A finite positive `p`, or why not.
pub(super) fn finite_p(b: &Bound, what: &str) -> Result<f64> {
    let p = b.float("p")?;
    if !(p.is_finite() && p > 0.0) {
        return Err(Error::Unsupported(format!("{what} with p = {p} (only finite positive p)")));
    }
    Ok(p)
}

/// torch.cdist(x1, x2, p=2.0, compute_mode=None): the distances between
/// the rows of `[.., P, M]` and `[.., R, M]`. For p = 2 torch multiplies
/// matrices when a side has more than 25 rows (or `compute_mode` says so):
/// `√max(‖a‖² - 2a·b + ‖b‖², 1e-30)`, which cancels for near points; the
/// same composition here, so the float32 rounding it shows is the device's.
fn cdist(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x1, x2) = (b.value("x1"), b.value("x2"));
    let dtype = result_type(&[x1, x2])?;
    if !dtype.is_float() {
        return Err(Error::Arg(format!("cdist only supports floating-point dtypes, got {}", dtype.name())));
    }
    let (a, c) = (operand(ctx, x1, dtype)?, operand(ctx, x2, dtype)?);
    if a.rank() < 2 || c.rank() < 2 || a.dims()[a.rank() - 1] != c.dims()[c.rank() - 1] {
        return Err(Error::Arg(format!("cdist: x1 {:?} and x2 {:?} must be [.., P, M] and [.., R, M]", a.dims(), c.dims())));
    }
    let p = finite_p(b, "cdist")?;
    let (rows1, rows2) = (a.dims()[a.rank() - 2], c.dims()[c.rank() - 2]);
    let mode = if b.is_none("compute_mode") { "use_mm_for_euclid_dist_if_necessary" } else { b.str("compute_mode")? };
    let mm = p == 2.0 && (mode == "use_mm_for_euclid_dist" || (mode == "use_mm_for_euclid_dist_if_necessary" && (rows1 > 25 || rows2 > 25)));
    let out = if mm {
        let last = a.rank() - 1;
        let n1 = a.sqr()?.sum_keepdim(last)?;
        let n2 = c.sqr()?.sum_keepdim(last)?;
        let a_ = Tensor::cat(&[&(&a * -2.0)?, &n1, &n1.ones_like()?], last)?;
        let c_ = Tensor::cat(&[&c, &n2.ones_like()?, &n2], last)?;
        let r = a_.broadcast_matmul(&c_.transpose(last - 1, last)?)?;
        // clamp_min: torch passes the gradient where r >= 1e-30.
        let floor = r.ones_like()?.affine(1e-30, 0.0)?;
        r.ge(1e-30)?.where_cond(&r, &floor)?.sqrt()?
    } else {
        let diff = a.unsqueeze(a.rank() - 1)?.broadcast_sub(&c.unsqueeze(c.rank() - 2)?)?;
        norm_last(&diff, p)?
    };
    one(ctx.out(out, dtype)?)
}

/// pdist(input, p=2): the distances between the rows of `[N, M]`, `i < j`
/// in row-major order.
fn pdist(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if !x.dtype.is_float() {
        return Err(Error::Arg(format!("pdist only supports floating-point dtypes, got {}", x.dtype.name())));
    }
    let (n, _) = x.t.dims2().map_err(|_| Error::Arg(format!("pdist: expected a 2-D input, got {:?}", x.dims())))?;
    let p = finite_p(b, "pdist")?;
    let pairs: Vec<(u32, u32)> = (0..n as u32).flat_map(|i| (i + 1..n as u32).map(move |j| (i, j))).collect();
    let (first, second): (Vec<u32>, Vec<u32>) = pairs.into_iter().unzip();
    let k = first.len();
    let rows = |idx: Vec<u32>| -> Result<Tensor> { Ok(x.t.index_select(&Tensor::from_vec(idx, k, x.t.device())?, 0)?) };
    let diff = (rows(first)? - rows(second)?)?;
    one(ctx.out(norm_last(&diff, p)?, x.dtype)?)
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
    Op {
        names: &["Torch.cdist", "MS.Functional.cdist"],
        sig: "x1, x2, p=2.0, compute_mode=None",
        forward: cdist,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.pdist", "Torch.pdist"],
        sig: "input, p=2",
        forward: pdist,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.dist", "MS.Functional.dist"],
        sig: "input, other, p=2",
        forward: dist,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
];
