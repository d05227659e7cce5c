//! Vector and matrix compositions of torch's namespace: the cross product
//! (`torch.cross`; msprobe records `torch.linalg.cross` under the same
//! name), `linalg.vecdot` and `linalg.multi_dot` (dumped by their last
//! names), `chain_matmul`, the trapezoid rule (`trapz`,
//! `cumulative_trapezoid`), and the index products `cartesian_prod` and
//! `combinations`; each from candle's differentiable ops, so autograd
//! gives their backward. `vander` is left out: msprobe records
//! `torch.vander` (decreasing powers) and `torch.linalg.vander`
//! (increasing) both as `Torch.vander`, and a 1-D call does not say which.

use candle_core::Tensor;

use super::shape::tensor_list;
use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::{broadcast2, dim, operand, result_type, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The two operands of a binary op, promoted together and broadcast.
fn pair(ctx: &Ctx, b: &Bound, names: [&str; 2]) -> Result<(Tensor, Tensor, TDType)> {
    let (x, y) = (b.value(names[0]), b.value(names[1]));
    let dtype = result_type(&[x, y])?;
    let (a, c) = broadcast2(&operand(ctx, x, dtype)?, &operand(ctx, y, dtype)?)?;
    Ok((a, c, dtype))
}

/// The cross product along `dim`. Without one, torch.cross takes the first
/// dimension of size 3 and linalg.cross the last, and msprobe records both
/// as `Torch.cross`: a call where the two differ is a `skip` saying so.
fn cross(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, c, dtype) = pair(ctx, b, ["input", "other"])?;
    let d = match b.opt_int("dim")? {
        Some(d) => dim(d, a.rank())?,
        None => {
            let first = a.dims().iter().position(|&n| n == 3).ok_or_else(|| Error::Arg(format!("cross: no dimension of size 3 in {:?}", a.dims())))?;
            if first + 1 != a.rank() {
                return Err(Error::Unsupported(format!(
                    "cross of {:?} without dim: torch.cross takes dimension {first}, torch.linalg.cross the last, and the dump names both Torch.cross",
                    a.dims()
                )));
            }
            first
        }
    };
    if a.dims()[d] != 3 {
        return Err(Error::Arg(format!("cross: dimension {d} of {:?} must have size 3", a.dims())));
    }
    let part = |t: &Tensor, i: usize| t.narrow(d, i, 1);
    let (a0, a1, a2) = (part(&a, 0)?, part(&a, 1)?, part(&a, 2)?);
    let (c0, c1, c2) = (part(&c, 0)?, part(&c, 1)?, part(&c, 2)?);
    let r0 = ((&a1 * &c2)? - (&a2 * &c1)?)?;
    let r1 = ((&a2 * &c0)? - (&a0 * &c2)?)?;
    let r2 = ((&a0 * &c1)? - (&a1 * &c0)?)?;
    one(ctx.out(Tensor::cat(&[&r0, &r1, &r2], d)?, dtype)?)
}

/// `linalg.vecdot(x, y, *, dim=-1)`: Σ x·y along `dim`, broadcast.
fn vecdot(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, c, dtype) = pair(ctx, b, ["x", "y"])?;
    let d = dim(b.int("dim")?, a.rank())?;
    one(ctx.out((a * c)?.sum(d)?, dtype)?)
}

/// The product of a list of matrices, left to right; `vectors`: a 1-D
/// first (last) operand is a row (column) and its dimension is dropped
/// from the result, as linalg.multi_dot does.
fn chain(ctx: &Ctx, b: &Bound, name: &str, vectors: bool) -> Result<Vec<Value>> {
    let xs = tensor_list(b, name)?;
    if xs.len() < 2 && vectors {
        return Err(Error::Arg(format!("multi_dot: expected at least 2 tensors, got {}", xs.len())));
    }
    let values: Vec<Value> = xs.iter().map(|x| Value::Tensor((*x).clone())).collect();
    let dtype = result_type(&values.iter().collect::<Vec<_>>())?;
    let last = xs.len() - 1;
    let (mut row, mut column) = (false, false);
    let mut product: Option<Tensor> = None;
    for (i, v) in values.iter().enumerate() {
        let mut t = operand(ctx, v, dtype)?;
        if vectors && t.rank() == 1 && i == 0 {
            t = t.unsqueeze(0)?;
            row = true;
        } else if vectors && t.rank() == 1 && i == last {
            t = t.unsqueeze(1)?;
            column = true;
        }
        if t.rank() != 2 {
            return Err(Error::Arg(format!("{name}: operand {i} must be a matrix, got {:?}", t.dims())));
        }
        product = Some(match product {
            None => t,
            Some(p) => p.matmul(&t)?,
        });
    }
    let mut p = product.ok_or_else(|| Error::Arg("chain_matmul: no matrices".into()))?;
    if column {
        p = p.squeeze(1)?;
    }
    if row {
        p = p.squeeze(0)?;
    }
    one(ctx.out(p, dtype)?)
}

