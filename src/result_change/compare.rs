//! Two runs compared bit for bit, rank by rank: the loss and grad norm by
//! their exact hex forms, each parameter's gradient by its hash, op outputs
//! by theirs; by how much from the recorded values and statistics.

use serde::Serialize;
use serde_json::Value;

use super::runs::Ranks;

/// A tensor that changed, first seen at `step`, with the largest absolute
/// difference of its recorded value (loss, grad norm) or statistics (max,
/// min, mean, norm of a gradient) over the steps.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Changed {
    /// `loss`, `grad_norm` or a parameter name.
    pub name: String,
    /// The first step where it differs.
    pub step: usize,
    /// The largest absolute difference seen (0 when only the bits differ).
    pub max_abs_diff: f64,
}

/// The first op whose output hash differs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FirstOp {
    /// The step.
    pub step: usize,
    /// Its position in call order.
    pub index: usize,
    /// The op in the baseline run.
    pub baseline: String,
    /// The op in the other run.
    pub other: String,
}

/// What differs between a run and the baseline.
#[derive(Debug, Clone, Default)]
pub struct Difference {
    /// Every changed tensor in first-seen order (loss, grad norm, parameters
    /// in order; over several ranks, the lowest changed rank's first).
    pub changed: Vec<Changed>,
    /// With op hashes: the first op that differs (on the lowest changed rank).
    pub first_op: Option<FirstOp>,
    /// The ranks where anything changed, ascending (a single process is rank 0).
    pub changed_ranks: Vec<usize>,
}

/// Compares every rank of `other` with the same rank of `baseline` (the
/// same ranks, each with the same step count: checked by the caller).
pub fn compare_ranks(baseline: &Ranks, other: &Ranks) -> Difference {
    let mut diff = Difference::default();
    for (rank, steps) in baseline {
        let d = compare(steps, other.get(rank).map_or(&[][..], Vec::as_slice));
        if d.changed.is_empty() && d.first_op.is_none() {
            continue;
        }
        diff.changed_ranks.push(*rank);
        for c in d.changed {
            note(&mut diff.changed, &c.name, c.step, c.max_abs_diff);
        }
        diff.first_op = diff.first_op.or(d.first_op);
    }
    diff
}

const STATS: [&str; 4] = ["max", "min", "mean", "norm"];

/// Compares `other` with `baseline`, step by step (same step count).
pub fn compare(baseline: &[Value], other: &[Value]) -> Difference {
    let mut diff = Difference::default();
    for (step, (a, b)) in baseline.iter().zip(other).enumerate() {
        for key in ["loss", "grad_norm"] {
            if a[format!("{key}_hex")] != b[format!("{key}_hex")] {
                note(&mut diff.changed, key, step, abs_diff(&a[key], &b[key]));
            }
        }
        let empty = serde_json::Map::new();
        let (pa, pb) = (a["params"].as_object().unwrap_or(&empty), b["params"].as_object().unwrap_or(&empty));
        for (name, ga) in pa {
            let gb = &pb.get(name).cloned().unwrap_or(Value::Null);
            if ga["hash"] != gb["hash"] {
                let by = STATS.iter().map(|s| abs_diff(&ga[*s], &gb[*s])).fold(0.0, f64::max);
                note(&mut diff.changed, name, step, by);
            }
        }
        if diff.first_op.is_none() {
            diff.first_op = first_op(step, &a["ops"], &b["ops"]);
        }
    }
    diff
}

/// Adds or updates `name` in `changed`.
fn note(changed: &mut Vec<Changed>, name: &str, step: usize, by: f64) {
    match changed.iter_mut().find(|c| c.name == name) {
        Some(c) => c.max_abs_diff = c.max_abs_diff.max(by),
        None => changed.push(Changed { name: name.into(), step, max_abs_diff: by }),
    }
}

/// |a - b| of two recorded numbers; 0 when either is missing or not finite.
fn abs_diff(a: &Value, b: &Value) -> f64 {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if (x - y).is_finite() => (x - y).abs(),
        _ => 0.0,
    }
}

/// The first op whose output hash differs between two `ops` lists of
/// `[name, hash]`, compared by hash alone (the variants name ops their own
/// way) after dropping an op whose output an earlier op already gave (a
/// hook's pass-through, such as `view_as`, adds nothing).
fn first_op(step: usize, a: &Value, b: &Value) -> Option<FirstOp> {
    let (a, b) = (distinct_outputs(a.as_array()?), distinct_outputs(b.as_array()?));
    let name = |ops: &[(&str, &Value)], i: usize| ops.get(i).map_or("(none)", |op| op.0).to_owned();
    (0..a.len().max(b.len())).find(|&i| a.get(i).map(|op| op.1) != b.get(i).map(|op| op.1)).map(|index| FirstOp {
        step,
        index,
        baseline: name(&a, index),
        other: name(&b, index),
    })
}

/// `(name, hash)` of each op, without those whose output an earlier op
/// already gave.
fn distinct_outputs(ops: &[Value]) -> Vec<(&str, &Value)> {
    let mut seen = std::collections::HashSet::new();
    ops.iter().filter(|op| seen.insert(op[1].to_string())).map(|op| (op[0].as_str().unwrap_or("?"), &op[1])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(loss: f64, hash: &str, mean: f64) -> Value {
        json!({"loss": loss, "loss_hex": format!("{loss:e}"), "grad_norm": 1.0, "grad_norm_hex": "1",
               "params": {"w": {"hash": "h", "mean": 0.0}, "b": {"hash": hash, "max": 1.0, "min": 0.0, "mean": mean, "norm": 1.0}},
               "ops": [["linear", "x"], ["view_as", "x"], ["relu", hash]]})
    }

    #[test]
    fn equal_runs_differ_in_nothing() {
        let d = compare(&[step(1.0, "a", 0.5)], &[step(1.0, "a", 0.5)]);
        assert!(d.changed.is_empty() && d.first_op.is_none());
    }

    #[test]
    fn changed_tensors_come_in_order_with_the_largest_difference() {
        let d = compare(&[step(1.0, "a", 0.5), step(1.0, "a", 0.5)], &[step(1.0, "b", 0.25), step(1.5, "c", 0.0)]);
        assert_eq!(d.changed, vec![Changed { name: "b".into(), step: 0, max_abs_diff: 0.5 }, Changed { name: "loss".into(), step: 1, max_abs_diff: 0.5 }]);
        assert_eq!(d.first_op, Some(FirstOp { step: 0, index: 1, baseline: "relu".into(), other: "relu".into() }), "view_as repeats linear's output");
    }

    #[test]
    fn ranks_are_compared_each_with_its_own_and_the_changed_ones_named() {
        let ranks = |steps: &[(usize, Value)]| steps.iter().map(|(r, s)| (*r, vec![s.clone()])).collect::<Ranks>();
        let base = ranks(&[(0, step(1.0, "a", 0.5)), (1, step(1.0, "a", 0.5)), (2, step(1.0, "a", 0.5))]);
        let other = ranks(&[(0, step(1.0, "a", 0.5)), (1, step(1.0, "b", 0.25)), (2, step(1.0, "c", 0.5))]);
        let d = compare_ranks(&base, &other);
        assert_eq!(d.changed_ranks, [1, 2]);
        assert_eq!(d.changed, vec![Changed { name: "b".into(), step: 0, max_abs_diff: 0.25 }]);
        assert!(compare_ranks(&base, &base).changed_ranks.is_empty());
    }
}
