//! The Python package `msprobe_rs` (python/): SingleSave's layout, arrays and
//! statistics with real torch, MindSpore and numpy values, its checks (nothing
//! written on bad input), the rank, and SingleComparator's call of the binary.
//! Each test runs a Python script with PYTHONPATH=python and checks the files
//! it wrote. Needs MSPROBE_PYTHON (scripts/test.sh sets it).
//!
//! Expected statistics are numpy's figures (float32 reductions; bf16/fp16
//! rounded to bf16/fp16), chosen so that every reduction is exact. The
//! layout and dtype tests run the same script with msprobe 8.3.2's own
//! SingleSave too and compare every file byte for byte, asserting the
//! differences docs/python.md documents (rank, relative dump_path, float32
//! and Fortran-order .npy, the empty tensor).

// Tests here are tables of cases (a Python script and the files expected
// of it): their length is the table's, not logic's.
#![allow(clippy::too_many_lines)]

mod common;

use std::path::{Path, PathBuf};

use common::{python_in, run_ok};
use serde_json::{json, Value};

/// Every path under `root`, relative, folders with a trailing '/', sorted.
fn tree(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                out.push(format!("{rel}/"));
                walk(root, &p, out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut out = vec![];
    walk(root, root, &mut out);
    out.sort();
    out
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// Runs `body` twice, with `{SINGLESAVE}` replaced by msprobe_rs's
/// `SingleSave` import in `dir/ours` and by msprobe 8.3.2's own (`from
/// msprobe.core import SingleSave`, 8.3.2 on PYTHONPATH) in `dir/theirs`,
/// both with `env`: the oracle of SingleSave's layout and files. Each run's
/// stdout and folder.
fn ours_and_832(dir: &Path, body: &str, env: &[(&str, &str)]) -> [(String, PathBuf); 2] {
    let pythonpath = std::env::join_paths([common::repo().join("python"), common::msprobe_832()]).unwrap();
    let pythonpath = pythonpath.to_str().unwrap();
    [("ours", "from msprobe_rs import SingleSave"), ("theirs", "from msprobe.core import SingleSave")].map(|(name, import)| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let env: Vec<(&str, &str)> = env.iter().copied().chain([("PYTHONPATH", pythonpath)]).collect();
        (run_ok(&d, &body.replace("{SINGLESAVE}", import), &env), d)
    })
}

/// One tensor's statistics as SingleSave writes them.
fn stats(max: f64, min: f64, mean: f64, norm: f64, shape: &[u64]) -> Value {
    json!({"max": max, "min": min, "mean": mean, "norm": norm, "shape": shape})
}

/// A parsed .npy file: (descr, fortran_order, shape text, data).
#[derive(Debug, PartialEq)]
struct Npy {
    descr: String,
    fortran: bool,
    shape: String,
    data: Vec<u8>,
}

fn read_npy(path: &Path) -> Npy {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "{}: npy format 1.0", path.display());
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
    assert_eq!((10 + len) % 64, 0, "{header:?}");
    let field = |name: &str| {
        let start = header.find(&format!("'{name}': ")).unwrap_or_else(|| panic!("{header}")) + name.len() + 4;
        let rest = &header[start..];
        let end = if rest.starts_with('(') { rest.find(')').unwrap() + 1 } else { rest.find(',').unwrap() };
        rest[..end].trim_matches('\'').to_string()
    };
    Npy { descr: field("descr"), fortran: field("fortran_order") == "True", shape: field("shape"), data: bytes[10 + len..].to_vec() }
}

