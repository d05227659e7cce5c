//! Comparisons, logical ops, elementwise maximum/minimum and `where`.
//! Comparisons and logical ops give bool tensors (judged exactly, no
//! gradient); maximum/minimum split the gradient of ties evenly, as torch
//! does.

use candle_core::{DType, Tensor};

use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::{broadcast2, operand, result_type, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// A candle comparison (a U8 mask) as a bool tensor in its storage.
fn as_bool(ctx: &Ctx, mask: Tensor) -> Result<T> {
    ctx.out(mask.to_dtype(DType::F64)?, TDType::Bool)
}

/// `input (op) other`, both promoted to their common dtype first (an int
/// tensor against 2.5 compares as floats), broadcast; a bool result.
fn compare(ctx: &Ctx, b: &Bound, f: fn(&Tensor, &Tensor) -> candle_core::Result<Tensor>) -> Result<Vec<Value>> {
    let (a, o) = (b.value("input"), b.value("other"));
    let dtype = result_type(&[a, o])?;
    let (x, y) = broadcast2(&operand(ctx, a, dtype)?, &operand(ctx, o, dtype)?)?;
    one(as_bool(ctx, f(&x, &y)?)?)
}

/// An operand of a logical op: nonzero is true (NaN included), as a 0/1 mask.
fn truth(ctx: &Ctx, v: &Value) -> Result<Tensor> {
    let dtype = result_type(&[v])?;
    Ok(operand(ctx, v, dtype)?.ne(0.0)?.to_dtype(DType::F64)?)
}

/// logical_and/or/xor over the truth of both operands, broadcast.
fn logical(ctx: &Ctx, b: &Bound, f: fn(&Tensor, &Tensor) -> candle_core::Result<Tensor>) -> Result<Vec<Value>> {
    let (x, y) = broadcast2(&truth(ctx, b.value("input"))?, &truth(ctx, b.value("other"))?)?;
    one(as_bool(ctx, f(&x, &y)?)?)
}

fn logical_not(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    one(as_bool(ctx, truth(ctx, b.value("input"))?.eq(0.0)?)?)
}

/// Elementwise maximum (or minimum) with torch's rules: the picked side
/// takes the gradient, where both are equal each takes half (the value
/// stays exactly the tied one), and NaN on either side propagates with the
/// gradient to both.
pub(super) fn extreme(ctx: &Ctx, b: &Bound, max: bool) -> Result<Vec<Value>> {
    let (a, o) = (b.value("input"), b.value("other"));
    if !matches!((a, o), (Value::Tensor(_), Value::Tensor(_))) {
        return Err(Error::Arg(format!("maximum/minimum: expects two tensors, got {} and {}", a.kind(), o.kind())));
    }
    let dtype = result_type(&[a, o])?;
    let (x, y) = broadcast2(&operand(ctx, a, dtype)?, &operand(ctx, o, dtype)?)?;
    let (xd, yd) = (x.detach(), y.detach());
    let picks_x = if max { xd.gt(&yd)? } else { xd.lt(&yd)? };
    let mut v = picks_x.where_cond(&x, &y)?;
    // Ties: the tied value, with half the gradient to each side. At
    // finite ties as xd + (s − s) with s = x/2 + y/2 (exactly xd, even for
    // subnormals); at infinite ties s itself (exactly ±inf).
    let half = ((&x * 0.5)? + (&y * 0.5)?)?;
    let finite = xd.abs()?.lt(f64::INFINITY)?;
    let zeros = x.zeros_like()?;
    let safe = ((finite.where_cond(&x, &zeros)? * 0.5)? + (finite.where_cond(&y, &zeros)? * 0.5)?)?;
    let split = finite.where_cond(&(&xd + (&safe - safe.detach())?)?, &half)?;
    v = xd.eq(&yd)?.where_cond(&split, &v)?;
    // NaN on either side: NaN, and the whole gradient to both sides (torch
    // masks neither, as NaN is neither greater nor smaller); x != x only for NaN.
    let nan = (xd.ne(&xd)?.to_dtype(DType::F64)? + yd.ne(&yd)?.to_dtype(DType::F64)?)?.gt(0.0)?;
    v = nan.where_cond(&(&x + &y)?, &v)?;
    one(ctx.out(v, dtype)?)
}

/// torch.where(condition, input, other), broadcasting all three; with the
/// condition alone, torch.nonzero(condition, as_tuple=True): one int64
/// tensor of indices per dim.
fn where_(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let cond = b.tensor("condition")?;
    let (x, y) = (b.value("input"), b.value("other"));
    match (x, y) {
        (Value::None, Value::None) => return nonzero(ctx, cond),
        (Value::None, _) | (_, Value::None) => return Err(Error::Arg("where: input and other must both be given, or neither".into())),
        _ => {}
    }
    let dtype = result_type(&[x, y])?;
    let (xt, yt) = broadcast2(&operand(ctx, x, dtype)?, &operand(ctx, y, dtype)?)?;
    let (c, xt) = broadcast2(&cond.t.ne(0.0)?, &xt)?;
    let (_, yt) = broadcast2(&c, &yt)?;
    one(ctx.out(c.where_cond(&xt, &yt)?, dtype)?)
}

/// The coordinates of the nonzero elements, one int64 tensor per dim, in
/// row-major order (a 0-d condition counts as one element of a 1-d one).
fn nonzero(ctx: &Ctx, cond: &T) -> Result<Vec<Value>> {
    let dims: Vec<usize> = if cond.rank() == 0 { vec![1] } else { cond.dims().to_vec() };
    let values = cond.to_f64_vec()?;
    let mut coords: Vec<Vec<f64>> = vec![vec![]; dims.len()];
    for (flat, v) in values.iter().enumerate() {
        if *v != 0.0 {
            let mut rest = flat;
            for (d, &n) in dims.iter().enumerate().rev() {
                coords[d].push((rest % n) as f64);
                rest /= n;
            }
        }
    }
    coords
        .into_iter()
        .map(|c| {
            let n = c.len();
            Ok(Value::Tensor(T::from_f64(c, &[n], TDType::I64, ctx.compute, &ctx.device)?))
        })
        .collect()
}

/// A comparison entry: `names` with the signature `input, other`.
const fn cmp_op(names: &'static [&'static str], forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig: "input, other", forward, backward: false, standard: Standard::Exact, random: false, facts: &[] }
}

