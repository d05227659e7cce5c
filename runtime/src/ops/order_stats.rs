//! Order statistics: `median`, `nanmedian`, `kthvalue`, `quantile`,
//! `nanquantile` (their `Tensor` methods by rule). The positions are found
//! in float64 on the values (NaN sorting last, as torch's); the results are
//! gathered from the input, so the gradient reaches the picked elements as
//! torch's does (interpolation weights for the quantiles; spread evenly over
//! the elements equal to an all-element median, torch's
//! `evenly_distribute_backward`). Where an index is returned and the picked
//! value occurs more than once in its row, torch's kernels pick one of the
//! tied positions by their own partition order: such a call is a `skip`
//! saying so, not a guess.

use candle_core::{DType, Tensor};

use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, operand, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The input with `dim` moved last, contiguous, and its rows' values.
struct Rows {
    t: Tensor,
    values: Vec<f64>,
    len: usize,
}

impl Rows {
    fn along(x: &Tensor, d: usize) -> Result<Rows> {
        let last = x.rank().max(1) - 1;
        let t = if x.rank() == 0 { x.reshape(1)? } else { x.transpose(d, last)?.contiguous()? };
        let len = t.dims().last().copied().unwrap_or(1);
        let values = t.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
        Ok(Rows { t, values, len })
    }

    fn rows(&self) -> impl Iterator<Item = &[f64]> {
        self.values.chunks(self.len.max(1))
    }

    /// `pick[row][j]` of each row, gathered along the last dim (`[.., j]`).
    fn gather(&self, pick: &[Vec<u32>]) -> Result<Tensor> {
        let k = pick.first().map_or(0, Vec::len);
        let mut shape = self.t.dims().to_vec();
        *shape.last_mut().expect("a row dim") = k;
        let flat: Vec<u32> = pick.iter().flatten().copied().collect();
        let index = Tensor::from_vec(flat, shape.as_slice(), self.t.device())?;
        Ok(self.t.gather(&index, self.t.rank() - 1)?)
    }
}

/// A row's positions in ascending order, NaN last (torch's order), ties by position.
fn ascending(row: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..row.len()).collect();
    order.sort_by(|&a, &b| match (row[a].is_nan(), row[b].is_nan()) {
        (false, false) => row[a].partial_cmp(&row[b]).expect("numbers").then(a.cmp(&b)),
        (x, y) => x.cmp(&y).then(a.cmp(&b)),
    });
    order
}

/// The position of the `k`-th (0-based) smallest of a row, or the skip
/// torch's tie order makes necessary.
fn kth_position(row: &[f64], k: usize, what: &str) -> Result<usize> {
    let order = ascending(row);
    let at = order[k];
    let v = row[at];
    let tied = row.iter().filter(|&&x| x == v || (x.is_nan() && v.is_nan())).count();
    if tied > 1 {
        return Err(Error::Unsupported(format!(
            "{what}: the picked value {v} occurs {tied} times in its row, and which of those positions torch's kernel returns follows its own partition order"
        )));
    }
    Ok(at)
}

/// The input as the context holds it.
fn input(ctx: &Ctx, b: &Bound) -> Result<T> {
    let x = b.tensor("input")?;
    Ok(T { t: operand(ctx, b.value("input"), x.dtype)?, dtype: x.dtype })
}

/// The values and int64 indices of a per-row pick along `dim`, with
/// `keepdim` or without it.
fn picked(ctx: &Ctx, x: &T, d: usize, keepdim: bool, pick: impl Fn(&[f64]) -> Result<usize>) -> Result<Vec<Value>> {
    let rows = Rows::along(&x.t, d)?;
    if rows.len == 0 {
        return Err(Error::Arg(format!("cannot pick along dimension {d} of size 0 (shape {:?})", x.dims())));
    }
    let at: Vec<Vec<u32>> = rows.rows().map(|r| pick(r).map(|p| vec![p as u32])).collect::<Result<_>>()?;
    let last = rows.t.rank() - 1;
    let mut values = rows.gather(&at)?;
    let mut indices = Tensor::from_vec(at.iter().map(|p| p[0] as f64).collect::<Vec<_>>(), values.dims(), values.device())?;
    if x.rank() > 0 {
        values = values.transpose(d, last)?;
        indices = indices.transpose(d, last)?;
    }
    if !keepdim || x.rank() == 0 {
        let shape: Vec<usize> = x.dims().iter().enumerate().filter(|&(i, _)| i != d).map(|(_, &n)| n).collect();
        values = values.reshape(shape.as_slice())?;
        indices = indices.reshape(shape.as_slice())?;
    }
    Ok(vec![Value::Tensor(ctx.out(values.contiguous()?, x.dtype)?), Value::Tensor(ctx.out(indices.contiguous()?, TDType::I64)?)])
}

