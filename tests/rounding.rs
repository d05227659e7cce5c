//! Issue 21: verdicts that tell rounding from error, on real msprobe dumps
//! (tests/fixtures/rounding/, made by zoo/make/make_rounding.sh; zoo/README.md
//! says what each holds and quotes the figures).
//!
//! - Correct results that a rounding-blind standard takes for errors (the
//!   "Why" of the issue): an SGD weight-decay step whose `d_p.add(p,
//!   alpha=wd)` nearly cancels, a bf16-autocast residual MLP, torch's CPU
//!   bf16 `linear` with a cancelling bias, MindSpore's CPU gelu gradient near
//!   x = -0.75. Under `--standard bound` and `--standard api` no row is an
//!   error: every row's status is pinned, natively and by script.
//! - Planted errors (item 3): six calls whose recorded output is a wrong
//!   kernel's result (zoo/make/rounding/plant.py). Under `--standard bound`
//!   each is an `error` of rule `rounding bound` with its exact Message, and
//!   the unplanted dump passes; by script the same wrong kernels replace the
//!   generated script's `tested` function.
//!
//! The expected figures (%.6g) come from zoo/make/rounding/bound_figures.py,
//! which computes BOUND.md's bound with numpy in float64 independently of
//! msprobe-rs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{python, repo, Case};
use msprobe::model::Framework::{self, MindSpore, PyTorch};

/// What a native row on a recorded output / gradient says it compared.
const RECORDED: &str = "tested: device output recorded in the dump; bench: float64 recompute on the CPU";
/// What a script's row says it compared, by framework.
const TORCH_SIDES: &str = "tested: torch on cpu in the dumped dtype; bench: torch on cpu at raised precision";
/// The bound standard's rule, as the Standard column names it.
const RULE: &str = "rounding bound";

/// One row of a details CSV, by column name.
#[derive(Debug, Clone)]
struct Row {
    name: String,
    status: String,
    message: String,
    standard: String,
    metrics: String,
}

/// The rows of the one `accuracy_checking_details_*.csv` in `dir`.
fn details(dir: &Path) -> Vec<Row> {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("accuracy_checking_details_"))
        .collect();
    assert_eq!(files.len(), 1, "one details CSV in {}: {files:?}", dir.display());
    let mut records = common::csv_file_records(&files[0]).into_iter();
    let header = records.next().unwrap();
    let col = |name: &str| header.iter().position(|h| h == name);
    let (status, message) = (col("Status").unwrap(), col("Message").unwrap());
    let (standard, metrics) = (col("Standard"), col("Standard Metrics"));
    records
        .map(|cells| {
            let get = |i: Option<usize>| i.map(|i| cells[i].clone()).unwrap_or_default();
            Row { name: cells[0].clone(), status: cells[status].clone(), message: cells[message].clone(), standard: get(standard), metrics: get(metrics) }
        })
        .collect()
}

/// A dump folder under tests/fixtures/rounding.
fn fixture(dump: &str) -> PathBuf {
    repo().join("tests/fixtures/rounding").join(dump)
}

