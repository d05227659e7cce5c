//! The `NPU.` entries of runtime/src/ops/npu_misc.rs against two
//! independent oracles on the same inputs (tests/npu_misc/reference.py):
//! torch compositions in float64 written in that script, and msprobe
//! 26.2.0's own bench functions (forward, and backward where msprobe has
//! one) imported from the mindstudio-probe wheel. Each case is replayed on
//! the bench side (f64); every output and input gradient must match each
//! oracle that computes it, within the oracle's tolerance (relative to the
//! result's largest value; msprobe's moe gating computes in float32), with
//! torch_npu's output dtypes, and every entry must have a case of its own
//! (forward, and backward where the entry has one).
//!
//! Needs MSPROBE_PYTHON (torch, numpy, PyYAML) and msprobe 26.2.0 beside
//! its environment, found as tests/npu/oracles.py finds it (reference.py).

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use candle_core::DType;
use runtime::ctx::Ctx;
use runtime::dtype::TDType;
use runtime::ops;
use runtime::spec::Framework;
use runtime::value::{Value, T};
use serde_json::Value as Json;

fn cases(dir: &Path) -> Vec<Json> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npu_misc/reference.py");
    let out = Command::new(common::python()).arg("-B").arg(&script).arg(dir).output().expect("cannot start MSPROBE_PYTHON");
    assert!(out.status.success(), "{} failed:\n{}{}", script.display(), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let index: Json = serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    index["cases"].as_array().unwrap().clone()
}

fn arg(dir: &Path, j: &Json) -> Value {
    match j {
        Json::Null => Value::None,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) if n.is_i64() => Value::Int(n.as_i64().unwrap()),
        Json::Number(n) => Value::Float(n.as_f64().unwrap()),
        Json::Array(items) => Value::List(items.iter().map(|v| arg(dir, v)).collect()),
        Json::Object(o) => {
            let (shape, values) = common::read(dir, o["tensor"].as_str().unwrap());
            let dtype = TDType::parse(o["dtype"].as_str().unwrap()).unwrap();
            Value::Tensor(T::from_f64(values, &shape, dtype, DType::F64, &runtime::device::host()).unwrap())
        }
        other => panic!("unknown argument encoding {other}"),
    }
}

/// Whether `got` matches the oracle's file within `tolerance`, element by
/// element ([`common::per_element`]).
fn agrees(got: &T, dir: &Path, file: &str, tolerance: f64) -> Result<(), String> {
    let (shape, want) = common::read(dir, file);
    if got.dims() != shape.as_slice() {
        return Err(format!("shape {:?}, oracle {shape:?}", got.dims()));
    }
    common::per_element(&got.to_f64_vec().unwrap(), &want, tolerance).map(|_| ())
}

/// The problems of one case, one line each.
fn check(dir: &Path, c: &Json) -> Vec<String> {
    let name = c["name"].as_str().unwrap();
    let Some(op) = ops::lookup(Framework::PyTorch, name) else { return vec![format!("{name}: not in the op table")] };
    let args: Vec<Value> = c["args"].as_array().unwrap().iter().map(|a| arg(dir, a)).collect();
    let kwargs: Vec<(String, Value)> = c["kwargs"].as_array().unwrap().iter().map(|kv| (kv[0].as_str().unwrap().to_string(), arg(dir, &kv[1]))).collect();
    let differentiate: Vec<bool> = c["differentiate"].as_array().unwrap().iter().map(|d| d.as_bool().unwrap()).collect();
    let grad_outputs: Option<Vec<Option<T>>> = c["grad_outputs"].as_array().map(|g| {
        g.iter()
            .map(|f| {
                f.as_str().map(|f| {
                    let (s, v) = common::read(dir, f);
                    T::from_f64(v, &s, TDType::F64, DType::F64, &runtime::device::host()).unwrap()
                })
            })
            .collect()
    });
    let outcome = match runtime::exec::run(op, name, args, kwargs, &differentiate, grad_outputs.as_deref(), &Ctx::bench(0)) {
        Ok(o) => o,
        Err(e) => return vec![format!("runtime error: {e}")],
    };
    let mut problems = vec![];
    for (i, (got, want)) in outcome.outputs.iter().zip(c["dtypes"].as_array().unwrap()).enumerate() {
        if let Value::Tensor(t) = got {
            if t.dtype.name() != want.as_str().unwrap() {
                problems.push(format!("output {i}: dtype {}, torch_npu {want}", t.dtype.name()));
            }
        }
    }
    for o in c["oracles"].as_array().unwrap() {
        let (oracle, tolerance) = (o["oracle"].as_str().unwrap(), o["tolerance"].as_f64().unwrap());
        let want = o["outputs"].as_array().unwrap();
        if outcome.outputs.len() != want.len() {
            problems.push(format!("{oracle}: {} outputs, the oracle {}", outcome.outputs.len(), want.len()));
        }
        for (i, (got, file)) in outcome.outputs.iter().zip(want).enumerate() {
            match (got, file.as_str()) {
                (Value::Tensor(t), Some(f)) => problems.extend(agrees(t, dir, f, tolerance).err().map(|e| format!("{oracle}: output {i}: {e}"))),
                (Value::None, None) => {}
                (got, _) => problems.push(format!("{oracle}: output {i}: a {}, the oracle {file}", got.kind())),
            }
        }
        let (Some(got), Some(want)) = (&outcome.grads, o["grads"].as_array()) else { continue };
        if got.len() != want.len() {
            problems.push(format!("{oracle}: {} input gradients, the oracle {}", got.len(), want.len()));
        }
        for (i, (g, file)) in got.iter().zip(want).enumerate() {
            if let Some(f) = file.as_str() {
                problems.extend(agrees(g, dir, f, tolerance).err().map(|e| format!("{oracle}: gradient {i}: {e}")));
            }
        }
    }
    problems
}

#[test]
fn npu_misc_entries_agree_with_torch_and_msprobe() {
    let dir = tempfile::tempdir().unwrap();
    let cases = cases(dir.path());
    let mut failures = vec![];
    // The entries of runtime/src/ops/npu_misc.rs (tests/agreement.rs leaves them to this test).
    let names = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npu_misc/names.txt")).unwrap();
    let names: Vec<&str> = names.lines().collect();
    let (mut forward, mut backward, mut msprobe) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for (i, c) in cases.iter().enumerate() {
        let name = c["name"].as_str().unwrap();
        forward.insert(name);
        if c["grad_outputs"].is_array() {
            backward.insert(name);
        }
        if c["oracles"].as_array().unwrap().iter().any(|o| o["oracle"] == "msprobe 26.2.0") {
            msprobe.insert(name);
        }
        failures.extend(check(dir.path(), c).into_iter().map(|p| format!("case {i} {}: {p}", c["call"].as_str().unwrap())));
    }
    for op in ops::table().filter(|op| op.names.iter().any(|n| names.contains(n))) {
        let n = op.names[0];
        if !forward.contains(n) || !msprobe.contains(n) {
            failures.push(format!("{n}: no case against both oracles"));
        }
        if op.backward && !backward.contains(n) {
            failures.push(format!("{n}: the entry has a backward, but no case runs it"));
        }
    }
    for n in &names {
        assert!(ops::lookup(Framework::PyTorch, n).is_some_and(|op| op.names == [*n]), "{n}: not an entry of its own in the op table");
    }
    assert!(failures.is_empty(), "{} disagreements over {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
