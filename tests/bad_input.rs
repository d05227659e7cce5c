//! The bad-input suite: every command on broken, hostile or inconsistent
//! input. Each case asserts the documented exit code, a one-line message
//! (`msprobe: error: ...`) naming the file and the problem, no panic, and
//! that nothing in the output folder was created or changed. Commands added
//! later extend the table.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::npy_f32;
use serde_json::{json, Value};

/// A valid PyTorch statistics dump: `Torch.matmul.0` forward and backward, `Torch.add.0` forward.
fn statistics_dump() -> Value {
    let t = |shape: Value| json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": shape, "Max": 1.0, "Min": -1.0, "Mean": 0.0, "Norm": 1.0, "requires_grad": true});
    json!({
        "task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null,
        "data": {
            "Torch.matmul.0.forward": {"input_args": [t(json!([2, 3])), t(json!([3, 2]))], "input_kwargs": {}, "output": [t(json!([2, 2]))]},
            "Torch.matmul.0.backward": {"input": [t(json!([2, 2]))], "output": [t(json!([2, 3])), t(json!([3, 2]))]},
            "Torch.add.0.forward": {"input_args": [t(json!([4])), t(json!([4]))], "input_kwargs": {}, "output": [t(json!([4]))]}
        }
    })
}

/// A valid PyTorch tensor dump of `Torch.add.0` whose files are .npy ones.
fn tensor_dump(dir: &Path) -> Value {
    std::fs::create_dir_all(dir.join("dump_tensor_data")).unwrap();
    for name in ["Torch.add.0.forward.input.0", "Torch.add.0.forward.input.1", "Torch.add.0.forward.output.0"] {
        std::fs::write(dir.join("dump_tensor_data").join(format!("{name}.npy")), npy_f32(&[4], &[1.0, 2.0, 3.0, 4.0])).unwrap();
    }
    let t = |name: &str| json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": 4.0, "Min": 1.0, "requires_grad": false, "data_name": format!("{name}.npy")});
    json!({
        "task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": dir.join("dump_tensor_data"),
        "data": {"Torch.add.0.forward": {"input_args": [t("Torch.add.0.forward.input.0"), t("Torch.add.0.forward.input.1")], "input_kwargs": {}, "output": [t("Torch.add.0.forward.output.0")]}}
    })
}

/// Every file under `dir` with its bytes, to see that a failed run left it alone.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    files
}

/// One bad input: files to write, the command, and what it must say.
struct Case {
    name: &'static str,
    /// Writes the case's files into the folder it runs in.
    setup: Box<dyn Fn(&Path)>,
    args: Vec<&'static str>,
    code: i32,
    /// Substrings of the one-line message.
    needles: Vec<String>,
}