fn npy(descr: &str, shape: &str, data: Vec<u8>) -> Npy {
    Npy { descr: descr.into(), fortran: false, shape: shape.into(), data }
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn f16s(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn i64s(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// fp16 bits of 0..=5.
const F16_0_TO_5: [u16; 6] = [0x0000, 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500];

/// Statistics of arange(6) reshaped (2, 3) in float32: sqrt(55) in f32.
fn arange6(shape: &[u64]) -> Value {
    stats(5.0, 0.0, 2.5, 7.416198253631592, shape)
}

#[test]
fn layout_of_steps_micro_steps_and_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let [(out, ours), (out_832, theirs)] = ours_and_832(
        dir.path(),
        r#"
import os, torch
{SINGLESAVE}
x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
s = SingleSave("dump")
SingleSave.save({"a": x, "b": [x, x]})
SingleSave.save({"a": x})
SingleSave.step()
SingleSave.save({"b": {"k": x}})
SingleSave.save_ex({"c": x})
SingleSave.save_ex({"c": x}, micro_batch=7)
SingleSave.step()
SingleSave.step()
SingleSave.save({"a": (x,)})
SingleSave.save_config({"lr": 1e-05, "name": "ppo", "nested": {"a": [1, 2]}, "nan": float("nan")})
# The singleton: a second construction is the same object and changes nothing.
assert SingleSave("elsewhere", fmk="mindspore") is s and not os.path.exists("elsewhere")
# dump_path is absolute: a chdir does not move the dump.
os.mkdir("sub"); os.chdir("sub")
SingleSave.save({"a": x})
print(s.dump_path == os.path.abspath("../dump"), s.step_count)
"#,
        &[("RANK", "2")],
    );
    assert_eq!(out, "True 3\n");
    // msprobe 8.3.2 keeps dump_path relative, so the chdir moved its last save (documented).
    assert_eq!(out_832, "False 3\n");
    let dump = ours.join("dump");
    let expected = [
        "configurations.json",
        "data/",
        "data/a/",
        "data/a/step0/",
        "data/a/step0/rank2/",
        "data/a/step0/rank2/micro_step0/",
        "data/a/step0/rank2/micro_step0/a.json",
        "data/a/step0/rank2/micro_step0/a.npy",
        "data/a/step0/rank2/micro_step1/",
        "data/a/step0/rank2/micro_step1/a.json",
        "data/a/step0/rank2/micro_step1/a.npy",
        "data/a/step3/",
        "data/a/step3/rank2/",
        "data/a/step3/rank2/micro_step0/",
        "data/a/step3/rank2/micro_step0/a.0.npy",
        "data/a/step3/rank2/micro_step0/a.json",
        "data/a/step3/rank2/micro_step1/",
        "data/a/step3/rank2/micro_step1/a.json",
        "data/a/step3/rank2/micro_step1/a.npy",
        "data/b/",
        "data/b/step0/",
        "data/b/step0/rank2/",
        "data/b/step0/rank2/micro_step0/",
        "data/b/step0/rank2/micro_step0/b.0.npy",
        "data/b/step0/rank2/micro_step0/b.1.npy",
        "data/b/step0/rank2/micro_step0/b.json",
        "data/b/step1/",
        "data/b/step1/rank2/",
        "data/b/step1/rank2/micro_step0/",
        "data/b/step1/rank2/micro_step0/b.json",
        "data/b/step1/rank2/micro_step0/b.k.npy",
        "data/c/",
        "data/c/step1/",
        "data/c/step1/rank2/",
        "data/c/step1/rank2/c.json",
        "data/c/step1/rank2/c.npy",
        "data/c/step1/rank2/micro_step7/",
        "data/c/step1/rank2/micro_step7/c.json",
        "data/c/step1/rank2/micro_step7/c.npy",
    ];
    assert_eq!(tree(&dump), expected);
    // msprobe 8.3.2's own SingleSave on the same calls: the same files, byte
    // for byte, but for the documented differences: it reads the rank once,
    // at construction (0 before torch.distributed is set up, whatever RANK
    // says), and its relative dump_path followed the chdir for the last save.
    let moved = "data/a/step3/rank0/micro_step1/";
    let theirs_dump = theirs.join("dump");
    let as_832: Vec<String> = expected.iter().map(|p| p.replace("rank2", "rank0")).filter(|p| !p.starts_with(moved)).collect();
    assert_eq!(tree(&theirs_dump), as_832);
    assert_eq!(
        tree(&theirs.join("sub/dump")),
        ["data/", "data/a/", "data/a/step3/", "data/a/step3/rank0/", moved, &format!("{moved}a.json"), &format!("{moved}a.npy")]
    );
    for p in expected.iter().filter(|p| !p.ends_with('/')) {
        let theirs_file = p.replace("rank2", "rank0");
        let theirs_file = if theirs_file.starts_with(moved) { theirs.join("sub/dump").join(theirs_file) } else { theirs_dump.join(theirs_file) };
        assert_eq!(std::fs::read(dump.join(p)).unwrap(), std::fs::read(&theirs_file).unwrap(), "{p}: ours and msprobe 8.3.2's");
    }
    // msprobe's format exactly: json.dump(indent=4), keys in this order.
    let a = std::fs::read_to_string(dump.join("data/a/step0/rank2/micro_step0/a.json")).unwrap();
    let want = "{\n    \"data\": {\n        \"max\": 5.0,\n        \"min\": 0.0,\n        \"mean\": 2.5,\n        \"norm\": 7.416198253631592,\n        \"shape\": [\n            2,\n            3\n        ]\n    }\n}";
    assert_eq!(a, want);
    assert_eq!(read_json(&dump.join("data/b/step0/rank2/micro_step0/b.json")), json!({"data": [arange6(&[2, 3]), arange6(&[2, 3])]}));
    assert_eq!(read_json(&dump.join("data/b/step1/rank2/micro_step0/b.json")), json!({"data": {"k": arange6(&[2, 3])}}));
    assert_eq!(read_json(&dump.join("data/a/step3/rank2/micro_step0/a.json")), json!({"data": [arange6(&[2, 3])]}));
    let x = npy("<f4", "(2, 3)", f32s(&[0., 1., 2., 3., 4., 5.]));
    for f in
        ["data/a/step0/rank2/micro_step1/a.npy", "data/b/step0/rank2/micro_step0/b.1.npy", "data/b/step1/rank2/micro_step0/b.k.npy", "data/c/step1/rank2/c.npy"]
    {
        assert_eq!(read_npy(&dump.join(f)), x, "{f}");
    }
    let config = std::fs::read_to_string(dump.join("configurations.json")).unwrap();
    let want = "{\n    \"lr\": 1e-05,\n    \"name\": \"ppo\",\n    \"nested\": {\n        \"a\": [\n            1,\n            2\n        ]\n    },\n    \"nan\": NaN\n}";
    assert_eq!(config, want);
    // msprobe's modes: folders 0o750, files 0o640.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| std::fs::metadata(dump.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("data/a/step0/rank2/micro_step0/a.npy"), 0o640);
        assert_eq!(mode("configurations.json"), 0o640);
        for d in ["data", "data/a", "data/a/step0", "data/a/step0/rank2", "data/a/step0/rank2/micro_step0"] {
            assert_eq!(mode(d) & 0o750, 0o750, "{d}");
            assert_eq!(mode(d) & 0o007, 0, "{d}");
        }
    }
}

#[test]
fn torch_dtypes_arrays_and_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let [(out, ours), (out_832, theirs)] = ours_and_832(
        dir.path(),
        r#"
import torch
{SINGLESAVE}
SingleSave("dump", fmk="pytorch")
try:
  SingleSave.save({
    "f32": torch.arange(6, dtype=torch.float32).reshape(2, 3),
    "transposed": torch.arange(6, dtype=torch.float32).reshape(2, 3).T,
    "bf16": torch.arange(6, dtype=torch.bfloat16),
    "bf16b": torch.tensor([0.1, 0.7, 1.3], dtype=torch.bfloat16),
    "f16": torch.arange(6, dtype=torch.float16),
    "i64": torch.tensor([1, -2, 3, 40]),
    "f64": torch.tensor([0.5, -1.5], dtype=torch.float64),
    "bool": torch.tensor([True, False, True]),
    "zero_d": torch.tensor(-2.5),
    "grad": torch.tensor([-1.5, 0.25, 4.0, -8.0], requires_grad=True) * 1,
    "empty": torch.zeros(0, 3),
  })
except Exception as e:
    print("raised", type(e).__name__)
"#,
        &[],
    );
    assert_eq!((out.as_str(), out_832.as_str()), ("", "raised RuntimeError\n"), "msprobe 8.3.2 raises on the empty tensor, its last key");
    let m = ours.join("dump/data");
    let file = |k: &str, ext: &str| m.join(format!("{k}/step0/rank0/micro_step0/{k}.{ext}"));
    let cases: Vec<(&str, Value, Npy)> = vec![
        ("f32", arange6(&[2, 3]), npy("<f4", "(2, 3)", f32s(&[0., 1., 2., 3., 4., 5.]))),
        // C order, whatever the tensor's strides (msprobe writes fortran_order=True here).
        ("transposed", arange6(&[3, 2]), npy("<f4", "(3, 2)", f32s(&[0., 3., 1., 4., 2., 5.]))),
        // bf16 reduces in bf16: sqrt(55) rounded to bf16; saved as float32.
        ("bf16", stats(5.0, 0.0, 2.5, 7.40625, &[6]), npy("<f4", "(6,)", f32s(&[0., 1., 2., 3., 4., 5.]))),
        (
            "bf16b",
            stats(1.296875, 0.10009765625, 0.69921875, 1.4765625, &[3]),
            npy("<f4", "(3,)", f32s(&[0.10009765625f64 as f32, 0.69921875, 1.296875])), // bf16 values: exact in f32
        ),
        ("f16", stats(5.0, 0.0, 2.5, 7.41796875, &[6]), npy("<f2", "(6,)", f16s(&F16_0_TO_5))),
        // Integers, bool and float64 reduce in float32, and keep their dtype in the .npy.
        ("i64", stats(40.0, -2.0, 10.5, 40.174617767333984, &[4]), npy("<i8", "(4,)", i64s(&[1, -2, 3, 40]))),
        ("f64", stats(0.5, -1.5, -0.5, 1.5811388492584229, &[2]), npy("<f8", "(2,)", f64s(&[0.5, -1.5]))),
        ("bool", stats(1.0, 0.0, 0.6666666865348816, 1.4142135381698608, &[3]), npy("|b1", "(3,)", vec![1, 0, 1])),
        ("zero_d", stats(-2.5, -2.5, -2.5, 2.5, &[]), npy("<f4", "()", f32s(&[-2.5]))),
        ("grad", stats(4.0, -8.0, -1.3125, 9.072623252868652, &[4]), npy("<f4", "(4,)", f32s(&[-1.5, 0.25, 4.0, -8.0]))),
        // msprobe raises on an empty tensor; here: no extremes or mean, norm 0.
        ("empty", json!({"max": null, "min": null, "mean": null, "norm": 0.0, "shape": [0, 3]}), npy("<f4", "(0, 3)", vec![])),
    ];
    for (key, want_stats, want_npy) in &cases {
        assert_eq!(&read_json(&file(key, "json")), &json!({ "data": want_stats }), "{key}");
        assert_eq!(&read_npy(&file(key, "npy")), want_npy, "{key}");
    }
    // msprobe 8.3.2's own SingleSave: the same statistics files byte for
    // byte; its .npy files are float32 whatever the dtype (`.float()`), a
    // transpose in Fortran order, and the empty tensor's folder is left
    // without files (the documented differences).
    let theirs_file = |k: &str, ext: &str| theirs.join(format!("dump/data/{k}/step0/rank0/micro_step0/{k}.{ext}"));
    let as_f32 = |v: &[f32]| npy("<f4", &format!("({},)", v.len()), f32s(v));
    for (key, _, want_npy) in cases.iter().filter(|c| c.0 != "empty") {
        assert_eq!(std::fs::read(file(key, "json")).unwrap(), std::fs::read(theirs_file(key, "json")).unwrap(), "{key}.json: ours and msprobe 8.3.2's");
        let want_832 = match *key {
            "transposed" => Npy { fortran: true, ..npy("<f4", "(3, 2)", f32s(&[0., 1., 2., 3., 4., 5.])) },
            "f16" => as_f32(&[0., 1., 2., 3., 4., 5.]),
            "i64" => as_f32(&[1., -2., 3., 40.]),
            "f64" => as_f32(&[0.5, -1.5]),
            "bool" => as_f32(&[1., 0., 1.]),
            _ => npy(&want_npy.descr, &want_npy.shape, want_npy.data.clone()),
        };
        assert_eq!(read_npy(&theirs_file(key, "npy")), want_832, "{key}.npy: msprobe 8.3.2's");
    }
    assert_eq!(tree(&theirs.join("dump/data/empty")), ["step0/", "step0/rank0/", "step0/rank0/micro_step0/"]);
}

