//! `config_check`: static collection (environment, packages through a
//! stand-in Python, hyperparameters of a tricky launch script and a YAML
//! config) and the comparison of two packs, read back from `result.xlsx`
//! with openpyxl (MSPROBE_PYTHON); plus a pack written by msprobe 8.3.2's
//! own collection (installed by scripts/setup-python-env.sh at MSPROBE_832,
//! default ~/.cache/msprobe-rs/msprobe-8.3.2).

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::python;
use serde_json::{json, Value};

/// A stand-in for the training Python: prints a `sys.path` holding one
/// site-packages folder with `torch` and `numpy` at the given versions.
fn fake_python(dir: &Path, torch: &str) -> PathBuf {
    let site = dir.join("site-packages");
    for (name, version) in [("torch", torch), ("numpy", "1.26.4")] {
        let info = site.join(format!("{name}-{version}.dist-info"));
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(info.join("METADATA"), format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nlong description\n")).unwrap();
    }
    let program = dir.join("python");
    std::fs::write(&program, format!("#!/bin/sh\necho '[\"\", \"{}\", \"/nonexistent\"]'\n", site.display())).unwrap();
    std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    program
}

/// The binary with only `env` in its environment.
fn msprobe(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).current_dir(dir).env_clear().envs(env.iter().copied()).output().unwrap()
}

/// A zip holding `entries`, as the dynamic collection writes its parts.
fn write_zip(path: &Path, entries: &[(&str, String)]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, text) in entries {
        zip.start_file(*name, zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated)).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
}

/// One entry of a zip, as text.
fn read_entry(path: &Path, name: &str) -> String {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut text = String::new();
    zip.by_name(name).unwrap().read_to_string(&mut text).unwrap();
    text
}

fn names(path: &Path) -> Vec<String> {
    zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap().file_names().map(|n| n.unwrap().into_owned()).collect()
}

