//! `msprobe replay`: native replay of dumped calls without Python.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::repo;

fn msprobe(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).current_dir(dir).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The rows of the one `accuracy_checking_{kind}_*.csv` in `dir`, header checked.
fn csv(dir: &Path, kind: &str, header: &str) -> Vec<Vec<String>> {
    let file = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("accuracy_checking_{kind}_")))
        .unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.starts_with(&format!("\u{feff}{header}\r\n")), "BOM and header: {text:?}");
    common::csv_records(&text).split_off(1)
}

const DETAILS: &str = "API Name,Bench Dtype,Tested Dtype,Shape,Cosine,MaxAbsErr,MaxRelativeErr,Status,Message";
/// The details header of a `--dump` replay with loss effects (real data of a dump with backward).
const DETAILS_WITH_EFFECTS: &str = "API Name,Bench Dtype,Tested Dtype,Shape,Cosine,MaxAbsErr,MaxRelativeErr,Status,Message,Loss Effect,Loss Share,Effect Note";
const RESULT: &str = "API Name,Forward Test Success,Backward Test Success,Message";

#[test]
fn recorded_outputs_of_a_tensor_dump_pass_against_the_f64_bench() {
    for (fw, dump, api, dtype) in [
        ("pytorch", "pytorch/tensor", "Torch.matmul.0", "torch.float32"),
        ("pytorch", "pytorch/tensor", "Functional.softmax.0", "torch.float32"),
        ("mindspore", "mindspore/tensor", "Mint.matmul.0", "Float32"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = serde_json::json!({"dump_json_path": repo().join("tests/fixtures").join(dump).join("dump.json"), "api_name": api, "propagation": "backward", "data_mode": "real_data"});
        std::fs::write(dir.path().join("c.json"), cfg.to_string()).unwrap();
        let o = msprobe(dir.path(), &["-f", fw, "replay", "-i", "c.json"]);
        assert_eq!(o.status.code(), Some(0), "{api}: {}", text(&o));
        let out = dir.path().join("op_result_output");
        assert_eq!(csv(&out, "result", RESULT), vec![vec![api.to_string(), "pass".into(), "pass".into(), String::new()]]);
        let details = csv(&out, "details", DETAILS);
        let forward = details.iter().find(|r| r[0] == format!("{api}.forward.output.0")).unwrap();
        // Tested = the dump's recorded float32 output; bench = float64 replay.
        assert_eq!((forward[1].as_str(), forward[2].as_str()), (if fw == "pytorch" { "torch.float64" } else { "Float64" }, dtype));
        assert!(forward[4].parse::<f64>().unwrap() > 0.99999 && forward[5].parse::<f64>().unwrap() < 1e-4, "{forward:?}");
        assert!(details.iter().any(|r| r[0].starts_with(&format!("{api}.backward.output."))));
    }
}

/// The rows of the fixture dumps that fail the msprobe rule: the
/// low-precision (bfloat16/float16) calls the emulated device rounds, whose
/// max absolute error is over the 1e-4 threshold. Pinned: a change that
/// turns one more row into an error, or one of these into a pass, fails.
const FIXTURE_ERRORS: [(&str, &[&str]); 2] = [
    (
        "pytorch",
        &[
            "Functional.linear.6.backward.output.1",
            "Functional.linear.6.forward.output.0",
            "Functional.linear.7.backward.output.1",
            "Functional.linear.7.forward.output.0",
            "Functional.silu.0.forward.output.0",
        ],
    ),
    (
        "mindspore",
        &[
            "Mint.add.3.forward.output.0",
            "MintFunctional.linear.6.forward.output.0",
            "MintFunctional.linear.7.forward.output.0",
            "MintFunctional.silu.0.forward.output.0",
            "Tensor.to.0.forward.output.0",
            "Tensor.to.1.forward.output.0",
            "Tensor.to.6.forward.output.0",
        ],
    ),
];

/// Every API of the full fixture dumps replays forward and backward: no
/// row is a skip (a missing op, a binding error, a panic). Under the
/// default standard every row passes, judged by its dtype's rounding bound
/// (the tested side is the emulated device); under `--standard msprobe`
/// exactly the rows of [`FIXTURE_ERRORS`] are errors (float32 and bfloat16
/// rounding over msprobe's thresholds), each an accuracy verdict that says
/// what it compared, and the exit code says so.
#[test]
fn every_fixture_api_replays_forward_and_backward() {
    for (fw, expected) in FIXTURE_ERRORS {
        let dump = format!("{fw}/statistics");
        let dir = tempfile::tempdir().unwrap();
        let path = repo().join("tests/fixtures").join(&dump).join("dump.json");
        // The default standard holds the emulated device to its dtype's rounding bound: no error.
        let o = msprobe(dir.path(), &["-f", fw, "replay", "--dump", path.to_str().unwrap(), "--top", "0", "-o", "default"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let default = csv(&dir.path().join("default"), "details", DETAILS);
        assert!(default.iter().all(|r| r[7] == "pass" && r[8].contains("emulated device judged by the ")), "{fw}: {default:#?}");
        let o = msprobe(dir.path(), &["-f", fw, "replay", "--dump", path.to_str().unwrap(), "--top", "0", "--standard", "msprobe"]);
        assert_eq!(o.status.code(), Some(3), "{}", text(&o));
        let details = csv(&dir.path().join("op_result_output"), "details", DETAILS);
        assert!(details.len() > 200, "{fw}: {} rows", details.len());
        let mut errors: Vec<&str> = details.iter().filter(|r| r[7] == "error").map(|r| r[0].as_str()).collect();
        errors.sort_unstable();
        assert_eq!(errors, expected, "{fw}: the error rows");
        let bad: Vec<&Vec<String>> = details.iter().filter(|r| r[7] != "pass" && !(r[7] == "error" && r[8].starts_with("max absolute error"))).collect();
        assert!(bad.is_empty(), "{fw}: rows that are failures, not verdicts: {bad:#?}");
        let emulated = "tested: emulated device in the dumped dtypes (random_data has no device values); bench: float64 recompute on the CPU";
        // A call identical to an earlier one shares its verdict and says so last.
        let says = |m: &str| {
            m.ends_with(emulated)
                || m.split_once(&format!("{emulated}; shares the verdict of ")).is_some_and(|(_, who)| who.ends_with(" (identical call and inputs)"))
        };
        assert!(details.iter().all(|r| says(&r[8])), "{fw}: a row that does not say what it compared");
        assert!(details.iter().any(|r| r[0].contains(".backward.output.")));
        // The ranked table starts with the worst row.
        let stdout = String::from_utf8_lossy(&o.stdout);
        let first = stdout.lines().nth(1).unwrap_or("");
        assert!(first.contains(" error "), "{first}");
    }
}

#[test]
fn filter_shard_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = repo().join("tests/fixtures/pytorch/statistics/dump.json");
    let p = path.to_str().unwrap();
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", p, "--filter", "^Torch\\.matmul\\.", "--propagation", "forward", "--output-dir", "m"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rows = csv(&dir.path().join("m"), "details", DETAILS);
    assert!(!rows.is_empty() && rows.iter().all(|r| r[0].starts_with("Torch.matmul.") && r[0].contains(".forward.")));
    // Shards split the APIs without overlap: each writes its part, the merge the whole.
    for i in 0..2 {
        let shard = format!("{i}/2");
        let o = msprobe(
            dir.path(),
            &["-f", "pytorch", "replay", "--dump", p, "--filter", "^Torch\\.", "--propagation", "forward", "--shard", &shard, "--output-dir", "s"],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--merge", "s"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", p, "--filter", "^Torch\\.", "--propagation", "forward", "--output-dir", "all"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(csv(&dir.path().join("s"), "result", RESULT), csv(&dir.path().join("all"), "result", RESULT));
    // An API the runtime does not know is a skip row (exit 8), not a crash
    // and not an accuracy error; --allow-skip makes it a success.
    std::fs::write(
        dir.path().join("odd.json"),
        r#"{"framework": "pytorch", "data": {"Torch.frobnicate.0.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0}], "input_kwargs": {}, "output": []}}}"#,
    )
    .unwrap();
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", "odd.json", "--output-dir", "odd"]);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let rows = csv(&dir.path().join("odd"), "details", DETAILS);
    assert_eq!((rows[0][7].as_str(), rows[0][8].as_str()), ("skip", "cannot replay here: Torch.frobnicate is not in the runtime's op table"));
    assert_eq!(csv(&dir.path().join("odd"), "result", RESULT)[0][1], "skip");
    // A name never replayed (runtime::ops::reasons) says why, not "not in the table".
    std::fs::write(
        dir.path().join("random.json"),
        r#"{"framework": "pytorch", "data": {"Tensor.normal_.0.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0}], "input_kwargs": {}, "output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0}]}}}"#,
    )
    .unwrap();
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", "random.json", "--output-dir", "random"]);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let rows = csv(&dir.path().join("random"), "details", DETAILS);
    assert_eq!(
        (rows[0][7].as_str(), rows[0][8].as_str()),
        ("skip", "cannot replay here: Tensor.normal_ is not replayed natively: it draws random numbers, and the dump records neither the generator's state nor a mask to read the draws back from")
    );
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", "odd.json", "--output-dir", "odd2", "--allow-skip"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Input problems are not verdicts: a selection with nothing to replay is
/// exit 4 with no CSV; in a batch, real data without tensor files is a skip
/// row naming the source layer's reason (exit 8), and alone it is exit 4
/// with no CSV; unwritable CSVs are exit 5.
#[test]
fn nothing_to_replay_missing_tensors_and_unwritable_report() {
    let dir = tempfile::tempdir().unwrap();
    let stats = repo().join("tests/fixtures/pytorch/statistics/dump.json");
    // Torch.stack.0 has no backward entry in the fixture.
    let cfg = serde_json::json!({"dump_json_path": stats, "api_name": "Torch.stack.0", "propagation": "backward"});
    std::fs::write(dir.path().join("c.json"), cfg.to_string()).unwrap();
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "-i", "c.json", "--output-dir", "r"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(text(&o).contains("propagation is backward, but no selected API has a backward entry"), "{}", text(&o));
    assert!(!dir.path().join("r").exists());
    // A tensor dump whose entry lost its data_name: real data cannot replay it.
    let tensor = repo().join("tests/fixtures/pytorch/tensor");
    // (Text edits: the dump holds bare NaN/Infinity tokens, which serde_json rejects.)
    let dump = std::fs::read_to_string(tensor.join("dump.json")).unwrap();
    let needle = ",\n     \"data_name\": \"Torch.matmul.0.forward.input.0.pt\"";
    assert!(dump.contains(needle));
    let data_dir = serde_json::Value::String(tensor.join("dump_tensor_data").to_string_lossy().into_owned()).to_string();
    let dump = dump.replace(needle, "").replace("\"/data/dumps/pytorch/dump_tensor_L1/step0/rank/dump_tensor_data\"", &data_dir);
    std::fs::write(dir.path().join("d.json"), dump).unwrap();
    let o = msprobe(
        dir.path(),
        &["-f", "pytorch", "replay", "--dump", "d.json", "--filter", "^Torch\\.matmul\\.0$", "--data-mode", "real_data", "--output-dir", "m"],
    );
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let rows = csv(&dir.path().join("m"), "details", DETAILS);
    assert_eq!((rows.len(), rows[0][0].as_str(), rows[0][7].as_str()), (1, "Torch.matmul.0.backward", "skip"));
    let reason = "d.json: Torch.matmul.0: input_args[0] has no data_name; real_data needs a dump made with task \"tensor\" (or use data_mode random_data)";
    assert!(rows[0][8].starts_with("cannot replay here: broken input: ") && rows[0][8].ends_with(reason), "{rows:?}");
    let cfg = serde_json::json!({"dump_json_path": "d.json", "api_name": "Torch.matmul.0", "propagation": "backward", "data_mode": "real_data"});
    std::fs::write(dir.path().join("one.json"), cfg.to_string()).unwrap();
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "-i", "one.json", "--output-dir", "one"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.trim_end().ends_with(
            "d.json: Torch.matmul.0: input_args[0] has no data_name; real_data needs a dump made with task \"tensor\" (or use data_mode random_data)"
        ),
        "{stderr}"
    );
    assert!(!dir.path().join("one").exists());
    // The CSV folder is a file: exit 5, like every unwritable output.
    std::fs::write(dir.path().join("taken"), "x").unwrap();
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", stats.to_str().unwrap(), "--filter", "^Torch\\.matmul\\.0$", "--output-dir", "taken"]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
}

/// An explicit `dtype=torch.float32` (the bundled PyTorch example's
/// softmax) is raised on the bench like the inputs: the bench computes in
/// float64, so the float32 result shows its rounding instead of a 0.0 that
/// proves nothing.
#[test]
fn explicit_dtype_arguments_are_raised_on_the_bench() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = repo().join("examples/pytorch/config_op.json");
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "-i", cfg.to_str().unwrap(), "--propagation", "forward"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let details = csv(&dir.path().join("op_result_output"), "details", DETAILS);
    assert_eq!(details.len(), 3, "{details:?}");
    for r in &details {
        assert_eq!((r[0].as_str(), r[1].as_str(), r[2].as_str()), ("Functional.softmax.0.forward.output.0", "torch.float64", "torch.float32"));
        let max_abs: f64 = r[5].parse().unwrap();
        assert!(max_abs > 0.0 && max_abs < 1e-6, "{r:?}");
    }
}

/// The Message of every row of an MSAdapter dump replayed with random data.
const MSADAPTER_EMULATED: &str =
    "tested: emulated device in the MSAdapter dump's dtypes (random_data has no device values); bench: float64 recompute on the CPU";

/// The example of the MindSpore op_generate document (doc 33, §2.1: an
/// MSAdapter dump, `"framework": "mindtorch"`) with its §2.2 config, both
/// verbatim, as a new user runs it: `-f mindspore replay` gives a verdict
/// on the BFloat16 reshape forward and backward with PyTorch's semantics
/// (random data), and `-f mindspore op_generate --lang rust` its project;
/// `-f pytorch` is refused, naming `-f mindspore`.
#[test]
fn the_msadapter_example_of_the_mindspore_document_replays_to_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo().join("tests/fixtures/mindtorch/doc33_example");
    for f in ["dump.json", "config_op.json"] {
        std::fs::copy(example.join(f), dir.path().join(f)).unwrap();
    }
    let o = msprobe(dir.path(), &["-f", "mindspore", "replay", "-i", "./config_op.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = dir.path().join("op_result_output");
    assert_eq!(csv(&out, "result", RESULT), vec![vec!["Tensor.reshape.779".to_string(), "pass".into(), "pass".into(), String::new()]]);
    let details = csv(&out, "details", DETAILS);
    let names: Vec<&str> = details.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["Tensor.reshape.779.forward.output.0", "Tensor.reshape.779.backward.output.0"]);
    // Data movement is exact forward; its gradient is judged by bfloat16's rounding bound.
    let rule = |row: &str| {
        if row.contains(".forward.") {
            "binary equality rule (error_rate=0)"
        } else {
            "rounding bound rule (bound_ratio=0; beyond_bound=0; k=4; u=0.00390625)"
        }
    };
    for r in &details {
        assert_eq!(
            (r[1].as_str(), r[2].as_str(), r[3].as_str(), r[7].as_str(), r[8].as_str()),
            ("Float64", "BFloat16", "(8192, 896)", "pass", format!("emulated device judged by the {}; {MSADAPTER_EMULATED}", rule(&r[0])).as_str()),
            "{r:?}"
        );
        assert!(r[4].parse::<f64>().unwrap() > 0.99999 && r[5] == "0.0", "{r:?}");
    }
    assert!(!dir.path().join("Tensor.reshape.779").exists(), "replay writes no extract file");
    let o = msprobe(dir.path(), &["-f", "mindspore", "op_generate", "-i", "./config_op.json", "-o", "./", "--lang", "rust"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let main = std::fs::read_to_string(dir.path().join("Tensor.reshape.779.backward/src/main.rs")).unwrap();
    assert!(main.contains("framework: Framework::MindTorch,"), "{main}");
    let extract = std::fs::read_to_string(dir.path().join("Tensor.reshape.779")).unwrap();
    assert!(extract.contains("\"framework\": \"mindtorch\"") && extract.contains("\"Tensor.reshape.779.backward\""), "{extract}");
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "-i", "./config_op.json", "--output-dir", "pt"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "msprobe: error: ./dump.json: key \"framework\": \"mindtorch\" marks an MSAdapter dump, which is read with -f mindspore, not -f pytorch\n"
    );
    assert!(!dir.path().join("pt").exists());
}

/// Every real MSAdapter dump of `tests/fixtures/mindtorch/` (msprobe 8.3.2
/// and 26.2.0, statistics and tensor) replays natively with PyTorch's
/// semantics: every forward and backward entry gets its rows, none is a
/// skip, none an error (random data within the dumped ranges; real data: the
/// recorded CPU outputs and gradients against the float64 bench), exit 0,
/// and each row says it judged an MSAdapter dump.
#[test]
fn every_msadapter_fixture_dump_replays_without_skip_or_error() {
    let recorded = |what: &str| format!("tested: device {what} recorded in the MSAdapter dump; bench: float64 recompute on the CPU");
    let mut runs = 0;
    for model in ["mlp", "attention"] {
        for version in ["8.3.2", "26.2.0"] {
            for (task, modes) in [("statistics", &["random_data"][..]), ("tensor", &["random_data", "real_data"][..])] {
                let folder = repo().join("tests/fixtures/mindtorch").join(model).join(version).join(task);
                let dump: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(folder.join("dump.json")).unwrap()).unwrap();
                assert_eq!(dump["framework"], "mindtorch");
                let keys: Vec<&String> = dump["data"].as_object().unwrap().keys().collect();
                for mode in modes {
                    let case = format!("{model}/{version}/{task} {mode}");
                    let dir = tempfile::tempdir().unwrap();
                    let o = msprobe(dir.path(), &["-f", "mindspore", "replay", "--dump", folder.to_str().unwrap(), "--data-mode", mode, "--top", "0"]);
                    assert_eq!(o.status.code(), Some(0), "{case}: {}", text(&o));
                    let header = if *mode == "real_data" { DETAILS_WITH_EFFECTS } else { DETAILS };
                    let details = csv(&dir.path().join("op_result_output"), "details", header);
                    for key in &keys {
                        let (api, direction) = key.rsplit_once('.').unwrap();
                        assert!(details.iter().any(|r| r[0].starts_with(&format!("{api}.{direction}.output."))), "{case}: no row for {key}");
                    }
                    for r in &details {
                        assert_eq!(r[7], "pass", "{case}: {r:?}");
                        let expected = match (*mode, r[0].contains(".backward.")) {
                            ("random_data", _) => MSADAPTER_EMULATED.to_string(),
                            (_, false) => recorded("output"),
                            (_, true) => recorded("gradient"),
                        };
                        assert!(r[8].ends_with(&expected), "{case}: {r:?}");
                    }
                    runs += 1;
                }
            }
        }
    }
    assert_eq!(runs, 12);
}

/// A MindSpore dump of `Mint.matmul.0` (`s @ c`, c a constant) whose
/// recorded gradient of `c` is `c_grad` and whose `c` is marked
/// `requires_grad` as `c_marked` (`s` as true when `c` is marked at all); replayed backward, real data: its rows as
/// (name, status, Message).
fn matmul_with_a_constant(dir: &Path, c_grad: &[f32], c_marked: Option<bool>) -> (i32, Vec<(String, String, String)>) {
    let data = dir.join("dump_tensor_data");
    std::fs::create_dir_all(&data).unwrap();
    let s = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let c = [1.0f32; 6];
    let dy = [1.0f32, -0.5, 0.25, 2.0];
    let ds: Vec<f32> = (0..2).flat_map(|i| (0..3).map(move |k| (0..2).map(|j| dy[i * 2 + j] * c[k * 2 + j]).sum::<f32>())).collect();
    let files: [(&str, &[usize], &[f32]); 5] = [
        ("forward.input.0", &[2, 3], &s),
        ("forward.input.1", &[3, 2], &c),
        ("forward.output.0", &[2, 2], &[6.0, 6.0, 15.0, 15.0]),
        ("backward.input.0", &[2, 2], &dy),
        ("backward.output.0", &[2, 3], &ds),
    ];
    for (name, shape, values) in files.iter().chain([("backward.output.1", &[3usize, 2][..], c_grad)].iter()) {
        std::fs::write(data.join(format!("Mint.matmul.0.{name}.npy")), common::npy_f32(shape, values)).unwrap();
    }
    let t = |name: &str, shape: &[usize], marked: Option<bool>| {
        let mut v = serde_json::json!({"type": "mindspore.Tensor", "dtype": "Float32", "shape": shape, "Max": 1.0, "Min": 0.0, "data_name": format!("Mint.matmul.0.{name}.npy")});
        if let Some(m) = marked {
            v["requires_grad"] = serde_json::json!(m);
        }
        v
    };
    let dump = serde_json::json!({
        "task": "tensor", "level": "L1", "framework": "mindspore", "dump_data_dir": data,
        "data": {
            "Mint.matmul.0.forward": {"input_args": [t("forward.input.0", &[2, 3], c_marked.map(|_| true)), t("forward.input.1", &[3, 2], c_marked)], "input_kwargs": {}, "output": [t("forward.output.0", &[2, 2], None)]},
            "Mint.matmul.0.backward": {"input": [t("backward.input.0", &[2, 2], None)], "output": [t("backward.output.0", &[2, 3], None), t("backward.output.1", &[3, 2], None)]}
        }
    });
    std::fs::write(dir.join("dump.json"), dump.to_string()).unwrap();
    let config = serde_json::json!({"dump_json_path": dir.join("dump.json"), "api_name": "Mint.matmul.0", "data_mode": "real_data", "propagation": "backward", "standard": "api"});
    std::fs::write(dir.join("config_op.json"), config.to_string()).unwrap();
    let o = msprobe(dir, &["-f", "mindspore", "replay", "-i", "config_op.json", "-o", "out"]);
    (o.status.code().unwrap(), common::detail_rows(&dir.join("out")))
}

/// MindSpore's autodiff returns zeros for an input it does not
/// differentiate (a constant), and msprobe records them as that input's
/// gradient: not judged as the device's, and the row says why. Zeros for an
/// input marked requires_grad are judged: an error.
#[test]
fn a_placeholder_gradient_of_zeros_is_not_judged_as_the_devices() {
    let dir = tempfile::tempdir().unwrap();
    let (code, rows) = matmul_with_a_constant(dir.path(), &[0.0; 6], None);
    assert_eq!(code, 0, "{rows:?}");
    assert_eq!(rows.len(), 3, "{rows:?}");
    let row = rows.iter().find(|r| r.0 == "Mint.matmul.0.backward.output.1").unwrap();
    assert_eq!(row.1, "pass", "{row:?}");
    assert!(row.2.contains("(the recorded gradient is all zeros for an input the dump does not mark requires_grad: MindSpore's placeholder"), "{row:?}");
    let first = rows.iter().find(|r| r.0 == "Mint.matmul.0.backward.output.0").unwrap();
    assert!(first.2.contains("tested: device gradient recorded in the dump"), "{first:?}");
    let marked = tempfile::tempdir().unwrap();
    let (code, rows) = matmul_with_a_constant(marked.path(), &[0.0; 6], Some(true));
    assert_eq!(code, 3, "{rows:?}");
    let row = rows.iter().find(|r| r.0 == "Mint.matmul.0.backward.output.1").unwrap();
    assert_eq!(row.1, "error", "{row:?}");
    assert!(row.2.contains("tested: device gradient recorded in the dump"), "{row:?}");
}

/// The dumps of real NPU runs (tests/fixtures/real: the PanGu model trained
/// with Megatron-LM + MindSpeed, its MindSpore counterpart, an fp16 rotary
/// excerpt), whole, the S = 4096 attention calls included (one head at a
/// time, within `--memory-budget 8G`; their rounding magnitudes analytic,
/// head by head): under default, api and bound every call gets a verdict,
/// none a skip, every row passes (emulated rows, judged by rounding), and
/// the fused attentions judge attention_out (torch_npu's softmax_max and
/// softmax_sum too) and dq, dk, dv.
#[test]
fn real_npu_dumps_replay_to_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    for (fw, dump) in [("pytorch", "pangu_pytorch"), ("mindspore", "pangu_mindspore"), ("pytorch", "rotary_fp16")] {
        let root = repo().join("tests/fixtures/real").join(dump);
        let attention: Vec<String> = match dump {
            "pangu_pytorch" => (0..3)
                .map(|i| format!("NPU.npu_fusion_attention.0.forward.output.{i}"))
                .chain((0..3).map(|i| format!("NPU.npu_fusion_attention.0.backward.output.{i}")))
                .collect(),
            "pangu_mindspore" => std::iter::once("Functional.flash_attention_score.0.forward.output.0".to_string())
                .chain((0..3).map(|i| format!("Functional.flash_attention_score.0.backward.output.{i}")))
                .collect(),
            _ => vec![],
        };
        // msprobe's thresholds take the same calls shrunk (below): at full size they would add a minute.
        for standard in ["default", "api", "bound"] {
            let out = format!("{dump}_{standard}");
            let args = ["-f", fw, "replay", "--dump", root.to_str().unwrap(), "--standard", standard, "-o", &out, "--top", "0", "--memory-budget", "8G"];
            let o = msprobe(dir.path(), &args);
            let rows = common::detail_rows(&dir.path().join(&out));
            let skips: Vec<_> = rows.iter().filter(|r| r.1 == "skip").collect();
            assert!(skips.is_empty(), "{dump} under {standard}: {skips:?}");
            let not_passed: Vec<_> = rows.iter().filter(|r| r.1 != "pass").collect();
            assert!(not_passed.is_empty(), "{dump} under {standard}: {not_passed:?}");
            assert_eq!(o.status.code(), Some(0), "{}", text(&o));
            let judged: Vec<&str> = rows.iter().map(|r| r.0.as_str()).filter(|n| n.contains("attention")).collect();
            assert_eq!(judged, attention, "{dump} under {standard}: {}", text(&o));
            assert!(!text(&o).contains("sparse_mode 0"), "{}", text(&o));
        }
    }
}

/// The PanGu dump's `npu_fusion_attention` call (Megatron's: SBH, a bool
/// causal mask, `next_tockens=0`, seven outputs, `[dq, dk, dv, null]`),
/// shrunk to S = 16, H = 48: from statistics its random `atten_mask` is its
/// token band's (the causal mask), so every output and gradient is judged
/// under every standard (no query row is left with every key masked), and
/// passes under api and bound.
#[test]
fn megatrons_fusion_attention_call_of_a_statistics_dump_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let source = std::fs::read_to_string(repo().join("tests/fixtures/real/pangu_pytorch/dump.json")).unwrap();
    let mut dump: serde_json::Value = serde_json::from_str(&source).unwrap();
    let keep = ["NPU.npu_fusion_attention.0.forward", "NPU.npu_fusion_attention.0.backward"];
    dump["data"].as_object_mut().unwrap().retain(|k, _| keep.contains(&k.as_str()));
    let shrunk = dump.to_string().replace("[4096,1,1536]", "[16,1,48]").replace("[1,1,4096,4096]", "[1,1,16,16]").replace("[1,12,4096,8]", "[1,12,16,8]");
    std::fs::write(dir.path().join("dump.json"), shrunk).unwrap();
    for standard in ["default", "msprobe", "api", "bound"] {
        let out = format!("out_{standard}");
        let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", "dump.json", "--standard", standard, "-o", &out, "--top", "0"]);
        let rows = common::detail_rows(&dir.path().join(&out));
        let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        let expected: Vec<String> = (0..3)
            .map(|i| format!("NPU.npu_fusion_attention.0.forward.output.{i}"))
            .chain((0..3).map(|i| format!("NPU.npu_fusion_attention.0.backward.output.{i}")))
            .collect();
        assert_eq!(names, expected, "{standard}: {}", text(&o));
        assert!(rows.iter().all(|r| r.1 != "skip"), "{standard}: {rows:?}");
        // msprobe's thresholds blame the emulated bfloat16 attention_out for its rounding.
        if standard != "msprobe" {
            assert!(rows.iter().all(|r| r.1 == "pass" || r.1 == "warning"), "{standard}: {rows:?}");
        }
    }
}

/// Under the default standard an emulated row is held to its dtype's
/// rounding bound, and an error there names the dtype's own arithmetic:
/// tests/fixtures/planted/float16_failures plants a float16 sum of 70,000
/// ones and the exp of a float16 softmax written as exp/sum with logits of
/// 12 (both overflow), beside a float16 add that rounds as predicted.
/// `--standard msprobe` keeps msprobe's thresholds for those who ask.
#[test]
fn planted_float16_failures_are_errors_naming_the_dtypes_arithmetic() {
    let dir = tempfile::tempdir().unwrap();
    let dump = repo().join("tests/fixtures/planted/float16_failures");
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "-o", "default", "--top", "0"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains(
            "3 rows: 1 pass, 0 warning, 0 skip, 2 error; 0 judged on recorded device values (msprobe standard), 3 on an emulated device (bound standard)"
        ),
        "{}",
        text(&o)
    );
    let rows = common::detail_rows(&dir.path().join("default"));
    let overflow = "the emulated float16 arithmetic itself fails here (Inf or NaN where the float64 bench is finite: overflow): any device computing in float16 fails so; NaN/Inf differ: tested has 0 NaN and";
    let status: Vec<(&str, &str)> = rows.iter().map(|r| (r.0.as_str(), r.1.as_str())).collect();
    assert_eq!(status, [("Torch.sum.0.forward.output.0", "error"), ("Torch.exp.0.forward.output.0", "error"), ("Torch.add.0.forward.output.0", "pass")]);
    for row in &rows[..2] {
        assert!(row.2.starts_with(overflow), "{row:?}");
    }
    assert!(rows[2].2.starts_with("emulated device judged by the rounding bound rule (bound_ratio="), "{:?}", rows[2]);
    // msprobe's thresholds judge every row alike, emulated or not.
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "-o", "msprobe", "--standard", "msprobe", "--top", "0"]);
    assert!(text(&o).contains("0 judged on recorded device values (msprobe standard), 3 on an emulated device (msprobe standard)"), "{}", text(&o));
    let rows = common::detail_rows(&dir.path().join("msprobe"));
    assert!(rows.iter().all(|r| !r.2.contains("arithmetic itself fails")), "{rows:?}");
    assert_eq!(rows[2].1, "error", "float16 rounding of values up to 8 is over msprobe's 1e-4: {rows:?}");
}

