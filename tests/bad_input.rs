//! The bad-input suite: every command on broken, hostile or inconsistent
//! input. Each case asserts the documented exit code, a one-line message
//! (`msprobe: error: ...`) naming the file and the problem, no panic, and
//! that nothing in the output folder was created or changed. Commands added
//! later extend the table.

// Tests here are tables of cases (one broken input per row, with its exit
// code and message): their length is the table's, not logic's.
#![allow(clippy::too_many_lines)]

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
        ("standard", json!("strict"), "key \"standard\": expected \"default\", \"msprobe\", \"api\" or \"bound\""),
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
        case(
            "dump not JSON",
            |d: &Path| {
                write(d, "d.json", "not json");
                config(d, "Torch.add.0", json!({}))
            },
            GEN,
            4,
            &["d.json: not a valid msprobe dump.json"],
        ),
        case(
            "dump truncated",
            |d: &Path| {
                let t = statistics_dump().to_string();
                write(d, "d.json", &t[..t.len() / 2]);
                config(d, "Torch.add.0", json!({}))
            },
            REPLAY,
            4,
            &["d.json: not a valid msprobe dump.json"],
        ),
        case("dump data not an object", edited("Torch.add.0", |d| d["data"] = json!([1])), GEN, 4, &["d.json"]),
        case("empty dump", edited("Torch.add.0", |d| d["data"] = json!({})), GEN, 4, &["d.json", "Torch.add.0"]),
        case("API not in the dump", stats("Torch.add.7", json!({})), GEN, 4, &["d.json", "API Torch.add.7 not found"]),
        case("API not in the dump, replay", stats("Torch.add.7", json!({})), REPLAY, 4, &["d.json", "no API selected"]),
        case("backward without a backward entry", stats("Torch.add.0", json!({"propagation": "backward"})), GEN, 4, &["no \"Torch.add.0.backward\" entry"]),
        case(
            "backward without a backward entry, replay",
            stats("Torch.add.0", json!({"propagation": "backward"})),
            REPLAY,
            4,
            &["propagation is backward, but no selected API has a backward entry"],
        ),
        case(
            "prefix of another framework",
            edited("Torch.add.0", |d| d["framework"] = json!("mindspore")),
            &["-f", "mindspore", "op_generate", "-i", "c.json", "-o", "out"],
            4,
            &["d.json: Torch.add.0: prefix Torch is not replayable for mindspore dumps"],
        ),
        case(
            "prefix of another framework's dump",
            stats("Torch.add.0", json!({})),
            &["-f", "mindspore", "op_generate", "-i", "c.json", "-o", "out"],
            4,
            &["d.json: key \"framework\": the dump was made by \"pytorch\", but -f mindspore was given"],
        ),
        case(
            "framework of another dump",
            edited("Tensor.add.0", |d| d["data"]["Tensor.add.0.forward"] = d["data"]["Torch.add.0.forward"].clone()),
            &["-f", "mindspore", "op_generate", "-i", "c.json", "-o", "out"],
            4,
            &["made by \"pytorch\"", "-f mindspore"],
        ),
        case(
            "prefix not replayable",
            edited("Distributed.all_reduce.0", |d| d["data"]["Distributed.all_reduce.0.forward"] = d["data"]["Torch.add.0.forward"].clone()),
            GEN,
            7,
            &["c.json: key \"api_name\": expected a prefix among", "got \"Distributed\""],
        ),
        case(
            "negative shape",
            edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!([2, -1])),
            GEN,
            4,
            &["Torch.add.0.forward.input_args[0].shape: expected non-negative dimensions"],
        ),
        case(
            "shape not a list",
            edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!("4")),
            REPLAY,
            4,
            &["Torch.add.0.forward.input_args[0].shape"],
        ),
        case(
            "unknown dtype",
            edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["dtype"] = json!("torch.float7")),
            GEN,
            4,
            &["Torch.add.0.forward.input_args[0]", "torch.float7"],
        ),
        case(
            "kwarg key with a newline and an escape",
            edited("Torch.add.0", |d| {
                d["data"]["Torch.add.0.forward"]["input_kwargs"] = json!({"a\n\u{1b}[31mb": {"type": "torch.Tensor", "dtype": "torch.float7", "shape": [1]}})
            }),
            GEN,
            4,
            &["Torch.add.0.forward.input_kwargs.\"a\\n\\u{1b}[31mb\""],
        ),
        case(
            "input_args not a list",
            edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"] = json!({"a": 1})),
            GEN,
            4,
            &["Torch.add.0.forward.input_args"],
        ),
        case("entry not an object", edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"] = json!(3)), REPLAY, 4, &["Torch.add.0.forward"]),
        case("real data from a statistics dump", stats("Torch.add.0", json!({"data_mode": "real_data"})), GEN, 4, &["real_data"]),
        case(
            "real data from a statistics dump, replay",
            stats("Torch.add.0", json!({"data_mode": "real_data"})),
            REPLAY,
            4,
            &["d.json: real_data: no tensor folder found"],
        ),
        case(
            "a dump folder with several dumps",
            |d: &Path| {
                for rank in ["rank0", "rank1"] {
                    std::fs::create_dir_all(d.join("step0").join(rank)).unwrap();
                    write(&d.join("step0").join(rank), "dump.json", statistics_dump().to_string());
                }
                write(d, "c.json", json!({"dump_json_path": "step0", "api_name": "Torch.add.0"}).to_string());
            },
            GEN,
            4,
            &["holds several dumps"],
        ),
    ]
}

