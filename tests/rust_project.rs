//! A generated Rust repro project builds and runs: `op_generate --lang rust`
//! on a tensor dump, then `cargo run` in the project, which replays the call
//! natively and writes the accuracy CSVs.
//!
//! The project depends on the runtime crate's copy the binary writes beside
//! it (`msprobe-runtime-<version>/`), not on this workspace. It is generated
//! into a fixed folder (`<target>/generated-projects/work`) and builds in its
//! own target folder next to this test's (`<target>/generated-projects`),
//! with this workspace's Cargo.lock copied in, so it compiles the same
//! dependency versions, offline, and reuses its build on later runs (files
//! that did not change are not rewritten).

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `<target>` of the running test binary (`<target>/debug/deps/rust_project-…`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

#[test]
fn generated_rust_project_builds_runs_and_writes_the_report() {
    // The work folder lives under target/ (its build cache is reused), so an
    // earlier run's projects and runtime copy are removed first: the
    // checks below must see only what this run wrote.
    let work = target_dir().join("generated-projects/work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let cfg = serde_json::json!({
        "dump_json_path": repo().join("tests/fixtures/pytorch/tensor/dump.json"),
        "api_name": "Torch.matmul.0",
        "propagation": "backward",
        "data_mode": "real_data",
    });
    std::fs::write(work.join("cfg.json"), cfg.to_string()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", "projects", "--lang", "rust"])
        .env_remove("MSPROBE_RUNTIME_PATH")
        .current_dir(&work)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let project = work.join("projects/Torch.matmul.0.backward");
    assert!(project.join("Cargo.toml").is_file() && project.join("src/main.rs").is_file());
    let runtime = format!("msprobe-runtime-{}", env!("CARGO_PKG_VERSION"));
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(manifest.contains(&format!("runtime = {{ path = \"../{runtime}\" }}")), "{manifest}");
    assert!(work.join("projects").join(&runtime).join("src/lib.rs").is_file());
    assert!(!project.join("op_result_output").exists());
    std::fs::copy(repo().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();

    let run = Command::new(env!("CARGO"))
        .args(["run", "--offline", "--quiet"])
        .env("CARGO_TARGET_DIR", target_dir().join("generated-projects"))
        .current_dir(&project)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    // The recorded device outputs of the dump agree with the float64 bench.
    // The ranked table: one line per compared output, its status in the fourth column.
    for row in ["Torch.matmul.0.forward.output.0", "Torch.matmul.0.backward.output.0"] {
        let line = stdout.lines().find(|l| l.starts_with(row)).unwrap_or_else(|| panic!("no row {row}: {stdout}"));
        assert_eq!(line.split_whitespace().nth(3), Some("pass"), "{line}");
    }
    let csvs: Vec<String> =
        std::fs::read_dir(project.join("op_result_output")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(csvs.len(), 2, "{csvs:?}");
    let result = csvs.iter().find(|n| n.starts_with("accuracy_checking_result_")).unwrap();
    let text = std::fs::read_to_string(project.join("op_result_output").join(result)).unwrap();
    assert_eq!(text, "\u{feff}API Name,Forward Test Success,Backward Test Success,Message\r\nTorch.matmul.0,pass,pass,\r\n");
}