fn case(name: &'static str, setup: impl Fn(&Path) + 'static, args: &[&'static str], code: i32, needles: &[&str]) -> Case {
    Case { name, setup: Box::new(setup), args: args.to_vec(), code, needles: needles.iter().map(|s| s.to_string()).collect() }
}

fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// `c.json` naming `d.json` and `api`, with `extra` keys.
fn config(dir: &Path, api: &str, extra: Value) {
    let mut cfg = json!({"dump_json_path": "d.json", "api_name": api});
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    write(dir, "c.json", cfg.to_string());
}

/// The statistics dump as `d.json` and a config for `api` with `extra` keys.
fn stats(api: &'static str, extra: Value) -> impl Fn(&Path) {
    move |dir: &Path| {
        write(dir, "d.json", statistics_dump().to_string());
        config(dir, api, extra.clone());
    }
}

/// `d.json` with `dump` (after `edit`) and a config for `api`.
fn edited(api: &'static str, edit: impl Fn(&mut Value) + 'static) -> impl Fn(&Path) {
    move |dir: &Path| {
        let mut d = statistics_dump();
        edit(&mut d);
        write(dir, "d.json", d.to_string());
        config(dir, api, json!({}));
    }
}

/// The tensor dump, `edit` applied to its files, a real_data config for Torch.add.0.
fn tensors(edit: impl Fn(&Path) + 'static) -> impl Fn(&Path) {
    move |dir: &Path| {
        let d = tensor_dump(dir);
        write(dir, "d.json", d.to_string());
        config(dir, "Torch.add.0", json!({"data_mode": "real_data"}));
        edit(&dir.join("dump_tensor_data"));
    }
}

const GEN: &[&str] = &["-f", "pytorch", "op_generate", "-i", "c.json", "-o", "out"];
const REPLAY: &[&str] = &["-f", "pytorch", "replay", "-i", "c.json", "--output-dir", "out"];

fn config_cases() -> Vec<Case> {
    let mut cases = vec![
        case("config missing", |_: &Path| {}, GEN, 7, &["c.json: cannot read config"]),
        case("config not JSON", |d: &Path| write(d, "c.json", "dump_json_path = d.json"), GEN, 7, &["c.json: not a JSON object"]),
        case("config truncated", |d: &Path| write(d, "c.json", "{\"dump_json_path\": \"d.js"), GEN, 7, &["c.json: not a JSON object"]),
        case("config a list", |d: &Path| write(d, "c.json", "[1, 2]"), GEN, 7, &["c.json: not a JSON object: the top level must be an object"]),
        case("config without a dump", |d: &Path| write(d, "c.json", "{\"api_name\": \"Torch.add.0\"}"), GEN, 7, &["c.json: key \"dump_json_path\""]),
    ];
    // Every key with a wrong type or value, for op_generate and replay.
    let wrong: [(&'static str, Value, &'static str); 20] = [
        ("dump_json_path", json!(5), "key \"dump_json_path\": expected a string"),
        ("api_name", json!(5), "key \"api_name\": expected a string"),
        ("api_name", json!("../../etc/passwd"), "key \"api_name\": expected <Prefix>.<op>.<N>"),
        ("api_name", json!("Torch.add"), "key \"api_name\": expected <Prefix>.<op>.<N>"),
        ("extract_api_path", json!(["x"]), "key \"extract_api_path\": expected a string"),
        ("propagation", json!("sideways"), "key \"propagation\": expected \"forward\" or \"backward\""),
        ("propagation", json!(1), "key \"propagation\": expected a string"),
        ("data_mode", json!("real"), "key \"data_mode\": expected \"random_data\" or \"real_data\""),
        ("data_mode", json!(true), "key \"data_mode\": expected a string"),
        ("random_seed", json!(-1), "key \"random_seed\": expected an integer from 0 to 4294967295"),
        ("random_seed", json!("42"), "key \"random_seed\": expected an integer from 0 to 4294967295"),
        ("random_seed", json!(1e10), "key \"random_seed\": expected an integer from 0 to 4294967295"),
        ("iter_times", json!(0), "key \"iter_times\": expected an integer from 1 to 1000"),
        ("iter_times", json!(1001), "key \"iter_times\": expected an integer from 1 to 1000"),
        ("iter_times", json!("1"), "key \"iter_times\": expected an integer from 1 to 1000"),
        ("cosine_threshold", json!(-1), "key \"cosine_threshold\": expected a finite non-negative number"),
        ("cosine_threshold", json!("0.99"), "key \"cosine_threshold\": expected a finite non-negative number"),
        ("max_abs_err_threshold", json!("nan"), "key \"max_abs_err_threshold\": expected a finite non-negative number"),
        ("standard", json!("strict"), "key \"standard\": expected \"msprobe\" or \"api\""),
        ("standard", json!(1), "key \"standard\": expected a string"),
    ];
    for (i, (key, value, needle)) in wrong.into_iter().enumerate() {
        let args = if i % 2 == 0 { GEN } else { REPLAY };
        cases.push(Case {
            name: key,
            setup: Box::new(stats("Torch.add.0", json!({key: value}))),
            args: args.to_vec(),
            code: 7,
            needles: vec![format!("c.json: {needle}")],
        });
    }
    cases
}

fn dump_cases() -> Vec<Case> {
    vec![
        case("dump missing", |d: &Path| config(d, "Torch.add.0", json!({})), GEN, 4, &["d.json: cannot read dump"]),
        case("dump not JSON", |d: &Path| { write(d, "d.json", "not json"); config(d, "Torch.add.0", json!({})) }, GEN, 4, &["d.json: not a valid msprobe dump.json"]),
        case("dump truncated", |d: &Path| { let t = statistics_dump().to_string(); write(d, "d.json", &t[..t.len() / 2]); config(d, "Torch.add.0", json!({})) }, REPLAY, 4, &["d.json: not a valid msprobe dump.json"]),
        case("dump data not an object", edited("Torch.add.0", |d| d["data"] = json!([1])), GEN, 4, &["d.json"]),
        case("empty dump", edited("Torch.add.0", |d| d["data"] = json!({})), GEN, 4, &["d.json", "Torch.add.0"]),
        case("API not in the dump", stats("Torch.add.7", json!({})), GEN, 4, &["d.json", "API Torch.add.7 not found"]),
        case("API not in the dump, replay", stats("Torch.add.7", json!({})), REPLAY, 4, &["d.json", "no API selected"]),
        case("backward without a backward entry", stats("Torch.add.0", json!({"propagation": "backward"})), GEN, 4, &["no \"Torch.add.0.backward\" entry"]),
        case("backward without a backward entry, replay", stats("Torch.add.0", json!({"propagation": "backward"})), REPLAY, 4, &["propagation is backward, but no selected API has a backward entry"]),
        case("prefix of another framework", stats("Torch.add.0", json!({})), &["-f", "mindspore", "op_generate", "-i", "c.json", "-o", "out"], 4, &["d.json: Torch.add.0: prefix Torch is not replayable for mindspore dumps"]),
        case("framework of another dump", edited("Tensor.add.0", |d| d["data"]["Tensor.add.0.forward"] = d["data"]["Torch.add.0.forward"].clone()), &["-f", "mindspore", "op_generate", "-i", "c.json", "-o", "out"], 4, &["made by \"pytorch\"", "-f mindspore"]),
        case("prefix not replayable", edited("Distributed.all_reduce.0", |d| d["data"]["Distributed.all_reduce.0.forward"] = d["data"]["Torch.add.0.forward"].clone()), GEN, 7, &["c.json: key \"api_name\": expected a prefix among", "got \"Distributed\""]),
        case("negative shape", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!([2, -1])), GEN, 4, &["Torch.add.0.forward.input_args[0].shape: expected non-negative dimensions"]),
        case("shape not a list", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!("4")), REPLAY, 4, &["Torch.add.0.forward.input_args[0].shape"]),
        case("unknown dtype", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["dtype"] = json!("torch.float7")), GEN, 4, &["Torch.add.0.forward.input_args[0]", "torch.float7"]),
        case("kwarg key with a newline and an escape", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_kwargs"] = json!({"a\n\u{1b}[31mb": {"type": "torch.Tensor", "dtype": "torch.float7", "shape": [1]}})), GEN, 4, &["Torch.add.0.forward.input_kwargs.\"a\\n\\u{1b}[31mb\""]),
        case("input_args not a list", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"] = json!({"a": 1})), GEN, 4, &["Torch.add.0.forward.input_args"]),
        case("entry not an object", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"] = json!(3)), REPLAY, 4, &["Torch.add.0.forward"]),
        case("real data from a statistics dump", stats("Torch.add.0", json!({"data_mode": "real_data"})), GEN, 4, &["real_data"]),
        case("real data from a statistics dump, replay", stats("Torch.add.0", json!({"data_mode": "real_data"})), REPLAY, 4, &["d.json: real_data: no tensor folder found"]),
        case("a dump folder with several dumps", |d: &Path| {
            for rank in ["rank0", "rank1"] {
                std::fs::create_dir_all(d.join("step0").join(rank)).unwrap();
                write(&d.join("step0").join(rank), "dump.json", statistics_dump().to_string());
            }
            write(d, "c.json", json!({"dump_json_path": "step0", "api_name": "Torch.add.0"}).to_string());
        }, GEN, 4, &["holds several dumps"]),
    ]
}

