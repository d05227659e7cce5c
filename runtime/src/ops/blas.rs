//! The BLAS-style products: mm, bmm, addmm, baddbmm (`β·input + α·(a @ b)`),
//! with torch's rules: β = 0 ignores `input` (NaN in it does not
//! propagate), and the product is computed in the compute precision and
//! rounded once to the result dtype on the device.

use candle_core::Tensor;

use super::nn::float_pair;
use super::{one, Fact, Op, Rounding, Slicing, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// `a @ b` for rank-`rank` operands (2: mm, 3: bmm).
fn product(a: &T, b: &T, rank: usize, what: &str) -> Result<Tensor> {
    if a.rank() != rank || b.rank() != rank {
        return Err(Error::Arg(format!("{what}: expected {rank}-D tensors, got {:?} and {:?}", a.dims(), b.dims())));
    }
    Ok(a.t.matmul(&b.t)?)
}

fn mm(ctx: &Ctx, b: &Bound, first: &str, rank: usize, what: &str) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor(first)?, b.tensor("mat2")?);
    let dtype = float_pair(x, y, what)?;
    one(ctx.out(product(x, y, rank, what)?, dtype)?)
}

/// `beta * input + alpha * (a @ b)`.
fn add_product(ctx: &Ctx, b: &Bound, names: [&str; 2], rank: usize, what: &str) -> Result<Vec<Value>> {
    let (input, x, y) = (b.tensor("input")?, b.tensor(names[0])?, b.tensor(names[1])?);
    let dtype = float_pair(x, y, what)?;
    let (beta, alpha) = (b.float("beta")?, b.float("alpha")?);
    let p = product(x, y, rank, what)?;
    let p = if alpha == 1.0 { p } else { (p * alpha)? };
    let out = if beta == 0.0 {
        p
    } else {
        let i = if beta == 1.0 { input.t.clone() } else { (&input.t * beta)? };
        p.broadcast_add(&i)?
    };
    one(ctx.out(out, dtype)?)
}

/// The product entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.mm", "Tensor.mm", "Mint.mm", "MS.Functional.mm"],
        sig: "input, mat2",
        forward: |c, b| mm(c, b, "input", 2, "mm"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Product { a: "input", b: "mat2" }), Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Torch.bmm", "Tensor.bmm", "Mint.bmm"],
        sig: "input, mat2",
        forward: |c, b| mm(c, b, "input", 3, "bmm"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Product { a: "input", b: "mat2" }), Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    // mindspore.ops.bmm(input_x, mat2)
    Op {
        names: &["MS.Functional.bmm"],
        sig: "input_x, mat2",
        forward: |c, b| mm(c, b, "input_x", 3, "bmm"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Product { a: "input_x", b: "mat2" }), Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Torch.addmm", "Tensor.addmm", "Mint.addmm", "MS.Functional.addmm"],
        sig: "input, mat1, mat2, *, beta=1, alpha=1",
        forward: |c, b| add_product(c, b, ["mat1", "mat2"], 2, "addmm"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Product { a: "mat1", b: "mat2" }), Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Torch.baddbmm", "Tensor.baddbmm", "Mint.baddbmm"],
        sig: "input, batch1, batch2, *, beta=1, alpha=1",
        forward: |c, b| add_product(c, b, ["batch1", "batch2"], 3, "baddbmm"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Product { a: "batch1", b: "batch2" }), Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    // mindspore.ops.baddbmm takes beta and alpha positionally too.
    Op {
        names: &["MS.Functional.baddbmm"],
        sig: "input, batch1, batch2, beta=1, alpha=1",
        forward: |c, b| add_product(c, b, ["batch1", "batch2"], 3, "baddbmm"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Product { a: "batch1", b: "batch2" }), Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
];
