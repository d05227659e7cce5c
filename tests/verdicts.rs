//! `msprobe replay` verdicts on crafted tensor dumps with planted errors:
//! the exact status and Message of every row, and the exit code. Each dump
//! is written here (dump.json and .npy tensor files), so every value the
//! verdict depends on is in this file.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

/// What every row on a recorded device output says it compared.
const RECORDED: &str = "tested: device output recorded in the dump; bench: float64 recompute on the CPU";
/// ... on a recorded gradient.
const RECORDED_GRAD: &str = "tested: device gradient recorded in the dump; bench: float64 recompute on the CPU";

/// The element types the crafted tensors use.
#[derive(Clone, Copy)]
enum Dt {
    F32,
    /// bfloat16 values, stored as float32 (npy has no bfloat16).
    BF16,
    I64,
}

impl Dt {
    fn npy(self) -> &'static str {
        match self {
            Dt::F32 | Dt::BF16 => "<f4",
            Dt::I64 => "<i8",
        }
    }

    fn name(self, fw: &str) -> &'static str {
        match (self, fw) {
            (Dt::F32, "pytorch") => "torch.float32",
            (Dt::BF16, "pytorch") => "torch.bfloat16",
            (Dt::BF16, _) => "BFloat16",
            (Dt::I64, "pytorch") => "torch.int64",
            (Dt::F32, _) => "Float32",
            (Dt::I64, _) => "Int64",
        }
    }
}

/// A tensor dump being written into a temporary folder.
struct Dump {
    dir: tempfile::TempDir,
    fw: &'static str,
    data: serde_json::Map<String, Value>,
}

