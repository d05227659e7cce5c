//! Hostile paths and sizes in crafted dumps, through the binary: a
//! `data_name` that is a path, a tensor file that is a symlink out of the
//! dump's tensor folder, and shapes too large to replay; for `replay` (one
//! call and `--dump` batches) and `op_generate`, with exact exit codes,
//! messages and rows.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

/// What every row on an emulated random_data replay says it compared.
/// An emulated float32 `mul` row's Message under the default standard (its rounding bound judged it).
const RANDOM: &str = "emulated device judged by the rounding bound rule (bound_ratio=0.205576; beyond_bound=0; k=3; u=5.96046e-08); \
                      tested: emulated device in the dumped dtypes (random_data has no device values); bench: float64 recompute on the CPU";

/// A MindSpore tensor dump being written into a temporary folder (resolved,
/// so the paths in messages are the ones expected).
struct Dump {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: serde_json::Map<String, Value>,
}

impl Dump {
    fn new() -> Dump {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("dump_tensor_data")).unwrap();
        Dump { _dir: dir, root, data: serde_json::Map::new() }
    }

    fn tensor_dir(&self) -> PathBuf {
        self.root.join("dump_tensor_data")
    }

    /// Writes float32 `values` of `shape` as `<dir>/<name>`.
    fn npy(dir: &Path, name: &str, shape: &[usize], values: &[f32]) {
        std::fs::write(dir.join(name), common::npy_f32(shape, values)).unwrap();
    }

    /// A float32 tensor descriptor of `shape` with `data_name` (no file written).
    fn desc(shape: Value, data_name: Option<&str>) -> Value {
        let mut d = json!({"type": "mindspore.Tensor", "dtype": "Float32", "shape": shape, "Max": 4.0, "Min": 0.5});
        if let Some(n) = data_name {
            d["data_name"] = json!(n);
        }
        d
    }

    /// `Mint.mul.<n>` of [1, 2, 3, 4] × 0.5 with its files written: a
    /// call that passes.
    fn good_mul(&mut self, n: usize) {
        let name = |what: &str| format!("Mint.mul.{n}.forward.{what}.npy");
        Dump::npy(&self.tensor_dir(), &name("input.0"), &[4], &[1.0, 2.0, 3.0, 4.0]);
        Dump::npy(&self.tensor_dir(), &name("input.1"), &[4], &[0.5; 4]);
        Dump::npy(&self.tensor_dir(), &name("output.0"), &[4], &[0.5, 1.0, 1.5, 2.0]);
        let args = vec![Dump::desc(json!([4]), Some(&name("input.0"))), Dump::desc(json!([4]), Some(&name("input.1")))];
        self.mul(n, args, Dump::desc(json!([4]), Some(&name("output.0"))));
    }

    /// `Mint.mul.<n>.forward` with these arguments and output.
    fn mul(&mut self, n: usize, args: Vec<Value>, output: Value) {
        self.data.insert(format!("Mint.mul.{n}.forward"), json!({"input_args": args, "input_kwargs": {}, "output": [output]}));
    }

    /// Writes dump.json and returns its path.
    fn write(&self) -> PathBuf {
        let dump = json!({"task": "tensor", "level": "L1", "framework": "mindspore", "dump_data_dir": self.tensor_dir(), "data": self.data});
        let path = self.root.join("dump.json");
        std::fs::write(&path, dump.to_string()).unwrap();
        path
    }

    /// Writes a config for one API and runs `args` with `-i` it; returns the
    /// output and the output folder.
    fn one(&self, command: &str, api: &str, data_mode: &str, extra: &[&str]) -> (Output, PathBuf) {
        let cfg = json!({"dump_json_path": self.write(), "api_name": api, "propagation": "forward", "data_mode": data_mode});
        std::fs::write(self.root.join("c.json"), cfg.to_string()).unwrap();
        let out = self.root.join(format!("out-{command}-{api}-{data_mode}"));
        let flag = if command == "replay" { "--output-dir" } else { "-o" };
        let mut args = vec!["-f", "mindspore", command, "-i", "c.json", flag, out.to_str().unwrap()];
        args.extend(extra);
        (run(&self.root, &args), out)
    }

    /// `replay --dump` of every call; returns the output and the CSV folder.
    fn batch(&self, data_mode: &str, extra: &[&str]) -> (Output, PathBuf) {
        let dump = self.write();
        let out = self.root.join(format!("batch-{data_mode}-{}", extra.join("")));
        let mut args = vec!["-f", "mindspore", "replay", "--dump", dump.to_str().unwrap(), "--data-mode", data_mode, "--output-dir", out.to_str().unwrap()];
        args.extend(extra);
        (run(&self.root, &args), out)
    }
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).current_dir(dir).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The single line of stderr, without its newline.
fn one_line(o: &Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr.trim_end().to_string()
}

