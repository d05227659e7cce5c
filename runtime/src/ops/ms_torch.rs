//! MindSpore's own functions (`mindspore.ops.X`, dumped `Functional.X`) that
//! are a torch function under other arguments or another result dtype:
//! `ops.flatten` keeps the batch dimension, `ops.max` returns the index
//! too, `ops.argsort` gives int32, `ops.dot` contracts like NumPy's. Each
//! entry rebinds its call to the torch entry ([`super::rebind`]) and adjusts the
//! result, so the arithmetic (and its gradient) has one home. Their cases
//! run in MindSpore itself (runtime/tests/agreement/cases.py, `ms_case`).

use super::ms_array::ints;
use super::{rebind as torch, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

fn input(b: &Bound) -> Result<Value> {
    Ok(Value::Tensor(b.tensor("input")?.clone()))
}

/// The `i`-th output cast to `dtype` (MindSpore's int32 indices, float32 counts).
fn cast_output(ctx: &Ctx, mut out: Vec<Value>, i: usize, dtype: TDType) -> Result<Vec<Value>> {
    if let Some(Value::Tensor(t)) = out.get(i) {
        out[i] = Value::Tensor(ctx.cast(t, dtype)?);
    }
    Ok(out)
}

/// `flatten(input, order='C', *, start_dim=1, end_dim=-1)`: only row-major order.
fn flatten(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.str("order")? != "C" {
        return Err(Error::Unsupported("mindspore.ops.flatten with order='F' is not replayed".into()));
    }
    torch(ctx, "Torch.flatten", vec![input(b)?, b.value("start_dim").clone(), b.value("end_dim").clone()], &[])
}

/// `argmin(input, axis=None, keepdims=False)`: int32 indices.
fn argmin(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let out = torch(ctx, "Torch.argmin", vec![input(b)?, b.value("dim").clone(), b.value("keepdims").clone()], &[])?;
    cast_output(ctx, out, 0, TDType::I32)
}

/// `max`/`min(input, axis=None, keepdims=False, *, initial=None, where=None)`:
/// the values and their int64 indices. Without an axis MindSpore (2.10)
/// returns the extreme of the whole tensor as a 0-d tensor, `keepdims`
/// ignored, and 0 as its index wherever the extreme is: so does the replay.
fn extreme(ctx: &Ctx, b: &Bound, max: bool) -> Result<Vec<Value>> {
    if !b.is_none("initial") || !b.is_none("where") {
        return Err(Error::Unsupported("mindspore.ops.max/min with initial or where is not replayed".into()));
    }
    let api = if max { "Torch.max" } else { "Torch.min" };
    let keep = b.bool("keepdims")?;
    if !b.is_none("dim") {
        return torch(ctx, api, vec![input(b)?, b.value("dim").clone(), Value::Bool(keep)], &[]);
    }
    let mut out = torch(ctx, api, vec![input(b)?], &[])?;
    out.push(Value::Tensor(T::from_f64(vec![0.0], &[], TDType::I64, ctx.compute, &ctx.device)?));
    Ok(out)
}

/// `median(input, axis=-1, keepdims=False)`: values and int64 indices.
fn median(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    torch(ctx, "Torch.median", vec![input(b)?, b.value("dim").clone(), b.value("keepdims").clone()], &[])
}

/// `aminmax(input, *, axis=0, keepdims=False)`.
fn aminmax(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    torch(ctx, "Torch.aminmax", vec![input(b)?], &[("dim", b.value("dim").clone()), ("keepdim", b.value("keepdims").clone())])
}

/// `argsort(input, axis=-1, descending=False)`: int32 indices.
fn argsort(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let out = torch(ctx, "Torch.argsort", vec![input(b)?, b.value("dim").clone(), b.value("descending").clone()], &[])?;
    cast_output(ctx, out, 0, TDType::I32)
}

/// `cummin(input, axis)`: int32 indices (cummax's are int64).
fn cummin(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let out = torch(ctx, "Torch.cummin", vec![input(b)?, b.value("dim").clone()], &[])?;
    cast_output(ctx, out, 1, TDType::I32)
}

/// `sort(input_x, axis=-1, descending=False)`: values and int32 indices.
fn sort(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let out = torch(ctx, "Torch.sort", vec![input(b)?, b.value("dim").clone(), b.value("descending").clone()], &[])?;
    cast_output(ctx, out, 1, TDType::I32)
}

/// `bincount(input, weights=None, minlength=0)`: float32 counts, with or without weights.
fn bincount(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let out = torch(ctx, "Torch.bincount", vec![input(b)?, b.value("weights").clone(), b.value("minlength").clone()], &[])?;
    cast_output(ctx, out, 0, TDType::F32)
}

/// `count_nonzero(x, axis=(), keep_dims=False, dtype=int32)`: `()` counts over every axis.
fn count_nonzero(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let axes: Vec<usize> = match b.value("dim") {
        Value::List(v) if v.is_empty() => (0..x.rank()).collect(),
        Value::None => (0..x.rank()).collect(),
        _ => b.ints("dim")?.iter().map(|&d| crate::ctx::dim(d, x.rank())).collect::<Result<_>>()?,
    };
    let dims = Value::List(axes.iter().map(|&d| Value::Int(d as i64)).collect());
    let out = torch(ctx, "Torch.count_nonzero", vec![input(b)?, dims], &[])?;
    let out = if b.bool("keepdim")? {
        let shape: Vec<usize> = x.dims().iter().enumerate().map(|(i, &n)| if axes.contains(&i) { 1 } else { n }).collect();
        out.into_iter()
            .map(|v| match v {
                Value::Tensor(t) => Ok(Value::Tensor(T { t: t.t.reshape(shape.as_slice())?, dtype: t.dtype })),
                v => Ok(v),
            })
            .collect::<Result<Vec<_>>>()?
    } else {
        out
    };
    cast_output(ctx, out, 0, b.opt_dtype("dtype")?.unwrap_or(TDType::I32))
}

/// `dot(input, other)`: NumPy's dot, the last axis of `input` against the
/// second-to-last of `other` (its only axis when 1-D).
fn dot(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("input")?, b.tensor("other")?);
    if x.rank() == 0 || y.rank() == 0 {
        return Err(Error::Arg("mindspore.ops.dot: both inputs need a dimension".into()));
    }
    let contract = if y.rank() == 1 { 0 } else { y.rank() - 2 };
    let dims = Value::List(vec![Value::List(vec![Value::Int(x.rank() as i64 - 1)]), Value::List(vec![Value::Int(contract as i64)])]);
    torch(ctx, "Torch.tensordot", vec![input(b)?, b.value("other").clone(), dims], &[])
}

