//! The precision standards agree between the runtime and the generated
//! Python scripts: every case of tests/standard/cases.json is judged by
//! `runtime::standard::judge` and by the Python mirror
//! (python/msprobe_rs/repro/standard.py, the scripts' machinery, run by
//! tests/standard/check.py), and
//! both must give the case's expected status, message, rule and metrics.
//!
//! The Python half needs MSPROBE_PYTHON, a Python with numpy (scripts/test.sh).

use std::path::{Path, PathBuf};
use std::process::Command;

use runtime::dtype::TDType;
use runtime::standard::{judge, Case, Judged, Rounding, Standard};
use serde_json::Value as Json;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cases() -> Vec<Json> {
    let path = manifest_dir().join("tests/standard/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases: Vec<Json> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(!cases.is_empty(), "{} has no cases", path.display());
    cases
}

/// Values as cases.json encodes them: numbers, or "nan", "inf", "-inf".
fn values(j: &Json) -> Vec<f64> {
    j.as_array()
        .unwrap_or_else(|| panic!("not a list: {j}"))
        .iter()
        .map(|v| match v {
            Json::Number(n) => n.as_f64().unwrap(),
            Json::String(s) if s == "nan" => f64::NAN,
            Json::String(s) if s == "inf" => f64::INFINITY,
            Json::String(s) if s == "-inf" => f64::NEG_INFINITY,
            other => panic!("not a value: {other}"),
        })
        .collect()
}

fn text<'a>(c: &'a Json, key: &str) -> &'a str {
    c[key].as_str().unwrap_or_else(|| panic!("case {}: {key} is not a string", c["name"]))
}

/// The case's expected verdict, as (status, message, rule, metrics).
fn expected(c: &Json) -> [&str; 4] {
    [text(c, "status"), text(c, "message"), text(c, "rule"), text(c, "metrics")]
}

fn rust_verdict(c: &Json) -> Judged {
    let standard = Standard::named(text(c, "standard")).unwrap_or_else(|| panic!("unknown standard {}", c["standard"]));
    let (tested, bench) = (values(&c["tested"]), values(&c["bench"]));
    // The output's shape: absent means flat indices.
    let shape: Vec<usize> = c.get("shape").and_then(Json::as_array).map_or(vec![], |s| s.iter().map(|d| d.as_u64().unwrap() as usize).collect());
    let reference = (!c["reference"].is_null()).then(|| values(&c["reference"]));
    // The rounding bound's parts: absent or null when the case has none.
    let magnitude = c.get("magnitude").filter(|m| !m.is_null()).map(values);
    let case = Case {
        // cases.json names the API as the scripts see it (`Prefix.op`); the runtime judges by the op.
        op: text(c, "api").split_once('.').map_or(text(c, "api"), |(_, op)| op),
        backward: c["backward"].as_bool().unwrap(),
        exact_op: c["exact_op"].as_bool().unwrap(),
        dtype: TDType::parse(text(c, "dtype")).unwrap_or_else(|| panic!("unknown dtype {}", c["dtype"])),
        tested: &tested,
        bench: &bench,
        shape: &shape,
        reference: reference.as_deref(),
        cosine_threshold: c["cosine_threshold"].as_f64().unwrap(),
        max_abs_err_threshold: c["max_abs_err_threshold"].as_f64().unwrap(),
        rounding: magnitude.as_deref().map(|magnitude| {
            let k = c["k"].as_f64().unwrap_or_else(|| panic!("case {}: magnitude without k", c["name"]));
            let compute = TDType::parse(text(c, "compute")).unwrap_or_else(|| panic!("case {}: unknown compute dtype", c["name"]));
            // The op kernel's known float32 common error, [epsilons, source]: absent for most.
            let common_error = c.get("common_error").and_then(Json::as_array).map(|e| (e[0].as_f64().unwrap(), e[1].as_str().unwrap()));
            // The device's rounding of the operands, [k, u, source]: absent for most.
            let operands = c.get("operands").and_then(Json::as_array).map(|e| (e[0].as_f64().unwrap(), e[1].as_f64().unwrap(), e[2].as_str().unwrap()));
            Rounding { magnitude, k, compute, common_error, operands }
        }),
        // Whether the tested side is the emulated device: absent means a device's own values.
        emulated: c.get("emulated").and_then(Json::as_bool).unwrap_or(false),
    };
    judge(standard, &case)
}

/// One line per field that differs from the expected verdict.
fn mismatches(name: &str, side: &str, got: [&str; 4], want: [&str; 4]) -> Vec<String> {
    let fields = ["status", "message", "rule", "metrics"];
    (0..4).filter(|&i| got[i] != want[i]).map(|i| format!("{side} {name}: {}\n    got  {:?}\n    want {:?}", fields[i], got[i], want[i])).collect()
}

fn assert_none(side: &str, problems: Vec<String>) {
    assert!(problems.is_empty(), "{} {side} mismatch(es):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn rust_judges_every_case_as_expected() {
    let mut problems = Vec::new();
    for c in cases() {
        let got = rust_verdict(&c);
        let got = [got.status.as_str(), got.message.as_str(), got.rule.name(), got.metrics.as_str()];
        problems.extend(mismatches(text(&c, "name"), "rust", got, expected(&c)));
    }
    assert_none("rust", problems);
}

fn python() -> PathBuf {
    match std::env::var_os("MSPROBE_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => panic!(
            "MSPROBE_PYTHON is not set: this test runs the Python mirror of the precision standards. \
             Run it through scripts/test.sh, which creates the Python environment and sets it."
        ),
    }
}

#[test]
fn python_judges_every_case_as_expected() {
    let dir = manifest_dir();
    let cases = cases();
    let out = Command::new(python())
        .arg("-B")
        .arg(dir.join("tests/standard/check.py"))
        .arg(dir.join("tests/standard/cases.json"))
        .arg(dir.join("../python"))
        .output()
        .expect("cannot start MSPROBE_PYTHON");
    assert!(out.status.success(), "check.py failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let results: Vec<Json> = serde_json::from_slice(&out.stdout).expect("check.py printed no JSON list");
    assert_eq!(results.len(), cases.len(), "check.py judged a different number of cases");
    let mut problems = Vec::new();
    for (c, r) in cases.iter().zip(&results) {
        assert_eq!(r["name"], c["name"], "check.py judged the cases out of order");
        problems.extend(mismatches(text(c, "name"), "python", expected(r), expected(c)));
    }
    assert_none("python", problems);
}

/// The mirror check.py runs is the file the scripts inline: the package's
/// standard.py, with its marker line and `judge` after it.
#[test]
fn python_mirror_is_the_scripts_machinery() {
    let path = manifest_dir().join("../python/msprobe_rs/repro/standard.py");
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let marker = "\n# --- msprobe-rs: the scripts inline this file from here ---\n";
    let inlined = source.split_once(marker).unwrap_or_else(|| panic!("{} has no marker line", path.display())).1;
    assert!(
        inlined.contains(
            "\ndef judge(standard, api, backward, exact_op, dtype, tested, bench, reference, cosine_threshold, max_abs_err_threshold,\n          rounding=None, emulated=False, shape=None):\n"
        ),
        "{}",
        path.display()
    );
}