fn tensor_cases() -> Vec<Case> {
    vec![
        case("tensor file missing", tensors(|t: &Path| std::fs::remove_file(t.join("Torch.add.0.forward.input.1.npy")).unwrap()), REPLAY, 4, &["Torch.add.0.forward.input.1.npy"]),
        case("tensor file missing, op_generate", tensors(|t: &Path| std::fs::remove_file(t.join("Torch.add.0.forward.input.1.npy")).unwrap()), GEN, 4, &["Torch.add.0.forward.input.1.npy"]),
        case("npy truncated", tensors(|t: &Path| { let p = t.join("Torch.add.0.forward.input.0.npy"); let b = std::fs::read(&p).unwrap(); std::fs::write(&p, &b[..b.len() - 5]).unwrap() }), REPLAY, 4, &["Torch.add.0.forward.input.0.npy"]),
        case("npy header only", tensors(|t: &Path| { let p = t.join("Torch.add.0.forward.input.0.npy"); let b = std::fs::read(&p).unwrap(); std::fs::write(&p, &b[..20]).unwrap() }), REPLAY, 4, &["Torch.add.0.forward.input.0.npy"]),
        case("npy claims a huge shape", tensors(|t: &Path| std::fs::write(t.join("Torch.add.0.forward.input.0.npy"), npy_f32(&[1 << 40, 1 << 30], &[])).unwrap()), REPLAY, 4, &["Torch.add.0.forward.input.0.npy"]),
        case("npy of another shape", tensors(|t: &Path| std::fs::write(t.join("Torch.add.0.forward.input.0.npy"), npy_f32(&[2, 2], &[1.0; 4])).unwrap()), REPLAY, 4, &["Torch.add.0.forward.input.0.npy", "differs from the dumped"]),
        case("not an npy", tensors(|t: &Path| std::fs::write(t.join("Torch.add.0.forward.input.0.npy"), "just text").unwrap()), REPLAY, 4, &["Torch.add.0.forward.input.0.npy"]),
        case("a folder where the file should be", tensors(|t: &Path| { let p = t.join("Torch.add.0.forward.input.0.npy"); std::fs::remove_file(&p).unwrap(); std::fs::create_dir(&p).unwrap() }), REPLAY, 4, &["Torch.add.0.forward.input.0.npy"]),
        case("pt not a zip", pt_input(b"PK\x03\x04 not really a zip".to_vec()), REPLAY, 4, &["Torch.add.0.forward.input.0.pt"]),
        case("pt truncated", pt_input(b"PK\x03\x04".to_vec()), REPLAY, 4, &["Torch.add.0.forward.input.0.pt"]),
        case("pt pickle calling os.system", pt_input(pt_with_pickle(b"cposix\nsystem\n(Vtouch PWNED\ntR.")), REPLAY, 4, &["Torch.add.0.forward.input.0.pt"]),
        case("pt pickle calling builtins.eval", pt_input(pt_with_pickle(b"cbuiltins\neval\n(V__import__('os').system('touch PWNED')\ntR.")), REPLAY, 4, &["Torch.add.0.forward.input.0.pt"]),
        case("pt pickle of a plain dict", pt_input(pt_with_pickle(b"}q\x00.")), REPLAY, 4, &["Torch.add.0.forward.input.0.pt"]),
    ]
}