/// `norm(A, ord=None, dim=None, keepdim=False, *, dtype=None)`:
/// `torch.linalg.norm`, a vector norm or, over two axes (or of a matrix
/// with an `ord`), a matrix norm.
fn norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let a = b.tensor("input")?;
    let dims = b.value("dim");
    let two_axes = matches!(dims, Value::List(v) if v.len() == 2);
    let ord_given = !b.is_none("ord");
    if ord_given && matches!(dims, Value::None) && a.rank() == 2 && matches!(b.value("ord"), Value::Float(_)) {
        return Err(Error::Unsupported(
            "mindspore.ops.norm of a matrix with a float ord and no dim is not replayed (MindSpore 2.10 gives neither its matrix nor its vector norm)".into(),
        ));
    }
    let matrix = two_axes || (matches!(dims, Value::None) && ord_given && a.rank() == 2);
    let kwargs = [("keepdim", b.value("keepdim").clone()), ("dtype", b.value("dtype").clone())];
    if matrix {
        let ord = if b.is_none("ord") { Value::Str("fro".into()) } else { b.value("ord").clone() };
        let dims = if two_axes { dims.clone() } else { Value::List(vec![Value::Int(-2), Value::Int(-1)]) };
        return torch(ctx, "Torch.matrix_norm", vec![input(b)?, ord, dims], &kwargs);
    }
    let ord = if b.is_none("ord") { Value::Float(2.0) } else { b.value("ord").clone() };
    torch(ctx, "Torch.vector_norm", vec![input(b)?, ord, dims.clone()], &kwargs)
}

/// `matrix_solve(matrix, rhs, adjoint=False)`: A X = B, or Aᵀ X = B.
fn matrix_solve(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let a = b.tensor("matrix")?;
    let a = if b.bool("adjoint")? { T { t: a.t.t()?, dtype: a.dtype } } else { a.clone() };
    let mut out = torch(ctx, "Torch.solve_ex", vec![Value::Tensor(a), b.value("rhs").clone()], &[])?;
    out.truncate(1);
    Ok(out)
}

/// `cholesky(input_x, upper=False)`: the factor alone.
fn cholesky(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let mut out = torch(ctx, "Torch.cholesky_ex", vec![input(b)?], &[("upper", b.value("upper").clone())])?;
    out.truncate(1);
    Ok(out)
}