/// The level-mix dumps of tests/fixtures/levelmix (a small CNN and a small
/// transformer, made on the CPU by zoo/make/make_levelmix.sh with the real
/// msprobe 8.3.2 and 26.2.0, statistics and tensor): Module entries with
/// `parameters`, 8.3.2's `is_recompute` and `parameters_grad`, 26.2.0's
/// `parameters_grad.0`, stack.json groups, construct.json with null
/// parents. Under the default standard every API call of each dump gets
/// its rows, and none is a skip or an error (CPU-made dumps are correct).
/// The MindSpore one (tests/fixtures/levelmix_ms, zoo/make/levelmix_ms/:
/// Cell entries with `parameters`, `parameters_grad.0`, a Cell backward
/// `output: [null]`, `proc<PID>`'s files) too, read with `-f mindspore`;
/// its `Primitive.*` entries are not calls the replay selects.
#[test]
fn level_mix_dumps_of_both_msprobe_versions_are_judged_without_skip_or_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut dumps = vec![];
    for version in ["8.3.2", "26.2.0"] {
        for model in ["small_cnn", "small_transformer"] {
            dumps.push(("pytorch", "tests/fixtures/levelmix", format!("{version}/{model}")));
        }
    }
    dumps.push(("mindspore", "tests/fixtures/levelmix_ms", "26.2.0/ms_small_net".to_string()));
    for (fw, fixtures, version_model) in &dumps {
        for task in ["statistics", "tensor"] {
            let case = format!("{version_model}/{task}");
            let dump = repo().join(fixtures).join(&case);
            let out = case.replace('/', "_");
            let mode = if task == "tensor" { "real_data" } else { "random_data" };
            let o = msprobe(dir.path(), &["-f", fw, "replay", "--dump", dump.to_str().unwrap(), "--data-mode", mode, "-o", &out, "--top", "0"]);
            assert_eq!(o.status.code(), Some(0), "{case}: {}", text(&o));
            let rows = common::detail_rows(&dir.path().join(&out));
            let bad: Vec<_> = rows.iter().filter(|r| r.1 != "pass" && r.1 != "warning").collect();
            assert!(bad.is_empty(), "{case}: {bad:#?}");
            // msprobe writes bare Infinity and NaN (masked_fill's -inf): only the keys are read here.
            let text = std::fs::read_to_string(dump.join("dump.json")).unwrap().replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null");
            let data: serde_json::Value = serde_json::from_str(&text).unwrap();
            let module = |k: &str| ["Module.", "Cell.", "Primitive."].iter().any(|p| k.starts_with(p));
            let apis: Vec<&String> = data["data"].as_object().unwrap().keys().filter(|k| !module(k)).collect();
            assert!(apis.len() > 10, "{case}: {} API entries", apis.len());
            for key in apis {
                let (api, direction) = key.rsplit_once('.').unwrap();
                assert!(rows.iter().any(|r| r.0.starts_with(&format!("{api}.{direction}."))), "{case}: no row for {key}");
            }
        }
    }
}

