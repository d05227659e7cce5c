//! `Tensor` methods without a torch function of the same meaning:
//! `adjoint` (the last two dimensions swapped, a real tensor's conjugate
//! transpose), `sum_to_size` (a broadcast summed back to a shape) and
//! `isreal` (every element of a real tensor); `trace`; and the queries of
//! a tensor's size and kind (`numel`, `is_complex`, `is_signed`,
//! `is_tensor`), Python values judged exactly.

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

/// `trace()`: the sum of a matrix's diagonal, int64 for integer and bool
/// input as torch's; its gradient the identity's pattern.
fn trace(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let &[n, m] = x.dims() else {
        return Err(Error::Arg(format!("trace: a matrix expected, got shape {:?}", x.dims())));
    };
    let dtype = if x.dtype.is_float() { x.dtype } else { TDType::I64 };
    let eye = Tensor::eye(n.max(m), x.t.dtype(), x.t.device())?.narrow(0, 0, n)?.narrow(1, 0, m)?;
    one(ctx.out((&x.t * eye)?.sum_all()?, dtype)?)
}

/// `numel()` (`nelement()`): the element count, a Python int.
fn numel(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    Ok(vec![Value::Int(b.tensor("input")?.dims().iter().product::<usize>() as i64)])
}

/// `is_complex()`: false, since a complex tensor replays through the
/// complex entries (`ops::complex`), never this one.
fn is_complex(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    b.tensor("input")?;
    Ok(vec![Value::Bool(false)])
}

/// `is_signed()`: whether the dtype holds negative values.
fn is_signed(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let unsigned = [TDType::Bool, TDType::U8, TDType::U16, TDType::U32, TDType::U64];
    Ok(vec![Value::Bool(!unsigned.contains(&b.tensor("input")?.dtype))])
}

/// `torch.is_tensor(obj)`: whether the argument is a tensor.
fn is_tensor(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    Ok(vec![Value::Bool(matches!(b.value("obj"), Value::Tensor(_)))])
}

/// The entry of a query answered exactly, without a gradient.
const fn query(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: false, standard: Standard::Exact, random: false, facts: &[] }
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
    query(&["Tensor.isreal"], "input", isreal),
    Op {
        names: &["Torch.trace"],
        sig: "input",
        forward: trace,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    query(&["Torch.numel", "Tensor.nelement", "MS.Functional.size"], "input", numel),
    query(&["Torch.is_complex"], "input", is_complex),
    query(&["Tensor.is_signed"], "input", is_signed),
    query(&["Torch.is_tensor"], "obj", is_tensor),
];
