//! Megatron checkpoint compare on checkpoints written by real torch
//! (`tests/checkpoint_compare/make_checkpoints.py`: a small GPT in Megatron
//! core + Transformer Engine naming, realistic `model_optim_rng.pt` files
//! with `args` as an argparse.Namespace holding an enum and a torch dtype,
//! optimizer and numpy/torch RNG state). Every parameter's figures are
//! checked against numpy on the unsharded models: untouched parameters get
//! exactly `l2 = 0.0` and `cos = 1.0`, the perturbed one numpy's values.
//! Sharded (TP 2, PP 2, and PP 2 with virtual chunks) against unsharded
//! checkpoints of the same model prove the merge.

mod common;

use std::path::Path;
use std::process::Command;

use common::python;
use msprobe::checkpoint::{self, Options};
use serde_json::Value;

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

/// Compares `a` with `b` through the library and checks every row against numpy.
fn compare_and_check(dir: &Path, a: &Path, b: &Path) -> checkpoint::Outcome {
    let output = dir.join(format!("{}-{}.json", a.file_name().unwrap().to_string_lossy(), b.file_name().unwrap().to_string_lossy()));
    let outcome = checkpoint::run(&Options { bench: a.into(), cmp: b.into(), output: output.clone() }).unwrap();
    let got: serde_json::Map<String, Value> = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
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
    // The binary writes the same file, and names it.
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(["-f", "pytorch", "config_check", "-c", "a", "b", "-o", "cli.json"]).current_dir(dir.path()).output().unwrap();
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
    compare_and_check(dir.path(), &a, &b);
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
    compare_and_check(dir.path(), &tp_pp, &full);
    // An iteration folder given directly; 8 layers against 4: the extra ones are reported.
    let iter = vpp.join("iter_0000007");
    let output = dir.path().join("vpp.json");
    let outcome = checkpoint::run(&Options { bench: iter, cmp: full.clone(), output: output.clone() }).unwrap();
    assert_eq!(outcome.only[0].len(), 4 * 9);
    assert!(outcome.only[0].contains(&"decoder.layers.7.mlp.linear_fc2.weight".to_string()), "{:?}", outcome.only[0]);
    // Layers 0-3 of the 8-layer model hold the 4-layer model's draws (the same
    // seed, in the same order); the final norm and output layer are drawn later.
    let got: serde_json::Map<String, Value> = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
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
