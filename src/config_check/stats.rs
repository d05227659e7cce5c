//! The `weights` and `dataset` checks: the tensor statistics (`max`,
//! `min`, `mean`, `norm`) the dynamic collection records per step and rank,
//! compared exactly, with the relative difference of each statistic.
//!
//! Differences from msprobe 8.3.2: the relative difference divides by the
//! bench value's magnitude (msprobe divides by the signed value, so a
//! negative `min` gave a negative difference); a weight or a step/rank file
//! only one pack has is a row and fails the check (msprobe lists bench-only
//! weights without failing, and ignores cmp-only files and, for the
//! dataset, any file one side lacks); a dataset input that is a tensor on
//! one side and not on the other is a failing row (msprobe crashes); the
//! dataset sheet keeps msprobe's computed `status` column (which it
//! drops); rows are in file order (msprobe's follow Python's set order).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::error::ConfigCheckError;
use super::pack::Pack;
use crate::dump::nonfinite;
use crate::xlsx::{Cell, Level, Table};

/// The four statistics, in column order.
const STATS: [&str; 4] = ["max", "min", "mean", "norm"];

/// The weights sheet's columns (msprobe's).
const WEIGHTS_HEADER: &[&str] = &["step", "rank", "weight_name", "equal", "max_relative_diff", "min_relative_diff", "mean_relative_diff", "norm_relative_diff"];
/// The dataset sheet's columns (msprobe's, and `status`).
const DATASET_HEADER: &[&str] =
    &["step", "rank", "tag", "equal", "max_relative_diff", "min_relative_diff", "mean_relative_diff", "norm_relative_diff", "status"];

/// A statistics file: its step, rank and name below `step<S>/rank<R>/`.
type Loc = (i64, i64, String);

/// A parsed statistics file and where it was.
type StatsFile = (Loc, Map<String, Value>);

/// Receives a dataset row: tag, equal, relative differences, status.
type RowSink<'a> = &'a mut dyn FnMut(&str, bool, Vec<Cell>, &str);

/// The `<target>/step<S>/rank<R>/<rest>` files of a pack: for the weights
/// every `.json` file (as msprobe walks them), for the dataset every
/// `dataset.json`; parsed.
fn files(pack: &Pack, target: &str, example: &str) -> Result<Vec<StatsFile>, ConfigCheckError> {
    let mut out = Vec::new();
    for (name, rel, bytes) in pack.under(target) {
        let wanted = if target == "weights" { rel.ends_with(".json") } else { rel == example || rel.ends_with(&format!("/{example}")) };
        if !wanted {
            continue;
        }
        let parts: Vec<&str> = rel.splitn(3, '/').collect();
        let number = |s: &str, prefix: &str| s.strip_prefix(prefix).and_then(|n| n.parse::<i64>().ok());
        let (Some(step), Some(rank), Some(rest)) = (parts.first().and_then(|s| number(s, "step")), parts.get(1).and_then(|r| number(r, "rank")), parts.get(2))
        else {
            return Err(pack.error(name, format!("expected {target}/step<N>/rank<N>/{example}, the layout the collection writes")));
        };
        match pack.json(name, bytes)? {
            Value::Object(m) => out.push(((step, rank, rest.to_string()), m)),
            _ => return Err(pack.error(name, "expected a JSON object")),
        }
    }
    Ok(out)
}

/// A feature dict's four statistics, or why it is not one.
fn features(v: &Value) -> Option<[f64; 4]> {
    let m = v.as_object()?;
    let mut out = [0.0; 4];
    for (slot, key) in out.iter_mut().zip(STATS) {
        let x = m.get(key)?;
        *slot = x.as_f64().or_else(|| nonfinite::value(x))?;
    }
    Some(out)
}

/// `|b - c| / |b|` per statistic, `None` where `b` is 0.
fn relative(b: [f64; 4], c: [f64; 4]) -> Vec<Cell> {
    b.iter().zip(c).map(|(&b, c)| Cell::number((b != 0.0).then(|| (b - c).abs() / b.abs()))).collect()
}

fn row(loc: &Loc, name: &str, equal: Cell, diffs: Vec<Cell>) -> Vec<Cell> {
    let mut r = vec![Cell::Int(loc.0), Cell::Int(loc.1), Cell::text(name), equal];
    r.extend(diffs);
    r
}

fn blank() -> Vec<Cell> {
    vec![Cell::Empty; 4]
}

/// Rows stably sorted by (step, rank); error when any `equal` is not `True`.
fn finish(header: &'static [&'static str], mut rows: Vec<Vec<Cell>>) -> (Level, Table) {
    rows.sort_by_key(|r| (r[0].display().parse::<i64>().unwrap_or(0), r[1].display().parse::<i64>().unwrap_or(0)));
    let level = if rows.iter().all(|r| r[3] == Cell::Bool(true)) { Level::Pass } else { Level::Error };
    (level, Table::new(header, rows))
}

