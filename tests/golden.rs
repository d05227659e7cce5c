//! Golden tests: generated scripts must match the files under golden/ byte
//! for byte. A standalone Python script is its head (golden/python/<framework>/,
//! one per case) followed by the framework's machinery: the package's text,
//! checked against the package, with one snapshot of its layout per
//! framework (golden/python/layout/); the package's generated tables
//! (python/msprobe_rs/repro/_tables.py) must be what the renderer writes.
//! `UPDATE_GOLDEN=1 cargo test --test golden` rewrites them all; review the
//! diff before committing.

mod common;

use std::path::{Path, PathBuf};

use common::{repo, Case};
use msprobe::model::Framework::{self, MindSpore, MindTorch, PyTorch};

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
    // MSAdapter: the op_generate document's example (its config's settings), and a real tensor dump.
    Case::new(MindTorch, "mindtorch/doc33_example", "Tensor.reshape.779", "backward", "random_data"),
    Case::new(MindTorch, "mindtorch/mlp/8.3.2/tensor", "Functional.softmax.0", "backward", "real_data"),
    Case::new(MindTorch, "mindtorch/attention/26.2.0/statistics", "Torch.matmul.0", "forward", "random_data"),
    // An NPU call (last: the shared-module test picks cases by index): torch_npu tested, the machinery's reference as the bench.
    Case::new(PyTorch, "npu_misc/clean", "NPU.npu_linear.0", "backward", "real_data"),
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

/// Writes `text` to `golden` under UPDATE_GOLDEN, else says how it differs (None: it does not).
fn check_golden(golden: &Path, text: &str) -> Option<String> {
    if common::update_golden() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(golden, text).unwrap();
        return None;
    }
    match std::fs::read_to_string(golden) {
        Ok(expected) if expected == text => None,
        Ok(expected) => Some(format!("{} differs at {}", golden.display(), first_difference(&expected, text))),
        Err(e) => Some(format!("{}: {e}", golden.display())),
    }
}

fn assert_none(mismatched: Vec<String>) {
    assert!(mismatched.is_empty(), "{}\n(rerun with UPDATE_GOLDEN=1 to rewrite, then review the diff)", mismatched.join("\n"));
}

fn scratch() -> tempfile::TempDir {
    // Inside the repo, so the tensor folder is written relative to the script
    // (`../../../tests/fixtures/...`) the same way on every machine.
    let scratch = repo().join("target");
    std::fs::create_dir_all(&scratch).unwrap();
    tempfile::tempdir_in(scratch).unwrap()
}

/// The layout of `framework`'s machinery (golden/python/layout/): each part
/// in inlining order (the tables, then each package file from its marker
/// line) with the names it defines at top level. The text itself is the
/// package's, checked by [`the_machinery_is_the_tables_then_each_package_file_verbatim`].
fn layout(framework: Framework) -> String {
    let parts = std::iter::once(("_tables.py", msprobe::render::machinery::tables_file()))
        .chain(msprobe::render::machinery::files(framework).iter().map(|(name, text)| (*name, text.to_string())));
    let mut out = format!("# The machinery of a {} script, part by part: the names each defines.\n", framework.as_str());
    for (name, text) in parts {
        let inlined = text.split_once(&format!("\n{}\n", msprobe::render::machinery::MARKER)).map_or("", |(_, rest)| rest);
        let names: Vec<&str> = inlined
            .lines()
            .filter_map(|l| {
                let l = l.strip_prefix("def ").or_else(|| l.strip_prefix("class ")).unwrap_or(l);
                let end = l.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(l.len());
                let rest = l[end..].trim_start();
                (end > 0 && !l.starts_with(char::is_whitespace) && (rest.starts_with('(') || rest.starts_with(':') || rest.starts_with('='))).then(|| &l[..end])
            })
            .collect();
        out.push_str(&format!("{name}: {}\n", names.join(" ")));
    }
    out
}

/// A standalone script's machinery is the package's text: the tables as the
/// renderer writes them, then each package file of the framework's list
/// from its marker line, verbatim and in order.
#[test]
fn the_machinery_is_the_tables_then_each_package_file_verbatim() {
    let marker = format!("\n{}\n", msprobe::render::machinery::MARKER);
    for fw in Framework::ALL {
        let machinery = msprobe::render::machinery::machinery(fw);
        let tables = msprobe::render::machinery::tables_file();
        let mut rest = machinery.as_str().strip_prefix(tables.split_once(&marker).unwrap().1).expect("the machinery starts with the tables");
        for (name, text) in msprobe::render::machinery::files(fw) {
            let inlined = text.split_once(&marker).unwrap_or_else(|| panic!("{name} has no marker line")).1;
            rest = rest.strip_prefix(inlined).unwrap_or_else(|| panic!("{}: {name} is not inlined verbatim next", fw.as_str()));
        }
        assert_eq!(rest, "", "{}: text after the last package file", fw.as_str());
    }
}