/// The lower median of a row's numbers (NaNs left out when `skip_nan`,
/// else a NaN row's median is its first NaN).
fn median_position(row: &[f64], skip_nan: bool, what: &str) -> Result<usize> {
    let nans = row.iter().filter(|v| v.is_nan()).count();
    if nans > 0 && (!skip_nan || nans == row.len()) {
        return kth_position(row, row.len() - nans, what);
    }
    let n = row.len() - nans;
    kth_position(row, (n - 1) / 2, what)
}

/// `median(input)` / `median(input, dim, keepdim=False)`, and `nanmedian`.
fn median(ctx: &Ctx, b: &Bound, skip_nan: bool) -> Result<Vec<Value>> {
    let what = if skip_nan { "nanmedian" } else { "median" };
    let x = input(ctx, b)?;
    if let Some(d) = b.opt_int("dim")? {
        let d = if x.rank() == 0 { 0 } else { dim(d, x.rank())? };
        return picked(ctx, &x, d, b.bool("keepdim")?, |r| median_position(r, skip_nan, what));
    }
    // Over every element: the value, its gradient spread over the elements equal to it.
    let flat = x.t.flatten_all()?;
    let rows = Rows::along(&flat, 0)?;
    if rows.len == 0 {
        return Err(Error::Arg(format!("{what} of an empty tensor")));
    }
    let order = ascending(&rows.values);
    let nans = rows.values.iter().filter(|v| v.is_nan()).count();
    let v = if nans > 0 && (!skip_nan || nans == rows.len) { f64::NAN } else { rows.values[order[(rows.len - nans - 1) / 2]] };
    let mask: Vec<u8> = rows.values.iter().map(|&e| u8::from(e == v || (e.is_nan() && v.is_nan()))).collect();
    let count = mask.iter().filter(|&&m| m == 1).count() as f64;
    let mask = Tensor::from_vec(mask, rows.len, flat.device())?;
    let share = mask.where_cond(&flat, &flat.zeros_like()?)?.sum_all()?;
    let tie = ((&share - share.detach())? / count)?;
    let out = (tie + Tensor::new(v, flat.device())?.to_dtype(flat.dtype())?)?;
    Ok(vec![Value::Tensor(ctx.out(out, x.dtype)?)])
}

/// `kthvalue(input, k, dim=-1, keepdim=False)`.
fn kthvalue(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = input(ctx, b)?;
    let d = if x.rank() == 0 { 0 } else { dim(b.int("dim")?, x.rank())? };
    let n = x.dims().get(d).copied().unwrap_or(1);
    let k = b.int("k")?;
    if k < 1 || k as usize > n {
        return Err(Error::Arg(format!("kthvalue: k = {k} is out of range for a dimension of size {n}")));
    }
    picked(ctx, &x, d, b.bool("keepdim")?, |r| kth_position(r, k as usize - 1, "kthvalue"))
}

/// One quantile's lower and upper positions and the weight of the upper.
fn quantile_taps(row: &[f64], q: f64, skip_nan: bool, interpolation: &str) -> Result<(usize, usize, f64)> {
    let order = ascending(row);
    let nans = row.iter().filter(|v| v.is_nan()).count();
    if nans > 0 && (!skip_nan || nans == row.len()) {
        let nan = order[row.len() - nans];
        return Ok((nan, nan, 0.0));
    }
    let n = row.len() - nans;
    let rank = q * (n - 1) as f64;
    let (lo, hi) = (rank.floor(), rank.ceil());
    let (lo, hi, w) = match interpolation {
        "linear" => (lo, hi, rank - lo),
        "lower" => (lo, lo, 0.0),
        "higher" => (hi, hi, 0.0),
        "nearest" => {
            let r = rank.round_ties_even();
            (r, r, 0.0)
        }
        "midpoint" => (lo, hi, if hi > lo { 0.5 } else { 0.0 }),
        other => return Err(Error::Arg(format!("quantile: interpolation must be linear, lower, higher, midpoint or nearest, got {other:?}"))),
    };
    Ok((order[lo as usize], order[hi as usize], w))
}