/// The weights check over two packs.
pub fn weights(bench: &Pack, cmp: &Pack) -> Result<(Level, Table), ConfigCheckError> {
    let (b_files, c_files) = (files(bench, "weights", "weight.json")?, files(cmp, "weights", "weight.json")?);
    let stats = |pack: &Pack, loc: &Loc, name: &str, v: &Value| {
        features(v).ok_or_else(|| {
            pack.error(
                &format!("weights/step{}/rank{}/{}", loc.0, loc.1, loc.2),
                format!("key {name:?}: expected {{\"max\", \"min\", \"mean\", \"norm\"}} numbers"),
            )
        })
    };
    let c_index: HashMap<&Loc, &Map<String, Value>> = c_files.iter().map(|(l, m)| (l, m)).collect();
    let b_locs: HashSet<&Loc> = b_files.iter().map(|(l, _)| l).collect();
    let mut rows = Vec::new();
    for (loc, b) in &b_files {
        let c = c_index.get(loc).copied();
        for (name, bv) in b {
            let bs = stats(bench, loc, name, bv)?;
            match c.and_then(|c| c.get(name)) {
                Some(cv) => {
                    let cs = stats(cmp, loc, name, cv)?;
                    rows.push(row(loc, name, Cell::Bool(bs == cs), relative(bs, cs)));
                }
                None => rows.push(row(loc, name, Cell::text("only bench have"), blank())),
            }
        }
        for name in c.into_iter().flat_map(|c| c.keys()).filter(|n| !b.contains_key(*n)) {
            rows.push(row(loc, name, Cell::text("only cmp have"), blank()));
        }
    }
    for (loc, c) in c_files.iter().filter(|(l, _)| !b_locs.contains(l)) {
        rows.extend(c.keys().map(|name| row(loc, name, Cell::text("only cmp have"), blank())));
    }
    Ok(finish(WEIGHTS_HEADER, rows))
}

/// The dataset check over two packs.
pub fn dataset(bench: &Pack, cmp: &Pack) -> Result<(Level, Table), ConfigCheckError> {
    let (b_files, c_files) = (files(bench, "dataset", "dataset.json")?, files(cmp, "dataset", "dataset.json")?);
    let c_index: HashMap<&Loc, &Map<String, Value>> = c_files.iter().map(|(l, m)| (l, m)).collect();
    let b_locs: HashSet<&Loc> = b_files.iter().map(|(l, _)| l).collect();
    let mut rows = Vec::new();
    let side_only = |loc: &Loc, status: &str| {
        let mut r = row(loc, "dataset.json", Cell::Bool(false), blank());
        r.push(Cell::text(status));
        r
    };
    for (loc, b) in &b_files {
        match c_index.get(loc) {
            Some(c) => dicts(b, c, "", &mut |tag, equal, diffs, status| {
                let mut r = row(loc, tag, Cell::Bool(equal), diffs);
                r.push(Cell::text(status));
                rows.push(r);
            }),
            None => rows.push(side_only(loc, "only in bench")),
        }
    }
    for (loc, _) in c_files.iter().filter(|(l, _)| !b_locs.contains(l)) {
        rows.push(side_only(loc, "only in cmp"));
    }
    Ok(finish(DATASET_HEADER, rows))
}

/// msprobe's `compare_dataset_dicts`: each key of `d1` (tag `a.b.c`) is
/// deleted, a compared feature dict, skipped (not a dict), or recursed
/// into; then each key only `d2` has is added.
fn dicts(d1: &Map<String, Value>, d2: &Map<String, Value>, tag: &str, out: RowSink) {
    let join = |k: &str| if tag.is_empty() { k.to_string() } else { format!("{tag}.{k}") };
    for (key, v1) in d1 {
        let t = join(key);
        let Some(v2) = d2.get(key) else {
            out(&t, false, blank(), "delete");
            continue;
        };
        let Some(m1) = v1.as_object() else { continue };
        let is_features = m1.len() == 4 && STATS.iter().all(|k| m1.contains_key(*k));
        match (is_features, features(v1), features(v2), v2.as_object()) {
            (true, Some(a), Some(b), Some(m2)) => {
                let equal = m2.len() == 4 && a == b;
                out(&t, equal, relative(a, b), if equal { "unchanged" } else { "changed" });
            }
            (false, _, _, Some(m2)) => dicts(m1, m2, &t, out),
            _ => out(&t, false, blank(), "changed"),
        }
    }
    for key in d2.keys().filter(|k| !d1.contains_key(*k)) {
        out(&join(key), false, blank(), "added");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dataset_dicts_compare_features_and_report_structure_changes() {
        let f = |x: f64| json!({"max": x, "min": -x, "mean": 0.0, "norm": 2.0});
        let d1 = json!({"args": {"0": f(1.0), "1": ""}, "kwargs": {"mask": f(2.0), "ids": f(1.0)}});
        let d2 = json!({"args": {"0": f(2.0), "1": ""}, "kwargs": {"mask": "", "extra": f(1.0)}});
        let mut rows = Vec::new();
        dicts(d1.as_object().unwrap(), d2.as_object().unwrap(), "", &mut |t, e, d, s| {
            rows.push(format!("{t} {e} {} {s}", d.iter().map(Cell::display).collect::<Vec<_>>().join(",")))
        });
        assert_eq!(
            rows,
            vec!["args.0 false 1.0,1.0,,0.0 changed", "kwargs.mask false ,,, changed", "kwargs.ids false ,,, delete", "kwargs.extra false ,,, added"]
        );
    }
}
