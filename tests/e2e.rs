//! End-to-end tests: generated scripts run for real, with torch on the CPU
//! for PyTorch dumps, MindSpore (CPU) + torch for MindSpore dumps and
//! MSAdapter (mindtorch on MindSpore's CPU) + the real torch for MSAdapter
//! dumps, and the CSVs they write are checked. Needs MSPROBE_PYTHON and
//! MSPROBE_MINDTORCH_PYTHON (scripts/test.sh sets both).
//!
//! To pay the framework imports once, most scripts run through
//! tests/e2e/harness.py, which imports the frameworks and then executes
//! each script as `__main__` in a child process forked from it (no state
//! carries over from one script to the next), in a shuffled order
//! (`MSPROBE_E2E_SEED`); a few run as plain `python SCRIPT` subprocesses to
//! cover that path too.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{mindtorch_python, python, repo, Case};
use msprobe::model::Framework::{self, MindSpore, MindTorch, PyTorch};

const DETAILS_HEADER: &str = "API Name,Bench Dtype,Tested Dtype,Shape,Cosine,MaxAbsErr,MaxRelativeErr,Status,Message";
/// The details header under `--standard api`.
const API_DETAILS_HEADER: &str = "API Name,Bench Dtype,Tested Dtype,Shape,Cosine,MaxAbsErr,MaxRelativeErr,Status,Message,Standard,Standard Metrics";
const RESULT_HEADER: &str = "API Name,Forward Test Success,Backward Test Success,Message";
/// The end of every row's Message: what was compared.
const TORCH_SIDES: &str = "tested: torch on cpu in the dumped dtype; bench: torch on cpu at raised precision";
const MINDSPORE_SIDES: &str = "tested: mindspore on cpu in the dumped dtype; bench: torch on cpu at raised precision";
const MSADAPTER_SIDES: &str = "tested: MSAdapter on cpu in the dumped dtype; bench: torch on cpu at raised precision";
const NAN_INF_NOTE: &str = "NaN/Inf at the same places on both sides; metrics over the finite elements";

fn sides(framework: Framework) -> &'static str {
    match framework {
        PyTorch => TORCH_SIDES,
        MindSpore => MINDSPORE_SIDES,
        MindTorch => MSADAPTER_SIDES,
    }
}

/// The outcome of one script run (`error`: the exception when the script
/// itself failed, shown in assertion messages). `details` and `results`
/// are empty when the script wrote no CSV (`wrote_csv`).
#[derive(Debug)]
struct Outcome {
    code: i64,
    #[allow(dead_code)]
    error: String,
    stderr: String,
    wrote_csv: bool,
    details: Vec<Vec<String>>,
    results: Vec<Vec<String>>,
    /// The harness's MSPROBE_E2E_SEED (shown in assertion messages, to rerun the order).
    #[allow(dead_code)]
    seed: String,
}

/// Reads `accuracy_checking_{kind}_*.csv` in `dir`, checking the BOM, the
/// exact header and CRLF line ends; returns the data rows.
fn read_report(dir: &Path, kind: &str, header: &str) -> Vec<Vec<String>> {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("accuracy_checking_{kind}_")))
        .collect();
    assert_eq!(files.len(), 1, "one {kind} CSV in {}: {files:?}", dir.display());
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    let stamp = name.trim_start_matches(&format!("accuracy_checking_{kind}_")).trim_end_matches(".csv");
    assert!(stamp.len() == 14 && stamp.bytes().all(|b| b.is_ascii_digit()), "timestamp %Y%m%d%H%M%S in {name}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let body = text.strip_prefix('\u{feff}').unwrap_or_else(|| panic!("{name} starts with a UTF-8 BOM"));
    assert!(body.starts_with(&format!("{header}\r\n")), "{name} header: {body}");
    let rows = common::csv_records(&text);
    assert_eq!(rows[0].join(","), header);
    rows[1..].to_vec()
}

/// Runs scripts (with extra arguments) in one harness process; the CSVs are
/// read with the details header the arguments' standard gives.
fn run_harness(runs: &[(PathBuf, Vec<&str>)], out: &Path) -> Vec<Outcome> {
    run_harness_in(&python(), runs, out)
}

/// [`run_harness`] with the Python `interpreter`.
fn run_harness_in(interpreter: &Path, runs: &[(PathBuf, Vec<&str>)], out: &Path) -> Vec<Outcome> {
    common::harness(interpreter, runs, out)
        .into_iter()
        .zip(runs)
        .map(|(l, (_, args))| {
            let dir = PathBuf::from(l["output_dir"].as_str().unwrap());
            let code = l["code"].as_i64().unwrap();
            let error = l["error"].as_str().unwrap().to_string();
            let stderr = l["stderr"].as_str().unwrap().to_string();
            let seed = l["seed"].as_str().unwrap().to_string();
            let header = if args.windows(2).any(|w| w == ["--standard", "api"]) { API_DETAILS_HEADER } else { DETAILS_HEADER };
            let wrote_csv = dir.exists();
            let (details, results) =
                if wrote_csv { (read_report(&dir, "details", header), read_report(&dir, "result", RESULT_HEADER)) } else { (vec![], vec![]) };
            Outcome { code, error, stderr, wrote_csv, details, results, seed }
        })
        .collect()
}

