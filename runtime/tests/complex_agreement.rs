//! The complex entries (runtime/src/ops/complex.rs) compute what torch
//! computes in complex128: tests/complex/reference.py runs each case in
//! torch (forward, and backward with random output gradients, complex
//! where the output is) and saves every complex tensor as its float pairs;
//! here each case runs on the runtime's bench side on the pairs, its complex
//! parameters named in the context as the replay's lowering names them, and
//! every output and input gradient must agree per element within 1e-9 of
//! torch's. Every name of the complex table needs a case, with its backward.
//!
//! Needs MSPROBE_PYTHON, a Python with torch and numpy (scripts/test.sh).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use candle_core::DType;
use runtime::ctx::Ctx;
use runtime::dtype::TDType;
use runtime::ops::complex;
use runtime::spec::Framework;
use runtime::value::{Value, T};
use serde_json::Value as Json;

const TOLERANCE: f64 = 1e-9;

/// An argument as cases.json encodes it: a tensor file (float64, complex ones as pairs), a number, a bool or a list.
fn value(dir: &Path, j: &Json, dtype: TDType, compute: DType) -> Value {
    match j {
        Json::Object(o) => {
            let (shape, values) = common::read(dir, o["tensor"].as_str().unwrap());
            Value::Tensor(T::from_f64(values, &shape, dtype, compute, &runtime::device::host()).unwrap())
        }
        Json::Number(n) if n.is_i64() => Value::Int(n.as_i64().unwrap()),
        Json::Number(n) => Value::Float(n.as_f64().unwrap()),
        Json::Bool(b) => Value::Bool(*b),
        Json::Array(items) => Value::List(items.iter().map(|v| value(dir, v, dtype, compute)).collect()),
        other => panic!("unknown argument encoding {other}"),
    }
}

/// Runs case `c` on `ctx` with its tensors in `dtype`: outputs and input gradients.
fn run(dir: &Path, c: &Json, ctx: &Ctx, dtype: TDType) -> Result<runtime::exec::Outcome, String> {
    let name = c["name"].as_str().unwrap();
    let op = complex::lookup(Framework::PyTorch, name).ok_or_else(|| format!("{name}: not in the complex table"))?;
    let args: Vec<&Json> = c["args"].as_array().unwrap().iter().collect();
    let kwargs: Vec<(&str, &Json)> = c["kwargs"].as_array().unwrap().iter().map(|kv| (kv[0].as_str().unwrap(), &kv[1])).collect();
    let keys: Vec<&str> = kwargs.iter().map(|(k, _)| *k).collect();
    let params = runtime::bind::parameters(op.sig, args.len(), &keys);
    let slots = args.iter().copied().chain(kwargs.iter().map(|(_, v)| *v));
    let is_complex = |j: &Json| j.get("complex").and_then(Json::as_bool) == Some(true);
    let complex_params = slots.clone().zip(&params).filter(|(j, _)| is_complex(j)).map(|(_, p)| p.unwrap().to_string()).collect();
    let ctx = Ctx { complex: complex_params, ..ctx.clone() };
    let differentiate: Vec<bool> = slots.map(|j| j.get("tensor").is_some()).collect();
    let grads: Vec<Option<T>> = c["grad_outputs"].as_array().unwrap().iter().map(|f| Some(tensor(dir, f, dtype, ctx.compute))).collect();
    let grads = c["backward"].as_bool().unwrap().then_some(grads);
    let args = args.iter().map(|j| value(dir, j, dtype, ctx.compute)).collect();
    let kwargs = kwargs.iter().map(|(k, j)| (k.to_string(), value(dir, j, dtype, ctx.compute))).collect();
    runtime::exec::run(op, name, args, kwargs, &differentiate, grads.as_deref(), &ctx).map_err(|e| e.to_string())
}

fn tensor(dir: &Path, file: &Json, dtype: TDType, compute: DType) -> T {
    let (shape, values) = common::read(dir, file.as_str().unwrap());
    T::from_f64(values, &shape, dtype, compute, &runtime::device::host()).unwrap()
}

/// `got` against the saved file, per element.
fn within(got: &T, dir: &Path, file: &Json, tolerance: f64) -> Result<f64, String> {
    let (shape, want) = common::read(dir, file.as_str().unwrap());
    if got.dims() != shape.as_slice() {
        return Err(format!("shape {:?}, torch {shape:?}", got.dims()));
    }
    common::per_element(&got.to_f64_vec().unwrap(), &want, tolerance)
}

#[test]
fn complex_entries_agree_with_torch_in_complex128() {
    let dir = tempfile::tempdir().unwrap();
    let cases = common::torch_reference("tests/complex/reference.py", dir.path());
    let mut failures = vec![];
    let mut covered = BTreeSet::new();
    for c in &cases {
        let call = c["call"].as_str().unwrap();
        covered.insert(c["name"].as_str().unwrap().to_string());
        let outcome = match run(dir.path(), c, &Ctx::bench(0), TDType::F64) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{call}: {e}"));
                continue;
            }
        };
        for (i, (got, want)) in outcome.outputs.iter().zip(c["outputs"].as_array().unwrap()).enumerate() {
            match got {
                Value::Tensor(t) => {
                    if let Err(e) = within(t, dir.path(), &want["file"], TOLERANCE) {
                        failures.push(format!("{call}: output {i}: {e}"));
                    }
                }
                other => failures.push(format!("{call}: output {i} is a {}", other.kind())),
            }
        }
        let grads = outcome.grads.unwrap_or_default();
        let want = c["grads"].as_array().unwrap();
        if grads.len() != want.len() {
            failures.push(format!("{call}: {} gradients, torch {}", grads.len(), want.len()));
        }
        for (i, (g, file)) in grads.iter().zip(want).enumerate() {
            if let Err(e) = within(g, dir.path(), file, TOLERANCE) {
                failures.push(format!("{call}: gradient {i}: {e}"));
            }
        }
    }
    for name in complex::names().filter(|n| !covered.contains(*n)) {
        failures.push(format!("{name}: no case in tests/complex/reference.py"));
    }
    assert!(failures.is_empty(), "{} disagreements over {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