#[test]
fn lists_tuples_and_dicts_of_tensors() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(
        dir.path(),
        r#"
import numpy as np, torch
from msprobe_rs import SingleSave
SingleSave("dump")
x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
SingleSave.save({
    "lst": [x, torch.tensor([1, -2, 3, 40]), torch.tensor(-2.5)],
    "tup": (torch.arange(6, dtype=torch.bfloat16),),
    "dct": {"weight": x, 3: torch.tensor([0.5, -1.5], dtype=torch.float64), "np": np.arange(6, dtype=np.float16)},
    "empty_list": [],
})
"#,
        &[],
    );
    let m = dir.path().join("dump/data");
    let f = |k: &str, name: &str| m.join(format!("{k}/step0/rank0/micro_step0/{name}"));
    let i64_stats = stats(40.0, -2.0, 10.5, 40.174617767333984, &[4]);
    let zero_d = stats(-2.5, -2.5, -2.5, 2.5, &[]);
    assert_eq!(read_json(&f("lst", "lst.json")), json!({"data": [arange6(&[2, 3]), i64_stats, zero_d]}));
    assert_eq!(read_npy(&f("lst", "lst.0.npy")), npy("<f4", "(2, 3)", f32s(&[0., 1., 2., 3., 4., 5.])));
    assert_eq!(read_npy(&f("lst", "lst.1.npy")), npy("<i8", "(4,)", i64s(&[1, -2, 3, 40])));
    assert_eq!(read_npy(&f("lst", "lst.2.npy")), npy("<f4", "()", f32s(&[-2.5])));
    assert_eq!(read_json(&f("tup", "tup.json")), json!({"data": [stats(5.0, 0.0, 2.5, 7.40625, &[6])]}));
    assert_eq!(read_npy(&f("tup", "tup.0.npy")), npy("<f4", "(6,)", f32s(&[0., 1., 2., 3., 4., 5.])));
    // Dict entries keep their order; an int key is written as JSON does ("3").
    let dct = std::fs::read_to_string(f("dct", "dct.json")).unwrap();
    let keys: Vec<String> = read_json(&f("dct", "dct.json"))["data"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["weight", "3", "np"], "{dct}");
    assert_eq!(
        read_json(&f("dct", "dct.json")),
        json!({"data": {"weight": arange6(&[2, 3]), "3": stats(0.5, -1.5, -0.5, 1.5811388492584229, &[2]), "np": stats(5.0, 0.0, 2.5, 7.41796875, &[6])}})
    );
    assert_eq!(read_npy(&f("dct", "dct.weight.npy")), npy("<f4", "(2, 3)", f32s(&[0., 1., 2., 3., 4., 5.])));
    assert_eq!(read_npy(&f("dct", "dct.3.npy")), npy("<f8", "(2,)", f64s(&[0.5, -1.5])));
    assert_eq!(read_npy(&f("dct", "dct.np.npy")), npy("<f2", "(6,)", f16s(&F16_0_TO_5)));
    assert_eq!(std::fs::read_to_string(f("empty_list", "empty_list.json")).unwrap(), "{\n    \"data\": []\n}");
    assert_eq!(tree(&m.join("empty_list")), ["step0/", "step0/rank0/", "step0/rank0/micro_step0/", "step0/rank0/micro_step0/empty_list.json"]);
}

