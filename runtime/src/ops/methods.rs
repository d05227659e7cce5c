//! `Tensor` methods without a torch function of the same meaning:
//! `adjoint` (the last two dimensions swapped, a real tensor's conjugate
//! transpose), `sum_to_size` (a broadcast summed back to a shape) and
//! `isreal` (every element of a real tensor).

use candle_core::Tensor;

use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// `adjoint()`: the last two dimensions swapped.
fn adjoint(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() < 2 {
        return Err(Error::Arg(format!("adjoint: a tensor of at least 2 dimensions expected, got {:?}", x.dims())));
    }
    let r = x.rank();
    one(T { t: x.t.transpose(r - 2, r - 1)?.contiguous()?, dtype: x.dtype })
}

/// `sum_to_size(*size)`: the sums over the dimensions a broadcast to the
/// tensor's shape would have added or expanded.
fn sum_to_size(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let size: Vec<usize> = b.ints("size")?.into_iter().map(|s| s.max(0) as usize).collect();
    if size.len() > x.rank() {
        return Err(Error::Arg(format!("sum_to_size: size {size:?} is not expandable to {:?}", x.dims())));
    }
    let lead = x.rank() - size.len();
    let mut t = x.t.clone();
    for d in 0..lead {
        t = t.sum_keepdim(d)?;
    }
    for (i, &s) in size.iter().enumerate() {
        let d = lead + i;
        match (s, x.dims()[d]) {
            (a, b) if a == b => {}
            (1, _) => t = t.sum_keepdim(d)?,
            (a, b) => return Err(Error::Arg(format!("sum_to_size: size {a} does not broadcast to {b} at dimension {d}"))),
        }
    }
    one(ctx.out(t.reshape(size)?, x.dtype)?)
}

/// `isreal()`: true everywhere for a real tensor (complex ones are not replayed).
fn isreal(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    one(ctx.out(Tensor::ones(x.dims(), candle_core::DType::F64, &ctx.device)?, TDType::Bool)?)
}

/// The Tensor-method entries.
pub static OPS: &[Op] = &[
    Op { names: &["Tensor.adjoint"], sig: "input", forward: adjoint, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Tensor.sum_to_size"],
        sig: "input, *size",
        forward: sum_to_size,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op { names: &["Tensor.isreal"], sig: "input", forward: isreal, backward: false, standard: Standard::Exact, random: false, facts: &[] },
];
