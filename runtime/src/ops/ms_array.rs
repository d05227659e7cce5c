//! MindSpore's own array functions (`mindspore.ops`, dumped `Functional.X`),
//! which torch has no function for: TensorFlow-style slicing
//! (`slice`, `strided_slice`, `gather_nd`), scatters by row or by N-d index
//! (`tensor_scatter_*`, `scatter_*`, `scatter_nd_*`, `inplace_*`),
//! segment reductions, block rearrangements and small queries. Values are
//! moved exactly; where MindSpore differentiates (and the scatter is a
//! sum), the gradient comes from candle's autograd of the same moves.
//! Their cases run in MindSpore itself (tests/agreement/cases.py).

use candle_core::Tensor;

use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, operand, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// Integers from an int, a list of ints or an integer tensor.
pub(super) fn ints(v: &Value, what: &str) -> Result<Vec<i64>> {
    match v {
        Value::Tensor(t) => Ok(t.to_f64_vec()?.into_iter().map(|x| x as i64).collect()),
        Value::List(items) => items.iter().map(|i| i.as_i64().ok_or_else(|| Error::Arg(format!("{what}: expected ints, got {}", i.kind())))).collect(),
        v => v.as_i64().map(|i| vec![i]).ok_or_else(|| Error::Arg(format!("{what}: expected ints, got {}", v.kind()))),
    }
}

/// Row positions as the u32 index tensor candle's index ops take.
pub(super) fn u32s(v: &[usize], device: &candle_core::Device) -> Result<Tensor> {
    Ok(Tensor::from_vec(v.iter().map(|&i| i as u32).collect::<Vec<_>>(), v.len(), device)?)
}

fn out(ctx: &Ctx, t: Tensor, dtype: TDType) -> Result<Vec<Value>> {
    Ok(vec![Value::Tensor(ctx.out(t, dtype)?)])
}

