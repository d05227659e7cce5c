//! The `msprobe` binary on good and bad input: exit codes, one-line error
//! messages naming file, key and expectation, and no partial output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn msprobe(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).current_dir(cwd).output().unwrap()
}

/// Writes a config into `dir` and runs `op_generate` on it.
fn generate(framework: &str, config: serde_json::Value, dir: &Path) -> Output {
    let path = dir.join("config_op.json");
    std::fs::write(&path, config.to_string()).unwrap();
    msprobe(&["-f", framework, "op_generate", "-i", path.to_str().unwrap(), "-o", dir.join("out").to_str().unwrap()], dir)
}

fn fixture(rel: &str) -> String {
    repo().join("tests/fixtures").join(rel).to_string_lossy().into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A failing run: the exit code, a single `msprobe: error:` line, no panic, no script written.
fn assert_fails(o: &Output, code: i32, needles: &[&str], dir: &Path) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("msprobe: error: "), "{err}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
    for n in needles {
        assert!(err.contains(n), "{err:?} should mention {n:?}");
    }
    let written: Vec<_> = std::fs::read_dir(dir.join("out")).map(|d| d.map(|e| e.unwrap().file_name()).collect()).unwrap_or_default();
    assert!(written.is_empty(), "no output on failure: {written:?}");
}

