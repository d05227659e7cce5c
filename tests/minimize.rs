//! `replay --minimize` end to end: failing calls of planted tensor dumps
//! shrunk to their smallest failing windows and written as repros.
//!
//! - A real msprobe 26.2.0 dump of one training step at real sizes
//!   (tests/minimize/step.py: a transformer block and a convolutional block,
//!   calls of 10^5 to 10^6 input elements) planted three ways by
//!   tests/minimize/plant.py (errors spread over outputs, confined to one
//!   slice of outputs, confined to one slice of input gradients): every
//!   planted call is an `error`, >= 90 % of them end at <= 1 % of their input
//!   elements within the replay budget, each repro replays to `error` from
//!   its own config, op_generate regenerates its script byte for byte, the
//!   script run with torch judges the recorded slice an `error`, and the
//!   slicing rules agree with torch (tests/minimize/check_slices.py). The
//!   clean dump has no error judged on recorded values, so nothing is
//!   minimized.
//! - torch_npu's fused kernels at real sizes (tests/minimize/npu_step.py,
//!   Megatron's causal fusion attention among them) planted the same three
//!   ways: the distribution, each call smaller or saying why, the causal
//!   attention cut to one head and a prefix of its queries and keys, and
//!   the slicing rules (heads, causal prefixes) agreeing with the torch
//!   compositions.
//! - The small planted fixtures (NPU, MSAdapter, two zoo dumps): the
//!   distribution of what is left, each call smaller or saying why not,
//!   and the slicing rules of their classes (pooling, embedding, addmm,
//!   baddbmm, in-place forms, torch_npu's fused kernels) agree with torch.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// `msprobe -f FRAMEWORK ARGS` in `dir`: (exit code, stdout + stderr).
fn msprobe(dir: &Path, framework: &str, args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(["-f", framework]).args(args).current_dir(dir).output().unwrap();
    (o.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

/// Runs a script of tests/minimize with `args` (and `pythonpath`); its stdout, after success.
fn python(script: &str, args: &[&str], pythonpath: Option<&str>) -> String {
    let mut cmd = Command::new(common::python());
    cmd.arg(common::repo().join("tests/minimize").join(script)).args(args).env("PYTHONDONTWRITEBYTECODE", "1").env_remove("PYTHONPATH");
    if let Some(p) = pythonpath {
        cmd.env("PYTHONPATH", p);
    }
    let o = cmd.output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "{script} {args:?} failed ({:?})\nstdout:\n{out}\nstderr:\n{err}", o.status);
    out
}

/// The folder holding the one dump.json under `root`.
fn dump_folder(root: &Path) -> PathBuf {
    let mut found = vec![];
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "dump.json") {
                found.push(dir.clone());
            }
        }
    }
    assert_eq!(found.len(), 1, "dump.json under {}: {found:?}", root.display());
    found.remove(0)
}

/// One call of a minimize table.
#[derive(Debug)]
struct Row {
    api: String,
    direction: String,
    status: String,
    before: f64,
    after: f64,
    replays: u32,
    slices: String,
    message: String,
}

/// The rows of the minimize table in `out`.
fn minimize_table(out: &Path) -> Vec<Row> {
    let files: Vec<PathBuf> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).filter(|p| p.to_string_lossy().contains("minimize_")).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let records = common::csv_file_records(&files[0]);
    assert_eq!(records[0], ["API Name", "Direction", "Status", "Elements Before", "Elements After", "Replays", "Slices", "Repro", "Message"]);
    records[1..]
        .iter()
        .map(|r| Row {
            api: r[0].clone(),
            direction: r[1].clone(),
            status: r[2].clone(),
            before: r[3].parse().unwrap(),
            after: r[4].parse().unwrap(),
            replays: r[5].parse().unwrap(),
            slices: r[6].clone(),
            message: r[8].clone(),
        })
        .collect()
}