/// The rows (flat positions over the first `k` dims of `dims`) an N-d
/// index tensor names, its last dim of size `k`; each checked in bounds.
fn nd_rows(dims: &[usize], indices: &T, what: &str) -> Result<(Vec<usize>, Vec<usize>)> {
    let k = *indices.dims().last().ok_or_else(|| Error::Arg(format!("{what}: indices need a last dimension")))?;
    if k == 0 || k > dims.len() {
        return Err(Error::Arg(format!("{what}: an index of {k} coordinates into a tensor of rank {}", dims.len())));
    }
    let idx = indices.to_f64_vec()?;
    let rows = idx
        .chunks(k)
        .map(|c| {
            c.iter().zip(dims).try_fold(0usize, |acc, (&i, &n)| {
                let i = i as i64;
                if i < 0 || i >= n as i64 {
                    return Err(Error::Arg(format!("{what}: index {i} is out of bounds for a dimension of {n}")));
                }
                Ok(acc * n + i as usize)
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let batch = indices.dims()[..indices.rank() - 1].to_vec();
    Ok((rows, batch))
}

/// Row indices along dim 0 (`scatter_*`, `inplace_*`), checked in bounds.
fn dim0_rows(n: usize, idx: Vec<i64>, what: &str) -> Result<Vec<usize>> {
    idx.into_iter()
        .map(|i| if i < 0 || i >= n as i64 { Err(Error::Arg(format!("{what}: index {i} is out of bounds for {n} rows"))) } else { Ok(i as usize) })
        .collect()
}

/// How a scatter combines a row with an update.
#[derive(Clone, Copy)]
pub(super) enum Combine {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    Update,
}

/// `x` (as rows of `inner` elements) with `updates`' rows combined into
/// `rows` in order. Sums go through candle's `index_add` (differentiable);
/// the others are computed in f64 (MindSpore replays them forward only).
fn scatter_rows(ctx: &Ctx, x: &T, rows: &[usize], updates: &Value, how: Combine, what: &str) -> Result<Vec<Value>> {
    let n_rows: usize = rows.len();
    let total = x.t.elem_count();
    let updates = operand(ctx, updates, x.dtype)?;
    if n_rows == 0 {
        return out(ctx, x.t.clone(), x.dtype);
    }
    let inner = updates.elem_count() / n_rows;
    if inner == 0 || !total.is_multiple_of(inner) {
        return Err(Error::Arg(format!("{what}: updates of shape {:?} do not fit rows of a tensor of shape {:?}", updates.dims(), x.dims())));
    }
    let flat = x.t.reshape((total / inner, inner))?;
    let upd = updates.reshape((n_rows, inner))?;
    let index = u32s(rows, x.t.device())?;
    let t = match how {
        Combine::Add => flat.index_add(&index, &upd, 0)?,
        Combine::Sub => flat.index_add(&index, &upd.neg()?, 0)?,
        _ => {
            let mut v = T { t: flat.clone(), dtype: x.dtype }.to_f64_vec()?;
            let u = T { t: upd, dtype: x.dtype }.to_f64_vec()?;
            let mut written = vec![false; total / inner];
            for (r, &row) in rows.iter().enumerate() {
                if matches!(how, Combine::Update) && std::mem::replace(&mut written[row], true) {
                    return Err(Error::Unsupported(format!("{what}: a row is updated more than once, and which write the device keeps is up to its kernel")));
                }
                for j in 0..inner {
                    let (a, b) = (v[row * inner + j], u[r * inner + j]);
                    v[row * inner + j] = match how {
                        Combine::Mul => a * b,
                        Combine::Div => a / b,
                        Combine::Max => a.max(b),
                        Combine::Min => a.min(b),
                        _ => b,
                    };
                }
            }
            return Ok(vec![Value::Tensor(T::from_f64(v, x.dims(), x.dtype, ctx.compute, &ctx.device)?)]);
        }
    };
    out(ctx, t.reshape(x.dims())?, x.dtype)
}

/// `tensor_scatter_*(input_x, indices, updates)` and `scatter_nd_*(..., use_locking)`.
pub(super) fn scatter_nd_into(ctx: &Ctx, b: &Bound, how: Combine) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (rows, _) = nd_rows(x.dims(), b.tensor("indices")?, "tensor_scatter")?;
    scatter_rows(ctx, x, &rows, b.value("updates"), how, "tensor_scatter")
}

/// `scatter_*(input_x, indices, updates)`: rows of dim 0.
fn scatter_dim0(ctx: &Ctx, b: &Bound, how: Combine) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let n = *x.dims().first().ok_or_else(|| Error::Arg("scatter: a 0-d input".into()))?;
    let rows = dim0_rows(n, ints(b.value("indices"), "scatter")?, "scatter")?;
    scatter_rows(ctx, x, &rows, b.value("updates"), how, "scatter")
}

/// `inplace_add/sub/update(x, v, indices)`: rows of dim 0 given as an int or a tuple.
fn inplace_rows(ctx: &Ctx, b: &Bound, how: Combine) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let n = *x.dims().first().ok_or_else(|| Error::Arg("inplace: a 0-d input".into()))?;
    let rows = dim0_rows(n, ints(b.value("indices"), "inplace")?, "inplace")?;
    scatter_rows(ctx, x, &rows, b.value("v"), how, "inplace")
}

/// `inplace_index_add(var, indices, updates, axis)`: torch's `index_add`.
fn inplace_index_add(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("var")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let rows = dim0_rows(x.dims()[d], ints(b.value("indices"), "inplace_index_add")?, "inplace_index_add")?;
    let upd = operand(ctx, b.value("updates"), x.dtype)?;
    out(ctx, x.t.index_add(&u32s(&rows, x.t.device())?, &upd, d)?, x.dtype)
}

/// `assign_add/sub(variable, value)`.
fn assign(ctx: &Ctx, b: &Bound, sub: bool) -> Result<Vec<Value>> {
    let x = b.tensor("variable")?;
    let v = operand(ctx, b.value("value"), x.dtype)?.broadcast_as(x.dims())?;
    out(ctx, if sub { (&x.t - v)? } else { (&x.t + v)? }, x.dtype)
}

/// `scatter_nd(indices, updates, shape)`: zeros with the updates summed in.
fn scatter_nd(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let upd = b.tensor("updates")?;
    let shape: Vec<usize> = ints(b.value("shape"), "scatter_nd")?.iter().map(|&d| d.max(0) as usize).collect();
    ctx.fits(&shape)?;
    let zeros = T { t: Tensor::zeros(shape.as_slice(), upd.t.dtype(), upd.t.device())?, dtype: upd.dtype };
    let (rows, _) = nd_rows(&shape, b.tensor("indices")?, "scatter_nd")?;
    scatter_rows(ctx, &zeros, &rows, b.value("updates"), Combine::Add, "scatter_nd")
}

/// `gather_nd(input_x, indices)`: the rows the N-d indices name.
fn gather_nd(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let indices = b.tensor("indices")?;
    let (rows, batch) = nd_rows(x.dims(), indices, "gather_nd")?;
    let k = indices.dims()[indices.rank() - 1];
    let rest = &x.dims()[k..];
    let n_rows: usize = x.dims()[..k].iter().product();
    let inner: usize = rest.iter().product();
    let picked = x.t.reshape((n_rows, inner))?.index_select(&u32s(&rows, x.t.device())?, 0)?;
    out(ctx, picked.reshape([batch.as_slice(), rest].concat())?, x.dtype)
}

/// `slice(input_x, begin, size)`: `size` -1 runs to the end.
pub(super) fn slice(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (begin, size) = (ints(b.value("begin"), "slice")?, ints(b.value("size"), "slice")?);
    if begin.len() != x.rank() || size.len() != x.rank() {
        return Err(Error::Arg(format!("slice: begin and size need {} entries", x.rank())));
    }
    let mut t = x.t.clone();
    for (d, (&s, &n)) in begin.iter().zip(&size).enumerate() {
        let len = x.dims()[d] as i64;
        let n = if n == -1 { len - s } else { n };
        if s < 0 || n < 0 || s + n > len {
            return Err(Error::Arg(format!("slice: begin {s} and size {n} do not fit a dimension of {len}")));
        }
        t = t.narrow(d, s as usize, n as usize)?;
    }
    out(ctx, t, x.dtype)
}

/// `strided_slice(input_x, begin, end, strides, begin_mask, end_mask, ...)`:
/// Python slices per dimension; the ellipsis, new-axis and shrink masks are not replayed.
pub(super) fn strided_slice(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    for m in ["ellipsis_mask", "new_axis_mask", "shrink_axis_mask"] {
        if b.int(m)? != 0 {
            return Err(Error::Unsupported(format!("strided_slice with {m} is not replayed")));
        }
    }
    let (begin, end, strides) = (ints(b.value("begin"), "strided_slice")?, ints(b.value("end"), "strided_slice")?, ints(b.value("strides"), "strided_slice")?);
    let (bm, em) = (b.int("begin_mask")?, b.int("end_mask")?);
    let mut t = x.t.clone();
    for d in 0..begin.len().min(x.rank()) {
        let (n, step) = (x.dims()[d] as i64, strides.get(d).copied().unwrap_or(1));
        if step == 0 {
            return Err(Error::Arg("strided_slice: a stride of 0".into()));
        }
        let clamp = |v: i64| {
            let v = if v < 0 { v + n } else { v };
            if step > 0 {
                v.clamp(0, n)
            } else {
                v.clamp(-1, n - 1)
            }
        };
        let start = if bm >> d & 1 == 1 {
            if step > 0 {
                0
            } else {
                n - 1
            }
        } else {
            clamp(begin[d])
        };
        let stop = if em >> d & 1 == 1 {
            if step > 0 {
                n
            } else {
                -1
            }
        } else {
            clamp(end[d])
        };
        let mut picked = vec![];
        let mut i = start;
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            picked.push(i as usize);
            i += step;
        }
        t = t.index_select(&u32s(&picked, t.device())?, d)?;
    }
    out(ctx, t, x.dtype)
}

