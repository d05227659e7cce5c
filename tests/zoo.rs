//! Native coverage of the model zoo (tests/fixtures/zoo, and the MSAdapter
//! dumps of tests/fixtures/mindtorch, made by zoo/make/): every dump is replayed with `msprobe replay --dump`
//! (statistics dumps with random data, tensor dumps with their real data),
//! and each distinct case, an API (`Prefix.op`) in one direction, counts as
//! covered when every row of every call of it is a verdict (pass, warning or
//! error), not a skip. The test fails when a dump's coverage falls below the
//! floor recorded in tests/fixtures/zoo/coverage.json, and when a dump's
//! exit code or exact set of `error` and `skip` rows (row name and status),
//! under each standard (`default`, `msprobe`, `api`, `bound`), differs from
//! tests/fixtures/zoo/verdicts.json: a change in the numerics
//! that turns a pass into an error, or an error into a skip, fails here.
//! `UPDATE_GOLDEN=1` rewrites verdicts.json (review its diff; never set in CI).
//!
//! `ZOO_TABLE=1 cargo test --test zoo -- --nocapture` prints the README's
//! coverage table and the skip reasons (scripts/zoo-coverage.sh does that).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

/// One zoo dump: `<framework>/<model>/<task>`, or an MSAdapter fixture
/// `mindtorch/<model>/<msprobe version>/<task>` (read with `-f mindspore`).
struct ZooDump {
    /// The key in coverage.json and verdicts.json.
    key: String,
    /// The `-f` value.
    flag: &'static str,
    task: String,
    path: PathBuf,
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
    let mut dirs: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs
}

fn zoo_dumps() -> Vec<ZooDump> {
    let fixtures = common::repo().join("tests/fixtures");
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let mut dumps = vec![];
    let mut push = |key: String, flag: &'static str, dir: &Path| {
        for task in ["statistics", "tensor"] {
            let path = dir.join(task).join("dump.json");
            if path.is_file() {
                dumps.push(ZooDump { key: format!("{key}/{task}"), flag, task: task.into(), path });
            }
        }
    };
    for fw in ["pytorch", "mindspore"] {
        for model in sorted_dirs(&fixtures.join("zoo").join(fw)) {
            push(format!("{fw}/{}", name(&model)), if fw == "pytorch" { "pytorch" } else { "mindspore" }, &model);
        }
    }
    for model in sorted_dirs(&fixtures.join("mindtorch")) {
        for version in sorted_dirs(&model) {
            push(format!("mindtorch/{}/{}", name(&model), name(&version)), "mindspore", &version);
        }
    }
    dumps
}

/// What one dump's replay covered.
#[derive(Default)]
struct Coverage {
    /// (op, direction) → the skip reasons of its rows (empty: covered).
    cases: BTreeMap<(String, String), BTreeSet<String>>,
    /// Every row that is not a pass or warning: row name → status.
    verdicts: BTreeMap<String, String>,
    /// Every `error` row: row name → Message.
    errors: BTreeMap<String, String>,
    /// The replay's exit code.
    exit: i32,
}

impl Coverage {
    fn covered(&self) -> usize {
        self.cases.values().filter(|r| r.is_empty()).count()
    }

    fn share(&self) -> f64 {
        if self.cases.is_empty() {
            1.0
        } else {
            self.covered() as f64 / self.cases.len() as f64
        }
    }
}

/// `Prefix.op.N.direction[.output.I]` → (`Prefix.op`, direction).
fn case_of(row: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = row.split('.').collect();
    let at = parts.iter().position(|p| *p == "forward" || *p == "backward")?;
    (at >= 3).then(|| (parts[..at - 1].join("."), parts[at].to_string()))
}

fn replay(d: &ZooDump, out: &Path, standard: &str) -> Coverage {
    let mut args =
        vec!["-f", d.flag, "replay", "--dump", d.path.to_str().unwrap(), "--output-dir", out.to_str().unwrap(), "--top", "1", "--standard", standard];
    if d.task == "tensor" {
        args.extend(["--data-mode", "real_data"]);
    }
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(&args).output().unwrap();
    // A verdict exit (0, 3 or 8); which one each dump gives is pinned
    // exactly in verdicts.json (`exit`), checked by the caller.
    assert!(matches!(o.status.code(), Some(0 | 3 | 8)), "{}: {}", d.key, String::from_utf8_lossy(&o.stderr));
    let file = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().contains("accuracy_checking_details_")).unwrap();
    let mut cov = Coverage { exit: o.status.code().unwrap_or(-1), ..Coverage::default() };
    for cells in common::csv_file_records(&file).split_off(1) {
        if cells[7] == "error" || cells[7] == "skip" {
            cov.verdicts.insert(cells[0].clone(), cells[7].clone());
        }
        if cells[7] == "error" {
            cov.errors.insert(cells[0].clone(), cells[8].clone());
        }
        let Some(case) = case_of(&cells[0]) else { continue };
        let reasons = cov.cases.entry(case).or_default();
        if cells[7] == "skip" {
            reasons.insert(cells[8].clone());
        }
    }
    cov
}

