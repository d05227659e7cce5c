//! The runtime's contract: every op-table entry computes what torch computes.
//!
//! tests/agreement/cases.py lists calls for every name of the op table;
//! tests/agreement/reference.py runs them in torch in float64 (forward, and
//! backward with random output gradients; floating dtype arguments such as
//! `.half()` or `dtype=torch.float32` raised to float64, since the bench
//! never rounds to a cast's dtype) and saves inputs and results. This
//! test replays each call on the runtime's bench side (f64) with the same
//! inputs and requires the same outputs and input gradients: equal shapes,
//! NaN and ±Inf at the same places, the output dtype torch gives (under its
//! default float32), and the values within [`within_bound`].
//!
//! Exceptions (each documented in cases.py): dropout draws its mask from
//! its own generator, so it is compared only where no mask is drawn (p=0,
//! training=False); [`dropout_mask_is_reproducible`] checks the runtime's
//! mask instead. The float tensors of a list argument (cat, stack) are
//! differentiated like top-level ones. A case whose values are undefined
//! (`values_undefined`: torch.empty's uninitialized memory) checks the
//! outputs' shapes and dtypes only.
//!
//! torch_npu's fused kernels (`NPU.` names) have no torch function of their
//! name: their cases come from tests/npu/oracles.py, with torch
//! compositions in float64 as the reference and msprobe 26.2.0's own CPU
//! reference functions as a second oracle (`oracles` of a case, each with
//! its tolerance), compared the same way.
//!
//! Needs MSPROBE_PYTHON, a Python with torch and numpy (scripts/test.sh),
//! and for the NPU cases msprobe 26.2.0 beside its environment (oracles.py).

mod common;

use common::read;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use candle_core::DType;
use runtime::ctx::Ctx;
use runtime::dtype::TDType;
use runtime::ops;
use runtime::value::{Value, T};
use serde_json::Value as Json;

/// The allowed difference, relative to the size of torch's result.
const TOLERANCE: f64 = 1e-9;

/// The allowed difference where MindSpore itself is the reference (a name
/// MindSpore spells as torch does: tests/agreement/ms_bridge.py): its CPU
/// kernels take some constants and intermediate results in float32 even on
/// float64 data (`deg2rad`'s pi, an integer division's quotient, `addcdiv`'s
/// gradient: up to ~10^-6 here), which a different function would still
/// exceed by orders of magnitude.
const MINDSPORE_TOLERANCE: f64 = 1e-5;

fn tensor(dir: &Path, file: &str, dtype: TDType) -> T {
    let (shape, values) = read(dir, file);
    T::from_f64(values, &shape, dtype, DType::F64, &runtime::device::host()).unwrap()
}

fn dtype(name: &Json) -> TDType {
    TDType::parse(name.as_str().unwrap()).unwrap_or_else(|| panic!("unknown dtype {name}"))
}

/// An argument as cases.json encodes it (see reference.py).
fn value(dir: &Path, j: &Json) -> Value {
    let int = |j: &Json| j.as_i64();
    match j {
        Json::Null => Value::None,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) if n.is_i64() => Value::Int(n.as_i64().unwrap()),
        Json::Number(n) => Value::Float(n.as_f64().unwrap()),
        Json::String(s) => Value::Str(s.clone()),
        Json::Array(items) => Value::List(items.iter().map(|v| value(dir, v)).collect()),
        Json::Object(o) if o.contains_key("tensor") => Value::Tensor(tensor(dir, o["tensor"].as_str().unwrap(), dtype(&o["dtype"]))),
        Json::Object(o) => match o.iter().next() {
            Some((k, v)) if k == "dtype" => Value::DType(dtype(v)),
            Some((k, v)) if k == "float" => Value::Float(v.as_str().unwrap().parse().unwrap()),
            Some((k, v)) if k == "slice" => Value::Slice(int(&v[0]), int(&v[1]), int(&v[2])),
            Some((k, _)) if k == "ellipsis" => Value::Ellipsis,
            _ => panic!("unknown argument encoding {j}"),
        },
    }
}