/// tests/fixtures/forms (zoo/make/make_forms.sh, the real msprobe 8.3.2 and 26.2.0): the call
/// forms of issue 38. Every API entry of the dump gets its rows, and the census line says so;
/// `Tensor.type_as` (float32 to bfloat16: one rounding) and `torch.maximum(a, b, out=c)` (the
/// function without `out`, judged on the tensor it returns) and the in-place `index_add_`,
/// backward included, pass, and so do `VF.lstm` (nn.LSTM, 8.3.2), two
/// `nn.MultiheadAttention` calls and the complex64 `Tensor.__mul__`
/// (judged as float32 pairs, labelled complex64 with its own shape): every row passes.
#[test]
fn every_form_of_a_call_gets_its_rows_or_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    for version in ["8.3.2", "26.2.0"] {
        let dump = repo().join("tests/fixtures/forms").join(version);
        let out = format!("out_{version}");
        let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "--data-mode", "real_data", "-o", &out, "--top", "0"]);
        assert_eq!(o.status.code(), Some(0), "{version}: {}", text(&o));
        // msprobe writes bare NaN (torch.empty's `out`): only the keys are read here.
        let text_of = std::fs::read_to_string(dump.join("dump.json")).unwrap().replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null");
        let data: serde_json::Value = serde_json::from_str(&text_of).unwrap();
        let keys: Vec<&String> = data["data"].as_object().unwrap().keys().collect();
        assert!(text(&o).contains(&format!("{n} API entries in the dump: {n} with their rows\n", n = keys.len())), "{version}: {}", text(&o));
        let rows = common::detail_rows(&dir.path().join(&out));
        // A call replayed backward judges its forward entry too; one it cannot replay is one skip row.
        for key in &keys {
            let call = key.rsplit_once('.').unwrap().0;
            assert!(rows.iter().any(|r| r.0.starts_with(&format!("{call}."))), "{version}: no row for {key}");
        }
        for (name, status, message) in &rows {
            let note = if name.starts_with("Tensor.__mul__.0.") { "complex64 compared as its real and imaginary parts, each a float32; " } else { "" };
            assert!(status == "pass" && message.starts_with(note), "{version}: {name}: {status} {message}");
        }
        let complex = csv(&dir.path().join(&out), "details", DETAILS_WITH_EFFECTS);
        for suffix in ["forward.output.0", "backward.output.0", "backward.output.1"] {
            let row = complex.iter().find(|r| r[0] == format!("Tensor.__mul__.0.{suffix}")).unwrap();
            assert_eq!(row[1..4], ["torch.complex128", "torch.complex64", "(3, 2)"], "{version}: {row:?}");
        }
        let judged = |api: &str| rows.iter().any(|r| r.0.starts_with(api) && r.1 == "pass");
        assert!(judged("Torch.maximum.0.forward.output.0"), "{version}: {rows:?}");
        assert_eq!(judged("Tensor.type_as.0.forward.output.0"), version == "8.3.2", "{version}: {rows:?}");
        // nn.LSTM, recorded by 8.3.2 alone as VF.lstm: its output, h_n and c_n, and its backward.
        for output in ["forward.output.0", "forward.output.1", "forward.output.2", "backward.output.0"] {
            assert_eq!(judged(&format!("VF.lstm.0.{output}")), version == "8.3.2", "{version}: VF.lstm.0.{output}: {rows:?}");
        }
        // The in-place index_add_'s backward: its out-of-place base's gradients, of self and source.
        assert!(judged("Tensor.index_add_.0.backward.output.0") && judged("Tensor.index_add_.0.backward.output.1"), "{version}: {rows:?}");
        // nn.MultiheadAttention: the output and the attention weights, and the backward.
        for call in ["0", "1"] {
            let api = format!("Functional.multi_head_attention_forward.{call}.");
            for output in ["forward.output.0", "forward.output.1", "backward.output.0"] {
                assert!(judged(&format!("{api}{output}")), "{version}: {api}{output}: {rows:?}");
            }
        }
    }
}

