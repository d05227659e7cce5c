//! `msprobe replay --dump` of the NPU test dumps of tests/fixtures/npu_misc/
//! (zoo/make/npu_misc/make_dumps.py: one call of each `NPU.` op of
//! runtime/src/ops/npu_misc.rs, recorded outputs from torch on the CPU, and
//! a copy with planted errors): a verdict for every output and gradient,
//! every clean row passes under each standard, and each planted error is an
//! `error` row with its exact Message (the other rows still pass).

mod common;

use std::path::Path;
use std::process::Command;

use common::repo;

const RECORDED: &str = "tested: device output recorded in the dump; bench: float64 recompute on the CPU";
const RECORDED_GRAD: &str = "tested: device gradient recorded in the dump; bench: float64 recompute on the CPU";

/// Every row the dumps give, in order: each output and recorded gradient.
const ROWS: &[&str] = &[
    "NPU.npu_linear.0.forward.output.0",
    "NPU.npu_linear.0.backward.output.0",
    "NPU.npu_linear.0.backward.output.1",
    "NPU.npu_linear.0.backward.output.2",
    "NPU.npu_confusion_transpose.0.forward.output.0",
    "NPU.npu_confusion_transpose.0.backward.output.0",
    "NPU.npu_apply_adam.0.forward.output.0",
    "NPU.npu_apply_adam.0.forward.output.1",
    "NPU.npu_apply_adam.0.forward.output.2",
    "NPU.npu_apply_adam_w.0.forward.output.0",
    "NPU.npu_apply_adam_w.0.forward.output.1",
    "NPU.npu_apply_adam_w.0.forward.output.2",
    "NPU.npu_layer_norm_eval.0.forward.output.0",
    "NPU.npu_group_norm_silu.0.forward.output.0",
    "NPU.npu_group_norm_silu.0.forward.output.1",
    "NPU.npu_group_norm_silu.0.forward.output.2",
    "NPU.npu_moe_gating_top_k_softmax.0.forward.output.0",
    "NPU.npu_moe_gating_top_k_softmax.0.forward.output.1",
    "NPU.npu_moe_gating_top_k_softmax.0.forward.output.2",
    "NPU.npu_sort_v2.0.forward.output.0",
    "NPU.matmul_backward.0.forward.output.0",
    "NPU.matmul_backward.0.forward.output.1",
];

/// The planted errors (make_dumps.py's PLANTED) and their Messages under the msprobe standard.
const PLANTED: &[(&str, &str)] = &[
    ("NPU.npu_linear.0.forward.output.0", "max absolute error 1 is not below the threshold 0.0001"),
    ("NPU.npu_linear.0.backward.output.1", "max absolute error 0.0490086 is not below the threshold 0.0001"),
    ("NPU.npu_confusion_transpose.0.forward.output.0", "binary equality: 2 of 24 elements differ (max absolute error 0.257121)"),
    ("NPU.npu_apply_adam.0.forward.output.0", "max absolute error 0.00243968 is not below the threshold 0.0001"),
    ("NPU.npu_apply_adam_w.0.forward.output.1", "max absolute error 0.00100007 is not below the threshold 0.0001"),
    ("NPU.npu_layer_norm_eval.0.forward.output.0", "max absolute error 0.5 is not below the threshold 0.0001"),
    ("NPU.npu_group_norm_silu.0.forward.output.2", "max absolute error 0.0131037 is not below the threshold 0.0001"),
    ("NPU.npu_moe_gating_top_k_softmax.0.forward.output.1", "binary equality: 1 of 10 elements differ (max absolute error 1)"),
    ("NPU.npu_sort_v2.0.forward.output.0", "binary equality: 18 of 21 elements differ (max absolute error 3.52953)"),
    ("NPU.matmul_backward.0.forward.output.1", "max absolute error 0.0571559 is not below the threshold 0.0001"),
];

/// `msprobe replay --dump` of `dump` under `standard`: its exit code and details rows.
fn replay(dump: &Path, standard: &str) -> (i32, Vec<Vec<String>>) {
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "replay", "--dump"])
        .arg(dump)
        .arg("--output-dir")
        .arg(out.path())
        .args(["--standard", standard, "--data-mode", "real_data"])
        .output()
        .unwrap();
    let file = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("accuracy_checking_details_"));
    let file = file.unwrap_or_else(|| panic!("no details CSV: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)));
    let rows = common::csv_file_records(&file).split_off(1);
    (o.status.code().unwrap(), rows)
}

fn dump(which: &str) -> std::path::PathBuf {
    repo().join("tests/fixtures/npu_misc").join(which).join("dump.json")
}

fn recorded(name: &str) -> &'static str {
    if name.contains(".backward.") {
        RECORDED_GRAD
    } else {
        RECORDED
    }
}

#[test]
fn every_clean_npu_row_passes_under_each_standard() {
    for standard in ["msprobe", "api", "bound"] {
        let (code, rows) = replay(&dump("clean"), standard);
        assert_eq!(code, 0, "{standard}: {rows:?}");
        let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names, ROWS, "{standard}");
        for r in &rows {
            assert_eq!(r[7], "pass", "{standard} {r:?}");
            // The api and bound standards put what they judged by first.
            let as_expected = if standard == "msprobe" { r[8] == recorded(&r[0]) } else { r[8].ends_with(recorded(&r[0])) };
            assert!(as_expected, "{standard} {r:?}");
        }
    }
}

#[test]
fn each_planted_npu_error_fails_with_its_message() {
    let (code, rows) = replay(&dump("planted"), "msprobe");
    assert_eq!(code, 3, "{rows:?}");
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ROWS);
    for r in &rows {
        match PLANTED.iter().find(|(n, _)| *n == r[0]) {
            Some((_, message)) => assert_eq!((r[7].as_str(), r[8].clone()), ("error", format!("{message}; {}", recorded(&r[0]))), "{r:?}"),
            None => assert_eq!((r[7].as_str(), r[8].as_str()), ("pass", recorded(&r[0])), "{r:?}"),
        }
    }
    // Under the other standards the same rows, and only they, are errors.
    for standard in ["api", "bound"] {
        let (code, rows) = replay(&dump("planted"), standard);
        assert_eq!(code, 3, "{standard}");
        let errors: Vec<&str> = rows.iter().filter(|r| r[7] == "error").map(|r| r[0].as_str()).collect();
        assert_eq!(errors, PLANTED.iter().map(|(n, _)| *n).collect::<Vec<_>>(), "{standard}");
        assert!(rows.iter().all(|r| r[7] == "error" || r[7] == "pass"), "{standard}: {rows:?}");
    }
}
