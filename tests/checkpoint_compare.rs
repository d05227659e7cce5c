//! Megatron checkpoint compare on checkpoints written by real torch
//! (`tests/checkpoint_compare/make_checkpoints.py`: a small GPT in Megatron
//! core + Transformer Engine naming, realistic `model_optim_rng.pt` files
//! with `args` as an argparse.Namespace holding an enum and a torch dtype,
//! optimizer and numpy/torch RNG state). Every parameter's figures are
//! checked against numpy on the unsharded models: untouched parameters get
//! exactly `l2 = 0.0` and `cos = 1.0`, the perturbed one numpy's values.
//! Sharded (TP 2, PP 2, and PP 2 with virtual chunks) against unsharded
//! checkpoints of the same model prove the merge. msprobe 8.3.2 is the
//! oracle too (`tests/checkpoint_compare/msprobe_832.py`, one Python
//! process per test): its compare_checkpoints on the same folders (the same
//! names, numel and shapes, figures within its float32 precision) and its
//! metric functions on the same unsharded state dicts in float64 (figures
//! to 1e-12), asserting the difference docs/checkpoint.md documents (its
//! TP-concatenated Transformer Engine `mlp.linear_fc1.layer_norm_weight`).

mod common;

use std::path::Path;
use std::process::Command;

use common::python;
use msprobe::checkpoint::{self, Options};
use serde_json::{json, Value};

const PERTURBED: &str = "decoder.layers.3.mlp.linear_fc2.weight";