#[test]
fn writes_script_and_extract_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = serde_json::json!({
        "dump_json_path": fixture("pytorch/statistics/dump.json"), "api_name": "Functional.softmax.0",
        "extract_api_path": "extract/softmax.json", "propagation": "backward", "data_mode": "random_data",
        "random_seed": 1234, "iter_times": 2,
    });
    let o = generate("pytorch", cfg, dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let script = std::fs::read_to_string(dir.path().join("out/Functional.softmax.0.backward.py")).unwrap();
    assert!(script.contains("RANDOM_SEED = 1234\nITER_TIMES = 2\n"));
    // The extract file is itself a dump holding the pair, with msprobe's non-finite tokens.
    let extract = std::fs::read_to_string(dir.path().join("extract/softmax.json")).unwrap();
    assert!(extract.contains("\"Functional.softmax.0.forward\"") && extract.contains("\"Functional.softmax.0.backward\""));
    assert!(extract.contains("-Infinity") && !extract.contains("\\u0000"));
    // ... and can be used instead of the dump.
    let cfg = serde_json::json!({"extract_api_path": "extract/softmax.json", "api_name": "Functional.softmax.0"});
    let o = generate("pytorch", cfg, dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let again = std::fs::read_to_string(dir.path().join("out/Functional.softmax.0.forward.py")).unwrap();
    assert!(again.contains("TensorSpec(\"torch.float32\", [2, 4, 16, 16], low=float(\"-inf\")"));
}

#[test]
fn accepts_msprobe_flag_spellings_and_a_dump_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.json"), serde_json::json!({"dump_json_path": fixture("mindspore/tensor"), "api_name": "Mint.add.0"}).to_string())
        .unwrap();
    let o = msprobe(&["--framework", "mindspore", "op_generate", "--config_input", "c.json", "--api_output_path", "o"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("o/Mint.add.0.forward.py").is_file());
}

/// `replay -o DIR` is `--output-dir DIR`, as `op_generate -o` names its output.
#[test]
fn replay_takes_o_for_its_output_dir() {
    let dir = tempfile::tempdir().unwrap();
    let o = msprobe(&["-f", "pytorch", "replay", "--dump", &fixture("pytorch/statistics/dump.json"), "--filter", "softmax", "-o", "short"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let written: Vec<String> = std::fs::read_dir(dir.path().join("short")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(written.iter().any(|n| n.starts_with("accuracy_checking_details_")), "{written:?}");
    assert!(!dir.path().join("op_result_output").exists());
}

#[test]
fn config_errors_name_file_key_and_expectation() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fixture("pytorch/statistics/dump.json");
    let cases = [
        (serde_json::json!({"dump_json_path": dump, "api_name": "../../etc/passwd"}), "key \"api_name\": expected <Prefix>.<op>.<N>"),
        (
            serde_json::json!({"dump_json_path": dump, "api_name": "Torch.matmul.0", "iter_times": 1001}),
            "key \"iter_times\": expected an integer from 1 to 1000",
        ),
        (serde_json::json!({"dump_json_path": dump, "api_name": "Torch.matmul.0", "data_mode": "real"}), "key \"data_mode\""),
        (serde_json::json!({"dump_json_path": dump, "api_name": "Torch.matmul.0", "random_seed": -1}), "key \"random_seed\""),
        (serde_json::json!({"api_name": "Torch.matmul.0"}), "key \"dump_json_path\""),
        (
            serde_json::json!({"dump_json_path": dump, "api_name": "Torch.matmul.0", "standard": "strict"}),
            "key \"standard\": expected \"default\", \"msprobe\", \"api\" or \"bound\"",
        ),
    ];
    // An invalid config has its own exit code, 7 (3 is an inaccurate result).
    for (cfg, needle) in cases {
        assert_fails(&generate("pytorch", cfg, dir.path()), 7, &["config_op.json", needle], dir.path());
    }
    let o = msprobe(&["-f", "pytorch", "op_generate", "-i", "missing.json", "-o", "out"], dir.path());
    assert_fails(&o, 7, &["missing.json: cannot read config"], dir.path());
}

#[test]
fn dump_errors_are_exit_4_and_name_the_dump() {
    let dir = tempfile::tempdir().unwrap();
    let pt = fixture("pytorch/statistics/dump.json");
    let cases: Vec<(&str, serde_json::Value, Vec<&str>)> = vec![
        ("pytorch", serde_json::json!({"dump_json_path": pt, "api_name": "Torch.matmul.99"}), vec!["API Torch.matmul.99 not found", "dump.json"]),
        (
            "pytorch",
            serde_json::json!({"dump_json_path": pt, "api_name": "Torch.stack.0", "propagation": "backward"}),
            vec!["no \"Torch.stack.0.backward\" entry"],
        ),
        ("pytorch", serde_json::json!({"dump_json_path": pt, "api_name": "Torch.matmul.0", "data_mode": "real_data"}), vec!["real_data"]),
        ("mindspore", serde_json::json!({"dump_json_path": pt, "api_name": "Tensor.add.0"}), vec!["made by \"pytorch\"", "-f mindspore"]),
        ("pytorch", serde_json::json!({"dump_json_path": pt, "api_name": "Mint.add.0"}), vec!["prefix Mint is not replayable for pytorch dumps"]),
        ("pytorch", serde_json::json!({"dump_json_path": "nowhere/dump.json", "api_name": "Torch.matmul.0"}), vec!["nowhere/dump.json: cannot read dump"]),
    ];
    for (fw, cfg, needles) in cases {
        assert_fails(&generate(fw, cfg, dir.path()), 4, &needles, dir.path());
    }
    std::fs::write(dir.path().join("bad.json"), "{\"data\": {\"Torch.matmul.0.forward\": {\"input_args\": [1,]}}}").unwrap();
    let cfg = serde_json::json!({"dump_json_path": "bad.json", "api_name": "Torch.matmul.0"});
    assert_fails(&generate("pytorch", cfg, dir.path()), 4, &["bad.json: not a valid msprobe dump.json", "line 1 column"], dir.path());
    std::fs::write(
        dir.path().join("bad2.json"),
        "{\"data\": {\"Torch.matmul.0.forward\": {\"input_args\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [2, -1]}]}}}",
    )
    .unwrap();
    let cfg = serde_json::json!({"dump_json_path": "bad2.json", "api_name": "Torch.matmul.0"});
    assert_fails(&generate("pytorch", cfg, dir.path()), 4, &["Torch.matmul.0.forward.input_args[0].shape: expected non-negative dimensions"], dir.path());
}

#[test]
fn usage_errors_are_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = msprobe(&["-f", "tensorflow", "op_generate", "-i", "c.json", "-o", "out"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid value 'tensorflow'"));
    let o = msprobe(&["-f", "pytorch", "op_generate", "-o", "out"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--config_input"));
    let o = msprobe(&["op_generate", "-i", "c.json", "-o", "out"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("op_generate needs -f pytorch or -f mindspore"), "{}", stderr(&o));
    let o = msprobe(&["replay", "--dump", "d.json"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("replay needs -f pytorch or -f mindspore"), "{}", stderr(&o));
}

#[test]
fn help_shows_the_framework_flag_the_commands_require() {
    let dir = tempfile::tempdir().unwrap();
    for (command, usage) in [
        ("op_generate", "Usage: msprobe -f <FRAMEWORK> op_generate [OPTIONS] --config_input <CONFIG_INPUT> [--api_output_path <API_OUTPUT_PATH>]"),
        ("replay", "Usage: msprobe -f <FRAMEWORK> replay [OPTIONS]"),
    ] {
        let o = msprobe(&[command, "--help"], dir.path());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let help = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(help.lines().find(|l| l.starts_with("Usage: ")), Some(usage), "{help}");
    }
}

#[test]
fn unwritable_output_is_exit_5() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("out"), "a file where the folder should be").unwrap();
    let cfg = serde_json::json!({"dump_json_path": fixture("pytorch/statistics/dump.json"), "api_name": "Torch.matmul.0"});
    std::fs::write(dir.path().join("c.json"), cfg.to_string()).unwrap();
    let o = msprobe(&["-f", "pytorch", "op_generate", "-i", "c.json", "-o", "out"], dir.path());
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("msprobe: error: out: cannot write"), "{}", stderr(&o));
}

/// One-API `--check`: exit 0 when the script matches, 1 with `drifted: FILE`
/// when it was edited or deleted; nothing is written.
#[test]
fn single_api_check() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = serde_json::json!({"dump_json_path": fixture("pytorch/statistics/dump.json"), "api_name": "Torch.matmul.0"});
    std::fs::write(dir.path().join("c.json"), cfg.to_string()).unwrap();
    let run = |extra: &[&str]| msprobe(&[&["-f", "pytorch", "op_generate", "-i", "c.json", "-o", "out"], extra].concat(), dir.path());
    assert!(run(&[]).status.success());
    let o = run(&["--check"]);
    assert_eq!((o.status.code(), o.stdout.is_empty()), (Some(0), true), "{}", stderr(&o));
    let script = dir.path().join("out/Torch.matmul.0.forward.py");
    std::fs::write(&script, "edited").unwrap();
    let o = run(&["--check"]);
    assert_eq!((o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned()), (Some(1), "drifted: out/Torch.matmul.0.forward.py\n".to_string()));
    assert_eq!(std::fs::read_to_string(&script).unwrap(), "edited");
    std::fs::remove_file(&script).unwrap();
    assert_eq!(run(&["--check"]).status.code(), Some(1));
    assert!(!script.exists());
}

/// The design card's command, as a new user types it: no `-o`, so the
/// script goes into the current folder (`--help` says so).
#[test]
fn op_generate_without_o_writes_into_the_current_folder() {
    // A copy of the bundled example (its config's extract_api_path writes beside it).
    let (example, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let status = Command::new("cp").arg("-r").arg(repo().join("examples/mindspore")).arg(example.path()).status().unwrap();
    assert!(status.success());
    let config = example.path().join("mindspore/config_op.json");
    let o = msprobe(&["-f", "mindspore", "op_generate", "-i", config.to_str().unwrap()], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut written: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    written.sort();
    // The script, and the config's extract_api_path (`out/Mint.matmul.0.json`, relative to the current folder).
    assert_eq!(written, ["Mint.matmul.0.backward.py", "out"]);
    assert!(dir.path().join("out/Mint.matmul.0.json").is_file());
    assert!(std::fs::read_to_string(dir.path().join("Mint.matmul.0.backward.py")).unwrap().contains("mint.matmul"));
    let help = msprobe(&["-f", "mindspore", "op_generate", "--help"], dir.path());
    assert!(String::from_utf8_lossy(&help.stdout).contains("[default: .]"), "{}", String::from_utf8_lossy(&help.stdout));
}

/// `replay --dump` with stderr in a file (a log, as under Slurm or
/// Kubernetes) ends with a progress line: the calls, the tensor bytes
/// read and the time taken; `-q` prints no progress.
#[test]
fn replay_progress_goes_to_a_log_as_lines_and_q_silences_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = |quiet: bool| {
        let log = dir.path().join(if quiet { "quiet.log" } else { "replay.log" });
        let mut args = vec!["-f", "pytorch", "replay", "--dump", "DUMP", "--data-mode", "real_data", "--filter", "^Functional", "-o", "out", "--top", "0"];
        let dump = fixture("pytorch/tensor/dump.json");
        args[4] = &dump;
        if quiet {
            args.push("-q");
        }
        let out = dir.path().join(if quiet { "q" } else { "lines" });
        std::fs::create_dir_all(&out).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(&args).current_dir(&out).stderr(std::fs::File::create(&log).unwrap()).output().unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(o.status.code().is_some_and(|c| c == 0 || c == 3), "{text}");
        text
    };
    let log = run(false);
    let lines: Vec<&str> = log.lines().filter(|l| l.starts_with("replay: ")).collect();
    assert_eq!(lines.len(), 1, "one line for a run under 10 s: {log}");
    let re = regex::Regex::new(r"^replay: (\d+)/(\d+) calls, \d+\.\d [MG]B read, \d+\.\ds elapsed$").unwrap();
    let caps = re.captures(lines[0]).unwrap_or_else(|| panic!("{:?}", lines[0]));
    assert_eq!(caps[1], caps[2]);
    assert!(caps[1].parse::<usize>().unwrap() > 1, "{}", lines[0]);
    let quiet = run(true);
    assert!(!quiet.contains("replay: "), "{quiet}");
}
