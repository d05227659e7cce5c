//! Subcommands that are not ours go to mindstudio-probe's `msprobe`
//! (src/cli/foreign.rs): here a stand-in distribution named
//! mindstudio-probe, on PYTHONPATH, whose `msprobe` entry prints what it was
//! given and exits with the code its last argument names; and the other
//! way round, the wheel's start-up hook (python/_msprobe_rs_route.py) giving
//! our subcommands to msprobe-rs when their script holds `msprobe`. The real
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
        assert_eq!(
            stdout_json(&o),
            serde_json::json!({"argv": ["msprobe", "-f", "pytorch", "compare", "-i", "a.json", "-o", "out dir", "7"], "cwd_on_path": false})
        );
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
    assert!(
        stderr.starts_with(
            "msprobe: error: `compare` is not an msprobe-rs command, and mindstudio-probe (whose msprobe has the other commands) is not installed for "
        ),
        "{stderr}"
    );
    let o =
        Command::new(env!("CARGO_BIN_EXE_msprobe")).args(["-f", "pytorch", "graph"]).env("MSPROBE_PYTHON", empty.path().join("no-python")).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("msprobe: error: `graph` is not an msprobe-rs command; it goes to mindstudio-probe's msprobe, but ")
            && stderr.contains("no-python could not run"),
        "{stderr}"
    );
}

/// The repo's folder of the wheel's Python files.
fn python_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python")
}

/// The subcommands `msprobe --help` lists (without `help`).
fn our_subcommands() -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).arg("--help").output().unwrap();
    let help = String::from_utf8(o.stdout).unwrap();
    let commands = help.split("Commands:\n").nth(1).unwrap().split("\n\n").next().unwrap();
    let mut names: Vec<String> = commands.lines().filter_map(|l| l.split_whitespace().next()).filter(|n| *n != "help").map(str::to_string).collect();
    names.sort();
    names
}

#[test]
fn the_start_up_hook_knows_every_subcommand_of_ours() {
    let module = std::fs::read_to_string(python_source().join("_msprobe_rs_route.py")).unwrap();
    let set = module.split("OURS = frozenset({").nth(1).unwrap().split("})").next().unwrap();
    let mut names: Vec<String> = set.split(',').map(|n| n.trim().trim_matches('"').to_string()).collect();
    names.sort();
    assert_eq!(names, our_subcommands());
}

/// An environment where mindstudio-probe was installed after msprobe-rs:
/// a virtual environment holding the wheel's start-up hook
/// (python/msprobe_rs_route.pth, .start and their module) in site-packages, the
/// stand-in's `msprobe` script written as pip writes a console script, and
/// `msprobe-rs` beside it. scripts/test-wheel.sh does the same with pip and
/// the real packages.
fn probe_installed_last(probe: &Path) -> tempfile::TempDir {
    let env = tempfile::tempdir().unwrap();
    let o = Command::new(python()).args(["-m", "venv", "--without-pip"]).arg(env.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bin = env.path().join("bin");
    let o = Command::new(bin.join("python")).args(["-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).output().unwrap();
    let site = PathBuf::from(String::from_utf8(o.stdout).unwrap().trim());
    for f in ["msprobe_rs_route.pth", "msprobe_rs_route.start", "_msprobe_rs_route.py"] {
        std::fs::copy(python_source().join(f), site.join(f)).unwrap();
    }
    std::fs::write(site.join("standin.pth"), format!("{}\n", probe.display())).unwrap();
    let script = format!("#!{}\nimport sys\nfrom standin.cli import main\nif __name__ == \"__main__\":\n    sys.exit(main())\n", bin.join("python").display());
    std::fs::write(bin.join("msprobe"), script).unwrap();
    std::fs::set_permissions(bin.join("msprobe"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_msprobe-rs"), bin.join("msprobe-rs")).unwrap();
    env
}

#[test]
fn under_their_script_our_subcommands_run_ours_and_the_rest_theirs() {
    let probe = stand_in();
    let env = probe_installed_last(probe.path());
    let msprobe = env.path().join("bin/msprobe");
    let work = tempfile::tempdir().unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mindspore/config_op.json");
    let run =
        |args: &[&str]| Command::new(&msprobe).args(args).current_dir(work.path()).env_remove("PYTHONPATH").env("PYTHONNOUSERSITE", "1").output().unwrap();
    // Ours: the generated script is msprobe-rs's.
    let o = run(&["-f", "mindspore", "op_generate", "-i", config.to_str().unwrap(), "-o", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "extracted out/Mint.matmul.0.json\nwrote out/Mint.matmul.0.backward.py\n");
    let script = std::fs::read_to_string(work.path().join("out/Mint.matmul.0.backward.py")).unwrap();
    assert!(script.contains(&format!("Generated by msprobe-rs {}.", env!("CARGO_PKG_VERSION"))), "{script}");
    let o = run(&["--framework=pytorch", "replay", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("Replay API calls natively"), "{}", String::from_utf8_lossy(&o.stdout));
    // Theirs, as their script got it: other subcommands, no subcommand, --version.
    let argv0 = msprobe.to_str().unwrap();
    for (args, code) in [(&["-f", "pytorch", "compare", "-i", "a.json", "7"][..], 7), (&["--version"], 0), (&[], 0)] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let want: Vec<&str> = std::iter::once(argv0).chain(args.iter().copied()).collect();
        assert_eq!(stdout_json(&o), serde_json::json!({"argv": want, "cwd_on_path": false}), "{args:?}");
    }
    // Any other program of the environment never imports the hook's module.
    let o = Command::new(env.path().join("bin/python")).args(["-c", "import sys; print('_msprobe_rs_route' in sys.modules)"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "False\n");
    // Without msprobe-rs beside the script, theirs answers ours too.
    std::fs::remove_file(env.path().join("bin/msprobe-rs")).unwrap();
    let o = run(&["-f", "pytorch", "op_generate", "-i", "c.json", "3"]);
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout_json(&o)["argv"], serde_json::json!([argv0, "-f", "pytorch", "op_generate", "-i", "c.json", "3"]));
}