fn row(rows: &[(String, String, String)], name: &str) -> (String, String) {
    let r = rows.iter().find(|r| r.0 == name).unwrap_or_else(|| panic!("no row {name} in {rows:#?}"));
    (r.1.clone(), r.2.clone())
}

/// No output: the output folder is absent, or empty (op_generate creates
/// it before reading the call).
fn no_output(out: &Path) {
    if let Ok(entries) = std::fs::read_dir(out) {
        let names: Vec<_> = entries.map(|e| e.unwrap().file_name()).collect();
        assert!(names.is_empty(), "{} holds {names:?}", out.display());
    }
}

#[test]
fn a_data_name_that_is_a_path_is_refused_naming_the_entry() {
    for bad in ["../../outside/secret.npy", "/etc/passwd", "sub/x.npy", "..\\x.npy", ".."] {
        let mut d = Dump::new();
        d.good_mul(0);
        d.mul(1, vec![Dump::desc(json!([4]), Some(bad)), Dump::desc(json!([4]), Some("Mint.mul.0.forward.input.1.npy"))], Dump::desc(json!([4]), None));
        let dump = d.write();
        let expected = format!(
            "msprobe: error: {}: Mint.mul.1.forward.input_args[0].data_name: expected a bare file name in the dump's tensor folder (no '/', '\\', '.', '..', control character or absolute path), got {bad:?}",
            dump.display()
        );
        // Refused whatever the data mode, by both commands.
        for (command, mode) in [("replay", "real_data"), ("replay", "random_data"), ("op_generate", "real_data"), ("op_generate", "random_data")] {
            let (o, out) = d.one(command, "Mint.mul.1", mode, &[]);
            assert_eq!(o.status.code(), Some(4), "{command} {mode}: {}", text(&o));
            assert_eq!(one_line(&o), expected, "{command} {mode}");
            no_output(&out);
        }
        // In a batch: one skip row, and the other call is judged.
        let (o, out) = d.batch("real_data", &[]);
        assert_eq!(o.status.code(), Some(8), "{}", text(&o));
        let all = common::detail_rows(&out);
        assert_eq!(all.len(), 2, "{all:#?}");
        assert_eq!(row(&all, "Mint.mul.0.forward.output.0").0, "pass");
        let message = format!("cannot replay here: broken input: {}", expected.trim_start_matches("msprobe: error: "));
        assert_eq!(row(&all, "Mint.mul.1.forward"), ("skip".into(), message));
    }
}

