//! The Python package's `ConfigChecker` (python/msprobe_rs/config_checker.py):
//! msprobe 8.3.2's config_check collection with real torch and MindSpore.
//! Each test runs a training-like script with PYTHONPATH=python, which
//! extracts the pack it wrote (and prints the zip's entry names, in order);
//! the test checks the files and their JSON. Needs MSPROBE_PYTHON
//! (scripts/test.sh sets it).
//!
//! Weights and inputs hold small dyadic values, so every float32 reduction is
//! exact whatever the summation order: torch's figures (what the pack holds)
//! must equal numpy's (which the script writes next to the pack) bit for bit.

// Tests here are tables of cases (a Python script and the pack entries
// expected of it): their length is the table's, not logic's.
#![allow(clippy::too_many_lines)]

mod common;

use std::path::{Path, PathBuf};

use common::{python, repo, run_ok};
use serde_json::{json, Value};

/// The JSON printed on the line starting with `tag `.
fn tagged(out: &str, tag: &str) -> Value {
    let prefix = format!("{tag} ");
    let line = out.lines().find_map(|l| l.strip_prefix(prefix.as_str())).unwrap_or_else(|| panic!("no {tag} line in:\n{out}"));
    serde_json::from_str(line).unwrap()
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// The text of a pack entry (extracted under `root`): JSON written with
/// `json.dumps(..., indent=4)`.
fn entry_text(root: &Path, name: &str) -> String {
    std::fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn feats(max: f64, min: f64, mean: f64, norm: f64) -> Value {
    json!({"max": max, "min": min, "mean": mean, "norm": norm})
}

/// Python helpers shared by the scripts: extract a pack and list its entries;
/// numpy's figures of a float32 array.
const PRELUDE: &str = r#"
import json, os, sys, zipfile
import numpy as np

def extract(zip_path, out):
    with zipfile.ZipFile(zip_path) as z:
        names = z.namelist()
        z.extractall(out)
    print("NAMES", json.dumps(names))

def np_feats(a):
    a = np.asarray(a, dtype=np.float32).ravel()
    return {"max": float(a.max()), "min": float(a.min()), "mean": float(a.mean(dtype=np.float32)),
            "norm": float(np.sqrt(np.dot(a, a)))}
"#;

const TORCH_RUN: &str = r#"
import random
from msprobe_rs import ConfigChecker
ConfigChecker.apply_patches("pytorch")
ConfigChecker.apply_patches("pytorch")  # a second call does not wrap twice
import torch

torch.manual_seed(1234)
for _ in range(2):
    random.random()
np.random.randint(0, 10, size=3)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(8, 4)
        self.proj = torch.nn.Linear(4, 2)
        self.head = torch.nn.Linear(2, 1, bias=False).to(torch.bfloat16)

    def forward(self, input_ids, labels=None, extra=None):
        h = self.proj(self.embed(input_ids))
        return self.head(h.bfloat16())

net = Net()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_((torch.arange(p.numel(), dtype=torch.float32).reshape(p.shape) - 3 * i) / 4)

def make_batch(step):
    noise = torch.randn(2)  # a random op called at each step: only the first call (before the first forward) is packed
    ids = (torch.arange(6).reshape(2, 3) + step) % 8
    return ids, {"labels": ids.float() / 8, "extra": [torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.bfloat16), 7, "text"]}

ConfigChecker(model=net, output_zip_path="out/pack.zip")
expected = {}
for step in range(2):
    ids, kwargs = make_batch(step)
    expected[f"weights/step{step}/rank0/weight.json"] = {n: np_feats(p.detach().float().numpy()) for n, p in net.named_parameters()}
    expected[f"dataset/step{step}/rank0/dataset.json"] = {
        "args": {"0": np_feats(ids.numpy())},
        "kwargs": {"labels": np_feats(kwargs["labels"].numpy())},
    }
    net(ids, **kwargs).float().sum().backward()
    with torch.no_grad():  # an "optimizer step"
        for p in net.parameters():
            p.add_(0.5)
print("STEP", ConfigChecker.step)
print("EXPECTED", json.dumps(expected))
extract("out/pack.zip", "unpacked")
print("MODES", json.dumps([oct(os.stat("out").st_mode & 0o777), oct(os.stat("out/pack.zip").st_mode & 0o777)]))
print("OUT_DIR", json.dumps(sorted(os.listdir("out"))))
"#;

/// The package accepts the binary's "packs differ" exit code as a result
/// (its `_PACKS_DIFFER`): it must be the code the binary exits with.
#[test]
fn the_packages_packs_differ_code_is_the_binarys() {
    let source = std::fs::read_to_string(repo().join("python/msprobe_rs/config_checker.py")).unwrap();
    let line = source.lines().find_map(|l| l.strip_prefix("_PACKS_DIFFER = ")).expect("config_checker.py assigns _PACKS_DIFFER");
    let code: u8 = line.split('#').next().unwrap().trim().parse().unwrap_or_else(|e| panic!("_PACKS_DIFFER = {line}: {e}"));
    assert_eq!(code, runtime::exit::PACKS_DIFFER);
}

/// A torch model, two steps: the zip's entries and order, weights and
/// dataset features against numpy's, the random-op stacks.
#[test]
fn torch_pack_layout_weights_dataset_and_random() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = run_ok(d, &format!("{PRELUDE}{TORCH_RUN}"), &[]);
    let root = d.join("unpacked");
    assert_eq!(
        tagged(&out, "NAMES"),
        json!([
            "env",
            "pip",
            "dataset/step0/rank0/dataset.json",
            "weights/step0/rank0/weight.json",
            "random/rank0.json",
            "dataset/step1/rank0/dataset.json",
            "weights/step1/rank0/weight.json"
        ])
    );
    assert_eq!(tagged(&out, "STEP"), json!(2));
    assert_eq!(tagged(&out, "MODES"), json!(["0o750", "0o640"]));
    // No temporary files left: the zip and the hidden lock file.
    assert_eq!(tagged(&out, "OUT_DIR"), json!([".pack.zip.lock", "pack.zip"]));

    // Weights and dataset: numpy's figures, exactly; the bf16 list element
    // reduced in bf16 (norm sqrt(30) rounded to bf16); non-tensors are "".
    let expected = tagged(&out, "EXPECTED");
    for step in 0..2 {
        let w = format!("weights/step{step}/rank0/weight.json");
        let got = read_json(&root.join(&w));
        assert_eq!(got, expected[&w], "{w}");
        let names: Vec<&String> = got.as_object().unwrap().keys().collect();
        assert_eq!(names, ["embed.weight", "proj.weight", "proj.bias", "head.weight"]);
        let ds = format!("dataset/step{step}/rank0/dataset.json");
        let got = read_json(&root.join(&ds));
        let mut want = expected[&ds].clone();
        want["kwargs"]["extra"] = json!({"0": feats(4.0, 1.0, 2.5, 5.46875), "1": "", "2": ""});
        assert_eq!(got, want, "{ds}");
    }
    // Values pinned by hand too (step 0: embed.weight = arange(32)/4; step 1: +0.5).
    let w0 = read_json(&root.join("weights/step0/rank0/weight.json"));
    let norm = ((0..32).map(|i| (i * i) as f64).sum::<f64>() / 16.0).sqrt() as f32 as f64;
    assert_eq!(w0["embed.weight"], feats(7.75, 0.0, 3.875, norm));
    let w1 = read_json(&root.join("weights/step1/rank0/weight.json"));
    assert_eq!(w1["embed.weight"]["max"], json!(8.25));
    assert_eq!(w1["head.weight"], feats(-1.5, -1.75, -1.625, expected["weights/step1/rank0/weight.json"]["head.weight"]["norm"].as_f64().unwrap()));
    let d0 = read_json(&root.join("dataset/step0/rank0/dataset.json"));
    assert_eq!(d0["args"]["0"]["max"], json!(5.0)); // int64 ids reduced in float32
                                                    // msprobe's text: json.dumps(indent=4), floats in Python repr.
    let text = entry_text(&root, "weights/step0/rank0/weight.json");
    assert!(text.starts_with("{\n    \"embed.weight\": {\n        \"max\": 7.75,\n        \"min\": 0.0,\n"), "{text}");

    // random: calls before the first forward, each with its full stack
    // (outermost first, the wrapper left out), identical stacks counted.
    let script = std::fs::canonicalize(d.join("test_script.py")).unwrap();
    let script = script.to_str().unwrap();
    let line_of = |code: &str| -> usize {
        let full = format!("{PRELUDE}{TORCH_RUN}");
        full.lines().position(|l| l.trim() == code).unwrap_or_else(|| panic!("{code}")) + 1
    };
    let frame = |code: &str, func: &str| format!("File {script}, line {}, in {func}, {code}", line_of(code));
    let random = read_json(&root.join("random/rank0.json"));
    assert_eq!(
        random,
        json!({
            "torch.manual_seed": [{"count": 1, "stack": [frame("torch.manual_seed(1234)", "<module>")]}],
            "random.random": [{"count": 2, "stack": [frame("random.random()", "<module>")]}],
            "np.random.randint": [{"count": 1, "stack": [frame("np.random.randint(0, 10, size=3)", "<module>")]}],
            "torch.randn": [{"count": 1, "stack": [
                frame("ids, kwargs = make_batch(step)", "<module>"),
                frame("noise = torch.randn(2)  # a random op called at each step: only the first call (before the first forward) is packed", "make_batch"),
            ]}],
        })
    );

    // env and pip: this process's environment and distributions.
    let env = read_json(&root.join("env"));
    assert_eq!(env["PYTHONPATH"], json!(repo().join("python").to_str().unwrap()));
    let pip = entry_text(&root, "pip");
    assert!(pip.lines().any(|l| l.starts_with("torch=")) && pip.lines().any(|l| l.starts_with("numpy=")), "{pip}");
    assert!(pip.ends_with('\n') && pip.lines().all(|l| l.split('=').count() == 2), "{pip}");
}