#[test]
fn bad_keys_and_values_raise_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(
        dir.path(),
        r#"
import json, os
import numpy as np, torch
from msprobe_rs import SingleSave

def attempt(label, f):
    try:
        f()
    except Exception as e:
        print(json.dumps([label, type(e).__name__, str(e)]))
    else:
        print(json.dumps([label, "no error", ""]))

x = torch.ones(2)
attempt("save first", lambda: SingleSave.save({"a": x}))
attempt("step first", lambda: SingleSave.step())
attempt("bad fmk", lambda: SingleSave("dump", fmk="tensorflow"))
print(json.dumps(["dump exists", str(os.path.exists("dump")), ""]))
SingleSave("dump")
attempt("not a dict", lambda: SingleSave.save([x]))
attempt("int key", lambda: SingleSave.save({1: x}))
for key in ["", ".", "..", "../escape", "/abs", "a/b", "a\\b", "a b", "ключ", "k" * 300]:
    attempt("key " + repr(key), lambda: SingleSave.save({key: x}))
values = {
    "None": None, "int": 3, "str": "text", "float": 1.5, "numpy scalar": np.float32(1),
    "list with int": [x, 3], "tuple with None": (x, None), "nested list": [[x]], "dict of list": {"k": [x]},
    "dict key with slash": {"a/b": x}, "dict key dotdot": {"..": x}, "dict bool key": {True: x},
    "complex": torch.ones(2, dtype=torch.complex64), "object array": np.array([object()]),
}
for label, value in values.items():
    attempt("value " + label, lambda: SingleSave.save({"k": value}))
attempt("one bad of two", lambda: SingleSave.save({"good": x, "bad": 3}))
attempt("bad micro_batch", lambda: SingleSave.save_ex({"good": x}, micro_batch=-1))
attempt("config not json", lambda: SingleSave.save_config({"f": object()}))
print(json.dumps(["left", str(sorted(os.listdir("dump"))), ""]))
# Nothing was counted either: the next save is micro_step0.
SingleSave.save({"good": x})
print(json.dumps(["after", str(sorted(os.listdir("dump/data/good/step0/rank0"))), ""]))
"#,
        &[],
    );
    let rows: Vec<(String, String, String)> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let find = |label: &str| rows.iter().find(|r| r.0 == label).unwrap_or_else(|| panic!("{label}: {out}")).clone();
    let check = |label: &str, kind: &str, needle: &str| {
        let (_, k, msg) = find(label);
        assert_eq!(k, kind, "{label}: {msg}");
        assert!(msg.contains(needle), "{label}: {msg:?} should contain {needle:?}");
        assert_eq!(msg.lines().count(), 1, "{label}: one line: {msg:?}");
    };
    check("save first", "RuntimeError", "call SingleSave(dump_path, fmk) before");
    check("step first", "RuntimeError", "call SingleSave(dump_path, fmk) before");
    check("bad fmk", "ValueError", "fmk must be one of ['pytorch', 'mindspore'], got 'tensorflow'");
    assert_eq!(find("dump exists").1, "False");
    check("not a dict", "TypeError", "data must be a dict");
    check("int key", "TypeError", "key must be a str, got int");
    for key in ["''", "'.'", "'..'", "'../escape'", "'/abs'", "'a/b'", "'a\\\\b'", "'a b'", "'ключ'"] {
        check(&format!("key {key}"), "ValueError", &format!("key {key} is not allowed"));
    }
    check(&format!("key '{}'", "k".repeat(300)), "ValueError", "longer than 255 bytes");
    check("value None", "TypeError", "value of key 'k' should be a tensor, or a list, tuple or dict of tensors, got NoneType");
    check("value int", "TypeError", "got int");
    check("value str", "TypeError", "got str");
    check("value float", "TypeError", "got float");
    check("value numpy scalar", "TypeError", "got numpy.float32");
    check("value list with int", "TypeError", "SingleSave: Unsupported type: int (element 1 of key 'k'");
    check("value tuple with None", "TypeError", "Unsupported type: NoneType (element 1");
    check("value nested list", "TypeError", "Unsupported type: list (element 0");
    check("value dict of list", "TypeError", "Unsupported type: list (entry 'k' of key 'k'");
    check("value dict key with slash", "ValueError", "dict key of 'k' 'a/b' is not allowed");
    check("value dict key dotdot", "ValueError", "dict key of 'k' '..' is not allowed");
    check("value dict bool key", "TypeError", "dict keys must be str or int, got bool");
    check("value complex", "TypeError", "complex tensors (torch.complex64) are not supported");
    check("value object array", "TypeError", "arrays of dtype object are not supported");
    check("one bad of two", "TypeError", "value of key 'bad'");
    check("bad micro_batch", "ValueError", "micro_batch must be None or an int >= 0, got -1");
    check("config not json", "TypeError", "not JSON serializable");
    assert_eq!(find("left").1, "[]", "{out}");
    assert_eq!(find("after").1, "['micro_step0']", "{out}");
}

