//! Shape, indexing and data-movement ops. Their results are judged exactly:
//! moving data must not change it.

use candle_core::Tensor;

use super::{one, Fact, Op, Rounding, Slicing, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, operand, result_type, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::ops::nn::indices;
use crate::value::{Value, T};

fn same(x: &T, t: Tensor) -> Vec<Value> {
    vec![Value::Tensor(T { t, dtype: x.dtype })]
}

/// A target shape with at most one -1, resolved against `numel`.
fn resolve_shape(shape: &[i64], numel: usize) -> Result<Vec<usize>> {
    let known: i64 = shape.iter().filter(|&&d| d != -1).product();
    let holes = shape.iter().filter(|&&d| d == -1).count();
    if holes > 1 || shape.iter().any(|&d| d < -1) {
        return Err(Error::Arg(format!("invalid shape {shape:?}")));
    }
    let out: Vec<usize> = shape
        .iter()
        .map(|&d| {
            if d == -1 {
                if known == 0 {
                    0
                } else {
                    numel / known as usize
                }
            } else {
                d as usize
            }
        })
        .collect();
    if out.iter().product::<usize>() != numel {
        return Err(Error::Arg(format!("shape {shape:?} is invalid for input of size {numel}")));
    }
    Ok(out)
}

fn reshape(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let shape = resolve_shape(&b.ints("shape")?, x.t.elem_count())?;
    Ok(same(x, x.t.reshape(shape)?))
}

fn permute(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = b.ints("dims")?.iter().map(|&d| dim(d, x.rank())).collect::<Result<Vec<_>>>()?;
    if dims.len() != x.rank() {
        return Err(Error::Arg(format!("permute: {} dims for a tensor of rank {}", dims.len(), x.rank())));
    }
    Ok(same(x, x.t.permute(dims)?))
}

/// transpose(input, dim0, dim1), or swapaxes(input, axis0, axis1): the
/// two dims named by the parameters `names`.
fn transpose(b: &Bound, names: [&str; 2]) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() < 2 {
        return Ok(same(x, x.t.clone()));
    }
    let (d0, d1) = (dim(b.int(names[0])?, x.rank())?, dim(b.int(names[1])?, x.rank())?);
    Ok(same(x, x.t.transpose(d0, d1)?))
}

/// The one input's gradient of a data-movement op: `moved_back(dy)` summed
/// into zeros (`+ 0`), as autograd gives it, where it has the input's shape
/// and dtype; `None` (autograd's) otherwise.
fn moved_back(x: &T, dy: &[Option<T>], back: impl FnOnce(&Tensor) -> candle_core::Result<Tensor>) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let Some(Some(dy)) = dy.first() else { return Ok(None) };
    if dy.t.dtype() != x.t.dtype() {
        return Ok(None);
    }
    let g = back(&dy.t)?;
    if g.dims() != x.dims() {
        return Ok(None);
    }
    Ok(Some(vec![("input", (g + 0.0)?)]))
}

/// transpose's [`super::Gradients`]: the output's gradient transposed back.
/// Below 2 dims the output is the input itself: autograd's.
fn transpose_gradients(b: &Bound, names: [&str; 2], dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let x = b.tensor("input")?;
    if x.rank() < 2 {
        return Ok(None);
    }
    let (d0, d1) = (dim(b.int(names[0])?, x.rank())?, dim(b.int(names[1])?, x.rank())?);
    // A gradient not of the output's shape comes back not of the input's.
    moved_back(x, dy, |g| if g.rank() == x.rank() { g.transpose(d0, d1) } else { Ok(g.clone()) })
}

/// reshape's [`super::Gradients`]: the output's gradient in the input's
/// shape. A reshape to the input's own shape is the input itself: autograd's.
fn reshape_gradients(_: &Ctx, b: &Bound, dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let x = b.tensor("input")?;
    let shape = resolve_shape(&b.ints("shape")?, x.t.elem_count())?;
    if shape == x.dims() || dy.first().and_then(Option::as_ref).is_some_and(|g| g.dims() != shape) {
        return Ok(None);
    }
    moved_back(x, dy, |g| g.reshape(x.dims()))
}

/// split's [`super::Gradients`]: the pieces' gradients joined along the
/// dim, each element its piece's gradient summed into zeros, as autograd
/// sums the pieces' zero-padded gradients. A piece without a gradient, or a
/// single piece (the input itself), is autograd's.
fn split_gradients(_: &Ctx, b: &Bound, dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let sizes = split_sizes(x.dims()[d], b, "split_size_or_sections")?;
    let Some(pieces) = dy.iter().map(Option::as_ref).collect::<Option<Vec<&T>>>() else { return Ok(None) };
    let fits = |(g, &s): (&&T, &usize)| {
        let mut want = x.dims().to_vec();
        want[d] = s;
        g.dims() == want && g.t.dtype() == x.t.dtype()
    };
    if sizes.len() < 2 || sizes.contains(&0) || pieces.len() != sizes.len() || !pieces.iter().zip(&sizes).all(fits) {
        return Ok(None);
    }
    let joined = Tensor::cat(&pieces.iter().map(|g| &g.t).collect::<Vec<_>>(), d)?;
    moved_back(x, &[Some(T { t: joined, dtype: x.dtype })], |g| Ok(g.clone()))
}

/// Tensor.t(): a 2-D tensor transposed; 0-D and 1-D ones as they are.
fn t_(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    match x.rank() {
        0 | 1 => Ok(same(x, x.t.clone())),
        2 => Ok(same(x, x.t.t()?)),
        r => Err(Error::Arg(format!("t: expects a tensor of at most 2 dims, got {r}"))),
    }
}