/// Packing again into the same zip replaces entries of the same name instead
/// of appending duplicates (msprobe appends, and extraction keeps the later).
#[test]
fn packing_again_replaces_entries() {
    let dir = tempfile::tempdir().unwrap();
    let code = format!(
        "{PRELUDE}{}",
        r#"
import torch
from msprobe_rs import ConfigChecker
m = torch.nn.Linear(2, 1)
with torch.no_grad():
    m.weight.fill_(1.0); m.bias.fill_(0.0)
ConfigChecker(model=m, output_zip_path="pack.zip")
m(torch.ones(1, 2)); m(torch.ones(1, 2))
with torch.no_grad():
    m.weight.fill_(2.0)
ConfigChecker.step = 0  # a second run in the same process
ConfigChecker(model=torch.nn.Linear(2, 1), output_zip_path="pack.zip")
m(torch.ones(1, 2))
extract("pack.zip", "unpacked")
"#
    );
    let out = run_ok(dir.path(), &code, &[]);
    // The first model keeps its hook: its second run's step 0 replaced the first.
    assert_eq!(
        tagged(&out, "NAMES"),
        json!([
            "env",
            "pip",
            "dataset/step0/rank0/dataset.json",
            "weights/step0/rank0/weight.json",
            "random/rank0.json",
            "dataset/step1/rank0/dataset.json",
            "weights/step1/rank0/weight.json"
        ])
    );
    let w = read_json(&dir.path().join("unpacked/weights/step0/rank0/weight.json"));
    assert_eq!(w["weight"], feats(2.0, 2.0, 2.0, 8f64.sqrt() as f32 as f64));
    // An empty random file: apply_patches was never called.
    assert_eq!(entry_text(&dir.path().join("unpacked"), "random/rank0.json"), "{}");
}

