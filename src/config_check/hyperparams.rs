//! The `hyperparameters` check: hyperparameters read from launch scripts
//! and YAML configs (static collection), compared by name between packs.
//!
//! Collection (msprobe's `HyperparameterChecker.pack`): each `-d` file is
//! read by its suffix (`.sh`: [`super::shell`]; `.yaml` and `.yml`:
//! [`super::yaml`], each file on its own) and the results are merged: a
//! key seen again with another value becomes `{"description":
//! "duplicate_value", "values": [first, second, ...]}`.
//!
//! Comparison (msprobe's `compare_param`), per file present in both packs
//! (`hyperparameters_static.json`, `hyperparameters_dynamic.json`): each
//! name is reduced to its last `.`-segment with `-` as `_`; a bench name
//! finds its cmp name by the same name, then through msprobe's alias table,
//! then by the best `difflib` ratio above 0.8; values compare as Python
//! compares `str()` of numbers and the values themselves. Rows are sorted.
//! Differences from msprobe 8.3.2: matching is one to one (a cmp name
//! matched once is not matched again; msprobe raises `KeyError`), two names
//! of one file with the same last segment keep their full names (msprobe
//! drops one of them from the bench side), `bf16` and `fp32` are not
//! aliases of each other (msprobe maps both to `compute_dtype`, so
//! `--bf16` in one run matched `--fp32` in the other), and a third distinct
//! value of a key is appended to `values` (msprobe nests objects).

use serde_json::{Map, Value};

use super::difflib;
use super::pyvalue;
use crate::xlsx::{Cell, Level, Table};

/// msprobe's alias table (`hyperparameter.yaml`), less `bf16`/`fp32`.
const ALIASES: [(&str, &[&str]); 8] = [
    ("learning_rate", &["lr", "learningrate"]),
    ("batch_size", &["batch", "bs", "batch_size_per_gpu"]),
    ("epochs", &["num_epochs", "max_epochs", "epoch"]),
    ("weight_decay", &["wd", "weightdecay"]),
    ("dropout_rate", &["dropout", "drop_rate"]),
    ("compute_dtype", &[]),
    ("residual_dtype", &["fp32_residual_connection"]),
    ("softmax_compute_dtype", &["attention_softmax_in_fp32"]),
];

/// The pack's files, in msprobe's order.
pub const FILES: [&str; 2] = ["hyperparameters_static.json", "hyperparameters_dynamic.json"];

/// The sheet's columns (msprobe's).
pub const HEADER: &[&str] = &["file_name", "bench_para", "cmp_para", "bench_value", "cmp_value", "matched_with", "level"];

/// msprobe's `update_dict`: `new` merged into `all`.
pub fn merge(all: &mut Map<String, Value>, new: Map<String, Value>) {
    for (key, value) in new {
        match all.get_mut(&key) {
            Some(old) if !pyvalue::eq(old, &value) => {
                let duplicate = old.get("description").and_then(Value::as_str) == Some("duplicate_value");
                match old.get_mut("values").and_then(Value::as_array_mut) {
                    Some(values) if duplicate => values.push(value),
                    _ => *old = serde_json::json!({"description": "duplicate_value", "values": [old.take(), value]}),
                }
            }
            Some(_) => {}
            None => {
                all.insert(key, value);
            }
        }
    }
}

/// Short names (last `.`-segment, `-` as `_`) → full names, in file order;
/// names whose short form collides keep their full form.
fn refine(params: &Map<String, Value>) -> Vec<(String, String)> {
    let short = |k: &str| k.rsplit('.').next().unwrap_or(k).replace('-', "_");
    params
        .keys()
        .map(|k| {
            let s = short(k);
            let unique = params.keys().filter(|o| short(o) == s).count() == 1;
            (if unique { s } else { k.replace('-', "_") }, k.clone())
        })
        .collect()
}

/// msprobe's `_fuzzy_match_parameter`: the cmp short name `name` matches,
/// and how (`pure name`, `mapping`, `similarity:<ratio>`).
fn find(name: &str, available: &[(String, String)]) -> Option<(usize, String)> {
    let position = |n: &str| available.iter().position(|(s, _)| s == n);
    if let Some(i) = position(name) {
        return Some((i, "pure name".into()));
    }
    if let Some((canonical, aliases)) = ALIASES.iter().find(|(c, a)| *c == name || a.contains(&name)) {
        if let Some(i) = std::iter::once(canonical).chain(aliases.iter()).find_map(|n| position(n)) {
            return Some((i, "mapping".into()));
        }
    }
    let mut best: Option<(usize, f64)> = None;
    for (i, (candidate, _)) in available.iter().enumerate() {
        let r = difflib::ratio(&name.to_lowercase(), &candidate.to_lowercase());
        if r > best.map_or(0.8, |(_, b)| b) {
            best = Some((i, r));
        }
    }
    best.map(|(i, r)| (i, format!("similarity:{}", runtime::pyfmt::repr(r))))
}