/// mindspore.Tensor.transpose(*axes): a numpy-style permutation.
fn ms_transpose(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let axes = b.ints("axes")?;
    let dims: Vec<usize> = if axes.is_empty() { (0..x.rank()).rev().collect() } else { axes.iter().map(|&d| dim(d, x.rank())).collect::<Result<_>>()? };
    Ok(same(x, x.t.permute(dims)?))
}

fn unsqueeze(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank() + 1)?;
    Ok(same(x, x.t.unsqueeze(d)?))
}

fn expand(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let sizes = b.ints("size")?;
    if sizes.len() < x.rank() {
        return Err(Error::Arg(format!("expand: {} sizes for a tensor of rank {}", sizes.len(), x.rank())));
    }
    let offset = sizes.len() - x.rank();
    let shape: Vec<usize> = sizes.iter().enumerate().map(|(i, &s)| if s == -1 && i >= offset { x.dims()[i - offset] } else { s.max(0) as usize }).collect();
    Ok(same(x, x.t.broadcast_as(shape)?))
}

/// broadcast_to(input, shape): `expand` with the shape as one argument
/// (-1 keeps a dim).
fn broadcast_to(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let sizes = b.ints("shape")?;
    if sizes.len() < x.rank() {
        return Err(Error::Arg(format!("broadcast_to: {} sizes for a tensor of rank {}", sizes.len(), x.rank())));
    }
    let offset = sizes.len() - x.rank();
    let shape: Vec<usize> = sizes.iter().enumerate().map(|(i, &s)| if s == -1 && i >= offset { x.dims()[i - offset] } else { s.max(0) as usize }).collect();
    ctx.fits(&shape)?;
    Ok(same(x, x.t.broadcast_as(shape)?))
}

/// narrow(input, dim, start, length): `length` elements from `start` (a
/// negative start counts from the end; it may be a 0-d tensor).
fn narrow(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let start = match b.value("start") {
        Value::Tensor(t) if t.t.elem_count() == 1 && !t.dtype.is_float() => t.to_f64_vec()?[0] as i64,
        _ => b.int("start")?,
    };
    let (n, length) = (x.dims()[d] as i64, b.int("length")?);
    let from = if start < 0 { start + n } else { start };
    if from < 0 || length < 0 || from + length > n {
        return Err(Error::Arg(format!("narrow: start {start} and length {length} out of range for a dim of size {n}")));
    }
    Ok(same(x, x.t.narrow(d, from as usize, length as usize)?))
}

/// mindspore.ops.assign(variable, value): the variable's new contents, the
/// value in the variable's dtype and shape.
fn assign(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (var, value) = (b.tensor("variable")?, b.tensor("value")?);
    let t = ctx.cast(value, var.dtype)?.t.broadcast_as(var.dims())?.contiguous()?;
    Ok(same(var, t))
}

fn split_sizes(total: usize, b: &Bound, key: &str) -> Result<Vec<usize>> {
    match b.value(key) {
        Value::List(_) => {
            let sizes: Vec<usize> = b.ints(key)?.iter().map(|&s| s.max(0) as usize).collect();
            if sizes.iter().sum::<usize>() != total {
                return Err(Error::Arg(format!("split: sizes {sizes:?} do not sum to {total}")));
            }
            Ok(sizes)
        }
        _ => {
            let size = b.int(key)?;
            if size <= 0 {
                return Err(Error::Arg(format!("split: split_size must be positive, got {size}")));
            }
            let size = size as usize;
            Ok((0..total.div_ceil(size).max(1)).map(|i| size.min(total - (i * size).min(total))).collect())
        }
    }
}

fn pieces(x: &T, d: usize, sizes: &[usize]) -> Result<Vec<Value>> {
    let mut start = 0;
    let mut out = vec![];
    for &s in sizes {
        out.push(Value::Tensor(T { t: x.t.narrow(d, start, s)?, dtype: x.dtype }));
        start += s;
    }
    Ok(out)
}

fn split(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let sizes = split_sizes(x.dims()[d], b, "split_size_or_sections")?;
    pieces(x, d, &sizes)
}

fn chunk(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let chunks = b.int("chunks")?;
    if chunks <= 0 {
        return Err(Error::Arg(format!("chunk: chunks must be positive, got {chunks}")));
    }
    let total = x.dims()[d];
    let size = total.div_ceil(chunks as usize).max(1);
    let sizes: Vec<usize> = (0..total.div_ceil(size)).map(|i| size.min(total - i * size)).collect();
    pieces(x, d, &sizes)
}

fn stack(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let ts = b.tensors("tensors")?;
    let first = ts.first().ok_or_else(|| Error::Arg("stack: expects a non-empty list of tensors".into()))?;
    let d = dim(b.int("dim")?, first.rank() + 1)?;
    let dtype = ts.iter().map(|t| t.dtype).reduce(TDType::promote).unwrap_or(first.dtype);
    // Each piece is cast to the promoted dtype, as in torch.
    let parts = ts.iter().map(|t| Ok(ctx.cast(t, dtype)?.t)).collect::<Result<Vec<Tensor>>>()?;
    one(ctx.out(Tensor::stack(&parts, d)?, dtype)?)
}

fn cat(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let ts = b.tensors("tensors")?;
    let first = ts.first().ok_or_else(|| Error::Arg("cat: expects a non-empty list of tensors".into()))?;
    let d = dim(b.int("dim")?, first.rank())?;
    let dtype = ts.iter().map(|t| t.dtype).reduce(TDType::promote).unwrap_or(first.dtype);
    // Each piece is cast to the promoted dtype, as in torch.
    let parts = ts.iter().map(|t| Ok(ctx.cast(t, dtype)?.t)).collect::<Result<Vec<Tensor>>>()?;
    one(ctx.out(Tensor::cat(&parts, d)?, dtype)?)
}

