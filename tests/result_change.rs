//! `result_change` end to end with real torch ($MSPROBE_PYTHON): the
//! training scripts of tests/result_change/ (with msprobe_rs.ResultChange
//! from `python/` on PYTHONPATH) run by the binary, variant by variant;
//! exact verdicts (one process, and two ranks under torchrun), the
//! training's output streamed while it runs, and the exact one-line errors
//! and exit codes of a crashing script, a missing `record` call and a
//! command that does not exist, with nothing written.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

fn script(name: &str) -> PathBuf {
    common::repo().join("tests/result_change").join(name)
}

/// `msprobe -f pytorch result_change -o OUT [extra] -- command...` in a
/// fresh folder (OUT is `out` in it).
fn result_change(dir: &Path, extra: &[&str], command: &[&str]) -> Output {
    result_change_of("pytorch", dir, extra, command)
}

/// [`result_change`] with `-f framework`.
fn result_change_of(framework: &str, dir: &Path, extra: &[&str], command: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_msprobe"));
    cmd.args(["-f", framework, "result_change", "-o", "out"]).args(extra).arg("--").args(command);
    cmd.current_dir(dir).env("PYTHONPATH", common::repo().join("python")).env("PYTHONDONTWRITEBYTECODE", "1").env_remove("MSPROBE_RC_DIR");
    cmd.output().unwrap()
}

/// Runs a script of tests/result_change/ with the test Python.
fn run_script(dir: &Path, name: &str, extra: &[&str]) -> Output {
    let (python, script) = (common::python(), script(name));
    result_change(dir, extra, &[python.to_str().unwrap(), script.to_str().unwrap()])
}

/// The one verdict file in `dir/out`, after a successful run.
fn verdict(dir: &Path, o: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{:?}\nstdout:\n{stdout}\nstderr:\n{}", o.status, String::from_utf8_lossy(&o.stderr));
    let files: Vec<PathBuf> = std::fs::read_dir(dir.join("out")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("result_change_") && name.ends_with(".json"), "{name}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert!(stdout.contains(v["conclusion"].as_str().unwrap()), "{stdout}");
    v
}

/// Each variant as (changed, changed_tensors).
fn changes(v: &Value) -> Vec<(&str, Value, Value)> {
    ["sync", "module_hooks", "api_hooks"].into_iter().map(|k| (k, v["variants"][k]["changed"].clone(), v["variants"][k]["changed_tensors"].clone())).collect()
}

#[test]
fn bignet_hooks_change_net1s_gradients_and_nothing_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let v = verdict(dir.path(), &run_script(dir.path(), "bignet.py", &["--ops"]));
    assert_eq!(v["reproducible"], json!(true));
    let net1 = ["net1.ln1.weight", "net1.ln1.bias", "net1.bn1.weight", "net1.bn1.bias", "net1.ln2.weight", "net1.ln2.bias"];
    let mut module_hooks: Vec<&str> = vec!["grad_norm"];
    module_hooks.extend(net1);
    module_hooks.extend(["loss", "net2.ln1.weight", "net2.bn1.weight", "net2.ln2.weight", "net2.bn1.bias"]);
    assert_eq!(
        changes(&v),
        vec![("sync", json!(false), json!([])), ("module_hooks", json!(true), json!(module_hooks)), ("api_hooks", json!(false), json!([]))]
    );
    // At the first step, only the grad norm and net1's gradients change (net2's hook, net1's fan-out), by a rounding error.
    let first = v["variants"]["module_hooks"]["first_changed"].as_array().unwrap();
    assert_eq!(
        first.iter().map(|c| (c["name"].as_str().unwrap(), c["step"].as_u64().unwrap())).collect::<Vec<_>>(),
        [("grad_norm", 0), (net1[0], 0), (net1[1], 0), (net1[2], 0), (net1[3], 0)]
    );
    assert!(first.iter().all(|c| (1e-9..1e-5).contains(&c["max_abs_diff"].as_f64().unwrap())), "{first:?}");
    // Step 0's ops give the same outputs (the change is in the backward); the first op that differs is the
    // optimizer's update of the changed gradients, recorded with step 1.
    assert_eq!(v["variants"]["module_hooks"]["first_op"], json!({"step": 1, "index": 0, "baseline": "Tensor.add_", "other": "Tensor.add_"}));
    assert_eq!(
        v["conclusion"],
        "the run is reproducible; synchronisation changes nothing; no-op module hooks (msprobe's L0/mix) change grad_norm, net1.ln1.weight, net1.ln1.bias and 9 more (accumulation order of gradients at a fan-out): collect at L1, or compare runs that both have the tool on; no-op API wrappers change nothing"
    );
}