/// A .pt archive (a zip) whose `archive/data.pkl` is `pickle`.
fn pt_with_pickle(pickle: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    z.start_file("archive/data.pkl", opts).unwrap();
    z.write_all(pickle).unwrap();
    z.start_file("archive/version", opts).unwrap();
    z.write_all(b"3\n").unwrap();
    z.finish().unwrap();
    buf.into_inner()
}

/// The tensor dump whose first input is a .pt file holding `bytes`.
fn pt_input(bytes: Vec<u8>) -> impl Fn(&Path) {
    move |dir: &Path| {
        let mut d = tensor_dump(dir);
        d["data"]["Torch.add.0.forward"]["input_args"][0]["data_name"] = json!("Torch.add.0.forward.input.0.pt");
        std::fs::write(dir.join("dump_tensor_data/Torch.add.0.forward.input.0.pt"), &bytes).unwrap();
        write(dir, "d.json", d.to_string());
        config(dir, "Torch.add.0", json!({"data_mode": "real_data"}));
    }
}

/// The tensor dump with its first input's `data_name` set to `name`.
fn data_name(name: &'static str) -> impl Fn(&Path) {
    move |dir: &Path| {
        let mut d = tensor_dump(dir);
        d["data"]["Torch.add.0.forward"]["input_args"][0]["data_name"] = json!(name);
        write(dir, "d.json", d.to_string());
        config(dir, "Torch.add.0", json!({"data_mode": "real_data"}));
    }
}