/// Two ranks (torch.distributed, gloo) share one zip: dataset and weights per
/// rank and step; env, pip and random from rank 0 only.
#[test]
fn two_ranks_share_one_pack() {
    let dir = tempfile::tempdir().unwrap();
    let code = format!(
        "{PRELUDE}{}",
        r#"
import torch, torch.distributed as dist, torch.multiprocessing as mp
from msprobe_rs import ConfigChecker

def worker(rank, world, init_file):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    m = torch.nn.Linear(2, 2)
    with torch.no_grad():
        m.weight.fill_(rank + 1.0); m.bias.fill_(0.5)
    ConfigChecker(model=[m], output_zip_path="pack.zip")  # a VPP list: its first chunk
    for _ in range(2):
        m(torch.full((1, 2), float(rank)))
        dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(worker, args=(2, os.path.abspath("init_file")), nprocs=2)
    extract("pack.zip", "unpacked")
"#
    );
    let out = run_ok(dir.path(), &code, &[]);
    let mut names: Vec<String> = serde_json::from_value(tagged(&out, "NAMES")).unwrap();
    names.sort();
    assert_eq!(
        names,
        [
            "dataset/step0/rank0/dataset.json",
            "dataset/step0/rank1/dataset.json",
            "dataset/step1/rank0/dataset.json",
            "dataset/step1/rank1/dataset.json",
            "env",
            "pip",
            "random/rank0.json",
            "weights/step0/rank0/weight.json",
            "weights/step0/rank1/weight.json",
            "weights/step1/rank0/weight.json",
            "weights/step1/rank1/weight.json",
        ]
    );
    let root = dir.path().join("unpacked");
    for rank in 0..2u32 {
        let w = read_json(&root.join(format!("weights/step1/rank{rank}/weight.json")));
        let v = (rank + 1) as f64;
        assert_eq!(w, json!({"weight": feats(v, v, v, 2.0 * v), "bias": feats(0.5, 0.5, 0.5, 0.5f64.hypot(0.5) as f32 as f64)}));
        let ds = read_json(&root.join(format!("dataset/step0/rank{rank}/dataset.json")));
        let r = rank as f64;
        assert_eq!(ds, json!({"args": {"0": feats(r, r, r, (2.0 * r * r).sqrt() as f32 as f64)}, "kwargs": {}}));
    }
}

