//! Writes into a copy of a tensor at computed positions: `slice_scatter`,
//! `diagonal_scatter`, `masked_scatter`, `index_put`, `put`,
//! `fill_diagonal_` (their method and in-place forms by rule). Each is
//! one [`place`]: the flat positions of the written elements, in the order
//! the source supplies them; a written element takes the source's value
//! exactly (or adds it, with `accumulate`), and the gradient reaches the
//! source at its written elements and the input everywhere else, as
//! torch's. Repeated positions without `accumulate` are a `skip`: which
//! write wins is up to the device's kernel.

use candle_core::Tensor;

use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, operand, Ctx};
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The row-major strides of `dims`.
fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// `input` with the elements at flat `positions` replaced by (or, with
/// `accumulate`, increased by) `values`' elements in row-major order.
fn place(input: &Tensor, positions: &[usize], values: &Tensor, accumulate: bool, what: &str) -> Result<Tensor> {
    let n = input.elem_count();
    if values.elem_count() != positions.len() {
        return Err(Error::Arg(format!("{what}: {} values for {} positions", values.elem_count(), positions.len())));
    }
    if let Some(p) = positions.iter().find(|&&p| p >= n) {
        return Err(Error::Arg(format!("{what}: position {p} is out of bounds for {n} elements")));
    }
    let flat = input.flatten_all()?;
    let index = Tensor::from_vec(positions.iter().map(|&p| p as u32).collect::<Vec<_>>(), positions.len(), input.device())?;
    let values = values.flatten_all()?.to_dtype(input.dtype())?;
    let out = if accumulate {
        flat.index_add(&index, &values, 0)?
    } else {
        let mut seen = vec![false; n];
        if positions.iter().any(|&p| std::mem::replace(&mut seen[p], true)) {
            return Err(Error::Unsupported(format!(
                "{what}: an element is written more than once without accumulate, and which write the device keeps is up to its kernel"
            )));
        }
        let written = Tensor::from_vec(seen.into_iter().map(u8::from).collect::<Vec<_>>(), n, input.device())?;
        written.where_cond(&flat.zeros_like()?.index_add(&index, &values, 0)?, &flat)?
    };
    Ok(out.reshape(input.dims())?)
}

/// The input and the context's copy of the tensor argument `name` in the input's dtype.
fn operands(ctx: &Ctx, b: &Bound, name: &str) -> Result<(T, Tensor)> {
    let x = b.tensor("input")?;
    let src = operand(ctx, b.value(name), x.dtype)?;
    Ok((x.clone(), src))
}

fn out(ctx: &Ctx, x: &T, t: Tensor) -> Result<Vec<Value>> {
    Ok(vec![Value::Tensor(ctx.out(t, x.dtype)?)])
}

/// The flat positions of the elements of `dims` whose index along `d` is
/// one of `along`, in row-major order of the selection.
fn positions_along(dims: &[usize], d: usize, along: &[usize]) -> Vec<usize> {
    let st = strides(dims);
    let outer: usize = dims[..d].iter().product();
    let inner: usize = dims[d + 1..].iter().product();
    let mut p = Vec::with_capacity(outer * along.len() * inner);
    for o in 0..outer {
        for &a in along {
            for i in 0..inner {
                p.push(o * st[d] * dims[d] + a * st[d] + i);
            }
        }
    }
    p
}

/// `slice_scatter(input, src, dim=0, start=None, end=None, step=1)`.
fn slice_scatter(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, src) = operands(ctx, b, "src")?;
    let d = dim(b.int("dim")?, x.rank())?;
    let len = x.dims()[d] as i64;
    let clamp = |v: Option<i64>, default: i64| -> i64 {
        let v = v.unwrap_or(default);
        (if v < 0 { v + len } else { v }).clamp(0, len)
    };
    let (start, end, step) = (clamp(b.opt_int("start")?, 0), clamp(b.opt_int("end")?, len), b.int("step")?);
    if step < 1 {
        return Err(Error::Arg(format!("slice_scatter: step must be positive, got {step}")));
    }
    let along: Vec<usize> = (start..end.max(start)).step_by(step as usize).map(|i| i as usize).collect();
    let mut want = x.dims().to_vec();
    want[d] = along.len();
    if src.dims() != want.as_slice() {
        return Err(Error::Arg(format!("slice_scatter: src of shape {:?}, expected {want:?}", src.dims())));
    }
    out(ctx, &x, place(&x.t, &positions_along(x.dims(), d, &along), &src, false, "slice_scatter")?)
}

