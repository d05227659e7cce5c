//! The verdict: reproducible or not, what each variant changed, and the
//! conclusion of document 36 ("模型计算结果改变原因分析") in words.

use serde_json::{json, Value};

use super::compare::Difference;
use super::runs::Variant;

/// What the runs showed.
#[derive(Debug)]
pub struct Verdict {
    /// Steps each run recorded (the most of any rank).
    pub steps: usize,
    /// Processes that recorded (1 for a single process).
    pub ranks: usize,
    /// Run 2 against run 1: empty when the run is bitwise reproducible.
    pub repeat: Difference,
    /// Each compared variant against run 1 (none when not reproducible).
    pub variants: Vec<(Variant, Difference)>,
    /// The conclusion in words.
    pub conclusion: String,
}

/// At most three names, then how many more; with several ranks, the
/// ranks they changed on.
fn names(diff: &Difference, ranks: usize) -> String {
    let mut text = diff.changed.iter().take(3).map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ");
    if diff.changed.len() > 3 {
        text.push_str(&format!(" and {} more", diff.changed.len() - 3));
    }
    if ranks > 1 {
        let list = diff.changed_ranks.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
        let noun = if diff.changed_ranks.len() == 1 { "rank" } else { "ranks" };
        text.push_str(&format!(" on {noun} {list} of {ranks}"));
    }
    text
}

/// The clause of document 36 for one variant.
fn clause(variant: Variant, diff: &Difference, ranks: usize) -> String {
    let changed = !diff.changed.is_empty();
    match (variant, changed) {
        (Variant::Sync, true) => format!("synchronisation (ASCEND_LAUNCH_BLOCKING=1, a host read of each op's output, as statistics collection does) changes {}: the change comes from synchronisation, not from the tool's hooks (a NaN that disappears with the tool on); collect with msprobe's async_dump (\"async_dump\": true in config.json), which reads no value on the host per op, or compare runs that both set ASCEND_LAUNCH_BLOCKING=1", names(diff, ranks)),
        (Variant::Sync, false) => "synchronisation changes nothing".into(),
        (Variant::ModuleHooks, true) => format!("no-op module hooks (msprobe's L0/mix) change {} (accumulation order of gradients at a fan-out): collect at L1, or compare runs that both have the tool on", names(diff, ranks)),
        (Variant::ModuleHooks, false) => "no-op module hooks change nothing".into(),
        (Variant::ApiHooks, true) => format!("no-op API wrappers (msprobe's L1) change {}: code that finds torch's functions by identity, or hooks them itself, meets the wrappers; collect at L0 (module hooks, no API wrappers), or compare runs that both have the tool on", names(diff, ranks)),
        (Variant::ApiHooks, false) => "no-op API wrappers change nothing".into(),
        (Variant::Baseline, _) => String::new(),
    }
}

impl Verdict {
    /// The verdict of these comparisons.
    pub fn new(steps: usize, ranks: usize, repeat: Difference, variants: Vec<(Variant, Difference)>) -> Verdict {
        let conclusion = match repeat.changed.first() {
            Some(first) => format!(
                "the run is not reproducible: two unchanged runs differ first in {} (step {}{}); fix that first: a seed not fixed (torch.manual_seed, numpy, random, the data loader's workers) or a nondeterministic kernel (torch.use_deterministic_algorithms(True), HCCL_DETERMINISTIC=true); nothing else is judged",
                first.name,
                first.step,
                if ranks > 1 { format!(", rank {}", repeat.changed_ranks.first().copied().unwrap_or(0)) } else { String::new() }
            ),
            None => {
                let clauses: Vec<String> = variants.iter().map(|(v, d)| clause(*v, d, ranks)).collect();
                format!("the run is reproducible; {}", clauses.join("; "))
            }
        };
        Verdict { steps, ranks, repeat, variants, conclusion }
    }

    /// Whether two unchanged runs were bitwise identical.
    pub fn reproducible(&self) -> bool {
        self.repeat.changed.is_empty()
    }