#[test]
fn zoo_coverage_does_not_fall() {
    let dumps = zoo_dumps();
    assert!(!dumps.is_empty(), "no zoo dumps under tests/fixtures/zoo");
    let floors: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(common::repo().join("tests/fixtures/zoo/coverage.json")).unwrap()).unwrap();
    let table = std::env::var_os("ZOO_TABLE").is_some();
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = vec!["| dump | distinct cases | replayed natively with a verdict | skipped |".to_string(), "|---|---|---|---|".to_string()];
    let mut reasons: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut falls = vec![];
    let mut changed = vec![];
    let mut measured = serde_json::Map::new();
    let pinned_path = common::repo().join("tests/fixtures/zoo/verdicts.json");
    let pinned: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&pinned_path).unwrap()).unwrap();
    let mut verdicts = serde_json::Map::new();
    let mut blamed = vec![];
    for (i, d) in dumps.iter().enumerate() {
        let key = d.key.clone();
        let cov = replay(d, &tmp.path().join(i.to_string()), "msprobe");
        let api = replay(d, &tmp.path().join(format!("{i}-api")), "api");
        let bound = replay(d, &tmp.path().join(format!("{i}-bound")), "bound");
        let default = replay(d, &tmp.path().join(format!("{i}-default")), "default");
        // Under the default standard an emulated row is an error only where its dtype's own arithmetic fails.
        for (row, message) in &default.errors {
            if message.contains("tested: emulated device") && !message.contains("arithmetic itself fails here") {
                blamed.push(format!("{key}: {row}: {message}"));
            }
        }
        measured.insert(key.clone(), serde_json::json!((cov.share() * 1000.0).floor() / 1000.0));
        let got = serde_json::json!({
            "default": {"exit": default.exit, "rows": default.verdicts},
            "msprobe": {"exit": cov.exit, "rows": cov.verdicts},
            "api": {"exit": api.exit, "rows": api.verdicts},
            "bound": {"exit": bound.exit, "rows": bound.verdicts},
        });
        if pinned[&key] != got {
            changed.push(format!("{key}: pinned {}\n  now {got}", pinned[&key]));
        }
        verdicts.insert(key.clone(), got);
        let Some(floor) = floors[&key].as_f64().or(table.then_some(0.0)) else {
            panic!("{key} has no floor in coverage.json (ZOO_TABLE=1 prints the measured ones)")
        };
        if cov.share() + 1e-12 < floor {
            falls.push(format!("{key}: {}/{} = {:.3} < floor {floor}", cov.covered(), cov.cases.len(), cov.share()));
        }
        lines.push(format!("| {key} | {} | {} ({:.1}%) | {} |", cov.cases.len(), cov.covered(), 100.0 * cov.share(), cov.cases.len() - cov.covered()));
        for ((op, dir), why) in &cov.cases {
            for w in why {
                reasons.entry(format!("{}: {op} {dir}", d.key.split('/').next().unwrap_or_default())).or_default().insert(w.clone());
            }
        }
    }
    if table {
        println!("{}", lines.join("\n"));
        println!("\nSkipped cases and their reasons:");
        for (case, why) in &reasons {
            println!("- {case}: {}", why.iter().cloned().collect::<Vec<_>>().join(" | "));
        }
        println!("\nMeasured (floors for coverage.json):\n{}", serde_json::to_string_pretty(&measured).unwrap());
    }
    assert!(falls.is_empty(), "coverage fell:\n{}", falls.join("\n"));
    assert!(blamed.is_empty(), "emulated rows judged as device errors under the default standard:\n{}", blamed.join("\n"));
    if common::update_golden() {
        std::fs::write(&pinned_path, serde_json::to_string_pretty(&verdicts).unwrap() + "\n").unwrap();
    } else {
        assert!(changed.is_empty(), "verdicts differ from tests/fixtures/zoo/verdicts.json:\n{}", changed.join("\n"));
    }
}

/// The project's other real tensor dumps (the fixtures of tests/fixtures and
/// the seed's own under ../shared/fixtures, made on the CPU: a device that
/// computes what torch and MindSpore compute) replayed whole under the `api`
/// and `bound` standards: no row is an `error`, no row is a `skip`.
#[test]
fn fixture_tensor_dumps_have_no_error_row_under_api_or_bound() {
    let repo = common::repo();
    let mut dumps = vec![("pytorch", repo.join("tests/fixtures/pytorch/tensor")), ("mindspore", repo.join("tests/fixtures/mindspore/tensor"))];
    for fw in ["pytorch", "mindspore"] {
        let step = repo.join("../shared/fixtures").join(fw).join("dump_tensor_L1/step0");
        let ranks = sorted_dirs(&step);
        assert!(!ranks.is_empty(), "no rank folder under {} (the seed's fixtures must sit beside the repository)", step.display());
        dumps.extend(ranks.into_iter().map(|r| (fw, r)));
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = vec![];
    for (i, (fw, dump)) in dumps.iter().enumerate() {
        for standard in ["api", "bound"] {
            let out = tmp.path().join(format!("{i}-{standard}"));
            let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
                .args([
                    "-f",
                    fw,
                    "replay",
                    "--dump",
                    dump.to_str().unwrap(),
                    "--output-dir",
                    out.to_str().unwrap(),
                    "--top",
                    "0",
                    "--standard",
                    standard,
                    "--data-mode",
                    "real_data",
                ])
                .output()
                .unwrap();
            let rows = common::detail_rows(&out);
            assert!(rows.len() > 20, "{}: {} rows", dump.display(), rows.len());
            for (name, status, message) in rows.iter().filter(|(_, s, _)| s == "error" || s == "skip") {
                failures.push(format!("{} {standard}: {name} {status}: {message}", dump.display()));
            }
            assert_eq!(o.status.code(), Some(0), "{} {standard}: {}", dump.display(), String::from_utf8_lossy(&o.stderr));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