/// The flat positions of `diagonal(input, offset, dim1, dim2)`'s elements,
/// in its order (the other dims, then the diagonal).
fn diagonal_positions(dims: &[usize], offset: i64, d1: usize, d2: usize) -> Vec<usize> {
    let st = strides(dims);
    let (r0, c0) = if offset >= 0 { (0, offset as usize) } else { (offset.unsigned_abs() as usize, 0) };
    let len = dims[d1].saturating_sub(r0).min(dims[d2].saturating_sub(c0));
    let others: Vec<usize> = (0..dims.len()).filter(|&i| i != d1 && i != d2).collect();
    let count: usize = others.iter().map(|&i| dims[i]).product();
    let mut p = Vec::with_capacity(count * len);
    for k in 0..count {
        let (mut rest, mut base) = (k, 0);
        for &i in others.iter().rev() {
            base += (rest % dims[i]) * st[i];
            rest /= dims[i];
        }
        p.extend((0..len).map(|j| base + (r0 + j) * st[d1] + (c0 + j) * st[d2]));
    }
    p
}

/// `diagonal_scatter(input, src, offset=0, dim1=0, dim2=1)`.
fn diagonal_scatter(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, src) = operands(ctx, b, "src")?;
    let (d1, d2) = (dim(b.int("dim1")?, x.rank())?, dim(b.int("dim2")?, x.rank())?);
    if d1 == d2 {
        return Err(Error::Arg(format!("diagonal_scatter: dim1 and dim2 are both {d1}")));
    }
    let positions = diagonal_positions(x.dims(), b.int("offset")?, d1, d2);
    out(ctx, &x, place(&x.t, &positions, &src, false, "diagonal_scatter")?)
}

/// `masked_scatter(input, mask, source)`: the masked elements (the mask
/// broadcast to the input) take the source's first elements in order.
fn masked_scatter(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, src) = operands(ctx, b, "source")?;
    let mask = b.tensor("mask")?.t.broadcast_as(x.dims())?.flatten_all()?.to_dtype(candle_core::DType::F64)?.to_vec1::<f64>()?;
    let positions: Vec<usize> = mask.iter().enumerate().filter(|(_, &m)| m != 0.0).map(|(i, _)| i).collect();
    if positions.len() > src.elem_count() {
        return Err(Error::Arg(format!("masked_scatter: {} masked elements, but the source holds {}", positions.len(), src.elem_count())));
    }
    let values = src.flatten_all()?.narrow(0, 0, positions.len())?;
    out(ctx, &x, place(&x.t, &positions, &values, false, "masked_scatter")?)
}

/// The integer values of an index tensor, negatives counted from `len`.
fn wrapped(t: &T, len: usize, what: &str) -> Result<Vec<usize>> {
    t.to_f64_vec()?
        .into_iter()
        .map(|v| {
            let i = v as i64;
            let j = if i < 0 { i + len as i64 } else { i };
            usize::try_from(j).ok().filter(|&j| j < len).ok_or_else(|| Error::Arg(format!("{what}: index {i} is out of bounds for size {len}")))
        })
        .collect()
}