/// triu/tril: keep elements on or above (below) the `diagonal`-th diagonal.
fn triangle(b: &Bound, upper: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() < 2 {
        return Err(Error::Arg("triu/tril: input must have at least 2 dimensions".into()));
    }
    let k = b.int("diagonal")?;
    let (r, c) = (x.dims()[x.rank() - 2], x.dims()[x.rank() - 1]);
    let keep: Vec<u8> = (0..r).flat_map(|i| (0..c).map(move |j| if upper { j as i64 - i as i64 >= k } else { j as i64 - i as i64 <= k } as u8)).collect();
    let mask = Tensor::from_vec(keep, (r, c), x.t.device())?.broadcast_as(x.dims())?;
    Ok(same(x, mask.where_cond(&x.t, &x.t.zeros_like()?)?))
}

fn masked_fill(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, mask) = (b.tensor("input")?, b.tensor("mask")?);
    // torch casts the value to the tensor's dtype (into an integer or bool
    // tensor 2.7 fills as 2; the fill used to keep the float value).
    let value = match b.value("value") {
        Value::Tensor(v) => ctx.cast(v, x.dtype)?.t,
        v => {
            let own = result_type(&[v])?;
            ctx.cast(&T { t: operand(ctx, v, own)?, dtype: own }, x.dtype)?.t
        }
    };
    let m = mask.t.ne(0.0)?.broadcast_as(x.dims())?;
    let fill = value.broadcast_as(x.dims())?;
    one(ctx.out(m.where_cond(&fill, &x.t)?, x.dtype)?)
}

/// torch.gather(input, dim, index).
fn gather(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, index) = (b.tensor("input")?, b.tensor("index")?);
    let d = dim(b.int("dim")?, x.rank())?;
    let idx = indices(index, x.dims()[d], "gather")?;
    // torch lets the index be smaller than the input in the other dims too;
    // the input is cut to the index's extent there, which gather never
    // reads past, so that the backward's scatter-add gets matching shapes
    // (it used to fail with a shape mismatch).
    let mut src = x.t.clone();
    for (i, &n) in index.dims().iter().enumerate() {
        if i != d && n < src.dims()[i] {
            src = src.narrow(i, 0, n)?;
        }
    }
    Ok(same(x, src.contiguous()?.gather(&idx, d)?))
}

/// index_select(input, dim, index): whole slices at 1-D indices.
fn index_select(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, index) = (b.tensor("input")?, b.tensor("index")?);
    let d = dim(b.int("dim")?, x.rank())?;
    let idx = indices(index, x.dims()[d], "index_select")?;
    Ok(same(x, x.t.index_select(&idx.flatten_all()?, d)?))
}

/// mindspore.ops.gather(input_params, input_indices, axis): whole slices.
fn ms_gather(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, index) = (b.tensor("input")?, b.tensor("input_indices")?);
    if b.int("batch_dims")? != 0 {
        return Err(Error::Unsupported("mindspore.ops.gather with batch_dims is not replayed".into()));
    }
    let d = dim(b.int("axis")?, x.rank())?;
    let idx = indices(index, x.dims()[d], "gather")?;
    let picked = x.t.index_select(&idx.flatten_all()?, d)?;
    let shape = [&x.dims()[..d], index.dims(), &x.dims()[d + 1..]].concat();
    Ok(same(x, picked.reshape(shape)?))
}

/// One index item of `x[idx] = value`, resolved to a range per dim.
fn setitem(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let items = match b.value("index") {
        Value::List(items) => items.clone(),
        other => vec![other.clone()],
    };
    let rank = x.rank();
    let explicit = items.iter().filter(|v| !matches!(v, Value::Ellipsis | Value::None)).count();
    let mut ranges: Vec<(usize, usize)> = vec![];
    // Dims indexed by an int: `x[index]` has no such dim.
    let mut int_dims: Vec<usize> = vec![];
    for item in &items {
        let d = ranges.len();
        match item {
            Value::Ellipsis => {
                for _ in 0..rank.saturating_sub(explicit) {
                    let n = x.dims()[ranges.len()];
                    ranges.push((0, n));
                }
            }
            Value::Slice(start, stop, step) => {
                if step.is_some_and(|s| s != 1) {
                    return Err(Error::Unsupported("__setitem__ with a slice step other than 1".into()));
                }
                let n = *x.dims().get(d).ok_or_else(|| Error::Arg("__setitem__: too many indices".into()))? as i64;
                let clampi = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
                let (s, e) = (start.map_or(0, clampi), stop.map_or(n, clampi));
                ranges.push((s as usize, e.max(s) as usize));
            }
            Value::Int(i) => {
                let n = *x.dims().get(d).ok_or_else(|| Error::Arg("__setitem__: too many indices".into()))? as i64;
                let i = if *i < 0 { i + n } else { *i };
                if i < 0 || i >= n {
                    return Err(Error::Arg(format!("__setitem__: index {i} out of range for size {n}")));
                }
                int_dims.push(d);
                ranges.push((i as usize, i as usize + 1));
            }
            other => return Err(Error::Unsupported(format!("__setitem__ with an index of type {}", other.kind()))),
        }
    }
    while ranges.len() < rank {
        let n = x.dims()[ranges.len()];
        ranges.push((0, n));
    }
    // Build a mask of the selected region and blend.
    let mut region = Tensor::ones(x.dims(), candle_core::DType::U8, x.t.device())?;
    for (d, &(s, e)) in ranges.iter().enumerate() {
        let n = x.dims()[d];
        let sel: Vec<u8> = (0..n).map(|i| (i >= s && i < e) as u8).collect();
        let mut shape = vec![1; rank];
        shape[d] = n;
        let sel = Tensor::from_vec(sel, shape, x.t.device())?.broadcast_as(x.dims())?;
        region = (region * sel)?;
    }
    let value = match b.value("value") {
        Value::Tensor(v) => {
            let sub: Vec<usize> = ranges.iter().map(|(s, e)| e - s).collect();
            // The value broadcasts to the shape of `x[index]`, as in torch
            // (x[1:, -1] = a [2] tensor), then the int-indexed dims come back as 1s.
            let indexed: Vec<usize> = sub.iter().enumerate().filter(|(d, _)| !int_dims.contains(d)).map(|(_, &n)| n).collect();
            let v = ctx.cast(v, x.dtype)?.t.broadcast_as(indexed)?.reshape(sub.as_slice())?;
            let mut full = x.t.zeros_like()?;
            // Place the value block at its offsets.
            let mut block = v.contiguous()?;
            for (d, &(s, _)) in ranges.iter().enumerate() {
                let n = x.dims()[d];
                let len = block.dims()[d];
                block = block.pad_with_zeros(d, s, n - s - len)?;
            }
            full = (full + block)?;
            full
        }
        v => operand(ctx, v, x.dtype)?.broadcast_as(x.dims())?,
    };
    one(ctx.out(region.where_cond(&value, &x.t)?, x.dtype)?)
}