#[test]
fn mindspores_bignet_changes_net1s_gradients_under_cell_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let (python, bignet) = (common::python(), script("bignet_ms.py"));
    let v = verdict(dir.path(), &result_change_of("mindspore", dir.path(), &[], &[python.to_str().unwrap(), bignet.to_str().unwrap()]));
    assert_eq!(v["reproducible"], json!(true));
    let net1 = ["net1.ln1.weight", "net1.ln1.bias", "net1.bn1.gamma", "net1.bn1.beta", "net1.ln2.weight", "net1.ln2.bias"];
    let mut module_hooks: Vec<&str> = vec!["grad_norm"];
    module_hooks.extend(net1);
    module_hooks.extend(["loss", "net2.ln1.weight", "net2.bn1.gamma", "net2.ln2.weight", "net2.bn1.beta"]);
    assert_eq!(
        changes(&v),
        vec![("sync", json!(false), json!([])), ("module_hooks", json!(true), json!(module_hooks)), ("api_hooks", json!(false), json!([]))]
    );
    // At the first step only the grad norm and net1's gradients change: net2's Cell backward hook, net1's fan-out.
    let first = v["variants"]["module_hooks"]["first_changed"].as_array().unwrap();
    assert_eq!(
        first.iter().map(|c| (c["name"].as_str().unwrap(), c["step"].as_u64().unwrap())).collect::<Vec<_>>()[..3],
        [("grad_norm", 0), (net1[0], 0), (net1[1], 0)]
    );
    assert_eq!(
        v["conclusion"],
        "the run is reproducible; synchronisation changes nothing; no-op module hooks (msprobe's L0/mix) change grad_norm, net1.ln1.weight, net1.ln1.bias and 9 more (accumulation order of gradients at a fan-out): collect at L1, or compare runs that both have the tool on; no-op API wrappers change nothing"
    );
    // A torch model under -f mindspore is refused by ResultChange, in one line.
    let torch_script = script("nofanout.py");
    let o = result_change_of("mindspore", dir.path(), &[], &[python.to_str().unwrap(), torch_script.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.trim_end().ends_with("TypeError: ResultChange: the command was run with -f mindspore, but the model is a torch.nn.modules.container.Sequential"),
        "{stderr}"
    );
}

#[test]
fn a_clock_seeded_run_is_not_reproducible_and_nothing_else_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let v = verdict(dir.path(), &run_script(dir.path(), "clock_seed.py", &[]));
    assert_eq!(v["reproducible"], json!(false));
    assert_eq!(v["repeat"]["changed_tensors"][0], json!("loss"));
    for k in ["sync", "module_hooks", "api_hooks"] {
        assert_eq!((&v["variants"][k]["judged"], &v["variants"][k]["changed"]), (&json!(false), &Value::Null), "{k}");
    }
    assert!(
        v["conclusion"].as_str().unwrap().starts_with("the run is not reproducible: two unchanged runs differ first in loss (step 0); "),
        "{}",
        v["conclusion"]
    );
    assert!(v["conclusion"].as_str().unwrap().ends_with("torch.use_deterministic_algorithms(True), HCCL_DETERMINISTIC=true); nothing else is judged"));
}

/// Runs `name` once under result_change: reproducible, each variant with
/// the tensors it changed (none where `[]`), and this conclusion.
fn one_cause(name: &str, sync: Value, module_hooks: Value, api_hooks: Value, conclusion: &str) {
    let dir = tempfile::tempdir().unwrap();
    let v = verdict(dir.path(), &run_script(dir.path(), name, &[]));
    assert_eq!(v["reproducible"], json!(true));
    let changed = |t: &Value| json!(t.as_array().is_some_and(|a| !a.is_empty()));
    let expected = [("sync", sync), ("module_hooks", module_hooks), ("api_hooks", api_hooks)];
    assert_eq!(changes(&v), expected.map(|(k, t)| (k, changed(&t), t)).to_vec());
    assert_eq!(v["conclusion"], conclusion);
}

#[test]
fn without_a_fan_out_hooks_change_nothing() {
    one_cause(
        "nofanout.py",
        json!([]),
        json!([]),
        json!([]),
        "the run is reproducible; synchronisation changes nothing; no-op module hooks change nothing; no-op API wrappers change nothing",
    );
}

