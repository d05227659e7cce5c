//! The `env` check: the environment variables that make runs differ
//! (msprobe's `env.yaml`), collected from this process and compared
//! between two packs.
//!
//! A side is an NPU when any of its variable names contains `ASCEND`, else
//! a GPU, and each table entry names the variable on each device type with
//! the default an unset variable has. Differences from msprobe 8.3.2: the
//! bench columns show the bench pack (msprobe swaps the two sides), the
//! second HCCL entry is `HCCL_INTRA_PCIE_ENABLE` (msprobe's table names
//! `HCCL_INTRA_ROCE_ENABLE` twice), values and defaults compare as text
//! ignoring ASCII case (msprobe compares the string `"0"` with the int `0`
//! and finds them different), and collection packs only the variables the
//! check reads (the table's, and those whose names contain `ASCEND`) rather
//! than the whole environment, so no secret in the environment ends up in
//! a pack; the comparison is the same.

use serde_json::{Map, Value};

use crate::xlsx::{Cell, Level, Table};

/// One variable of the table: its name on an NPU and on a GPU (when the
/// device type has one), each with its default.
struct Entry {
    npu: (&'static str, &'static str),
    gpu: Option<(&'static str, &'static str)>,
}

const TABLE: [Entry; 6] = [
    Entry { npu: ("HCCL_DETERMINISTIC", "false"), gpu: Some(("NCCL_DETERMINISTIC", "false")) },
    Entry { npu: ("HCCL_ALGO", "None"), gpu: Some(("NCCL_ALGO", "None")) },
    Entry { npu: ("HCCL_INTRA_ROCE_ENABLE", "0"), gpu: None },
    Entry { npu: ("HCCL_INTRA_PCIE_ENABLE", "1"), gpu: None },
    Entry { npu: ("ASCEND_LAUNCH_BLOCKING", "0"), gpu: Some(("CUDA_LAUNCH_BLOCKING", "0")) },
    Entry { npu: ("ASCEND_RT_VISIBLE_DEVICES", "None"), gpu: Some(("CUDA_VISIBLE_DEVICES", "None")) },
];

/// The sheet's columns (msprobe's).
pub const HEADER: &[&str] = &["bench_env_name", "cmp_env_name", "bench_value", "cmp_value", "level"];

/// The variables of `vars` the check reads, sorted by name.
pub fn collect(vars: impl IntoIterator<Item = (String, String)>) -> Map<String, Value> {
    let wanted = |name: &str| name.contains("ASCEND") || TABLE.iter().any(|e| e.npu.0 == name || e.gpu.is_some_and(|g| g.0 == name));
    let mut picked: Vec<(String, String)> = vars.into_iter().filter(|(k, _)| wanted(k)).collect();
    picked.sort();
    picked.into_iter().map(|(k, v)| (k, Value::String(v))).collect()
}

fn is_npu(env: &Map<String, Value>) -> bool {
    env.keys().any(|k| k.contains("ASCEND"))
}

/// The value of `name` on a side, or the default, as text.
fn value(env: &Map<String, Value>, (name, default): (&str, &str)) -> String {
    match env.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => default.to_string(),
    }
}

/// The rows of two packs' `env` files: a differing value is an error, a
/// variable only one side's device type has is a warning.
pub fn compare(bench: &Map<String, Value>, cmp: &Map<String, Value>) -> Table {
    let side = |env: &Map<String, Value>, e: &Entry| if is_npu(env) { Some(e.npu) } else { e.gpu };
    let mut rows = Vec::new();
    for e in &TABLE {
        match (side(bench, e), side(cmp, e)) {
            (None, None) => {}
            (Some(b), Some(c)) => {
                let (bv, cv) = (value(bench, b), value(cmp, c));
                if !bv.eq_ignore_ascii_case(&cv) {
                    rows.push(vec![Cell::text(b.0), Cell::text(c.0), Cell::Text(bv), Cell::Text(cv), Cell::level(Level::Error)]);
                }
            }
            (Some(b), None) => {
                rows.push(vec![Cell::text(b.0), Cell::text("only bench has this env"), Cell::Text(value(bench, b)), Cell::Empty, Cell::level(Level::Warning)])
            }
            (None, Some(c)) => {
                rows.push(vec![Cell::text("only cmp has this env"), Cell::text(c.0), Cell::Empty, Cell::Text(value(cmp, c)), Cell::level(Level::Warning)])
            }
        }
    }
    Table::new(HEADER, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn collection_keeps_only_what_the_check_reads() {
        let vars = [("PATH", "/bin"), ("ASCEND_HOME_PATH", "/a"), ("HCCL_ALGO", "ring"), ("API_TOKEN", "secret")].map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(Value::Object(collect(vars)), json!({"ASCEND_HOME_PATH": "/a", "HCCL_ALGO": "ring"}));
    }

    #[test]
    fn npu_bench_against_gpu_cmp_keeps_each_side_in_its_columns() {
        let bench = env(json!({"ASCEND_HOME_PATH": "/a", "HCCL_DETERMINISTIC": "true"}));
        let cmp = env(json!({"NCCL_ALGO": "Ring", "CUDA_LAUNCH_BLOCKING": "0"}));
        let t = compare(&bench, &cmp);
        assert_eq!(
            t.texts(),
            vec![
                vec!["HCCL_DETERMINISTIC", "NCCL_DETERMINISTIC", "true", "false", "error"],
                vec!["HCCL_ALGO", "NCCL_ALGO", "None", "Ring", "error"],
                vec!["HCCL_INTRA_ROCE_ENABLE", "only bench has this env", "0", "", "warning"],
                vec!["HCCL_INTRA_PCIE_ENABLE", "only bench has this env", "1", "", "warning"],
            ]
        );
        assert_eq!(t.level(), Level::Error);
    }

    #[test]
    fn unset_equals_its_default_whatever_the_case() {
        let bench = env(json!({"HCCL_DETERMINISTIC": "False", "ASCEND_LAUNCH_BLOCKING": "0"}));
        let cmp = env(json!({"ASCEND_X": "1"}));
        assert!(compare(&bench, &cmp).rows.is_empty());
    }
}