fn identity(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    Ok(vec![b.value("input").clone()])
}

fn flatten(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() == 0 {
        return Ok(same(x, x.t.reshape(1)?));
    }
    let (s, e) = (dim(b.int("start_dim")?, x.rank())?, dim(b.int("end_dim")?, x.rank())?);
    let dims = x.dims();
    let shape = [&dims[..s], &[dims[s..=e].iter().product()], &dims[e + 1..]].concat();
    Ok(same(x, x.t.reshape(shape)?))
}

fn squeeze(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let t = match b.opt_int("dim")? {
        Some(d) => {
            let d = dim(d, x.rank())?;
            if x.rank() > 0 && x.dims()[d] == 1 {
                x.t.squeeze(d)?
            } else {
                x.t.clone()
            }
        }
        None => {
            let shape: Vec<usize> = x.dims().iter().copied().filter(|&n| n != 1).collect();
            x.t.reshape(shape)?
        }
    };
    Ok(same(x, t))
}

/// unbind(input, dim=0): the slices along `dim`, that dim removed.
fn unbind(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    (0..x.dims()[d]).map(|i| Ok(Value::Tensor(T { t: x.t.narrow(d, i, 1)?.squeeze(d)?, dtype: x.dtype }))).collect()
}

/// The sizes of tensor_split's pieces of a dim of `total`: `n` sections
/// (the first `total % n` one longer), or the pieces between indices.
fn section_sizes(total: usize, b: &Bound, key: &str) -> Result<Vec<usize>> {
    match b.value(key) {
        Value::List(_) => {
            let mut sizes = vec![];
            let mut at = 0usize;
            for i in b.ints(key)? {
                let i = if i < 0 { (i + total as i64).max(0) as usize } else { (i as usize).min(total) };
                sizes.push(i.saturating_sub(at));
                at = at.max(i);
            }
            sizes.push(total - at);
            Ok(sizes)
        }
        _ => {
            let n = b.int(key)?;
            if n <= 0 {
                return Err(Error::Arg(format!("tensor_split: sections must be positive, got {n}")));
            }
            let n = n as usize;
            Ok((0..n).map(|i| total / n + usize::from(i < total % n)).collect())
        }
    }
}

fn tensor_split(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    pieces(x, d, &section_sizes(x.dims()[d], b, "indices_or_sections")?)
}

/// hsplit, vsplit, dsplit: tensor_split along dim 1 (0 for a 1-D input), 0
/// or 2, whose sections must divide the dim.
fn direction_split(b: &Bound, which: usize) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = if which == 1 && x.rank() == 1 { 0 } else { which };
    if d >= x.rank() {
        return Err(Error::Arg(format!("a tensor of rank {} cannot be split along dim {d}", x.rank())));
    }
    let total = x.dims()[d];
    if let Value::Int(n) = b.value("indices_or_sections") {
        if *n <= 0 || total % *n as usize != 0 {
            return Err(Error::Arg(format!("dim {d} of size {total} cannot be split into {n} equal sections")));
        }
    }
    pieces(x, d, &section_sizes(total, b, "indices_or_sections")?)
}

/// The dims a parameter names: one int or a list.
fn dims_of(b: &Bound, key: &str, rank: usize) -> Result<Vec<usize>> {
    let ds = match b.value(key) {
        Value::List(_) => b.ints(key)?,
        _ => vec![b.int(key)?],
    };
    ds.iter().map(|&d| dim(d, rank)).collect()
}

/// movedim(input, source, destination).
fn movedim(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (src, dst) = (dims_of(b, "source", x.rank())?, dims_of(b, "destination", x.rank())?);
    if src.len() != dst.len() {
        return Err(Error::Arg(format!("movedim: {} source dims, {} destination dims", src.len(), dst.len())));
    }
    let mut order: Vec<Option<usize>> = vec![None; x.rank()];
    for (&s, &d) in src.iter().zip(&dst) {
        order[d] = Some(s);
    }
    let mut rest = (0..x.rank()).filter(|i| !src.contains(i));
    let perm: Vec<usize> = order.into_iter().map(|o| o.or_else(|| rest.next()).unwrap_or(0)).collect();
    Ok(same(x, x.t.permute(perm)?))
}

fn flip_dims(x: &T, dims: &[usize]) -> Result<Vec<Value>> {
    Ok(same(x, x.t.contiguous()?.flip(dims)?))
}

