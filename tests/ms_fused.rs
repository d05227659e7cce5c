//! MindSpore's fused ops in real msprobe 26.2.0 dumps (tests/fixtures/ms_fused,
//! made by zoo/make/ms_fused/make_ms_fused_dumps.sh; its README says which
//! values come from CPU stand-ins of Ascend-only kernels): `replay` of the
//! clean tensor dump passes every row under every standard; in the planted
//! copy exactly the rows planted.json names are errors, each saying what
//! exceeded its bound, and the exit code says so.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

fn replay(dump: &str, standard: &str, out: &std::path::Path) -> (i32, Vec<(String, String, String)>) {
    let root = common::repo().join("tests/fixtures/ms_fused").join(dump);
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "mindspore", "replay", "--dump", root.to_str().unwrap(), "--data-mode", "real_data", "--standard", standard, "--top", "0"])
        .arg("--output-dir")
        .arg(out)
        .output()
        .unwrap();
    (o.status.code().unwrap_or(-1), common::detail_rows(out))
}

#[test]
fn clean_fused_calls_pass_and_each_planted_error_is_an_error() {
    let planted: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(common::repo().join("tests/fixtures/ms_fused/planted/planted.json")).unwrap()).unwrap();
    let planted: BTreeSet<String> = planted.as_array().unwrap().iter().map(|p| p["row"].as_str().unwrap().to_string()).collect();
    assert_eq!(planted.len(), 6, "{planted:?}");
    let tmp = tempfile::tempdir().unwrap();
    for standard in ["default", "msprobe", "api", "bound"] {
        let (code, rows) = replay("clean", standard, &tmp.path().join(format!("clean-{standard}")));
        assert_eq!(code, 0, "clean under {standard}: {rows:#?}");
        assert_eq!(rows.len(), 22, "clean under {standard}: {rows:#?}");
        for fused in ["rms_norm", "fast_gelu", "rotary_position_embedding", "flash_attention_score"] {
            assert!(rows.iter().any(|r| r.0.starts_with(&format!("Functional.{fused}.")) && r.0.contains(".backward.")), "{fused} under {standard}");
        }
        let (code, rows) = replay("planted", standard, &tmp.path().join(format!("planted-{standard}")));
        assert_eq!(code, 3, "planted under {standard}: {rows:#?}");
        let errors: BTreeSet<String> = rows.iter().filter(|r| r.1 == "error").map(|r| r.0.clone()).collect();
        assert_eq!(errors, planted, "planted under {standard}");
        for r in rows.iter().filter(|r| r.1 == "error") {
            let says = ["max absolute error", "cosine similarity", "benchmark:", "rounding bound:", "absolute threshold:", "ulp", "thousandth"];
            assert!(says.iter().any(|s| r.2.contains(s)) && r.2.contains("tested: device"), "{standard}: {r:?}");
        }
        assert!(rows.iter().all(|r| r.1 == "pass" || r.1 == "error"), "{standard}: {rows:#?}");
    }
}
