//! Which call moved the loss, end to end with the real msprobe 8.3.2 and
//! 26.2.0 on the CPU: tests/loss_effect/tiny_gpt.py dumps one training step
//! of a small bfloat16 GPT (315 calls; tensor, L1, forward and backward) as it is
//! (`clean`) and with three calls made wrong inside the call (`faulty`:
//! msprobe records their true inputs and wrong outputs, and every later
//! call consumes the wrong values); it also reruns the step with each
//! call's output put back to its float64 value (exact patching, and the
//! step's rounding noise), and runs msprobe 26.2.0's (and 8.3.2's) own
//! compare of faulty against clean. Checked here:
//! - `replay --dump` ranks the three planted calls first by |Loss Effect|,
//!   each within a factor of 2 of its exact change and of its sign, and the
//!   effects agree with exact patching in rank (Spearman >= 0.8) over the
//!   calls whose exact change is above the noise;
//! - on the clean dump no row judged on the device's values is an error,
//!   and every effect is within the noise;
//! - `replay --from-compare` on compare's CSV and xlsx names exactly the
//!   planted calls as own errors (exit 3), every other differing call as
//!   inherited from a planted call.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Runs tiny_gpt.py with `args` (msprobe on PYTHONPATH when given); its stdout, after success.
fn tiny_gpt(args: &[&str], pythonpath: Option<&str>) -> String {
    let script = common::repo().join("tests/loss_effect/tiny_gpt.py");
    let mut cmd = Command::new(common::python());
    cmd.arg(&script).args(args).env("PYTHONDONTWRITEBYTECODE", "1").env("PYTHONHASHSEED", "0").env_remove("PYTHONPATH");
    if let Some(p) = pythonpath {
        cmd.env("PYTHONPATH", p);
    }
    let o = cmd.output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "tiny_gpt.py {args:?} failed ({:?})\nstdout:\n{out}\nstderr:\n{err}", o.status);
    out
}

/// `msprobe -f pytorch replay` with `args` in `dir`: (exit code, stdout + stderr).
fn replay(dir: &Path, args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(["-f", "pytorch", "replay"]).args(args).current_dir(dir).output().unwrap();
    (o.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

/// The records of the one CSV in `dir` whose name starts with `prefix`, header first.
fn table(dir: &Path, prefix: &str) -> Vec<Vec<String>> {
    let files: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix)).collect();
    assert_eq!(files.len(), 1, "{prefix} in {}: {files:?}", dir.display());
    common::csv_file_records(&files[0])
}

/// Each call's loss effect (the sum over its forward outputs' `Loss Effect`), and whether a row judged on the device's values is an error.
fn effects(dir: &Path) -> (HashMap<String, f64>, Vec<String>) {
    let rows = table(dir, "accuracy_checking_details_");
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap_or_else(|| panic!("no {name} column: {:?}", rows[0]));
    let (effect, status, message) = (col("Loss Effect"), col("Status"), col("Message"));
    let mut by_call: HashMap<String, f64> = HashMap::new();
    let mut device_errors = vec![];
    for r in &rows[1..] {
        if let (Some((call, _)), Ok(e)) = (r[0].split_once(".forward.output."), r[effect].parse::<f64>()) {
            *by_call.entry(call.to_string()).or_default() += e;
        }
        if r[status] == "error" && r[message].contains("recorded in the dump") {
            device_errors.push(r[0].clone());
        }
    }
    (by_call, device_errors)
}

/// Ranks with ties averaged.
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        for k in i..=j {
            r[order[k]] = (i + j) as f64 / 2.0;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation.
fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (ma, mb) = (mean(&ra), mean(&rb));
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let sd = |v: &[f64], m: f64| v.iter().map(|x| (x - m) * (x - m)).sum::<f64>().sqrt();
    cov / (sd(&ra, ma) * sd(&rb, mb))
}

#[test]
fn spearman_of_known_orders() {
    assert!((spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]) - 1.0).abs() < 1e-12);
    assert!((spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
    assert!((spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]) - 0.8).abs() < 1e-12);
    assert_eq!(ranks(&[5.0, 1.0, 5.0]), [1.5, 0.0, 1.5]);
}

