//! MindSpore's own reductions whose keyword is `keepdims` (torch's
//! `keepdim`): `mindspore.ops.amax`, `amin`, `nansum`, `nanmean`,
//! `std_mean`, `var_mean`. Their other parameters are torch's (`axis` binds
//! as `dim`), so each runs torch's forward on its arguments renamed.

use super::reduce::{extreme, nan_reduce, var_mean_of};
use super::{Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::Value;

/// amax/amin: `initial` and `where` (NumPy's) are not replayed.
fn ms_extreme(ctx: &Ctx, b: &Bound, max: bool) -> Result<Vec<Value>> {
    if !b.is_none("initial") || !b.is_none("where") {
        return Err(Error::Unsupported("mindspore.ops.amax/amin with initial or where is not replayed".into()));
    }
    extreme(ctx, &b.renamed("keepdims", "keepdim"), max)
}

/// std_mean/var_mean: `ddof` (0 by default, where torch's correction is 1).
fn ms_var_mean(ctx: &Ctx, b: &Bound, sqrt: bool) -> Result<Vec<Value>> {
    var_mean_of(ctx, b, b.float("ddof")?, b.bool("keepdims")?, sqrt)
}

/// An entry of MindSpore's own name, judged by the run's standard.
const fn ms_reduction(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, facts: &'static [Fact]) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: false, facts }
}

/// The entries.
pub static OPS: &[Op] = &[
    ms_reduction(&["MS.Functional.amax"], "input, dim=None, keepdims=False, *, initial=None, where=None", |c, b| ms_extreme(c, b, true), &[]),
    ms_reduction(&["MS.Functional.amin"], "input, dim=None, keepdims=False, *, initial=None, where=None", |c, b| ms_extreme(c, b, false), &[]),
    ms_reduction(
        &["MS.Functional.nansum"],
        "input, dim=None, keepdims=False, *, dtype=None",
        |c, b| nan_reduce(c, &b.renamed("keepdims", "keepdim"), false),
        &[Fact::Rounding(Rounding::Sums)],
    ),
    ms_reduction(
        &["MS.Functional.nanmean"],
        "input, dim=None, keepdims=False, *, dtype=None",
        |c, b| nan_reduce(c, &b.renamed("keepdims", "keepdim"), true),
        &[Fact::Rounding(Rounding::Sums)],
    ),
    ms_reduction(&["MS.Functional.var_mean"], "input, dim=None, ddof=0, keepdims=False", |c, b| ms_var_mean(c, b, false), &[]),
    ms_reduction(&["MS.Functional.std_mean"], "input, dim=None, ddof=0, keepdims=False", |c, b| ms_var_mean(c, b, true), &[]),
];