/// Without a distributed group, env RANK gives the rank; a rank other than 0
/// packs no env, pip or random.
#[test]
fn env_rank_without_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let code = format!(
        "{PRELUDE}{}",
        r#"
import torch
from msprobe_rs import ConfigChecker
ConfigChecker.apply_patches()
m = torch.nn.Linear(1, 1)
ConfigChecker(model=m, output_zip_path="pack.zip")
m(torch.ones(1))
extract("pack.zip", "unpacked")
"#
    );
    let out = run_ok(dir.path(), &code, &[("RANK", "3")]);
    assert_eq!(tagged(&out, "NAMES"), json!(["dataset/step0/rank3/dataset.json", "weights/step0/rank3/weight.json"]));
}

/// Wrong arguments raise before anything is written.
#[test]
fn bad_arguments_raise() {
    let dir = tempfile::tempdir().unwrap();
    let code = r#"
import json, os
import torch
from msprobe_rs import ConfigChecker
cases = [
    dict(model=object(), output_zip_path="a.zip"),
    dict(model=torch.nn.Linear(1, 1), output_zip_path="a.tar"),
    dict(output_zip_path=3),
    dict(output_zip_path="a.zip", fmk="jax"),
    dict(output_zip_path="a.zip", shell_path=[1]),
    dict(output_zip_path="a.zip", shell_path=["x.sh"] * 101),
]
for kw in cases:
    try:
        ConfigChecker(**kw)
        print("OK")
    except Exception as e:
        print(type(e).__name__, e)
try:
    ConfigChecker.apply_patches("jax")
except ValueError as e:
    print("ValueError", e)
print("FILES", json.dumps(sorted(os.listdir("."))))
"#;
    let out = run_ok(dir.path(), code, &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "TypeError model is not torch.nn.Module/mindspore.nn.Cell or module list.",
            "ValueError output zip path must be a string and ends with '.zip'",
            "ValueError output zip path must be a string and ends with '.zip'",
            "ValueError ConfigChecker: fmk must be one of ['pytorch', 'mindspore'], got 'jax'",
            "TypeError ConfigChecker: shell_path items must be paths, got int",
            "ValueError ConfigChecker: shell_path has 101 paths, at most 100 are allowed",
            "ValueError ConfigChecker: fmk must be one of ['pytorch', 'mindspore'], got 'jax'",
            r#"FILES ["test_script.py"]"#,
        ]
    );
}