/// The MindSpore side of the PanGu dump: its `Functional.flash_attention_score`
/// call (SBH, a UInt8 causal `attn_mask`, `scalar_value`, `pre_tokens`
/// 65536, `next_tokens` 0; one output; backward `[dq, dk, dv, null]`),
/// shrunk to S = 16, H = 48: attention_out and dq, dk, dv are judged under
/// every standard, and pass under all but msprobe's thresholds.
#[test]
fn mindspores_flash_attention_call_of_a_statistics_dump_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let source = std::fs::read_to_string(repo().join("tests/fixtures/real/pangu_mindspore/dump.json")).unwrap();
    let mut dump: serde_json::Value = serde_json::from_str(&source).unwrap();
    let keep = ["Functional.flash_attention_score.0.forward", "Functional.flash_attention_score.0.backward"];
    dump["data"].as_object_mut().unwrap().retain(|k, _| keep.contains(&k.as_str()));
    let shrunk = dump.to_string().replace("[4096,1,1536]", "[16,1,48]").replace("[1,1,4096,4096]", "[1,1,16,16]");
    std::fs::write(dir.path().join("dump.json"), shrunk).unwrap();
    for standard in ["default", "msprobe", "api", "bound"] {
        let out = format!("out_{standard}");
        let o = msprobe(dir.path(), &["-f", "mindspore", "replay", "--dump", "dump.json", "--standard", standard, "-o", &out, "--top", "0"]);
        let rows = common::detail_rows(&dir.path().join(&out));
        let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        let expected = [
            "Functional.flash_attention_score.0.forward.output.0",
            "Functional.flash_attention_score.0.backward.output.0",
            "Functional.flash_attention_score.0.backward.output.1",
            "Functional.flash_attention_score.0.backward.output.2",
        ];
        assert_eq!(names, expected, "{standard}: {}", text(&o));
        assert!(rows.iter().all(|r| r.1 != "skip"), "{standard}: {rows:?}");
        if standard != "msprobe" {
            assert!(rows.iter().all(|r| r.1 == "pass" || r.1 == "warning"), "{standard}: {rows:?}");
        }
    }
}

