//! Golden tests: generated scripts must match the files under golden/ byte
//! for byte. `UPDATE_GOLDEN=1 cargo test --test golden` rewrites them; review
//! the diff before committing.

mod common;


use common::{repo, Case};
use msprobe::model::Framework::{MindSpore, PyTorch};

const CASES: &[Case] = &[
    Case::new(PyTorch, "pytorch/statistics", "Torch.matmul.0", "forward", "random_data"),
    Case::new(PyTorch, "pytorch/tensor", "Functional.layer_norm.0", "backward", "real_data"),
    Case::new(PyTorch, "pytorch/statistics", "Tensor.__setitem__.0", "forward", "random_data"),
    Case::new(PyTorch, "pytorch/statistics", "Torch.ones_like.0", "forward", "random_data"),
    Case::new(PyTorch, "pytorch/statistics", "Functional.softmax.0", "forward", "random_data"),
    Case::new(PyTorch, "pytorch/tensor", "Functional.cross_entropy.0", "backward", "random_data"),
    Case::new(PyTorch, "crafted", "Torch.add.0", "forward", "random_data"),
    Case::new(MindSpore, "mindspore/tensor", "Mint.split.0", "backward", "real_data"),
    Case::new(MindSpore, "mindspore/statistics", "Functional.gather.0", "forward", "random_data"),
    Case::new(MindSpore, "mindspore/statistics", "Tensor.to.0", "forward", "random_data"),
    Case::new(MindSpore, "mindspore/statistics", "Tensor.transpose.0", "backward", "random_data"),
];

/// The first line where two texts differ, for the failure message.
fn first_difference(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let i = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    format!("line {}: expected {:?}, generated {:?}", i + 1, e.get(i).unwrap_or(&"<end>"), a.get(i).unwrap_or(&"<end>"))
}

/// Absolute paths differ between machines: the repo root reads as `<repo>`.
fn normalise(text: &str) -> String {
    let root = std::fs::canonicalize(repo()).unwrap();
    text.replace(&root.to_string_lossy().into_owned(), "<repo>")
}

#[test]
fn generated_scripts_match_golden_files() {
    // Inside the repo, so the tensor folder is written relative to the script
    // (`../../../tests/fixtures/...`) the same way on every machine.
    let scratch = repo().join("target");
    std::fs::create_dir_all(&scratch).unwrap();
    let out = tempfile::tempdir_in(scratch).unwrap();
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatched = vec![];
    for case in CASES {
        let script = normalise(&std::fs::read_to_string(case.generate(out.path())).unwrap());
        let golden = repo().join("golden/python").join(case.framework.as_str()).join(case.file_name());
        if update {
            std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
            std::fs::write(&golden, &script).unwrap();
            continue;
        }
        match std::fs::read_to_string(&golden) {
            Ok(expected) if expected == script => {}
            Ok(expected) => mismatched.push(format!("{} differs at {}", golden.display(), first_difference(&expected, &script))),
            Err(e) => mismatched.push(format!("{}: {e}", golden.display())),
        }
    }
    assert!(mismatched.is_empty(), "{}\n(rerun with UPDATE_GOLDEN=1 to rewrite, then review the diff)", mismatched.join("\n"));
}

/// The generated Rust project of one call, against golden/rust/.
#[test]
fn rust_project_matches_golden_files() {
    let scratch = repo().join("target");
    std::fs::create_dir_all(&scratch).unwrap();
    let out = tempfile::tempdir_in(scratch).unwrap();
    let cfg = serde_json::json!({
        "dump_json_path": "tests/fixtures/pytorch/tensor/dump.json",
        "api_name": "Functional.softmax.0",
        "propagation": "backward",
        "data_mode": "real_data",
    });
    let (config, _) = msprobe::config::OpConfig::from_object(cfg.as_object().unwrap(), std::path::Path::new("c.json"), &repo()).unwrap();
    use msprobe::op_generate::{run, Outcome};
    let Ok(Outcome::Single(done)) = run(&common::single(PyTorch, config, out.path(), msprobe::render::Lang::Rust)) else { panic!("op_generate failed") };
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    for file in done.files {
        let rel = file.strip_prefix(out.path()).unwrap();
        let text = normalise(&std::fs::read_to_string(&file).unwrap());
        let golden = repo().join("golden/rust").join(rel);
        if update {
            std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
            std::fs::write(&golden, &text).unwrap();
        } else {
            let expected = std::fs::read_to_string(&golden).unwrap_or_default();
            assert!(expected == text, "{} differs at {} (UPDATE_GOLDEN=1 rewrites)", golden.display(), first_difference(&expected, &text));
        }
    }
}

#[test]
fn every_golden_file_has_a_case() {
    let dir = repo().join("golden/python");
    for fw in ["pytorch", "mindspore"] {
        for entry in std::fs::read_dir(dir.join(fw)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                CASES.iter().any(|c| c.framework.as_str() == fw && c.file_name() == name),
                "golden/python/{fw}/{name} has no case: delete it or add one"
            );
        }
    }
}
