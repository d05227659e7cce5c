//! The op table measured against msprobe's hook lists: per framework and
//! prefix, the share of the names msprobe's dump tool can record that the
//! runtime replays natively (`ops::lookup`, derived names included), for
//! msprobe 8.3.2's lists (`runtime/src/ops/hook_lists/`) and 26.2.0's
//! (`hook_coverage/*_support_wrap_ops_26.2.0.yaml`, copied unchanged from
//! the mindstudio-probe 26.2.0 wheel). The shares may only rise: each is
//! pinned as a floor below. `HOOK_TABLE=1` prints the README's table
//! (scripts/zoo-coverage.sh), `HOOK_MISSING=1` the names not replayed.
//!
//! A list name counts once per list; a dotted name (`linalg.norm`,
//! `auto_generate.quant_matmul`) is dumped by its last part.

use std::path::Path;

use runtime::ops;
use runtime::ops::hooks::LISTS;
use runtime::spec::Framework;

/// The lists of a 26.2.0 `support_wrap_ops.yaml`: `(key, names)`.
fn yaml_lists(file: &str) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hook_coverage").join(file)).unwrap();
    let mut lists: Vec<(String, Vec<String>)> = vec![];
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(name) = t.strip_prefix("- ") {
            lists.last_mut().expect("a name before the first key").1.push(name.trim().to_string());
        } else if let Some(key) = t.strip_suffix(':') {
            lists.push((key.to_string(), vec![]));
        } else {
            panic!("{file}: unexpected line {line:?}");
        }
    }
    lists
}

/// One measured row: framework, msprobe version, prefix, names replayed, names listed.
struct Row {
    framework: Framework,
    version: &'static str,
    prefix: &'static str,
    replayed: usize,
    listed: usize,
    missing: Vec<String>,
}

impl Row {
    fn share(&self) -> f64 {
        100.0 * self.replayed as f64 / self.listed as f64
    }
}

fn measure<'a>(framework: Framework, version: &'static str, prefix: &'static str, names: impl Iterator<Item = &'a str>) -> Row {
    let (mut replayed, mut listed, mut missing) = (0, 0, vec![]);
    for name in names {
        listed += 1;
        let last = name.rsplit('.').next().unwrap_or(name);
        match ops::lookup(framework, &format!("{prefix}.{last}")) {
            Some(_) => replayed += 1,
            None => missing.push(name.to_string()),
        }
    }
    Row { framework, version, prefix, replayed, listed, missing }
}

/// Every row: 8.3.2's lists, then 26.2.0's under the prefixes dumps use.
fn rows() -> Vec<Row> {
    let mut rows: Vec<Row> = LISTS.iter().map(|l| measure(l.framework, "8.3.2", l.prefix.as_str(), l.names())).collect();
    for (file, framework, keys) in [
        (
            "pytorch_support_wrap_ops_26.2.0.yaml",
            Framework::PyTorch,
            &[("functional", "Functional"), ("tensor", "Tensor"), ("torch", "Torch"), ("torch_npu", "NPU")][..],
        ),
        (
            "mindspore_support_wrap_ops_26.2.0.yaml",
            Framework::MindSpore,
            &[("ops", "Functional"), ("tensor", "Tensor"), ("mint.ops", "Mint"), ("mint.nn.functional", "MintFunctional")][..],
        ),
    ] {
        let lists = yaml_lists(file);
        for (key, prefix) in keys {
            let (_, names) = lists.iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("{file}: no key {key}"));
            rows.push(measure(framework, "26.2.0", prefix, names.iter().map(String::as_str)));
        }
    }
    rows
}

/// The floors, in percent of the names listed: (framework, version, prefix, floor).
const FLOORS: &[(&str, &str, &str, f64)] = &[
    ("pytorch", "8.3.2", "Functional", 53.1),
    ("pytorch", "8.3.2", "Tensor", 74.9),
    ("pytorch", "8.3.2", "NPU", 14.1),
    ("pytorch", "8.3.2", "Torch", 57.3),
    ("mindspore", "8.3.2", "Functional", 42.2),
    ("mindspore", "8.3.2", "Tensor", 71.4),
    ("mindspore", "8.3.2", "Mint", 71.5),
    ("mindspore", "8.3.2", "MintFunctional", 77.0),
    ("pytorch", "26.2.0", "Functional", 53.1),
    ("pytorch", "26.2.0", "Tensor", 74.9),
    ("pytorch", "26.2.0", "Torch", 57.1),
    ("pytorch", "26.2.0", "NPU", 6.7),
    ("mindspore", "26.2.0", "Functional", 42.1),
    ("mindspore", "26.2.0", "Tensor", 71.5),
    ("mindspore", "26.2.0", "Mint", 71.5),
    ("mindspore", "26.2.0", "MintFunctional", 77.0),
];

/// The share of PyTorch's `Tensor`, `Torch` and `Functional` names of
/// 8.3.2's lists together (the measure), and its floor.
const PYTORCH_FLOOR: f64 = 64.5;

fn pytorch_share(rows: &[Row]) -> (usize, usize) {
    rows.iter()
        .filter(|r| r.framework == Framework::PyTorch && r.version == "8.3.2" && ["Tensor", "Torch", "Functional"].contains(&r.prefix))
        .fold((0, 0), |(a, b), r| (a + r.replayed, b + r.listed))
}

#[test]
fn hook_list_coverage_holds_its_floors() {
    let rows = rows();
    if std::env::var_os("HOOK_TABLE").is_some() {
        println!("| framework | msprobe | prefix | replayed | listed | share |");
        println!("|---|---|---|---:|---:|---:|");
        for r in &rows {
            println!("| {} | {} | {} | {} | {} | {:.1} % |", r.framework.as_str(), r.version, r.prefix, r.replayed, r.listed, r.share());
        }
        let (replayed, listed) = pytorch_share(&rows);
        println!("| pytorch | 8.3.2 | Tensor + Torch + Functional | {replayed} | {listed} | {:.1} % |", 100.0 * replayed as f64 / listed as f64);
        let names: usize = ops::table().map(|op| op.names.len()).sum();
        println!("op table: {} entries, {names} API names, {} more derived by rule", ops::table().count(), ops::derive::derived().len());
    }
    if std::env::var_os("HOOK_MISSING").is_some() {
        for r in &rows {
            println!("{} {} {}: {}", r.framework.as_str(), r.version, r.prefix, r.missing.join(" "));
        }
    }
    let mut failures = vec![];
    for r in &rows {
        let floor = FLOORS
            .iter()
            .find(|f| (f.0, f.1, f.2) == (r.framework.as_str(), r.version, r.prefix))
            .unwrap_or_else(|| panic!("no floor for {} {} {}", r.framework.as_str(), r.version, r.prefix));
        if r.share() < floor.3 {
            failures.push(format!("{} {} {}: {:.1} % of the list replayed, below its floor {} %", floor.0, floor.1, floor.2, r.share(), floor.3));
        }
    }
    assert_eq!(rows.len(), FLOORS.len(), "a floor without its row");
    let (replayed, listed) = pytorch_share(&rows);
    let share = 100.0 * replayed as f64 / listed as f64;
    if share < PYTORCH_FLOOR {
        failures.push(format!("pytorch 8.3.2 Tensor + Torch + Functional: {share:.1} %, below its floor {PYTORCH_FLOOR} %"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