/// msprobe's `to_str_if_number`: numbers (and bools) as Python prints them.
fn to_str(v: &Value) -> Value {
    if pyvalue::is_number(v) {
        Value::String(pyvalue::str(v))
    } else {
        v.clone()
    }
}

/// A value's cell as pandas writes it: `None` empty, numbers as numbers,
/// booleans as booleans, anything else as its `str()`.
fn cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Empty,
        Value::Bool(b) => Cell::Bool(*b),
        Value::Number(n) => n.as_i64().map(Cell::Int).unwrap_or_else(|| Cell::Number(n.as_f64().unwrap_or(f64::NAN))),
        _ => match crate::dump::nonfinite::value(v) {
            Some(x) if x.is_nan() => Cell::Empty,
            Some(x) => Cell::Number(x),
            None => Cell::Text(pyvalue::str(v)),
        },
    }
}

/// The rows of one file present in both packs.
pub fn compare_file(file: &str, bench: &Map<String, Value>, cmp: &Map<String, Value>) -> Vec<Vec<Cell>> {
    let mut available = refine(cmp);
    let mut rows = Vec::new();
    for (short, full) in refine(bench) {
        let bv = to_str(&bench[&full]);
        match find(&short, &available) {
            Some((i, how)) => {
                let (_, cmp_full) = available.remove(i);
                let cv = to_str(&cmp[&cmp_full]);
                if !pyvalue::eq(&bv, &cv) {
                    rows.push(vec![Cell::text(file), Cell::Text(full), Cell::Text(cmp_full), cell(&bv), cell(&cv), Cell::Text(how), Cell::level(Level::Error)]);
                }
            }
            None => rows.push(vec![
                Cell::text(file),
                Cell::Text(full),
                Cell::text("Only in benchmark"),
                cell(&bv),
                Cell::Empty,
                Cell::Empty,
                Cell::level(Level::Warning),
            ]),
        }
    }
    for (_, cmp_full) in available {
        let cv = cell(&cmp[&cmp_full]);
        rows.push(vec![Cell::text(file), Cell::text("Only in comparison"), Cell::Text(cmp_full), Cell::Empty, cv, Cell::Empty, Cell::level(Level::Warning)]);
    }
    rows
}

/// The table of all files' rows, sorted as msprobe sorts them (by file,
/// bench name, cmp name).
pub fn compare(files: Vec<Vec<Vec<Cell>>>) -> Table {
    let mut rows: Vec<Vec<Cell>> = files.into_iter().flatten().collect();
    rows.sort_by(|a, b| a[..3].iter().map(Cell::display).cmp(b[..3].iter().map(Cell::display)));
    Table::new(HEADER, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn names_match_by_name_alias_and_similarity() {
        let bench = map(json!({"lr": "1e-4", "seq-length": "4096", "train.epochs": 3, "bf16": true, "seed": "42", "only_b": 1}));
        let cmp = map(json!({"learning_rate": 0.0001, "seq_len": "2048", "num_epochs": 3, "fp32": true, "seed": "42", "extra": false}));
        let rows: Vec<Vec<String>> = compare(vec![compare_file("hyperparameters_static.json", &bench, &cmp)]).texts();
        let f = "hyperparameters_static.json";
        assert_eq!(
            rows,
            vec![
                vec![f, "Only in comparison", "extra", "", "False", "", "warning"],
                vec![f, "Only in comparison", "fp32", "", "True", "", "warning"],
                vec![f, "bf16", "Only in benchmark", "True", "", "", "warning"],
                vec![f, "lr", "learning_rate", "1e-4", "0.0001", "mapping", "error"],
                vec![f, "only_b", "Only in benchmark", "1", "", "", "warning"],
                vec![f, "seq-length", "seq_len", "4096", "2048", "similarity:0.8235294117647058", "error"],
            ]
        );
    }

    #[test]
    fn one_cmp_name_matches_one_bench_name() {
        let rows = compare_file("f", &map(json!({"lr": "1", "learning_rate": "2"})), &map(json!({"learning_rate": "1"})));
        let texts = Table::new(HEADER, rows).texts();
        assert_eq!(texts, vec![vec!["f", "learning_rate", "Only in benchmark", "2", "", "", "warning"]]);
    }

    #[test]
    fn colliding_short_names_keep_their_full_names() {
        let rows = compare_file("f", &map(json!({"model.lr": 1, "optim.lr": 2})), &map(json!({"model.lr": 1, "optim.lr": 3})));
        assert_eq!(Table::new(HEADER, rows).texts(), vec![vec!["f", "optim.lr", "optim.lr", "2", "3", "pure name", "error"]]);
    }

    #[test]
    fn merging_collects_every_distinct_value() {
        let mut all = Map::new();
        merge(&mut all, map(json!({"lr": "1", "seed": "1"})));
        merge(&mut all, map(json!({"lr": "2", "seed": "1"})));
        merge(&mut all, map(json!({"lr": "3"})));
        assert_eq!(Value::Object(all), json!({"lr": {"description": "duplicate_value", "values": ["1", "2", "3"]}, "seed": "1"}));
    }
}