/// roll(input, shifts, dims=None): without dims, of the flattened tensor.
fn roll(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let shifts = match b.value("shifts") {
        Value::List(_) => b.ints("shifts")?,
        _ => vec![b.int("shifts")?],
    };
    if b.is_none("dims") {
        let flat = x.t.flatten_all()?;
        let n = flat.elem_count() as i64;
        let s = if n == 0 { 0 } else { shifts[0].rem_euclid(n) };
        return Ok(same(x, flat.roll(s as i32, 0)?.reshape(x.dims())?));
    }
    let dims = dims_of(b, "dims", x.rank())?;
    if dims.len() != shifts.len() {
        return Err(Error::Arg(format!("roll: {} shifts for {} dims", shifts.len(), dims.len())));
    }
    let mut t = x.t.clone();
    for (&d, &s) in dims.iter().zip(&shifts) {
        let n = x.dims()[d] as i64;
        t = t.roll(if n == 0 { 0 } else { s.rem_euclid(n) as i32 }, d)?;
    }
    Ok(same(x, t))
}

/// rot90(input, k=1, dims=None): dims [0, 1] by default; k quarter turns from dims[0] toward dims[1].
fn rot90(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = if b.is_none("dims") { vec![dim(0, x.rank())?, dim(1, x.rank())?] } else { dims_of(b, "dims", x.rank())? };
    if dims.len() != 2 || dims[0] == dims[1] {
        return Err(Error::Arg(format!("rot90: expects two different dims, got {dims:?}")));
    }
    let (d0, d1) = (dims[0], dims[1]);
    let t = match b.int("k")?.rem_euclid(4) {
        1 => x.t.contiguous()?.flip(&[d1])?.transpose(d0, d1)?,
        2 => x.t.contiguous()?.flip(&[d0, d1])?,
        3 => x.t.transpose(d0, d1)?.contiguous()?.flip(&[d1])?,
        _ => x.t.clone(),
    };
    Ok(same(x, t))
}

/// `x` repeated `reps` times along each dim (leading dims added as needed).
fn repeated(ctx: &Ctx, x: &T, reps: &[i64]) -> Result<Vec<Value>> {
    if reps.iter().any(|&r| r < 0) {
        return Err(Error::Arg(format!("repeat: negative repeats {reps:?}")));
    }
    let rank = reps.len().max(x.rank());
    let mut shape = vec![1; rank - x.rank()];
    shape.extend_from_slice(x.dims());
    let reps: Vec<usize> = std::iter::repeat_n(1, rank - reps.len()).chain(reps.iter().map(|&r| r as usize)).collect();
    ctx.fits(&shape.iter().zip(&reps).map(|(s, r)| s * r).collect::<Vec<_>>())?;
    let mut t = x.t.reshape(shape.as_slice())?;
    for (d, &r) in reps.iter().enumerate() {
        if r != 1 {
            t = Tensor::cat(&vec![&t; r], d)?;
        }
    }
    Ok(same(x, t))
}

/// select(input, dim, index): one slice, that dim removed.
fn select(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let (n, i) = (x.dims()[d] as i64, b.int("index")?);
    let at = if i < 0 { i + n } else { i };
    if at < 0 || at >= n {
        return Err(Error::Arg(format!("select: index {i} out of range for a dim of size {n}")));
    }
    Ok(same(x, x.t.narrow(d, at as usize, 1)?.squeeze(d)?))
}

/// diagonal(input, offset=0, dim1=0, dim2=1): the diagonal moved to the last dim.
fn diagonal(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (d1, d2) = (dim(b.int("dim1")?, x.rank())?, dim(b.int("dim2")?, x.rank())?);
    if d1 == d2 {
        return Err(Error::Arg("diagonal: dim1 and dim2 must differ".into()));
    }
    let offset = b.int("offset")?;
    let rest: Vec<usize> = (0..x.rank()).filter(|&i| i != d1 && i != d2).collect();
    let t = x.t.permute([rest.clone(), vec![d1, d2]].concat())?;
    let (r, c) = (x.dims()[d1] as i64, x.dims()[d2] as i64);
    let (r0, c0) = if offset >= 0 { (0, offset) } else { (-offset, 0) };
    let n = (r - r0).min(c - c0).max(0) as usize;
    let k = rest.len();
    let items = (0..n)
        .map(|i| t.narrow(k, r0 as usize + i, 1)?.narrow(k + 1, c0 as usize + i, 1)?.squeeze(k + 1)?.squeeze(k))
        .collect::<candle_core::Result<Vec<Tensor>>>()?;
    let t = if items.is_empty() {
        let mut shape: Vec<usize> = rest.iter().map(|&i| x.dims()[i]).collect();
        shape.push(0);
        Tensor::zeros(shape, x.t.dtype(), x.t.device())?
    } else {
        Tensor::stack(&items, k)?
    };
    Ok(same(x, t))
}

/// atleast_1d/2d/3d of one tensor or of each of a list: 0-d → [1], 1-d →
/// [1, n] (2d), and a 3-D view that puts a 2-D [m, n] at [m, n, 1].
/// The tensors of a `*tensors` parameter, or of the one list given for it.
fn tensor_args(b: &Bound) -> Result<Vec<&T>> {
    tensor_list(b, "tensors")
}

/// The tensors of a `*name` parameter (or of one list passed to it).
pub(super) fn tensor_list<'a>(b: &'a Bound, name: &str) -> Result<Vec<&'a T>> {
    match b.value(name) {
        Value::List(items) => match items.as_slice() {
            [Value::List(inner)] => inner.iter().map(|v| v.tensor(name)).collect(),
            items => items.iter().map(|v| v.tensor(name)).collect(),
        },
        v => Ok(vec![v.tensor(name)?]),
    }
}