    /// The JSON report (RC.md's keys): `reproducible`, `steps`, `ranks`,
    /// `variants` (each `judged`, `changed`, `changed_tensors`,
    /// `changed_ranks`, `first_changed` with the max abs differences,
    /// `first_op`), `conclusion`.
    pub fn to_json(&self) -> Value {
        let variants: serde_json::Map<String, Value> = Variant::COMPARED
            .iter()
            .map(|&v| {
                let entry = match self.variants.iter().find(|(w, _)| *w == v) {
                    Some((_, d)) => json!({
                        "judged": true,
                        "changed": !d.changed.is_empty(),
                        "changed_tensors": d.changed.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
                        "changed_ranks": d.changed_ranks,
                        "first_changed": d.changed.iter().take(5).collect::<Vec<_>>(),
                        "first_op": d.first_op,
                        "conclusion": clause(v, d, self.ranks),
                    }),
                    None => json!({"judged": false, "changed": null, "changed_tensors": [], "changed_ranks": [], "first_changed": [], "first_op": null, "conclusion": "not judged: the run is not reproducible"}),
                };
                (v.as_str().to_owned(), entry)
            })
            .collect();
        json!({
            "reproducible": self.reproducible(),
            "steps": self.steps,
            "ranks": self.ranks,
            "repeat": {
                "changed_tensors": self.repeat.changed.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
                "changed_ranks": self.repeat.changed_ranks,
                "first_changed": self.repeat.changed.iter().take(5).collect::<Vec<_>>(),
                "first_op": self.repeat.first_op,
            },
            "variants": variants,
            "conclusion": self.conclusion,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result_change::compare::Changed;

    fn diff(names: &[&str]) -> Difference {
        let changed_ranks = if names.is_empty() { vec![] } else { vec![0] };
        Difference { changed: names.iter().map(|n| Changed { name: (*n).into(), step: 0, max_abs_diff: 1e-7 }).collect(), first_op: None, changed_ranks }
    }

    #[test]
    fn a_reproducible_run_gets_one_clause_per_variant() {
        let v = Verdict::new(
            2,
            1,
            diff(&[]),
            vec![(Variant::Sync, diff(&[])), (Variant::ModuleHooks, diff(&["a", "b", "c", "d"])), (Variant::ApiHooks, diff(&[]))],
        );
        assert_eq!(v.conclusion, "the run is reproducible; synchronisation changes nothing; no-op module hooks (msprobe's L0/mix) change a, b, c and 1 more (accumulation order of gradients at a fan-out): collect at L1, or compare runs that both have the tool on; no-op API wrappers change nothing");
        let j = v.to_json();
        assert_eq!(j["variants"]["module_hooks"]["changed_tensors"], json!(["a", "b", "c", "d"]));
        assert_eq!(j["variants"]["sync"]["changed"], json!(false));
    }

    #[test]
    fn an_irreproducible_run_judges_nothing_else() {
        let v = Verdict::new(1, 1, diff(&["loss"]), vec![]);
        assert!(!v.reproducible());
        assert!(v.conclusion.starts_with("the run is not reproducible: two unchanged runs differ first in loss (step 0)"), "{}", v.conclusion);
        assert_eq!(v.to_json()["variants"]["api_hooks"]["judged"], json!(false));
    }

    #[test]
    fn several_ranks_name_the_ranks_that_changed() {
        let on_rank_1 = Difference { changed_ranks: vec![1], ..diff(&["net1.ln1.weight"]) };
        let v = Verdict::new(3, 2, diff(&[]), vec![(Variant::Sync, diff(&[])), (Variant::ModuleHooks, on_rank_1), (Variant::ApiHooks, diff(&[]))]);
        assert!(v.conclusion.contains("no-op module hooks (msprobe's L0/mix) change net1.ln1.weight on rank 1 of 2 (accumulation order"), "{}", v.conclusion);
        let j = v.to_json();
        assert_eq!((j["ranks"].clone(), j["variants"]["module_hooks"]["changed_ranks"].clone()), (json!(2), json!([1])));
        assert_eq!(j["variants"]["sync"]["changed_ranks"], json!([]));
    }
}
