//! torch_npu's fused kernels (`NPU.` entries) replayed from tensor dumps:
//! tests/fixtures/npu/{clean,planted} (made by zoo/make/npu/make_npu_dumps.py:
//! msprobe-format entries whose recorded values come from torch on the CPU,
//! and a copy with one error planted per call, listed in its planted.json).
//! Under each standard (msprobe, api, bound), `replay --dump` of real data
//! gives every NPU call of the dump its rows, every clean row passes, every
//! planted error is an `error` row and every other row of the planted dump
//! passes; the rows that do not pass, with their exact Messages, and the
//! exit codes are pinned in tests/fixtures/npu/verdicts.json
//! (`UPDATE_GOLDEN=1` rewrites it; review its diff; never set in CI).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::{json, Value};

const STANDARDS: [&str; 3] = ["msprobe", "api", "bound"];

/// The dropout call of the dumps: replay cannot recover its mask, a `skip` row.
const DROPOUT: &str = "NPU.npu_fusion_attention.3.backward";

/// (exit code, rows as (API Name, Status, Message)) of `replay --dump` of a fixture dump.
fn replay(dump: &str, standard: &str) -> (i32, Vec<(String, String, String)>) {
    let out = tempfile::tempdir().unwrap();
    let file = common::repo().join("tests/fixtures/npu").join(dump).join("dump.json");
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "replay", "--dump"])
        .arg(&file)
        .args(["--data-mode", "real_data", "--standard", standard, "--output-dir"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stderr).contains("error:"), "{dump} {standard}: {}", String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap(), common::detail_rows(out.path()))
}