/// Whether `rust` is within the bound of `torch`, element by element:
/// [`common::per_element`] with the case's tolerance: [`TOLERANCE`], or
/// [`MINDSPORE_TOLERANCE`] where MindSpore is the reference.
fn within_bound(rust: &T, dir: &Path, file: &str, c: &Json) -> Result<f64, String> {
    let tolerance = if c["reference"].as_str() == Some("mindspore") { MINDSPORE_TOLERANCE } else { TOLERANCE };
    within(rust, dir, file, tolerance)
}

/// [`within_bound`] with another tolerance (an oracle that rounds to float32 inside).
fn within(rust: &T, dir: &Path, file: &str, tolerance: f64) -> Result<f64, String> {
    let (shape, want) = read(dir, file);
    if rust.dims() != shape.as_slice() {
        return Err(format!("shape {:?}, torch {shape:?}", rust.dims()));
    }
    let got = rust.to_f64_vec().map_err(|e| e.to_string())?;
    common::per_element(&got, &want, tolerance)
}

/// The problems of output `i` against torch's `want` (its file and dtype).
fn check_output(dir: &Path, c: &Json, i: usize, got: &Value, want: &Json, values_undefined: bool) -> Vec<String> {
    let mut problems = vec![];
    // A Python bool (a protocol method's, `__bool__`) or int (`numel`)
    // compares as torch's 0-d bool or int64 tensor.
    let as_tensor = match got {
        Value::Bool(v) => Some(Value::Tensor(T::from_f64(vec![*v as u8 as f64], &[], TDType::Bool, DType::F64, &runtime::device::host()).unwrap())),
        Value::Int(v) => Some(Value::Tensor(T::from_f64(vec![*v as f64], &[], TDType::I64, DType::F64, &runtime::device::host()).unwrap())),
        _ => None,
    };
    let got = as_tensor.as_ref().unwrap_or(got);
    // An output torch did not compute (None) must be None here too.
    if want["file"].is_null() {
        if !matches!(got, Value::None) {
            problems.push(format!("output {i}: a {}, torch None", got.kind()));
        }
        return problems;
    }
    let Value::Tensor(got) = got else {
        problems.push(format!("output {i}: a {}, torch a tensor", got.kind()));
        return problems;
    };
    if got.dtype != dtype(&want["dtype"]) {
        problems.push(format!("output {i}: dtype {}, torch {}", got.dtype.name(), want["dtype"]));
    }
    if values_undefined {
        let (shape, _) = read(dir, want["file"].as_str().unwrap());
        if got.dims() != shape.as_slice() {
            problems.push(format!("output {i}: shape {:?}, torch {shape:?}", got.dims()));
        }
    } else if let Err(e) = within_bound(got, dir, want["file"].as_str().unwrap(), c) {
        problems.push(format!("output {i}: {e}"));
    }
    problems
}