/// The calls planted in a planted dump (planted.json).
fn planted(dump: &Path) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dump.join("planted.json")).unwrap()).unwrap();
    v.as_array().unwrap().iter().map(|p| p["call"].as_str().unwrap().to_string()).collect()
}

/// The calls with a row in `out`'s details CSV that is an error judged on recorded device values.
fn error_calls(out: &Path) -> Vec<String> {
    let recorded = |m: &str| m.contains("tested: device") && m.contains(" recorded in the ");
    let mut calls: Vec<String> = common::detail_rows(out)
        .into_iter()
        .filter(|(_, s, m)| s == "error" && recorded(m))
        .map(|(n, _, _)| n.split(".forward").next().unwrap().split(".backward").next().unwrap().to_string())
        .collect();
    calls.sort();
    calls.dedup();
    calls
}

/// The calls of a minimize table, sorted.
fn calls_of(rows: &[Row]) -> Vec<String> {
    let mut calls: Vec<String> = rows.iter().map(|r| r.api.clone()).collect();
    calls.sort();
    calls
}

/// After/before of every row, sorted, as a line of figures.
fn distribution(rows: &[Row]) -> String {
    let mut r: Vec<f64> = rows.iter().map(|r| r.after / r.before).collect();
    r.sort_by(f64::total_cmp);
    let at = |q: f64| r[((r.len() - 1) as f64 * q).round() as usize];
    let within = r.iter().filter(|&&x| x <= 0.01).count();
    let replays = rows.iter().map(|r| r.replays).max().unwrap_or(0);
    format!(
        "{} calls; after/before: min {:.2e}, median {:.2e}, 90th percentile {:.2e}, max {:.2e}; {within} at <= 1%; at most {replays} replays",
        r.len(),
        r[0],
        at(0.5),
        at(0.9),
        r[r.len() - 1]
    )
}

#[test]
fn planted_calls_of_a_real_size_step_shrink_to_a_hundredth_and_stay_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let made = tmp.path().join("made");
    let config = common::repo().join("zoo/make/configs/pt_config_tensor_L1.json");
    python("step.py", &[config.to_str().unwrap(), made.to_str().unwrap()], Some(&common::msprobe_26()));
    let clean = dump_folder(&made);
    let step_ops = r"^(Functional\.(linear|layer_norm|softmax|gelu|conv2d|batch_norm|relu)|Torch\.(matmul|sigmoid)|Tensor\.(__add__|__mul__))\.";
    // A product with a Python number (`scores * scale`) has no recorded gradient that lines up: not planted.
    let elementwise = r"^(Functional\.(gelu|relu|softmax)|Torch\.sigmoid|Tensor\.__add__)\.";
    let plants = [("spread", "forward", step_ops, 1), ("confined", "forward", step_ops, 2), ("confined", "backward", elementwise, 3)];
    let mut all = vec![];
    for (mode, place, matching, seed) in plants {
        let dump = tmp.path().join(format!("{mode}_{place}"));
        let seed = seed.to_string();
        python(
            "plant.py",
            &[clean.to_str().unwrap(), dump.to_str().unwrap(), "--mode", mode, "--where", place, "--match", matching, "--seed", &seed, "--per-op", "3"],
            None,
        );
        let out = tmp.path().join(format!("out_{mode}_{place}"));
        let (code, text) = msprobe(tmp.path(), "pytorch", &["replay", "--dump", dump.to_str().unwrap(), "--minimize", "-o", out.to_str().unwrap(), "-q"]);
        assert_eq!(code, 3, "{text}");
        let rows = minimize_table(&out);
        let planted = planted(&dump);
        assert!(planted.len() >= 5, "{mode} {place}: {planted:?}");
        // Every planted call is an error and is in the table; nothing that passed is.
        let failing = error_calls(&out);
        for call in &planted {
            assert!(failing.contains(call), "{mode} {place}: {call} is not an error\n{text}");
        }
        assert_eq!(calls_of(&rows), failing, "{mode} {place}");
        for r in &rows {
            assert!(r.replays <= 100, "{r:?}");
            assert!(r.status == "minimized" || !r.message.is_empty(), "{r:?}");
            if r.status == "minimized" {
                assert!(r.after < r.before && r.slices.contains("output[0]["), "{r:?}");
            }
        }
        eprintln!("{mode} {place}: {}", distribution(&rows));
        if mode == "spread" {
            let agree = python("check_slices.py", &[dump.to_str().unwrap(), out.to_str().unwrap()], None);
            eprintln!("{}", agree.lines().last().unwrap());
        }
        repros_fail(&out, &rows, tmp.path());
        all.extend(rows.into_iter().filter(|r| planted.contains(&r.api)));
    }
    let within = all.iter().filter(|r| r.after / r.before <= 0.01).count();
    eprintln!("all planted calls: {}", distribution(&all));
    assert!(within * 10 >= all.len() * 9, "{within} of {} at <= 1%: {all:#?}", all.len());

    // The clean step: no failing call, nothing minimized.
    let out = tmp.path().join("out_clean");
    let (_, text) = msprobe(tmp.path(), "pytorch", &["replay", "--dump", clean.to_str().unwrap(), "--minimize", "-o", out.to_str().unwrap(), "-q"]);
    assert!(error_calls(&out).is_empty() && minimize_table(&out).is_empty() && !out.join("minimized").exists(), "{text}");
    assert!(text.contains("0 failing calls: 0 minimized, 0 kept their size"), "{text}");
}