/// tests/fixtures/mindtorch/constant: MSAdapter's `torch.matmul(s,
/// torch.ones(3, 2))` recorded by msprobe 8.3.2 and 26.2.0, whose constant
/// operand's gradient MindSpore returns as zeros (msprobe records them,
/// with no `requires_grad` anywhere): under every standard no row is an
/// error, and that row says the zeros are the placeholder, not the
/// device's gradient.
#[test]
fn a_real_msadapter_constant_operand_gradient_is_a_placeholder() {
    let dir = tempfile::tempdir().unwrap();
    for version in ["8.3.2", "26.2.0"] {
        let dump = repo().join("tests/fixtures/mindtorch/constant").join(version).join("tensor");
        for standard in ["default", "msprobe", "api", "bound"] {
            let out = format!("{version}-{standard}");
            let args =
                ["-f", "mindspore", "replay", "--dump", dump.to_str().unwrap(), "--data-mode", "real_data", "--standard", standard, "-o", &out, "--top", "0"];
            let o = msprobe(dir.path(), &args);
            assert_eq!(o.status.code(), Some(0), "{version} {standard}: {}", text(&o));
            let rows = common::detail_rows(&dir.path().join(&out));
            let row = rows.iter().find(|r| r.0 == "Torch.matmul.1.backward.output.1").unwrap();
            assert_eq!(row.1, "pass", "{row:?}");
            assert!(row.2.contains(PLACEHOLDER), "{version} {standard}: {row:?}");
            let first = rows.iter().find(|r| r.0 == "Torch.matmul.1.backward.output.0").unwrap();
            assert!(first.2.contains("tested: device gradient recorded in the MSAdapter dump"), "{first:?}");
        }
    }
}