fn tensor_cases() -> Vec<Case> {
    vec![
        case(
            "tensor file missing",
            tensors(|t: &Path| std::fs::remove_file(t.join("Torch.add.0.forward.input.1.npy")).unwrap()),
            REPLAY,
            4,
            &["Torch.add.0.forward.input.1.npy"],
        ),
        case(
            "tensor file missing, op_generate",
            tensors(|t: &Path| std::fs::remove_file(t.join("Torch.add.0.forward.input.1.npy")).unwrap()),
            GEN,
            4,
            &["Torch.add.0.forward.input.1.npy"],
        ),
        case(
            "npy truncated",
            tensors(|t: &Path| {
                let p = t.join("Torch.add.0.forward.input.0.npy");
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() - 5]).unwrap()
            }),
            REPLAY,
            4,
            &["Torch.add.0.forward.input.0.npy"],
        ),
        case(
            "npy header only",
            tensors(|t: &Path| {
                let p = t.join("Torch.add.0.forward.input.0.npy");
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..20]).unwrap()
            }),
            REPLAY,
            4,
            &["Torch.add.0.forward.input.0.npy"],
        ),
        case(
            "npy claims a huge shape",
            tensors(|t: &Path| std::fs::write(t.join("Torch.add.0.forward.input.0.npy"), npy_f32(&[1 << 40, 1 << 30], &[])).unwrap()),
            REPLAY,
            4,
            &["Torch.add.0.forward.input.0.npy"],
        ),
        case(
            "npy of another shape",
            tensors(|t: &Path| std::fs::write(t.join("Torch.add.0.forward.input.0.npy"), npy_f32(&[2, 2], &[1.0; 4])).unwrap()),
            REPLAY,
            4,
            &["Torch.add.0.forward.input.0.npy", "differs from the dumped"],
        ),
        case(
            "not an npy",
            tensors(|t: &Path| std::fs::write(t.join("Torch.add.0.forward.input.0.npy"), "just text").unwrap()),
            REPLAY,
            4,
            &["Torch.add.0.forward.input.0.npy"],
        ),
        case(
            "a folder where the file should be",
            tensors(|t: &Path| {
                let p = t.join("Torch.add.0.forward.input.0.npy");
                std::fs::remove_file(&p).unwrap();
                std::fs::create_dir(&p).unwrap()
            }),
            REPLAY,
            4,
            &["Torch.add.0.forward.input.0.npy"],
        ),
        case("pt not a zip", pt_input(b"PK\x03\x04 not really a zip".to_vec()), REPLAY, 4, &["Torch.add.0.forward.input.0.pt"]),
        case("pt truncated", pt_input(b"PK\x03\x04".to_vec()), REPLAY, 4, &["Torch.add.0.forward.input.0.pt"]),
        case("pt pickle calling os.system", pt_input(pt_with_pickle(b"cposix\nsystem\n(Vtouch PWNED\ntR.")), REPLAY, 4, &["Torch.add.0.forward.input.0.pt"]),
        case(
            "pt pickle calling builtins.eval",
            pt_input(pt_with_pickle(b"cbuiltins\neval\n(V__import__('os').system('touch PWNED')\ntR.")),
            REPLAY,
            4,
            &["Torch.add.0.forward.input.0.pt"],
        ),
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
        case(
            "tensor file a symlink out of the folder",
            tensors(|t: &Path| {
                let outside = t.parent().unwrap().join("outside.npy");
                std::fs::write(&outside, npy_f32(&[4], &[9.0; 4])).unwrap();
                let link = t.join("Torch.add.0.forward.input.0.npy");
                std::fs::remove_file(&link).unwrap();
                std::os::unix::fs::symlink(&outside, &link).unwrap();
            }),
            REPLAY,
            4,
            &["Torch.add.0.forward.input.0.npy: refused: it resolves to", "outside the tensor folder"],
        ),
        case(
            "tensor file a symlink out of the folder, op_generate",
            tensors(|t: &Path| {
                let outside = t.parent().unwrap().join("outside.npy");
                std::fs::write(&outside, npy_f32(&[4], &[9.0; 4])).unwrap();
                let link = t.join("Torch.add.0.forward.input.0.npy");
                std::fs::remove_file(&link).unwrap();
                std::os::unix::fs::symlink(&outside, &link).unwrap();
            }),
            GEN,
            4,
            &["refused: it resolves to", "outside the tensor folder"],
        ),
        case(
            "shape overflowing int64",
            edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!([4294967296u64, 4294967296u64])),
            GEN,
            4,
            &["Torch.add.0.forward.input_args[0].shape: expected dimensions whose product (the element count) fits in an int64"],
        ),
        case(
            "shape of 1e24 elements, replay",
            edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!([1000000000000u64, 1000000000000u64])),
            REPLAY,
            4,
            &["fits in an int64"],
        ),
        case(
            "tensor over the size limit",
            edited("Torch.add.0", |d| d["data"]["Torch.add.0.forward"]["input_args"][0]["shape"] = json!([65536, 65536])),
            &["-f", "pytorch", "replay", "-i", "c.json", "--output-dir", "out", "--tensor-size-limit", "1M"],
            4,
            &["Torch.add.0: forward.input_args[0]: shape [65536, 65536] needs", "over the tensor size limit of 1048576 bytes (--tensor-size-limit)"],
        ),
        case(
            "call over the memory budget",
            stats("Torch.add.0", json!({})),
            &["-f", "pytorch", "replay", "-i", "c.json", "--output-dir", "out", "--memory-budget", "256"],
            4,
            &["Torch.add.0: the call needs an estimated 384 bytes", "over the memory budget of 256 bytes (--memory-budget)"],
        ),
    ]
}

/// The MSAdapter fixture dump `tests/fixtures/mindtorch/<rel>/dump.json` as
/// `d.json` (its tensor folder beside it, when it has one) and a config for
/// `api` with `extra` keys.
fn mindtorch(rel: &'static str, api: &'static str, extra: Value) -> impl Fn(&Path) {
    move |dir: &Path| {
        let from = common::repo().join("tests/fixtures/mindtorch").join(rel);
        std::fs::copy(from.join("dump.json"), dir.join("d.json")).unwrap();
        if let Ok(files) = std::fs::read_dir(from.join("dump_tensor_data")) {
            std::fs::create_dir(dir.join("dump_tensor_data")).unwrap();
            for f in files.map(Result::unwrap) {
                std::fs::copy(f.path(), dir.join("dump_tensor_data").join(f.file_name())).unwrap();
            }
        }
        config(dir, api, extra.clone());
    }
}