/// `truncate_div(x, y)`: the quotient rounded toward zero.
fn truncate_div(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    torch(ctx, "Torch.div", vec![input(b)?, b.value("other").clone()], &[("rounding_mode", Value::Str("trunc".into()))])
}

/// `col2im(input_x, output_size, kernel_size, dilation, padding_value, stride)`:
/// torch's `fold` of the `[N, C, kh·kw, L]` columns.
fn col2im(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let [n, c, k, l] = *x.dims() else { return Err(Error::Arg("col2im: input_x is [N, C, kh*kw, L]".into())) };
    let cols = T { t: x.t.reshape((n, c * k, l))?, dtype: x.dtype };
    let size = Value::List(ints(b.value("output_size"), "col2im")?.into_iter().map(Value::Int).collect());
    let args = [size, b.value("kernel_size").clone(), b.value("dilation").clone(), b.value("padding_value").clone(), b.value("stride").clone()];
    torch(ctx, "Functional.fold", [vec![Value::Tensor(cols)], args.to_vec()].concat(), &[])
}

/// `matrix_diag_part(x, k, padding_value, align)` of one diagonal: torch's `diagonal` of the last two axes.
fn matrix_diag_part(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let k = one_diagonal(b)?;
    torch(ctx, "Torch.diagonal", vec![input(b)?, Value::Int(k), Value::Int(-2), Value::Int(-1)], &[])
}

/// `matrix_set_diag(x, diagonal, k=0, align)` of one diagonal: torch's `diagonal_scatter`.
fn matrix_set_diag(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let k = one_diagonal(b)?;
    torch(ctx, "Torch.diagonal_scatter", vec![input(b)?, b.value("diagonal").clone(), Value::Int(k), Value::Int(-2), Value::Int(-1)], &[])
}

/// `matrix_diag(x, k=0, num_rows=-1, num_cols=-1, padding_value=0, align)`
/// of one diagonal in its own square: torch's `diag_embed`, the rest
/// `padding_value`.
fn matrix_diag(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let k = one_diagonal(b)?;
    let x = b.tensor("input")?;
    let side = x.dims().last().copied().unwrap_or(1) as i64 + k.abs();
    for p in ["num_rows", "num_cols"] {
        let n = ints(b.value(p), "matrix_diag")?;
        if !(n == [-1] || n == [side]) {
            return Err(Error::Unsupported(format!("matrix_diag with {p} other than the diagonal's own square is not replayed")));
        }
    }
    let mut out = torch(ctx, "Torch.diag_embed", vec![input(b)?, Value::Int(k), Value::Int(-2), Value::Int(-1)], &[])?;
    let pad = scalar_of(b.value("padding_value"))?;
    if pad != 0.0 {
        let Some(Value::Tensor(d)) = out.first() else { return Ok(out) };
        let ones = T { t: x.t.ones_like()?, dtype: x.dtype };
        let Some(Value::Tensor(mask)) =
            torch(ctx, "Torch.diag_embed", vec![Value::Tensor(ones), Value::Int(k), Value::Int(-2), Value::Int(-1)], &[])?.into_iter().next()
        else {
            return Ok(out);
        };
        let t = mask.t.ne(0.0)?.where_cond(&d.t, &(d.t.ones_like()? * pad)?)?;
        out[0] = Value::Tensor(ctx.out(t, d.dtype)?);
    }
    Ok(out)
}

/// The diagonal `k` names (an int or a 0-d int32 tensor); a band of diagonals is not replayed.
fn one_diagonal(b: &Bound) -> Result<i64> {
    match ints(b.value("k"), "k")?.as_slice() {
        [k] => Ok(*k),
        [lo, hi] if lo == hi => Ok(*lo),
        _ => Err(Error::Unsupported("a band of diagonals (k a pair) is not replayed".into())),
    }
}

fn scalar_of(v: &Value) -> Result<f64> {
    match v {
        Value::Tensor(t) => t.to_f64_vec()?.first().copied().ok_or_else(|| Error::Arg("an empty tensor for a scalar".into())),
        v => v.as_f64().ok_or_else(|| Error::Arg(format!("expected a number, got {}", v.kind()))),
    }
}

/// `hann_window(window_length, periodic=True, *, dtype=None)`: float64 by default in MindSpore.
fn hann_window(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = Value::DType(b.opt_dtype("dtype")?.unwrap_or(TDType::F64));
    torch(ctx, "Torch.hann_window", vec![b.value("window_length").clone(), b.value("periodic").clone()], &[("dtype", dtype)])
}