impl Dump {
    fn new(fw: &'static str) -> Dump {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("dump_tensor_data")).unwrap();
        Dump { dir, fw, data: serde_json::Map::new() }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn file(&self, name: &str) -> PathBuf {
        self.path().join("dump_tensor_data").join(name)
    }

    /// Writes `values` as `<name>.npy` and returns the dump's descriptor.
    fn tensor(&self, name: &str, dt: Dt, shape: &[usize], values: &[f64]) -> Value {
        assert_eq!(values.len(), shape.iter().product::<usize>());
        let data: Vec<u8> = values
            .iter()
            .flat_map(|&v| match dt {
                Dt::F32 | Dt::BF16 => (v as f32).to_le_bytes().to_vec(),
                Dt::I64 => (v as i64).to_le_bytes().to_vec(),
            })
            .collect();
        let bytes = common::npy_bytes(dt.npy(), shape, &data);
        let file = format!("{name}.npy");
        std::fs::write(self.file(&file), bytes).unwrap();
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let max = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let kind = if self.fw == "pytorch" { "torch.Tensor" } else { "mindspore.Tensor" };
        let mut d = json!({"type": kind, "dtype": dt.name(self.fw), "shape": shape, "Max": max, "Min": min, "data_name": file});
        if self.fw == "pytorch" {
            d["requires_grad"] = json!(!matches!(dt, Dt::I64));
        }
        d
    }

    /// Adds `<api>.forward` (and `.backward` when `backward` is given as
    /// (grad_outputs, grad_inputs)).
    fn call(&mut self, api: &str, args: Vec<Value>, kwargs: Value, outputs: Vec<Value>, backward: Option<(Vec<Value>, Vec<Value>)>) {
        self.data.insert(format!("{api}.forward"), json!({"input_args": args, "input_kwargs": kwargs, "output": outputs}));
        if let Some((grad_outputs, grad_inputs)) = backward {
            self.data.insert(format!("{api}.backward"), json!({"input": grad_outputs, "output": grad_inputs}));
        }
    }

    /// Writes dump.json and returns its path.
    fn write(&self) -> PathBuf {
        let dump = json!({"task": "tensor", "level": "L1", "framework": self.fw, "dump_data_dir": self.path().join("dump_tensor_data"), "data": self.data});
        let path = self.path().join("dump.json");
        std::fs::write(&path, dump.to_string()).unwrap();
        path
    }

    /// `replay` of one API (real data), with extra flags; returns the output and the CSV folder.
    fn replay(&self, api: &str, propagation: &str, extra: &[&str]) -> (Output, PathBuf) {
        let dump = self.write();
        let cfg = json!({"dump_json_path": dump, "api_name": api, "propagation": propagation, "data_mode": "real_data"});
        let out = self.path().join(format!("out-{api}-{propagation}-{}", extra.join("")));
        std::fs::write(self.path().join("c.json"), cfg.to_string()).unwrap();
        let mut args = vec!["-f", self.fw, "replay", "-i", "c.json", "--output-dir", out.to_str().unwrap()];
        args.extend(extra);
        let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(&args).current_dir(self.path()).output().unwrap();
        (o, out)
    }
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The one row called `name`.
fn row(dir: &Path, name: &str) -> (String, String) {
    let all = common::detail_rows(dir);
    let r = all.iter().find(|r| r.0 == name).unwrap_or_else(|| panic!("no row {name} in {all:#?}"));
    (r.1.clone(), r.2.clone())
}

/// A MindSpore `Mint.mul` of [1, 2, 3, 4] × 0.5 whose recorded output is `recorded`.
fn mul_dump(recorded: &[f64]) -> Dump {
    let mut d = Dump::new("mindspore");
    let a = d.tensor("Mint.mul.0.forward.input.0", Dt::F32, &[4], &[1.0, 2.0, 3.0, 4.0]);
    let b = d.tensor("Mint.mul.0.forward.input.1", Dt::F32, &[4], &[0.5; 4]);
    let out = d.tensor("Mint.mul.0.forward.output.0", Dt::F32, &[4], recorded);
    d.call("Mint.mul.0", vec![a, b], json!({}), vec![out], None);
    d
}

#[test]
fn exact_product_passes_and_says_what_it_compared() {
    let d = mul_dump(&[0.5, 1.0, 1.5, 2.0]);
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(row(&out, "Mint.mul.0.forward.output.0"), ("pass".into(), RECORDED.into()));
}

#[test]
fn cosine_branch_catches_a_sign_flip() {
    let d = mul_dump(&[-0.5, -1.0, -1.5, -2.0]);
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let message = format!("cosine similarity -1 is not above the threshold 0.99; max absolute error 4 is not below the threshold 0.0001; {RECORDED}");
    assert_eq!(row(&out, "Mint.mul.0.forward.output.0"), ("error".into(), message));
}

#[test]
fn max_abs_branch_catches_a_shift_the_cosine_misses() {
    let d = mul_dump(&[0.5, 1.0, 1.5, 2.0078125]);
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let message = format!("max absolute error 0.0078125 is not below the threshold 0.0001; {RECORDED}");
    assert_eq!(row(&out, "Mint.mul.0.forward.output.0"), ("error".into(), message));
}

#[test]
fn nan_in_different_places_is_an_error_and_in_the_same_place_a_note() {
    let d = mul_dump(&[0.5, f64::NAN, 1.5, 2.0]);
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let message = format!("NaN/Inf differ: tested has 1 NaN and 0 Inf, bench has 0 NaN and 0 Inf; {RECORDED}");
    assert_eq!(row(&out, "Mint.mul.0.forward.output.0"), ("error".into(), message));
    // NaN in the input: NaN on both sides at the same place.
    let mut d = Dump::new("mindspore");
    let a = d.tensor("Mint.mul.0.forward.input.0", Dt::F32, &[3], &[1.0, f64::NAN, 3.0]);
    let b = d.tensor("Mint.mul.0.forward.input.1", Dt::F32, &[3], &[0.5; 3]);
    let out = d.tensor("Mint.mul.0.forward.output.0", Dt::F32, &[3], &[0.5, f64::NAN, 1.5]);
    d.call("Mint.mul.0", vec![a, b], json!({}), vec![out], None);
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let message = format!("NaN/Inf at the same places on both sides; metrics over the finite elements; {RECORDED}");
    assert_eq!(row(&out, "Mint.mul.0.forward.output.0"), ("pass".into(), message));
}

#[test]
fn small_values_twice_too_large_fail_only_under_the_api_standard() {
    let a = [1e-3, 2e-3, 3e-3, 4e-3];
    let product: Vec<f64> = a.iter().map(|x| 2.0 * f64::from(*x as f32) * 0.005f32 as f64).collect();
    let mut d = Dump::new("mindspore");
    let x = d.tensor("Mint.mul.0.forward.input.0", Dt::F32, &[4], &a);
    let y = d.tensor("Mint.mul.0.forward.input.1", Dt::F32, &[4], &[0.005; 4]);
    let out = d.tensor("Mint.mul.0.forward.output.0", Dt::F32, &[4], &product);
    d.call("Mint.mul.0", vec![x, y], json!({}), vec![out], None);
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(0), "msprobe's rule cannot see it: {}", text(&o));
    assert_eq!(row(&out, "Mint.mul.0.forward.output.0").0, "pass");
    let (o, out) = d.replay("Mint.mul.0", "forward", &["--standard", "api"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let (status, message) = row(&out, "Mint.mul.0.forward.output.0");
    assert_eq!(status, "error");
    assert!(message.starts_with("absolute threshold: relative error above 1e-06 at 4 of 4 normal values (max 0.9"), "{message}");
    assert!(message.ends_with(RECORDED), "{message}");
}

/// The Message's first part for an exact float32 emulated row under the
/// default standard: the rounding bound judged it, with its class's `k`.
fn bound_rule(k: u32) -> String {
    format!("emulated device judged by the rounding bound rule (bound_ratio=0; beyond_bound=0; k={k}; u=5.96046e-08); ")
}

#[test]
fn a_missing_recorded_output_is_emulated_and_says_so() {
    let d = mul_dump(&[0.5, 1.0, 1.5, 2.0]);
    let file = d.file("Mint.mul.0.forward.output.0.npy");
    std::fs::remove_file(&file).unwrap();
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The default standard holds an emulated row to its dtype's rounding bound, and says so.
    let message = format!(
        "{}tested: emulated device in the dumped dtypes (no recorded output: {} is missing); bench: float64 recompute on the CPU",
        bound_rule(3),
        file.display()
    );
    assert_eq!(row(&out, "Mint.mul.0.forward.output.0"), ("pass".into(), message));
}

#[test]
fn misaligned_gradients_are_emulated_and_say_so() {
    let mut d = Dump::new("mindspore");
    let a = d.tensor("Mint.mul.0.forward.input.0", Dt::F32, &[4], &[1.0, 2.0, 3.0, 4.0]);
    let b = d.tensor("Mint.mul.0.forward.input.1", Dt::F32, &[4], &[0.5; 4]);
    let out = d.tensor("Mint.mul.0.forward.output.0", Dt::F32, &[4], &[0.5, 1.0, 1.5, 2.0]);
    let g = d.tensor("Mint.mul.0.backward.input.0", Dt::F32, &[4], &[1.0; 4]);
    // One gradient of the wrong shape for two differentiated inputs.
    let wrong = d.tensor("Mint.mul.0.backward.output.0", Dt::F32, &[2], &[0.5, 0.5]);
    d.call("Mint.mul.0", vec![a, b], json!({}), vec![out], Some((vec![g], vec![wrong])));
    let (o, out) = d.replay("Mint.mul.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let message = format!(
        "{}tested: emulated device in the dumped dtypes (the dump's gradients do not line up with the call's); bench: float64 recompute on the CPU",
        bound_rule(16)
    );
    assert_eq!(row(&out, "Mint.mul.0.backward.output.0"), ("pass".into(), message.clone()));
    assert_eq!(row(&out, "Mint.mul.0.backward.output.1"), ("pass".into(), message));
    assert_eq!(row(&out, "Mint.mul.0.forward.output.0"), ("pass".into(), RECORDED.into()));
}

#[test]
fn a_call_that_cannot_bind_is_a_skip_not_an_error() {
    let mut d = mul_dump(&[0.5, 1.0, 1.5, 2.0]);
    let entry = d.data.get_mut("Mint.mul.0.forward").unwrap();
    entry["input_kwargs"] = json!({"rounding": {"type": "str", "value": "floor"}});
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let (status, message) = row(&out, "Mint.mul.0.forward");
    assert_eq!(status, "skip");
    assert!(message.starts_with("cannot replay here: ") && message.contains("rounding"), "{message}");
    let (o, _) = d.replay("Mint.mul.0", "forward", &["--allow-skip"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_truncated_tensor_file_is_an_input_error_alone_and_a_skip_in_a_batch() {
    let d = mul_dump(&[0.5, 1.0, 1.5, 2.0]);
    let file = d.file("Mint.mul.0.forward.input.0.npy");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 3]).unwrap();
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("msprobe: error: Mint.mul.0: ") && stderr.contains(&file.display().to_string()), "{stderr}");
    assert!(!out.exists(), "no CSV for a broken input");
    let dump = d.write();
    let batch = d.path().join("batch");
    let args = ["-f", "mindspore", "replay", "--dump", dump.to_str().unwrap(), "--data-mode", "real_data", "--output-dir", batch.to_str().unwrap()];
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let (status, message) = row(&batch, "Mint.mul.0.forward");
    assert_eq!(status, "skip");
    assert!(message.starts_with("cannot replay here: broken input: Mint.mul.0: ") && message.contains(&file.display().to_string()), "{message}");
}

#[test]
fn integers_are_exact_on_the_emulated_device() {
    let mut d = Dump::new("mindspore");
    let x = [1_000_000_001.0, 999_999_999.0, 1_234_567_891.0];
    let y = [7.0, -3.0, 1_000_000_000.0];
    let a = d.tensor("Mint.add.0.forward.input.0", Dt::I64, &[3], &x);
    let b = d.tensor("Mint.add.0.forward.input.1", Dt::I64, &[3], &y);
    let sum: Vec<f64> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    let out = d.tensor("Mint.add.0.forward.output.0", Dt::I64, &[3], &sum);
    d.call("Mint.add.0", vec![a, b], json!({}), vec![out], None);
    let (o, out) = d.replay("Mint.add.0", "forward", &["--emulate"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let message = "emulated device judged by the binary equality rule (error_rate=0); \
                   tested: emulated device in the dumped dtypes (emulation requested); bench: float64 recompute on the CPU";
    assert_eq!(row(&out, "Mint.add.0.forward.output.0"), ("pass".into(), message.into()));
}

/// A PyTorch `Functional.dropout` (p = 0.2) with its recorded output and gradient.
fn dropout_dump(input: &[f64], output: &[f64], grad_in: &[f64]) -> Dump {
    let mut d = Dump::new("pytorch");
    let n = input.len();
    let x = d.tensor("Functional.dropout.0.forward.input.0", Dt::F32, &[n], input);
    let out = d.tensor("Functional.dropout.0.forward.output.0", Dt::F32, &[n], output);
    let g = d.tensor("Functional.dropout.0.backward.input.0", Dt::F32, &[n], &vec![1.0; n]);
    let gi = d.tensor("Functional.dropout.0.backward.output.0", Dt::F32, &[n], grad_in);
    let kwargs = json!({"p": {"type": "float", "value": 0.2}, "training": {"type": "bool", "value": true}});
    d.call("Functional.dropout.0", vec![x], kwargs, vec![out], Some((vec![g], vec![gi])));
    d
}

#[test]
fn dropout_recorded_as_an_identity_is_replayed_as_one() {
    let x = [1.0, -2.0, 0.5, 3.0];
    let d = dropout_dump(&x, &x, &[1.0; 4]);
    let (o, out) = d.replay("Functional.dropout.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let quirk = "msprobe quirk: the recorded output equals the input (msprobe dumped this dropout as an identity); replayed as an identity";
    assert_eq!(row(&out, "Functional.dropout.0.forward.output.0"), ("pass".into(), format!("{quirk}; {RECORDED}")));
    assert_eq!(row(&out, "Functional.dropout.0.backward.output.0"), ("pass".into(), format!("{quirk}; {RECORDED_GRAD}")));
}

#[test]
fn dropout_mask_at_zero_inputs_comes_from_the_recorded_gradient() {
    // Kept: 0, 2 (a zero input), 3; dropped: 1, 4 (a zero input). Scale 1/(1-0.2) = 1.25.
    let x = [1.0, -2.0, 0.0, 3.0, 0.0];
    let keep = [1.0, 0.0, 1.0, 1.0, 0.0];
    let out: Vec<f64> = x.iter().zip(&keep).map(|(x, k)| x * k * 1.25).collect();
    let grad: Vec<f64> = keep.iter().map(|k| k * 1.25).collect();
    let d = dropout_dump(&x, &out, &grad);
    let (o, dir) = d.replay("Functional.dropout.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let note = "dropout mask taken from the recorded output, and from the recorded gradient at the 2 zero inputs";
    assert_eq!(row(&dir, "Functional.dropout.0.backward.output.0"), ("pass".into(), format!("{note}; {RECORDED_GRAD}")));
    assert_eq!(row(&dir, "Functional.dropout.0.forward.output.0"), ("pass".into(), RECORDED.into()));
}

/// A PyTorch `Functional.cross_entropy` of 4 samples and 3 classes whose
/// recorded logits gradient is `grad`.
fn cross_entropy_dump(grad: &[f64]) -> Dump {
    let mut d = Dump::new("pytorch");
    let logits = [0.5, -1.0, 2.0, 1.5, 0.25, -0.5, 0.0, 1.0, -2.0, 0.75, 0.5, 1.25];
    let x = d.tensor("Functional.cross_entropy.0.forward.input.0", Dt::F32, &[4, 3], &logits);
    let t = d.tensor("Functional.cross_entropy.0.forward.input.1", Dt::I64, &[4], &[2.0, 0.0, 1.0, 2.0]);
    let loss = cross_entropy(&logits, &[2, 0, 1, 2]);
    let out = d.tensor("Functional.cross_entropy.0.forward.output.0", Dt::F32, &[], &[loss]);
    let g = d.tensor("Functional.cross_entropy.0.backward.input.0", Dt::F32, &[], &[1.0]);
    let gi = d.tensor("Functional.cross_entropy.0.backward.output.0", Dt::F32, &[4, 3], grad);
    d.call("Functional.cross_entropy.0", vec![x, t], json!({}), vec![out], Some((vec![g], vec![gi])));
    d
}

fn softmax_rows(logits: &[f64]) -> Vec<f64> {
    logits
        .chunks(3)
        .flat_map(|r| {
            let m = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = r.iter().map(|v| (v - m).exp()).sum();
            r.iter().map(move |v| (v - m).exp() / s).collect::<Vec<_>>()
        })
        .collect()
}

fn cross_entropy(logits: &[f64], target: &[usize]) -> f64 {
    let p = softmax_rows(logits);
    -target.iter().enumerate().map(|(i, &t)| p[i * 3 + t].ln()).sum::<f64>() / 4.0
}

#[test]
fn cross_entropy_gradient_recorded_at_the_inner_node_is_recognised() {
    let target = [2, 0, 1, 2];
    // msprobe 8.3.2's record: -onehot / N.
    let inner: Vec<f64> = (0..12).map(|k| if target[k / 3] == k % 3 { -0.25 } else { 0.0 }).collect();
    let d = cross_entropy_dump(&inner);
    let (o, out) = d.replay("Functional.cross_entropy.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let quirk = "msprobe quirk: the recorded gradient is the one w.r.t. cross_entropy's inner log_softmax output; compared with that gradient";
    assert_eq!(row(&out, "Functional.cross_entropy.0.backward.output.0"), ("pass".into(), format!("{quirk}; {RECORDED_GRAD}")));
    // The op's own gradient, (softmax - onehot) / N, passes without the quirk.
    let p = softmax_rows(&[0.5, -1.0, 2.0, 1.5, 0.25, -0.5, 0.0, 1.0, -2.0, 0.75, 0.5, 1.25]);
    let true_grad: Vec<f64> = (0..12).map(|k| (p[k] + inner[k] * 4.0) / 4.0).collect();
    let d = cross_entropy_dump(&true_grad);
    let (o, out) = d.replay("Functional.cross_entropy.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(row(&out, "Functional.cross_entropy.0.backward.output.0"), ("pass".into(), RECORDED_GRAD.into()));
    // A gradient that is neither stays an error against the op's gradient.
    let wrong: Vec<f64> = true_grad.iter().map(|g| -g).collect();
    let d = cross_entropy_dump(&wrong);
    let (o, out) = d.replay("Functional.cross_entropy.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let (status, message) = row(&out, "Functional.cross_entropy.0.backward.output.0");
    assert_eq!(status, "error");
    assert!(message.starts_with("cosine similarity -1 is not above the threshold 0.99") && message.ends_with(RECORDED_GRAD), "{message}");
}

/// A PyTorch `Functional.l1_loss` (mean) of 4 elements whose recorded input gradient is `grad`.
fn l1_loss_dump(grad: &[f64]) -> Dump {
    let mut d = Dump::new("pytorch");
    let x = d.tensor("Functional.l1_loss.0.forward.input.0", Dt::F32, &[4], &[0.5, -1.0, 2.0, 0.25]);
    let y = d.tensor("Functional.l1_loss.0.forward.input.1", Dt::F32, &[4], &[1.0, -2.0, 1.0, 0.5]);
    let out = d.tensor("Functional.l1_loss.0.forward.output.0", Dt::F32, &[], &[0.6875]);
    let g = d.tensor("Functional.l1_loss.0.backward.input.0", Dt::F32, &[], &[1.0]);
    let gi = d.tensor("Functional.l1_loss.0.backward.output.0", Dt::F32, &[4], grad);
    let mut target = y;
    target["requires_grad"] = json!(false);
    d.call("Functional.l1_loss.0", vec![x, target], json!({}), vec![out], Some((vec![g], vec![gi])));
    d
}

#[test]
fn l1_loss_gradient_recorded_at_the_inner_node_is_recognised() {
    // msprobe 8.3.2's record: the gradient w.r.t. abs(x - y), 1/N everywhere.
    let d = l1_loss_dump(&[0.25; 4]);
    let (o, out) = d.replay("Functional.l1_loss.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let quirk = "msprobe quirk: the recorded gradient is the one w.r.t. l1_loss's inner abs output; compared with that gradient";
    assert_eq!(row(&out, "Functional.l1_loss.0.backward.output.0"), ("pass".into(), format!("{quirk}; {RECORDED_GRAD}")));
    // The op's own gradient, sign(x - y) / N, passes without the quirk.
    let d = l1_loss_dump(&[-0.25, 0.25, 0.25, -0.25]);
    let (o, out) = d.replay("Functional.l1_loss.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(row(&out, "Functional.l1_loss.0.backward.output.0"), ("pass".into(), RECORDED_GRAD.into()));
    // Neither: an error against the op's gradient.
    let d = l1_loss_dump(&[0.25, -0.25, -0.25, 0.25]);
    let (o, out) = d.replay("Functional.l1_loss.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(row(&out, "Functional.l1_loss.0.backward.output.0").0, "error");
}

/// `x.to(torch.float32)` of a float32 tensor returns `x` itself: no autograd
/// node of its own, so msprobe records the producing op's gradients for it.
/// They are not judged; the emulated device is, and the row says why.
#[test]
fn a_cast_to_the_same_dtype_does_not_judge_the_gradients_recorded_for_it() {
    let mut d = Dump::new("pytorch");
    let x = d.tensor("Tensor.to.0.forward.input.0", Dt::F32, &[4], &[0.5, -1.0, 2.0, 0.25]);
    let out = d.tensor("Tensor.to.0.forward.output.0", Dt::F32, &[4], &[0.5, -1.0, 2.0, 0.25]);
    let g = d.tensor("Tensor.to.0.backward.input.0", Dt::F32, &[4], &[1.0, 2.0, 3.0, 4.0]);
    // The producing op's gradient (here a softmax's): not this call's.
    let gi = d.tensor("Tensor.to.0.backward.output.0", Dt::F32, &[4], &[0.1, -0.3, 0.05, 0.15]);
    d.call("Tensor.to.0", vec![x, json!({})], json!({}), vec![out], Some((vec![g], vec![gi])));
    let (o, out) = d.replay("Tensor.to.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let why = format!("{}tested: emulated device in the dumped dtypes (msprobe quirk: a cast to the input's own dtype returns the input itself, so the dump's gradients are those of the op that produced it); bench: float64 recompute on the CPU", bound_rule(32));
    assert_eq!(row(&out, "Tensor.to.0.backward.output.0"), ("pass".into(), why));
}

#[test]
fn data_movement_with_the_same_values_in_another_order_is_a_warning() {
    let mut d = Dump::new("mindspore");
    let x = d.tensor("Mint.split.0.forward.input.0", Dt::F32, &[2, 4], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let o0 = d.tensor("Mint.split.0.forward.output.0", Dt::F32, &[2, 2], &[1.0, 2.0, 5.0, 6.0]);
    let o1 = d.tensor("Mint.split.0.forward.output.1", Dt::F32, &[2, 2], &[3.0, 4.0, 7.0, 8.0]);
    let g0 = d.tensor("Mint.split.0.backward.input.0", Dt::F32, &[2, 2], &[0.5, 0.25, 0.125, 1.0]);
    // The second gradient as its transposed memory: [[a, b], [c, d]] stored as a, c, b, d.
    let g1 = d.tensor("Mint.split.0.backward.input.1", Dt::F32, &[2, 2], &[2.0, 8.0, 4.0, 16.0]);
    let gi = d.tensor("Mint.split.0.backward.output.0", Dt::F32, &[2, 4], &[0.5, 0.25, 2.0, 4.0, 0.125, 1.0, 8.0, 16.0]);
    d.call(
        "Mint.split.0",
        vec![x, json!({"type": "int", "value": 2})],
        json!({"dim": {"type": "int", "value": -1}}),
        vec![o0, o1],
        Some((vec![g0, g1], vec![gi])),
    );
    let (o, out) = d.replay("Mint.split.0", "backward", &["--standard", "api"]);
    assert_eq!(o.status.code(), Some(0), "a warning is not a failure: {}", text(&o));
    let layout = "same values in another order: a tensor dumped in another memory layout (msprobe quirk, seen with non-contiguous MindSpore tensors) or a device layout bug; compared as sorted values";
    assert_eq!(row(&out, "Mint.split.0.backward.output.0"), ("warning".into(), format!("{layout}; {RECORDED_GRAD}")));
    assert_eq!(row(&out, "Mint.split.0.forward.output.1"), ("pass".into(), RECORDED.into()));
}

/// `x` rounded to bfloat16 (nearest, ties to even), as f64.
fn bf16(x: f64) -> f64 {
    let bits = (x as f32).to_bits();
    let rounded = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff_0000;
    f64::from(f32::from_bits(rounded))
}

#[test]
fn a_call_under_autocast_is_replayed_on_its_cast_inputs() {
    // float32 inputs that bfloat16 cannot hold; the recorded bfloat16 output
    // is what autocast computed: the product of the inputs cast to bfloat16.
    let x = [1.00390625, 2.0078125, -3.01171875, 0.50390625, 1.75, -0.99609375];
    let w = [0.2001953125, -1.00390625, 0.30078125, 2.00390625, 0.125, 1.0];
    let y: Vec<f64> = (0..2).flat_map(|i| (0..2).map(move |j| (0..3).map(|k| bf16(x[i * 3 + k]) * bf16(w[j * 3 + k])).sum::<f64>())).map(bf16).collect();
    let mut d = Dump::new("pytorch");
    let a = d.tensor("Functional.linear.0.forward.input.0", Dt::F32, &[2, 3], &x);
    let b = d.tensor("Functional.linear.0.forward.input.1", Dt::F32, &[2, 3], &w);
    let out = d.tensor("Functional.linear.0.forward.output.0", Dt::BF16, &[2, 2], &y);
    d.call("Functional.linear.0", vec![a, b], json!({}), vec![out], None);
    let (o, out) = d.replay("Functional.linear.0", "forward", &["--standard", "api"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let quirk =
        "msprobe quirk: the call ran under autocast (inputs dumped as torch.float32, output torch.bfloat16); replayed on the inputs cast to torch.bfloat16";
    assert_eq!(row(&out, "Functional.linear.0.forward.output.0"), ("pass".into(), format!("{quirk}; {RECORDED}")));
}

/// A `.pt` whose pickle would call `os.system`: the reader refuses it, the
/// command never calls it, and the run is an input error naming the file.
#[test]
fn a_hostile_pickle_is_refused_as_an_input_error() {
    let mut d = Dump::new("pytorch");
    let a = d.tensor("Torch.mul.0.forward.input.0", Dt::F32, &[2], &[1.0, 2.0]);
    let b = d.tensor("Torch.mul.0.forward.input.1", Dt::F32, &[2], &[3.0, 4.0]);
    let out = d.tensor("Torch.mul.0.forward.output.0", Dt::F32, &[2], &[3.0, 8.0]);
    let evil = d.file("Torch.mul.0.forward.input.0.pt");
    let make = "import sys, zipfile\n\
                with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
                \x20   z.writestr('archive/data.pkl', b'cposix\\nsystem\\n(Vtouch PWNED\\ntR.')\n\
                \x20   z.writestr('archive/version', b'3\\n')\n";
    let python = std::env::var_os("MSPROBE_PYTHON").expect("MSPROBE_PYTHON (scripts/test.sh sets it)");
    let made = Command::new(python).arg("-c").arg(make).arg(&evil).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let mut a = a;
    a["data_name"] = json!("Torch.mul.0.forward.input.0.pt");
    d.call("Torch.mul.0", vec![a, b], json!({}), vec![out], None);
    let (o, out) = d.replay("Torch.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("msprobe: error: Torch.mul.0: {}: ", evil.display())), "{stderr}");
    assert!(!out.exists() && !d.path().join("PWNED").exists());
}

#[test]
fn a_missing_input_file_is_an_input_error_naming_it() {
    let d = mul_dump(&[0.5, 1.0, 1.5, 2.0]);
    let file = d.file("Mint.mul.0.forward.input.1.npy");
    std::fs::remove_file(&file).unwrap();
    let (o, out) = d.replay("Mint.mul.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.trim_end(), format!("msprobe: error: Mint.mul.0: {}: cannot read: No such file or directory (os error 2)", file.display()));
    assert!(!out.exists());
}

/// `Mint.mul` backward of [1, 2, 3, 4] × 0.5 with a gradient of ones: the
/// recorded input gradients are `grad0` and `grad1`.
fn mul_backward_dump(grad0: &[f64], grad1: &[f64]) -> Dump {
    let mut d = Dump::new("mindspore");
    let a = d.tensor("Mint.mul.0.forward.input.0", Dt::F32, &[4], &[1.0, 2.0, 3.0, 4.0]);
    let b = d.tensor("Mint.mul.0.forward.input.1", Dt::F32, &[4], &[0.5; 4]);
    let out = d.tensor("Mint.mul.0.forward.output.0", Dt::F32, &[4], &[0.5, 1.0, 1.5, 2.0]);
    let g = d.tensor("Mint.mul.0.backward.input.0", Dt::F32, &[4], &[1.0; 4]);
    let g0 = d.tensor("Mint.mul.0.backward.output.0", Dt::F32, &[4], grad0);
    let g1 = d.tensor("Mint.mul.0.backward.output.1", Dt::F32, &[4], grad1);
    d.call("Mint.mul.0", vec![a, b], json!({}), vec![out], Some((vec![g], vec![g0, g1])));
    d
}

#[test]
fn one_missing_gradient_file_leaves_the_others_recorded() {
    // Gradient 0 should be 0.5 everywhere: a planted sign flip.
    let d = mul_backward_dump(&[-0.5; 4], &[1.0, 2.0, 3.0, 4.0]);
    let file = d.file("Mint.mul.0.backward.output.1.npy");
    std::fs::remove_file(&file).unwrap();
    let (o, out) = d.replay("Mint.mul.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let (status, message) = row(&out, "Mint.mul.0.backward.output.0");
    assert_eq!(status, "error");
    assert!(message.starts_with("cosine similarity -1 is not above the threshold 0.99") && message.ends_with(RECORDED_GRAD), "{message}");
    let emulated = format!(
        "{}tested: emulated device in the dumped dtypes (no recorded gradient: {} is missing); bench: float64 recompute on the CPU",
        bound_rule(16),
        file.display()
    );
    assert_eq!(row(&out, "Mint.mul.0.backward.output.1"), ("pass".into(), emulated));
}

#[test]
fn a_transpose_that_did_not_transpose_is_an_error_not_a_layout_quirk() {
    let mut d = Dump::new("mindspore");
    let x = d.tensor("Tensor.transpose.0.forward.input.0", Dt::F32, &[2, 4], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    // The input's memory read as [4, 2]: the same values, not transposed.
    let out = d.tensor("Tensor.transpose.0.forward.output.0", Dt::F32, &[4, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let int = |v: i64| json!({"type": "int", "value": v});
    // MindSpore's Tensor.transpose takes the permutation.
    d.call("Tensor.transpose.0", vec![x, int(1), int(0)], json!({}), vec![out], None);
    for standard in ["msprobe", "api"] {
        let (o, out) = d.replay("Tensor.transpose.0", "forward", &["--standard", standard]);
        assert_eq!(o.status.code(), Some(3), "{standard}: {}", text(&o));
        let (status, message) = row(&out, "Tensor.transpose.0.forward.output.0");
        assert_eq!(status, "error", "{standard}");
        assert!(message.starts_with("binary equality: 6 of 8 elements differ") && message.ends_with(RECORDED), "{message}");
    }
}

#[test]
fn an_emulated_tested_side_says_it_is_its_own_reference() {
    let d = mul_backward_dump(&[0.5; 4], &[1.0, 2.0, 3.0, 4.0]);
    let (o, out) = d.replay("Mint.mul.0", "backward", &["--standard", "api", "--emulate"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let message = "the reference run is the tested run itself, so this rule cannot fail here; \
                   tested: emulated device in the dumped dtypes (emulation requested); bench: float64 recompute on the CPU";
    assert_eq!(row(&out, "Mint.mul.0.backward.output.0"), ("pass".into(), message.into()));
}

#[test]
fn a_correct_cast_to_bfloat16_fails_msprobe_rule_and_passes_the_api_and_default_standards() {
    let x = [0.1, -1.3, 2.7, 1000.1];
    let mut d = Dump::new("pytorch");
    let a = d.tensor("Tensor.to.0.forward.input.0", Dt::F32, &[4], &x);
    let out = d.tensor("Tensor.to.0.forward.output.0", Dt::BF16, &[4], &x.map(bf16));
    d.call("Tensor.to.0", vec![a, json!({"type": "torch.dtype", "value": "torch.bfloat16"})], json!({}), vec![out], None);
    // The bench keeps float64: a correct rounding to bfloat16 is 0.1 off at 1000.1.
    let (o, out) = d.replay("Tensor.to.0", "forward", &["--standard", "msprobe"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let (status, message) = row(&out, "Tensor.to.0.forward.output.0");
    assert_eq!(status, "error");
    assert!(message.starts_with("max absolute error 0.0999756 is not below the threshold 0.0001") && message.ends_with(RECORDED), "{message}");
    let (o, out) = d.replay("Tensor.to.0", "forward", &["--standard", "api"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(row(&out, "Tensor.to.0.forward.output.0"), ("pass".into(), RECORDED.into()));
    // The default standard counts elements within bfloat16's rounding bound as exact, and says so.
    let (o, out) = d.replay("Tensor.to.0", "forward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (status, message) = row(&out, "Tensor.to.0.forward.output.0");
    assert_eq!(status, "pass");
    assert!(
        message.starts_with("4 elements within the rounding bound counted as exact")
            && message.contains("msprobe's thresholds alone: error")
            && message.ends_with(RECORDED),
        "{message}"
    );
}

/// A call whose gradients are emulated (their rounding magnitudes are
/// computed) and whose recorded output fails msprobe's thresholds: the
/// bound's run for the gradients skips linear's forward, and the output's
/// magnitudes are computed when the row fails, so the default standard
/// still counts its correctly rounded elements as exact.
#[test]
fn a_recorded_output_beside_emulated_gradients_is_still_rescued_by_its_bound() {
    let (x, w) = ([31.0, 29.0, 27.0, 25.0, 23.0, 21.0], [13.0, 11.0, 7.0, 5.0, 3.0, 2.0, 17.0, 19.0, 23.0, 29.0, 31.0, 37.0]);
    // Exact products (at most 2797) rounded once to bfloat16: up to 7 off.
    let y: Vec<f64> = (0..8).map(|o| bf16((0..3).map(|k| x[o / 4 * 3 + k] * w[o % 4 * 3 + k]).sum())).collect();
    let mut d = Dump::new("pytorch");
    let a = d.tensor("Functional.linear.0.forward.input.0", Dt::BF16, &[2, 3], &x);
    let b = d.tensor("Functional.linear.0.forward.input.1", Dt::BF16, &[4, 3], &w);
    let out = d.tensor("Functional.linear.0.forward.output.0", Dt::BF16, &[2, 4], &y);
    let g = d.tensor("Functional.linear.0.backward.input.0", Dt::BF16, &[2, 4], &[1.0, -0.5, 0.25, 2.0, 0.75, 1.5, -1.0, 0.5]);
    let g0 = d.tensor("Functional.linear.0.backward.output.0", Dt::BF16, &[2, 3], &[0.0; 6]);
    let g1 = d.tensor("Functional.linear.0.backward.output.1", Dt::BF16, &[4, 3], &[0.0; 12]);
    d.call("Functional.linear.0", vec![a, b], json!({}), vec![out], Some((vec![g], vec![g0, g1])));
    for file in ["Functional.linear.0.backward.output.0.npy", "Functional.linear.0.backward.output.1.npy"] {
        std::fs::remove_file(d.file(file)).unwrap();
    }
    let (o, out) = d.replay("Functional.linear.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (status, message) = row(&out, "Functional.linear.0.forward.output.0");
    assert_eq!(status, "pass", "{message}");
    assert!(
        message.starts_with("6 elements within the rounding bound counted as exact")
            && message.contains("msprobe's thresholds alone: error")
            && message.ends_with(RECORDED),
        "{message}"
    );
    assert_eq!(row(&out, "Functional.linear.0.backward.output.1").0, "pass");
}

#[test]
fn without_its_recorded_output_a_dropout_gradient_is_emulated() {
    let x = [1.0, -2.0, 0.5, 3.0];
    let d = dropout_dump(&x, &[1.25, 0.0, 0.625, 3.75], &[1.25, 0.0, 1.25, 1.25]);
    let file = d.file("Functional.dropout.0.forward.output.0.npy");
    std::fs::remove_file(&file).unwrap();
    let (o, out) = d.replay("Functional.dropout.0", "backward", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let message = format!(
        "{}tested: emulated device in the dumped dtypes (a random op's mask is unknown without its recorded output); bench: float64 recompute on the CPU",
        bound_rule(64)
    );
    assert_eq!(row(&out, "Functional.dropout.0.backward.output.0"), ("pass".into(), message));
}

/// An op that allocates from its integer arguments (`ones(2**31, 2**31)`)
/// is refused before allocating: a skip row naming the shape and limit.
#[test]
fn an_op_creating_a_huge_tensor_is_refused_before_allocating() {
    let mut d = Dump::new("pytorch");
    let int = |v: i64| json!({"type": "int", "value": v});
    let out = json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 2], "Max": 1.0, "Min": 1.0, "requires_grad": false});
    d.call("Torch.ones.0", vec![int(1 << 31), int(1 << 31)], json!({}), vec![out], None);
    let dump = d.write();
    let batch = d.path().join("batch");
    let args = ["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "--output-dir", batch.to_str().unwrap(), "--tensor-size-limit", "1G"];
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let (status, message) = row(&batch, "Torch.ones.0.forward");
    assert_eq!(status, "skip");
    assert_eq!(message, "cannot replay here: a result of shape [2147483648, 2147483648] is over the tensor size limit (134217728 elements)");
}
