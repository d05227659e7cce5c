//! Batch mode of `op_generate`: --all / --filter, --check, --shard,
//! manifests, step folders, and atomic writes under a killed run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn msprobe(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).current_dir(dir).output().unwrap()
}

/// A folder with a config (no api_name) for `dump`.
fn setup(dump: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let cfg = serde_json::json!({"dump_json_path": dump, "propagation": "forward"});
    std::fs::write(dir.path().join("cfg.json"), cfg.to_string()).unwrap();
    dir
}

fn statistics_dump() -> PathBuf {
    repo().join("tests/fixtures/pytorch/statistics/dump.json")
}

fn scripts_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".py")).collect()
}

fn manifest(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn all_then_check_then_drift() {
    let dir = setup(&statistics_dump());
    let args = ["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "out", "--all", "--propagation", "both"];
    let o = msprobe(dir.path(), &args);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("346 APIs, 410 scripts"), "{}", text(&o));
    let out = dir.path().join("out");
    let files = scripts_in(&out);
    assert_eq!(files.len(), 410);
    assert!(files.contains("Torch.matmul.0.forward.py") && files.contains("Torch.matmul.0.backward.py"));
    // The manifest lists every script with the hash of its bytes.
    let m = manifest(&out.join("manifest.json"));
    let listed: BTreeSet<String> = m["scripts"].as_array().unwrap().iter().map(|e| e["file"].as_str().unwrap().to_string()).collect();
    assert_eq!(listed, files);
    let first = &m["scripts"][0];
    let bytes = std::fs::read(out.join(first["file"].as_str().unwrap())).unwrap();
    assert_eq!(first["sha256"].as_str().unwrap(), msprobe::manifest::sha256_hex(&bytes));
    assert_eq!(m["propagation"], "both");

    let mut check = args.to_vec();
    check.push("--check");
    let o = msprobe(dir.path(), &check);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    std::fs::write(out.join("Torch.matmul.0.forward.py"), "edited").unwrap();
    std::fs::remove_file(out.join("Functional.gelu.0.backward.py")).unwrap();
    let o = msprobe(dir.path(), &check);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("drifted: out/Torch.matmul.0.forward.py"), "{stdout}");
    assert!(stdout.contains("missing: out/Functional.gelu.0.backward.py"), "{stdout}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");

    // A narrower selection makes the manifest's other files "extra".
    let o = msprobe(
        dir.path(),
        &["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "out", "--filter", "^Torch\\.matmul\\.", "--propagation", "both", "--check"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("extra: out/Functional.gelu.0.forward.py"));
}

#[test]
fn filter_selects_by_name() {
    let dir = setup(&statistics_dump());
    let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "out", "--filter", "^(Torch|Functional)\\.(matmul|linear)\\.", "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let files = scripts_in(&dir.path().join("out"));
    assert!(!files.is_empty());
    assert!(files.iter().all(|f| f.starts_with("Torch.matmul.") || f.starts_with("Functional.linear.")), "{files:?}");
    assert!(files.iter().all(|f| f.ends_with(".forward.py")));
}

#[test]
fn shards_partition_the_batch() {
    let dir = setup(&statistics_dump());
    let base = ["-f", "pytorch", "op_generate", "-i", "cfg.json", "--all", "--propagation", "both", "-q"];
    let o = msprobe(dir.path(), &[&base[..], &["-o", "whole"]].concat());
    assert!(o.status.success());
    let whole = scripts_in(&dir.path().join("whole"));
    let mut union = BTreeSet::new();
    let mut total = 0;
    for i in 0..3 {
        let shard = format!("{i}/3");
        let o = msprobe(dir.path(), &[&base[..], &["-o", "sharded", "--shard", &shard]].concat());
        assert!(o.status.success(), "{}", text(&o));
        let m = manifest(&dir.path().join(format!("sharded/manifest.shard-{i}-of-3.json")));
        assert_eq!(m["shard"], shard);
        let files: Vec<String> = m["scripts"].as_array().unwrap().iter().map(|e| e["file"].as_str().unwrap().to_string()).collect();
        assert!(!files.is_empty());
        total += files.len();
        union.extend(files);
    }
    assert_eq!(total, whole.len(), "shards are disjoint");
    assert_eq!(union, whole, "the union of the shards is the whole batch");
    assert_eq!(scripts_in(&dir.path().join("sharded")), whole);
    // Same bytes whichever way they were produced.
    for f in &whole {
        assert_eq!(std::fs::read(dir.path().join("whole").join(f)).unwrap(), std::fs::read(dir.path().join("sharded").join(f)).unwrap());
    }
}

#[test]
fn step_folder_gets_one_subfolder_per_rank() {
    let step = tempfile::tempdir().unwrap();
    for rank in ["rank0", "rank1"] {
        std::fs::create_dir(step.path().join(rank)).unwrap();
        std::fs::copy(statistics_dump(), step.path().join(rank).join("dump.json")).unwrap();
    }
    let dir = setup(step.path());
    let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "out", "--filter", "^Torch\\.", "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let r0 = scripts_in(&dir.path().join("out/rank0"));
    assert!(r0.contains("Torch.matmul.0.forward.py"));
    assert_eq!(r0, scripts_in(&dir.path().join("out/rank1")));
    // Single mode refuses to guess a rank.
    let cfg = serde_json::json!({"dump_json_path": step.path(), "api_name": "Torch.matmul.0"});
    std::fs::write(dir.path().join("one.json"), cfg.to_string()).unwrap();
    let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "one.json", "-o", "single"]);
    assert_eq!(o.status.code(), Some(4));
    assert!(text(&o).contains("holds several dumps"), "{}", text(&o));
}