/// `index_put(input, indices, values, accumulate=False)`: integer index
/// tensors for the leading dims, broadcast together (a bool mask as its
/// positions), the rest of the dims whole; `values` broadcast to the
/// selection.
fn index_put(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, values) = operands(ctx, b, "values")?;
    let Value::List(items) = b.value("indices") else {
        return Err(Error::Arg("index_put: indices must be a tuple of tensors".into()));
    };
    // Each dim's index list, flattened over the broadcast index shape.
    let mut per_dim: Vec<(Vec<usize>, Vec<usize>)> = vec![];
    for item in items {
        let Value::Tensor(t) = item else {
            return Err(Error::Unsupported("index_put: a None (whole-dimension) index".into()));
        };
        if t.dtype == crate::dtype::TDType::Bool || t.dtype == crate::dtype::TDType::U8 {
            let at = per_dim.len();
            let mask = t.to_f64_vec()?;
            let sub: Vec<usize> = x.dims().get(at..at + t.rank()).map(<[usize]>::to_vec).unwrap_or_default();
            if sub.as_slice() != t.dims() {
                return Err(Error::Arg(format!("index_put: a mask of shape {:?} for dims {:?}", t.dims(), sub)));
            }
            let st = strides(&sub);
            let hits: Vec<usize> = mask.iter().enumerate().filter(|(_, &m)| m != 0.0).map(|(i, _)| i).collect();
            for (k, &s) in st.iter().enumerate() {
                per_dim.push((vec![hits.len()], hits.iter().map(|h| h / s % sub[k]).collect()));
            }
        } else {
            let d = per_dim.len();
            let len = *x.dims().get(d).ok_or_else(|| Error::Arg(format!("index_put: more indices than the {} dims", x.rank())))?;
            per_dim.push((t.dims().to_vec(), wrapped(t, len, "index_put")?));
        }
    }
    // The index tensors broadcast together.
    let rank = per_dim.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    let mut shape = vec![1; rank];
    for (s, _) in &per_dim {
        for (i, &n) in s.iter().enumerate() {
            let at = rank - s.len() + i;
            if shape[at] == 1 {
                shape[at] = n;
            } else if n != 1 && n != shape[at] {
                return Err(Error::Arg(format!("index_put: index shapes {:?} do not broadcast", per_dim.iter().map(|(s, _)| s).collect::<Vec<_>>())));
            }
        }
    }
    let count: usize = shape.iter().product();
    let st = strides(x.dims());
    let k = per_dim.len();
    let inner: usize = x.dims()[k..].iter().product();
    let mut positions = Vec::with_capacity(count * inner);
    for e in 0..count {
        let mut base = 0;
        for (d, (s, idx)) in per_dim.iter().enumerate() {
            // The element of this index tensor that broadcasts to position e.
            let (mut rest, mut flat, mut stride) = (e, 0, 1);
            for i in (0..rank).rev() {
                let coord = rest % shape[i];
                rest /= shape[i];
                if let Some(j) = i.checked_sub(rank - s.len()) {
                    if s[j] != 1 {
                        flat += coord * stride;
                    }
                    stride *= s[j];
                }
            }
            base += idx[flat] * st[d];
        }
        positions.extend((0..inner).map(|i| base + i));
    }
    let target: Vec<usize> = [shape, x.dims()[k..].to_vec()].concat();
    let values = values.broadcast_as(target.as_slice())?.contiguous()?;
    out(ctx, &x, place(&x.t, &positions, &values, b.bool("accumulate")?, "index_put")?)
}

/// `put(input, index, source, accumulate=False)`: flat positions.
fn put(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, src) = operands(ctx, b, "source")?;
    let positions = wrapped(b.tensor("index")?, x.t.elem_count(), "put")?;
    out(ctx, &x, place(&x.t, &positions, &src, b.bool("accumulate")?, "put")?)
}

/// `fill_diagonal_(fill_value, wrap=False)`: a matrix's main diagonal (or
/// an n-d tensor's with equal dims), and with `wrap` a tall matrix's
/// diagonal continued past its last column (every `cols + 1` elements,
/// a row left out between), as torch's.
fn fill_diagonal(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dims = x.dims();
    if dims.len() < 2 || (dims.len() > 2 && dims.iter().any(|&d| d != dims[0])) {
        return Err(Error::Arg(format!("fill_diagonal_: a matrix or a tensor with all dims equal expected, got {dims:?}")));
    }
    let n = x.t.elem_count();
    let step: usize = strides(dims).iter().sum();
    let positions: Vec<usize> = if dims.len() == 2 && b.bool("wrap")? {
        (0..n).step_by(step).collect()
    } else {
        (0..dims.iter().copied().min().unwrap_or(0)).map(|i| i * step).collect()
    };
    let value = Tensor::full(b.float("fill_value")?, positions.len(), x.t.device())?;
    out(ctx, x, place(&x.t, &positions, &value, false, "fill_diagonal_")?)
}

/// The scatter entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.slice_scatter"],
        sig: "input, src, dim=0, start=None, end=None, step=1",
        forward: slice_scatter,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.diagonal_scatter"],
        sig: "input, src, offset=0, dim1=0, dim2=1",
        forward: diagonal_scatter,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.masked_scatter"],
        sig: "input, mask, source",
        forward: masked_scatter,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.index_put"],
        sig: "input, indices, values, accumulate=False",
        forward: index_put,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.put"],
        sig: "input, index, source, accumulate=False",
        forward: put,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Tensor.fill_diagonal_"],
        sig: "input, fill_value, wrap=False",
        forward: fill_diagonal,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
];