/// `select_scatter(input, src, axis, index)`: `src` as the slice at `index` along `axis`.
fn select_scatter(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let n = x.dims()[d] as i64;
    let i = b.int("index")?;
    let i = if i < 0 { i + n } else { i };
    if i < 0 || i >= n {
        return Err(Error::Arg(format!("select_scatter: index {i} is out of bounds for a dimension of {n}")));
    }
    let src = operand(ctx, b.value("src"), x.dtype)?.unsqueeze(d)?;
    let i = i as usize;
    let parts = [x.t.narrow(d, 0, i)?, src, x.t.narrow(d, i + 1, n as usize - i - 1)?];
    out(ctx, Tensor::cat(&parts, d)?, x.dtype)
}

/// `unsorted_segment_*(x, segment_ids, num_segments)`: rows of dim 0 (or
/// elements along the ids' dims) reduced into their segment; an id out of
/// range is dropped; an empty segment holds 0 (sum), 1 (prod) or the
/// dtype's lowest/highest finite value (max/min), as in MindSpore.
fn unsorted_segment(ctx: &Ctx, b: &Bound, how: Combine) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let ids = b.tensor("segment_ids")?;
    let num = b.int("num_segments")?.max(0) as usize;
    let k = ids.rank();
    if x.dims()[..k.min(x.rank())] != *ids.dims() {
        return Err(Error::Arg(format!("unsorted_segment: segment_ids of shape {:?} for an input of shape {:?}", ids.dims(), x.dims())));
    }
    let rest = &x.dims()[k..];
    let inner: usize = rest.iter().product();
    let ids = ids.to_f64_vec()?;
    let kept: Vec<(usize, usize)> = ids.iter().enumerate().filter(|(_, &s)| s >= 0.0 && (s as usize) < num).map(|(r, &s)| (r, s as usize)).collect();
    let shape = [&[num][..], rest].concat();
    ctx.fits(&shape)?;
    let rows = x.t.reshape((ids.len(), inner))?;
    if let Combine::Add = how {
        let zeros = Tensor::zeros((num, inner), x.t.dtype(), x.t.device())?;
        let src = rows.index_select(&u32s(&kept.iter().map(|p| p.0).collect::<Vec<_>>(), x.t.device())?, 0)?;
        let t = zeros.index_add(&u32s(&kept.iter().map(|p| p.1).collect::<Vec<_>>(), x.t.device())?, &src, 0)?;
        return out(ctx, t.reshape(shape)?, x.dtype);
    }
    let empty = match how {
        Combine::Mul => 1.0,
        Combine::Max => x.dtype.int_range().map_or(-finite_max(x.dtype), |r| r.0),
        _ => finite_max(x.dtype),
    };
    let v = T { t: rows, dtype: x.dtype }.to_f64_vec()?;
    let mut acc = vec![empty; num * inner];
    for (r, s) in kept {
        for j in 0..inner {
            let (a, e) = (&mut acc[s * inner + j], v[r * inner + j]);
            *a = match how {
                Combine::Mul => *a * e,
                Combine::Max => a.max(e),
                _ => a.min(e),
            };
        }
    }
    Ok(vec![Value::Tensor(T::from_f64(acc, &shape, x.dtype, ctx.compute, &ctx.device)?)])
}