/// torch.broadcast_tensors(*tensors): each broadcast to their common shape.
fn broadcast_tensors(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let xs = tensor_args(b)?;
    let mut shape: Vec<usize> = vec![];
    for x in &xs {
        shape = crate::ctx::broadcast_shape(&shape, x.dims())?;
    }
    xs.iter().map(|x| Ok(Value::Tensor(T { t: x.t.broadcast_as(shape.as_slice())?.contiguous()?, dtype: x.dtype }))).collect()
}

/// torch.block_diag(*tensors): the tensors (a 0-D one as 1×1, a 1-D one as
/// a row) on the diagonal of a zero matrix, in their promoted dtype.
fn block_diag(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let xs = tensor_args(b)?;
    let values: Vec<&Value> = match b.value("tensors") {
        Value::List(items) => match items.as_slice() {
            [Value::List(inner)] => inner.iter().collect(),
            items => items.iter().collect(),
        },
        v => vec![v],
    };
    let dtype = result_type(&values)?;
    let mut blocks = vec![];
    for (x, v) in xs.iter().zip(&values) {
        let t = operand(ctx, v, dtype)?;
        blocks.push(match x.rank() {
            0 => t.reshape((1, 1))?,
            1 => t.reshape((1, x.dims()[0]))?,
            2 => t,
            r => return Err(Error::Arg(format!("block_diag: input tensors must have 2 or fewer dimensions, got {r}"))),
        });
    }
    let cols: usize = blocks.iter().map(|t| t.dims()[1]).sum();
    let mut before = 0;
    let mut rows = vec![];
    for t in &blocks {
        let w = t.dims()[1];
        rows.push(t.pad_with_zeros(1, before, cols - before - w)?);
        before += w;
    }
    let out = if rows.is_empty() { Tensor::zeros((0, 0), candle_core::DType::F64, &ctx.device)? } else { Tensor::cat(&rows, 0)? };
    one(ctx.out(out, dtype)?)
}

fn atleast(b: &Bound, rank: usize) -> Result<Vec<Value>> {
    let grow = |x: &T| -> Result<Value> {
        let d = x.dims();
        let shape: Vec<usize> = match (rank, d.len()) {
            (_, r) if r >= rank => d.to_vec(),
            (_, 0) => vec![1; rank],
            (2, 1) | (3, 1) => [vec![1], d.to_vec(), vec![1; rank - 2]].concat(),
            _ => [d.to_vec(), vec![1]].concat(),
        };
        Ok(Value::Tensor(T { t: x.t.reshape(shape)?, dtype: x.dtype }))
    };
    match b.value("tensors") {
        Value::List(items) if items.len() == 1 && matches!(items[0], Value::List(_)) => match &items[0] {
            Value::List(inner) => inner.iter().map(|v| grow(v.tensor("tensors")?)).collect(),
            _ => unreachable!(),
        },
        Value::List(items) if items.len() == 1 => Ok(vec![grow(items[0].tensor("tensors")?)?]),
        Value::List(items) => items.iter().map(|v| grow(v.tensor("tensors")?)).collect(),
        v => Ok(vec![grow(v.tensor("tensors")?)?]),
    }
}

/// hstack, vstack, dstack, column_stack: cat along 1 (0 for 1-D pieces), 0
/// after atleast_2d, 2 after atleast_3d; column_stack makes 1-D pieces columns.
fn stack_along(ctx: &Ctx, b: &Bound, how: &str) -> Result<Vec<Value>> {
    let ts = b.tensors("tensors")?;
    let first = ts.first().ok_or_else(|| Error::Arg("expects a non-empty list of tensors".into()))?;
    let dtype = ts.iter().map(|t| t.dtype).reduce(TDType::promote).unwrap_or(first.dtype);
    let shaped = |t: &T| -> Result<Tensor> {
        let c = ctx.cast(t, dtype)?.t;
        let d = t.dims().to_vec();
        Ok(match (how, d.len()) {
            ("v", 0) => c.reshape((1, 1))?,
            ("v", 1) => c.reshape((1, d[0]))?,
            ("d", 0) => c.reshape((1, 1, 1))?,
            ("d", 1) => c.reshape((1, d[0], 1))?,
            ("d", 2) => c.reshape((d[0], d[1], 1))?,
            ("c", 0) => c.reshape((1, 1))?,
            ("c", 1) => c.reshape((d[0], 1))?,
            ("h", 0) => c.reshape(1)?,
            _ => c,
        })
    };
    let parts = ts.iter().map(|t| shaped(t)).collect::<Result<Vec<Tensor>>>()?;
    let d = match how {
        "h" if parts[0].rank() == 1 => 0,
        "h" | "c" => 1,
        "v" => 0,
        _ => 2,
    };
    one(ctx.out(Tensor::cat(&parts, d)?, dtype)?)
}

/// unflatten(input, dim, sizes): one dim split into `sizes` (one may be -1).
fn unflatten(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let sizes = resolve_shape(&b.ints("sizes")?, x.dims()[d])?;
    let shape = [&x.dims()[..d], &sizes[..], &x.dims()[d + 1..]].concat();
    Ok(same(x, x.t.reshape(shape)?))
}

