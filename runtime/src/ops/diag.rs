//! Matrices from diagonals and back: `diag`, `diagflat`, `diag_embed`.
//! A vector becomes a diagonal as `v ⊙ I` padded with zeros for the offset,
//! so the gradient is autograd's (the diagonal's own elements); a matrix's
//! diagonal is read by `narrow`s.

use candle_core::Tensor;

use super::{one, Op, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, Ctx};
use crate::error::{Error, Result};
use crate::value::Value;

/// `[.., n]` → `[.., m, m]` with the last dim on the diagonal `offset`
/// (above the main one when positive), `m = n + |offset|`.
fn embed(v: &Tensor, offset: i64) -> Result<Tensor> {
    let n = v.dims()[v.rank() - 1];
    let eye = Tensor::eye(n, v.dtype(), v.device())?;
    let square = v.unsqueeze(v.rank())?.broadcast_mul(&eye)?;
    let k = offset.unsigned_abs() as usize;
    if k == 0 {
        return Ok(square);
    }
    let (rows, cols) = (square.rank() - 2, square.rank() - 1);
    Ok(if offset > 0 {
        square.pad_with_zeros(rows, 0, k)?.pad_with_zeros(cols, k, 0)?
    } else {
        square.pad_with_zeros(rows, k, 0)?.pad_with_zeros(cols, 0, k)?
    })
}

/// The diagonal `offset` of a matrix, a vector.
fn diagonal_of(m: &Tensor, offset: i64) -> Result<Tensor> {
    let (r, c) = m.dims2()?;
    let (r0, c0) = if offset >= 0 { (0, offset as usize) } else { (offset.unsigned_abs() as usize, 0) };
    let n = r.saturating_sub(r0).min(c.saturating_sub(c0));
    if n == 0 {
        return Ok(Tensor::zeros(0, m.dtype(), m.device())?);
    }
    let items = (0..n).map(|i| m.narrow(0, r0 + i, 1)?.narrow(1, c0 + i, 1)?.reshape(1)).collect::<candle_core::Result<Vec<Tensor>>>()?;
    Ok(Tensor::cat(&items, 0)?)
}

/// torch.diag(input, diagonal=0): a vector's diagonal matrix, or a matrix's diagonal.
fn diag(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let k = b.int("diagonal")?;
    let out = match x.rank() {
        1 => embed(&x.t, k)?,
        2 => diagonal_of(&x.t, k)?,
        r => return Err(Error::Arg(format!("diag: expected a 1-D or 2-D input, got {r}-D"))),
    };
    one(ctx.out(out, x.dtype)?)
}

/// torch.diagflat(input, offset=0): the flattened input on a diagonal.
fn diagflat(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    one(ctx.out(embed(&x.t.flatten_all()?, b.int("offset")?)?, x.dtype)?)
}

/// torch.diag_embed(input, offset=0, dim1=-2, dim2=-1): the last dim on the
/// diagonal of the plane (dim1, dim2) of a result one dim larger.
fn diag_embed(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() == 0 {
        return Err(Error::Arg("diag_embed: expected an input of at least one dimension".into()));
    }
    let rank = x.rank() + 1;
    let (d1, d2) = (dim(b.int("dim1")?, rank)?, dim(b.int("dim2")?, rank)?);
    if d1 == d2 {
        return Err(Error::Arg("diag_embed: dim1 and dim2 must differ".into()));
    }
    let square = embed(&x.t, b.int("offset")?)?;
    // The built planes are the last two dims: rows (dim1), columns (dim2).
    let mut rest = 0..rank - 2;
    let order: Vec<usize> = (0..rank)
        .map(|i| {
            if i == d1 {
                rank - 2
            } else if i == d2 {
                rank - 1
            } else {
                rest.next().unwrap_or_default()
            }
        })
        .collect();
    one(ctx.out(square.permute(order)?.contiguous()?, x.dtype)?)
}

/// The diagonal entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.diag", "MS.Functional.diag", "MS.Tensor.diag"],
        sig: "input, diagonal=0, *, out=None",
        forward: diag,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.diagflat"], sig: "input, offset=0", forward: diagflat, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.diag_embed"],
        sig: "input, offset=0, dim1=-2, dim2=-1",
        forward: diag_embed,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
];