/// The placeholder row's reason (runtime/src/replay/tested.rs, `PLACEHOLDER`).
const PLACEHOLDER: &str = "the recorded gradient is all zeros for an input the dump does not mark requires_grad: MindSpore's placeholder for an input it does not differentiate, not the device's gradient";

/// tests/fixtures/complex_calls (`zoo/make/make_forms.sh complex_calls`, the real msprobe 8.3.2 and 26.2.0):
/// one step of complex64 arithmetic. Every entry gets its rows; polar, complex division, a
/// complex matmul, a complex times a real tensor, sums and differences, abs and angle, forward
/// and backward, are judged natively as float32 pairs and pass under every standard, each
/// complex row labelled complex64 with its complex shape. The same dump with one element of
/// polar's recorded output moved by 1e-3 (written by torch) makes that row an `error` under
/// every standard, and no other.
#[test]
fn complex_calls_are_judged_natively_as_float_pairs() {
    let dir = tempfile::tempdir().unwrap();
    for version in ["8.3.2", "26.2.0"] {
        let dump = repo().join("tests/fixtures/complex_calls").join(version);
        let planted = dir.path().join(format!("planted-{version}"));
        common::copy_dir(&dump, &planted);
        let file = planted.join("dump_tensor_data/Torch.polar.0.forward.output.0.pt");
        let plant = "import sys, torch\nt = torch.load(sys.argv[1])\nt.view(-1)[5] *= 1.001\ntorch.save(t, sys.argv[1])\n";
        let o = Command::new(common::python()).arg("-c").arg(plant).arg(&file).output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let keys: usize = std::fs::read_to_string(dump.join("dump.json")).unwrap().matches(".forward\": {").count() * 2;
        for standard in ["default", "msprobe", "api", "bound"] {
            for (which, path) in [("clean", &dump), ("planted", &planted)] {
                let out = format!("{version}-{standard}-{which}");
                let args =
                    ["-f", "pytorch", "replay", "--dump", path.to_str().unwrap(), "--data-mode", "real_data", "--standard", standard, "-o", &out, "--top", "0"];
                let o = msprobe(dir.path(), &args);
                let rows = common::detail_rows(&dir.path().join(&out));
                let bad: Vec<_> = rows.iter().filter(|r| r.1 != "pass").collect();
                let sum_note =
                    |r: &&(String, String, String)| r.0.starts_with("Tensor.sum.0.") && r.2.starts_with("complex64 compared as its real and imaginary parts");
                assert!(rows.iter().filter(|r| r.0.starts_with("Tensor.sum.0.")).all(|r| sum_note(&r)), "{version} {standard}: {rows:?}");
                if which == "clean" {
                    assert!(bad.is_empty(), "{version} {standard}: {bad:?}\n{}", text(&o));
                    assert!(text(&o).contains(" API entries in the dump: "), "{}", text(&o));
                    assert!(keys > 20);
                } else {
                    let names: Vec<&str> = bad.iter().map(|r| r.0.as_str()).collect();
                    assert_eq!(names, ["Torch.polar.0.forward.output.0"], "{version} {standard}: {bad:?}");
                    assert_eq!(bad[0].1, "error", "{version} {standard}: {bad:?}");
                }
            }
        }
        let rows = csv(&dir.path().join(format!("{version}-msprobe-clean")), "details", DETAILS_WITH_EFFECTS);
        let label = |name: &str| rows.iter().find(|r| r[0] == name).map(|r| r[1..4].to_vec()).unwrap();
        assert_eq!(label("Torch.polar.0.forward.output.0"), ["torch.complex128", "torch.complex64", "(3, 4)"]);
        assert_eq!(label("Torch.polar.0.backward.output.1"), ["torch.float64", "torch.float32", "(3, 4)"]);
        assert_eq!(label("Torch.matmul.0.backward.output.1"), ["torch.complex128", "torch.complex64", "(4, 5)"]);
        assert_eq!(label("Torch.abs.0.forward.output.0"), ["torch.float64", "torch.float32", "(3, 5)"]);
        assert_eq!(label("Tensor.__mul__.0.backward.output.1"), ["torch.float64", "torch.float32", "(3, 5)"]);
    }
}