fn cases(framework: Framework, apis: &[&'static str], random_dump: &'static str, real_dump: &'static str) -> Vec<Case> {
    let mut all = vec![];
    for api in apis {
        for propagation in ["forward", "backward"] {
            all.push(Case::new(framework, random_dump, api, propagation, "random_data"));
            all.push(Case::new(framework, real_dump, api, propagation, "real_data"));
        }
    }
    all
}

/// Every case passes unperturbed (exit 0, a pass row per output and per
/// direction, each saying what was compared) and fails perturbed (exit 3,
/// error rows naming the max abs error).
fn check_pass_and_perturbed(cases: &[Case]) {
    let out = tempfile::tempdir().unwrap();
    let scripts: Vec<PathBuf> = cases.iter().map(|c| c.generate(&out.path().join("scripts"))).collect();
    let mut runs: Vec<(PathBuf, Vec<&str>)> = scripts.iter().map(|s| (s.clone(), vec![])).collect();
    let perturbed: Vec<usize> = (0..cases.len()).filter(|&i| cases[i].propagation == "forward" && cases[i].data_mode == "real_data").collect();
    runs.extend(perturbed.iter().map(|&i| (scripts[i].clone(), vec!["--perturb", "0.01"])));
    let outcomes = run_harness(&runs, out.path());

    let mut failures = vec![];
    for (case, o) in cases.iter().zip(&outcomes) {
        let backward = case.propagation == "backward";
        let expected_result = vec![case.api.to_string(), "pass".into(), if backward { "pass" } else { "" }.to_string(), String::new()];
        let compared = sides(case.framework);
        let noted = format!("{NAN_INF_NOTE}; {compared}");
        let ok = o.code == 0
            && o.results == vec![expected_result]
            && !o.details.is_empty()
            && o.details.iter().all(|r| {
                r[7] == "pass"
                    && r[4].parse::<f64>().is_ok_and(|c| c > 0.99)
                    && r[5].parse::<f64>().is_ok_and(|e| e < 1e-4)
                    && (r[8] == compared || r[8] == noted)
            })
            && o.details.iter().any(|r| r[0] == format!("{}.forward.output.0", case.api))
            && (!backward || o.details.iter().any(|r| r[0].starts_with(&format!("{}.backward.output.", case.api))));
        if !ok {
            failures.push(format!("{case:?}: {o:?}"));
        }
    }
    for (&i, o) in perturbed.iter().zip(&outcomes[cases.len()..]) {
        let compared = sides(cases[i].framework);
        let ok = o.code == 3
            && o.results.len() == 1
            && o.results[0][1] == "error"
            && o.details.iter().any(|r| r[7] == "error" && r[8].contains("max absolute error") && r[8].ends_with(&format!("; {compared}")));
        if !ok {
            failures.push(format!("perturbed {:?}: {o:?}", cases[i]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn pytorch_scripts_pass_on_cpu_and_catch_perturbation() {
    let apis = [
        "Torch.matmul.0",
        "Functional.linear.0",
        "Functional.softmax.0",
        "Functional.layer_norm.0",
        "Torch.add.0",
        "Tensor.split.0",
        "Functional.gelu.0",
        "Functional.embedding.0",
        "Functional.cross_entropy.0",
    ];
    check_pass_and_perturbed(&cases(PyTorch, &apis, "pytorch/statistics", "pytorch/tensor"));
}

#[test]
fn mindspore_scripts_pass_against_torch_and_catch_perturbation() {
    // MindSpore 2.10's CPU build has no kernels for mint's layer_norm,
    // embedding and cross_entropy (see the next test); the fixture model's
    // embedding is ops.gather and its loss starts with ops.log_softmax, which
    // are covered here instead.
    let apis = [
        "Mint.matmul.0",
        "MintFunctional.linear.0",
        "MintFunctional.softmax.0",
        "Mint.add.0",
        "Mint.split.0",
        "Functional.gelu.0",
        "Functional.gather.0",
        "Functional.log_softmax.0",
    ];
    check_pass_and_perturbed(&cases(MindSpore, &apis, "mindspore/statistics", "mindspore/tensor"));
}

/// MindSpore 2.10's CPU build has no kernel for these: the tested call
/// raises, which is a skip row (exit 8, or 0 with --allow-skip), not an error.
#[test]
fn an_api_without_a_kernel_is_a_skip_row() {
    let out = tempfile::tempdir().unwrap();
    let apis = [
        ("MintFunctional.embedding.0", "RuntimeError: The kernel Embedding unregistered."),
        ("MintFunctional.layer_norm.0", "RuntimeError: Create kernelmod for op LayerNormExt failed"),
    ];
    let mut runs: Vec<(PathBuf, Vec<&str>)> = vec![];
    for (api, _) in apis {
        let script = Case::new(MindSpore, "mindspore/synthetic", api, "forward", "random_data").generate(out.path());
        runs.push((script.clone(), vec![]));
        runs.push((script.clone(), vec!["--allow-skip"]));
        runs.push((script, vec!["--standard", "api"]));
    }
    let outcomes = run_harness(&runs, out.path());
    for ((api, raised), o) in apis.iter().zip(outcomes.chunks(3)) {
        // A call that did not run compared nothing: no tested/bench suffix.
        let message = format!("cannot replay here: the tested call raised {raised}");
        let row = vec![
            format!("{api}.forward"),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            "skip".into(),
            message.clone(),
        ];
        let result = vec![vec![api.to_string(), "skip".into(), String::new(), format!("{api}.forward: {message}")]];
        let (plain, allowed, api_standard) = (&o[0], &o[1], &o[2]);
        assert_eq!((plain.code, &plain.details, &plain.results), (8, &vec![row.clone()], &result), "{plain:?}");
        assert_eq!((allowed.code, &allowed.details, &allowed.results), (0, &vec![row.clone()], &result), "{allowed:?}");
        // Under --standard api a row that compared nothing has empty Standard columns.
        let api_row = [row, vec![String::new(), String::new()]].concat();
        assert_eq!((api_standard.code, &api_standard.details), (8, &vec![api_row]), "{api_standard:?}");
    }
}

/// A tensor file real_data cannot use stops the script before anything is
/// compared: one line on stderr naming the file and the problem, exit 4, no CSV.
#[test]
fn unusable_tensor_files_are_input_errors() {
    let out = tempfile::tempdir().unwrap();
    let script = Case::new(PyTorch, "pytorch/tensor", "Torch.matmul.0", "forward", "real_data").generate(&out.path().join("scripts"));
    let file = "Torch.matmul.0.forward.input.1.pt";
    let tensors = repo().join("tests/fixtures/pytorch/tensor/dump_tensor_data");
    let folder = |name: &str| {
        let dir = out.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&tensors).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
        dir
    };
    let [truncated, unsafe_, reshaped, missing, unreadable, escaping] = ["truncated", "unsafe", "reshaped", "missing", "unreadable", "escaping"].map(folder);
    // A tensor file that is a symlink out of the tensor folder.
    let outside = out.path().join("outside.pt");
    std::fs::copy(escaping.join(file), &outside).unwrap();
    std::fs::remove_file(escaping.join(file)).unwrap();
    std::os::unix::fs::symlink(&outside, escaping.join(file)).unwrap();
    let bytes = std::fs::read(truncated.join(file)).unwrap();
    std::fs::write(truncated.join(file), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::remove_file(missing.join(file)).unwrap();
    std::fs::remove_file(unreadable.join(file)).unwrap();
    std::fs::create_dir(unreadable.join(file)).unwrap();
    let pwned = out.path().join("PWNED");
    let made = Command::new(python())
        .arg("-c")
        .arg(
            "import os, sys, torch\n\
             class Payload:\n    def __reduce__(self):\n        return (os.system, ('touch ' + sys.argv[3],))\n\
             torch.save(Payload(), sys.argv[1])\n\
             torch.save(torch.zeros(3), sys.argv[2])",
        )
        .arg(unsafe_.join(file))
        .arg(reshaped.join(file))
        .arg(&pwned)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let dirs = [&truncated, &unsafe_, &reshaped, &missing, &unreadable, &escaping].map(|d| d.to_string_lossy().into_owned());
    let runs: Vec<(PathBuf, Vec<&str>)> = dirs.iter().map(|d| (script.clone(), vec!["--data-dir", d.as_str()])).collect();
    let outcomes = run_harness(&runs, out.path());
    let path = |dir: &Path| dir.join(file).to_string_lossy().into_owned();
    // The truncated file's line ends with torch's own first line, which varies with where the file ends.
    let expected = [
        format!("error: {}: truncated or malformed: ", path(&truncated)),
        format!("error: {}: refused: not a plain tensor file (Trying to load unsupported GLOBAL posix.system whose module posix is blocked.)", path(&unsafe_)),
        format!("error: {}: shape (3,) differs from the dumped (2, 4, 16, 16)", path(&reshaped)),
        format!("error: {}: no such file (--data-dir names the dump's tensor folder)", path(&missing)),
        format!("error: {}: cannot read it: Is a directory", path(&unreadable)),
        format!(
            "error: {}: refused: it resolves to {}, outside the tensor folder {}",
            path(&escaping),
            std::fs::canonicalize(&outside).unwrap().display(),
            std::fs::canonicalize(&escaping).unwrap().display()
        ),
    ];
    assert_eq!(outcomes.len(), expected.len());
    for (i, (want, o)) in expected.iter().zip(&outcomes).enumerate() {
        assert_eq!((o.code, o.wrote_csv, o.stderr.lines().count()), (4, false, 1), "{o:?}");
        if i == 0 {
            assert!(o.stderr.starts_with(want.as_str()), "{want}\n{o:?}");
        } else {
            assert_eq!(o.stderr, format!("{want}\n"));
        }
    }
    assert!(!pwned.exists(), "the unsafe pickle ran");
}

/// Explicit dtype arguments are raised on the bench like the inputs: the
/// bundled PyTorch example's softmax(x, dim=-1, dtype=torch.float32) has a
/// float64 bench.
#[test]
fn the_bench_raises_dtype_arguments() {
    let out = tempfile::tempdir().unwrap();
    let example = repo().join("examples/pytorch/config_op.json");
    let mut cfg: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(&example).unwrap()).unwrap();
    cfg.remove("extract_api_path"); // the test writes nothing beside the example
    let (config, _) = msprobe::config::OpConfig::from_object(&cfg, &example, example.parent().unwrap()).unwrap();
    let Ok(msprobe::op_generate::Outcome::Single(done)) =
        msprobe::op_generate::run(&common::single(PyTorch, config, out.path(), msprobe::render::Lang::Python))
    else {
        panic!("op_generate failed")
    };
    let o = run_harness(&[(done.files[0].clone(), vec![])], out.path()).remove(0);
    assert_eq!(o.code, 0, "{o:?}");
    // The example's config: backward, 3 iterations.
    let names: Vec<&str> = o.details.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["Functional.softmax.0.forward.output.0", "Functional.softmax.0.backward.output.0"].repeat(3));
    for r in &o.details {
        assert_eq!(r[1..4], ["torch.float64", "torch.float32", "(2, 4, 16, 16)"], "{r:?}");
        assert_eq!(r[7..], ["pass", TORCH_SIDES], "{r:?}");
    }
}

/// `--standard api` adds the Standard and Standard Metrics columns to every row.
#[test]
fn the_api_standard_writes_eleven_columns() {
    let out = tempfile::tempdir().unwrap();
    let cases = [
        Case::new(PyTorch, "pytorch/tensor", "Torch.matmul.0", "backward", "real_data"),
        Case::new(MindSpore, "mindspore/tensor", "Mint.matmul.0", "backward", "real_data"),
        Case::new(PyTorch, "pytorch/tensor", "Tensor.split.0", "forward", "real_data"),
    ];
    let runs: Vec<(PathBuf, Vec<&str>)> = cases.iter().map(|c| (c.generate(out.path()), vec!["--standard", "api"])).collect();
    let outcomes = run_harness(&runs, out.path());
    for (case, o) in cases.iter().zip(&outcomes) {
        assert_eq!(o.code, 0, "{case:?}: {o:?}");
        assert!(o.details.len() >= 2 && o.details.iter().all(|r| r.len() == 11), "{case:?}: {o:?}");
        for r in &o.details {
            assert_eq!(r[7..8], ["pass"], "{r:?}");
            if r[0].contains(".backward.") {
                // Gradients: the benchmark rule. The tested run is on the CPU, so
                // it is its own reference run, and the row says so.
                let note = "the reference run is the tested run itself, so this rule cannot fail here";
                assert_eq!(r[8], format!("{note}; {}", sides(case.framework)), "{r:?}");
                assert_eq!(r[9], "benchmark", "{r:?}");
                assert!(r[10].starts_with("small_value_err_ratio=") && r[10].contains("; rmse_ratio="), "{r:?}");
            } else if case.api.ends_with("matmul.0") {
                let note = "the reference run is the tested run itself, so this rule cannot fail here";
                assert_eq!(r[8], format!("{note}; {}", sides(case.framework)), "{r:?}");
                // float32 matmul: the ULP rule.
                assert_eq!(r[9], "ulp", "{r:?}");
                assert!(r[10].starts_with("max_ulp=") && r[10].contains("; mean_ulp=") && r[10].contains("; ulp_error_proportion="), "{r:?}");
            } else {
                // split moves data: its values must be identical.
                assert_eq!(r[8], sides(case.framework), "{r:?}");
                assert_eq!(r[9..], ["binary equality", "error_rate=0"], "{r:?}");
            }
        }
    }
}

/// The api standard's reference-based rules can fail in the scripts: with
/// `--perturb`, the tested values move and the reference (the tested run as
/// it came out, on the CPU) does not, so the ULP rule (float32 matmul
/// forward) and the benchmark rule (its gradients) see a tested side far
/// worse than its reference: `error` rows, exit 3, each saying that the
/// rule judged the perturbation.
#[test]
fn the_api_standards_reference_rules_fail_against_a_planted_reference() {
    let out = tempfile::tempdir().unwrap();
    let cases = [
        Case::new(PyTorch, "pytorch/tensor", "Torch.matmul.0", "backward", "real_data"),
        Case::new(MindSpore, "mindspore/tensor", "Mint.matmul.0", "backward", "real_data"),
    ];
    let runs: Vec<(PathBuf, Vec<&str>)> = cases.iter().map(|c| (c.generate(out.path()), vec!["--standard", "api", "--perturb", "0.001"])).collect();
    let outcomes = run_harness(&runs, out.path());
    let note = "the reference run is the tested run before --perturb, so this rule judges the perturbation";
    for (case, o) in cases.iter().zip(&outcomes) {
        assert_eq!(o.code, 3, "{case:?}: {o:?}");
        let rules: Vec<(&str, &str)> = o.details.iter().map(|r| (r[7].as_str(), r[9].as_str())).collect();
        let (forward, backward): (Vec<_>, Vec<_>) = o.details.iter().zip(&rules).partition(|(r, _)| r[0].contains(".forward."));
        assert_eq!(forward.iter().map(|(_, r)| **r).collect::<Vec<_>>(), [("error", "ulp")], "{case:?}: {o:?}");
        assert_eq!(backward.iter().map(|(_, r)| **r).collect::<Vec<_>>(), [("error", "benchmark"), ("error", "benchmark")], "{case:?}: {o:?}");
        for r in &o.details {
            assert!(r[8].ends_with(&format!("{note}; {}", sides(case.framework))), "{r:?}");
        }
    }
}

/// The calls of the gradient-layout dumps (tests/fixtures/layouts, real
/// msprobe 8.3.2 and 26.2.0; tests/grad_layouts.rs replays them natively)
/// as scripts: linear with square and non-square weights, with and without
/// bias, 2-D and 3-D, matmul folded and broadcast, attention 4-D and 3-D,
/// cross_entropy plain and label-smoothed. A script
/// differentiates the call itself on both sides, so each gradient is the
/// input's, in input order, whatever msprobe's recording lists: every row
/// passes, under both standards, with the square weight's among them.
#[test]
fn layout_dump_scripts_pass_under_both_standards() {
    const APIS: [&str; 14] = [
        "Functional.linear.0",
        "Functional.linear.1",
        "Functional.linear.2",
        "Functional.linear.3",
        "Functional.linear.4",
        "Functional.linear.5",
        "Functional.linear.6",
        "Torch.matmul.0",
        "Torch.matmul.1",
        "Torch.matmul.2",
        "Functional.scaled_dot_product_attention.0",
        "Functional.scaled_dot_product_attention.1",
        "Functional.cross_entropy.0",
        "Functional.cross_entropy.1",
    ];
    let out = tempfile::tempdir().unwrap();
    let mut cases = vec![];
    for dump in ["layouts/8.3.2/tensor", "layouts/26.2.0/tensor"] {
        for api in APIS {
            cases.push(Case::new(PyTorch, dump, api, "backward", "real_data"));
        }
    }
    let scripts: Vec<PathBuf> = cases.iter().enumerate().map(|(i, c)| c.generate(&out.path().join(format!("scripts{i}")))).collect();
    let runs: Vec<(PathBuf, Vec<&str>)> = scripts.iter().flat_map(|s| [(s.clone(), vec![]), (s.clone(), vec!["--standard", "api"])]).collect();
    let outcomes = run_harness(&runs, out.path());
    let self_reference = format!("{}; {TORCH_SIDES}", runtime::replay::SELF_REFERENCE);
    for ((script, args), o) in runs.iter().zip(&outcomes) {
        let case = &cases[scripts.iter().position(|s| s == script).unwrap()];
        assert_eq!((o.code, &o.results), (0, &vec![vec![case.api.to_string(), "pass".into(), "pass".into(), String::new()]]), "{case:?} {args:?}: {o:?}");
        let grads = o.details.iter().filter(|r| r[0].contains(".backward.output.")).count();
        // One row per differentiated input: cross_entropy's target is an index tensor.
        let inputs = match case.api {
            "Functional.linear.0" | "Functional.linear.2" | "Functional.linear.4" => 3,
            "Functional.scaled_dot_product_attention.0" | "Functional.scaled_dot_product_attention.1" => 3,
            "Functional.cross_entropy.0" | "Functional.cross_entropy.1" => 1,
            _ => 2,
        };
        assert_eq!(grads, inputs, "{case:?} {args:?}: {o:?}");
        // Under the api standard the CPU tested run is its own reference run, and the row says so.
        let message = if args.is_empty() { TORCH_SIDES } else { self_reference.as_str() };
        assert!(o.details.iter().all(|r| r[7] == "pass" && r[8] == message), "{case:?} {args:?}: {o:?}");
    }
}

/// Runs `python SCRIPT` in a fresh folder; returns (exit code, folder).
fn run_plain(script: &Path) -> (i32, tempfile::TempDir) {
    let cwd = tempfile::tempdir().unwrap();
    let out = Command::new(python()).arg(script).current_dir(cwd.path()).output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    if ![0, 3, 8].contains(&code) {
        panic!("{}: exit {code}\n{}\n{}", script.display(), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    (code, cwd)
}

#[test]
fn plain_runs_write_both_csvs_under_op_result_output() {
    let out = tempfile::tempdir().unwrap();
    for case in [
        Case::new(PyTorch, "pytorch/tensor", "Functional.gelu.0", "backward", "real_data"),
        Case::new(MindSpore, "mindspore/tensor", "Mint.matmul.0", "backward", "real_data"),
    ] {
        let (code, cwd) = run_plain(&case.generate(out.path()));
        assert_eq!(code, 0, "{case:?}");
        let results = read_report(&cwd.path().join("op_result_output"), "result", RESULT_HEADER);
        assert_eq!(results, vec![vec![case.api.to_string(), "pass".into(), "pass".into(), String::new()]]);
        let details = read_report(&cwd.path().join("op_result_output"), "details", DETAILS_HEADER);
        let dtypes = if case.framework == PyTorch { ["torch.float64", "torch.float32"] } else { ["Float64", "Float32"] };
        assert!(details.iter().all(|r| r[1] == dtypes[0] && r[2] == dtypes[1] && r[7] == "pass" && r[8] == sides(case.framework)), "{details:?}");
    }
}

#[test]
fn crafted_dump_cannot_inject_code() {
    let out = tempfile::tempdir().unwrap();
    let script = Case::new(PyTorch, "crafted", "Torch.add.0", "forward", "random_data").generate(out.path());
    // The module's code is exactly what the template writes: `tested` calls
    // torch.add, and every dump string is a constant.
    let check = Command::new(python())
        .arg("-c")
        .arg(
            "import ast, py_compile, sys\n\
             py_compile.compile(sys.argv[1], doraise=True)\n\
             tree = ast.parse(open(sys.argv[1]).read())\n\
             fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == 'tested')\n\
             print(ast.unparse(fn.body[-1]))\n\
             calls = [ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]\n\
             print('system' in ' '.join(calls), '__import__' in ' '.join(calls))",
        )
        .arg(&script)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    assert_eq!(String::from_utf8_lossy(&check.stdout), "return torch.add(*args, **kwargs)\nFalse False\n");
    let (code, cwd) = run_plain(&script);
    assert!(!cwd.path().join("PWNED").exists() && !out.path().join("PWNED").exists());
    // torch.add rejects the crafted keywords on both sides: skip rows, each
    // quoting the exception's first line as data.
    assert_eq!(code, 8);
    let details = read_report(&cwd.path().join("op_result_output"), "details", DETAILS_HEADER);
    let rejected = "TypeError: add() received an invalid combination of arguments - got unrecognized keyword arguments: out, note, alpha\"): 0}; __import__('os').system('touch PWNED'); x = {(\"";
    let rows: Vec<[&str; 3]> = details.iter().map(|r| [r[0].as_str(), r[7].as_str(), r[8].as_str()]).collect();
    let message = |side| format!("cannot replay here: the {side} call raised {rejected}");
    let (tested, bench) = (message("tested"), message("bench"));
    assert_eq!(rows, [["Torch.add.0.forward", "skip", tested.as_str()], ["Torch.add.0.forward", "skip", bench.as_str()]]);
}

/// Random data for a complex input: each part drawn from the dumped range
/// (as the runtime draws them), the bench in complex128, the call judged.
#[test]
fn random_complex_inputs_are_drawn_as_float_pairs() {
    let out = tempfile::tempdir().unwrap();
    let script = Case::new(PyTorch, "complex", "Torch.abs.0", "forward", "random_data").generate(out.path());
    let (code, cwd) = run_plain(&script);
    assert_eq!(code, 0);
    let details = read_report(&cwd.path().join("op_result_output"), "details", DETAILS_HEADER);
    let rows: Vec<[&str; 4]> = details.iter().map(|r| [r[0].as_str(), r[1].as_str(), r[3].as_str(), r[7].as_str()]).collect();
    assert_eq!(rows, [["Torch.abs.0.forward.output.0", "torch.float64", "(4,)", "pass"]]);
}

/// A complex64 call's script (the forms fixture's rotary `Tensor.__mul__`,
/// recorded by the real msprobe 26.2.0): the bench runs in complex128, the
/// raised precision, and the values are judged as pairs of float32, forward
/// and backward (both gradients), each row with the complex tensor's shape.
#[test]
fn complex_calls_are_judged_at_raised_precision() {
    for propagation in ["forward", "backward"] {
        let out = tempfile::tempdir().unwrap();
        let script = Case::new(PyTorch, "forms/26.2.0", "Tensor.__mul__.0", propagation, "real_data").generate(out.path());
        let (code, cwd) = run_plain(&script);
        assert_eq!(code, 0, "{propagation}");
        let details = read_report(&cwd.path().join("op_result_output"), "details", DETAILS_HEADER);
        let rows: Vec<[&str; 5]> = details.iter().map(|r| [r[0].as_str(), r[1].as_str(), r[2].as_str(), r[3].as_str(), r[7].as_str()]).collect();
        let mut want = vec![["Tensor.__mul__.0.forward.output.0", "torch.complex128", "torch.complex64", "(3, 2)", "pass"]];
        if propagation == "backward" {
            want.push(["Tensor.__mul__.0.backward.output.0", "torch.complex128", "torch.complex64", "(3, 2)", "pass"]);
            want.push(["Tensor.__mul__.0.backward.output.1", "torch.complex128", "torch.complex64", "(3, 2)", "pass"]);
        }
        assert_eq!(rows, want, "{propagation}");
    }
    // The complex_calls fixture (the real msprobe 26.2.0): polar, division, matmul, abs, angle, a sum.
    for api in ["Torch.polar.0", "Tensor.__truediv__.0", "Torch.matmul.0", "Torch.abs.0", "Torch.angle.0", "Tensor.sum.0", "Tensor.__mul__.0"] {
        let out = tempfile::tempdir().unwrap();
        let script = Case::new(PyTorch, "complex_calls/26.2.0", api, "backward", "real_data").generate(out.path());
        let (code, cwd) = run_plain(&script);
        let details = read_report(&cwd.path().join("op_result_output"), "details", DETAILS_HEADER);
        assert_eq!(code, 0, "{api}: {details:?}");
        assert!(details.len() >= 2 && details.iter().all(|r| r[7] == "pass"), "{api}: {details:?}");
    }
}

/// An op that must match bit for bit keeps its dtype argument on the bench:
/// `arange(0, 1, 0.1, dtype=torch.float32)` makes float32 values on both
/// sides (raising it would make a float64 ramp that differs by design).
#[test]
fn exact_ops_keep_their_dtype_argument() {
    let out = tempfile::tempdir().unwrap();
    let script = Case::new(PyTorch, "exact", "Torch.arange.0", "forward", "random_data").generate(out.path());
    let (code, cwd) = run_plain(&script);
    assert_eq!(code, 0);
    let details = read_report(&cwd.path().join("op_result_output"), "details", DETAILS_HEADER);
    let rows: Vec<[&str; 4]> = details.iter().map(|r| [r[0].as_str(), r[1].as_str(), r[7].as_str(), r[8].as_str()]).collect();
    assert_eq!(rows, [["Torch.arange.0.forward.output.0", "torch.float32", "pass", TORCH_SIDES]]);
}

/// The failure classes of the model zoo's script sweep (scripts/zoo-scripts.sh),
/// one case each from the zoo dumps: each script now ends in a pass (exit 0,
/// every row pass), with one backward row per differentiated input.
#[test]
fn zoo_failure_classes_end_in_a_verdict() {
    let out = tempfile::tempdir().unwrap();
    let zoo = |fw, dump, api, propagation, mode| Case::new(fw, dump, api, propagation, mode);
    // (case, gradient rows expected for a backward case)
    let cases = [
        // Tensors inside a list argument get gradients (torch.stack of 4 tensors, mint.cat of 2).
        (zoo(PyTorch, "zoo/pytorch/rnn_cells/statistics", "Torch.stack.0", "backward", "random_data"), 4),
        (zoo(MindSpore, "zoo/mindspore/ms_llama_block/statistics", "Mint.cat.0", "backward", "random_data"), 2),
        // mindspore.ops.conv2d's pad_mode ('same') on a bench with MindSpore's signature.
        (zoo(MindSpore, "zoo/mindspore/ms_cnn/tensor", "Functional.conv2d.1", "backward", "real_data"), 2),
        // Int32 class indices reach torch's cross_entropy as int64.
        (zoo(MindSpore, "zoo/mindspore/ms_cnn/tensor", "Functional.cross_entropy.0", "backward", "real_data"), 1),
        // batch_norm's running statistics (null recorded gradients) are not
        // differentiated: input, weight and bias are.
        (zoo(MindSpore, "zoo/mindspore/ms_cnn/tensor", "Functional.batch_norm.0", "backward", "real_data"), 3),
        // Random class indices between ignore_index (-100) and class 0 are folded into the classes.
        (zoo(MindSpore, "zoo/mindspore/ms_llama_block/statistics", "Functional.cross_entropy.0", "forward", "random_data"), 0),
        // MindSpore's dropout: the bench keeps the elements the tested run kept.
        (zoo(MindSpore, "zoo/mindspore/ms_cnn/statistics", "Functional.dropout.0", "backward", "random_data"), 1),
        // mindspore.ops.one_hot(indices, depth, on_value, off_value): its gradient w.r.t. on/off is zero in both.
        (zoo(MindSpore, "zoo/mindspore/ms_transformer_misc/statistics", "Functional.one_hot.0", "backward", "random_data"), 2),
        // mindspore.Tensor.var divides by N (ddof=0), torch by N - 1.
        (zoo(MindSpore, "zoo/mindspore/ms_transformer_misc/tensor", "Tensor.var.0", "forward", "real_data"), 0),
    ];
    let dir = |i: usize| out.path().join(format!("scripts{i}"));
    let scripts: Vec<PathBuf> = cases.iter().enumerate().map(|(i, (c, _))| c.generate(&dir(i))).collect();
    let batch_norm = std::fs::read_to_string(&scripts[4]).unwrap();
    let marked = batch_norm.lines().filter(|l| l.trim_start().starts_with("TensorSpec(") && l.contains("requires_grad=False")).count();
    assert_eq!(marked, 2, "the running statistics are marked:\n{batch_norm}");
    let runs: Vec<(PathBuf, Vec<&str>)> = scripts.iter().map(|s| (s.clone(), vec![])).collect();
    let outcomes = run_harness(&runs, out.path());
    let mut failures = vec![];
    for ((case, grads), o) in cases.iter().zip(&outcomes) {
        let compared = sides(case.framework);
        let backward_rows = o.details.iter().filter(|r| r[0].contains(".backward.output.")).count();
        let ok = o.code == 0
            && !o.details.is_empty()
            && o.details.iter().all(|r| r[7] == "pass" && r[8].ends_with(compared))
            && backward_rows == *grads
            && o.details.iter().any(|r| r[0] == format!("{}.forward.output.0", case.api));
        if !ok {
            failures.push(format!("{case:?}: {o:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// torch.empty returns uninitialized memory: only the shape is judged, a
/// pass row saying so (as `replay` does), not an error or a skip.
#[test]
fn uninitialized_memory_is_judged_by_shape_only() {
    let out = tempfile::tempdir().unwrap();
    let script = Case::new(PyTorch, "zoo/pytorch/gpt2_block/statistics", "Torch.empty.0", "forward", "random_data").generate(out.path());
    let o = run_harness(&[(script, vec![])], out.path()).remove(0);
    let message = format!("values undefined (uninitialized memory): only the shape is compared; {TORCH_SIDES}");
    let rows: Vec<[&str; 4]> = o.details.iter().map(|r| [r[0].as_str(), r[3].as_str(), r[7].as_str(), r[8].as_str()]).collect();
    assert_eq!((o.code, rows), (0, vec![["Torch.empty.0.forward.output.0", "(4, 8, 8)", "pass", message.as_str()]]), "{o:?}");
}

/// MindSpore 2.10's binaries are built against NumPy 1.x; under NumPy 2 a
/// MindSpore script says so in one line and exits EXIT_INTERNAL (6) before
/// importing MindSpore, writing no CSV. A stand-in `numpy` 2 package on
/// PYTHONPATH plays the environment.
#[test]
fn mindspore_scripts_refuse_numpy_2_in_one_line() {
    let out = tempfile::tempdir().unwrap();
    let script = Case::new(MindSpore, "mindspore/statistics", "Mint.add.0", "forward", "random_data").generate(&out.path().join("scripts"));
    let fake = out.path().join("numpy2");
    std::fs::create_dir_all(fake.join("numpy")).unwrap();
    std::fs::write(fake.join("numpy/__init__.py"), "__version__ = \"2.2.6\"\n").unwrap();
    let cwd = out.path().join("run");
    std::fs::create_dir_all(&cwd).unwrap();
    let o = Command::new(python()).arg(&script).env("PYTHONPATH", &fake).current_dir(&cwd).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(6), "{stderr}");
    assert_eq!(
        stderr,
        "error: this Python has numpy 2.2.6, but MindSpore's binaries are built against NumPy 1.x \
         (under NumPy 2 their calls fail with a bare SystemError): install numpy<2, e.g. pip install 'numpy<2'\n"
    );
    assert!(o.stdout.is_empty() && !cwd.join("op_result_output").exists());
}

/// Scripts of a `--shared-module` batch import the machinery from the
/// module beside them and run to the same verdicts: from the harness, and as
/// a plain `python SCRIPT` from another folder.
#[test]
fn shared_module_scripts_run_to_a_verdict() {
    let out = tempfile::tempdir().unwrap();
    let batch = |framework: &str, dump: &str, filter: &str| {
        let cfg = out.path().join(format!("{framework}.json"));
        let dump = repo().join("tests/fixtures").join(dump).join("dump.json");
        std::fs::write(&cfg, serde_json::json!({"dump_json_path": dump, "propagation": "forward", "random_seed": 42, "iter_times": 1}).to_string()).unwrap();
        let dir = out.path().join(framework);
        let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
            .args(["-f", framework, "op_generate", "-i"])
            .arg(&cfg)
            .arg("-o")
            .arg(&dir)
            .args(["--filter", filter, "--propagation", "both", "--shared-module", "-q"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dir
    };
    let pytorch = batch("pytorch", "pytorch/statistics", "^(Torch\\.matmul|Functional\\.softmax)\\.0$");
    let mindspore = batch("mindspore", "mindspore/statistics", "^Functional\\.gather\\.0$");
    let scripts =
        [pytorch.join("Torch.matmul.0.forward.py"), pytorch.join("Functional.softmax.0.backward.py"), mindspore.join("Functional.gather.0.forward.py")];
    for s in &scripts {
        let text = std::fs::read_to_string(s).unwrap();
        assert!(text.contains("from msprobe_repro_") && !text.contains("def judge("), "{}: imports the machinery", s.display());
    }
    let runs: Vec<(PathBuf, Vec<&str>)> = scripts.iter().map(|s| (s.clone(), vec![])).collect();
    let outcomes = run_harness(&runs, out.path());
    for (script, o) in scripts.iter().zip(&outcomes) {
        let api = script.file_name().unwrap().to_string_lossy().split(".forward").next().unwrap().split(".backward").next().unwrap().to_string();
        assert_eq!(o.code, 0, "{}: {o:?}", script.display());
        assert_eq!(o.results.len(), 1, "{o:?}");
        assert_eq!(o.results[0][0], api, "{o:?}");
        assert!(!o.details.is_empty() && o.details.iter().all(|r| r[7] == "pass"), "{o:?}");
    }
    assert!(outcomes[1].details.iter().any(|r| r[0] == "Functional.softmax.0.backward.output.0"), "{:?}", outcomes[1]);
    let (code, cwd) = run_plain(&scripts[0]);
    assert_eq!(code, 0);
    let results = read_report(&cwd.path().join("op_result_output"), "result", RESULT_HEADER);
    assert_eq!(results, vec![vec!["Torch.matmul.0".to_string(), "pass".into(), String::new(), String::new()]]);
}

/// The folder of the MSAdapter environment that holds MSAdapter's `torch`
/// package: on PYTHONPATH it enables MSAdapter (the op_generate document's
/// setting), and `import torch` is MSAdapter's.
fn msadapter_folder() -> String {
    let o = Command::new(mindtorch_python()).args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let folder = Path::new(String::from_utf8_lossy(&o.stdout).trim()).join("mindtorch");
    let check = "import mindspore, torch; print(isinstance(torch.tensor(0.0), mindspore.Tensor))";
    let shadowed = Command::new(mindtorch_python()).args(["-c", check]).env("PYTHONPATH", &folder).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&shadowed.stdout), "True\n", "{}: import torch is MSAdapter's", folder.display());
    folder.to_string_lossy().into_owned()
}

/// Runs `interpreter SCRIPT` in a fresh folder with `env`: (exit code, stderr, the details rows as (name, status, message)).
fn run_script_in(interpreter: &Path, script: &Path, env: &[(&str, &str)]) -> (i32, String, Vec<(String, String, String)>) {
    let cwd = tempfile::tempdir().unwrap();
    let o = Command::new(interpreter).arg(script).envs(env.iter().copied()).current_dir(cwd.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let csv = cwd.path().join("op_result_output");
    let rows = if csv.exists() { common::detail_rows(&csv) } else { vec![] };
    (o.status.code().unwrap_or(-1), stderr, rows)
}

/// The op_generate document's own example (doc 33 §2.1 dump, §2.2 config,
/// verbatim, run as the document says from its folder) gives
/// `Tensor.reshape.779.backward.py`, which runs under MSAdapter to a verdict:
/// with MSAdapter installed as the mindtorch package, and enabled through
/// PYTHONPATH as the document describes.
#[test]
fn the_documents_msadapter_example_runs_under_msadapter() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["dump.json", "config_op.json"] {
        std::fs::copy(repo().join("tests/fixtures/mindtorch/doc33_example").join(file), dir.path().join(file)).unwrap();
    }
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "mindspore", "op_generate", "-i", "./config_op.json", "-o", "./"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let script = dir.path().join("Tensor.reshape.779.backward.py");
    assert!(script.exists(), "{}", String::from_utf8_lossy(&o.stdout));
    let folder = msadapter_folder();
    for env in [vec![], vec![("PYTHONPATH", folder.as_str())]] {
        let (code, stderr, rows) = run_script_in(&mindtorch_python(), &script, &env);
        assert!(!stderr.contains("Traceback"), "{env:?}: {stderr}");
        let rows: Vec<(&str, &str, &str)> = rows.iter().map(|(n, s, m)| (n.as_str(), s.as_str(), m.as_str())).collect();
        assert_eq!(
            (code, rows),
            (0, vec![("Tensor.reshape.779.forward.output.0", "pass", MSADAPTER_SIDES), ("Tensor.reshape.779.backward.output.0", "pass", MSADAPTER_SIDES),]),
            "{env:?}: {stderr}"
        );
    }
}

/// Every call of the real MSAdapter fixture dumps (msprobe 8.3.2 and 26.2.0;
/// statistics with random data, tensor with real data; forward and
/// backward) gets a script, and every script runs under MSAdapter to a
/// verdict: no traceback, and every row passes (the dumps were made on the
/// CPU, so no row is an error; the counts are printed). A sweep: every API
/// of each model in each direction runs, from one of the model's six dumps
/// and one of its repeated calls (`common::sweep`; `MSPROBE_RS_SWEEP=full`
/// runs all 576 scripts).
#[test]
fn every_msadapter_fixture_script_runs_to_a_verdict() {
    let out = tempfile::tempdir().unwrap();
    // (model, dump, script) of every script generated.
    let mut all: Vec<(&str, String, PathBuf)> = vec![];
    let (mut names, mut generated) = (vec![], vec![]);
    for model in ["mlp", "attention"] {
        for version in ["8.3.2", "26.2.0"] {
            // Statistics dumps with random data; tensor dumps with their own data and with random data.
            for (task, mode) in [("statistics", "random_data"), ("tensor", "real_data"), ("tensor", "random_data")] {
                let name = format!("{model}_{version}_{task}_{mode}");
                let dump = repo().join("tests/fixtures/mindtorch").join(model).join(version).join(task).join("dump.json");
                let cfg = out.path().join(format!("{name}.json"));
                std::fs::write(&cfg, serde_json::json!({"dump_json_path": dump, "data_mode": mode, "random_seed": 42, "iter_times": 1}).to_string()).unwrap();
                let dir = out.path().join(&name);
                let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
                    .args(["-f", "mindspore", "op_generate", "-i"])
                    .arg(&cfg)
                    .arg("-o")
                    .arg(&dir)
                    .args(["--all", "--propagation", "both", "-q"])
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
                let mut scripts: Vec<PathBuf> =
                    std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "py")).collect();
                scripts.sort();
                generated.push(scripts.len());
                all.extend(scripts.into_iter().map(|s| (model, name.clone(), s)));
                names.push(name);
            }
        }
    }
    // 21 calls forward and backward (mlp); 29 forward and 25 backward (attention).
    assert_eq!(generated, [42, 42, 42, 42, 42, 42, 54, 54, 54, 54, 54, 54], "{names:?}");
    // The sweep: each API of a model in each direction once, from one of its six dumps.
    let all = common::sweep(all, |(model, name, s)| (model.to_string(), format!("{name}/{}", s.file_name().unwrap().to_string_lossy())));
    let mut runs: Vec<(PathBuf, Vec<&str>)> = vec![];
    let mut dumps = vec![];
    for name in names {
        let scripts: Vec<PathBuf> = all.iter().filter(|(_, n, _)| *n == name).map(|(_, _, s)| s.clone()).collect();
        assert!(!scripts.is_empty() || common::sweep_is_full(), "the sweep left no script of {name}");
        dumps.push((name, runs.len()..runs.len() + scripts.len()));
        runs.extend(scripts.into_iter().map(|s| (s, vec![])));
    }
    let outcomes = run_harness_in(&mindtorch_python(), &runs, out.path());
    let mut failures = vec![];
    for (name, range) in &dumps {
        let mut statuses = std::collections::BTreeMap::<String, usize>::new();
        for ((script, _), o) in runs[range.clone()].iter().zip(&outcomes[range.clone()]) {
            for r in &o.details {
                *statuses.entry(r[7].clone()).or_default() += 1;
            }
            let verdict = o.code == 0 && o.error.is_empty() && !o.stderr.contains("Traceback") && o.results.len() == 1 && !o.details.is_empty();
            if !verdict || o.details.iter().any(|r| r[7] != "pass" || r[8] != MSADAPTER_SIDES) {
                failures.push(format!("{}: {o:?}", script.display()));
            }
        }
        eprintln!("{name}: {} scripts, rows {statuses:?}", range.len());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Without MSAdapter (the main environment has MindSpore 2.10 and torch,
/// no mindtorch) or without the real torch beside it, an MSAdapter script
/// says what is missing in one line and exits EXIT_INTERNAL (6: the script
/// cannot run in this Python), writing no CSV.
#[test]
fn msadapter_scripts_name_what_is_missing() {
    let out = tempfile::tempdir().unwrap();
    let script = Case::new(MindTorch, "mindtorch/mlp/8.3.2/statistics", "Torch.tanh.0", "forward", "random_data").generate(out.path());
    let (code, stderr, rows) = run_script_in(&python(), &script, &[]);
    let missing = "error: cannot run here: MSAdapter's torch (the tested side) is not importable (ModuleNotFoundError: No module named 'mindtorch'): \
                   install MSAdapter (tested: pip install mindtorch==0.4.0 with mindspore-dev==2.6.0.dev20250323), \
                   or put its folder that holds its torch package on PYTHONPATH";
    assert_eq!((code, stderr.lines().filter(|l| l.starts_with("error:")).collect::<Vec<_>>(), rows.len()), (6, vec![missing], 0), "{stderr}");
    assert!(!stderr.contains("Traceback"), "{stderr}");
    // A torch that cannot be imported, in front of the MSAdapter environment's real one.
    let fake = out.path().join("no_torch");
    std::fs::create_dir_all(fake.join("torch")).unwrap();
    std::fs::write(fake.join("torch/__init__.py"), "raise ModuleNotFoundError(\"No module named 'torch'\")\n").unwrap();
    let (code, stderr, rows) = run_script_in(&mindtorch_python(), &script, &[("PYTHONPATH", &fake.to_string_lossy())]);
    let missing = "error: cannot run here: the real torch (the bench) is not importable besides MSAdapter's (ModuleNotFoundError: No module named 'torch'): install torch";
    assert_eq!((code, stderr.lines().filter(|l| l.starts_with("error:")).collect::<Vec<_>>(), rows.len()), (6, vec![missing], 0), "{stderr}");
    assert!(!stderr.contains("Traceback"), "{stderr}");
}

/// `--shared-module` on an MSAdapter dump writes the mindtorch module once;
/// its scripts run to the same verdicts, in the harness (and to errors with
/// `--perturb`) and as a plain `python SCRIPT` with MSAdapter enabled
/// through PYTHONPATH.
#[test]
fn msadapter_shared_module_scripts_run_to_a_verdict() {
    let out = tempfile::tempdir().unwrap();
    let dump = repo().join("tests/fixtures/mindtorch/attention/8.3.2/tensor/dump.json");
    let cfg = out.path().join("config.json");
    std::fs::write(&cfg, serde_json::json!({"dump_json_path": dump, "data_mode": "real_data"}).to_string()).unwrap();
    let dir = out.path().join("scripts");
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "mindspore", "op_generate", "-i"])
        .arg(&cfg)
        .arg("-o")
        .arg(&dir)
        .args(["--filter", "^(Torch\\.matmul|Functional\\.softmax|Tensor\\.__add__)\\.0$", "--propagation", "both", "--shared-module", "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let module = format!("{}.py", msprobe::render::machinery::shared_module_name(MindTorch));
    assert!(dir.join(&module).exists(), "{module}");
    let mut scripts: Vec<PathBuf> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "py") && !p.ends_with(&module)).collect();
    scripts.sort();
    assert_eq!(scripts.len(), 6, "{scripts:?}");
    let mut runs: Vec<(PathBuf, Vec<&str>)> = scripts.iter().map(|s| (s.clone(), vec![])).collect();
    runs.extend(scripts.iter().map(|s| (s.clone(), vec!["--perturb", "0.01"])));
    let outcomes = run_harness_in(&mindtorch_python(), &runs, out.path());
    for (script, o) in scripts.iter().zip(&outcomes) {
        assert!(o.code == 0 && !o.details.is_empty() && o.details.iter().all(|r| r[7] == "pass" && r[8] == MSADAPTER_SIDES), "{}: {o:?}", script.display());
    }
    // Perturbed, the tested outputs are errors: the comparison catches them.
    for (script, o) in scripts.iter().zip(&outcomes[scripts.len()..]) {
        let caught = o.details.iter().any(|r| r[7] == "error" && r[8].contains("max absolute error") && r[8].ends_with(MSADAPTER_SIDES));
        assert!(o.code == 3 && caught, "perturbed {}: {o:?}", script.display());
    }
    let folder = msadapter_folder();
    let (code, stderr, rows) = run_script_in(&mindtorch_python(), &scripts[0], &[("PYTHONPATH", &folder)]);
    assert!(
        code == 0 && !rows.is_empty() && rows.iter().all(|(_, s, m)| s == "pass" && m == MSADAPTER_SIDES),
        "{}: {code} {rows:?}\n{stderr}",
        scripts[0].display()
    );
}