/// MSAdapter (`"framework": "mindtorch"`) dumps, read with `-f mindspore`.
fn mindtorch_cases() -> Vec<Case> {
    const RUST_MS: &[&str] = &["-f", "mindspore", "op_generate", "-i", "c.json", "-o", "out", "--lang", "rust"];
    const REPLAY_MS: &[&str] = &["-f", "mindspore", "replay", "-i", "c.json", "--output-dir", "out"];
    const PY_MS: &[&str] = &["-f", "mindspore", "op_generate", "-i", "c.json", "-o", "out"];
    let unknown_dtype =
        "d.json: Torch.tanh.0.forward.input_args[0].dtype: expected a supported dtype (float16/32/64, bfloat16, int, bool, complex), got \"mindtorch.float17\"";
    let missing = "dump_tensor_data/Torch.tanh.0.forward.input.0.npy: cannot read: No such file or directory";
    let pytorch = "d.json: key \"framework\": \"mindtorch\" marks an MSAdapter dump, which is read with -f mindspore, not -f pytorch";
    vec![
        case("mindtorch: unknown dtype string", mindtorch("bad/unknown_dtype", "Torch.tanh.0", json!({})), REPLAY_MS, 4, &[unknown_dtype]),
        case("mindtorch: unknown dtype string, op_generate", mindtorch("bad/unknown_dtype", "Torch.tanh.0", json!({})), RUST_MS, 4, &[unknown_dtype]),
        case(
            "mindtorch: .npy missing",
            mindtorch("bad/missing_npy", "Torch.tanh.0", json!({"data_mode": "real_data"})),
            REPLAY_MS,
            4,
            &["msprobe: error: Torch.tanh.0: ", missing],
        ),
        case(
            "mindtorch: .npy missing, op_generate",
            mindtorch("bad/missing_npy", "Torch.tanh.0", json!({"data_mode": "real_data"})),
            RUST_MS,
            4,
            &["msprobe: error: Torch.tanh.0: ", missing],
        ),
        case("mindtorch: unknown dtype string, script", mindtorch("bad/unknown_dtype", "Torch.tanh.0", json!({})), PY_MS, 4, &[unknown_dtype]),
        case(
            "mindtorch: .npy missing, script",
            mindtorch("bad/missing_npy", "Torch.tanh.0", json!({"data_mode": "real_data"})),
            PY_MS,
            4,
            &["msprobe: error: Torch.tanh.0: ", missing],
        ),
        case(
            "mindtorch: an NPU entry, script",
            mindtorch("bad/npu_entry", "NPU.npu_rms_norm.0", json!({})),
            PY_MS,
            4,
            &["d.json: key \"NPU.npu_rms_norm.0.forward\": Python scripts for MSAdapter's NPU calls are not generated yet (use --lang rust or replay)"],
        ),
        case(
            "mindtorch: MindSpore's prefix",
            mindtorch("bad/npu_entry", "Mint.tanh.0", json!({})),
            RUST_MS,
            4,
            &["d.json: Mint.tanh.0: prefix Mint is not replayable for mindtorch dumps"],
        ),
        case("mindtorch: -f pytorch", mindtorch("mlp/8.3.2/statistics", "Torch.tanh.0", json!({})), REPLAY, 4, &[pytorch]),
        case("mindtorch: -f pytorch, op_generate", mindtorch("mlp/8.3.2/statistics", "Torch.tanh.0", json!({})), GEN, 4, &[pytorch]),
    ]
}

/// The statistics dump with an `NPU.<op>.0` forward entry of `args` inputs, and a config for it.
fn npu(op: &'static str, args: usize) -> impl Fn(&Path) {
    move |dir: &Path| {
        let mut d = statistics_dump();
        let mut entry = d["data"]["Torch.add.0.forward"].clone();
        entry["input_args"] = json!(vec![entry["input_args"][0].clone(); args]);
        d["data"][format!("NPU.{op}.0.forward")] = entry;
        write(dir, "d.json", d.to_string());
        config(dir, &format!("NPU.{op}.0"), json!({}));
    }
}

/// NPU (torch_npu) calls op_generate has no reference for: exit 4, nothing written.
fn npu_cases() -> Vec<Case> {
    const RUST: &[&str] = &["-f", "pytorch", "op_generate", "-i", "c.json", "-o", "out", "--lang", "rust"];
    let why = "expected an API that torch_npu exposes under NPU (the runtime's op table only: an NPU call's bench is its reference there)";
    vec![
        case("NPU: unknown name, op_generate", npu("npu_no_such_op", 1), GEN, 4, &[&format!("d.json: key \"NPU.npu_no_such_op.0.forward\": {why}")]),
        case(
            "NPU: unknown name, op_generate --lang rust",
            npu("npu_no_such_op", 1),
            RUST,
            4,
            &[&format!("d.json: key \"NPU.npu_no_such_op.0.forward\": {why}")],
        ),
        case("NPU: on msprobe's list without a reference", npu("npu_gru", 1), RUST, 4, &[&format!("d.json: key \"NPU.npu_gru.0.forward\": {why}")]),
        case(
            "NPU: a PyTorch prefix under -f mindspore",
            npu("npu_gru", 1),
            &["-f", "mindspore", "op_generate", "-i", "c.json", "-o", "out"],
            4,
            &["d.json: key \"framework\": the dump was made by \"pytorch\", but -f mindspore was given"],
        ),
    ]
}

/// `replay` of NPU calls it cannot judge: a `skip` row naming what is
/// missing (exit 8), never an `error` row or an input error. The messages
/// are the CSV's cells as read back.
#[test]
fn npu_calls_replay_cannot_judge_are_skip_rows() {
    for (op, args, message) in [
        ("npu_no_such_op", 1, "NPU.npu_no_such_op.0.forward: cannot replay here: NPU.npu_no_such_op is not in the runtime's op table"),
        ("npu_gru", 1, "NPU.npu_gru.0.forward: cannot replay here: NPU.npu_gru is not in the runtime's op table"),
        ("npu_rms_norm", 4, "NPU.npu_rms_norm.0.forward: cannot replay here: NPU.npu_rms_norm: 1 positional argument(s) too many for (x, gamma, epsilon=1e-06)"),
        ("npu_fusion_attention", 2, "NPU.npu_fusion_attention.0.forward: cannot replay here: NPU.npu_fusion_attention: missing argument \"value\" for (query, key, value, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None, scale=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False, softmax_layout='')"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        npu(op, args)(dir.path());
        let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(REPLAY).current_dir(dir.path()).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(8), "{op}: {err}");
        let result = std::fs::read_dir(dir.path().join("out")).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().contains("accuracy_checking_result")).unwrap();
        let rows = common::csv_file_records(&result).split_off(1);
        assert_eq!(rows, [[format!("NPU.{op}.0"), "skip".into(), String::new(), message.into()]], "{op}");
    }
}

