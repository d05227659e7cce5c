//! Searches of sorted values and membership (`searchsorted`, `bucketize`,
//! `isin`) and runs of equal values (`unique_consecutive`): results
//! computed from the inputs' values as their dtypes hold them, judged
//! exactly, without gradients.

use candle_core::Tensor;

use super::{one, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The values of a tensor argument, or of a Python number as one element.
fn values_of(v: &Value, name: &str) -> Result<(Vec<f64>, Vec<usize>)> {
    match v {
        Value::Tensor(t) => Ok((t.to_f64_vec()?, t.dims().to_vec())),
        Value::Int(i) => Ok((vec![*i as f64], vec![])),
        Value::Float(x) => Ok((vec![*x], vec![])),
        _ => Err(Error::Arg(format!("{name}: a tensor or a number expected"))),
    }
}

/// The position of `x` in the ascending `row`: the first element at or
/// above it (`right`: above it), NaN sorting last as torch sorts it.
fn position(row: &[f64], x: f64, right: bool) -> usize {
    let below = |s: f64| !s.is_nan() && (x.is_nan() || s < x);
    let at_or_below = |s: f64| x.is_nan() || (!s.is_nan() && s <= x);
    row.partition_point(|&s| if right { at_or_below(s) } else { below(s) })
}

/// The positions of `input`'s values in `sorted`'s rows (one row, or one
/// per leading index of input), int64 unless `out_int32`.
fn search(ctx: &Ctx, sorted: &Value, input: &Value, right: bool, out_int32: bool, what: &str) -> Result<Vec<Value>> {
    let (seq, seq_shape) = values_of(sorted, what)?;
    let (xs, shape) = values_of(input, what)?;
    let width = *seq_shape.last().ok_or_else(|| Error::Arg(format!("{what}: the boundaries must have a dimension")))?;
    let rows = seq.len() / width.max(1);
    let per_row = if rows <= 1 { xs.len() } else { shape.last().copied().unwrap_or(1) };
    if rows > 1 && (seq_shape[..seq_shape.len() - 1] != shape[..shape.len().saturating_sub(1)] || shape.is_empty()) {
        return Err(Error::Arg(format!("{what}: boundaries {seq_shape:?} and input {shape:?} differ in their leading dimensions")));
    }
    let out: Vec<f64> = xs
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let r = if rows <= 1 { 0 } else { i / per_row.max(1) };
            position(&seq[r * width..(r + 1) * width], x, right) as f64
        })
        .collect();
    let dtype = if out_int32 { TDType::I32 } else { TDType::I64 };
    one(T::from_f64(out, &shape, dtype, ctx.compute, &ctx.device)?)
}

/// `searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None)`.
fn searchsorted(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !b.is_none("sorter") {
        return Err(Error::Unsupported("searchsorted with a sorter".into()));
    }
    let right = if b.is_none("side") { b.bool("right")? } else { b.str("side")? == "right" };
    search(ctx, b.value("sorted_sequence"), b.value("input"), right, b.bool("out_int32")?, "searchsorted")
}

/// `bucketize(input, boundaries, *, out_int32=False, right=False)`: the
/// bucket of each value; `right=False` is searchsorted's left side.
fn bucketize(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if let Value::Tensor(t) = b.value("boundaries") {
        if t.rank() != 1 {
            return Err(Error::Arg(format!("bucketize: boundaries must be 1-D, got {:?}", t.dims())));
        }
    }
    search(ctx, b.value("boundaries"), b.value("input"), b.bool("right")?, b.bool("out_int32")?, "bucketize")
}

/// `isin(elements, test_elements, *, assume_unique=False, invert=False)`:
/// whether each element equals one of the test elements (NaN never does).
fn isin(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (xs, shape) = values_of(b.value("elements"), "isin")?;
    let (tests, _) = values_of(b.value("test_elements"), "isin")?;
    // -0.0 equals 0.0: both as 0.0 (x + 0.0), then ordered totally.
    let mut tests: Vec<f64> = tests.into_iter().filter(|t| !t.is_nan()).map(|t| t + 0.0).collect();
    tests.sort_by(f64::total_cmp);
    let invert = b.bool("invert")?;
    let member = |x: f64| !x.is_nan() && tests.binary_search_by(|t| t.total_cmp(&(x + 0.0))).is_ok();
    let out: Vec<f64> = xs.iter().map(|&x| f64::from(u8::from(member(x) != invert))).collect();
    one(T::from_f64(out, &shape, TDType::Bool, ctx.compute, &ctx.device)?)
}

/// `unique_consecutive(input, return_inverse=False, return_counts=False,
/// dim=None)`: the first element (or slice along `dim`) of each run of
/// equal ones, and on request each element's run and each run's length.
fn unique_consecutive(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (flat, shape) = match b.opt_int("dim")? {
        None => (x.t.flatten_all()?, vec![x.t.elem_count()]),
        Some(d) => {
            let d = crate::ctx::dim(d, x.rank())?;
            let moved = x.t.transpose(0, d)?.contiguous()?;
            (moved.clone(), moved.dims().to_vec())
        }
    };
    let len = shape.first().copied().unwrap_or(0);
    let per = shape.iter().skip(1).product::<usize>();
    let values = flat.to_dtype(candle_core::DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let slice = |i: usize| &values[i * per..(i + 1) * per];
    let (mut starts, mut inverse) = (Vec::<usize>::new(), Vec::with_capacity(len));
    for i in 0..len {
        // NaN is not equal to NaN: each starts its own run, as torch's `!=` test.
        if i == 0 || slice(i) != slice(i - 1) {
            starts.push(i);
        }
        inverse.push((starts.len() - 1) as f64);
    }
    let counts: Vec<f64> = starts.iter().enumerate().map(|(k, &s)| (starts.get(k + 1).copied().unwrap_or(len) - s) as f64).collect();
    let index = Tensor::from_vec(starts.iter().map(|&s| s as u32).collect::<Vec<_>>(), starts.len(), flat.device())?;
    let mut out = flat.index_select(&index, 0)?;
    if let Some(d) = b.opt_int("dim")? {
        out = out.transpose(0, crate::ctx::dim(d, x.rank())?)?.contiguous()?;
    } else {
        out = out.reshape(starts.len())?;
    }
    let mut result = vec![Value::Tensor(ctx.out(out, x.dtype)?)];
    let inverse_shape: Vec<usize> = if b.opt_int("dim")?.is_some() { vec![len] } else { x.dims().to_vec() };
    if b.bool("return_inverse")? {
        result.push(Value::Tensor(T::from_f64(inverse, &inverse_shape, TDType::I64, ctx.compute, &ctx.device)?));
    }
    if b.bool("return_counts")? {
        let n = counts.len();
        result.push(Value::Tensor(T::from_f64(counts, &[n], TDType::I64, ctx.compute, &ctx.device)?));
    }
    Ok(result)
}

/// An exact entry without a gradient.
const fn found(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: false, standard: Standard::Exact, random: false, facts: &[] }
}

/// The search entries.
pub static OPS: &[Op] = &[
    found(
        &["Torch.searchsorted", "MS.Functional.searchsorted"],
        "sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None",
        searchsorted,
    ),
    found(&["Torch.bucketize"], "input, boundaries, *, out_int32=False, right=False, out=None", bucketize),
    found(
        &["Torch.unique_consecutive", "MS.Functional.unique_consecutive", "MS.Tensor.unique_consecutive"],
        "input, return_inverse=False, return_counts=False, dim=None",
        unique_consecutive,
    ),
    found(&["Torch.isin"], "elements, test_elements, *, assume_unique=False, invert=False", isin),
];