#[test]
fn loss_effects_find_the_planted_calls_and_compare_rows_split_into_own_and_inherited() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let p832 = common::msprobe_832().display().to_string();
    let p26 = common::msprobe_26();
    let mut dumps: HashMap<(&str, &str), String> = HashMap::new();
    for (version, path) in [("8.3.2", p832.as_str()), ("26.2.0", p26.as_str())] {
        for variant in ["faulty", "clean"] {
            let out = w.join(format!("{version}-{variant}"));
            let stdout = tiny_gpt(&["dump", "--variant", variant, "--out", out.to_str().unwrap()], Some(path));
            dumps.insert((version, variant), stdout.lines().last().unwrap().trim().to_string());
        }
    }
    // The step's size: 300 to 600 forward calls (each with its backward entry).
    for ((version, variant), dump) in &dumps {
        let data: Value = serde_json::from_str(&std::fs::read_to_string(dump).unwrap()).unwrap();
        let entries = data["data"].as_object().unwrap();
        let forward = entries.keys().filter(|k| k.ends_with(".forward")).count();
        assert!((300..=600).contains(&forward) && entries.len() == 2 * forward, "{version} {variant}: {forward} forward calls of {} entries", entries.len());
    }
    // Exact patching (the step rerun without msprobe; the dumps' tensors are the same under both versions).
    let patch = |variant: &str| -> Value {
        let out = w.join(format!("patch_{variant}.json"));
        tiny_gpt(&["patch", "--variant", variant, "--dump", &dumps[&("26.2.0", variant)], "--out", out.to_str().unwrap()], None);
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
    };
    let (faulty, clean) = (patch("faulty"), patch("clean"));
    let noise = clean["noise"].as_f64().unwrap();
    assert!(noise > 0.0, "the step's rounding noise: {noise}");
    let planted: Vec<String> = faulty["planted"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
    assert_eq!(planted.len(), 3);
    // -C: the loss change the call's own error made (exact patching removes it).
    let exact: HashMap<String, f64> = faulty["changes"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), -v.as_f64().unwrap())).collect();

    for version in ["8.3.2", "26.2.0"] {
        let out = w.join(format!("replay-{version}-faulty"));
        let (code, text) = replay(w, &["--dump", &dumps[&(version, "faulty")], "--data-mode", "real_data", "-o", out.to_str().unwrap(), "-q"]);
        assert_eq!(code, 3, "{version}: {text}");
        let (effect, _) = effects(&out);
        let mut by_size: Vec<(&String, f64)> = effect.iter().map(|(k, &v)| (k, v)).collect();
        by_size.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
        let mut top: Vec<&str> = by_size[..3].iter().map(|(k, _)| k.as_str()).collect();
        top.sort_unstable();
        let mut want: Vec<&str> = planted.iter().map(String::as_str).collect();
        want.sort_unstable();
        assert_eq!(top, want, "{version}: the top three by |effect|: {:?}", &by_size[..6]);
        for p in &planted {
            let (e, c) = (effect[p], exact[p]);
            assert!(e.signum() == c.signum() && (0.5..=2.0).contains(&(e / c)), "{version}: {p}: effect {e} against the exact change {c}");
            eprintln!("{version}: {p}: effect {e:+.4} against the exact change {c:+.4} (noise {noise:.3})");
        }
        let above: Vec<(&String, f64)> = exact.iter().filter(|(_, c)| c.abs() > noise).map(|(k, &c)| (k, c)).collect();
        assert!(above.len() >= 3, "{version}: calls above the noise {noise}: {above:?}");
        let (es, cs): (Vec<f64>, Vec<f64>) = above.iter().map(|(k, c)| (effect.get(*k).copied().unwrap_or(0.0), *c)).unzip();
        let rho = spearman(&es, &cs);
        assert!(rho >= 0.8, "{version}: Spearman {rho} over {above:?} (effects {es:?})");
        eprintln!("{version}: Spearman {rho} over {} calls above the noise; next |effect| after the plants {:?}", above.len(), by_size[3]);

        let out = w.join(format!("replay-{version}-clean"));
        let (code, text) = replay(w, &["--dump", &dumps[&(version, "clean")], "--data-mode", "real_data", "-o", out.to_str().unwrap(), "-q"]);
        let (effect, device_errors) = effects(&out);
        assert_eq!(device_errors, Vec::<String>::new(), "{version}: the clean dump has no own error ({code}): {text}");
        let worst = effect.iter().max_by(|a, b| a.1.abs().total_cmp(&b.1.abs())).unwrap();
        assert!(worst.1.abs() <= noise, "{version}: clean effect {worst:?} beyond the noise {noise}");
        eprintln!("{version}: clean: largest |effect| {worst:?}");
    }

    // msprobe compare of faulty against clean: 26.2.0's CSV and xlsx, 8.3.2's xlsx.
    let mut tables = vec![];
    for (version, path) in [("26.2.0", p26.as_str()), ("8.3.2", p832.as_str())] {
        let out = w.join(format!("compare-{version}"));
        let stdout =
            tiny_gpt(&["compare", "--npu", &dumps[&(version, "faulty")], "--bench", &dumps[&(version, "clean")], "--out", out.to_str().unwrap()], Some(path));
        for line in stdout.lines().map(str::trim).filter(|l| l.ends_with(".csv") || l.ends_with(".xlsx")) {
            tables.push((version, line.to_string()));
        }
    }
    let kinds: Vec<String> = tables.iter().map(|(v, t)| format!("{v} {}", Path::new(t).extension().unwrap().to_string_lossy())).collect();
    assert_eq!(kinds, ["26.2.0 csv", "26.2.0 xlsx", "8.3.2 xlsx"]);
    for (i, (version, file)) in tables.iter().enumerate() {
        culprits_are_the_planted_calls(&w.join(format!("blame-{i}")), &dumps[&(*version, "faulty")], file, &planted);
    }
}