/// The calls of a fixture dump (`NPU.<op>.<N>`).
fn calls(dump: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(common::repo().join("tests/fixtures/npu").join(dump).join("dump.json")).unwrap();
    // msprobe writes bare -Infinity (npu_top_k_top_p's filtered logits): only the keys are read here.
    let d: Value = serde_json::from_str(&text.replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null")).unwrap();
    d["data"].as_object().unwrap().keys().map(|k| k.rsplit_once('.').unwrap().0.to_string()).collect()
}

/// The row names the planted errors are in (`<key>.<where>`).
fn planted() -> BTreeSet<String> {
    let text = std::fs::read_to_string(common::repo().join("tests/fixtures/npu/planted/planted.json")).unwrap();
    let list: Value = serde_json::from_str(&text).unwrap();
    list.as_array().unwrap().iter().map(|p| format!("{}.{}", p["key"].as_str().unwrap(), p["where"].as_str().unwrap())).collect()
}

#[test]
fn npu_dumps_pass_clean_and_fail_each_planted_error() {
    let planted = planted();
    let mut problems = vec![];
    let mut pinned = BTreeMap::new();
    for dump in ["clean", "planted"] {
        let calls = calls(dump);
        for standard in STANDARDS {
            let (code, rows) = replay(dump, standard);
            let judged: BTreeSet<String> = calls.iter().filter(|c| rows.iter().any(|(n, _, _)| n.starts_with(&format!("{c}.")))).cloned().collect();
            for c in calls.difference(&judged) {
                problems.push(format!("{dump} {standard}: no row for {c}"));
            }
            let mut not_passed = BTreeMap::new();
            for (name, status, message) in &rows {
                let want = match name.as_str() {
                    DROPOUT => "skip",
                    n if dump == "planted" && planted.contains(n) => "error",
                    _ => "pass",
                };
                if status != want {
                    problems.push(format!("{dump} {standard}: {name} is {status}, expected {want}: {message}"));
                }
                if status != "pass" {
                    not_passed.insert(name.clone(), json!([status, message]));
                }
            }
            if dump == "planted" {
                for p in planted.iter().filter(|p| !rows.iter().any(|(n, _, _)| n == *p)) {
                    problems.push(format!("planted {standard}: no row {p}"));
                }
            }
            pinned.insert(format!("{dump} {standard}"), json!({"exit": code, "rows": not_passed}));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let path = common::repo().join("tests/fixtures/npu/verdicts.json");
    let got = serde_json::to_string_pretty(&pinned).unwrap() + "\n";
    if common::update_golden() {
        std::fs::write(&path, &got).unwrap();
    } else {
        let want = std::fs::read_to_string(&path).unwrap();
        assert!(got == want, "verdicts differ from tests/fixtures/npu/verdicts.json (UPDATE_GOLDEN=1 rewrites it; review the diff):\n{got}");
    }
}

/// MSAdapter's dumps record its torch_npu's calls under `NPU` too (msprobe
/// 26.2.0's api_register.py): replayed like PyTorch's.
#[test]
fn an_msadapter_npu_entry_is_replayed() {
    let out = tempfile::tempdir().unwrap();
    let file = common::repo().join("tests/fixtures/mindtorch/bad/npu_entry/dump.json");
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "mindspore", "replay", "--dump"])
        .arg(&file)
        .arg("--output-dir")
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<(String, String)> = common::detail_rows(out.path()).into_iter().filter(|r| r.0.starts_with("NPU.")).map(|(n, s, _)| (n, s)).collect();
    let pass = |n: &str| (n.to_string(), "pass".to_string());
    assert_eq!(rows, [pass("NPU.npu_rms_norm.0.forward.output.0"), pass("NPU.npu_rms_norm.0.forward.output.1")]);
}

/// `op_generate --lang rust` makes a project for an NPU call with an entry
/// (the runtime replays it there as `replay` does).
#[test]
fn rust_projects_are_generated_for_npu_calls() {
    let dir = tempfile::tempdir().unwrap();
    let dump = common::repo().join("tests/fixtures/npu/clean/dump.json");
    let config = json!({"dump_json_path": dump, "api_name": "NPU.npu_fusion_attention.2", "data_mode": "real_data"});
    std::fs::write(dir.path().join("c.json"), config.to_string()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "op_generate", "-i", "c.json", "-o", "out", "--lang", "rust"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let main = std::fs::read_to_string(dir.path().join("out/NPU.npu_fusion_attention.2.forward/src/main.rs")).unwrap();
    assert!(main.contains("npu_fusion_attention") && main.contains("TND"), "{main}");
}

/// The bfloat16 dumps (tests/fixtures/npu/bf16_clean and bf16_scaled:
/// rms_norm, swiglu, fast_gelu, rotary_mul and scaled_masked_softmax
/// computed from bfloat16 inputs in float32 and rounded once, as a device
/// does; then output 0 of each forward times 1.02, about 2.6 bfloat16
/// ULPs, every element within its loose rounding bound). Under default,
/// api and bound every clean row passes; in the scaled dump each forward
/// output 0 is an `error` whose Message names the systematic error in ULPs
/// of bfloat16 (the bound does not rescue it), and every other row passes.
#[test]
fn a_two_percent_bfloat16_scale_is_an_error_and_the_clean_kernels_pass() {
    for standard in ["default", "api", "bound"] {
        let (code, rows) = replay("bf16_clean", standard);
        assert_eq!(rows.len(), 14, "bf16_clean {standard}: {rows:?}");
        let failing: Vec<_> = rows.iter().filter(|r| r.1 != "pass").collect();
        assert!(failing.is_empty() && code == 0, "bf16_clean {standard}: exit {code}, {failing:?}");
        let (code, rows) = replay("bf16_scaled", standard);
        assert_eq!(code, 3, "bf16_scaled {standard}");
        for (name, status, message) in &rows {
            if name.ends_with(".forward.output.0") {
                assert_eq!(status, "error", "bf16_scaled {standard} {name}: {message}");
                let ulps = message.split("systematic error: every element about ").nth(1).and_then(|m| m.split(' ').next()).and_then(|x| x.parse::<f64>().ok());
                assert!(ulps.is_some_and(|u| (2.4..2.7).contains(&u)), "bf16_scaled {standard} {name}: {message}");
                assert!(message.contains(" ULPs of bfloat16 off") && !message.contains("counted as exact"), "{message}");
            } else {
                assert_eq!(status, "pass", "bf16_scaled {standard} {name}: {message}");
            }
        }
        assert_eq!(rows.iter().filter(|r| r.0.ends_with(".forward.output.0")).count(), 5, "bf16_scaled {standard}: {rows:?}");
    }
}