/// Nothing in a dump vanishes: every `dump.json` under tests/fixtures (the
/// deliberately broken ones of `mindtorch/bad` aside) replayed with a tensor
/// size limit of one byte (each call a quick `skip`: only the census is
/// wanted) ends with a census line whose entries all have their rows or a
/// named reason: none left unselected under the dump's own framework, no
/// entry unread.
#[test]
fn every_entry_of_every_fixture_dump_has_its_rows_or_a_named_reason() {
    fn dumps(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.ends_with("mindtorch/bad") {
                dumps(&path, out);
            } else if path.file_name().is_some_and(|n| n == "dump.json") {
                out.push(path);
            }
        }
    }
    let mut found = vec![];
    dumps(&repo().join("tests/fixtures"), &mut found);
    found.sort();
    assert!(found.len() > 80, "{} dumps", found.len());
    let dir = tempfile::tempdir().unwrap();
    for (i, dump) in found.iter().enumerate() {
        let content = std::fs::read_to_string(dump).unwrap();
        let mindspore =
            ["\"framework\": \"mindspore\"", "\"framework\": \"mindtorch\"", "\"Mint.", "\"Primitive.", "\"Cell."].iter().any(|m| content.contains(m));
        let framework = if mindspore { "mindspore" } else { "pytorch" };
        let out = format!("out{i}");
        let o = msprobe(dir.path(), &["-f", framework, "replay", "--dump", dump.to_str().unwrap(), "--tensor-size-limit", "1", "--top", "0", "-o", &out]);
        let said = text(&o);
        let census = said.lines().find(|l| l.contains(" API entries in the dump: ")).unwrap_or_else(|| panic!("{}: no census line: {said}", dump.display()));
        let (entries, rest) = census.split_once(" API entries in the dump: ").unwrap();
        let entries: usize = entries.parse().unwrap();
        assert!(entries > 0, "{census}");
        assert!(!census.contains("not selected") && !census.contains("neither an API call's"), "{}: {census}", dump.display());
        let with_rows: usize = rest.split(' ').next().unwrap().parse().unwrap();
        // Each named reason reads ", <n> <Prefix> not replayed (<why>)".
        let parts: Vec<&str> = rest.split(" not replayed (").collect();
        let named: usize = parts[..parts.len() - 1].iter().map(|p| p.rsplit_once(", ").unwrap().1.split(' ').next().unwrap().parse::<usize>().unwrap()).sum();
        assert_eq!(with_rows + named, entries, "{}: {census}", dump.display());
    }
}
