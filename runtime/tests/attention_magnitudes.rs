//! The fused attentions' rounding magnitudes agree between the runtime and
//! the generated Python scripts: each case below (every layout, grouped
//! key/value heads, `pse`, masks by sparse mode and by token band, TND
//! sequences, each half and full dtype) gets its magnitudes from the op
//! table's parts function (`runtime/src/ops/npu_attention.rs`, head by head)
//! and from the scripts' mirror (`python/msprobe_rs/repro/magnitude.py`'s
//! `PARTS`, run by tests/attention_magnitudes/check.py): output by output and
//! gradient by gradient, element by element, to 1e-9 relative.
//!
//! Needs MSPROBE_PYTHON, a Python with torch (scripts/test.sh).

use std::path::Path;
use std::process::Command;

use candle_core::DType;
use runtime::bind::bind;
use runtime::dtype::TDType;
use runtime::ops::{lookup, Rounding};
use runtime::spec::Framework;
use runtime::value::{Value, T};
use serde_json::{json, Value as Json};

/// One case: the API's dump name, its framework, the dtype of query, key,
/// value and dy, its tensors `(name, shape, dtype)`, its other settings and
/// whether it has an output gradient.
struct Case {
    api: &'static str,
    framework: Framework,
    dtype: TDType,
    tensors: Vec<(&'static str, Vec<usize>, TDType)>,
    settings: Vec<(&'static str, Json)>,
    dy: bool,
}

/// Deterministic values representable in float16 and bfloat16: eighths in [-1.75, 1.75].
fn values(n: usize, seed: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 37 + seed * 11) % 29) as f64 / 8.0 - 1.75).collect()
}

/// A mask's values: 1 (not attended) at the given flat indices.
fn mask(n: usize, masked: &[usize]) -> Vec<f64> {
    (0..n).map(|i| f64::from(u8::from(masked.contains(&i)))).collect()
}

fn cases() -> Vec<Case> {
    let qkv = |q: Vec<usize>, kv: Vec<usize>, dtype: TDType| vec![("query", q, dtype), ("key", kv.clone(), dtype), ("value", kv, dtype)];
    vec![
        // Megatron's kind: BSH, two query heads sharing one key/value head, causal from the top left.
        Case {
            api: "NPU.npu_fusion_attention",
            framework: Framework::PyTorch,
            dtype: TDType::BF16,
            tensors: qkv(vec![1, 5, 6], vec![1, 5, 3], TDType::BF16),
            settings: vec![("head_num", json!(2)), ("input_layout", json!("BSH")), ("scale", json!(0.5)), ("sparse_mode", json!(2))],
            dy: true,
        },
        // BNSD, a pse, a bool mask and the token band (sparse_mode 0), float32.
        Case {
            api: "NPU.npu_fusion_attention",
            framework: Framework::PyTorch,
            dtype: TDType::F32,
            tensors: [
                qkv(vec![2, 2, 3, 2], vec![2, 2, 4, 2], TDType::F32),
                vec![("pse", vec![1, 2, 3, 4], TDType::F32), ("atten_mask", vec![3, 4], TDType::Bool)],
            ]
            .concat(),
            settings: vec![
                ("head_num", json!(2)),
                ("input_layout", json!("BNSD")),
                ("scale", json!(0.7)),
                ("pre_tockens", json!(1)),
                ("next_tockens", json!(1)),
            ],
            dy: true,
        },
        // BSND with a [B, 1, 1, S2] padding mask (every query row of a batch masks the same keys), float32.
        Case {
            api: "NPU.npu_fusion_attention",
            framework: Framework::PyTorch,
            dtype: TDType::F32,
            tensors: [qkv(vec![2, 3, 2, 4], vec![2, 4, 2, 4], TDType::F32), vec![("atten_mask", vec![2, 1, 1, 4], TDType::Bool)]].concat(),
            settings: vec![("head_num", json!(2)), ("input_layout", json!("BSND")), ("scale", json!(0.5))],
            dy: true,
        },
        // TND: two sequences, causal from the bottom right, float16, forward only.
        Case {
            api: "NPU.npu_fusion_attention",
            framework: Framework::PyTorch,
            dtype: TDType::F16,
            tensors: qkv(vec![5, 2, 2], vec![6, 1, 2], TDType::F16),
            settings: vec![
                ("head_num", json!(2)),
                ("input_layout", json!("TND")),
                ("sparse_mode", json!(3)),
                ("actual_seq_qlen", json!([2, 5])),
                ("actual_seq_kvlen", json!([3, 6])),
            ],
            dy: false,
        },
        // MindSpore's names: BSH by default, a UInt8 mask alone (tokens at their defaults), float16.
        Case {
            api: "Functional.flash_attention_score",
            framework: Framework::MindSpore,
            dtype: TDType::F16,
            tensors: [qkv(vec![2, 3, 4], vec![2, 3, 4], TDType::F16), vec![("attn_mask", vec![3, 3], TDType::U8)]].concat(),
            settings: vec![("head_num", json!(2)), ("scalar_value", json!(0.5))],
            dy: true,
        },
        // MindSpore, SBH with a real_shift, float32.
        Case {
            api: "Functional.flash_attention_score",
            framework: Framework::MindSpore,
            dtype: TDType::F32,
            tensors: [qkv(vec![4, 1, 4], vec![4, 1, 4], TDType::F32), vec![("real_shift", vec![1, 2, 4, 4], TDType::F32)]].concat(),
            settings: vec![("head_num", json!(2)), ("input_layout", json!("SBH")), ("scalar_value", json!(0.25))],
            dy: true,
        },
    ]
}