#[test]
fn rank_is_read_at_each_save() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(
        dir.path(),
        r#"
import os, torch, torch.distributed as dist
from msprobe_rs import SingleSave
x = torch.ones(1)
SingleSave("dump")
SingleSave.save({"no_env": x})
os.environ["RANK"] = "7"
SingleSave.save({"env_rank": x})
# torch.distributed wins once it is initialised (msprobe froze the rank at
# the first SingleSave(...), when it was not yet).
dist.init_process_group("gloo", init_method="file://" + os.path.abspath("store"), rank=0, world_size=1)
SingleSave.save({"distributed": x})
dist.destroy_process_group()
del os.environ["RANK"]
os.environ["RANK_ID"] = "4"
SingleSave.save({"env_rank_id": x})
os.environ["RANK"] = "not a number"
SingleSave.save({"bad_env": x})
"#,
        &[],
    );
    let data = dir.path().join("dump/data");
    for (key, rank) in [("no_env", 0), ("env_rank", 7), ("distributed", 0), ("env_rank_id", 4), ("bad_env", 4)] {
        assert_eq!(
            tree(&data.join(key).join("step0")),
            [
                format!("rank{rank}/"),
                format!("rank{rank}/micro_step0/"),
                format!("rank{rank}/micro_step0/{key}.json"),
                format!("rank{rank}/micro_step0/{key}.npy")
            ],
            "{key}"
        );
    }
}