/// `msprobe -f FLAG replay --dump DUMP --standard STANDARD --data-mode MODE`: (exit code, rows).
fn replay(flag: &str, dump: &str, standard: &str, data_mode: &str) -> (i32, Vec<Row>) {
    let out = tempfile::tempdir().unwrap();
    let dir = fixture(dump);
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", flag, "replay", "--dump", dir.to_str().unwrap(), "--output-dir", out.path().to_str().unwrap()])
        .args(["--standard", standard, "--data-mode", data_mode])
        .output()
        .unwrap();
    let code = o.status.code().unwrap();
    assert!(
        out.path().read_dir().unwrap().next().is_some(),
        "{dump} ({standard}): no CSV, exit {code}\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (code, details(out.path()))
}

// ---------------------------------------------------------------------------
// Planted errors (item 3)

/// One planted error: the call, the wrong kernel and the expected verdicts.
struct Planted {
    /// The call (`Prefix.op.N`, forward) in planted/correct and planted/wrong.
    api: &'static str,
    /// The wrong kernel as the script's `tested(*args, **kwargs)` (the
    /// function WRONG of zoo/make/rounding/plant.py runs on the same inputs).
    kernel: &'static str,
    /// The rule's Message natively (bench in float64).
    native: &'static str,
    /// The Standard Metrics natively.
    metrics: &'static str,
    /// The rule's Message by script, where its bench (torch at raised
    /// precision: float16 -> float32) gives other figures.
    script: Option<&'static str>,
    /// The Standard Metrics of the unplanted call natively.
    correct_metrics: &'static str,
}

const PLANTED: [Planted; 6] = [
    Planted {
        api: "Torch.sum.0",
        kernel: "    acc = torch.zeros((), dtype=args[0].dtype, device=args[0].device)\n    for value in args[0].reshape(-1):\n        acc = acc + value\n    return acc\n",
        native: "rounding bound: 1 of 1 elements beyond k*(u*magnitude + eta) + ulp/2 (k=16, u=5.96046e-08); worst 27.6767 times the bound at element 0: tested 1025.0, bench 1038.8657531738281 (13.8658 ULPs of float16), magnitude 1038.87",
        metrics: "bound_ratio=27.6767; beyond_bound=1; k=16; u=5.96046e-08",
        script: Some("rounding bound: 1 of 1 elements beyond k*(u*magnitude + eta) + ulp/2 (k=16, u=5.96046e-08); worst 27.6766 times the bound at element 0: tested 1025.0, bench 1038.86572265625 (13.8657 ULPs of float16), magnitude 1038.87"),
        correct_metrics: "bound_ratio=0.267963; beyond_bound=0; k=16; u=5.96046e-08",
    },
    Planted {
        api: "Torch.matmul.0",
        kernel: "    return torch.matmul(args[0].to(torch.bfloat16).to(args[0].dtype), args[1].to(torch.bfloat16).to(args[1].dtype))\n",
        native: "rounding bound: 255 of 256 elements beyond k*(u*magnitude + eta) + ulp/2 (k=16, u=5.96046e-08); worst 1292.03 times the bound at element [6, 11]: tested -3.3616743087768555, bench -3.415878523624543 (227349 ULPs of float32), magnitude 41.9906",
        metrics: "bound_ratio=1292.03; beyond_bound=0.996094; k=16; u=5.96046e-08",
        script: None,
        correct_metrics: "bound_ratio=0.115548; beyond_bound=0; k=16; u=5.96046e-08",
    },
    Planted {
        api: "Torch.mul.0",
        kernel: "    r = torch.mul(args[0], args[1])\n    for _ in range(4):\n        r = torch.nextafter(r, torch.full_like(r, float(\"inf\")))\n    return r\n",
        native: "rounding bound: 64 of 64 elements beyond k*(u*magnitude + eta) + ulp/2 (k=3, u=5.96046e-08); worst 2.09859 times the bound at element [50]: tested 0.5452664494514465, bench 0.5452661822934886 (4.48217 ULPs of float32), magnitude 0.545266",
        metrics: "bound_ratio=2.09859; beyond_bound=1; k=3; u=5.96046e-08",
        script: None,
        correct_metrics: "bound_ratio=0.225755; beyond_bound=0; k=3; u=5.96046e-08",
    },
    Planted {
        api: "Functional.gelu.0",
        kernel: "    return torch.nn.functional.gelu(args[0], approximate=\"tanh\")\n",
        native: "rounding bound: 121 of 128 elements beyond k*(u*magnitude + eta) + ulp/2 (k=32, u=5.96046e-08); worst 88.9553 times the bound at element [22]: tested -0.011223722249269485, bench -0.011691064557955332 (501805 ULPs of float32), magnitude 2.69194",
        metrics: "bound_ratio=88.9553; beyond_bound=0.945312; k=32; u=5.96046e-08",
        script: None,
        correct_metrics: "bound_ratio=0.0989649; beyond_bound=0; k=32; u=5.96046e-08",
    },
    Planted {
        api: "Torch.sum.1",
        kernel: "    x, dim = args[0], kwargs[\"dim\"]\n    return torch.sum(x.narrow(dim, 0, x.shape[dim] - 1), dim=dim)\n",
        native: "rounding bound: 8 of 8 elements beyond k*(u*magnitude + eta) + ulp/2 (k=16, u=5.96046e-08); worst 108495 times the bound at element [2]: tested -7.411464691162109, bench -9.967527040280402 (2.68023e+06 ULPs of float32), magnitude 23.7037",
        metrics: "bound_ratio=108495; beyond_bound=1; k=16; u=5.96046e-08",
        script: None,
        correct_metrics: "bound_ratio=0.0328879; beyond_bound=0; k=16; u=5.96046e-08",
    },
    Planted {
        api: "Torch.add.0",
        kernel: "    r = torch.add(args[0], args[1]).clone()\n    r[17] = -r[17]\n    return r\n",
        native: "rounding bound: 1 of 64 elements beyond k*(u*magnitude + eta) + ulp/2 (k=3, u=5.96046e-08); worst 4.08868e+06 times the bound at element [17]: tested 0.8316426873207092, bench -0.8316426873207092 (2.79053e+07 ULPs of float32), magnitude 1.94167",
        metrics: "bound_ratio=4.08868e+06; beyond_bound=0.015625; k=3; u=5.96046e-08",
        script: None,
        correct_metrics: "bound_ratio=0.2419; beyond_bound=0; k=3; u=5.96046e-08",
    },
];

fn row<'a>(rows: &'a [Row], name: &str) -> &'a Row {
    rows.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("no row {name} in {rows:#?}"))
}