/// The largest finite value of a dtype (an integer's largest value).
fn finite_max(dtype: TDType) -> f64 {
    match dtype {
        TDType::F16 => 65504.0,
        TDType::BF16 => 3.3895313892515355e38,
        TDType::F32 => f32::MAX as f64,
        TDType::F64 => f64::MAX,
        d => d.int_range().map_or(f64::MAX, |r| r.1),
    }
}

/// `sparse_segment_mean(x, indices, segment_ids)`: the mean of the rows
/// `indices` names per segment (sorted ids; an empty segment is 0).
fn sparse_segment_mean(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let n = *x.dims().first().ok_or_else(|| Error::Arg("sparse_segment_mean: a 0-d input".into()))?;
    let rows = dim0_rows(n, ints(b.value("indices"), "sparse_segment_mean")?, "sparse_segment_mean")?;
    let segs = ints(b.value("segment_ids"), "sparse_segment_mean")?;
    if segs.len() != rows.len() || segs.iter().any(|&s| s < 0) {
        return Err(Error::Arg("sparse_segment_mean: one non-negative segment id per index".into()));
    }
    let num = segs.iter().max().map_or(0, |&m| m as usize + 1);
    let inner = x.t.elem_count() / n;
    let mut count = vec![0.0; num];
    segs.iter().for_each(|&s| count[s as usize] += 1.0);
    let picked = x.t.reshape((n, inner))?.index_select(&u32s(&rows, x.t.device())?, 0)?;
    let segs: Vec<usize> = segs.iter().map(|&s| s as usize).collect();
    let sums = Tensor::zeros((num, inner), x.t.dtype(), x.t.device())?.index_add(&u32s(&segs, x.t.device())?, &picked, 0)?;
    let scale: Vec<f64> = count.iter().map(|&c| if c > 0.0 { 1.0 / c } else { 0.0 }).collect();
    let scale = Tensor::from_vec(scale, (num, 1), x.t.device())?.to_dtype(x.t.dtype())?;
    out(ctx, sums.broadcast_mul(&scale)?.reshape([&[num][..], &x.dims()[1..]].concat())?, x.dtype)
}

/// `unique(input)` and `unique_with_pad(x, pad_num)`: the distinct values
/// in order of first appearance, and each element's int32 position among them.
fn unique(ctx: &Ctx, b: &Bound, pad: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let v = x.to_f64_vec()?;
    let (mut values, mut inverse): (Vec<f64>, Vec<f64>) = (vec![], Vec::with_capacity(v.len()));
    for &e in &v {
        let at = match values.iter().position(|&u| u == e || (u.is_nan() && e.is_nan())) {
            Some(i) => i,
            None => {
                values.push(e);
                values.len() - 1
            }
        };
        inverse.push(at as f64);
    }
    if pad {
        values.resize(v.len(), b.float("pad_num")?);
    }
    let n = values.len();
    Ok(vec![
        Value::Tensor(T::from_f64(values, &[n], x.dtype, ctx.compute, &ctx.device)?),
        Value::Tensor(T::from_f64(inverse, x.dims(), TDType::I32, ctx.compute, &ctx.device)?),
    ])
}

/// `expand(input_x, size)`: broadcast to `size` (a tensor; -1 keeps a dimension).
fn expand(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let size = ints(b.value("size"), "expand")?;
    let lead = size.len().checked_sub(x.rank()).ok_or_else(|| Error::Arg("expand: fewer sizes than dimensions".into()))?;
    let shape: Vec<usize> = size.iter().enumerate().map(|(i, &s)| if s == -1 && i >= lead { x.dims()[i - lead] } else { s.max(0) as usize }).collect();
    ctx.fits(&shape)?;
    out(ctx, x.t.broadcast_as(shape)?.contiguous()?, x.dtype)
}