/// `bartlett_window`/`blackman_window(window_length, periodic=True, *, dtype=None)`:
/// the length a 0-d integer tensor.
fn window(ctx: &Ctx, b: &Bound, api: &str) -> Result<Vec<Value>> {
    let n = ints(b.value("window_length"), "window_length")?;
    let [n] = n[..] else { return Err(Error::Arg("window_length: one integer".into())) };
    torch(ctx, api, vec![Value::Int(n), b.value("periodic").clone()], &[("dtype", b.value("dtype").clone())])
}

/// An entry of MindSpore's own signature.
const fn ms(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, backward: bool, standard: Standard) -> Op {
    Op { names, sig, forward, backward, standard, random: false, facts: &[] }
}

/// The entries.
pub static OPS: &[Op] = &[
    ms(&["MS.Functional.flatten"], "input, order='C', *, start_dim=1, end_dim=-1", flatten, true, Standard::Exact),
    ms(&["MS.Functional.argmin"], "input, dim=None, keepdims=False", argmin, false, Standard::Exact),
    ms(&["MS.Functional.max"], "input, dim=None, keepdims=False, *, initial=None, where=None", |c, b| extreme(c, b, true), true, Standard::Exact),
    ms(&["MS.Functional.min"], "input, dim=None, keepdims=False, *, initial=None, where=None", |c, b| extreme(c, b, false), true, Standard::Exact),
    ms(&["MS.Functional.median", "MS.Tensor.median"], "input, dim=-1, keepdims=False", median, true, Standard::Exact),
    ms(&["MS.Functional.aminmax"], "input, *, dim=0, keepdims=False", aminmax, true, Standard::Exact),
    ms(&["MS.Functional.argsort", "MS.Tensor.argsort"], "input, dim=-1, descending=False", argsort, false, Standard::Exact),
    ms(&["MS.Functional.cummin", "MS.Tensor.cummin"], "input, dim", cummin, true, Standard::Exact),
    ms(&["MS.Functional.sort", "MS.Tensor.sort"], "input, dim=-1, descending=False", sort, true, Standard::Exact),
    ms(&["MS.Functional.bincount", "MS.Tensor.bincount"], "input, weights=None, minlength=0", bincount, false, Standard::Accuracy),
    ms(&["MS.Functional.count_nonzero"], "input, dim=(), keepdim=False, dtype=None", count_nonzero, false, Standard::Exact),
    ms(&["MS.Functional.dot"], "input, other", dot, true, Standard::Accuracy),
    ms(&["MS.Functional.norm"], "input, ord=None, dim=None, keepdim=False, *, dtype=None", norm, true, Standard::Accuracy),
    ms(&["MS.Functional.matrix_solve"], "matrix, rhs, adjoint=False", matrix_solve, true, Standard::Accuracy),
    ms(&["MS.Functional.cholesky", "MS.Tensor.cholesky"], "input, upper=False", cholesky, true, Standard::Accuracy),
    ms(&["MS.Functional.truncate_div"], "input, other", truncate_div, false, Standard::Accuracy),
    ms(&["MS.Functional.col2im"], "input, output_size, kernel_size, dilation, padding_value, stride", col2im, true, Standard::Accuracy),
    ms(&["MS.Functional.matrix_diag_part"], "input, k, padding_value, align='RIGHT_LEFT'", matrix_diag_part, true, Standard::Exact),
    ms(&["MS.Functional.matrix_set_diag"], "input, diagonal, k=0, align='RIGHT_LEFT'", matrix_set_diag, true, Standard::Exact),
    ms(&["MS.Functional.matrix_diag"], "input, k=0, num_rows=-1, num_cols=-1, padding_value=0, align='RIGHT_LEFT'", matrix_diag, true, Standard::Exact),
    ms(&["MS.Functional.hann_window"], "window_length, periodic=True, *, dtype=None", hann_window, false, Standard::Accuracy),
    ms(
        &["MS.Functional.bartlett_window"],
        "window_length, periodic=True, *, dtype=None",
        |c, b| window(c, b, "Torch.bartlett_window"),
        false,
        Standard::Accuracy,
    ),
    ms(
        &["MS.Functional.blackman_window"],
        "window_length, periodic=True, *, dtype=None",
        |c, b| window(c, b, "Torch.blackman_window"),
        false,
        Standard::Accuracy,
    ),
];