#[cfg(unix)]
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// shell_path is parsed by the binary (`-f FMK config_check -d FILES -o ZIP`):
/// only its hyperparameters_static.json is taken; its failure, or its
/// absence, raises before anything is written.
#[cfg(unix)]
#[test]
fn shell_path_goes_to_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A fake binary: records its arguments, writes a pack with env, pip and
    // the static hyperparameters (with python's zipfile).
    let fake = d.join("fake_msprobe");
    let py = python();
    script(
        &fake,
        &format!(
            "printf '%s\\n' \"$@\" > args.txt\nfor last; do :; done\n\"{}\" -c 'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], \"w\")\nz.writestr(\"env\", \"{{}}\")\nz.writestr(\"pip\", \"fake=1\\n\")\nz.writestr(\"hyperparameters/hyperparameters_static.json\", \"{{\\n    \\\"lr\\\": \\\"1e-4\\\"\\n}}\")' \"$last\"\n",
            py.display()
        ),
    );
    let fail = d.join("fake_fail");
    script(&fail, "echo 'msprobe: error: Invalid parser type: .yml' >&2\nexit 2\n");
    let code = format!(
        "{PRELUDE}{}",
        r#"
from msprobe_rs import ConfigChecker, MsprobeError
try:
    ConfigChecker(shell_path=["train.sh", "-conf.yaml"], output_zip_path="out/pack.zip", fmk="mindspore")
except Exception as e:
    print("ERR", json.dumps([type(e).__name__, str(e), getattr(e, "returncode", None)]))
    print("EXISTS", json.dumps(os.path.exists("out/pack.zip")))
else:
    extract("out/pack.zip", "unpacked")
"#
    );
    let out = run_ok(d, &code, &[("MSPROBE_BIN", fake.to_str().unwrap())]);
    assert_eq!(tagged(&out, "NAMES"), json!(["env", "pip", "hyperparameters/hyperparameters_static.json"]));
    assert_eq!(entry_text(&d.join("unpacked"), "hyperparameters/hyperparameters_static.json"), "{\n    \"lr\": \"1e-4\"\n}");
    assert!(entry_text(&d.join("unpacked"), "pip").lines().any(|l| l.starts_with("numpy=")), "pip is this Python's, not the binary's");
    let args = std::fs::read_to_string(d.join("args.txt")).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[..7], ["-f", "mindspore", "config_check", "-d", "train.sh", "./-conf.yaml", "-o"]);
    assert!(args[7].ends_with("/static.zip") && args.len() == 8, "{args:?}");

    // The binary fails: its error line, its code; no pack.
    std::fs::remove_dir_all(d.join("out")).unwrap();
    let out = run_ok(d, &code, &[("MSPROBE_BIN", fail.to_str().unwrap())]);
    assert_eq!(tagged(&out, "ERR"), json!(["MsprobeError", "msprobe: error: Invalid parser type: .yml", 2]));
    assert_eq!(tagged(&out, "EXISTS"), json!(false));

    // No binary at all: a one-line FileNotFoundError naming shell_path.
    std::fs::remove_dir_all(d.join("out")).unwrap();
    let empty = d.join("empty_path");
    std::fs::create_dir(&empty).unwrap();
    let out = run_ok(d, &code, &[("PATH", empty.to_str().unwrap())]);
    let err = tagged(&out, "ERR");
    assert_eq!(err[0], "FileNotFoundError");
    let msg = err[1].as_str().unwrap();
    assert!(msg.contains("set MSPROBE_BIN") && msg.contains("shell_path") && !msg.contains('\n'), "{msg}");
    assert_eq!(tagged(&out, "EXISTS"), json!(false));
}