#[test]
fn batch_flags_need_a_batch_and_api_name_needs_none() {
    let dir = setup(&statistics_dump());
    let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "out"]);
    // An invalid config is exit 7, apart from an inaccurate result (3).
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
    assert!(text(&o).contains("key \"api_name\""));
    let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "out", "--shard", "0/2"]);
    assert_eq!(o.status.code(), Some(2));
    let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "out", "--all", "--shard", "2/2"]);
    assert_eq!(o.status.code(), Some(2));
    let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "out", "--filter", "("]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--filter"));
}

#[test]
fn a_killed_run_leaves_only_complete_scripts() {
    // A dump large enough that the run is still writing when it is killed.
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    // (serde_json has no Infinity token; the values do not matter here.)
    let source = std::fs::read_to_string(statistics_dump()).unwrap().replace("Infinity", "1e308");
    let v: serde_json::Value = serde_json::from_str(&source).unwrap();
    let mut data = serde_json::Map::new();
    for rep in 0..10 {
        for (k, e) in v["data"].as_object().unwrap() {
            let p: Vec<&str> = k.split('.').collect();
            let n: u64 = p[2].parse().unwrap();
            data.insert(format!("{}.{}.{}.{}", p[0], p[1], n + rep * 1000, p[3]), e.clone());
        }
    }
    std::fs::write(&big, serde_json::json!({"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null, "data": data}).to_string())
        .unwrap();
    let cfg = serde_json::json!({"dump_json_path": big});
    std::fs::write(dir.path().join("cfg.json"), cfg.to_string()).unwrap();
    let args = ["-f", "pytorch", "op_generate", "-i", "cfg.json", "--all", "-q"];

    let o = msprobe(dir.path(), &[&args[..], &["-o", "reference"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let reference = dir.path().join("reference");

    let mut child = Command::new(env!("CARGO_BIN_EXE_msprobe")).args([&args[..], &["-o", "killed"]].concat()).current_dir(dir.path()).spawn().unwrap();
    let killed = dir.path().join("killed");
    // Kill once some scripts exist (or give up waiting after 5 s).
    for _ in 0..500 {
        if killed.is_dir() && std::fs::read_dir(&killed).unwrap().count() > 20 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let written = scripts_in(&killed);
    assert!(written.len() < scripts_in(&reference).len(), "the run was killed before it finished");
    for f in &written {
        assert_eq!(std::fs::read(killed.join(f)).unwrap(), std::fs::read(reference.join(f)).unwrap(), "{f} is complete");
    }
    // Rerunning completes the folder.
    let o = msprobe(dir.path(), &[&args[..], &["-o", "killed"]].concat());
    assert!(o.status.success());
    assert_eq!(scripts_in(&killed), scripts_in(&reference));
}

/// A checked-in tree (dump + scripts, tensor dump so scripts name the
/// tensor folder) checks clean after the whole tree moves: the manifest and
/// the scripts hold only paths relative to the output folder.
#[test]
fn moved_tree_checks_clean() {
    let root = tempfile::tempdir().unwrap();
    let before = root.path().join("before");
    let dump = before.join("dump");
    std::fs::create_dir_all(&dump).unwrap();
    let fixture = repo().join("tests/fixtures/pytorch/tensor");
    std::fs::copy(fixture.join("dump.json"), dump.join("dump.json")).unwrap();
    std::fs::create_dir(dump.join("dump_tensor_data")).unwrap();
    for e in std::fs::read_dir(fixture.join("dump_tensor_data")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dump.join("dump_tensor_data").join(e.file_name())).unwrap();
    }
    // An absolute dump path, as users often configure it.
    let config = |tree: &Path| serde_json::json!({"dump_json_path": tree.join("dump/dump.json"), "data_mode": "real_data"}).to_string();
    std::fs::write(before.join("cfg.json"), config(&before)).unwrap();
    let args = ["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "scripts", "--filter", "^Torch\\.matmul\\.", "--propagation", "both", "-q"];
    let o = msprobe(&before, &args);
    assert!(o.status.success(), "{}", text(&o));
    let m = manifest(&before.join("scripts/manifest.json"));
    assert_eq!(m["dump"], "../dump/dump.json");
    let script = std::fs::read_to_string(before.join("scripts/Torch.matmul.0.forward.py")).unwrap();
    assert!(!script.contains(&root.path().to_string_lossy().into_owned()), "no absolute path in a script");

    let after = root.path().join("elsewhere/after");
    std::fs::create_dir_all(after.parent().unwrap()).unwrap();
    std::fs::rename(&before, &after).unwrap();
    std::fs::write(after.join("cfg.json"), config(&after)).unwrap();
    let mut check = args.to_vec();
    check.push("--check");
    let o = msprobe(&after, &check);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("0 drifted, 0 missing, 0 extra"), "{}", text(&o));
}

/// A batch reports each script it could not write and exits with the
/// write failure's code (5), still writing the others.
#[test]
fn unwritable_script_is_exit_5_and_the_rest_is_written() {
    let dir = setup(&statistics_dump());
    let blocker = dir.path().join("out/Torch.matmul.0.forward.py");
    std::fs::create_dir_all(blocker.join("not-empty")).unwrap();
    let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "out", "--filter", "^Torch\\.matmul\\.", "-q"]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert!(text(&o).contains("msprobe: error: Torch.matmul.0.forward: "), "{}", text(&o));
    assert!(text(&o).contains("Torch.matmul.0.forward.py: cannot write"), "{}", text(&o));
    assert!(dir.path().join("out/Torch.matmul.1.forward.py").is_file());
}

/// Every file under `dir` and its bytes.
fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
}

/// `--shared-module` writes the machinery once, as a versioned module the
/// scripts import, listed in the manifest and compared by `--check`: the
/// bundled fixture's batch is at most a fifth of the standalone batch.
#[test]
fn a_shared_module_batch_is_at_most_a_fifth_of_the_standalone_batch() {
    let dir = setup(&statistics_dump());
    let args = |out: &'static str| ["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", out, "--all", "--propagation", "both", "-q"];
    let o = msprobe(dir.path(), &args("standalone"));
    assert!(o.status.success(), "{}", text(&o));
    let shared_args = [&args("shared")[..], &["--shared-module"]].concat();
    let o = msprobe(dir.path(), &shared_args);
    assert!(o.status.success(), "{}", text(&o));
    let (standalone, shared) = (dir.path().join("standalone"), dir.path().join("shared"));
    let module = format!("msprobe_repro_{}_pytorch.py", env!("CARGO_PKG_VERSION").replace('.', "_"));
    // The same scripts, plus the module.
    let mut expected = scripts_in(&standalone);
    assert_eq!(expected.len(), 410);
    expected.insert(module.clone());
    assert_eq!(scripts_in(&shared), expected);
    let (big, small) = (folder_bytes(&standalone), folder_bytes(&shared));
    assert!(small * 5 <= big, "shared {small} bytes, standalone {big} bytes");
    // Every script imports the module; none holds the machinery.
    let script = std::fs::read_to_string(shared.join("Torch.matmul.0.forward.py")).unwrap();
    assert!(script.contains(&format!("from {} import ", module.trim_end_matches(".py"))) && !script.contains("def judge("), "{script}");
    // The manifest lists it with its hash; --check compares it like any file.
    let m = manifest(&shared.join("manifest.json"));
    assert_eq!(m["modules"][0]["file"], module.as_str());
    let bytes = std::fs::read(shared.join(&module)).unwrap();
    assert_eq!(m["modules"][0]["sha256"].as_str().unwrap(), msprobe::manifest::sha256_hex(&bytes));
    let check = [&shared_args[..], &["--check"]].concat();
    let o = msprobe(dir.path(), &check);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    std::fs::write(shared.join(&module), "edited").unwrap();
    let o = msprobe(dir.path(), &check);
    assert_eq!((o.status.code(), String::from_utf8_lossy(&o.stdout).trim()), (Some(1), format!("drifted: shared/{module}").as_str()), "{}", text(&o));
    std::fs::remove_file(shared.join(&module)).unwrap();
    let o = msprobe(dir.path(), &check);
    assert_eq!((o.status.code(), String::from_utf8_lossy(&o.stdout).trim()), (Some(1), format!("missing: shared/{module}").as_str()), "{}", text(&o));
    // Standalone scripts in the same folder: the manifest's module is extra.
    let o = msprobe(dir.path(), &[&args("shared")[..], &["--check"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("extra: shared/{module}")), "{}", text(&o));
    // Rust projects have no such module.
    let o = msprobe(dir.path(), &[&args("rust")[..], &["--lang", "rust", "--shared-module"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--shared-module needs --lang python"), "{}", text(&o));
}

/// An MSAdapter dump (`"framework": "mindtorch"`, msprobe 26.2.0's `proc<PID>`
/// layout, read with `-f mindspore`) becomes one Rust project per call, its
/// manifest naming the dump's framework, and checks clean; and one Python
/// script per call with the same manifest framework.
#[test]
fn an_msadapter_dump_batch_is_rust_projects_or_scripts() {
    let dump = repo().join("tests/fixtures/mindtorch/attention/26.2.0/tensor");
    let dir = setup(&dump.join("dump.json"));
    let o =
        msprobe(dir.path(), &["-f", "mindspore", "op_generate", "-i", "cfg.json", "-o", "out", "--all", "--lang", "rust", "--propagation", "both", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = manifest(&dir.path().join("out/manifest.json"));
    assert_eq!((m["framework"].as_str(), m["lang"].as_str()), (Some("mindtorch"), Some("rust")));
    // 29 forward and 25 backward entries, two files each.
    assert_eq!(m["scripts"].as_array().unwrap().len(), 2 * (29 + 25));
    let main = std::fs::read_to_string(dir.path().join("out/Torch.matmul.0.backward/src/main.rs")).unwrap();
    assert!(main.contains("framework: Framework::MindTorch,"));
    let o = msprobe(
        dir.path(),
        &["-f", "mindspore", "op_generate", "-i", "cfg.json", "-o", "out", "--all", "--lang", "rust", "--propagation", "both", "--check", "--quiet"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = msprobe(dir.path(), &["-f", "mindspore", "op_generate", "-i", "cfg.json", "-o", "py", "--all", "--propagation", "both", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = manifest(&dir.path().join("py/manifest.json"));
    assert_eq!((m["framework"].as_str(), m["lang"].as_str()), (Some("mindtorch"), Some("python")));
    assert_eq!(m["scripts"].as_array().unwrap().len(), 29 + 25);
    let script = std::fs::read_to_string(dir.path().join("py/Torch.matmul.0.backward.py")).unwrap();
    assert!(script.contains("return msadapter.matmul(*args, **kwargs)"), "{script}");
}