/// Replays one case; the problems found, each as one line.
fn check(dir: &Path, c: &Json) -> Vec<String> {
    let (name, dump_name, framework) = (c["name"].as_str().unwrap(), c["dump_name"].as_str().unwrap(), c["framework"].as_str().unwrap());
    let Some(fw) = runtime::spec::Framework::parse(framework) else {
        return vec![format!("{framework}: not a framework")];
    };
    let Some(op) = ops::lookup(fw, dump_name) else {
        return vec![format!("{framework} {dump_name}: not in the op table")];
    };
    if !op.names.contains(&name) {
        return vec![format!("{framework} {dump_name}: looked up as {:?}, not {name}", op.names)];
    }
    let args: Vec<Value> = c["args"].as_array().unwrap().iter().map(|a| value(dir, a)).collect();
    let kwargs: Vec<(String, Value)> = c["kwargs"].as_array().unwrap().iter().map(|kv| (kv[0].as_str().unwrap().to_string(), value(dir, &kv[1]))).collect();
    let differentiate: Vec<bool> = c["differentiate"].as_array().unwrap().iter().map(|d| d.as_bool().unwrap()).collect();
    let backward = c["backward"].as_bool().unwrap();
    let values_undefined = c["values_undefined"].as_bool().unwrap();
    if backward && !op.backward {
        return vec!["torch differentiates it, but the op-table entry has backward: false".into()];
    }
    let grad_outputs: Option<Vec<Option<T>>> =
        backward.then(|| c["grad_outputs"].as_array().unwrap().iter().map(|g| g.as_str().map(|f| tensor(dir, f, TDType::F64))).collect());
    let outcome = match runtime::exec::run(op, dump_name, args, kwargs, &differentiate, grad_outputs.as_deref(), &Ctx::bench(0)) {
        Ok(o) => o,
        Err(e) => return vec![format!("runtime error: {e}")],
    };
    let mut problems = vec![];
    let want = c["outputs"].as_array().unwrap();
    if outcome.outputs.len() != want.len() {
        problems.push(format!("{} outputs, torch {}", outcome.outputs.len(), want.len()));
    }
    for (i, (got, want)) in outcome.outputs.iter().zip(want).enumerate() {
        problems.extend(check_output(dir, c, i, got, want, values_undefined));
    }
    if let (Some(got), Some(want)) = (&outcome.grads, c["grads"].as_array()) {
        if got.len() != want.len() {
            problems.push(format!("{} input gradients, torch {}", got.len(), want.len()));
        }
        for (i, (g, file)) in got.iter().zip(want).enumerate() {
            if let Err(e) = within_bound(g, dir, file.as_str().unwrap(), c) {
                problems.push(format!("gradient of differentiated input {i}: {e}"));
            }
        }
    }
    for oracle in c["oracles"].as_array().into_iter().flatten() {
        let (name, tolerance) = (oracle["name"].as_str().unwrap(), oracle["tolerance"].as_f64().unwrap());
        let outputs = outcome.outputs.iter().map(|o| match o {
            Value::Tensor(t) => Some(t),
            _ => None,
        });
        let grads = outcome.grads.iter().flatten().map(Some);
        for (what, got, files) in [("output", outputs.collect::<Vec<_>>(), &oracle["outputs"]), ("gradient", grads.collect(), &oracle["grads"])] {
            for (i, (got, file)) in got.iter().zip(files.as_array().unwrap()).enumerate() {
                if let (Some(got), Some(file)) = (got, file.as_str()) {
                    if let Err(e) = within(got, dir, file, tolerance) {
                        problems.push(format!("{name}: {what} {i}: {e}"));
                    }
                }
            }
        }
    }
    problems
}

/// Whether a case has a float tensor argument, at top level or in a list.
fn has_float_tensor_arg(c: &Json) -> bool {
    fn is_float_tensor(v: &Json) -> bool {
        match v {
            Json::Array(items) => items.iter().any(is_float_tensor),
            v => v.get("tensor").is_some() && dtype(&v["dtype"]).is_float(),
        }
    }
    c["args"].as_array().unwrap().iter().any(is_float_tensor) || c["kwargs"].as_array().unwrap().iter().any(|kv| is_float_tensor(&kv[1]))
}