#[test]
fn mindspore_tensors() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(
        dir.path(),
        r#"
import numpy as np
import mindspore as ms
from msprobe_rs import SingleSave
SingleSave("dump", fmk="mindspore")
a = np.arange(6).reshape(2, 3)
SingleSave.save({
    "f32": ms.Tensor(a, ms.float32),
    "f16": ms.Tensor(np.arange(6), ms.float16),
    "bf16": ms.Tensor(np.arange(6), ms.bfloat16),
    "i32": ms.Tensor(a, ms.int32),
    "zero_d": ms.Tensor(-2.5, ms.float32),
    "param": ms.Parameter(ms.Tensor(a, ms.float32), name="w"),
    "lst": [ms.Tensor(a, ms.float32), ms.Tensor(np.array([0.5, -1.5]), ms.float64)],
    "dct": {"x": ms.Tensor(np.array([True, False, True]))},
})
"#,
        &[("RANK", "1")],
    );
    let m = dir.path().join("dump/data");
    let f = |k: &str, name: &str| m.join(format!("{k}/step0/rank1/micro_step0/{name}"));
    let a = f32s(&[0., 1., 2., 3., 4., 5.]);
    let cases: Vec<(&str, Value, Npy)> = vec![
        ("f32", arange6(&[2, 3]), npy("<f4", "(2, 3)", a.clone())),
        ("f16", stats(5.0, 0.0, 2.5, 7.41796875, &[6]), npy("<f2", "(6,)", f16s(&F16_0_TO_5))),
        // MindSpore's CPU kernels cannot reduce bf16: float32 reductions rounded to bf16.
        ("bf16", stats(5.0, 0.0, 2.5, 7.40625, &[6]), npy("<f4", "(6,)", a.clone())),
        // msprobe reduces an int tensor in its dtype (mean 2.0); here in float32.
        ("i32", arange6(&[2, 3]), npy("<i4", "(2, 3)", i32s(&[0, 1, 2, 3, 4, 5]))),
        ("zero_d", stats(-2.5, -2.5, -2.5, 2.5, &[]), npy("<f4", "()", f32s(&[-2.5]))),
        ("param", arange6(&[2, 3]), npy("<f4", "(2, 3)", a.clone())),
    ];
    for (key, want_stats, want_npy) in cases {
        assert_eq!(read_json(&f(key, &format!("{key}.json"))), json!({ "data": want_stats }), "{key}");
        assert_eq!(read_npy(&f(key, &format!("{key}.npy"))), want_npy, "{key}");
    }
    assert_eq!(read_json(&f("lst", "lst.json")), json!({"data": [arange6(&[2, 3]), stats(0.5, -1.5, -0.5, 1.5811388492584229, &[2])]}));
    assert_eq!(read_npy(&f("lst", "lst.1.npy")), npy("<f8", "(2,)", f64s(&[0.5, -1.5])));
    assert_eq!(read_json(&f("dct", "dct.json")), json!({"data": {"x": stats(1.0, 0.0, 0.6666666865348816, 1.4142135381698608, &[3])}}));
    assert_eq!(read_npy(&f("dct", "dct.x.npy")), npy("|b1", "(3,)", vec![1, 0, 1]));
}