fn path_and_size_cases() -> Vec<Case> {
    let expected = "input_args[0].data_name: expected a bare file name in the dump's tensor folder";
    vec![
        case("data_name climbing out", data_name("../../outside/secret.npy"), GEN, 4, &["d.json: Torch.add.0.forward.", expected]),
        case("data_name climbing out, replay", data_name("../../outside/secret.npy"), REPLAY, 4, &["d.json: Torch.add.0.forward.", expected]),
        case("data_name absolute", data_name("/etc/passwd"), GEN, 4, &[expected]),
        case("data_name with a separator", data_name("sub/x.npy"), REPLAY, 4, &[expected]),
        case("data_name with a backslash", data_name("..\\x.npy"), GEN, 4, &[expected]),
        case("data_name dot-dot", data_name(".."), REPLAY, 4, &[expected]),
        case("data_name with a newline", data_name("x\n.npy"), REPLAY, 4, &[expected, "got \"x\\n.npy\""]),
        case("tensor file a symlink out of the folder", tensors(|t: &Path| {
            let outside = t.parent().unwrap().join("outside.npy");
            std::fs::write(&outside, npy_f32(&[4], &[9.0; 4])).unwrap();
            let link = t.join("Torch.add.0.forward.input.0.npy");
            std::fs::remove_file(&link).unwrap();
            std::os::unix::fs::symlink(&outside, &link).unwrap();
        }), REPLAY, 4, &["Torch.add.0.forward.input.0.npy: refused: it resolves to", "outside the tensor folder"]),
        case("tensor file a symlink out of the folder, op_generate", tensors(|t: &Path| {
            let outside = t.parent().unwrap().join("outside.npy");
            std::fs::write(&outside, npy_f32(&[4], &[9.0; 4])).unwrap();
            let link = t.join("Torch.add.0.forward.input.0.npy");
            std::fs::remove_file(&link).unwrap();
            std::os::unix::fs::symlink(&outside, &link).unwrap();
        }), GEN, 4, &["refused: it resolves to", "outside the tensor folder"]),
        case("shape overflowing int64", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!([4294967296u64, 4294967296u64])), GEN, 4, &["Torch.add.0.forward.input_args[0].shape: expected dimensions whose product (the element count) fits in an int64"]),
        case("shape of 1e24 elements, replay", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!([1000000000000u64, 1000000000000u64])), REPLAY, 4, &["fits in an int64"]),
        case("tensor over the size limit", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!([65536, 65536])), &["-f", "pytorch", "replay", "-i", "c.json", "--output-dir", "out", "--tensor-size-limit", "1M"], 4, &["Torch.add.0: forward.input_args[0]: shape [65536, 65536] needs", "over the tensor size limit of 1048576 bytes (--tensor-size-limit)"]),
        case("call over the memory budget", stats("Torch.add.0", json!({})), &["-f", "pytorch", "replay", "-i", "c.json", "--output-dir", "out", "--memory-budget", "256"], 4, &["Torch.add.0: the call needs an estimated 384 bytes", "over the memory budget of 256 bytes (--memory-budget)"]),
    ]
}