/// The trapezoid pieces along `d`: `Δx·(yᵢ + yᵢ₊₁)/2`, Δx from `x` (the
/// same shape as y, or 1-D along `d`) or the scalar `dx` (1 by default).
fn trapezoids(ctx: &Ctx, b: &Bound) -> Result<(Tensor, usize, TDType)> {
    let y = b.tensor("y")?;
    let dtype = if y.dtype.is_float() { y.dtype } else { TDType::F32 };
    let y = operand(ctx, b.value("y"), dtype)?;
    let d = dim(b.int("dim")?, y.rank().max(1))?;
    let n = y.dims()[d];
    if n < 2 {
        let mut shape = y.dims().to_vec();
        shape[d] = 0;
        return Ok((Tensor::zeros(shape, y.dtype(), y.device())?, d, dtype));
    }
    let mean = ((y.narrow(d, 1, n - 1)? + y.narrow(d, 0, n - 1)?)? * 0.5)?;
    let pieces = if b.is_none("x") {
        let dx = if b.is_none("dx") { 1.0 } else { b.float("dx")? };
        (mean * dx)?
    } else {
        let x = operand(ctx, b.value("x"), dtype)?;
        let x = if x.rank() == 1 && y.rank() > 1 {
            let mut shape = vec![1; y.rank()];
            shape[d] = n;
            x.reshape(shape)?
        } else {
            x
        };
        let xd = if x.rank() == 1 { 0 } else { d };
        let steps = (x.narrow(xd, 1, n - 1)? - x.narrow(xd, 0, n - 1)?)?;
        mean.broadcast_mul(&steps)?
    };
    Ok((pieces, d, dtype))
}

/// `trapz(y, x=None, *, dx=None, dim=-1)`: the pieces summed.
fn trapz(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (pieces, d, dtype) = trapezoids(ctx, b)?;
    one(ctx.out(pieces.sum(d)?, dtype)?)
}

/// `cumulative_trapezoid(y, x=None, *, dx=None, dim=-1)`: their running sums.
fn cumulative_trapezoid(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (pieces, d, dtype) = trapezoids(ctx, b)?;
    let sums = if pieces.dims()[d] == 0 { pieces } else { pieces.cumsum(d)? };
    one(ctx.out(sums, dtype)?)
}

/// Rows of `tensors` picked by `rows` (one index list per tensor), stacked as columns.
fn picked(xs: &[&T], rows: &[Vec<u32>]) -> Result<Tensor> {
    let k = rows.first().map_or(0, Vec::len);
    let columns: Vec<Tensor> =
        xs.iter().zip(rows).map(|(x, idx)| Ok(x.t.index_select(&Tensor::from_vec(idx.clone(), k, x.t.device())?, 0)?.unsqueeze(1)?)).collect::<Result<_>>()?;
    Ok(Tensor::cat(&columns, 1)?)
}

/// `cartesian_prod(*tensors)`: every combination of one element of each 1-D
/// tensor, the last varying fastest; one tensor is itself.
fn cartesian_prod(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let xs = tensor_list(b, "tensors")?;
    if xs.iter().any(|x| x.rank() != 1) || xs.is_empty() {
        return Err(Error::Arg("cartesian_prod: expects 1-D tensors".into()));
    }
    if xs.len() == 1 {
        return Ok(vec![Value::Tensor(xs[0].clone())]);
    }
    let sizes: Vec<usize> = xs.iter().map(|x| x.dims()[0]).collect();
    let total: usize = sizes.iter().product();
    let mut rows = vec![Vec::with_capacity(total); xs.len()];
    for flat in 0..total {
        let mut rest = flat;
        for (i, &n) in sizes.iter().enumerate().rev() {
            rows[i].push((rest % n) as u32);
            rest /= n;
        }
    }
    one(T { t: picked(&xs, &rows)?, dtype: xs[0].dtype })
}

/// `combinations(input, r=2, with_replacement=False)`: the r-element
/// combinations of a 1-D tensor's elements, in lexicographic order of positions.
fn combinations(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (r, again) = (b.int("r")?, b.bool("with_replacement")?);
    if x.rank() != 1 || r < 1 {
        return Err(Error::Arg(format!("combinations: a 1-D input and r >= 1 expected, got {:?} and r = {r}", x.dims())));
    }
    let (n, r) = (x.dims()[0], r as usize);
    let mut rows = vec![vec![]; r];
    let mut pick: Vec<usize> = if again { vec![0; r] } else { (0..r).collect() };
    let valid = |p: &[usize]| p.last().is_some_and(|&l| l < n);
    while valid(&pick) {
        for (column, &i) in rows.iter_mut().zip(&pick) {
            column.push(i as u32);
        }
        // The next combination: the rightmost position that can still move.
        let mut j = r;
        while j > 0 {
            j -= 1;
            let room = if again { n - 1 } else { n - r + j };
            if pick[j] < room {
                pick[j] += 1;
                for k in j + 1..r {
                    pick[k] = if again { pick[j] } else { pick[k - 1] + 1 };
                }
                break;
            }
            if j == 0 {
                pick[r - 1] = n;
            }
        }
    }
    if rows[0].is_empty() {
        return one(T { t: Tensor::zeros((0, r), x.t.dtype(), x.t.device())?, dtype: x.dtype });
    }
    let same: Vec<&T> = vec![x; r];
    one(T { t: picked(&same, &rows)?, dtype: x.dtype })
}

/// A differentiable entry whose results are sums of products (class Sums).
const fn summed(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: false, facts: &[Fact::Rounding(Rounding::Sums)] }
}

/// The vector and matrix entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.cross", "MS.Functional.cross", "MS.Tensor.cross"],
        sig: "input, other, dim=None, *, out=None",
        forward: cross,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    summed(&["Torch.vecdot"], "x, y, *, dim=-1, out=None", vecdot),
    summed(&["Torch.chain_matmul"], "*matrices, out=None", |c, b| chain(c, b, "matrices", false)),
    summed(&["Torch.multi_dot"], "tensors, *, out=None", |c, b| chain(c, b, "tensors", true)),
    Op {
        names: &["Torch.trapz", "MS.Functional.trapz"],
        sig: "y, x=None, *, dx=None, dim=-1",
        forward: trapz,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.cumulative_trapezoid"],
        sig: "y, x=None, *, dx=None, dim=-1",
        forward: cumulative_trapezoid,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.cartesian_prod"], sig: "*tensors", forward: cartesian_prod, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.combinations"],
        sig: "input, r=2, with_replacement=False",
        forward: combinations,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
];