#[test]
fn imports_and_saves_with_numpy_only() {
    let dir = tempfile::tempdir().unwrap();
    // Importing the package imports no framework even when they are installed.
    let out = run_ok(dir.path(), "import sys, msprobe_rs\nprint(sorted(m for m in ('torch', 'mindspore') if m in sys.modules), msprobe_rs.__all__)\n", &[]);
    assert_eq!(out, "[] ['SingleSave', 'SingleComparator', 'ConfigChecker', 'ResultChange', 'MsprobeError', 'find_binary']\n");
    // With torch and MindSpore unimportable, numpy arrays are saved with the same figures.
    run_ok(
        dir.path(),
        r#"
import sys
sys.modules["torch"] = None
sys.modules["mindspore"] = None
import numpy as np
from msprobe_rs import SingleSave, SingleComparator
SingleSave("dump")
SingleSave.save({
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
    "f16": np.arange(6, dtype=np.float16),
    "i64": np.array([1, -2, 3, 40]),
    "lst": [np.array(-2.5, dtype=np.float32), np.array([0.5, -1.5])],
})
try:
    import torch
except ImportError:
    pass
else:
    raise SystemExit("torch imported")
"#,
        &[],
    );
    let m = dir.path().join("dump/data");
    let f = |k: &str, name: &str| m.join(format!("{k}/step0/rank0/micro_step0/{name}"));
    assert_eq!(read_json(&f("f32", "f32.json")), json!({"data": arange6(&[2, 3])}));
    assert_eq!(read_npy(&f("f32", "f32.npy")), npy("<f4", "(2, 3)", f32s(&[0., 1., 2., 3., 4., 5.])));
    assert_eq!(read_json(&f("f16", "f16.json")), json!({"data": stats(5.0, 0.0, 2.5, 7.41796875, &[6])}));
    assert_eq!(read_json(&f("i64", "i64.json")), json!({"data": stats(40.0, -2.0, 10.5, 40.174617767333984, &[4])}));
    assert_eq!(read_npy(&f("i64", "i64.npy")), npy("<i8", "(4,)", i64s(&[1, -2, 3, 40])));
    assert_eq!(read_json(&f("lst", "lst.json")), json!({"data": [stats(-2.5, -2.5, -2.5, 2.5, &[]), stats(0.5, -1.5, -0.5, 1.5811388492584229, &[2])]}));
}

/// An executable shell script at `path`.
#[cfg(unix)]
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[cfg(unix)]
#[test]
fn comparator_runs_the_binary_and_reports_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ok = d.join("fake_ok");
    script(&ok, "printf '%s\\n' \"$@\" > args.txt\necho 'a warning' >&2\n");
    let fail = d.join("fake_fail");
    script(&fail, "echo 'progress' >&2\necho 'msprobe: error: dir1/data: not a folder' >&2\nexit 3\n");
    let code = r#"
import json, os, sys
from msprobe_rs import SingleComparator, MsprobeError
try:
    SingleComparator.compare("d1", "-d2", output_path="out", num_processes=3)
except Exception as e:
    print(json.dumps([type(e).__name__, str(e), getattr(e, "returncode", None)]))
else:
    print(json.dumps(["ok", "", 0]))
"#;
    let run = |env: &[(&str, &str)]| -> (String, String, Option<i64>, String) {
        let o = python_in(d, code, env);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{err}");
        let (k, m, c): (String, String, Option<i64>) = serde_json::from_slice(&o.stdout).unwrap();
        (k, m, c, err)
    };
    // The command line (a path starting with '-' is not taken for a flag); stderr passed on.
    let (kind, _, _, err) = run(&[("MSPROBE_BIN", ok.to_str().unwrap())]);
    assert_eq!(kind, "ok", "{err}");
    assert!(err.contains("a warning"), "{err}");
    assert_eq!(std::fs::read_to_string(d.join("args.txt")).unwrap(), "single_compare\nd1\n./-d2\n-o\nout\n-j\n3\n");
    // A failure: the binary's error line, its exit code.
    let (kind, msg, code_, _) = run(&[("MSPROBE_BIN", fail.to_str().unwrap())]);
    assert_eq!((kind.as_str(), msg.as_str(), code_), ("MsprobeError", "msprobe: error: dir1/data: not a folder", Some(3)));
    // MSPROBE_BIN that is not an executable.
    let (kind, msg, _, _) = run(&[("MSPROBE_BIN", d.join("nothing").to_str().unwrap())]);
    assert_eq!(kind, "FileNotFoundError");
    assert!(msg.starts_with("msprobe_rs: MSPROBE_BIN=") && msg.ends_with("is not an executable file"), "{msg}");
    // No binary: on PATH only a "#!" script named msprobe (Huawei's Python msprobe is one).
    let path_dir = d.join("path");
    std::fs::create_dir(&path_dir).unwrap();
    script(&path_dir.join("msprobe"), "exit 0\n");
    let (kind, msg, _, _) = run(&[("PATH", path_dir.to_str().unwrap())]);
    assert_eq!(kind, "FileNotFoundError");
    assert!(msg.contains("set MSPROBE_BIN") && msg.contains("passed over") && msg.contains(path_dir.join("msprobe").to_str().unwrap()), "{msg}");
    assert_eq!(msg.lines().count(), 1);
}