/// Every sheet of a workbook: name → rows of cell values (openpyxl).
fn sheets(xlsx: &Path) -> Value {
    const READ: &str = "import json, sys, openpyxl\nwb = openpyxl.load_workbook(sys.argv[1])\nprint(json.dumps([[ws.title, [[c.value for c in r] for r in ws.iter_rows()]] for ws in wb]))";
    let o = Command::new(python()).args(["-c", READ]).arg(xlsx).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// msprobe 8.3.2's own `ConfigChecker.compare` on two packs (in `dir`, into
/// `dir/out`): its result.xlsx read as [`sheets`] reads ours.
fn compare_832(dir: &Path, bench: &str, cmp: &str, out: &str) -> Value {
    const COMPARE: &str = "import contextlib, io, json, sys, openpyxl\nfrom msprobe.core.config_check import ConfigChecker\nwith contextlib.redirect_stdout(io.StringIO()):\n    ConfigChecker.compare(*sys.argv[1:4])\nwb = openpyxl.load_workbook(sys.argv[3] + '/result.xlsx')\nprint(json.dumps([[ws.title, [[c.value for c in r] for r in ws.iter_rows()]] for ws in wb]))";
    let o = Command::new(python())
        .args(["-c", COMPARE, bench, cmp, out])
        .current_dir(dir)
        .env("PYTHONPATH", common::msprobe_832())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "msprobe 8.3.2's compare: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn weights(max_w2: f64) -> String {
    json!({"w1": {"max": 1.0, "min": -1.0, "mean": 0.0, "norm": 2.0}, "w2": {"max": max_w2, "min": -1.0, "mean": 0.0, "norm": 2.0}}).to_string()
}

/// Packs `bench` and `cmp` with the binary; they differ in one variable,
/// one package, one hyperparameter and one weight (the weights part is
/// already at -o, as the dynamic collection leaves it, and is kept).
fn two_packs(dir: &Path) {
    for (side, torch, lr, max_w2, deterministic) in [("bench", "2.1.0", "1e-4", 1.0, "true"), ("cmp", "2.4.0", "2e-4", 1.5, "false")] {
        let d = dir.join(side);
        std::fs::create_dir_all(&d).unwrap();
        let python = fake_python(&d, torch);
        std::fs::write(d.join("train.sh"), format!("LR={lr}\ntorchrun --nproc_per_node 8 pretrain.py --lr $LR --seed 42 --no-shuffle\n")).unwrap();
        write_zip(&d.join("pack.zip"), &[("weights/step0/rank0/weight.json", weights(max_w2))]);
        let o = msprobe(
            &d,
            &["-f", "pytorch", "config_check", "-d", "train.sh", "-o", "pack.zip"],
            &[
                ("MSPROBE_PYTHON", python.to_str().unwrap()),
                ("ASCEND_HOME_PATH", "/usr/local/Ascend"),
                ("HCCL_DETERMINISTIC", deterministic),
                ("SECRET_TOKEN", "x"),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "packed 2 environment variables, 2 packages, 4 hyperparameters, kept 1 entries of the existing pack: pack.zip\n"
        );
    }
}

#[test]
fn packs_differing_in_one_of_each_part_say_exactly_that() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_packs(d);
    let bench = d.join("bench/pack.zip");
    assert_eq!(names(&bench), vec!["env", "pip", "hyperparameters/hyperparameters_static.json", "weights/step0/rank0/weight.json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&read_entry(&bench, "env")).unwrap(),
        json!({"ASCEND_HOME_PATH": "/usr/local/Ascend", "HCCL_DETERMINISTIC": "true"})
    );
    assert_eq!(read_entry(&bench, "pip"), "numpy=1.26.4\ntorch=2.1.0\n");

    let o = msprobe(d, &["-f", "pytorch", "config_check", "-c", "bench/pack.zip", "cmp/pack.zip", "-o", "out"], &[]);
    assert_eq!(o.status.code(), Some(9), "a required check failed: {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "env: error\npip: error\nweights: error\nhyperparameters: error\nconfig checking result saved to out/result.xlsx\n"
    );
    assert_eq!(String::from_utf8_lossy(&o.stderr), "msprobe: warning: not compared, a pack lacks their part: dataset\n");
    assert_eq!(std::fs::read_to_string(d.join("out/cmp/env")).unwrap(), read_entry(&d.join("cmp/pack.zip"), "env"), "the packs are extracted");
    let ours = sheets(&d.join("out/result.xlsx"));
    assert_eq!(
        ours,
        json!([
            ["summary", [["filename", "pass_check"], ["env", "error"], ["pip", "error"], ["weights", "error"], ["hyperparameters", "error"]]],
            [
                "env",
                [
                    ["bench_env_name", "cmp_env_name", "bench_value", "cmp_value", "level"],
                    ["HCCL_DETERMINISTIC", "HCCL_DETERMINISTIC", "true", "false", "error"]
                ]
            ],
            ["pip", [["package", "bench version", "cmp version", "level"], ["torch", "2.1.0", "2.4.0", "error"]]],
            [
                "weights",
                [
                    ["step", "rank", "weight_name", "equal", "max_relative_diff", "min_relative_diff", "mean_relative_diff", "norm_relative_diff"],
                    [0, 0, "w1", true, 0, 0, null, 0],
                    [0, 0, "w2", false, 0.5, 0, null, 0]
                ]
            ],
            [
                "hyperparameters",
                [
                    ["file_name", "bench_para", "cmp_para", "bench_value", "cmp_value", "matched_with", "level"],
                    ["hyperparameters_static.json", "lr", "lr", "1e-4", "2e-4", "pure name", "error"]
                ]
            ]
        ])
    );
    // msprobe 8.3.2's own compare on the same packs: the same workbook but
    // for the differences docs/config-check.md lists: it never compares
    // torch (pip passes, no row) and swaps the env sheet's bench and cmp values.
    let mut theirs = ours.clone();
    theirs[0][1][2][1] = json!("pass");
    theirs[2][1].as_array_mut().unwrap().truncate(1);
    theirs[1][1][1].as_array_mut().unwrap().swap(2, 3);
    // Its weights rows come in the order of a Python set: compared sorted.
    let sort_weights = |mut v: Value| {
        v[3][1].as_array_mut().unwrap()[1..].sort_by_key(|r| r[2].as_str().unwrap().to_owned());
        v
    };
    assert_eq!(sort_weights(compare_832(d, "bench/pack.zip", "cmp/pack.zip", "out_832")), sort_weights(theirs));
}

#[test]
fn identical_packs_pass_and_a_rerun_replaces_the_extraction() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    two_packs(d);
    std::fs::create_dir_all(d.join("out/bench/stale")).unwrap();
    let o = msprobe(d, &["-f", "mindspore", "config_check", "-c", "bench/pack.zip", "bench/pack.zip", "-o", "out"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!d.join("out/bench/stale").exists(), "an earlier run's files are not compared again");
    let summary = &sheets(&d.join("out/result.xlsx"))[0];
    assert_eq!(summary, &json!(["summary", [["filename", "pass_check"], ["env", "pass"], ["pip", "pass"], ["weights", "pass"], ["hyperparameters", "pass"]]]));
}

#[test]
fn static_collection_reads_tricky_scripts_and_yaml_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let python = fake_python(d, "2.1.0");
    let script = r#"#!/bin/bash
# torchrun --commented-out 1
export CUDA_DEVICE_MAX_CONNECTIONS=1
NNODES=2
LR="1e-4"   # quoted, with a comment
DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes ${NNODES}"
GPT_ARGS="
    --num-layers 24 \
    --use-flash-attn
    --min-lr -1e-5
"
torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    $GPT_ARGS \
    --lr $LR --seed=1234 \
    --no-shuffle \
    --save "${CKPT_DIR:-/ckpt/run 1}" \
    --tokenizer-type GPT2BPETokenizer \
    --log-dir $LOG_DIR \
    --fp16 2>&1 | tee train.log
"#;
    std::fs::write(d.join("train.sh"), script).unwrap();
    let yaml = "# model config\nmodel:\n  hidden_size: 4096\n  dropout: 0.1\n  lr: 1.0e-4\n  activation: \"swiglu\"\n  layers: [1, 2]\noptimizer:\n  betas:\n    - 0.9\n    - 0.95\n  schedule:\n    - {name: warmup, steps: 100}\n  eps: 1e-8\n  enabled: yes\n  note: ~\n";
    std::fs::write(d.join("config.yml"), yaml).unwrap();
    let o = msprobe(d, &["-f", "pytorch", "config_check", "-d", "train.sh", "config.yml", "-o", "sub/p.zip"], &[("MSPROBE_PYTHON", python.to_str().unwrap())]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = read_entry(&d.join("sub/p.zip"), "hyperparameters/hyperparameters_static.json");
    let got: Value = serde_json::from_str(&text).unwrap();
    let expected = json!({
        "nproc_per_node": "8", "nnodes": "2", "num-layers": "24", "use-flash-attn": true, "min-lr": "-1e-5",
        "lr": "1e-4", "seed": "1234", "no-shuffle": true, "save": "/ckpt/run 1", "tokenizer-type": "GPT2BPETokenizer",
        "log-dir": "$LOG_DIR", "fp16": true,
        "model.hidden_size": 4096, "model.dropout": 0.1, "model.lr": 0.0001, "model.activation": "swiglu", "model.layers": [1, 2],
        "optimizer.betas": [0.9, 0.95], "optimizer.schedule.0.name": "warmup", "optimizer.schedule.0.steps": 100,
        "optimizer.eps": "1e-8", "optimizer.enabled": true
    });
    assert_eq!(got, expected);
    assert_eq!(got.as_object().unwrap().keys().collect::<Vec<_>>(), expected.as_object().unwrap().keys().collect::<Vec<_>>(), "file order");
}

/// `-d` asks the Python `MSPROBE_PYTHON` names, even when msprobe-rs is
/// installed in a venv of its own whose `python3` sits beside the binary.
#[test]
fn collection_asks_msprobe_python_not_the_python_beside_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let training = fake_python(&d.join("training"), "2.1.0");
    let bin = d.join("tool/bin");
    let beside = fake_python(&d.join("tool"), "9.9.9");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::rename(&beside, bin.join("python3")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_msprobe"), bin.join("msprobe")).unwrap();
    std::fs::write(d.join("train.sh"), "torchrun train.py --lr 1\n").unwrap();
    let o = Command::new(bin.join("msprobe"))
        .args(["-f", "pytorch", "config_check", "-d", "train.sh", "-o", "p.zip"])
        .current_dir(d)
        .env_clear()
        .env("MSPROBE_PYTHON", &training)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let pip = read_entry(&d.join("p.zip"), "pip");
    assert!(pip.lines().any(|l| l == "torch=2.1.0") && !pip.contains("9.9.9"), "{pip}");
}

#[test]
fn a_pack_written_by_msprobe_832_compares() {
    let src = common::msprobe_832();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("train.sh"), "torchrun --nproc_per_node 8 pretrain.py --lr 1e-4 --seed 42 \\\n    --bf16\n").unwrap();
    std::fs::write(d.join("c.yaml"), "model:\n  hidden: 4096\n  eps: 1.0e-5\n").unwrap();
    const PACK: &str = "import sys; sys.argv = ['msprobe', '-f', 'pytorch', 'config_check', '-d', 'train.sh', 'c.yaml', '-o', 'theirs.zip']\nfrom msprobe.msprobe import main\nmain()";
    let o = Command::new(python()).args(["-c", PACK]).current_dir(d).env("PYTHONPATH", &src).output().unwrap();
    assert!(o.status.success(), "msprobe 8.3.2's collection failed: {}", String::from_utf8_lossy(&o.stderr));
    let python = python();
    let ours = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "config_check", "-d", "train.sh", "c.yaml", "-o", "ours.zip"])
        .current_dir(d)
        .env("PYTHONPATH", &src)
        .env("MSPROBE_PYTHON", &python)
        .output()
        .unwrap();
    assert_eq!(ours.status.code(), Some(0), "{}", String::from_utf8_lossy(&ours.stderr));
    assert_eq!(
        serde_json::from_str::<Value>(&read_entry(&d.join("ours.zip"), "hyperparameters/hyperparameters_static.json")).unwrap(),
        serde_json::from_str::<Value>(&read_entry(&d.join("theirs.zip"), "hyperparameters/hyperparameters_static.json")).unwrap(),
        "the same hyperparameters as msprobe's parser"
    );
    let o = msprobe(d, &["-f", "pytorch", "config_check", "-c", "theirs.zip", "ours.zip", "-o", "out"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = json!(["summary", [["filename", "pass_check"], ["env", "pass"], ["pip", "pass"], ["hyperparameters", "pass"]]]);
    assert_eq!(sheets(&d.join("out/result.xlsx"))[0], summary);
    assert_eq!(compare_832(d, "theirs.zip", "ours.zip", "out_832")[0], summary, "msprobe 8.3.2's own compare of the two packs");
}

#[test]
fn compare_routes_checkpoint_folders_and_refuses_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for c in ["c1", "c2"] {
        std::fs::create_dir(d.join(c)).unwrap();
        std::fs::write(d.join(c).join("latest_checkpointed_iteration.txt"), "1\n").unwrap();
    }
    let o = msprobe(d, &["-f", "pytorch", "config_check", "-c", "c1", "c2"], &[]);
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "msprobe: error: c1/iter_0000001: expected the iteration folder that latest_checkpointed_iteration.txt names, it does not exist\n",
        "a checkpoint compare"
    );
    let o = msprobe(d, &["-f", "pytorch", "config_check", "-d", "-c", "c1", "c2"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: the argument '--dump [<FILE>...]' cannot be used with '--compare <BENCH> <CMP>'"));
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 2, "nothing written");
}