fn output_cases() -> Vec<Case> {
    vec![
        case(
            "replay --dump missing",
            |_: &Path| {},
            &["-f", "pytorch", "replay", "--dump", "nowhere.json", "--output-dir", "out"],
            4,
            &["nowhere.json: cannot read dump"],
        ),
        case(
            "replay --filter matching nothing",
            |d: &Path| write(d, "d.json", statistics_dump().to_string()),
            &["-f", "pytorch", "replay", "--dump", "d.json", "--filter", "^Nothing", "--output-dir", "out"],
            4,
            &["d.json: no API selected"],
        ),
        case(
            "output folder is a file",
            |d: &Path| {
                stats("Torch.add.0", json!({}))(d);
                write(d, "taken", "x")
            },
            &["-f", "pytorch", "op_generate", "-i", "c.json", "-o", "taken"],
            5,
            &["taken: cannot write"],
        ),
        case(
            "replay output folder is a file",
            |d: &Path| {
                stats("Torch.add.0", json!({}))(d);
                write(d, "taken", "x")
            },
            &["-f", "pytorch", "replay", "-i", "c.json", "--output-dir", "taken"],
            5,
            &["taken"],
        ),
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
    let cases: Vec<Case> =
        [config_cases(), dump_cases(), tensor_cases(), path_and_size_cases(), mindtorch_cases(), npu_cases(), output_cases()].into_iter().flatten().collect();
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
        &["-f", "pytorch", "op_generate", "-i", "c.json", "-o"],
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

/// Two valid SingleSave runs `a` and `b` (key `k`, step 0, rank 0,
/// micro_step 0), then `edit` applied to the case's folder.
fn single_runs(edit: impl Fn(&Path) + 'static) -> impl Fn(&Path) {
    move |dir: &Path| {
        for run in ["a", "b"] {
            let micro = dir.join(run).join("data/k/step0/rank0/micro_step0");
            std::fs::create_dir_all(&micro).unwrap();
            std::fs::write(micro.join("k.npy"), npy_f32(&[4], &[1.0, 2.0, 3.0, 4.0])).unwrap();
        }
        edit(dir);
    }
}

/// `single_compare` on broken, hostile and mislaid runs: exit 4 (5 for the
/// output), one line naming the file, no workbook and no output folder.
#[test]
fn every_bad_single_compare_run_fails_cleanly() {
    const SC: &[&str] = &["single_compare", "a", "b", "-o", "out"];
    const K: &str = "b/data/k/step0/rank0/micro_step0/k.npy";
    let cases = vec![
        case(
            "truncated .npy",
            single_runs(|d: &Path| std::fs::write(d.join(K), &npy_f32(&[4], &[1.0; 4])[..138]).unwrap()),
            SC,
            4,
            &[K, "expected 16 data bytes for shape [4] and dtype '<f4', found 10"],
        ),
        case(
            ".npy claiming a huge shape",
            single_runs(|d: &Path| std::fs::write(d.join(K), common::npy_bytes("<f4", &[1 << 20, 1 << 20], &[0; 16])).unwrap()),
            SC,
            4,
            &[K, "data bytes for shape [1048576, 1048576]"],
        ),
        case("not a .npy", single_runs(|d: &Path| std::fs::write(d.join(K), "{\"data\": 1}").unwrap()), SC, 4, &[K, "expected the .npy magic"]),
        case(
            "step folder that does not parse",
            single_runs(|d: &Path| std::fs::create_dir_all(d.join("a/data/k/stepX/rank0")).unwrap()),
            SC,
            4,
            &["a/data/k: expected a folder named step<N> (N a number), got \"stepX\""],
        ),
        case(
            "rank folder that does not parse",
            single_runs(|d: &Path| std::fs::create_dir_all(d.join("b/data/k/step0/rank_1")).unwrap()),
            SC,
            4,
            &["b/data/k/step0: expected a folder named rank<N> (N a number), got \"rank_1\""],
        ),
        case(
            "micro_step folder that does not parse",
            single_runs(|d: &Path| std::fs::create_dir_all(d.join("a/data/k/step0/rank0/micro_step1b")).unwrap()),
            SC,
            4,
            &["got \"micro_step1b\""],
        ),
        case(
            "step that is a file",
            single_runs(|d: &Path| write(d, "a/data/k/step3", "x")),
            SC,
            4,
            &["a/data/k/step3: expected step<N> to be a folder, found a file"],
        ),
        case(
            ".npy a symlink out of the run",
            single_runs(|d: &Path| {
                std::fs::write(d.join("outside.npy"), npy_f32(&[4], &[9.0; 4])).unwrap();
                std::fs::remove_file(d.join(K)).unwrap();
                std::os::unix::fs::symlink(d.join("outside.npy"), d.join(K)).unwrap();
            }),
            SC,
            4,
            &[K, "refused: it resolves to", "outside.npy"],
        ),
        case(
            "key folder a symlink out of the run",
            single_runs(|d: &Path| {
                std::fs::create_dir_all(d.join("elsewhere/step0/rank0")).unwrap();
                std::os::unix::fs::symlink(d.join("elsewhere"), d.join("a/data/k2")).unwrap();
            }),
            SC,
            4,
            &["a/data/k2: refused: it resolves to", "elsewhere, outside the run folder"],
        ),
        case(
            "data folder missing",
            single_runs(|d: &Path| std::fs::remove_dir_all(d.join("b/data")).unwrap()),
            SC,
            4,
            &["b/data: expected the data folder of a SingleSave run"],
        ),
        case(
            "a key name with a newline",
            single_runs(|d: &Path| std::fs::create_dir_all(d.join("a/data/k\nx")).unwrap()),
            SC,
            4,
            &["a/data: expected printable UTF-8 names, got \"k\\nx\""],
        ),
        case(
            "no arrays in either run",
            |d: &Path| ["a/data", "b/data"].iter().for_each(|p| std::fs::create_dir_all(d.join(p)).unwrap()),
            SC,
            4,
            &["a: expected .npy files under data/<key>/step<N>/rank<R> here or in b, found none"],
        ),
        case(
            "output path is a file",
            single_runs(|d: &Path| write(d, "taken", "x")),
            &["single_compare", "a", "b", "-o", "taken"],
            5,
            &["taken: cannot write: expected a folder, found a file"],
        ),
    ];
    let failures: Vec<String> = cases.iter().filter_map(check).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
    for c in &cases {
        let dir = tempfile::tempdir().unwrap();
        (c.setup)(dir.path());
        Command::new(env!("CARGO_BIN_EXE_msprobe")).args(&c.args).current_dir(dir.path()).output().unwrap();
        assert!(!dir.path().join("out").exists(), "{}: the output folder was created", c.name);
    }
}

/// A step folder for `nan_analyze`, `step0/rank0` and `step0/rank1`, whose
/// `Torch.add.0` turns NaN on both ranks (a valid run writes a report),
/// then `edit` breaks it.
fn nan_step(edit: impl Fn(&Path) + 'static) -> impl Fn(&Path) {
    const DUMP: &str = r#"{"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null, "data": {
        "Torch.add.0.forward": {"input_args": [{"type": "torch.Tensor", "Max": 1.0, "Min": 0.0}], "input_kwargs": {}, "output": [{"type": "torch.Tensor", "Max": NaN, "Min": 0.0}]},
        "Distributed.all_reduce.0.forward": {"input_args": [{"type": "torch.Tensor", "Max": NaN, "Min": 0.0}], "input_kwargs": {}, "output": [{"type": "torch.Tensor", "Max": NaN, "Min": 0.0}]}}}"#;
    move |d: &Path| {
        for rank in ["rank0", "rank1"] {
            std::fs::create_dir_all(d.join("step0").join(rank)).unwrap();
            write(d, &format!("step0/{rank}/dump.json"), DUMP);
            write(d, &format!("step0/{rank}/construct.json"), r#"{"Torch.add.0.forward": "Module.net.Net.forward.0", "Module.net.Net.forward.0": null}"#);
            write(d, &format!("step0/{rank}/stack.json"), r#"{"0": [["Torch.add.0.forward"], ["File net.py, line 3, in forward, \n x + y"]]}"#);
        }
        edit(d);
    }
}

/// nan_analyze: a broken rank folder, dump, construct.json or stack.json is
/// exit 4, an output path that cannot be a folder exit 5, -f other than
/// pytorch exit 2; one line, no panic, nothing written (no report, no
/// output folder).
#[test]
fn every_bad_nan_analyze_run_fails_cleanly() {
    const NA: &[&str] = &["-f", "pytorch", "nan_analyze", "-i", "step0", "-o", "out"];
    let dir = tempfile::tempdir().unwrap();
    nan_step(|_: &Path| {})(dir.path());
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(NA).current_dir(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "the valid step: {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_dir(dir.path().join("out")).unwrap().count(), 1, "the valid step writes its report");
    let cases = vec![
        case(
            "rank folder without dump.json",
            nan_step(|d: &Path| std::fs::remove_file(d.join("step0/rank1/dump.json")).unwrap()),
            NA,
            4,
            &["step0/rank1: no dump.json: a rank folder needs dump.json, construct.json and stack.json"],
        ),
        case(
            "rank folder without stack.json",
            nan_step(|d: &Path| std::fs::remove_file(d.join("step0/rank0/stack.json")).unwrap()),
            NA,
            4,
            &["step0/rank0: no stack.json"],
        ),
        case(
            "truncated dump",
            nan_step(|d: &Path| write(d, "step0/rank1/dump.json", r#"{"task": "statistics", "data": {"Torch.add.0.forward": {"input_args": [{"Max": 1.0"#)),
            NA,
            4,
            &["step0/rank1/dump.json: not a valid msprobe dump.json: the document ends early"],
        ),
        case(
            "dump entry that is no object",
            nan_step(|d: &Path| write(d, "step0/rank1/dump.json", r#"{"data": {"Torch.add.0.forward": [1]}}"#)),
            NA,
            4,
            &["step0/rank1/dump.json: not a valid msprobe dump.json: entry \"Torch.add.0.forward\": expected an object"],
        ),
        case(
            "dump of another framework",
            nan_step(|d: &Path| write(d, "step0/rank0/dump.json", r#"{"framework": "mindspore", "data": {}}"#)),
            NA,
            4,
            &["step0/rank0/dump.json: key \"framework\": the dump was made by \"mindspore\"; nan_analyze reads PyTorch dumps only"],
        ),
        case(
            "stack.json of the wrong shape",
            nan_step(|d: &Path| write(d, "step0/rank1/stack.json", r#"{"0": {"ops": ["Torch.add.0.forward"]}}"#)),
            NA,
            4,
            &["step0/rank1/stack.json: key \"0\": expected a list [[op names], [frames]]"],
        ),
        case("stack.json not an object", nan_step(|d: &Path| write(d, "step0/rank0/stack.json", "[]")), NA, 4, &["step0/rank0/stack.json: expected an object"]),
        case(
            "construct.json of the wrong shape",
            nan_step(|d: &Path| write(d, "step0/rank0/construct.json", r#"{"Torch.add.0.forward": 7}"#)),
            NA,
            4,
            &["step0/rank0/construct.json: key \"Torch.add.0.forward\": expected a parent name, null, or [parent, micro_step]"],
        ),
        case(
            "construct.json not JSON",
            nan_step(|d: &Path| write(d, "step0/rank0/construct.json", "{\"a\": ")),
            NA,
            4,
            &["step0/rank0/construct.json: not valid JSON: EOF while parsing"],
        ),
        case(
            "-i a file",
            |d: &Path| write(d, "step0", "x"),
            NA,
            4,
            &["step0: is not a folder; -i expects a step folder holding rank folders (rank0, rank1, ...)"],
        ),
        case("-i missing", |_: &Path| {}, NA, 4, &["step0: does not exist; -i expects a step folder"]),
        case(
            "-i without rank folders",
            |d: &Path| std::fs::create_dir_all(d.join("step0/proc0")).unwrap(),
            NA,
            4,
            &["step0: holds no rank folder (rank, rank0, rank1, ...)"],
        ),
        case("two folders of one rank", nan_step(|d: &Path| std::fs::create_dir(d.join("step0/rank01")).unwrap()), NA, 4, &["are both rank 1"]),
        case("output path is a file", nan_step(|d: &Path| write(d, "out", "x")), NA, 5, &["out: cannot write: "]),
        case(
            "-f mindspore",
            nan_step(|_: &Path| {}),
            &["-f", "mindspore", "nan_analyze", "-i", "step0", "-o", "out"],
            2,
            &["nan_analyze needs -f pytorch (it analyses PyTorch dumps only, as msprobe)"],
        ),
        case(
            "no -f",
            nan_step(|_: &Path| {}),
            &["nan_analyze", "-i", "step0", "-o", "out"],
            2,
            &["nan_analyze needs -f pytorch (it analyses PyTorch dumps only, as msprobe)"],
        ),
    ];
    let failures: Vec<String> = cases.iter().filter_map(check).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
    for c in cases.iter().filter(|c| c.name != "output path is a file") {
        let dir = tempfile::tempdir().unwrap();
        (c.setup)(dir.path());
        Command::new(env!("CARGO_BIN_EXE_msprobe")).args(&c.args).current_dir(dir.path()).output().unwrap();
        assert!(!dir.path().join("out").exists(), "{}: the output folder was created", c.name);
    }
}

/// A `model_optim_rng.pt` whose `data.pkl` is `pickle` and whose storage
/// `data/0` holds the floats 0, 1, 2, 3.
fn ckpt_pt(pickle: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let storage: Vec<u8> = (0..4).flat_map(|i| (i as f32).to_le_bytes()).collect();
    for (name, bytes) in [("model_optim_rng/byteorder", &b"little"[..]), ("model_optim_rng/data.pkl", pickle), ("model_optim_rng/data/0", &storage)] {
        z.start_file(name, opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
    buf.into_inner()
}

/// `{'args': Namespace(tensor_model_parallel_size=1, pipeline_model_parallel_size=1), 'model': {'w': tensor of 4 floats}}`.
const CKPT_PICKLE: &[u8] = b"\x80\x02}(X\x04\x00\x00\x00argscargparse\nNamespace\n)\x81}(X\x1a\x00\x00\x00tensor_model_parallel_sizeK\x01X\x1c\x00\x00\x00pipeline_model_parallel_sizeK\x01ubX\x05\x00\x00\x00model}X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQK\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtRsu.";

/// Two valid one-rank checkpoints `a` and `b` (iteration 1), then `edit`
/// applied to the case's folder.
fn checkpoints(edit: impl Fn(&Path) + 'static) -> impl Fn(&Path) {
    move |dir: &Path| {
        for c in ["a", "b"] {
            std::fs::create_dir_all(dir.join(c).join("iter_0000001/mp_rank_00")).unwrap();
            write(dir, &format!("{c}/latest_checkpointed_iteration.txt"), "1");
            std::fs::write(dir.join(c).join("iter_0000001/mp_rank_00/model_optim_rng.pt"), ckpt_pt(CKPT_PICKLE)).unwrap();
        }
        edit(dir);
    }
}

/// `b`'s rank file replaced by `bytes`.
fn rank_file(bytes: Vec<u8>) -> impl Fn(&Path) + 'static {
    checkpoints(move |d: &Path| std::fs::write(d.join(CK_FILE), &bytes).unwrap())
}

const CK_FILE: &str = "b/iter_0000001/mp_rank_00/model_optim_rng.pt";

/// Checkpoint compare (`config_check -c` of two checkpoint folders) on
/// hostile, broken and inconsistent checkpoints: exit 4 (5 when the output
/// exists), one line naming the file, no panic, no result file, and no
/// pickle ever run (the `os.system` payload would create `PWNED`).
#[test]
fn every_bad_checkpoint_fails_cleanly() {
    const CC: &[&str] = &["-f", "pytorch", "config_check", "-c", "a", "b", "-o", "out.json"];
    let dir = tempfile::tempdir().unwrap();
    checkpoints(|_: &Path| {})(dir.path());
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(CC).current_dir(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "the valid pair: {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("out.json")).unwrap(), CKPT_RESULT);
    let refused = |g: &str| {
        format!("{CK_FILE}: model_optim_rng/data.pkl: refused the global {g}: a tensor or storage needs it, and it is not on the allowlist of data-only classes (the pickle is never executed)")
    };
    let code = |g: &str| {
        format!("{CK_FILE}: model_optim_rng/data.pkl: refused the global {g}: not on the allowlist of data-only classes (the pickle could run code; it is never executed)")
    };
    let with_pickle = |p: &[u8]| rank_file(ckpt_pt(p));
    let no_model = "key 'args.tensor_model_parallel_size': expected an integer of at least 1, got None";
    let swapped = |from: &[u8], to: &[u8]| {
        let at = CKPT_PICKLE.windows(from.len()).position(|w| w == from).unwrap();
        [&CKPT_PICKLE[..at], to, &CKPT_PICKLE[at + from.len()..]].concat()
    };
    let cases = vec![
        // A global that runs code: refused the moment it is named, as before.
        case("pickle calling os.system", with_pickle(b"cposix\nsystem\n(Vtouch PWNED\ntR."), CC, 4, &[&code("posix.system")]),
        case("pickle calling os.system, protocol 2", with_pickle(b"\x80\x02cos\nsystem\nX\x0b\x00\x00\x00touch PWNED\x85R."), CC, 4, &[&code("os.system")]),
        case("pickle calling builtins.eval", with_pickle(b"\x80\x02cbuiltins\neval\nX\x26\x00\x00\x00__import__('os').system('touch PWNED')\x85R."), CC, 4, &[&code("builtins.eval")]),
        case("pickle calling subprocess.Popen", with_pickle(b"\x80\x04\x8c\nsubprocess\x8c\x05Popen\x93\x8c\x05touch\x8c\x05PWNED\x86\x85R."), CC, 4, &[&code("subprocess.Popen")]),
        case("os.system inside the args", with_pickle(&[&CKPT_PICKLE[..37], b"X\x01\x00\x00\x00xcos\nsystem\n", &CKPT_PICKLE[37..]].concat()), CC, 4, &[&code("os.system")]),
        // A pickle that is only a call of an unknown class: an inert placeholder, so no args (nor model).
        case("pickle calling a __main__ class", with_pickle(b"c__main__\nHook\n(Vtouch PWNED\ntR."), CC, 4, &[CK_FILE, no_model]),
        // A tensor whose storage class is off the allowlist: refused by its name.
        case("storage of a __main__ class", with_pickle(&swapped(b"ctorch\nFloatStorage\n", b"c__main__\nEvilStorage\n")), CC, 4, &[&refused("__main__.EvilStorage")]),
        case("tensor rebuilt by a __main__ function", with_pickle(&{
            let p = swapped(b"ctorch._utils\n_rebuild_tensor_v2\n(", b"ctorch._tensor\n_rebuild_from_type_v2\n(c__main__\nrebuild\nctorch.nn.parameter\nParameter\n(");
            [&p[..p.len() - 5], b"t}tRsu."].concat()
        }), CC, 4, &[&refused("__main__.rebuild")]),
        case("truncated rank file", rank_file(ckpt_pt(CKPT_PICKLE)[..200].to_vec()), CC, 4, &[CK_FILE, "expected a zip archive written by torch.save"]),
        case("rank file not a zip", rank_file(b"\x80\x02}q\x00. not a zip".to_vec()), CC, 4, &[CK_FILE, "expected a zip archive written by torch.save"]),
        case("truncated pickle", with_pickle(&CKPT_PICKLE[..CKPT_PICKLE.len() - 5]), CC, 4, &[CK_FILE, "data.pkl is truncated"]),
        case("storage shorter than the tensor", with_pickle(&{
            let mut p = CKPT_PICKLE.to_vec();
            let at = p.windows(3).position(|w| w == b"\x04tQ").unwrap();
            p[at] = 5;
            p
        }), CC, 4, &[CK_FILE, "expected model_optim_rng/data/0 to hold 5 elements (20 bytes) for model.w, found 16 bytes"]),
        case("no model state dict", with_pickle(b"\x80\x02}X\x04\x00\x00\x00argscargparse\nNamespace\n)\x81}(X\x1a\x00\x00\x00tensor_model_parallel_sizeK\x01X\x1c\x00\x00\x00pipeline_model_parallel_sizeK\x01ubs."), CC, 4, &[CK_FILE, "expected a 'model' (or 'model0', 'model1', ...) state dict holding tensors, found none"]),
        case("args naming a missing TP rank", checkpoints(|d: &Path| std::fs::write(d.join(CK_FILE), ckpt_pt(&CKPT_PICKLE.iter().enumerate().map(|(i, &b)| if i == 69 { 2 } else { b }).collect::<Vec<u8>>())).unwrap()), CC, 4, &["b/iter_0000001/mp_rank_01/model_optim_rng.pt: expected this rank file (args of mp_rank_00: tp 2, pp 1, ep 1), it is missing"]),
        case("an extra rank folder", checkpoints(|d: &Path| std::fs::create_dir_all(d.join("a/iter_0000001/mp_rank_00_001")).unwrap()), CC, 4, &["a/iter_0000001: expected 1 rank folders for tp 1, pp 1, ep 1, found also [\"mp_rank_00_001\"]"]),
        case("tracker naming a missing iteration", checkpoints(|d: &Path| write(d, "a/latest_checkpointed_iteration.txt", "20")), CC, 4, &["a/iter_0000020: expected the iteration folder that latest_checkpointed_iteration.txt names, it does not exist"]),
        case("tracker that is no number", checkpoints(|d: &Path| write(d, "b/latest_checkpointed_iteration.txt", "last\n")), CC, 4, &["b/latest_checkpointed_iteration.txt: expected `release` or an iteration number, got \"last\""]),
        case("release tracker without its folder", checkpoints(|d: &Path| write(d, "b/latest_checkpointed_iteration.txt", "release")), CC, 4, &["b/release: expected the iteration folder"]),
        case("iteration folder without rank folders", checkpoints(|d: &Path| std::fs::remove_dir_all(d.join("a/iter_0000001/mp_rank_00")).unwrap()), CC, 4, &["a/iter_0000001: expected mp_rank_* folders (a Megatron iteration folder), found none"]),
        case("rank folder without its file", checkpoints(|d: &Path| std::fs::remove_file(d.join(CK_FILE)).unwrap()), CC, 4, &[CK_FILE, "cannot read"]),
        case("rank file a symlink out of its folder", checkpoints(|d: &Path| {
            std::fs::rename(d.join(CK_FILE), d.join("elsewhere.pt")).unwrap();
            std::os::unix::fs::symlink(d.join("elsewhere.pt"), d.join(CK_FILE)).unwrap();
        }), CC, 4, &[CK_FILE, "refused: it resolves to"]),
        case("output file exists", checkpoints(|d: &Path| write(d, "out.json", "{}")), CC, 5, &["out.json: cannot write: the output exists; it is never overwritten"]),
    ];
    let failures: Vec<String> = cases.iter().filter_map(check).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
    for c in &cases {
        let dir = tempfile::tempdir().unwrap();
        (c.setup)(dir.path());
        Command::new(env!("CARGO_BIN_EXE_msprobe")).args(c.args.iter()).current_dir(dir.path()).output().unwrap();
        assert!(!dir.path().join("PWNED").exists(), "{}: the pickle ran code", c.name);
        if c.name != "output file exists" {
            assert!(!dir.path().join("out.json").exists(), "{}: a result was written", c.name);
        }
    }
}

/// What the compare writes for two checkpoints of [`CKPT_PICKLE`]'s tensor.
const CKPT_RESULT: &str =
    "{\n    \"w\": {\n        \"l2\": 0.0,\n        \"cos\": 1.0,\n        \"numel\": 4,\n        \"shape\": [\n            4\n        ]\n    }\n}";

/// Globals off the allowlist outside the tensors (`args.x` below: a class
/// of the user's training script named, called by REDUCE or instantiated,
/// an unknown enum) load as inert placeholders: the parameters compare
/// (exit 0, the same result as without them), and nothing runs. Globals
/// that run code stay refused (the cases above).
#[test]
fn unknown_classes_in_the_args_are_inert() {
    const CC: &[&str] = &["-f", "pytorch", "config_check", "-c", "a", "b", "-o", "out.json"];
    for (what, x) in [
        ("a __main__ class called", &b"c__main__\nHook\nX\x0b\x00\x00\x00touch PWNED\x85R"[..]),
        ("a __main__ class named", b"c__main__\nHook\n"),
        ("a __main__ class", b"c__main__\nRunConfig\n)\x81}(X\x04\x00\x00\x00stepK\x03ub"),
        ("an unknown enum", b"chttp\nHTTPStatus\nK\xc8\x85R"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        // Into the Namespace's state, right after its MARK.
        let pickle = [&CKPT_PICKLE[..37], b"X\x01\x00\x00\x00x", x, &CKPT_PICKLE[37..]].concat();
        checkpoints(move |d: &Path| std::fs::write(d.join(CK_FILE), ckpt_pt(&pickle)).unwrap())(dir.path());
        let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(CC).current_dir(dir.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{what}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(std::fs::read_to_string(dir.path().join("out.json")).unwrap(), CKPT_RESULT, "{what}");
        assert!(!dir.path().join("PWNED").exists(), "{what}: the pickle ran code");
    }
}

/// `a.zip` and `b.zip`, two valid config packs (`env` only), then `edit`
/// applied to the case's folder.
fn config_packs(edit: impl Fn(&Path) + 'static) -> impl Fn(&Path) {
    move |dir: &Path| {
        for name in ["a.zip", "b.zip"] {
            config_pack(&dir.join(name), &[("env", b"{\"HCCL_ALGO\": \"ring\"}".to_vec())]);
        }
        edit(dir);
    }
}

/// A zip of `entries` (deflated), written with the zip crate.
fn config_pack(path: &Path, entries: &[(&str, Vec<u8>)]) {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in entries {
        zip.start_file(*name, zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated)).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

/// `a.zip` as a zip bomb: one `env` entry of 1 MiB of zeros (about 1 KiB
/// compressed) whose headers declare `declared` bytes.
fn zip_bomb(declared: u32) -> impl Fn(&Path) {
    config_packs(move |dir: &Path| {
        let path = dir.join("a.zip");
        config_pack(&path, &[("env", vec![0; 1 << 20])]);
        let mut bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() < 8 << 10, "the bomb is small: {} bytes", bytes.len());
        let central = bytes.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
        for at in [22, central + 24] {
            bytes[at..at + 4].copy_from_slice(&declared.to_le_bytes());
        }
        std::fs::write(&path, bytes).unwrap();
    })
}

/// config_check: hostile and broken packs (`..` and absolute entry names,
/// zip bombs declared or understated, not a zip, bad layouts), bad `-d`
/// files, a bad `-o`: the documented exit code, one line naming the file
/// and the problem, no panic, nothing written (no output folder, nothing
/// outside it).
#[test]
fn every_bad_config_check_input_fails_cleanly() {
    const CC: &[&str] = &["-f", "pytorch", "config_check", "-c", "a.zip", "b.zip", "-o", "out"];
    let entry = |name: &'static str| config_packs(move |d: &Path| config_pack(&d.join("a.zip"), &[("env", b"{}".to_vec()), (name, b"x".to_vec())]));
    let cases = vec![
        case("entry climbing out with ..", entry("../evil"), CC, 4, &["a.zip: entry \"../evil\": refused: an empty, `.` or `..` path segment"]),
        case(
            "entry climbing out mid-path",
            entry("weights/../../evil"),
            CC,
            4,
            &["a.zip: entry \"weights/../../evil\": refused: an empty, `.` or `..` path segment"],
        ),
        case("absolute entry", entry("/tmp/evil"), CC, 4, &["a.zip: entry \"/tmp/evil\": refused: an absolute path"]),
        case("entry both file and folder", entry("env/x"), CC, 4, &["a.zip: entry \"env\" is both a file and a folder"]),
        case(
            "zip bomb declaring its size",
            zip_bomb(0xF000_0000),
            CC,
            4,
            &["a.zip: entry \"env\": expands to 4026531840 bytes, over the limit of 1073741824 bytes an entry"],
        ),
        case("zip bomb understating its size", zip_bomb(100), CC, 4, &["a.zip: entry \"env\": corrupt: File is larger than its declared uncompressed size"]),
        case("not a zip", config_packs(|d: &Path| write(d, "b.zip", "PK but not really")), CC, 4, &["b.zip: not a zip archive"]),
        case("pack missing", config_packs(|d: &Path| std::fs::remove_file(d.join("b.zip")).unwrap()), CC, 4, &["b.zip: cannot read"]),
        case(
            "a folder that is no checkpoint",
            config_packs(|d: &Path| std::fs::create_dir(d.join("dir")).unwrap()),
            &["-f", "pytorch", "config_check", "-c", "a.zip", "dir", "-o", "out"],
            4,
            &["dir: is a folder; expected a config pack (.zip)"],
        ),
        case(
            "env not JSON",
            config_packs(|d: &Path| config_pack(&d.join("b.zip"), &[("env", b"{\"A\": ".to_vec())])),
            CC,
            4,
            &["b.zip: entry \"env\": not valid JSON: EOF while parsing"],
        ),
        case(
            "weights outside step/rank",
            config_packs(|d: &Path| ["a.zip", "b.zip"].iter().for_each(|z| config_pack(&d.join(z), &[("weights/w.json", b"{}".to_vec())]))),
            CC,
            4,
            &["a.zip: entry \"weights/w.json\": expected weights/step<N>/rank<N>/weight.json"],
        ),
        case(
            "weight without its statistics",
            config_packs(|d: &Path| {
                ["a.zip", "b.zip"].iter().for_each(|z| config_pack(&d.join(z), &[("weights/step0/rank0/weight.json", b"{\"w\": {\"max\": 1}}".to_vec())]))
            }),
            CC,
            4,
            &["entry \"weights/step0/rank0/weight.json\": key \"w\": expected {\"max\", \"min\", \"mean\", \"norm\"} numbers"],
        ),
        case(
            "output folder is a file",
            config_packs(|d: &Path| write(d, "taken", "x")),
            &["-f", "pytorch", "config_check", "-c", "a.zip", "b.zip", "-o", "taken"],
            5,
            &["taken: cannot write"],
        ),
        case(
            "-o not ending with .zip",
            |_: &Path| {},
            &["-f", "pytorch", "config_check", "-d", "-o", "pack.tar"],
            2,
            &["config_check -o pack.tar: the pack's name must end with .zip"],
        ),
        case(
            "-d file of another kind",
            |d: &Path| write(d, "notes.txt", "--lr 1"),
            &["-f", "pytorch", "config_check", "-d", "notes.txt", "-o", "p.zip"],
            4,
            &["notes.txt: expected a .sh launch script or a .yaml/.yml config"],
        ),
        case("-d file missing", |_: &Path| {}, &["-f", "pytorch", "config_check", "-d", "train.sh", "-o", "p.zip"], 4, &["train.sh: cannot read"]),
        case(
            "-d YAML with an anchor",
            |d: &Path| write(d, "c.yaml", "base: &b 1\n"),
            &["-f", "pytorch", "config_check", "-d", "c.yaml", "-o", "p.zip"],
            4,
            &["c.yaml: line 1: anchors and aliases are not supported"],
        ),
        case(
            "-o an existing file that is no pack",
            |d: &Path| write(d, "p.zip", "not a zip"),
            &["-f", "pytorch", "config_check", "-d", "-o", "p.zip"],
            4,
            &["p.zip: -o names an existing file that is not a config pack to add to: not a zip archive"],
        ),
        case(
            "neither -d nor -c",
            |_: &Path| {},
            &["-f", "pytorch", "config_check"],
            2,
            &["config_check needs -d [FILES...] to pack this environment or -c BENCH CMP to compare two packs"],
        ),
        case("no -f", config_packs(|_: &Path| {}), &["config_check", "-c", "a.zip", "b.zip"], 2, &["config_check needs -f pytorch or -f mindspore"]),
    ];
    let failures: Vec<String> = cases.iter().filter_map(check).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
    for c in cases.iter().filter(|c| c.name != "output folder is a file") {
        let dir = tempfile::tempdir().unwrap();
        (c.setup)(dir.path());
        Command::new(env!("CARGO_BIN_EXE_msprobe")).args(&c.args).current_dir(dir.path()).output().unwrap();
        assert!(!dir.path().join("out").exists(), "{}: the output folder was created", c.name);
    }
}