fn output_cases() -> Vec<Case> {
    vec![
        case("replay --dump missing", |_: &Path| {}, &["-f", "pytorch", "replay", "--dump", "nowhere.json", "--output-dir", "out"], 4, &["nowhere.json: cannot read dump"]),
        case("replay --filter matching nothing", |d: &Path| write(d, "d.json", statistics_dump().to_string()), &["-f", "pytorch", "replay", "--dump", "d.json", "--filter", "^Nothing", "--output-dir", "out"], 4, &["d.json: no API selected"]),
        case("output folder is a file", |d: &Path| { stats("Torch.add.0", json!({}))(d); write(d, "taken", "x") }, &["-f", "pytorch", "op_generate", "-i", "c.json", "-o", "taken"], 5, &["taken: cannot write"]),
        case("replay output folder is a file", |d: &Path| { stats("Torch.add.0", json!({}))(d); write(d, "taken", "x") }, &["-f", "pytorch", "replay", "-i", "c.json", "--output-dir", "taken"], 5, &["taken"]),
    ]
}

/// Runs one case in a fresh folder and returns what went wrong, if anything.
fn check(c: &Case) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    (c.setup)(dir.path());
    let before = snapshot(dir.path());
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(&c.args).current_dir(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let mut problems = vec![];
    if o.status.code() != Some(c.code) {
        problems.push(format!("exit {:?}, expected {}", o.status.code(), c.code));
    }
    if err.lines().count() != 1 || !err.starts_with("msprobe: error: ") {
        problems.push("not one `msprobe: error:` line".to_string());
    }
    if err.contains("panicked") || err.contains("RUST_BACKTRACE") {
        problems.push("panicked".to_string());
    }
    for n in &c.needles {
        if !err.contains(n.as_str()) {
            problems.push(format!("does not mention {n:?}"));
        }
    }
    if snapshot(dir.path()) != before {
        problems.push("changed the folder".to_string());
    }
    (!problems.is_empty()).then(|| format!("{}: {} (stderr: {err:?})", c.name, problems.join(", ")))
}

#[test]
fn every_bad_input_fails_cleanly() {
    let cases: Vec<Case> = [config_cases(), dump_cases(), tensor_cases(), path_and_size_cases(), output_cases()].into_iter().flatten().collect();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let failures: Vec<String> = cases.iter().filter_map(check).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

/// Command lines clap refuses: exit 2, its own message, no panic, nothing written.
#[test]
fn bad_command_lines_are_usage_errors() {
    let lines: [&[&str]; 8] = [
        &["op_generate", "-i", "c.json", "-o", "out"],
        &["-f", "tensorflow", "op_generate", "-i", "c.json", "-o", "out"],
        &["-f", "pytorch", "op_generate", "-i", "c.json"],
        &["-f", "pytorch", "op_generate", "-i", "c.json", "-o", "out", "--shard", "0/2"],
        &["-f", "pytorch", "op_generate", "-i", "c.json", "-o", "out", "--all", "--filter", "("],
        &["-f", "pytorch", "replay"],
        &["-f", "pytorch", "replay", "--filter", "x"],
        &["-f", "pytorch", "replay", "-i", "c.json", "--standard", "strict"],
    ];
    for args in lines {
        let dir = tempfile::tempdir().unwrap();
        stats("Torch.add.0", json!({}))(dir.path());
        let before = snapshot(dir.path());
        let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).current_dir(dir.path()).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("error:") && !err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(snapshot(dir.path()), before, "{args:?}");
    }
}