/// MindSpore: the Cell's construct is wrapped; weights (cast to float32) and
/// inputs against numpy; set_seed and manual_seed tracked under their names.
#[test]
fn mindspore_pack() {
    let dir = tempfile::tempdir().unwrap();
    let code = format!(
        "{PRELUDE}{}",
        r#"
from msprobe_rs import ConfigChecker
ConfigChecker.apply_patches("mindspore")
import mindspore as ms
from mindspore import nn
ms.set_seed(1)

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2)

    def construct(self, x, mask=None):
        return self.dense(x)

net = Net()
for i, p in enumerate(net.get_parameters()):
    p.set_data(ms.Tensor((np.arange(int(np.prod(p.shape)), dtype=np.float32).reshape(p.shape) - i) / 4))
ConfigChecker(model=net, output_zip_path="pack.zip", fmk="mindspore")
expected = {}
for step in range(2):
    x = ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 8 + step)
    mask = ms.Tensor(np.array([1, 0, 3], dtype=np.int32))
    expected[f"weights/step{step}/rank0/weight.json"] = {n: np_feats(p.asnumpy()) for n, p in net.parameters_and_names()}
    expected[f"dataset/step{step}/rank0/dataset.json"] = {"args": {"0": np_feats(x.asnumpy())}, "kwargs": {"mask": np_feats(mask.asnumpy())}}
    net(x, mask=mask)
print("EXPECTED", json.dumps(expected))
extract("pack.zip", "unpacked")
"#
    );
    let out = run_ok(dir.path(), &code, &[]);
    let root = dir.path().join("unpacked");
    assert_eq!(
        tagged(&out, "NAMES"),
        json!([
            "env",
            "pip",
            "dataset/step0/rank0/dataset.json",
            "weights/step0/rank0/weight.json",
            "random/rank0.json",
            "dataset/step1/rank0/dataset.json",
            "weights/step1/rank0/weight.json"
        ])
    );
    let expected = tagged(&out, "EXPECTED");
    for (name, want) in expected.as_object().unwrap() {
        assert_eq!(&read_json(&root.join(name)), want, "{name}");
    }
    // The int32 mask's mean in float32 (msprobe's MindSpore path truncates it to 1.0).
    assert_eq!(read_json(&root.join("dataset/step0/rank0/dataset.json"))["kwargs"]["mask"]["mean"], json!((4.0f32 / 3.0f32) as f64));
    let random = read_json(&root.join("random/rank0.json"));
    let ops: Vec<&String> = random.as_object().unwrap().keys().collect();
    assert_eq!(ops[0], "mindspore.set_seed");
    assert_eq!(random["mindspore.set_seed"][0]["count"], json!(1));
    let stack = random["mindspore.set_seed"][0]["stack"].as_array().unwrap();
    assert_eq!(stack.len(), 1);
    assert!(stack[0].as_str().unwrap().ends_with(", in <module>, ms.set_seed(1)"), "{stack:?}");
}

/// The package imports without torch or MindSpore loaded, and loads neither.
#[test]
fn import_loads_no_framework() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(
        dir.path(),
        r#"
import sys
import msprobe_rs
from msprobe_rs import ConfigChecker
print(sorted(m for m in ("torch", "mindspore") if m in sys.modules))
"#,
        &[],
    );
    assert_eq!(out.trim(), "[]");
}

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_msprobe"))
}