#[test]
fn planted_errors_are_rounding_bound_errors_natively() {
    let (code, rows) = replay("pytorch", "planted/wrong", "bound", "real_data");
    assert_eq!(rows.len(), PLANTED.len(), "{rows:#?}");
    let mut failures = vec![];
    for p in &PLANTED {
        let r = row(&rows, &format!("{}.forward.output.0", p.api));
        let message = format!("{}; {RECORDED}", p.native);
        if (r.status.as_str(), r.standard.as_str(), r.message.as_str(), r.metrics.as_str()) != ("error", RULE, message.as_str(), p.metrics) {
            failures.push(format!("{}: expected error / {RULE} / {message} / {}\n  got {r:?}", p.api, p.metrics));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(code, 3);
}

#[test]
fn the_unplanted_calls_pass_the_rounding_bound_natively() {
    let (code, rows) = replay("pytorch", "planted/correct", "bound", "real_data");
    assert_eq!(rows.len(), PLANTED.len(), "{rows:#?}");
    let mut failures = vec![];
    for p in &PLANTED {
        let r = row(&rows, &format!("{}.forward.output.0", p.api));
        if r.status != "pass" || r.standard != RULE || r.message != RECORDED || r.metrics != p.correct_metrics {
            failures.push(format!("{}: expected pass / {RULE} / {RECORDED} / {}\n  got {r:?}", p.api, p.correct_metrics));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(code, 0);
}

/// The script of `api` from `dump` (real data from a tensor dump, random
/// data from a statistics dump), generated into `out`.
fn script(framework: Framework, dump: &str, api: &str, propagation: &'static str, out: &Path) -> PathBuf {
    let dump: &'static str = Box::leak(format!("rounding/{dump}").into_boxed_str());
    let api: &'static str = Box::leak(api.to_string().into_boxed_str());
    let data_mode = if dump.ends_with("/statistics") { "random_data" } else { "real_data" };
    Case::new(framework, dump, api, propagation, data_mode).generate(out)
}

/// `script` with its `tested` function's body replaced by `body`.
fn plant(script: &Path, body: &str) {
    let text = std::fs::read_to_string(script).unwrap();
    let start = text.find("def tested(*args, **kwargs):\n").expect("the script defines tested");
    let end = start + text[start..].find("\n\n\ndef bench(").expect("bench follows tested");
    let planted = format!("def tested(*args, **kwargs):\n    \"\"\"A wrong kernel (tests/rounding.rs).\"\"\"\n{}", body.trim_end_matches('\n'));
    std::fs::write(script, format!("{}{}{}", &text[..start], planted, &text[end..])).unwrap();
}

/// Runs scripts with their arguments through the harness (tests/e2e/harness.py):
/// per script (exit code, rows, its exception and stderr for messages).
fn run_scripts(interpreter: &Path, runs: &[(PathBuf, Vec<&str>)], out: &Path) -> Vec<(i64, Vec<Row>, String)> {
    let lines = common::harness(interpreter, runs, out);
    lines
        .iter()
        .map(|l| {
            let dir = PathBuf::from(l["output_dir"].as_str().unwrap());
            let rows = if dir.exists() { details(&dir) } else { vec![] };
            let why = format!("{} {} (MSPROBE_E2E_SEED={})", l["error"].as_str().unwrap(), l["stderr"].as_str().unwrap(), l["seed"].as_str().unwrap());
            (l["code"].as_i64().unwrap(), rows, why)
        })
        .collect()
}

#[test]
fn planted_errors_are_rounding_bound_errors_by_script_and_the_unplanted_pass() {
    let out = tempfile::tempdir().unwrap();
    let mut runs = vec![];
    for p in &PLANTED {
        let correct = script(PyTorch, "planted/correct", p.api, "forward", &out.path().join("correct"));
        let wrong = script(PyTorch, "planted/correct", p.api, "forward", &out.path().join("wrong"));
        plant(&wrong, p.kernel);
        runs.push((correct, vec!["--standard", "bound"]));
        runs.push((wrong, vec!["--standard", "bound"]));
    }
    let outcomes = run_scripts(&python(), &runs, out.path());
    let mut failures = vec![];
    for (p, pair) in PLANTED.iter().zip(outcomes.chunks(2)) {
        let name = format!("{}.forward.output.0", p.api);
        let (code, rows, why) = &pair[0];
        let ok =
            *code == 0 && rows.len() == 1 && rows[0].name == name && rows[0].status == "pass" && rows[0].standard == RULE && rows[0].message == TORCH_SIDES;
        if !ok {
            failures.push(format!("unplanted {}: exit {code}, {rows:?} {why}", p.api));
        }
        let (code, rows, why) = &pair[1];
        let message = format!("{}; {TORCH_SIDES}", p.script.unwrap_or(p.native));
        // The metrics are the native ones where the Message is.
        let metrics_ok = p.script.is_some() || rows.first().is_some_and(|r| r.metrics == p.metrics);
        let ok = *code == 3
            && rows.len() == 1
            && rows[0].name == name
            && rows[0].status == "error"
            && rows[0].standard == RULE
            && rows[0].message == message
            && metrics_ok;
        if !ok {
            failures.push(format!("planted {}: expected exit 3, error / {RULE} / {message} / {}\n  got exit {code}, {rows:?} {why}", p.api, p.metrics));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------
// Correct results a rounding-blind standard takes for errors ("Why" 1 and 2)

/// One dump of cases (a)-(d) and the rows that are not a pass, under both
/// the bound and the api standard (every other row is a pass, none an error).
struct Fixture {
    /// Under tests/fixtures/rounding.
    dump: &'static str,
    framework: Framework,
    /// How many rows the native replay writes.
    rows: usize,
    /// (row, status) of the native rows that are not a pass, by standard.
    bound: &'static [(&'static str, &'static str)],
    api: &'static [(&'static str, &'static str)],
    /// (row, status) of the rows that are not a pass, over all the dump's
    /// scripts (one per call), under either standard.
    scripts: &'static [(&'static str, &'static str)],
}

/// The autocast linears whose recorded input is the bfloat16 output of the
/// previous one and whose weight is float32: the scripts call
/// `torch.nn.functional.linear` on them as recorded, which torch refuses
/// ("mat1 and mat2 must have the same dtype"), a skip row for the tested and
/// for the bench side of each (the native replay knows the autocast quirk).
const AUTOCAST_SKIPS: &[(&str, &str)] = &[
    ("Functional.linear.1.backward", "skip"),
    ("Functional.linear.1.backward", "skip"),
    ("Functional.linear.2.backward", "skip"),
    ("Functional.linear.2.backward", "skip"),
    ("Functional.linear.3.backward", "skip"),
    ("Functional.linear.3.backward", "skip"),
    ("Functional.linear.4.backward", "skip"),
    ("Functional.linear.4.backward", "skip"),
    ("Functional.linear.5.backward", "skip"),
    ("Functional.linear.5.backward", "skip"),
];

const CASES: [Fixture; 12] = [
    Fixture { dump: "sgd_weight_decay/8.3.2/tensor", framework: PyTorch, rows: 17, bound: &[], api: &[], scripts: &[] },
    Fixture { dump: "sgd_weight_decay/8.3.2/statistics", framework: PyTorch, rows: 17, bound: &[], api: &[], scripts: &[] },
    Fixture { dump: "sgd_weight_decay/26.2.0/tensor", framework: PyTorch, rows: 16, bound: &[], api: &[], scripts: &[] },
    Fixture { dump: "sgd_weight_decay/26.2.0/statistics", framework: PyTorch, rows: 16, bound: &[], api: &[], scripts: &[] },
    Fixture { dump: "autocast_residual/8.3.2/tensor", framework: PyTorch, rows: 70, bound: &[], api: &[], scripts: AUTOCAST_SKIPS },
    Fixture { dump: "autocast_residual/8.3.2/statistics", framework: PyTorch, rows: 70, bound: &[], api: &[], scripts: AUTOCAST_SKIPS },
    Fixture { dump: "autocast_residual/26.2.0/tensor", framework: PyTorch, rows: 67, bound: &[], api: &[], scripts: AUTOCAST_SKIPS },
    Fixture { dump: "autocast_residual/26.2.0/statistics", framework: PyTorch, rows: 67, bound: &[], api: &[], scripts: AUTOCAST_SKIPS },
    Fixture { dump: "linear_bias_cancel/8.3.2/tensor", framework: PyTorch, rows: 1, bound: &[], api: &[], scripts: &[] },
    Fixture { dump: "linear_bias_cancel/26.2.0/tensor", framework: PyTorch, rows: 1, bound: &[], api: &[], scripts: &[] },
    Fixture { dump: "ms_gelu_grad/26.2.0/tensor", framework: MindSpore, rows: 4, bound: &[], api: &[], scripts: &[] },
    Fixture { dump: "ms_gelu_grad/26.2.0/statistics", framework: MindSpore, rows: 4, bound: &[], api: &[], scripts: &[] },
];

/// The rows of `rows` that are not a pass, as (name, status), sorted.
fn not_pass(rows: &[Row]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = rows.iter().filter(|r| r.status != "pass").map(|r| (r.name.clone(), r.status.clone())).collect();
    v.sort();
    v
}

fn expected(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = list.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect();
    v.sort();
    v
}

fn flag(framework: Framework) -> &'static str {
    match framework {
        MindSpore => "mindspore",
        _ => "pytorch",
    }
}

#[test]
fn cancellation_and_real_kernels_are_not_errors_natively() {
    let mut failures = vec![];
    for case in &CASES {
        let mode = if case.dump.ends_with("/statistics") { "random_data" } else { "real_data" };
        for (standard, list) in [("bound", case.bound), ("api", case.api)] {
            let (code, rows) = replay(flag(case.framework), case.dump, standard, mode);
            let got = not_pass(&rows);
            if code != 0 || rows.len() != case.rows || got != expected(list) {
                let shown: Vec<String> = rows.iter().filter(|r| r.status != "pass").map(|r| format!("{} {} {}", r.name, r.status, r.message)).collect();
                failures.push(format!("{} ({standard}): exit {code}, {} rows, not pass:\n  {}", case.dump, rows.len(), shown.join("\n  ")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The calls of a dump and the propagation each script replays (backward
/// where the dump has the call's backward entry).
fn calls(dump: &str) -> Vec<(String, &'static str)> {
    let text = std::fs::read_to_string(fixture(dump).join("dump.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let data = json["data"].as_object().unwrap();
    data.keys()
        .filter_map(|k| k.strip_suffix(".forward"))
        .map(|api| (api.to_string(), if data.contains_key(&format!("{api}.backward")) { "backward" } else { "forward" }))
        .collect()
}

/// The exit code a script's rows call for (tests/e2e.rs: 3 with an error
/// row, 8 with a skip and no error, else 0).
fn code_for(rows: &[Row]) -> i64 {
    if rows.iter().any(|r| r.status == "error") {
        3
    } else if rows.iter().any(|r| r.status == "skip") {
        8
    } else {
        0
    }
}

#[test]
fn cancellation_and_real_kernels_are_not_errors_by_script() {
    let out = tempfile::tempdir().unwrap();
    let mut failures = vec![];
    // Every case's scripts in one harness run (the frameworks imported once): each case's range of runs.
    let mut runs = vec![];
    let mut ranges = vec![];
    for case in &CASES {
        let start = runs.len();
        for (api, propagation) in calls(case.dump) {
            let s = script(case.framework, case.dump, &api, propagation, &out.path().join(case.dump));
            runs.extend(["bound", "api"].map(|standard| (s.clone(), vec!["--standard", standard])));
        }
        ranges.push(start..runs.len());
    }
    let total = runs.len();
    let outcomes = run_scripts(&python(), &runs, out.path());
    for (case, range) in CASES.iter().zip(ranges) {
        let (runs, outcomes) = (&runs[range.clone()], &outcomes[range]);
        for standard in ["bound", "api"] {
            let mut rows = vec![];
            for ((script, args), (code, got, why)) in runs.iter().zip(outcomes).filter(|((_, a), _)| a[1] == standard) {
                if got.is_empty() || *code != code_for(got) {
                    failures.push(format!("{} {args:?}: exit {code}, {got:?} {why}", script.display()));
                }
                rows.extend(got.iter().cloned());
            }
            if not_pass(&rows) != expected(case.scripts) {
                failures.push(format!("{} ({standard}, scripts): not pass {:?}", case.dump, not_pass(&rows)));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures over {total} script runs:\n{}", failures.len(), failures.join("\n"));
}

/// The api standard's rows that its rule alone fails, passed because every
/// element is within the rounding bound, and the Message saying so.
#[test]
fn the_api_standard_passes_the_cancelling_calls_and_says_why() {
    const EMULATED: &str = "tested: emulated device in the dumped dtypes (random_data has no device values); bench: float64 recompute on the CPU";
    const RECORDED_GRAD: &str = "tested: device gradient recorded in the dump; bench: float64 recompute on the CPU";
    let cases = [
        (
            "pytorch",
            "sgd_weight_decay/8.3.2/tensor",
            "Tensor.add.0.forward.output.0",
            "46 elements within the rounding bound counted as exact (worst 0.227012 of the bound; the api rule alone: error)",
            RECORDED,
        ),
        (
            "pytorch",
            "sgd_weight_decay/26.2.0/tensor",
            "Tensor.add.0.forward.output.0",
            "46 elements within the rounding bound counted as exact (worst 0.227012 of the bound; the api rule alone: error)",
            RECORDED,
        ),
        (
            "pytorch",
            "autocast_residual/8.3.2/tensor",
            "Tensor.add.4.forward.output.0",
            "164 elements within the rounding bound counted as exact (worst 0.265116 of the bound; the api rule alone: error)",
            RECORDED,
        ),
        (
            "pytorch",
            "autocast_residual/8.3.2/statistics",
            "Tensor.add.4.forward.output.0",
            "175 elements within the rounding bound counted as exact (worst 0.361587 of the bound; the api rule alone: error)",
            EMULATED,
        ),
        (
            "mindspore",
            "ms_gelu_grad/26.2.0/tensor",
            "Functional.gelu.0.backward.output.0",
            "128 elements within the rounding bound counted as exact (worst 0.206998 of the bound; the api rule alone: error)",
            RECORDED_GRAD,
        ),
    ];
    let mut failures = vec![];
    for (flag, dump, name, note, sides) in cases {
        let mode = if dump.ends_with("/statistics") { "random_data" } else { "real_data" };
        let (_, rows) = replay(flag, dump, "api", mode);
        let r = row(&rows, name);
        let message = format!("{note}; {sides}");
        if r.status != "pass" || r.message != message {
            failures.push(format!("{dump} {name}: expected pass / {message}\n  got {r:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same by script (PyTorch, real data): the row of the call's script
/// under `--standard api` passes with the same note.
#[test]
fn the_api_standard_of_the_scripts_passes_the_cancelling_adds_and_says_why() {
    let cases = [
        (
            "sgd_weight_decay/8.3.2/tensor",
            "Tensor.add.0",
            "46 elements within the rounding bound counted as exact (worst 0.227012 of the bound; the api rule alone: error)",
        ),
        (
            "sgd_weight_decay/26.2.0/tensor",
            "Tensor.add.0",
            "46 elements within the rounding bound counted as exact (worst 0.227012 of the bound; the api rule alone: error)",
        ),
        // 164 natively: the count is of the elements that differ from the bench, and torch's
        // float64 bench of `a + alpha*b` (fused) differs from the native one at one element
        // where the recorded float32 result equals the unfused float64 value.
        (
            "autocast_residual/8.3.2/tensor",
            "Tensor.add.4",
            "165 elements within the rounding bound counted as exact (worst 0.265116 of the bound; the api rule alone: error)",
        ),
    ];
    let out = tempfile::tempdir().unwrap();
    let runs: Vec<(PathBuf, Vec<&str>)> =
        cases.iter().map(|(dump, api, _)| (script(PyTorch, dump, api, "forward", &out.path().join(dump)), vec!["--standard", "api"])).collect();
    let outcomes = run_scripts(&python(), &runs, out.path());
    for ((dump, api, note), (code, rows, why)) in cases.iter().zip(&outcomes) {
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, [format!("{api}.forward.output.0")], "{dump}: {why}");
        assert_eq!((*code, rows[0].status.as_str(), rows[0].message.as_str()), (0, "pass", format!("{note}; {TORCH_SIDES}").as_str()), "{dump}");
    }
}

// ---------------------------------------------------------------------------
// One corrupted element of a million (issue 34, item 3)

/// Writes `dir/dump.json` and its tensors: one `Torch.add.0` call of two
/// bfloat16 `[1000, 1000]` tensors as a device computes it (float32, one
/// rounding), msprobe's PyTorch tensor-dump layout; with `corrupt`, the
/// recorded output's element `[12, 507]` moved by exactly 2 bfloat16 ULPs
/// (two steps of its bit pattern).
fn million_add_dump(dir: &Path, corrupt: bool) {
    let setup = "g = torch.Generator().manual_seed(34)\n\
         a = (torch.rand(1000, 1000, generator=g) + 0.5).bfloat16()\n\
         b = (torch.rand(1000, 1000, generator=g) + 0.5).bfloat16()\n\
         y = (a.float() + b.float()).bfloat16()\n\
         if corrupt:\n\
         \x20   y.view(torch.int16)[12, 507] += 2\n";
    one_call_dump(dir, "Torch.add.0", "torch.bfloat16", setup, corrupt);
}

/// The one-call dump `dump` writes, replayed under `--standard bound` on its
/// recorded values: clean, a `pass` (exit 0); planted, an `error` (exit 3)
/// whose Message `planted` accepts.
fn clean_passes_and_planted_errs(dump: fn(&Path, bool), planted: impl Fn(&str) -> bool) {
    for corrupt in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        dump(dir.path(), corrupt);
        let (r, code) = one_row_under_bound(dir.path());
        let expected = if corrupt { ("error", Some(3)) } else { ("pass", Some(0)) };
        assert_eq!((r.status.as_str(), code), expected, "{r:?}");
        assert!(!corrupt || planted(&r.message), "{}", r.message);
    }
}

/// The one details row of the PyTorch tensor dump in `dir` replayed under
/// `--standard bound` on its recorded values, and the exit code.
fn one_row_under_bound(dir: &Path) -> (Row, Option<i32>) {
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe"))
        .args(["-f", "pytorch", "replay", "--dump"])
        .arg(dir)
        .args(["--standard", "bound", "--data-mode", "real_data", "--output-dir"])
        .arg(&out)
        .output()
        .unwrap();
    let rows = details(&out);
    assert_eq!(rows.len(), 1, "{rows:?}");
    (rows[0].clone(), o.status.code())
}

/// A bfloat16 add of a million elements, recorded as a device computes it,
/// passes the bound; with one element 2 ULPs off it is an `error` naming
/// that element's index and its ULPs (a Terms forward result rounds once:
/// its bound is about one ULP wherever the op runs).
#[test]
fn one_element_of_a_million_two_ulps_off_is_an_error_naming_its_index() {
    clean_passes_and_planted_errs(million_add_dump, |m| {
        m.starts_with("rounding bound: 1 of 1000000 elements beyond")
            && m.contains("times the bound at element [12, 507]: ")
            && m.contains(" (2 ULPs of bfloat16)")
    });
}

// ---------------------------------------------------------------------------
// A long accumulation chain (issue 35's GPT-2 bench: a linear weight's gradient)

/// Writes `dir/dump.json` and its tensors: one float32 `Torch.mm.0` of
/// positive `[32, 8192] @ [8192, 32]` recorded as a device that adds the
/// 8,192 products one after another (one FMA chain per element, a GPU GEMM
/// thread's order); with `corrupt`, element `[3, 5]` of the output moved by
/// 200 float32 ULPs.
fn long_chain_dump(dir: &Path, corrupt: bool) {
    let setup = "g = torch.Generator().manual_seed(35)\n\
         a = torch.rand(32, 8192, generator=g)\n\
         b = torch.rand(8192, 32, generator=g)\n\
         y = torch.zeros(32, 32)\n\
         for k in range(8192):\n\
         \x20   y = (y.double() + a[:, k:k + 1].double() * b[k:k + 1, :].double()).float()\n\
         if corrupt:\n\
         \x20   y.view(torch.int32)[3, 5] += 200\n";
    one_call_dump(dir, "Torch.mm.0", "torch.float32", setup, corrupt);
}

/// Writes `dir/dump.json` and its tensors in msprobe's PyTorch tensor-dump
/// layout: one forward call `api` of inputs `a` and `b` with output `y`,
/// all of `dtype`, made by the Python `setup` (which sees `corrupt`).
fn one_call_dump(dir: &Path, api: &str, dtype: &str, setup: &str, corrupt: bool) {
    let code = format!(
        "import json, os, torch\n\
         corrupt = {corrupt}\n\
         {setup}\
         os.makedirs('dump_tensor_data')\n\
         def t(name, v):\n\
         \x20   torch.save(v, os.path.join('dump_tensor_data', name + '.pt'))\n\
         \x20   f = v.float()\n\
         \x20   return {{'type': 'torch.Tensor', 'dtype': '{dtype}', 'shape': list(v.shape), 'Max': f.max().item(), 'Min': f.min().item(),\n\
         \x20           'Mean': f.mean().item(), 'Norm': f.norm().item(), 'requires_grad': False, 'data_name': name + '.pt'}}\n\
         entry = {{'input_args': [t('{api}.forward.input.0', a), t('{api}.forward.input.1', b)], 'input_kwargs': {{}},\n\
         \x20        'output': [t('{api}.forward.output.0', y)]}}\n\
         json.dump({{'task': 'tensor', 'level': 'L1', 'framework': 'pytorch', 'dump_data_dir': None, 'data': {{'{api}.forward': entry}}}},\n\
         \x20         open('dump.json', 'w'))\n",
        corrupt = if corrupt { "True" } else { "False" }
    );
    let o = common::python_in(dir, &code, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A float32 product whose 8,192 positive terms a device added one after
/// another (errors up to ~40 u·magnitude, beyond the sums class's k = 16)
/// passes: its magnitude grows with the chain (`ops::chain`, the
/// rulebook's `chain_covered`); an element 200 ULPs off is still an error
/// naming its index.
#[test]
fn a_sequential_float32_chain_of_8192_terms_passes_and_an_element_200_ulps_off_does_not() {
    clean_passes_and_planted_errs(long_chain_dump, |m| {
        m.starts_with("rounding bound: 1 of 1024 elements beyond")
            && m.contains("times the bound at element [3, 5]: ")
            && m.contains(" ULPs of float32), magnitude ")
    });
}