/// Each minimized call of `rows` replays to `error` from its own config,
/// op_generate regenerates its script unchanged, and (for one call per
/// direction) the script run with torch judges the recorded slice an error.
fn repros_fail(out: &Path, rows: &[Row], tmp: &Path) {
    let mut scripts_run = vec![];
    for r in rows.iter().filter(|r| r.status == "minimized") {
        let folder = out.join("minimized").join(&r.api);
        let config = folder.join("config_op.json");
        let again = tmp.join("again");
        let (code, text) = msprobe(tmp, "pytorch", &["replay", "-i", config.to_str().unwrap(), "-o", again.to_str().unwrap()]);
        assert_eq!(code, 3, "{}: {text}", r.api);
        let _ = std::fs::remove_dir_all(&again);
        let (code, text) = msprobe(tmp, "pytorch", &["op_generate", "-i", config.to_str().unwrap(), "-o", folder.to_str().unwrap(), "--check"]);
        assert_eq!(code, 0, "{}: {text}", r.api);
        if !scripts_run.contains(&r.direction) {
            scripts_run.push(r.direction.clone());
            let script = folder.join(format!("{}.{}.py", r.api, r.direction));
            let o = Command::new(common::python()).arg(&script).args(["--tested", "recorded"]).current_dir(&folder).output().unwrap();
            let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            let rows = common::detail_rows(&folder.join("op_result_output"));
            assert!(rows.iter().any(|(_, s, _)| s == "error"), "{}: the script judged no error\n{text}\n{rows:?}", r.api);
        }
    }
}