#[test]
fn a_race_with_the_device_changes_under_synchronisation_only() {
    one_cause(
        "deferred_stream.py",
        json!(["grad_norm", "0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias", "loss"]),
        json!([]),
        json!([]),
        "the run is reproducible; synchronisation (ASCEND_LAUNCH_BLOCKING=1, a host read of each op's output, as statistics collection does) changes grad_norm, 0.weight, 0.bias and 5 more: the change comes from synchronisation, not from the tool's hooks (a NaN that disappears with the tool on); collect with msprobe's async_dump (\"async_dump\": true in config.json), which reads no value on the host per op, or compare runs that both set ASCEND_LAUNCH_BLOCKING=1; no-op module hooks change nothing; no-op API wrappers change nothing",
    );
}

#[test]
fn overrides_found_by_identity_change_under_api_wrappers_only() {
    // The loss is first seen changed at step 0 where this machine's float32 linear differs from the
    // library's float64 one rounded once in the loss's last bit, at step 1 where it does not: the
    // changed tensors come in first-seen order (loss first, else last), the rest as listed.
    let dir = tempfile::tempdir().unwrap();
    let v = verdict(dir.path(), &run_script(dir.path(), "late_overrides.py", &[]));
    assert_eq!(v["reproducible"], json!(true));
    let rest = ["grad_norm", "0.weight", "0.bias", "2.weight", "2.bias", "4.weight"];
    let loss_first = [&["loss"][..], &rest].concat();
    let loss_last = [&rest[..], &["loss"]].concat();
    let api = changes(&v).into_iter().find(|(k, ..)| *k == "api_hooks").map(|(_, _, t)| t).unwrap();
    assert!(api == json!(loss_first) || api == json!(loss_last), "{api}");
    let first = if api[0] == "loss" { "loss, grad_norm, 0.weight" } else { "grad_norm, 0.weight, 0.bias" };
    assert_eq!(changes(&v)[..2], [("sync", json!(false), json!([])), ("module_hooks", json!(false), json!([]))]);
    assert_eq!(
        v["conclusion"],
        format!(
            "the run is reproducible; synchronisation changes nothing; no-op module hooks change nothing; no-op API wrappers (msprobe's L1) change {first} and 4 more: code that finds torch's functions by identity, or hooks them itself, meets the wrappers; collect at L0 (module hooks, no API wrappers), or compare runs that both have the tool on"
        )
    );
}

#[test]
fn two_ranks_under_torchrun_name_the_rank_with_the_fan_out() {
    let dir = tempfile::tempdir().unwrap();
    let (python, script) = (common::python(), script("two_ranks.py"));
    let torchrun = [python.to_str().unwrap(), "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", script.to_str().unwrap()];
    let o = result_change(dir.path(), &[], &torchrun);
    let v = verdict(dir.path(), &o);
    assert_eq!((v["reproducible"].clone(), v["ranks"].clone(), v["steps"].clone()), (json!(true), json!(2), json!(2)));
    let ranks: Vec<Value> = ["sync", "module_hooks", "api_hooks"].iter().map(|k| v["variants"][k]["changed_ranks"].clone()).collect();
    assert_eq!(ranks, [json!([]), json!([1]), json!([])]);
    assert_eq!(v["variants"]["module_hooks"]["changed_tensors"][1], "net1.ln1.weight");
    let conclusion = v["conclusion"].as_str().unwrap();
    assert!(conclusion.contains("change grad_norm, net1.ln1.weight, net1.ln1.bias and 8 more on rank 1 of 2 (accumulation order"), "{conclusion}");
    // Each rank's records streamed through, prefixed with the run: each record is one write
    // (with print's two, the ranks' texts and newlines interleaved on a loaded machine).
    let stderr = String::from_utf8_lossy(&o.stderr);
    for rank in [0, 1] {
        assert!(stderr.contains(&format!("[run 4 module_hooks] msprobe_rs.ResultChange: step 1 recorded on rank {rank} (loss ")), "{stderr}");
    }
    assert!(stderr.contains("[run 5 api_hooks] finished: 2 steps recorded by 2 ranks\n"), "{stderr}");
}