/// A tensor's values in a case: masks mask one key of the second query row.
fn tensor_values(name: &str, shape: &[usize], seed: usize) -> Vec<f64> {
    let n = shape.iter().product();
    if name.contains("mask") {
        mask(n, &[shape[shape.len() - 1] + 2])
    } else {
        values(n, seed)
    }
}

fn to_value(j: &Json) -> Value {
    match j {
        Json::String(s) => Value::Str(s.clone()),
        Json::Number(n) if n.is_i64() => Value::Int(n.as_i64().unwrap()),
        Json::Number(n) => Value::Float(n.as_f64().unwrap()),
        Json::Array(items) => Value::List(items.iter().map(to_value).collect()),
        other => panic!("not a setting: {other}"),
    }
}

/// The runtime's magnitudes of a case: `(forward per output, [(parameter, gradient)])`.
fn rust_magnitudes(c: &Case) -> (Vec<Vec<f64>>, Vec<(String, Vec<f64>)>) {
    let host = candle_core::Device::Cpu;
    let t = |values: Vec<f64>, shape: &[usize], dtype: TDType| T::from_f64(values, shape, dtype, DType::F64, &host).unwrap();
    let mut kwargs: Vec<(String, Value)> = c
        .tensors
        .iter()
        .enumerate()
        .map(|(i, (name, shape, dtype))| (name.to_string(), Value::Tensor(t(tensor_values(name, shape, i), shape, *dtype))))
        .collect();
    kwargs.extend(c.settings.iter().map(|(k, v)| (k.to_string(), to_value(v))));
    let op = lookup(c.framework, c.api).unwrap_or_else(|| panic!("{} is not in the op table", c.api));
    let Rounding::Parts(parts) = op.rounding() else { panic!("{}: not a Parts class", c.api) };
    let bound = bind(c.api, op.sig, vec![], kwargs).unwrap();
    let q = &c.tensors[0].1;
    let dy = c.dy.then(|| t(values(q.iter().product(), 9), q, c.dtype));
    let (forward, grads) = (parts.magnitude)(&bound, dy.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", c.api));
    (forward, grads.into_iter().map(|(n, g)| (n.to_string(), g)).collect())
}

/// The cases as check.py reads them.
fn cases_json(cases: &[Case]) -> Json {
    let list: Vec<Json> = cases
        .iter()
        .map(|c| {
            let tensors: Vec<Json> = c
                .tensors
                .iter()
                .enumerate()
                .map(|(i, (name, shape, dtype))| json!({"name": name, "shape": shape, "dtype": dtype.name(), "values": tensor_values(name, shape, i)}))
                .collect();
            let q = &c.tensors[0].1;
            json!({
                "api": c.api,
                "dtype": c.dtype.name(),
                "tensors": tensors,
                "settings": c.settings.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<serde_json::Map<_, _>>(),
                "dy": if c.dy { json!({"shape": q, "values": values(q.iter().product(), 9)}) } else { Json::Null },
            })
        })
        .collect();
    Json::Array(list)
}

fn close(what: &str, rust: &[f64], python: &[f64]) {
    assert_eq!(rust.len(), python.len(), "{what}: {} elements natively, {} in the scripts", rust.len(), python.len());
    assert!(rust.iter().any(|&r| r > 0.0), "{what}: every magnitude is 0");
    for (i, (r, p)) in rust.iter().zip(python).enumerate() {
        assert!(r.is_finite() && *r >= 0.0, "{what}[{i}]: magnitude {r}");
        assert!((r - p).abs() <= 1e-9 * r.abs().max(p.abs()), "{what}[{i}]: {r} natively, {p} in the scripts");
    }
}

#[test]
fn the_scripts_compute_the_fused_attentions_magnitudes_as_the_runtime_does() {
    let python = std::env::var_os("MSPROBE_PYTHON").expect("MSPROBE_PYTHON is not set: run through scripts/test.sh, which sets it");
    let cases = cases();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("cases.json");
    std::fs::write(&input, cases_json(&cases).to_string()).unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python)
        .arg("-B")
        .arg(here.join("tests/attention_magnitudes/check.py"))
        .arg(&input)
        .arg(here.join("../python"))
        .output()
        .expect("cannot start MSPROBE_PYTHON");
    assert!(out.status.success(), "check.py failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let results: Vec<Json> = serde_json::from_slice(&out.stdout).expect("check.py printed no JSON list");
    assert_eq!(results.len(), cases.len());
    for (i, (c, r)) in cases.iter().zip(&results).enumerate() {
        let (forward, grads) = rust_magnitudes(c);
        let outputs = if c.api.starts_with("NPU.") { 3 } else { 1 };
        assert_eq!(forward.len(), outputs, "case {i}");
        let py_forward = r["forward"].as_array().unwrap();
        assert_eq!(py_forward.len(), outputs, "case {i}: the scripts' outputs");
        for (o, (rust, py)) in forward.iter().zip(py_forward).enumerate() {
            let py: Vec<f64> = py.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            close(&format!("case {i} ({}) output {o}", c.api), rust, &py);
        }
        let names: Vec<&str> = grads.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, if c.dy { vec!["query", "key", "value"] } else { vec![] }, "case {i}");
        let py_grads = r["grads"].as_object().unwrap();
        assert_eq!(py_grads.len(), grads.len(), "case {i}: the scripts' gradients");
        for (name, rust) in &grads {
            let py: Vec<f64> = py_grads[name].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            close(&format!("case {i} ({}) gradient of {name}", c.api), rust, &py);
        }
    }
}