#[test]
fn small_planted_fixtures_shrink_each_failing_call_or_say_why() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = common::repo();
    let mut dumps: Vec<(String, &str, PathBuf)> = vec![("npu".into(), "pytorch", repo.join("tests/fixtures/npu/planted"))];
    let copies = [
        ("mindtorch mlp", "mindspore", "tests/fixtures/mindtorch/mlp/26.2.0/tensor", "spread"),
        ("zoo gpt2_block", "pytorch", "tests/fixtures/zoo/pytorch/gpt2_block/tensor", "spread"),
        ("zoo cnn_resnet_vgg", "pytorch", "tests/fixtures/zoo/pytorch/cnn_resnet_vgg/tensor", "confined"),
    ];
    for (name, framework, src, mode) in copies {
        let dst = tmp.path().join(name.replace(' ', "_"));
        python("plant.py", &[repo.join(src).to_str().unwrap(), dst.to_str().unwrap(), "--mode", mode, "--per-op", "1"], None);
        dumps.push((name.into(), framework, dst));
    }
    for (name, framework, dump) in dumps {
        let out = tmp.path().join(format!("out_{}", name.replace(' ', "_")));
        let (code, text) = msprobe(tmp.path(), framework, &["replay", "--dump", dump.to_str().unwrap(), "--minimize", "-o", out.to_str().unwrap(), "-q"]);
        assert_eq!(code, 3, "{name}: {text}");
        let rows = minimize_table(&out);
        assert_eq!(calls_of(&rows), error_calls(&out), "{name}");
        for r in &rows {
            assert!(r.replays <= 100, "{name}: {r:?}");
            assert!(r.status == "minimized" && r.after < r.before || r.status == "kept size" && r.after == r.before && !r.message.is_empty(), "{name}: {r:?}");
        }
        let kept: Vec<String> = rows.iter().filter(|r| r.status != "minimized").map(|r| format!("{} ({})", r.api, r.message)).collect();
        eprintln!("{name}: {}; kept their size: {kept:?}", distribution(&rows));
        let agree = python("check_slices.py", &[dump.to_str().unwrap(), out.to_str().unwrap()], None);
        eprintln!("{name}: {}", agree.lines().last().unwrap());
    }
}

#[test]
fn fused_npu_kernels_at_real_sizes_shrink_by_batch_heads_and_causal_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let clean = tmp.path().join("npu");
    python("npu_step.py", &[clean.to_str().unwrap()], None);
    let mut all = vec![];
    for (mode, place, seed) in [("spread", "forward", "1"), ("confined", "forward", "5"), ("confined", "backward", "6")] {
        let dump = tmp.path().join(format!("{mode}_{place}"));
        python("plant.py", &[clean.to_str().unwrap(), dump.to_str().unwrap(), "--mode", mode, "--where", place, "--seed", seed, "--per-op", "3"], None);
        let out = tmp.path().join(format!("out_{mode}_{place}"));
        let (code, text) = msprobe(tmp.path(), "pytorch", &["replay", "--dump", dump.to_str().unwrap(), "--minimize", "-o", out.to_str().unwrap(), "-q"]);
        assert_eq!(code, 3, "{text}");
        let rows = minimize_table(&out);
        assert_eq!(calls_of(&rows), error_calls(&out), "{mode} {place}");
        let mut planted = planted(&dump);
        planted.sort();
        assert_eq!(calls_of(&rows), planted, "{mode} {place}");
        for r in &rows {
            assert!(r.replays <= 100 && (r.status == "minimized" && r.after < r.before || r.status == "kept size" && !r.message.is_empty()), "{r:?}");
        }
        eprintln!("npu {mode} {place}: {}", distribution(&rows));
        let agree = python("check_slices.py", &[dump.to_str().unwrap(), out.to_str().unwrap()], None);
        eprintln!("npu {mode} {place}: {}", agree.lines().last().unwrap());
        if (mode, place) == ("spread", "forward") {
            // Megatron's causal call: one head of six and the first query, with the first key.
            let causal = rows.iter().find(|r| r.api == "NPU.npu_fusion_attention.0").unwrap();
            assert!(causal.slices.starts_with("query[0:1, 0:1, 0:128] key[0:1, 0:1, 0:128] value[0:1, 0:1, 0:128] atten_mask[:, :, 0:1, 0:1]"), "{causal:?}");
            let config = out.join("minimized/NPU.npu_fusion_attention.0/dump.json");
            let dump: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(config).unwrap()).unwrap();
            assert_eq!(dump["data"]["NPU.npu_fusion_attention.0.forward"]["input_args"][3], serde_json::json!({"type": "int", "value": 1}));
            repros_fail(&out, &rows, tmp.path());
        }
        all.extend(rows);
    }
    eprintln!("npu, all planted calls: {}", distribution(&all));
}
