//! The BLAS-style products: mm, bmm, addmm, baddbmm (`β·input + α·(a @ b)`),
//! the vector forms (mv, dot, vdot, inner, addmv, addr) and addbmm (the
//! batch's products summed),
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
    let (x, y) = (b.tensor(names[0])?, b.tensor(names[1])?);
    let dtype = float_pair(x, y, what)?;
    one(ctx.out(scaled_sum(b, product(x, y, rank, what)?)?, dtype)?)
}

/// A matrix-vector product `[n, m] @ [m] -> [n]`.
fn mat_vec(a: &T, v: &T, what: &str) -> Result<Tensor> {
    if a.rank() != 2 || v.rank() != 1 {
        return Err(Error::Arg(format!("{what}: expected a 2-D matrix and a 1-D vector, got {:?} and {:?}", a.dims(), v.dims())));
    }
    Ok(a.t.matmul(&v.t.unsqueeze(1)?)?.squeeze(1)?)
}

/// `β·input + α·p`, torch's: β = 0 ignores `input`.
fn scaled_sum(b: &Bound, p: Tensor) -> Result<Tensor> {
    let input = b.tensor("input")?;
    let (beta, alpha) = (b.float("beta")?, b.float("alpha")?);
    let p = if alpha == 1.0 { p } else { (p * alpha)? };
    Ok(if beta == 0.0 {
        p
    } else {
        let i = if beta == 1.0 { input.t.clone() } else { (&input.t * beta)? };
        p.broadcast_add(&i)?
    })
}

/// torch.mv: `input @ vec`.
fn mv(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, v) = (b.tensor("input")?, b.tensor("vec")?);
    let dtype = float_pair(a, v, "mv")?;
    one(ctx.out(mat_vec(a, v, "mv")?, dtype)?)
}

/// torch.addmv: `β·input + α·(mat @ vec)`.
fn addmv(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, v) = (b.tensor("mat")?, b.tensor("vec")?);
    let dtype = float_pair(a, v, "addmv")?;
    one(ctx.out(scaled_sum(b, mat_vec(a, v, "addmv")?)?, dtype)?)
}

/// torch.addr: `β·input + α·(vec1 ⊗ vec2)`.
fn addr(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("vec1")?, b.tensor("vec2")?);
    let dtype = float_pair(x, y, "addr")?;
    if x.rank() != 1 || y.rank() != 1 {
        return Err(Error::Arg(format!("addr: expected 1-D vectors, got {:?} and {:?}", x.dims(), y.dims())));
    }
    let outer = x.t.unsqueeze(1)?.broadcast_mul(&y.t.unsqueeze(0)?)?;
    one(ctx.out(scaled_sum(b, outer)?, dtype)?)
}

/// torch.addbmm: `β·input + α·Σᵢ batch1[i] @ batch2[i]`.
fn addbmm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("batch1")?, b.tensor("batch2")?);
    let dtype = float_pair(x, y, "addbmm")?;
    let p = product(x, y, 3, "addbmm")?.sum(0)?;
    one(ctx.out(scaled_sum(b, p)?, dtype)?)
}

/// torch.dot and vdot (real tensors: the same): the sum of the products of
/// two 1-D tensors of one length.
fn dot(ctx: &Ctx, b: &Bound, other: &str, what: &str) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("input")?, b.tensor(other)?);
    let dtype = float_pair(x, y, what)?;
    if x.rank() != 1 || y.rank() != 1 || x.dims() != y.dims() {
        return Err(Error::Arg(format!("{what}: expected two 1-D tensors of one length, got {:?} and {:?}", x.dims(), y.dims())));
    }
    one(ctx.out((&x.t * &y.t)?.sum_all()?, dtype)?)
}

/// torch.inner: the sum over the last dimension of both, the result
/// `input.shape[:-1] + other.shape[:-1]`; a 0-D operand multiplies.
fn inner(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("input")?, b.tensor("other")?);
    let dtype = float_pair(x, y, "inner")?;
    if x.rank() == 0 || y.rank() == 0 {
        return one(ctx.out(x.t.broadcast_mul(&y.t)?, dtype)?);
    }
    let (k, l) = (x.dims()[x.rank() - 1], y.dims()[y.rank() - 1]);
    if k != l {
        return Err(Error::Arg(format!("inner: the last dimensions differ, {:?} and {:?}", x.dims(), y.dims())));
    }
    let (xs, ys) = (&x.dims()[..x.rank() - 1], &y.dims()[..y.rank() - 1]);
    let a = x.t.reshape((xs.iter().product::<usize>(), k))?;
    let c = y.t.reshape((ys.iter().product::<usize>(), k))?;
    let out = a.matmul(&c.t()?)?.reshape([xs, ys].concat())?;
    one(ctx.out(out, dtype)?)
}