#[test]
fn two_mindspore_ranks_started_by_hand_name_the_rank_with_the_fan_out() {
    let dir = tempfile::tempdir().unwrap();
    let (python, launcher) = (common::python(), script("two_ms_ranks.py"));
    let v = verdict(dir.path(), &result_change_of("mindspore", dir.path(), &[], &[python.to_str().unwrap(), launcher.to_str().unwrap()]));
    assert_eq!((v["reproducible"].clone(), v["ranks"].clone(), v["steps"].clone()), (json!(true), json!(2), json!(2)));
    let ranks: Vec<Value> = ["sync", "module_hooks", "api_hooks"].iter().map(|k| v["variants"][k]["changed_ranks"].clone()).collect();
    assert_eq!(ranks, [json!([]), json!([1]), json!([])]);
    assert!(v["conclusion"].as_str().unwrap().contains(" on rank 1 of 2 (accumulation order"), "{}", v["conclusion"]);
}

#[test]
fn the_trainings_output_is_streamed_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let (python, script) = (common::python(), script("gated.py"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "result_change", "-o", "out", "--", python.to_str().unwrap(), script.to_str().unwrap()])
        .current_dir(dir.path())
        .env("PYTHONPATH", common::repo().join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("RC_TEST_GATE", &gate)
        .env_remove("MSPROBE_RC_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    // The training's first line arrives while it waits for the gate: msprobe is still running.
    assert_eq!(line, "[run 1 baseline] gated training started\n");
    assert!(child.try_wait().unwrap().is_none(), "the line came before the run ended");
    std::fs::write(&gate, b"").unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    assert!(child.wait().unwrap().success(), "{rest}");
    let lines: Vec<&str> = rest.lines().filter(|l| l.starts_with("[run 1 ")).collect();
    assert_eq!(lines.len(), 2, "{rest}");
    assert!(lines[0].starts_with("[run 1 baseline] msprobe_rs.ResultChange: step 0 recorded (loss "), "{rest}");
    assert_eq!(lines[1], "[run 1 baseline] finished: 1 step recorded by 1 rank");
    for (run, variant) in [(2, "baseline"), (3, "sync"), (4, "module_hooks"), (5, "api_hooks")] {
        assert!(rest.contains(&format!("[run {run} {variant}] gated training started\n")), "{rest}");
    }
    assert!(stdout.contains("the run is reproducible; synchronisation changes nothing"), "{stdout}");
}

/// The exact error (stderr's last line, every line before it the runs'
/// streamed output) and exit code of a failed run, and no output folder.
fn fails(dir: &Path, o: &Output, code: i32, message: &str) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    let (streamed, last) = stderr.trim_end_matches('\n').rsplit_once('\n').unwrap_or(("", stderr.trim_end_matches('\n')));
    assert_eq!(last, format!("msprobe: error: {message}"), "{stderr}");
    assert!(streamed.lines().all(|l| l.starts_with("[run ")), "{stderr}");
    assert!(stderr.ends_with('\n'));
    assert_eq!(o.status.code(), Some(code));
    assert!(o.stdout.is_empty());
    assert!(!dir.join("out").exists(), "nothing partial is written");
}

#[test]
fn a_crash_a_missing_record_and_a_missing_command_are_one_line_errors() {
    let python = common::python();
    let command = |name: &str| format!("{} {}", python.display(), script(name).display());
    let dir = tempfile::tempdir().unwrap();
    let o = run_script(dir.path(), "crash.py", &[]);
    fails(
        dir.path(),
        &o,
        4,
        &format!(
            "result_change: run 1 (baseline) of `{}` exited with code 1: RuntimeError: result_change test: the training script crashed on purpose",
            command("crash.py")
        ),
    );
    let o = run_script(dir.path(), "no_record.py", &[]);
    fails(
        dir.path(),
        &o,
        4,
        &format!(
            "result_change: run 1 (baseline) of `{}` recorded no step: call rc.record(loss) after each backward (ResultChange of msprobe_rs)",
            command("no_record.py")
        ),
    );
    let o = result_change(dir.path(), &[], &["no-such-training-command", "train.py"]);
    fails(dir.path(), &o, 2, "result_change: cannot run `no-such-training-command train.py`: No such file or directory (os error 2)");
}

#[test]
fn the_command_needs_a_framework_and_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let msprobe = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).current_dir(dir.path()).output().unwrap();
    let o = msprobe(&["result_change", "-o", "out", "--", "true"]);
    fails(dir.path(), &o, 2, "result_change needs -f pytorch or -f mindspore (the framework ResultChange records)");
    let o = msprobe(&["-f", "mindspore", "result_change", "-o", "out", "--ops", "--", "true"]);
    fails(dir.path(), &o, 2, "result_change --ops needs -f pytorch (op hashes come from torch's function mode; MindSpore has none)");
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(["-f", "pytorch", "result_change", "-o", "out"]).current_dir(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("<COMMAND>"), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dir.path().join("out").exists());
}