/// Two runs, one weight perturbed, packed by `msprobe_rs.ConfigChecker` and
/// by msprobe 8.3.2's own (the same training script and environment), and
/// compared by the binary through `ConfigChecker.compare` (`msprobe -f
/// pytorch config_check -c A B -o OUT`) and by 8.3.2's compare: the packs
/// are byte for byte 8.3.2's, entry order included; result.xlsx's summary
/// fails weights only, as 8.3.2's summary does on either tool's packs; the
/// weights sheet names the parameter at both steps with 8.3.2's figures,
/// but for the documented differences (docs/config-check.md): the relative
/// difference divides by the bench value's magnitude (8.3.2: its signed
/// value), floats are exact (8.3.2's writer keeps 16 significant digits),
/// rows in model order, and the dataset sheet keeps its `status` column.
#[test]
fn perturbed_weight_fails_the_weights_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = r#"
import sys, random
if sys.argv[3] == "832":
    from msprobe.core.config_check import ConfigChecker
else:
    from msprobe_rs import ConfigChecker
ConfigChecker.apply_patches("pytorch")
import torch
torch.manual_seed(0)
random.random()
net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
if sys.argv[2] == "1":
    with torch.no_grad():
        net[1].weight[0, 0] += 0.125
ConfigChecker(model=net, output_zip_path=sys.argv[1])
for step in range(2):
    net(torch.ones(2, 3) * step)
"#;
    std::fs::write(d.join("run.py"), run).unwrap();
    let code = r#"
import contextlib, io, json, subprocess, sys, zipfile
import openpyxl
from msprobe_rs import ConfigChecker
from msprobe.core.config_check import ConfigChecker as ConfigChecker832
for tool in ("rs", "832"):
    for zip_path, flag in ((f"a_{tool}.zip", "0"), (f"b_{tool}.zip", "1")):
        subprocess.run([sys.executable, "run.py", zip_path, flag, tool], check=True, capture_output=True)
        with zipfile.ZipFile(zip_path) as z:
            print(f"PACK_{zip_path}", json.dumps([[n, z.read(n).decode()] for n in z.namelist()]))
print("PASSED", json.dumps(ConfigChecker.compare("a_rs.zip", "b_rs.zip", "out")))
with contextlib.redirect_stdout(io.StringIO()):
    ConfigChecker832.compare("a_rs.zip", "b_rs.zip", "out_832")
    ConfigChecker832.compare("a_832.zip", "b_832.zip", "out_832_on_832")
for out in ("out", "out_832", "out_832_on_832"):
    wb = openpyxl.load_workbook(f"{out}/result.xlsx")
    print(f"SHEETS_{out}", json.dumps(wb.sheetnames))
    for ws in wb:
        print(f"SHEET_{out}_{ws.title}", json.dumps([list(r) for r in ws.iter_rows(values_only=True)]))