/// `replay --from-compare FILE --dump DUMP` into `out`: exit 3, the planted
/// calls the own errors, every other differing call inherited from one.
fn culprits_are_the_planted_calls(out: &Path, dump: &str, file: &str, planted: &[String]) {
    let (code, text) = replay(out.parent().unwrap(), &["--dump", dump, "--data-mode", "real_data", "--from-compare", file, "-o", out.to_str().unwrap(), "-q"]);
    assert_eq!(code, 3, "{file}: {text}");
    let rows = table(out, "replay_culprits_");
    assert_eq!(rows[0], ["API Name", "Blame", "Upstream Own Error", "Loss Effect", "Compare Rows", "Compare Metrics", "Replay Verdict"]);
    let mut own: Vec<&str> = rows[1..].iter().filter(|r| r[1] == "own error").map(|r| r[0].as_str()).collect();
    own.sort_unstable();
    let mut want: Vec<&str> = planted.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(own, want, "{file}: own errors\n{text}");
    let others: Vec<&Vec<String>> = rows[1..].iter().filter(|r| r[1] != "own error").collect();
    assert!(!others.is_empty(), "{file}: compare flags calls downstream of the planted ones");
    for r in others {
        assert_eq!(r[1], "inherited", "{file}: {r:?}");
        assert!(planted.iter().any(|p| r[2].starts_with(&format!("{p} ("))), "{file}: {r:?} points at a planted call upstream");
    }
    assert!(text.contains(" differing calls: 3 own error, "), "{file}: {text}");
}

/// A table that is not compare's result is refused in one line naming the
/// file and what was expected, exit 4, and nothing is written.
#[test]
fn a_table_that_is_not_a_compare_result_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dump = common::repo().join("tests/fixtures/levelmix/8.3.2/small_transformer/tensor/dump.json");
    std::fs::write(dir.path().join("t.csv"), "API Name,Cosine\nTorch.add.0,1.0\n").unwrap();
    std::fs::write(dir.path().join("t.xlsx"), "not a zip").unwrap();
    for (file, expected) in [
        ("t.csv", "msprobe: error: t.csv: expected msprobe compare's result table with an \"NPU Name\" column; the header is [\"API Name\", \"Cosine\"]"),
        ("t.xlsx", "msprobe: error: t.xlsx: expected an .xlsx workbook (a zip): "),
    ] {
        let (code, text) = replay(dir.path(), &["--dump", dump.to_str().unwrap(), "--from-compare", file, "-o", "out"]);
        assert_eq!(code, 4, "{text}");
        assert!(text.starts_with(expected) && text.lines().count() == 1, "{text}");
        assert!(!dir.path().join("out").exists(), "nothing written: {text}");
    }
    let (code, text) = replay(dir.path(), &["--from-compare", "t.csv"]);
    assert_eq!(code, 2, "--from-compare needs --dump: {text}");
}