/// pad(input, pad, mode='constant', value=None): `pad` lists (before, after)
/// pairs from the last dim backward; negative amounts crop. Modes
/// 'constant' (`value`, 0 by default), 'replicate', 'reflect', 'circular'.
fn pad(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let amounts = b.ints("pad")?;
    let mode = if b.is_none("mode") { "constant" } else { b.str("mode")? };
    let value = if b.is_none("value") { 0.0 } else { b.float("value")? };
    if amounts.len() % 2 != 0 || amounts.len() / 2 > x.rank() {
        return Err(Error::Arg(format!("pad: {} amounts for a tensor of rank {}", amounts.len(), x.rank())));
    }
    let mut t = x.t.clone();
    for (k, pair) in amounts.chunks(2).enumerate() {
        let d = x.rank() - 1 - k;
        let (before, after) = (pair[0], pair[1]);
        // Crops first.
        let n = t.dims()[d] as i64;
        let (from, to) = ((-before).max(0), n - (-after).max(0));
        if to < from {
            return Err(Error::Arg(format!("pad: cropping {pair:?} more than dim {d} of size {n}")));
        }
        t = t.narrow(d, from as usize, (to - from) as usize)?;
        let n = t.dims()[d];
        let (before, after) = (before.max(0) as usize, after.max(0) as usize);
        if before == 0 && after == 0 {
            continue;
        }
        let edge = |count: usize, at_end: bool| -> Result<Tensor> {
            let mut shape = t.dims().to_vec();
            shape[d] = count;
            Ok(match mode {
                "constant" => ctx.full(&shape, value, x.dtype)?,
                "replicate" => t.narrow(d, if at_end { n - 1 } else { 0 }, 1)?.broadcast_as(shape)?.contiguous()?,
                "circular" if count <= n => t.narrow(d, if at_end { 0 } else { n - count }, count)?,
                "reflect" if count < n => {
                    let idx: Vec<u32> =
                        if at_end { (0..count).map(|i| (n - 2 - i) as u32).collect() } else { (0..count).map(|i| (count - i) as u32).collect() };
                    t.contiguous()?.index_select(&Tensor::new(idx, t.device())?, d)?
                }
                "circular" | "reflect" => return Err(Error::Arg(format!("pad: {mode} padding of {count} is too large for a dim of size {n}"))),
                m => return Err(Error::Arg(format!("pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {m:?}"))),
            })
        };
        let mut parts = vec![];
        if before > 0 {
            parts.push(edge(before, false)?);
        }
        parts.push(t.clone());
        if after > 0 {
            parts.push(edge(after, true)?);
        }
        t = Tensor::cat(&parts, d)?;
    }
    ctx.fits(t.dims())?;
    Ok(same(x, t))
}