#[cfg(unix)]
#[test]
fn a_tensor_file_that_is_a_symlink_out_of_the_tensor_folder_is_refused() {
    use std::os::unix::fs::symlink;
    let mut d = Dump::new();
    let outside = d.root.join("outside");
    std::fs::create_dir(&outside).unwrap();
    Dump::npy(&outside, "secret.npy", &[4], &[7.0; 4]);
    d.good_mul(0);
    d.good_mul(1);
    let link = d.tensor_dir().join("Mint.mul.1.forward.input.0.npy");
    std::fs::remove_file(&link).unwrap();
    symlink(outside.join("secret.npy"), &link).unwrap();
    let refused =
        format!("{}: refused: it resolves to {}, outside the tensor folder {}", link.display(), outside.join("secret.npy").display(), d.tensor_dir().display());
    for command in ["replay", "op_generate"] {
        let (o, out) = d.one(command, "Mint.mul.1", "real_data", &[]);
        assert_eq!(o.status.code(), Some(4), "{command}: {}", text(&o));
        assert_eq!(one_line(&o), format!("msprobe: error: Mint.mul.1: {refused}"), "{command}");
        no_output(&out);
    }
    let (o, out) = d.batch("real_data", &[]);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let all = common::detail_rows(&out);
    assert_eq!(row(&all, "Mint.mul.0.forward.output.0").0, "pass");
    assert_eq!(row(&all, "Mint.mul.1.forward"), ("skip".into(), format!("cannot replay here: broken input: Mint.mul.1: {refused}")));

    // A recorded output that links out: the runtime's reader refuses it.
    std::fs::remove_file(&link).unwrap();
    Dump::npy(&d.tensor_dir(), "Mint.mul.1.forward.input.0.npy", &[4], &[1.0, 2.0, 3.0, 4.0]);
    let output = d.tensor_dir().join("Mint.mul.1.forward.output.0.npy");
    std::fs::remove_file(&output).unwrap();
    symlink(outside.join("secret.npy"), &output).unwrap();
    let (o, out) = d.one("replay", "Mint.mul.1", "real_data", &[]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let refused = format!(
        "{}: refused: it resolves to {}, outside the tensor folder {}",
        output.display(),
        outside.join("secret.npy").display(),
        d.tensor_dir().display()
    );
    assert_eq!(one_line(&o), format!("msprobe: error: Mint.mul.1: {refused}"));
    no_output(&out);
}

#[test]
fn a_missing_input_file_is_refused_before_a_script_is_written() {
    let mut d = Dump::new();
    d.good_mul(0);
    let file = d.tensor_dir().join("Mint.mul.0.forward.input.1.npy");
    std::fs::remove_file(&file).unwrap();
    let expected = format!("msprobe: error: Mint.mul.0: {}: cannot read: No such file or directory (os error 2)", file.display());
    for command in ["replay", "op_generate"] {
        let (o, out) = d.one(command, "Mint.mul.0", "real_data", &[]);
        assert_eq!(o.status.code(), Some(4), "{command}: {}", text(&o));
        assert_eq!(one_line(&o), expected, "{command}");
        no_output(&out);
    }
    // random_data reads no file.
    let (o, out) = d.one("op_generate", "Mint.mul.0", "random_data", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(out.join("Mint.mul.0.forward.py").is_file());
}

/// A dump of a passing call, a call with a 2^48-element input, and one
/// whose shape's element count (2^64) wrapped to 0 before.
fn enormous() -> Dump {
    let mut d = Dump::new();
    d.good_mul(0);
    d.mul(1, vec![Dump::desc(json!([65536, 65536, 65536]), None), Dump::desc(json!([4]), None)], Dump::desc(json!([4]), None));
    d.mul(2, vec![Dump::desc(json!([4294967296u64, 4294967296u64]), None), Dump::desc(json!([4]), None)], Dump::desc(json!([4]), None));
    d
}

const OVER_LIMIT: &str =
    "Mint.mul.1: forward.input_args[0]: shape [65536, 65536, 65536] needs 2251799813685248 bytes as float64, over the tensor size limit of 1073741824 bytes (--tensor-size-limit)";

#[test]
fn an_enormous_shape_is_one_skip_row_among_verdicts() {
    let d = enormous();
    let (o, out) = d.batch("random_data", &["--tensor-size-limit", "1G"]);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let all = common::detail_rows(&out);
    assert_eq!(all.len(), 3, "{all:#?}");
    assert_eq!(row(&all, "Mint.mul.0.forward.output.0"), ("pass".into(), RANDOM.into()));
    assert_eq!(row(&all, "Mint.mul.1.forward"), ("skip".into(), format!("cannot replay here: {OVER_LIMIT}")));
    let wrapped = format!(
        "cannot replay here: broken input: {}: Mint.mul.2.forward.input_args[0].shape: expected dimensions whose product (the element count) fits in an int64, got [4294967296, 4294967296]",
        d.root.join("dump.json").display()
    );
    assert_eq!(row(&all, "Mint.mul.2.forward"), ("skip".into(), wrapped));
    // The default limit is a share of this machine's memory: 2 PiB is over it.
    let (o, out) = d.batch("random_data", &[]);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let (status, message) = row(&common::detail_rows(&out), "Mint.mul.1.forward");
    assert_eq!(status, "skip");
    assert!(message.starts_with("cannot replay here: Mint.mul.1: forward.input_args[0]: shape [65536, 65536, 65536] needs 2251799813685248 bytes as float64, over the tensor size limit of "), "{message}");
    assert!(message.ends_with(" bytes (--tensor-size-limit)"), "{message}");
}

#[test]
fn an_enormous_shape_alone_is_an_input_error() {
    let d = enormous();
    let (o, out) = d.one("replay", "Mint.mul.1", "random_data", &["--tensor-size-limit", "1G"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert_eq!(one_line(&o), format!("msprobe: error: {OVER_LIMIT}"));
    no_output(&out);
    // 2^64 elements no longer pass as an empty tensor.
    let (o, out) = d.one("replay", "Mint.mul.2", "random_data", &[]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert_eq!(
        one_line(&o),
        format!(
            "msprobe: error: {}: Mint.mul.2.forward.input_args[0].shape: expected dimensions whose product (the element count) fits in an int64, got [4294967296, 4294967296]",
            d.root.join("dump.json").display()
        )
    );
    no_output(&out);
}

#[test]
fn op_generate_refuses_impossible_shapes_only() {
    let d = enormous();
    // The script runs elsewhere, on a machine with its own memory: a shape
    // a tensor can have is generated ...
    let (o, out) = d.one("op_generate", "Mint.mul.1", "random_data", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(out.join("Mint.mul.1.forward.py").is_file(), "{}", text(&o));
    // ... one no tensor can have is refused.
    let (o, out) = d.one("op_generate", "Mint.mul.2", "random_data", &[]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(one_line(&o).ends_with(
        "Mint.mul.2.forward.input_args[0].shape: expected dimensions whose product (the element count) fits in an int64, got [4294967296, 4294967296]"
    ));
    no_output(&out);
}

#[test]
fn calls_over_the_memory_budget_are_skipped_and_the_rest_run() {
    let mut d = Dump::new();
    d.good_mul(0);
    // Three tensors of 64 float32: 3 × 64 × 8 bytes × 4 copies = 6144 bytes.
    d.mul(1, vec![Dump::desc(json!([64]), None), Dump::desc(json!([64]), None)], Dump::desc(json!([64]), None));
    let (o, out) = d.batch("random_data", &["--memory-budget", "1K"]);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    let all = common::detail_rows(&out);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!(row(&all, "Mint.mul.0.forward.output.0"), ("pass".into(), RANDOM.into()));
    let message = "cannot replay here: Mint.mul.1: the call needs an estimated 6144 bytes (its tensors' 1536 bytes as float64 × 4 copies), over the memory budget of 1024 bytes (--memory-budget)";
    assert_eq!(row(&all, "Mint.mul.1.forward"), ("skip".into(), message.into()));
    let (o, out) = d.one("replay", "Mint.mul.1", "random_data", &["--memory-budget", "1K"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert_eq!(one_line(&o), format!("msprobe: error: {}", message.trim_start_matches("cannot replay here: ")));
    no_output(&out);
}

#[test]
fn size_flags_are_checked_by_the_parser() {
    let d = Dump::new();
    let o = run(&d.root, &["-f", "mindspore", "replay", "--dump", "dump.json", "--tensor-size-limit", "2X"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.starts_with(
            "error: invalid value '2X' for '--tensor-size-limit <NUM+SUFFIX?>': expected a number of bytes with an optional suffix K, M, G or T, got \"2X\""
        ),
        "{stderr}"
    );
}