/// The comparison, logical, maximum/minimum and where entries.
pub static OPS: &[Op] = &[
    cmp_op(&["Torch.eq", "Tensor.eq", "Tensor.__eq__", "Mint.eq", "MS.Functional.equal", "MS.Tensor.equal"], |c, b| compare(c, b, |x, y| x.eq(y))),
    cmp_op(&["Torch.ne", "Tensor.ne", "Tensor.__ne__", "Mint.ne"], |c, b| compare(c, b, |x, y| x.ne(y))),
    cmp_op(&["Torch.gt", "Tensor.gt", "Tensor.__gt__", "Mint.gt"], |c, b| compare(c, b, |x, y| x.gt(y))),
    cmp_op(&["Torch.ge", "Tensor.ge", "Tensor.__ge__", "Mint.ge"], |c, b| compare(c, b, |x, y| x.ge(y))),
    cmp_op(&["Torch.lt", "Tensor.lt", "Tensor.__lt__", "Mint.lt"], |c, b| compare(c, b, |x, y| x.lt(y))),
    cmp_op(&["Torch.le", "Tensor.le", "Tensor.__le__", "Mint.le"], |c, b| compare(c, b, |x, y| x.le(y))),
    cmp_op(&["Torch.logical_and", "Tensor.logical_and", "Mint.logical_and"], |c, b| logical(c, b, |x, y| x * y)),
    cmp_op(&["Torch.logical_or", "Tensor.logical_or", "Mint.logical_or"], |c, b| logical(c, b, |x, y| x.maximum(y))),
    cmp_op(&["Torch.logical_xor", "Tensor.logical_xor", "Mint.logical_xor"], |c, b| logical(c, b, |x, y| x.ne(y)?.to_dtype(DType::F64))),
    Op {
        names: &["Torch.logical_not", "Tensor.logical_not", "Mint.logical_not"],
        sig: "input",
        forward: logical_not,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.maximum", "Tensor.maximum", "Mint.maximum", "MS.Functional.maximum"],
        sig: "input, other",
        forward: |c, b| extreme(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.minimum", "Tensor.minimum", "Mint.minimum", "MS.Functional.minimum"],
        sig: "input, other",
        forward: |c, b| extreme(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    // Tensor.where(condition, y) is torch.where(condition, self, y).
    Op {
        names: &["Tensor.where"],
        sig: "input, condition, other",
        forward: where_,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.where", "Mint.where", "MS.Functional.where", "MS.Functional.select"],
        sig: "condition, input=None, other=None",
        forward: where_,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
];