#[test]
fn generated_scripts_are_golden_heads_followed_by_the_machinery() {
    let out = scratch();
    let mut mismatched = vec![];
    for fw in Framework::ALL {
        mismatched.extend(check_golden(&repo().join("golden/python/layout").join(format!("{}.txt", fw.as_str())), &layout(fw)));
    }
    for case in CASES {
        let script = normalise(&std::fs::read_to_string(case.generate(out.path())).unwrap());
        let machinery = msprobe::render::machinery::machinery(case.framework);
        // A standalone script is exactly its head followed by the machinery.
        let Some(head) = script.strip_suffix(&machinery) else {
            mismatched.push(format!("{} {}: the script does not end with the machinery", case.framework.as_str(), case.file_name()));
            continue;
        };
        let golden = repo().join("golden/python").join(case.framework.as_str()).join(case.file_name());
        mismatched.extend(check_golden(&golden, head));
    }
    assert_none(mismatched);
}

/// The package's tables are exactly what the renderer writes from the Rust tables.
#[test]
fn the_packages_tables_are_rendered_from_the_rust_tables() {
    let path = repo().join("python/msprobe_rs/repro/_tables.py");
    assert_none(check_golden(&path, &msprobe::render::machinery::tables_file()).into_iter().collect());
}

/// The package's hook lists (ResultChange's api_hooks) are exactly the Rust ones, rendered.
#[test]
fn the_packages_hook_lists_are_rendered_from_the_rust_lists() {
    let path = repo().join("python/msprobe_rs/_hook_lists.py");
    assert_none(check_golden(&path, &msprobe::render::machinery::hook_lists_file()).into_iter().collect());
}

/// With --shared-module a script is its standalone head followed by the
/// import of the shared module and the entry point (golden/python/shared/,
/// that part only); the module is its imports followed by the machinery.
#[test]
fn shared_module_scripts_are_the_head_and_an_import() {
    let out = scratch();
    let mut mismatched = vec![];
    for case in [CASES[0], CASES[8], CASES[12]] {
        let fw = case.framework.as_str();
        let standalone = normalise(&std::fs::read_to_string(case.generate(&out.path().join("standalone"))).unwrap());
        let head = standalone.strip_suffix(&msprobe::render::machinery::machinery(case.framework)).unwrap();
        let (script, module) = case.generate_shared(&out.path().join(fw));
        let text = normalise(&std::fs::read_to_string(&script).unwrap());
        let Some(tail) = text.strip_prefix(head) else {
            mismatched.push(format!("{fw} {}: the script does not start with the standalone head", case.file_name()));
            continue;
        };
        mismatched.extend(check_golden(&repo().join("golden/python/shared").join(fw).join(case.file_name()), tail));
        let module_text = std::fs::read_to_string(&module).unwrap();
        let Some(imports) = module_text.strip_suffix(&msprobe::render::machinery::machinery(case.framework)) else {
            mismatched.push(format!("{}: the module does not end with the machinery", module.display()));
            continue;
        };
        mismatched.extend(check_golden(&repo().join("golden/python/shared").join(fw).join("module_imports.py"), imports));
    }
    assert_none(mismatched);
}

/// Every file below `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The generated Rust project of one call, against golden/rust/.
#[test]
fn rust_project_matches_golden_files() {
    let out = scratch();
    let cfg = serde_json::json!({
        "dump_json_path": "tests/fixtures/pytorch/tensor/dump.json",
        "api_name": "Functional.softmax.0",
        "propagation": "backward",
        "data_mode": "real_data",
    });
    let (config, _) = msprobe::config::OpConfig::from_object(cfg.as_object().unwrap(), std::path::Path::new("c.json"), &repo()).unwrap();
    use msprobe::op_generate::{run, Outcome};
    let Ok(Outcome::Single(done)) = run(&common::single(PyTorch, config, out.path(), msprobe::render::Lang::Rust)) else { panic!("op_generate failed") };
    let update = common::update_golden();
    let generated: Vec<PathBuf> = done.files.iter().map(|f| f.strip_prefix(out.path()).unwrap().to_path_buf()).collect();
    // Every golden file is one the case generates (a stale one would never be checked).
    for golden in files_under(&repo().join("golden/rust")) {
        let rel = golden.strip_prefix(repo().join("golden/rust")).unwrap();
        assert!(generated.iter().any(|g| g == rel), "golden/rust/{} has no case: the Rust project of Functional.softmax.0 does not generate it", rel.display());
    }
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
    for fw in Framework::ALL.map(Framework::as_str) {
        for entry in std::fs::read_dir(dir.join(fw)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(CASES.iter().any(|c| c.framework.as_str() == fw && c.file_name() == name), "golden/python/{fw}/{name} has no case: delete it or add one");
        }
    }
}

/// `.ci/run` sets `CI`: a CI run with `UPDATE_GOLDEN` set must fail instead
/// of rewriting the expectations it checks (this test binary rerun on one
/// golden test, in a child process with both set).
#[test]
fn update_golden_is_refused_under_ci() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "rust_project_matches_golden_files", "--test-threads", "1"])
        .env("UPDATE_GOLDEN", "1")
        .env("CI", "true")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(101), "{text}");
    assert!(text.contains("UPDATE_GOLDEN is set under CI (CI is set): golden files are rewritten only by hand, never by CI"), "{text}");
}