#[cfg(unix)]
#[test]
fn comparator_finds_the_real_binary_on_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_msprobe"));
    let path_dir = d.join("path");
    std::fs::create_dir(&path_dir).unwrap();
    std::os::unix::fs::symlink(&bin, path_dir.join("msprobe")).unwrap();
    // The dumps do not exist, so the binary fails (whichever version it is):
    // an MsprobeError carrying its non-empty error line.
    let out = run_ok(
        d,
        r#"
import json
from msprobe_rs import SingleComparator, MsprobeError, find_binary
print(find_binary())
try:
    SingleComparator.compare("missing1", "missing2", output_path="out")
except MsprobeError as e:
    print(json.dumps([str(e), e.returncode, e.cmd[1:]]))
"#,
        &[("PATH", path_dir.to_str().unwrap())],
    );
    let mut lines = out.lines();
    assert_eq!(lines.next().unwrap(), path_dir.join("msprobe").to_str().unwrap());
    let (msg, code, args): (String, i64, Vec<String>) = serde_json::from_str(lines.next().expect("an MsprobeError")).unwrap();
    assert!(!msg.is_empty() && !msg.contains('\n') && code != 0, "{msg:?} {code}");
    assert_eq!(args, ["single_compare", "missing1", "missing2", "-o", "out", "-j", "8"]);
}

/// Two runs saved with the package, compared by the real binary through
/// SingleComparator: one workbook per key, rows keyed by step/rank/micro-step/id.
#[test]
fn save_then_compare_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(
        dir.path(),
        r#"
import os, sys, json
import torch
import openpyxl
from msprobe_rs import SingleSave, SingleComparator

def run(path, delta):
    SingleSave._instance = None  # a fresh run in the same process
    SingleSave(path)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = x.clone(); y[1, 0] += delta
    SingleSave.save({"same": x, "diff": y, "ids": torch.tensor([1, 2, 3]), "pair": [x, y]})
    SingleSave.step()
    SingleSave.save({"diff": y})
    SingleSave.save({"diff": y})

run("run1", 0.0)
run("run2", 1.0)
SingleComparator.compare("run1", "run2", output_path="cmp", num_processes=2)
# (the binary's own lines, "wrote ...", come first on stdout)
print("OUT", json.dumps(sorted(os.listdir("cmp"))))
for key in ["same", "diff", "ids", "pair"]:
    sheet = openpyxl.load_workbook(os.path.join("cmp", key + ".xlsx")).active
    print("OUT", json.dumps([[c for c in row[:8]] for row in sheet.iter_rows(values_only=True)]))
"#,
        &[("MSPROBE_BIN", env!("CARGO_BIN_EXE_msprobe"))],
    );
    let mut lines = out.lines().filter_map(|l| l.strip_prefix("OUT "));
    assert_eq!(lines.next().unwrap(), r#"["diff.xlsx", "ids.xlsx", "pair.xlsx", "same.xlsx"]"#);
    let header = json!(["step", "rank", "micro_step", "id", "shape1", "shape2", "相同元素百分比(%)", "首个不匹配元素索引"]);
    let tables: Vec<Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    let five_of_six = 5.0 / 6.0 * 100.0;
    assert_eq!(tables[0], json!([header, [0, 0, 0, 0, "[2, 3]", "[2, 3]", 100, null]]));
    assert_eq!(
        tables[1],
        json!([
            header,
            [0, 0, 0, 0, "[2, 3]", "[2, 3]", five_of_six, 3],
            [1, 0, 0, 0, "[2, 3]", "[2, 3]", five_of_six, 3],
            [1, 0, 1, 0, "[2, 3]", "[2, 3]", five_of_six, 3]
        ])
    );
    assert_eq!(tables[2], json!([header, [0, 0, 0, 0, "[3]", "[3]", 100, null]]));
    assert_eq!(tables[3], json!([header, [0, 0, 0, 0, "[2, 3]", "[2, 3]", 100, null], [0, 0, 0, 1, "[2, 3]", "[2, 3]", five_of_six, 3]]));
}
