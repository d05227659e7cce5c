//! The rulebook (`runtime/rulebook.json`) is the one home of the judging
//! rules' numbers: a threshold changed there (through `MSPROBE_RS_RULEBOOK`,
//! which replaces the built-in file for a run) changes the verdict of the
//! native replay and of a script generated under it alike, and a broken
//! rulebook is refused before anything runs. Needs MSPROBE_PYTHON
//! (scripts/test.sh sets it).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{detail_rows, npy_f32, python, repo};

/// The call: a float32 add whose recorded output is 5e-7 off (relative):
/// several ULP, beyond the rounding bound, within the built-in absolute
/// threshold (1e-6).
const API: &str = "Torch.add.0";

/// A PyTorch tensor dump of [`API`] in `dir` (the files as .npy).
fn dump(dir: &Path) -> PathBuf {
    let data = dir.join("dump_tensor_data");
    std::fs::create_dir_all(&data).unwrap();
    let (x, y) = ([1.0f32, 2.0, 3.0, 4.0], [0.5f32, 0.25, 0.125, 1.0]);
    let out: Vec<f32> = x.iter().zip(&y).map(|(a, b)| ((f64::from(*a) + f64::from(*b)) * (1.0 + 5e-7)) as f32).collect();
    for (name, values) in [("input.0", &x[..]), ("input.1", &y[..]), ("output.0", &out[..])] {
        std::fs::write(data.join(format!("{API}.forward.{name}.npy")), npy_f32(&[4], values)).unwrap();
    }
    let t = |name: &str| serde_json::json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": 5.0, "Min": 0.125, "requires_grad": false, "data_name": format!("{API}.forward.{name}.npy")});
    let text = serde_json::json!({
        "task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": data,
        "data": {format!("{API}.forward"): {"input_args": [t("input.0"), t("input.1")], "input_kwargs": {}, "output": [t("output.0")]}}
    });
    let path = dir.join("dump.json");
    std::fs::write(&path, text.to_string()).unwrap();
    path
}

/// The built-in rulebook with float32's relative threshold at 1e-7.
fn tightened(dir: &Path) -> PathBuf {
    let mut book: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(repo().join("runtime/rulebook.json")).unwrap()).unwrap();
    book["absolute"]["fp32"]["rtol"] = serde_json::json!(1e-7);
    let path = dir.join("tight.json");
    std::fs::write(&path, book.to_string()).unwrap();
    path
}

/// config_op.json for the call, forward, real data, the api standard.
fn config(dir: &Path) -> PathBuf {
    let path = dir.join("config_op.json");
    let text = serde_json::json!({"dump_json_path": dump(dir), "api_name": API, "data_mode": "real_data", "propagation": "forward", "standard": "api"});
    std::fs::write(&path, text.to_string()).unwrap();
    path
}

/// `msprobe -f pytorch ARGS`, with `rulebook` as MSPROBE_RS_RULEBOOK.
fn msprobe(args: &[&str], rulebook: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_msprobe"));
    cmd.args(["-f", "pytorch"]).args(args).env_remove("MSPROBE_RS_RULEBOOK");
    if let Some(r) = rulebook {
        cmd.env("MSPROBE_RS_RULEBOOK", r);
    }
    cmd.output().unwrap()
}

/// The native replay's exit code and its one row (status, Message).
fn native(dir: &Path, rulebook: Option<&Path>) -> (i32, String, String) {
    let out = dir.join("native");
    let o = msprobe(&["replay", "-i", config(dir).to_str().unwrap(), "--output-dir", out.to_str().unwrap()], rulebook);
    let rows = detail_rows(&out);
    assert_eq!(rows.len(), 1, "{rows:?}");
    (o.status.code().unwrap(), rows[0].1.clone(), rows[0].2.clone())
}

/// The script generated (with `rulebook` in force), run without it: its
/// exit code and its one row (status, Message). A script's tested side is
/// the op run again by torch (exact for this add), so it runs with
/// `--perturb 5e-7`: outputs off by 5e-7·(1 + |x|), as the dump's are.
fn script(dir: &Path, rulebook: Option<&Path>) -> (i32, String, String) {
    let scripts = dir.join("scripts");
    let o = msprobe(&["op_generate", "-i", config(dir).to_str().unwrap(), "-o", scripts.to_str().unwrap()], rulebook);
    assert!(o.status.success(), "op_generate: {}", String::from_utf8_lossy(&o.stderr));
    let file = scripts.join(format!("{API}.forward.py"));
    let out = dir.join("script_csv");
    let run = Command::new(python())
        .arg(&file)
        .args(["--output-dir", out.to_str().unwrap(), "--perturb", "5e-7"])
        .env_remove("MSPROBE_RS_RULEBOOK")
        .output()
        .unwrap();
    let rows = detail_rows(&out);
    assert_eq!(rows.len(), 1, "{rows:?}\n{}", String::from_utf8_lossy(&run.stderr));
    (run.status.code().unwrap(), rows[0].1.clone(), rows[0].2.clone())
}

#[test]
fn a_threshold_written_once_in_the_rulebook_moves_both_judges() {
    let built_in = tempfile::tempdir().unwrap();
    for (code, status, message) in [native(built_in.path(), None), script(built_in.path(), None)] {
        assert_eq!((code, status.as_str()), (0, "pass"), "{message}");
    }
    let tight = tempfile::tempdir().unwrap();
    let rulebook = tightened(tight.path());
    for (code, status, message) in [native(tight.path(), Some(&rulebook)), script(tight.path(), Some(&rulebook))] {
        assert_eq!((code, status.as_str()), (3, "error"), "{message}");
        assert!(message.starts_with("absolute threshold: relative error above 1e-07 at 4 of 4 normal values"), "{message}");
    }
}

#[test]
fn a_broken_rulebook_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"about": "x"}"#).unwrap();
    let out = dir.path().join("out");
    let o = msprobe(&["replay", "-i", config(dir.path()).to_str().unwrap(), "--output-dir", out.to_str().unwrap()], Some(&bad));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(runtime::exit::CONFIG as i32), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("MSPROBE_RS_RULEBOOK={}: not a rulebook: missing field `api_standard`", bad.display())), "{err}");
    assert!(!out.exists(), "nothing is written");
}

/// A `--dump` replay's parts record the rulebook they were judged by:
/// another rulebook's run into the same folder keeps its own option set
/// (never resumed from, or merged with, the built-in rulebook's parts).
#[test]
fn parts_judged_by_another_rulebook_are_kept_apart() {
    let dir = tempfile::tempdir().unwrap();
    let root = dump(dir.path());
    let out = dir.path().join("out");
    let run = |rulebook: Option<&Path>| {
        msprobe(&["replay", "--dump", root.to_str().unwrap(), "--data-mode", "real_data", "--standard", "api", "-o", out.to_str().unwrap()], rulebook)
    };
    assert_eq!(run(None).status.code(), Some(0));
    let tight = tightened(dir.path());
    let o = run(Some(&tight));
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    let sets = std::fs::read_dir(out.join("replay_parts")).unwrap().count();
    assert_eq!(sets, 2, "one option set per rulebook");
    // Rerun with the built-in rulebook: its own part, still a pass.
    assert_eq!(run(None).status.code(), Some(0));
}