/// `quantile(input, q, dim=None, keepdim=False, *, interpolation='linear')`
/// and `nanquantile`: q a number or a 1-D tensor (its length then leads
/// the result's shape), the whole input flattened without `dim`.
fn quantile(ctx: &Ctx, b: &Bound, skip_nan: bool) -> Result<Vec<Value>> {
    let what = if skip_nan { "nanquantile" } else { "quantile" };
    let x = input(ctx, b)?;
    if !x.dtype.is_float() {
        return Err(Error::Arg(format!("{what}: input must be a floating point tensor, got {}", x.dtype.name())));
    }
    let (qs, q_dim) = match b.value("q") {
        Value::Tensor(q) if q.rank() <= 1 => (q.to_f64_vec()?, q.rank() == 1),
        v => (vec![v.as_f64().ok_or_else(|| Error::Arg(format!("{what}: q must be a number or a 1-D tensor")))?], false),
    };
    if let Some(q) = qs.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        return Err(Error::Arg(format!("{what}: q = {q} must be in [0, 1]")));
    }
    let (interpolation, keepdim, along) = (b.str("interpolation")?, b.bool("keepdim")?, b.opt_int("dim")?);
    let (t, d) = match along {
        Some(d) if x.rank() > 0 => (x.t.clone(), dim(d, x.rank())?),
        _ => (x.t.flatten_all()?, 0),
    };
    let rows = Rows::along(&t, d)?;
    if rows.len == 0 {
        return Err(Error::Arg(format!("{what}: an empty input")));
    }
    let taps: Vec<Vec<(usize, usize, f64)>> =
        rows.rows().map(|r| qs.iter().map(|&q| quantile_taps(r, q, skip_nan, interpolation)).collect::<Result<Vec<_>>>()).collect::<Result<_>>()?;
    let pick = |f: fn(&(usize, usize, f64)) -> u32| -> Vec<Vec<u32>> { taps.iter().map(|r| r.iter().map(f).collect()).collect() };
    let (lo, hi) = (rows.gather(&pick(|t| t.0 as u32))?, rows.gather(&pick(|t| t.1 as u32))?);
    let w = Tensor::from_vec(taps.iter().flatten().map(|t| t.2).collect::<Vec<f64>>(), lo.dims(), lo.device())?.to_dtype(lo.dtype())?;
    // torch's lerp, lo + w·(hi - lo), shaped as `t` with dim `d` holding the quantiles.
    let last = lo.rank() - 1;
    let out = (&lo + (&hi - &lo)?.mul(&w)?)?.transpose(d, last)?;
    // The quantiles first, then the reduced dims.
    let order: Vec<usize> = std::iter::once(d).chain((0..out.rank()).filter(|&i| i != d)).collect();
    let out = out.permute(order)?.contiguous()?;
    let reduced: Vec<usize> = match (along, keepdim) {
        (Some(_), true) if x.rank() > 0 => x.dims().iter().enumerate().map(|(i, &n)| if i == d { 1 } else { n }).collect(),
        (Some(_), false) if x.rank() > 0 => x.dims().iter().enumerate().filter(|&(i, _)| i != d).map(|(_, &n)| n).collect(),
        (None, true) => vec![1; x.rank()],
        _ => vec![],
    };
    let lead = if q_dim { vec![qs.len()] } else { vec![] };
    Ok(vec![Value::Tensor(ctx.out(out.reshape([lead, reduced].concat())?, x.dtype)?)])
}

/// The order-statistic entries (Torch's; the Tensor methods by rule).
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.median"],
        sig: "input, dim=None, keepdim=False",
        forward: |c, b| median(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.nanmedian"],
        sig: "input, dim=None, keepdim=False",
        forward: |c, b| median(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.kthvalue"],
        sig: "input, k, dim=-1, keepdim=False",
        forward: kthvalue,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.quantile"],
        sig: "input, q, dim=None, keepdim=False, *, interpolation='linear'",
        forward: |c, b| quantile(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.nanquantile"],
        sig: "input, q, dim=None, keepdim=False, *, interpolation='linear'",
        forward: |c, b| quantile(c, b, true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_sorts_last_and_a_tied_pick_is_a_skip() {
        let row = [3.0, f64::NAN, 1.0, 2.0];
        assert_eq!(ascending(&row), vec![2, 3, 0, 1]);
        assert_eq!(kth_position(&row, 1, "kthvalue").unwrap(), 3);
        assert_eq!(median_position(&row, false, "median").unwrap(), 1);
        assert_eq!(median_position(&row, true, "nanmedian").unwrap(), 3);
        let tied = [1.0, 2.0, 1.0];
        match kth_position(&tied, 0, "kthvalue") {
            Err(Error::Unsupported(m)) => assert!(m.contains("occurs 2 times"), "{m}"),
            other => panic!("expected a skip, got {other:?}"),
        }
    }
}