/// Writes a checkpoint of the seed-1 model into `dir` with `flags`.
fn make(dir: &Path, flags: &[&str]) {
    let script = common::repo().join("tests/checkpoint_compare/make_checkpoints.py");
    let o = Command::new(python()).arg(script).arg(dir).args(flags).output().unwrap();
    assert!(o.status.success(), "make_checkpoints.py {flags:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// numpy's figures for `a`'s full model against `b`'s: [name, metrics] in model order.
fn expected(a: &Path, b: &Path) -> Vec<(String, Value)> {
    let script = common::repo().join("tests/checkpoint_compare/make_checkpoints.py");
    let o = Command::new(python()).arg(script).arg(a).arg("--expected").arg(b.join("full.pt")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let list: Vec<(String, Value)> = serde_json::from_slice(&o.stdout).unwrap();
    list
}

/// msprobe 8.3.2's answers for each pair of checkpoint folders (see msprobe_832.py).
fn msprobe_832(dir: &Path, pairs: &[(&Path, &Path)]) -> Vec<Value> {
    let mut args: Vec<&std::ffi::OsStr> = vec![dir.as_os_str()];
    for (a, b) in pairs {
        args.extend([a.as_os_str(), b.as_os_str()]);
    }
    let answers: Vec<Value> = serde_json::from_str(&common::run_832("tests/checkpoint_compare/msprobe_832.py", &args)).unwrap();
    assert_eq!(answers.len(), pairs.len());
    answers
}

/// Our compare's output `ours` against msprobe 8.3.2's `answer` for the
/// same two folders, whose TP sizes are `tp`: the same parameter names (its
/// order is a Python set's), numel and shape; l2 and cos within its float32
/// precision (identical tensors: its l2 0, its cos 1 within 2 float32 ulps);
/// and, on the unsharded models, 8.3.2's metric functions in float64 give
/// our figures to 1e-12, in our (model) order. The documented difference:
/// 8.3.2 concatenates Transformer Engine's replicated
/// `mlp.linear_fc1.layer_norm_weight` across TP ranks like a shard.
fn agrees_with_832(ours: &serde_json::Map<String, Value>, answer: &Value, tp: (u64, u64)) {
    let theirs = answer["compare"].as_object().unwrap();
    let sorted = |m: &serde_json::Map<String, Value>| -> Vec<String> {
        let mut k: Vec<String> = m.keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(sorted(ours), sorted(theirs), "parameter names, ours and msprobe 8.3.2's");
    let mut fused = 0;
    for (name, o) in ours {
        let t = &theirs[name];
        if name.ends_with("mlp.linear_fc1.layer_norm_weight") && tp != (1, 1) {
            fused += 1;
            let (n, h) = (o["numel"].as_u64().unwrap(), o["shape"][0].as_u64().unwrap());
            let expected = if tp.0 == tp.1 {
                json!({"l2": 0.0, "numel": n * tp.0, "shape": [h * tp.0]})
            } else {
                json!({"l2": null, "cos": null, "numel": [n * tp.0, n * tp.1], "shape": [[h * tp.0], [h * tp.1]]})
            };
            for (key, value) in expected.as_object().unwrap() {
                assert_eq!(&t[key], value, "{name} {key}: msprobe 8.3.2 concatenates the replicated norm");
            }
            continue;
        }
        assert_eq!((&t["numel"], &t["shape"]), (&o["numel"], &o["shape"]), "{name}");
        let [l2, cos, l2_832, cos_832] = [&o["l2"], &o["cos"], &t["l2"], &t["cos"]].map(|v| v.as_f64().unwrap());
        if l2 == 0.0 {
            assert!(l2_832 == 0.0 && (cos_832 - 1.0).abs() <= 2.0 * f64::from(f32::EPSILON) && cos == 1.0, "{name}: {t}");
        } else {
            assert!((l2 - l2_832).abs() <= 1e-6 * l2 && (cos - cos_832).abs() <= 1e-6, "{name}: ours {o}, msprobe 8.3.2's {t}");
        }
    }
    assert_eq!(fused > 0, tp != (1, 1));
    if let Some(functions) = answer["functions"].as_array() {
        let names: Vec<&str> = functions.iter().map(|f| f[0].as_str().unwrap()).collect();
        assert_eq!(names, ours.keys().map(String::as_str).collect::<Vec<_>>(), "8.3.2's functions on the unsharded models: names in model order");
        for f in functions {
            let (name, t) = (f[0].as_str().unwrap(), &f[1]);
            let o = &ours[name];
            assert_eq!((&t["numel"], &t["shape"]), (&o["numel"], &o["shape"]), "{name}");
            for key in ["l2", "cos"] {
                let (g, w) = (o[key].as_f64().unwrap(), t[key].as_f64().unwrap());
                assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{name} {key}: ours {g}, msprobe 8.3.2's function {w}");
            }
        }
    }
}

/// Our compare's output file.
fn read_output(path: &Path) -> serde_json::Map<String, Value> {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Compares `a` with `b` through the library and checks every row against numpy.
fn compare_and_check(dir: &Path, a: &Path, b: &Path) -> checkpoint::Outcome {
    let output = dir.join(format!("{}-{}.json", a.file_name().unwrap().to_string_lossy(), b.file_name().unwrap().to_string_lossy()));
    let outcome = checkpoint::run(&Options { bench: a.into(), cmp: b.into(), output: output.clone() }).unwrap();
    let got = read_output(&output);
    let want = expected(a, b);
    assert_eq!(got.keys().collect::<Vec<_>>(), want.iter().map(|(k, _)| k).collect::<Vec<_>>(), "names, in model order");
    for (name, w) in &want {
        let g = &got[name];
        assert_eq!((&g["numel"], &g["shape"]), (&w["numel"], &w["shape"]), "{name}");
        if name == PERTURBED {
            for key in ["l2", "cos"] {
                let (g, w) = (g[key].as_f64().unwrap(), w[key].as_f64().unwrap());
                assert!((g - w).abs() <= 1e-12 * w.abs(), "{name} {key}: {g} against numpy's {w}");
            }
            assert!(w["l2"].as_f64().unwrap() > 1.0 && w["cos"].as_f64().unwrap() < 0.999, "{name}: {w}");
        } else {
            assert_eq!((&g["l2"], &g["cos"]), (&serde_json::json!(0.0), &serde_json::json!(1.0)), "{name}");
            assert_eq!(w, g, "{name}");
        }
    }
    assert_eq!((outcome.compared, outcome.differing), (want.len(), 1));
    assert!(outcome.only.iter().all(Vec::is_empty) && outcome.inconsistent.iter().all(Vec::is_empty), "{outcome:?}");
    outcome
}

#[test]
fn tp2_pp2_checkpoints_match_numpy() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    make(&a, &["--tp", "2", "--pp", "2"]);
    make(&b, &["--tp", "2", "--pp", "2", "--perturb", PERTURBED]);
    let outcome = compare_and_check(dir.path(), &a, &b);
    // 4 layers of 9 parameters, embedding, final norm, output layer.
    assert_eq!(outcome.compared, 4 * 9 + 3);
    agrees_with_832(&read_output(&outcome.output), &msprobe_832(dir.path(), &[(&a, &b)])[0], (2, 2));
    // The binary writes the same file, and names it.
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "config_check", "-c", "a", "b", "-o", "cli.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.ends_with("Comparison results written to cli.json\n") && stdout.starts_with("39 parameters compared in "), "{stdout}");
    assert_eq!(std::fs::read(dir.path().join("cli.json")).unwrap(), std::fs::read(&outcome.output).unwrap());
}

#[test]
fn a_folder_that_is_not_a_checkpoint_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    assert!(!checkpoint::is_checkpoint_dir(&dir.path().join("empty")));
    let opts = Options { bench: dir.path().join("empty"), cmp: dir.path().join("empty"), output: dir.path().join("o.json") };
    let e = checkpoint::run(&opts).unwrap_err();
    assert_eq!(e.to_string(), format!("{}: expected mp_rank_* folders (a Megatron iteration folder), found none", dir.path().join("empty").display()));
    assert_eq!(e.exit_code(), 4);
    assert!(!dir.path().join("o.json").exists());
}

#[test]
fn unsharded_checkpoints_match_numpy() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    make(&a, &["--dtype", "fp32"]);
    make(&b, &["--dtype", "fp32", "--perturb", PERTURBED]);
    let outcome = compare_and_check(dir.path(), &a, &b);
    agrees_with_832(&read_output(&outcome.output), &msprobe_832(dir.path(), &[(&a, &b)])[0], (1, 1));
}

#[test]
fn sharded_checkpoints_merge_into_the_unsharded_model() {
    // TP 2 x PP 2, and PP 2 x 2 virtual chunks, against the unsharded model:
    // joins, layer indices and the replicated TE norms must all line up.
    let dir = tempfile::tempdir().unwrap();
    let (full, tp_pp, vpp) = (dir.path().join("full"), dir.path().join("tp_pp"), dir.path().join("vpp"));
    make(&full, &["--perturb", PERTURBED]);
    make(&tp_pp, &["--tp", "2", "--pp", "2"]);
    make(&vpp, &["--pp", "2", "--vpp", "2", "--layers", "8", "--iteration", "7"]);
    let merged = compare_and_check(dir.path(), &tp_pp, &full);
    // An iteration folder given directly; 8 layers against 4: the extra ones are reported.
    let iter = vpp.join("iter_0000007");
    let output = dir.path().join("vpp.json");
    let outcome = checkpoint::run(&Options { bench: iter.clone(), cmp: full.clone(), output: output.clone() }).unwrap();
    assert_eq!(outcome.only[0].len(), 4 * 9);
    assert!(outcome.only[0].contains(&"decoder.layers.7.mlp.linear_fc2.weight".to_string()), "{:?}", outcome.only[0]);
    // Layers 0-3 of the 8-layer model hold the 4-layer model's draws (the same
    // seed, in the same order); the final norm and output layer are drawn later.
    let got = read_output(&output);
    let answers = msprobe_832(dir.path(), &[(&tp_pp, &full), (&iter, &full)]);
    agrees_with_832(&read_output(&merged.output), &answers[0], (2, 1));
    // 8.3.2 compares the common parameters only (the extra layers: a warning).
    let common: serde_json::Map<String, Value> = got.iter().filter(|(k, _)| !outcome.only[0].contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
    agrees_with_832(&common, &answers[1], (1, 1));
    let differ: Vec<&String> = got.iter().filter(|(_, m)| m["l2"] != serde_json::json!(0.0)).map(|(k, _)| k).collect();
    assert_eq!(differ, [PERTURBED, "decoder.final_layernorm.weight", "output_layer.weight"]);
    assert_eq!((outcome.compared, outcome.differing), (4 * 9 + 3, 3));
}

#[test]
fn unknown_classes_outside_the_tensors_are_inert() {
    // `args` holding a `__main__` class, a `__main__` enum and http.HTTPStatus,
    // a `__main__` object in the optimizer and RNG state: placeholders, and
    // every parameter compares as without them, in model state dicts that
    // are a `__main__` dict subclass.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    make(&a, &["--user-objects"]);
    make(&b, &["--user-objects", "--tp", "2", "--perturb", PERTURBED]);
    let outcome = compare_and_check(dir.path(), &a, &b);
    assert_eq!(outcome.compared, 4 * 9 + 3);
}

#[test]
fn a_tensor_of_an_unknown_class_is_refused_by_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    make(&a, &[]);
    make(&b, &["--tensor-subclass", "decoder.layers.0.mlp.linear_fc2.weight"]);
    let output = dir.path().join("o.json");
    let e = checkpoint::run(&Options { bench: a, cmp: b.clone(), output: output.clone() }).unwrap_err();
    let file = b.join("iter_0000010/mp_rank_00/model_optim_rng.pt");
    assert_eq!(
        e.to_string(),
        format!("{}: model_optim_rng/data.pkl: refused the global __main__.TaggedTensor: a tensor or storage needs it, and it is not on the allowlist of data-only classes (the pickle is never executed)", file.display())
    );
    assert_eq!(e.exit_code(), 4);
    assert!(!output.exists());
}