/// `meshgrid(*inputs, indexing='xy')`: the first two axes swapped under 'xy'.
fn meshgrid(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let xs = b.tensors("inputs")?;
    let xy = match b.str("indexing")? {
        "xy" => xs.len() >= 2,
        "ij" => false,
        other => return Err(Error::Arg(format!("meshgrid: indexing must be 'xy' or 'ij', got {other:?}"))),
    };
    let mut axis_of: Vec<usize> = (0..xs.len()).collect();
    if xy {
        axis_of.swap(0, 1);
    }
    let mut shape = vec![0; xs.len()];
    for (i, x) in xs.iter().enumerate() {
        shape[axis_of[i]] = x.t.elem_count();
    }
    ctx.fits(&shape)?;
    xs.iter()
        .enumerate()
        .map(|(i, x)| {
            let mut at = vec![1; xs.len()];
            at[axis_of[i]] = x.t.elem_count();
            Ok(Value::Tensor(ctx.out(x.t.reshape(at)?.broadcast_as(shape.as_slice())?.contiguous()?, x.dtype)?))
        })
        .collect()
}

/// `reverse_sequence(x, seq_lengths, seq_dim, batch_dim=0)`: per batch
/// entry, its first `seq_lengths[b]` elements along `seq_dim` reversed.
fn reverse_sequence(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (sd, bd) = (dim(b.int("seq_dim")?, x.rank())?, dim(b.int("batch_dim")?, x.rank())?);
    let lens = ints(b.value("seq_lengths"), "reverse_sequence")?;
    let dims = x.dims();
    if sd == bd || lens.len() != dims[bd] || lens.iter().any(|&l| l < 0 || l as usize > dims[sd]) {
        return Err(Error::Arg("reverse_sequence: one length per batch entry, each within the sequence".into()));
    }
    let n = x.t.elem_count();
    let mut index = Vec::with_capacity(n);
    let mut coord = vec![0usize; dims.len()];
    for _ in 0..n {
        let (s, len) = (coord[sd], lens[coord[bd]] as usize);
        index.push(if s < len { len - 1 - s } else { s } as u32);
        for d in (0..dims.len()).rev() {
            coord[d] += 1;
            if coord[d] < dims[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    let index = Tensor::from_vec(index, dims, x.t.device())?;
    out(ctx, x.t.contiguous()?.gather(&index, sd)?, x.dtype)
}

/// `matrix_band_part(x, lower, upper)`: the band of the last two axes kept
/// (a negative bound keeps that whole triangle).
fn matrix_band_part(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() < 2 {
        return Err(Error::Arg("matrix_band_part: needs a matrix".into()));
    }
    let (lower, upper) = (b.int("lower")?, b.int("upper")?);
    let (r, c) = (x.dims()[x.rank() - 2], x.dims()[x.rank() - 1]);
    let keep: Vec<u8> = (0..r * c)
        .map(|p| {
            let (i, j) = ((p / c) as i64, (p % c) as i64);
            u8::from((lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper))
        })
        .collect();
    let keep = Tensor::from_vec(keep, (r, c), x.t.device())?.broadcast_as(x.dims())?;
    out(ctx, keep.where_cond(&x.t, &x.t.zeros_like()?)?, x.dtype)
}

/// `sequence_mask(lengths, maxlen=None)`: `[..., maxlen]` booleans, true below each length.
fn sequence_mask(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let lengths = b.tensor("lengths")?;
    let l = lengths.to_f64_vec()?;
    let max = match b.opt_int("maxlen")? {
        Some(m) => m.max(0) as usize,
        None => l.iter().fold(0.0f64, |a, &v| a.max(v)) as usize,
    };
    let shape = [lengths.dims(), &[max]].concat();
    ctx.fits(&shape)?;
    let v: Vec<f64> = l.iter().flat_map(|&n| (0..max).map(move |j| f64::from(u8::from((j as f64) < n)))).collect();
    Ok(vec![Value::Tensor(T::from_f64(v, &shape, TDType::Bool, ctx.compute, &ctx.device)?)])
}

/// `space_to_batch_nd(input_x, block_size, paddings)` of an NCHW tensor:
/// padded, then each block position becomes a batch slice (block-major).
fn space_to_batch_nd(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let block = ints(b.value("block_size"), "space_to_batch_nd")?;
    let pads = flat_pairs(b.value("paddings"))?;
    let (bh, bw) = block_hw(&block, x.rank())?;
    let t = x.t.pad_with_zeros(2, pads[0], pads[1])?.pad_with_zeros(3, pads[2], pads[3])?;
    let [n, c, h, w] = dims4(t.dims())?;
    if h % bh != 0 || w % bw != 0 {
        return Err(Error::Arg(format!("space_to_batch_nd: padded {h}x{w} is not a multiple of the block {bh}x{bw}")));
    }
    let t = t.reshape((n, c, h / bh, bh, w / bw, bw))?.permute((3, 5, 0, 1, 2, 4))?.reshape((bh * bw * n, c, h / bh, w / bw))?;
    out(ctx, t.contiguous()?, x.dtype)
}

/// `batch_to_space_nd(input_x, block_shape, crops)`: the inverse rearrangement, then cropped.
fn batch_to_space_nd(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let block = ints(b.value("block_shape"), "batch_to_space_nd")?;
    let crops = flat_pairs(b.value("crops"))?;
    let (bh, bw) = block_hw(&block, x.rank())?;
    let [nb, c, h, w] = dims4(x.dims())?;
    if nb % (bh * bw) != 0 {
        return Err(Error::Arg(format!("batch_to_space_nd: a batch of {nb} is not a multiple of the block {bh}x{bw}")));
    }
    let n = nb / (bh * bw);
    let t = x.t.reshape((bh, bw, n, c, h, w))?.permute((2, 3, 4, 0, 5, 1))?.reshape((n, c, h * bh, w * bw))?;
    let (hh, ww) = (h * bh, w * bw);
    if crops[0] + crops[1] > hh || crops[2] + crops[3] > ww {
        return Err(Error::Arg("batch_to_space_nd: crops larger than the result".into()));
    }
    let t = t.narrow(2, crops[0], hh - crops[0] - crops[1])?.narrow(3, crops[2], ww - crops[2] - crops[3])?;
    out(ctx, t.contiguous()?, x.dtype)
}

fn flat_pairs(v: &Value) -> Result<Vec<usize>> {
    let flat: Vec<i64> = match v {
        Value::List(rows) => rows.iter().map(|r| ints(r, "paddings")).collect::<Result<Vec<_>>>()?.concat(),
        v => ints(v, "paddings")?,
    };
    if flat.len() != 4 || flat.iter().any(|&p| p < 0) {
        return Err(Error::Arg("two non-negative (before, after) pairs, one per spatial axis".into()));
    }
    Ok(flat.into_iter().map(|p| p as usize).collect())
}

fn block_hw(block: &[i64], rank: usize) -> Result<(usize, usize)> {
    match (block, rank) {
        ([h, w], 4) if *h > 0 && *w > 0 => Ok((*h as usize, *w as usize)),
        ([s], 4) if *s > 0 => Ok((*s as usize, *s as usize)),
        _ => Err(Error::Unsupported("space/batch rearrangements are replayed for NCHW tensors with a 2-d block".into())),
    }
}

fn dims4(d: &[usize]) -> Result<[usize; 4]> {
    d.try_into().map_err(|_| Error::Arg(format!("expected an NCHW tensor, got shape {d:?}")))
}

/// `padding(x, pad_dim_size=8)`: the last axis (of size 1) zero-padded to `pad_dim_size`.
fn padding(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let size = b.int("pad_dim_size")?;
    let last = x.rank().checked_sub(1).ok_or_else(|| Error::Arg("padding: a 0-d input".into()))?;
    let n = x.dims()[last] as i64;
    if size < n {
        return Err(Error::Arg(format!("padding: pad_dim_size {size} is below the last dimension {n}")));
    }
    out(ctx, x.t.pad_with_zeros(last, 0, (size - n) as usize)?, x.dtype)
}

/// `dyn_shape(input_x)`: the shape as an int64 tensor.
fn dyn_shape(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    Ok(vec![Value::Tensor(T::from_f64(x.dims().iter().map(|&d| d as f64).collect(), &[x.rank()], TDType::I64, ctx.compute, &ctx.device)?)])
}

/// `shape(input_x)`: the shape as a tuple of ints.
fn shape(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    Ok(vec![Value::List(b.tensor("input")?.dims().iter().map(|&d| Value::Int(d as i64)).collect())])
}

/// `rank(input_x)`: the number of dimensions.
fn rank(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    Ok(vec![Value::Int(b.tensor("input")?.rank() as i64)])
}

/// `fill(type, shape, value)`.
fn fill(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = b.opt_dtype("type")?.ok_or_else(|| Error::Arg("fill: type is a dtype".into()))?;
    let shape: Vec<usize> = ints(b.value("shape"), "fill")?.iter().map(|&d| d.max(0) as usize).collect();
    let v = b.value("value").as_f64().ok_or_else(|| Error::Arg("fill: value is a number".into()))?;
    out(ctx, ctx.full(&shape, v, dtype)?, dtype)
}

/// `scalar_to_tensor(input_x, dtype=float32)`: a 0-d tensor.
fn scalar_to_tensor(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let v = b.value("input").as_f64().ok_or_else(|| Error::Arg("scalar_to_tensor: input is a number".into()))?;
    let dtype = b.opt_dtype("dtype")?.unwrap_or(TDType::F32);
    Ok(vec![Value::Tensor(T::from_f64(vec![v], &[], dtype, ctx.compute, &ctx.device)?)])
}

/// `tuple_to_array(input_x)`: int32 for ints, float32 otherwise.
fn tuple_to_array(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let Value::List(items) = b.value("input") else { return Err(Error::Arg("tuple_to_array: input is a tuple of numbers".into())) };
    let ints = items.iter().all(|v| matches!(v, Value::Int(_)));
    let v: Vec<f64> =
        items.iter().map(|v| v.as_f64().ok_or_else(|| Error::Arg("tuple_to_array: input is a tuple of numbers".into()))).collect::<Result<_>>()?;
    let n = v.len();
    Ok(vec![Value::Tensor(T::from_f64(v, &[n], if ints { TDType::I32 } else { TDType::F32 }, ctx.compute, &ctx.device)?)])
}

/// `eps(x)`: each element the machine epsilon of `x`'s dtype.
fn eps(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let e = match x.dtype {
        TDType::F16 => 2f64.powi(-10),
        TDType::BF16 => 2f64.powi(-7),
        TDType::F32 => 2f64.powi(-23),
        TDType::F64 => f64::EPSILON,
        d => return Err(Error::Arg(format!("eps: a floating dtype, got {}", d.name()))),
    };
    out(ctx, ctx.full(x.dims(), e, x.dtype)?, x.dtype)
}

/// `cast(input, dtype)`: one rounding, as torch's `.to(dtype)`.
fn cast(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = b.opt_dtype("dtype")?.ok_or_else(|| Error::Arg("cast: dtype is a dtype".into()))?;
    Ok(vec![Value::Tensor(ctx.cast(b.tensor("input")?, dtype)?)])
}

/// An entry moving values exactly.
const fn moved(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, backward: bool) -> Op {
    Op { names, sig, forward, backward, standard: Standard::Exact, random: false, facts: &[] }
}

/// A scatter whose combination rounds (sums, products, quotients).
const fn combined(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, backward: bool) -> Op {
    Op { names, sig, forward, backward, standard: Standard::Accuracy, random: false, facts: &[] }
}

const ND: &str = "input, indices, updates";
const ND_LOCKING: &str = "input, indices, updates, use_locking=False";

/// The entries.
pub static OPS: &[Op] = &[
    combined(&["MS.Functional.tensor_scatter_add"], ND, |c, b| scatter_nd_into(c, b, Combine::Add), true),
    combined(&["MS.Functional.tensor_scatter_sub"], ND, |c, b| scatter_nd_into(c, b, Combine::Sub), true),
    combined(&["MS.Functional.tensor_scatter_mul"], ND, |c, b| scatter_nd_into(c, b, Combine::Mul), false),
    combined(&["MS.Functional.tensor_scatter_div"], ND, |c, b| scatter_nd_into(c, b, Combine::Div), false),
    moved(&["MS.Functional.tensor_scatter_max"], ND, |c, b| scatter_nd_into(c, b, Combine::Max), false),
    moved(&["MS.Functional.tensor_scatter_min"], ND, |c, b| scatter_nd_into(c, b, Combine::Min), false),
    combined(&["MS.Functional.scatter_nd_add"], ND_LOCKING, |c, b| scatter_nd_into(c, b, Combine::Add), false),
    combined(&["MS.Functional.scatter_nd_sub"], ND_LOCKING, |c, b| scatter_nd_into(c, b, Combine::Sub), false),
    combined(&["MS.Functional.scatter_nd_mul"], ND_LOCKING, |c, b| scatter_nd_into(c, b, Combine::Mul), false),
    combined(&["MS.Functional.scatter_nd_div"], ND_LOCKING, |c, b| scatter_nd_into(c, b, Combine::Div), false),
    moved(&["MS.Functional.scatter_nd_max"], ND_LOCKING, |c, b| scatter_nd_into(c, b, Combine::Max), false),
    moved(&["MS.Functional.scatter_nd_min"], ND_LOCKING, |c, b| scatter_nd_into(c, b, Combine::Min), false),
    combined(&["MS.Functional.scatter_add"], ND, |c, b| scatter_dim0(c, b, Combine::Add), false),
    combined(&["MS.Functional.scatter_mul"], ND, |c, b| scatter_dim0(c, b, Combine::Mul), false),
    combined(&["MS.Functional.scatter_div"], ND, |c, b| scatter_dim0(c, b, Combine::Div), false),
    moved(&["MS.Functional.scatter_max"], ND, |c, b| scatter_dim0(c, b, Combine::Max), false),
    moved(&["MS.Functional.scatter_min"], ND, |c, b| scatter_dim0(c, b, Combine::Min), false),
    moved(&["MS.Functional.scatter_update"], ND, |c, b| scatter_dim0(c, b, Combine::Update), false),
    combined(&["MS.Functional.inplace_add"], "input, v, indices", |c, b| inplace_rows(c, b, Combine::Add), false),
    combined(&["MS.Functional.inplace_sub"], "input, v, indices", |c, b| inplace_rows(c, b, Combine::Sub), false),
    moved(&["MS.Functional.inplace_update"], "input, v, indices", |c, b| inplace_rows(c, b, Combine::Update), false),
    combined(&["MS.Functional.inplace_index_add"], "var, indices, updates, dim", inplace_index_add, false),
    combined(&["MS.Functional.assign_add"], "variable, value", |c, b| assign(c, b, false), false),
    combined(&["MS.Functional.assign_sub"], "variable, value", |c, b| assign(c, b, true), false),
    combined(&["MS.Functional.scatter_nd"], "indices, updates, shape", scatter_nd, true),
    moved(&["MS.Functional.gather_nd"], "input, indices", gather_nd, true),
    moved(&["MS.Functional.slice"], "input, begin, size", slice, true),
    moved(
        &["MS.Functional.strided_slice"],
        "input, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0",
        strided_slice,
        true,
    ),
    moved(&["MS.Functional.select_scatter"], "input, src, dim, index", select_scatter, true),
    combined(&["MS.Functional.unsorted_segment_sum"], "input, segment_ids, num_segments", |c, b| unsorted_segment(c, b, Combine::Add), true),
    combined(&["MS.Functional.unsorted_segment_prod"], "input, segment_ids, num_segments", |c, b| unsorted_segment(c, b, Combine::Mul), false),
    moved(&["MS.Functional.unsorted_segment_max"], "input, segment_ids, num_segments", |c, b| unsorted_segment(c, b, Combine::Max), false),
    moved(&["MS.Functional.unsorted_segment_min"], "input, segment_ids, num_segments", |c, b| unsorted_segment(c, b, Combine::Min), false),
    combined(&["MS.Functional.sparse_segment_mean"], "input, indices, segment_ids", sparse_segment_mean, false),
    moved(&["MS.Functional.unique"], "input", |c, b| unique(c, b, false), false),
    moved(&["MS.Functional.unique_with_pad"], "input, pad_num", |c, b| unique(c, b, true), false),
    moved(&["MS.Functional.expand"], "input, size", expand, true),
    moved(&["MS.Functional.meshgrid"], "*inputs, indexing='xy'", meshgrid, true),
    moved(&["MS.Functional.reverse_sequence"], "input, seq_lengths, seq_dim, batch_dim=0", reverse_sequence, true),
    moved(&["MS.Functional.matrix_band_part"], "input, lower, upper", matrix_band_part, true),
    moved(&["MS.Functional.sequence_mask"], "lengths, maxlen=None", sequence_mask, false),
    moved(&["MS.Functional.space_to_batch_nd"], "input, block_size, paddings", space_to_batch_nd, true),
    moved(&["MS.Functional.batch_to_space_nd"], "input, block_shape, crops", batch_to_space_nd, true),
    moved(&["MS.Functional.padding"], "input, pad_dim_size=8", padding, true),
    moved(&["MS.Functional.dyn_shape"], "input", dyn_shape, false),
    moved(&["MS.Functional.shape"], "input", shape, false),
    moved(&["MS.Functional.rank"], "input", rank, false),
    moved(&["MS.Functional.fill"], "type, shape, value", fill, false),
    moved(&["MS.Functional.scalar_to_tensor"], "input, dtype=None", scalar_to_tensor, false),
    moved(&["MS.Functional.tuple_to_array"], "input", tuple_to_array, false),
    moved(&["MS.Functional.eps"], "input", eps, false),
    Op { names: &["MS.Functional.cast"], sig: "input, dtype", forward: cast, backward: true, standard: Standard::Accuracy, random: false, facts: &[] },
    Op { names: &["MS.Tensor.astype"], sig: "input, dtype, copy=True", forward: cast, backward: true, standard: Standard::Accuracy, random: false, facts: &[] },
];