"#;
    let pythonpath = std::env::join_paths([repo().join("python"), common::msprobe_832()]).unwrap();
    let out = run_ok(d, code, &[("MSPROBE_BIN", binary().to_str().unwrap()), ("PYTHONPATH", pythonpath.to_str().unwrap())]);
    for run in ["a", "b"] {
        let (ours, theirs) = (tagged(&out, &format!("PACK_{run}_rs.zip")), tagged(&out, &format!("PACK_{run}_832.zip")));
        let names: Vec<&Value> = ours.as_array().unwrap().iter().map(|e| &e[0]).collect();
        assert_eq!(names.len(), 7, "env, pip, dataset and weights at 2 steps, random: {names:?}");
        assert_eq!(ours, theirs, "pack {run}: ours (left) and msprobe 8.3.2's (right), entry by entry");
    }
    assert_eq!(tagged(&out, "PASSED"), json!(false));
    let summary = json!([["filename", "pass_check"], ["env", "pass"], ["pip", "pass"], ["dataset", "pass"], ["weights", "error"], ["random", "pass"]]);
    for result in ["out", "out_832", "out_832_on_832"] {
        assert_eq!(tagged(&out, &format!("SHEETS_{result}")), json!(["summary", "env", "pip", "dataset", "weights", "random"]), "{result}");
        assert_eq!(tagged(&out, &format!("SHEET_{result}_summary")), summary, "{result}");
    }
    let weights = tagged(&out, "SHEET_out_weights");
    let rows = weights.as_array().unwrap();
    assert_eq!(rows[0], json!(["step", "rank", "weight_name", "equal", "max_relative_diff", "min_relative_diff", "mean_relative_diff", "norm_relative_diff"]));
    assert_eq!(rows.len(), 9); // 4 parameters x 2 steps
    let failed: Vec<(i64, String)> =
        rows[1..].iter().filter(|r| r[3] == json!(false)).map(|r| (r[0].as_i64().unwrap(), r[2].as_str().unwrap().to_owned())).collect();
    assert_eq!(failed, [(0, "1.weight".to_owned()), (1, "1.weight".to_owned())]);
    // 8.3.2's sheets on the same packs (and on its own): the same rows, in
    // its order, its floats at 16 significant digits; the perturbed weight's
    // min (negative in the bench) divided by the signed value; the dataset
    // sheet without `status`.
    let sheet = |result: &str, name: &str, columns: usize| -> Vec<Vec<Value>> {
        let rows = tagged(&out, &format!("SHEET_{result}_{name}"));
        let mut rows: Vec<Vec<Value>> = rows.as_array().unwrap()[1..]
            .iter()
            .map(|r| {
                r.as_array().unwrap()[..columns]
                    .iter()
                    .map(|c| c.as_f64().map_or_else(|| c.clone(), |f| json!(format!("{f:.15e}").parse::<f64>().unwrap())))
                    .collect()
            })
            .collect();
        rows.sort_by_key(|r| r.iter().take(3).map(Value::to_string).collect::<Vec<_>>());
        rows
    };
    let mut ours = sheet("out", "weights", 8);
    for r in ours.iter_mut().filter(|r| r[3] == json!(false)) {
        r[5] = json!(-r[5].as_f64().unwrap());
    }
    assert_eq!(tagged(&out, "SHEET_out_dataset")[0][8], json!("status"));
    for theirs in ["out_832", "out_832_on_832"] {
        assert_eq!(ours, sheet(theirs, "weights", 8), "weights: ours (left), {theirs} (right)");
        for (name, columns) in [("dataset", 8), ("random", 7), ("weights", 8)] {
            let header = |result: &str| tagged(&out, &format!("SHEET_{result}_{name}"))[0].as_array().unwrap()[..columns].to_vec();
            assert_eq!(header("out"), header(theirs), "{name}'s header");
            if name != "weights" {
                assert_eq!(sheet("out", name, columns), sheet(theirs, name, columns), "{name}: ours (left), {theirs} (right)");
            }
        }
        // The same environment and packages on both sides: no rows.
        for name in ["env", "pip"] {
            assert_eq!(tagged(&out, &format!("SHEET_out_{name}")), tagged(&out, &format!("SHEET_{theirs}_{name}")), "{name}");
        }
    }
}

/// shell_path through the real binary: its parse of a launch script, written
/// as msprobe writes it (indent 4).
#[test]
fn shell_path_with_the_real_binary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("train.sh"), "LR=1e-4\ntorchrun --nproc 8 pretrain.py --lr $LR --seed 42 \\\n  --bf16\n").unwrap();
    let code = format!(
        "{PRELUDE}{}",
        r#"
from msprobe_rs import ConfigChecker
ConfigChecker(shell_path=["train.sh"], output_zip_path="pack.zip")
extract("pack.zip", "unpacked")
"#
    );
    let out = run_ok(d, &code, &[("MSPROBE_BIN", binary().to_str().unwrap())]);
    assert_eq!(tagged(&out, "NAMES"), json!(["env", "pip", "hyperparameters/hyperparameters_static.json"]));
    assert_eq!(
        entry_text(&d.join("unpacked"), "hyperparameters/hyperparameters_static.json"),
        "{\n    \"nproc\": \"8\",\n    \"lr\": \"1e-4\",\n    \"seed\": \"42\",\n    \"bf16\": true\n}"
    );
}
