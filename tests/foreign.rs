//! Subcommands that are not ours go to mindstudio-probe's `msprobe`
//! (src/cli/foreign.rs): here a stand-in distribution named
//! mindstudio-probe, on PYTHONPATH, whose `msprobe` entry prints what it was
//! given and exits with the code its last argument names. The real
//! mindstudio-probe 8.3.2 is checked by scripts/test-wheel.sh.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The Python the binary falls back to (no Python sits beside it in target/).
fn python() -> PathBuf {
    std::env::var_os("MSPROBE_PYTHON").map_or_else(|| "python3".into(), PathBuf::from)
}

/// A folder holding the stand-in mindstudio-probe.
fn stand_in() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let info = dir.path().join("mindstudio_probe-8.3.2.dist-info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("METADATA"), "Metadata-Version: 2.1\nName: mindstudio-probe\nVersion: 8.3.2\n").unwrap();
    std::fs::write(info.join("entry_points.txt"), "[console_scripts]\nmsprobe = standin.cli:main\n").unwrap();
    std::fs::create_dir_all(dir.path().join("standin")).unwrap();
    std::fs::write(dir.path().join("standin/__init__.py"), "").unwrap();
    let cli = "import json, sys\n\ndef main():\n    print(json.dumps({\"argv\": sys.argv, \"cwd_on_path\": \"\" in sys.path}))\n    return int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0\n";
    std::fs::write(dir.path().join("standin/cli.py"), cli).unwrap();
    dir
}

fn run(bin: &str, pythonpath: &Path, args: &[&str]) -> Output {
    Command::new(bin).args(args).env("MSPROBE_PYTHON", python()).env("PYTHONPATH", pythonpath).env("PYTHONNOUSERSITE", "1").output().unwrap()
}

fn stdout_json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn other_subcommands_reach_mindstudio_probe_unchanged_with_their_exit_code() {
    let probe = stand_in();
    for bin in [env!("CARGO_BIN_EXE_msprobe"), env!("CARGO_BIN_EXE_msprobe-rs")] {
        let o = run(bin, probe.path(), &["-f", "pytorch", "compare", "-i", "a.json", "-o", "out dir", "7"]);
        assert_eq!(o.status.code(), Some(7), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(stdout_json(&o), serde_json::json!({"argv": ["msprobe", "-f", "pytorch", "compare", "-i", "a.json", "-o", "out dir", "7"], "cwd_on_path": false}));
    }
    // The spelling of -f is theirs to read, as typed.
    let o = run(env!("CARGO_BIN_EXE_msprobe"), probe.path(), &["--framework=mindspore", "run_ut", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout_json(&o)["argv"], serde_json::json!(["msprobe", "--framework=mindspore", "run_ut", "--help"]));
    // Their own 117 is theirs, not "mindstudio-probe is not installed".
    let o = run(env!("CARGO_BIN_EXE_msprobe"), probe.path(), &["-f", "pytorch", "compare", "117"]);
    assert_eq!(o.status.code(), Some(117), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn our_commands_and_version_stay_ours() {
    let probe = stand_in();
    for bin in [env!("CARGO_BIN_EXE_msprobe"), env!("CARGO_BIN_EXE_msprobe-rs")] {
        let o = run(bin, probe.path(), &["--version"]);
        assert_eq!(String::from_utf8_lossy(&o.stdout), format!("msprobe {} (msprobe-rs)\n", env!("CARGO_PKG_VERSION")));
        // mindstudio-probe has an op_generate too; ours answers.
        let o = run(bin, probe.path(), &["-f", "pytorch", "op_generate", "-i", "missing.json", "-o", "out"]);
        assert_eq!(o.status.code(), Some(7), "a config error of ours: {}", String::from_utf8_lossy(&o.stderr));
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn without_mindstudio_probe_it_says_so_in_one_line() {
    let empty = tempfile::tempdir().unwrap();
    let o = run(env!("CARGO_BIN_EXE_msprobe"), empty.path(), &["-f", "pytorch", "compare", "-i", "a.json"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("msprobe: error: `compare` is not an msprobe-rs command, and mindstudio-probe (whose msprobe has the other commands) is not installed for "), "{stderr}");
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(["-f", "pytorch", "graph"]).env("MSPROBE_PYTHON", empty.path().join("no-python")).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("msprobe: error: `graph` is not an msprobe-rs command; it goes to mindstudio-probe's msprobe, but ") && stderr.contains("no-python could not run"), "{stderr}");
}