#[test]
fn runtime_agrees_with_torch() {
    let (torch_dir, npu_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keyword_aliases: serde_json::Map<String, Json> = runtime::bind::KEYWORD_ALIASES.iter().map(|(a, n)| (a.to_string(), Json::from(*n))).collect();
    let derived: Vec<Json> = ops::derive::derived()
        .iter()
        .map(|d| serde_json::json!({"name": d.name, "framework": d.family.as_str(), "base": d.derivation.base, "in_place": d.derivation.in_place, "backward": d.op.backward, "sig": d.op.sig, "keyword_aliases": keyword_aliases}))
        .collect();
    std::fs::write(torch_dir.path().join("derived.json"), serde_json::to_string(&derived).unwrap()).unwrap();
    let torch_cases = common::torch_reference("tests/agreement/reference.py", torch_dir.path());
    let npu_cases = common::torch_reference("tests/npu/oracles.py", npu_dir.path());
    let cases: Vec<(&Path, &Json)> = torch_cases.iter().map(|c| (torch_dir.path(), c)).chain(npu_cases.iter().map(|c| (npu_dir.path(), c))).collect();
    let mut failures = vec![];
    // A MindSpore spelling must take every call its torch base takes.
    let index: Json = serde_json::from_str(&std::fs::read_to_string(torch_dir.path().join("cases.json")).unwrap()).unwrap();
    for r in index["refused"].as_array().into_iter().flatten() {
        failures.push(format!("mindspore {}: MindSpore refuses a call of its torch base ({})", r["name"].as_str().unwrap(), r["error"].as_str().unwrap()));
    }
    // Per op-table name: (has a case, ran a backward, has a top-level float tensor).
    let mut covered: BTreeMap<&str, (bool, bool, bool)> = BTreeMap::new();
    // Per derived name: (framework, name).
    let mut derived_covered: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (i, &(dir, c)) in cases.iter().enumerate() {
        if c["derived"].as_bool() == Some(true) {
            derived_covered.insert((c["framework"].as_str().unwrap(), c["name"].as_str().unwrap()));
        }
        let e = covered.entry(c["name"].as_str().unwrap()).or_default();
        *e = (true, e.1 || c["backward"].as_bool().unwrap(), e.2 || has_float_tensor_arg(c));
        for p in check(dir, c) {
            failures.push(format!("case {i} {}: {p}", c["call"].as_str().unwrap()));
        }
    }
    let names: BTreeSet<&str> = ops::table().flat_map(|op| op.names.iter().copied()).collect();
    // The entries of runtime/src/ops/npu_misc.rs have their cases, against the same two
    // oracles, in tests/npu_misc_agreement.rs (outputs that may be None, int32 indices).
    let npu_misc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npu_misc/names.txt")).unwrap();
    for op in ops::table() {
        for &n in op.names.iter().filter(|n| !npu_misc.lines().any(|l| l == **n)) {
            match covered.get(n) {
                None => failures.push(format!("{n}: no case in tests/agreement/cases.py (tests/npu/oracles.py for NPU names)")),
                Some((_, false, true)) if op.backward => failures.push(format!("{n}: the entry has a backward, but no case runs it")),
                _ => {}
            }
        }
    }
    for d in ops::derive::derived() {
        if !derived_covered.contains(&(d.family.as_str(), d.name)) {
            failures.push(format!(
                "{} {}: derived from {}, but no case of it runs under its own name (in torch, or in MindSpore for its own spellings)",
                d.family.as_str(),
                d.name,
                d.derivation.base
            ));
        }
    }
    let derived_names: BTreeSet<&str> = ops::derive::derived().iter().map(|d| d.name).collect();
    for n in covered.keys().filter(|n| !names.contains(*n) && !derived_names.contains(*n)) {
        failures.push(format!("{n}: a case for a name that is not in the op table"));
    }
    assert!(failures.is_empty(), "{} disagreements with torch over {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

/// Dropout is compared with torch only without a mask (torch's generator
/// is not the runtime's); here the runtime's own mask must be the same on
/// every run with a seed, and the backward must use the forward's mask.
#[test]
fn dropout_mask_is_reproducible() {
    let op = ops::lookup(runtime::spec::Framework::PyTorch, "Functional.dropout").unwrap();
    let n = 1000;
    let run = || {
        let x = T::from_f64((1..=n).map(|i| i as f64).collect(), &[n], TDType::F64, DType::F64, &runtime::device::host()).unwrap();
        let g = T::from_f64(vec![1.0; n], &[n], TDType::F64, DType::F64, &runtime::device::host()).unwrap();
        let out = runtime::exec::run(
            op,
            "Functional.dropout",
            vec![Value::Tensor(x)],
            vec![("p".into(), Value::Float(0.25))],
            &[true],
            Some(&[Some(g)]),
            &Ctx::bench(7),
        )
        .unwrap();
        let Value::Tensor(y) = &out.outputs[0] else { panic!("dropout returned no tensor") };
        (y.to_f64_vec().unwrap(), out.grads.unwrap()[0].to_f64_vec().unwrap())
    };
    let (first, grad) = run();
    assert_eq!(first, run().0, "two runs with the same seed drew different masks");
    let kept = first.iter().filter(|&&y| y != 0.0).count();
    assert!((650..850).contains(&kept), "{kept} of {n} kept with p=0.25");
    for (i, (y, g)) in first.iter().zip(&grad).enumerate() {
        let x = (i + 1) as f64;
        let scale = if *y == 0.0 { 0.0 } else { 1.0 / 0.75 };
        assert_eq!((*y, *g), (x * scale, scale), "element {i}");
    }
}

/// The set-up's import check of msprobe 26.2.0's bench functions
/// (tests/npu/msprobe26.py, which scripts/setup-python-env.sh runs last):
/// with the extras' folder as the set-up made it, every module imports;
/// with the same folder less `tensorboard`, the check fails in one line
/// that names it (a fresh machine once failed on that import only in a test).
#[test]
fn the_setups_msprobe_check_names_a_missing_package_in_one_line() {
    let checker = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npu/msprobe26.py");
    let located = Command::new(common::python())
        .arg("-c")
        .arg("import sys; sys.path.insert(0, sys.argv[1]); import msprobe26; print('\\n'.join(msprobe26.paths()))")
        .arg(checker.parent().unwrap())
        .output()
        .unwrap();
    assert!(located.status.success(), "{}", String::from_utf8_lossy(&located.stderr));
    let located = String::from_utf8(located.stdout).unwrap();
    let [root, extra] = located.lines().collect::<Vec<_>>()[..] else { panic!("two folders: {located}") };
    let check = |extra: &Path| Command::new(common::python()).arg("-I").arg(&checker).arg(root).arg(extra).output().unwrap();

    let whole = check(Path::new(extra));
    assert!(whole.status.success(), "the set-up's folders do not pass their own check: {}", String::from_utf8_lossy(&whole.stderr));

    let less = tempfile::tempdir().unwrap();
    let mut dropped = 0;
    for entry in std::fs::read_dir(extra).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("tensorboard") {
            dropped += 1;
        } else {
            std::os::unix::fs::symlink(entry.path(), less.path().join(&name)).unwrap();
        }
    }
    assert!(dropped > 0, "no tensorboard in {extra}");
    let failed = check(less.path());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("No module named 'tensorboard'"), "{stderr}");
}

/// A name given `Reason::Absent` (runtime/src/ops/reasons.rs) is one that
/// MindSpore lacks: checked in both MindSpore versions the project runs
/// (2.10 in MSPROBE_PYTHON, 2.6 in MSPROBE_MINDTORCH_PYTHON), on the module
/// msprobe wraps for its prefix. A MindSpore that gained the function would
/// dump it, and the name would become a gap instead.
#[test]
fn names_absent_from_mindspore_are_absent() {
    let names: Vec<&str> = ops::reasons::REASONS.iter().filter(|r| r.reason == ops::reasons::Reason::Absent).flat_map(|r| r.names.iter().copied()).collect();
    assert!(!names.is_empty());
    let script = "import sys, mindspore\n\
                  from mindspore import mint, ops\n\
                  from mindspore.mint.nn import functional as mf\n\
                  mods = {'Functional': ops, 'Tensor': mindspore.Tensor, 'Mint': mint, 'MintFunctional': mf}\n\
                  for name in sys.argv[1:]:\n\
                  \x20   prefix, op = name.split('.', 1)\n\
                  \x20   print(name, hasattr(mods[prefix], op))\n";
    let mindtorch = std::env::var_os("MSPROBE_MINDTORCH_PYTHON").expect("MSPROBE_MINDTORCH_PYTHON: set by scripts/test.sh");
    for python in [common::python(), mindtorch.into()] {
        let out = Command::new(&python).arg("-c").arg(script).args(&names).output().unwrap();
        assert!(out.status.success(), "{}: {}", python.display(), String::from_utf8_lossy(&out.stderr));
        let present: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.ends_with(" True")).map(String::from).collect();
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), names.len());
        assert!(present.is_empty(), "{}: MindSpore has {present:?}", python.display());
    }
}