/// The shape and data-movement entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Tensor.reshape", "Tensor.view"],
        sig: "input, *shape",
        forward: reshape,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[Fact::Gradients(reshape_gradients)],
    },
    Op {
        names: &["Torch.reshape", "Mint.reshape"],
        sig: "input, shape",
        forward: reshape,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Tensor.permute"], sig: "input, *dims", forward: permute, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.permute", "Mint.permute", "MS.Functional.transpose", "MS.Functional.permute"],
        sig: "input, dims",
        forward: permute,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.transpose", "Tensor.transpose", "Mint.transpose", "MS.Tensor.swapdims", "MS.Functional.swapdims"],
        sig: "input, dim0, dim1",
        forward: |_, b| transpose(b, ["dim0", "dim1"]),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[Fact::Gradients(|_, b, dy| transpose_gradients(b, ["dim0", "dim1"], dy))],
    },
    Op {
        names: &["Torch.swapaxes", "Tensor.swapaxes"],
        sig: "input, axis0, axis1",
        forward: |_, b| transpose(b, ["axis0", "axis1"]),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.t", "Tensor.t"], sig: "input", forward: t_, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op { names: &["MS.Tensor.transpose"], sig: "input, *axes", forward: ms_transpose, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.unsqueeze", "Tensor.unsqueeze", "Mint.unsqueeze", "MS.Functional.expand_dims"],
        sig: "input, dim",
        forward: unsqueeze,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.squeeze", "Tensor.squeeze", "Mint.squeeze"],
        sig: "input, dim=None",
        forward: squeeze,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Tensor.expand"], sig: "input, *size", forward: expand, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.broadcast_to", "Tensor.broadcast_to", "Mint.broadcast_to", "NPU.npu_broadcast"],
        sig: "input, shape",
        forward: broadcast_to,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.narrow", "Tensor.narrow", "Mint.narrow", "MS.Functional.narrow"],
        sig: "input, dim, start, length",
        forward: narrow,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["MS.Functional.assign"], sig: "variable, value", forward: assign, backward: false, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.split", "Tensor.split", "Mint.split", "MS.Functional.split"],
        sig: "input, split_size_or_sections, dim=0",
        forward: split,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[Fact::Gradients(split_gradients)],
    },
    Op {
        names: &["Torch.chunk", "Tensor.chunk", "Mint.chunk", "MS.Functional.chunk"],
        sig: "input, chunks, dim=0",
        forward: chunk,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.stack", "Mint.stack", "MS.Functional.stack"],
        sig: "tensors, dim=0",
        forward: stack,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.cat", "Mint.cat", "Torch.concat", "MS.Functional.cat"],
        sig: "tensors, dim=0",
        forward: cat,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.triu", "Tensor.triu", "Mint.triu"],
        sig: "input, diagonal=0",
        forward: |_, b| triangle(b, true),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.tril", "Tensor.tril", "Mint.tril", "MS.Functional.tril"],
        sig: "input, diagonal=0",
        forward: |_, b| triangle(b, false),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.masked_fill", "Tensor.masked_fill", "Mint.masked_fill", "MS.Functional.masked_fill"],
        sig: "input, mask, value",
        forward: masked_fill,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.gather", "Tensor.gather", "Mint.gather", "MS.Functional.gather_d", "MS.Functional.gather_elements", "MS.Tensor.gather_elements"],
        sig: "input, dim, index",
        forward: gather,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.index_select", "Tensor.index_select", "Mint.index_select"],
        sig: "input, dim, index",
        forward: index_select,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["MS.Functional.gather"],
        sig: "input, input_indices, axis, batch_dims=0",
        forward: ms_gather,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.__setitem__"],
        sig: "input, index, value",
        forward: setitem,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Kept), Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &[
            "Tensor.contiguous",
            "Tensor.clone",
            "Torch.clone",
            "Mint.clone",
            "Torch.resolve_neg",
            "Tensor.resolve_neg",
            "Tensor.conj_physical",
            "Torch.conj",
            "Torch.positive",
            "Torch.real",
            "MS.Functional.deepcopy",
            "MS.Tensor.copy",
            "MS.Functional.real",
            "MS.Tensor.real",
        ],
        sig: "input, memory_format=None",
        forward: identity,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.flatten", "Tensor.flatten", "Mint.flatten"],
        sig: "input, start_dim=0, end_dim=-1",
        forward: flatten,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.unbind", "MS.Functional.unbind", "MS.Tensor.unbind", "MS.Functional.unstack"],
        sig: "input, dim=0",
        forward: unbind,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.split_with_sizes", "Torch.unsafe_split_with_sizes"],
        sig: "input, split_sizes, dim=0",
        forward: |_, b| {
            let x = b.tensor("input")?;
            let d = dim(b.int("dim")?, x.rank())?;
            pieces(x, d, &split_sizes(x.dims()[d], b, "split_sizes")?)
        },
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.unsafe_split"],
        sig: "input, split_size, dim=0",
        forward: |_, b| {
            let x = b.tensor("input")?;
            let d = dim(b.int("dim")?, x.rank())?;
            pieces(x, d, &split_sizes(x.dims()[d], b, "split_size")?)
        },
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.unsafe_chunk"], sig: "input, chunks, dim=0", forward: chunk, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.tensor_split", "MS.Functional.tensor_split", "MS.Tensor.tensor_split"],
        sig: "input, indices_or_sections, dim=0",
        forward: tensor_split,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.hsplit", "MS.Functional.hsplit"],
        sig: "input, indices_or_sections",
        forward: |_, b| direction_split(b, 1),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.vsplit"],
        sig: "input, indices_or_sections",
        forward: |_, b| direction_split(b, 0),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.dsplit"],
        sig: "input, indices_or_sections",
        forward: |_, b| direction_split(b, 2),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.movedim"], sig: "input, source, destination", forward: movedim, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.flip", "MS.Functional.reverse"],
        sig: "input, dims",
        forward: |_, b| {
            let x = b.tensor("input")?;
            flip_dims(x, &dims_of(b, "dims", x.rank())?)
        },
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.fliplr"],
        sig: "input",
        forward: |_, b| flip_dims(b.tensor("input")?, &[1]),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.flipud"],
        sig: "input",
        forward: |_, b| flip_dims(b.tensor("input")?, &[0]),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.roll", "MS.Functional.roll"],
        sig: "input, shifts, dims=None",
        forward: roll,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.rot90", "MS.Functional.rot90", "MS.Tensor.rot90"],
        sig: "input, k=1, dims=None",
        forward: rot90,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.tile", "MS.Functional.tile", "MS.Tensor.tile"],
        sig: "input, dims",
        forward: |c, b| repeated(c, b.tensor("input")?, &b.ints("dims")?),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.repeat"],
        sig: "input, *repeats",
        forward: |c, b| {
            let x = b.tensor("input")?;
            let reps = b.ints("repeats")?;
            if reps.len() < x.rank() {
                return Err(Error::Arg(format!("repeat: {} repeats for a tensor of rank {}", reps.len(), x.rank())));
            }
            repeated(c, x, &reps)
        },
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.ravel"],
        sig: "input",
        forward: |_, b| {
            let x = b.tensor("input")?;
            Ok(same(x, x.t.flatten_all()?))
        },
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.view_as", "Tensor.reshape_as"],
        sig: "input, other",
        forward: |_, b| {
            let x = b.tensor("input")?;
            Ok(same(x, x.t.reshape(b.tensor("other")?.dims())?))
        },
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.expand_as"],
        sig: "input, other",
        forward: |_, b| {
            let x = b.tensor("input")?;
            Ok(same(x, x.t.broadcast_as(b.tensor("other")?.dims())?))
        },
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.select"], sig: "input, dim, index", forward: select, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.diagonal"],
        sig: "input, offset=0, dim1=0, dim2=1",
        forward: diagonal,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.narrow_copy"],
        sig: "input, dim, start, length",
        forward: narrow,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.broadcast_tensors"],
        sig: "*tensors",
        forward: broadcast_tensors,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.block_diag", "MS.Functional.block_diag"],
        sig: "*tensors",
        forward: block_diag,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.atleast_1d"], sig: "*tensors", forward: |_, b| atleast(b, 1), backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op { names: &["Torch.atleast_2d"], sig: "*tensors", forward: |_, b| atleast(b, 2), backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op { names: &["Torch.atleast_3d"], sig: "*tensors", forward: |_, b| atleast(b, 3), backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Torch.hstack"],
        sig: "tensors",
        forward: |c, b| stack_along(c, b, "h"),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.vstack"],
        sig: "tensors",
        forward: |c, b| stack_along(c, b, "v"),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.dstack"],
        sig: "tensors",
        forward: |c, b| stack_along(c, b, "d"),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.column_stack"],
        sig: "tensors",
        forward: |c, b| stack_along(c, b, "c"),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op { names: &["Torch.unflatten"], sig: "input, dim, sizes", forward: unflatten, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    Op {
        names: &["Functional.pad"],
        sig: "input, pad, mode='constant', value=None",
        forward: pad,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    // The constant mode of pad under its ATen name.
    Op { names: &["Torch.constant_pad_nd"], sig: "input, pad, value=0", forward: pad, backward: true, standard: Standard::Exact, random: false, facts: &[] },
];