/// torch.kron: the Kronecker product, the operands' ranks evened with
/// leading ones; `out[i·B + j] = a[i]·b[j]` per dim.
fn kron(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("input")?, b.tensor("other")?);
    let dtype = float_pair(x, y, "kron")?;
    let r = x.rank().max(y.rank());
    let lift = |d: &[usize]| -> Vec<usize> { [vec![1; r - d.len()], d.to_vec()].concat() };
    let (da, db) = (lift(x.dims()), lift(y.dims()));
    let a_shape: Vec<usize> = da.iter().flat_map(|&n| [n, 1]).collect();
    let b_shape: Vec<usize> = db.iter().flat_map(|&n| [1, n]).collect();
    let out = x.t.reshape(a_shape)?.broadcast_mul(&y.t.reshape(b_shape)?)?;
    let shape: Vec<usize> = da.iter().zip(&db).map(|(m, n)| m * n).collect();
    one(ctx.out(out.reshape(shape)?, dtype)?)
}

/// tensordot's contracted dims: the last `n` of `a` with the first `n` of
/// `b`, or two lists.
fn contracted(v: &Value, ra: usize, rb: usize) -> Result<(Vec<usize>, Vec<usize>)> {
    let norm = |d: i64, r: usize| crate::ctx::dim(d, r);
    match v {
        Value::Int(n) if *n >= 0 && (*n as usize) <= ra.min(rb) => Ok(((ra - *n as usize..ra).collect(), (0..*n as usize).collect())),
        Value::List(items) if items.len() == 2 => {
            let list = |v: &Value, r: usize| -> Result<Vec<usize>> {
                match v {
                    Value::List(xs) => xs.iter().map(|x| norm(x.as_i64().ok_or_else(|| Error::Arg("tensordot: dims must be ints".into()))?, r)).collect(),
                    x => Ok(vec![norm(x.as_i64().ok_or_else(|| Error::Arg("tensordot: dims must be ints".into()))?, r)?]),
                }
            };
            Ok((list(&items[0], ra)?, list(&items[1], rb)?))
        }
        v => Err(Error::Arg(format!("tensordot: dims must be an int or a pair of lists, got {}", v.kind()))),
    }
}

/// torch.tensordot(a, b, dims=2): the sum over the contracted dims, the
/// free dims of `a` then of `b`, as one matrix product.
fn tensordot(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("a")?, b.tensor("b")?);
    let dtype = float_pair(x, y, "tensordot")?;
    let (ca, cb) = contracted(b.value("dims"), x.rank(), y.rank())?;
    if ca.len() != cb.len() || ca.iter().zip(&cb).any(|(&i, &j)| x.dims()[i] != y.dims()[j]) {
        return Err(Error::Arg(format!("tensordot: contracted dims {ca:?} of {:?} and {cb:?} of {:?} do not match", x.dims(), y.dims())));
    }
    let fa: Vec<usize> = (0..x.rank()).filter(|i| !ca.contains(i)).collect();
    let fb: Vec<usize> = (0..y.rank()).filter(|i| !cb.contains(i)).collect();
    let k: usize = ca.iter().map(|&i| x.dims()[i]).product();
    let (m, n): (usize, usize) = (fa.iter().map(|&i| x.dims()[i]).product(), fb.iter().map(|&i| y.dims()[i]).product());
    let a = x.t.permute([fa.clone(), ca].concat())?.reshape((m, k))?;
    let c = y.t.permute([cb, fb.clone()].concat())?.reshape((k, n))?;
    let shape: Vec<usize> = fa.iter().map(|&i| x.dims()[i]).chain(fb.iter().map(|&i| y.dims()[i])).collect();
    one(ctx.out(a.matmul(&c)?.reshape(shape)?, dtype)?)
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
    Op {
        names: &["Torch.mv"],
        sig: "input, vec, *, out=None",
        forward: mv,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Torch.addmv", "MS.Functional.addmv", "MS.Tensor.addmv"],
        sig: "input, mat, vec, *, beta=1, alpha=1, out=None",
        forward: addmv,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Torch.addr"],
        sig: "input, vec1, vec2, *, beta=1, alpha=1, out=None",
        forward: addr,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Torch.addbmm"],
        sig: "input, batch1, batch2, *, beta=1, alpha=1, out=None",
        forward: addbmm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Torch.dot"],
        sig: "input, tensor, *, out=None",
        forward: |c, b| dot(c, b, "tensor", "dot"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.vdot"],
        sig: "input, other, *, out=None",
        forward: |c, b| dot(c, b, "other", "vdot"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.inner"],
        sig: "input, other, *, out=None",
        forward: inner,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.kron"],
        sig: "input, other, *, out=None",
        forward: kron,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.tensordot", "MS.Functional.tensor_dot"],
        sig: "a, b, dims=2, out=None",
        forward: tensordot,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
];
