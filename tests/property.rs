//! Hostile dumps never become code.
//!
//! `hostile_dumps_render_no_foreign_code` renders Python scripts (both
//! frameworks, single and batch mode) and Rust projects (also of MSAdapter's
//! `mindtorch` dumps) from dumps that
//! proptest builds out of adversarial values: strings that end literals,
//! comments and templates in each language (quotes, backslashes, `*/`,
//! `"""`, newlines, `{{`, `{%`), unicode and nul bytes, NaN, infinities and
//! huge numbers, nested lists, unknown argument types, dtype strings, dict
//! keys and API names that are foreign callables. op_generate may refuse
//! what it is given (an error, never a panic, never a template failure);
//! whatever it writes must hold no code the templates do not write:
//! - each Python script is ASCII, compiles, and uses only the names the
//!   golden scripts use, its `tested`/`bench` callables being table entries
//!   (tests/property/scan.py, one Python process for every script);
//! - each Rust project's main.rs, lexed, has outside its literals and
//!   comments only the identifiers and punctuation of the golden project and
//!   of the constructors the literal module writes, its Cargo.toml only the
//!   template's lines, and a sample of the projects passes `cargo check`.
//!
//! The other tests pin the crafted inputs of the issue: a foreign callable
//! (`Torch.os.system.0`) is refused by op_generate and a skip row for
//! replay, and a comment-ending argument "type" stays out of Rust code.
//!
//! `PROPTEST_CASES` (cases per framework) and `PROPTEST_RNG_SEED` override
//! the defaults (a fixed seed, so CI runs the same cases every time).

mod common;

use std::cell::Cell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};

use common::repo;
use msprobe::config::{OpConfig, Propagation};
use msprobe::model::Framework;
use msprobe::op_generate::GenerateError as Error;
use msprobe::op_generate::{self, BatchOptions, Mode, Options, Outcome};
use msprobe::progress::Progress;
use msprobe::render::Lang;
use msprobe::select::ApiSelector;

/// Cases per framework, unless `PROPTEST_CASES` says otherwise.
const CASES: u32 = 64;
/// The seed, unless `PROPTEST_RNG_SEED` says otherwise.
const SEED: u64 = 0x6d73_7072_6f62_6539;
/// Rust projects that `cargo check` compiles (the largest main.rs files).
const CARGO_CHECKS: usize = 3;

// ---------------------------------------------------------------- strategies

/// Pieces that end a literal, a comment or a template tag in some language
/// the tool writes, or that would run something if they did.
const EVIL: &[&str] = &[
    "\"",
    "'",
    "\\",
    "*/",
    "/*",
    "//",
    "#",
    "\"\"\"",
    "'''",
    "\n",
    "\r",
    "\t",
    "\0",
    "\u{7f}",
    "\u{1b}[31m",
    "\u{2028}",
    "\u{feff}",
    "é",
    "😀",
    "\u{10ffff}",
    "{{",
    "}}",
    "{%",
    "%}",
    "{#",
    "#}",
    "r#\"",
    "\"#",
    "\\u{0}",
    "\\x00",
    "\\N{NULL}",
    "`",
    "$(touch PWNED)",
    "__import__('os').system('touch PWNED')",
    "\"); __import__('os').system('touch PWNED'); (\"",
    "\"\"\"\nimport os\n\"\"\"",
    "*/ std::fs::write(\"PWNED\", \"\").unwrap(); /*",
    "x */, { let _ = std::fs::write(\"PWNED\", \"\"); Spec::None } /*",
    "\"); std::process::exit(0); (\"",
    "\n# -*- coding: latin-1 -*-\n",
    "]}",
    ")",
    ";",
    ",",
    ":",
    "=",
];

/// Identifier-like pieces: foreign callables and harmless names.
const WORDS: &[&str] =
    &["os", "system", "eval", "exec", "__import__", "__class__", "getattr", "breakpoint", "subprocess", "run", "x", "_", "add", "matmul", "linalg"];

fn evil_string() -> BoxedStrategy<String> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(EVIL).prop_map(str::to_string),
            2 => prop::sample::select(WORDS).prop_map(str::to_string),
            2 => any::<char>().prop_map(String::from),
        ],
        0..6,
    )
    .prop_map(|parts| parts.concat())
    .boxed()
}

/// msprobe writes non-finite numbers as bare `NaN` / `Infinity` tokens,
/// which serde_json cannot: such a number is a marked string until
/// [`dump_text`] turns it into the token.
const NONFINITE: &str = "\u{1}nonfinite:";

fn float(x: f64) -> Value {
    match serde_json::Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => Value::String(format!("{NONFINITE}NaN")),
        None if x > 0.0 => Value::String(format!("{NONFINITE}Infinity")),
        None => Value::String(format!("{NONFINITE}-Infinity")),
    }
}

fn number() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => any::<f64>().prop_map(float),
        2 => prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 1e308, -1e308, 5e-324, 1e16]).prop_map(float),
        3 => any::<i64>().prop_map(Value::from),
        1 => Just(Value::from(u64::MAX)),
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::from),
    ]
    .boxed()
}

fn int() -> BoxedStrategy<Value> {
    prop_oneof![
        10 => (-3i64..9).prop_map(Value::from),
        3 => any::<i64>().prop_map(Value::from),
        1 => prop::sample::select(vec![i64::MIN, i64::MAX, 4294967296]).prop_map(Value::from),
        1 => Just(Value::from(u64::MAX)),
        1 => number(),
    ]
    .boxed()
}

/// dtype spellings of both frameworks, and hostile ones.
fn dtype() -> BoxedStrategy<Value> {
    let valid =
        vec!["torch.float32", "torch.float16", "torch.bfloat16", "torch.int64", "torch.bool", "torch.complex64", "Float32", "BFloat16", "Int32", "float64"];
    prop_oneof![12 => prop::sample::select(valid).prop_map(Value::from), 1 => evil_string().prop_map(Value::from)].boxed()
}

fn shape() -> BoxedStrategy<Value> {
    prop_oneof![
        16 => prop::collection::vec(0i64..5, 0..4).prop_map(Value::from),
        1 => prop::collection::vec(prop::sample::select(vec![-1i64, 4294967296, i64::MAX, 0]), 1..3).prop_map(Value::from),
        1 => int(),
    ]
    .boxed()
}

fn tensor() -> BoxedStrategy<Value> {
    let ty = prop_oneof![8 => prop::sample::select(vec!["torch.Tensor", "mindspore.Tensor", "torch.nn.parameter.Parameter"]).prop_map(Value::from), 1 => evil_string().prop_map(Value::from)];
    let requires_grad = prop_oneof![4 => Just(Value::Null), 4 => any::<bool>().prop_map(Value::from), 1 => evil_string().prop_map(Value::from)];
    let data_name =
        prop_oneof![2 => Just(None), 1 => Just(Some(Value::from("Torch.add.0.forward.input.0.pt"))), 1 => evil_string().prop_map(|s| Some(Value::from(s)))];
    (ty, dtype(), shape(), number(), number(), number(), requires_grad, data_name)
        .prop_map(|(ty, dtype, shape, max, min, mean, requires_grad, data_name)| {
            let mut t = json!({"type": ty, "dtype": dtype, "shape": shape, "Max": max, "Min": min, "Mean": mean, "Norm": 1.0, "requires_grad": requires_grad});
            if let Some(n) = data_name {
                t["data_name"] = n;
            }
            t
        })
        .boxed()
}

/// One argument descriptor: every type msprobe writes, unknown types,
/// `{}`, null, and (recursively) lists of them.
fn arg() -> BoxedStrategy<Value> {
    let typed = |ty: &'static str, value: BoxedStrategy<Value>| value.prop_map(move |v| json!({"type": ty, "value": v})).boxed();
    let leaf = prop_oneof![
        5 => tensor(),
        1 => typed("int", int()),
        1 => typed("float", number()),
        1 => typed("bool", any::<bool>().prop_map(Value::from).boxed()),
        2 => typed("str", evil_string().prop_map(Value::from).boxed()),
        1 => typed("slice", prop::collection::vec(prop_oneof![Just(Value::Null), int()], 3).prop_map(Value::from).boxed()),
        1 => Just(json!({"type": "ellipsis", "value": "..."})),
        1 => typed("torch.Size", shape()),
        1 => typed("torch.dtype", dtype()),
        1 => typed("torch.device", prop_oneof![2 => Just(Value::from("cuda:0")), 2 => Just(Value::from(1)), 1 => evil_string().prop_map(Value::from)].boxed()),
        1 => prop_oneof![3 => Just("channels_last".to_string()), 1 => evil_string()].prop_map(|f| json!({"type": "torch.memory_format", "format": f})),
        2 => (evil_string(), evil_string()).prop_map(|(ty, v)| json!({"type": ty, "value": v})),
        1 => Just(json!({})),
        1 => Just(Value::Null),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| prop::collection::vec(inner, 0..4).prop_map(Value::from)).boxed()
}

fn kwargs() -> BoxedStrategy<Value> {
    prop::collection::vec((prop_oneof![Just("dim".to_string()), evil_string()], arg()), 0..3)
        .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<String, Value>>()))
        .boxed()
}

/// `Prefix.op.N`: a name `framework` exposes, or a foreign one.
fn api_name(framework: Framework) -> BoxedStrategy<String> {
    let exposed: Vec<&str> = match framework {
        Framework::PyTorch | Framework::MindTorch => vec![
            "Torch.matmul",
            "Functional.softmax",
            "Tensor.__setitem__",
            "Torch.vector_norm",
            "Torch.linalg.vector_norm",
            "Functional.rms_norm",
            "Tensor.half",
            "Torch.add",
        ],
        Framework::MindSpore => vec![
            "Mint.split",
            "Functional.gather",
            "Tensor.transpose",
            "MintFunctional.linear",
            "Tensor.to",
            "Functional.log_softmax",
            "MintFunctional.rms_norm",
        ],
    };
    let prefix = prop::sample::select(vec!["Torch", "Functional", "Tensor", "Mint", "MintFunctional", "Module", "MS", "Distributed"]);
    let op = prop_oneof![
        3 => prop::sample::select(vec!["os.system", "system", "eval", "exec", "__import__", "__class__", "linalg.system", "subprocess.run", "getattr", "linalg.vector_norm", "matmul"]).prop_map(str::to_string),
        1 => evil_string(),
    ];
    let counter = prop_oneof![4 => (0u32..99).prop_map(|n| n.to_string()), 1 => Just("99999999999999999999999".to_string()), 1 => evil_string()];
    prop_oneof![
        5 => (prop::sample::select(exposed), counter.clone()).prop_map(|(n, c)| format!("{n}.{c}")),
        3 => (prefix, op, counter).prop_map(|(p, o, c)| format!("{p}.{o}.{c}")),
        1 => evil_string(),
    ]
    .boxed()
}

/// One API: its name, forward entry and maybe a backward entry (or a
/// malformed value in their place).
fn api(framework: Framework) -> BoxedStrategy<(String, Value, Option<Value>)> {
    let forward = prop_oneof![
        19 => (prop::collection::vec(arg(), 0..4), kwargs(), prop::collection::vec(arg(), 0..2))
            .prop_map(|(args, kwargs, out)| json!({"input_args": args, "input_kwargs": kwargs, "output": out})),
        1 => prop_oneof![evil_string().prop_map(Value::from), number(), (evil_string(), arg()).prop_map(|(k, v)| json!({k: v}))],
    ];
    let backward =
        (prop::collection::vec(arg(), 0..2), prop::collection::vec(arg(), 0..3)).prop_map(|(input, output)| json!({"input": input, "output": output}));
    (api_name(framework), forward, prop::option::weighted(0.3, backward)).boxed()
}

/// A whole dump of `framework`, as text (non-finite numbers as msprobe's tokens).
fn dump(framework: Framework) -> BoxedStrategy<(String, String)> {
    let header = prop_oneof![3 => Just(Value::from("statistics")), 1 => evil_string().prop_map(Value::from)];
    (header, evil_string(), prop::collection::vec(api(framework), 1..4))
        .prop_map(move |(task, data_dir, apis)| {
            let first = apis[0].0.clone();
            let mut data = Map::new();
            for (name, forward, backward) in apis {
                data.insert(format!("{name}.forward"), forward);
                if let Some(b) = backward {
                    data.insert(format!("{name}.backward"), b);
                }
            }
            let dump = json!({"task": task, "level": "L1", "framework": framework.as_str(), "dump_data_dir": data_dir, "data": data});
            (dump_text(&dump), first)
        })
        .boxed()
}

fn dump_text(v: &Value) -> String {
    let mut text = serde_json::to_string_pretty(v).unwrap();
    for token in ["NaN", "Infinity", "-Infinity"] {
        text = text.replace(&format!("\"\\u0001nonfinite:{token}\""), token);
    }
    text
}

// ------------------------------------------------------------- Rust checks

/// The tokens of Rust source outside comments and string literals:
/// identifiers, numbers (as `0`) and single punctuation characters. A
/// comment or string that does not end is an error.
fn rust_tokens(src: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut tokens = vec![];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            loop {
                match (chars.get(i), chars.get(i + 1)) {
                    (Some('/'), Some('*')) => (depth, i) = (depth + 1, i + 2),
                    (Some('*'), Some('/')) => (depth, i) = (depth - 1, i + 2),
                    (Some(_), _) => i += 1,
                    (None, _) => return Err("a block comment does not end".into()),
                }
                if depth == 0 {
                    break;
                }
            }
        } else if c == '"' {
            i += 1;
            loop {
                match chars.get(i) {
                    Some('\\') => i += 2,
                    Some('"') => break,
                    Some(_) => i += 1,
                    None => return Err("a string literal does not end".into()),
                }
            }
            i += 1;
            tokens.push("\"\"".into());
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '_'
                    || chars[i] == '.'
                    || (matches!(chars[i], '+' | '-') && matches!(chars[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let number: String = chars[start..i].iter().collect();
            number.parse::<f64>().map_err(|_| format!("{number:?} is not a number"))?;
            tokens.push("0".into());
        } else {
            tokens.push(c.to_string());
            i += 1;
        }
    }
    Ok(tokens)
}

/// What may stand outside literals in a generated main.rs: the golden
/// project's tokens, plus what the template and src/render/literal.rs write
/// for values the golden project lacks.
fn rust_allowed() -> &'static BTreeSet<String> {
    static ALLOWED: OnceLock<BTreeSet<String>> = OnceLock::new();
    ALLOWED.get_or_init(|| {
        let golden = std::fs::read_to_string(repo().join("golden/rust/Functional.softmax.0.backward/src/main.rs")).unwrap();
        let mut allowed: BTreeSet<String> = rust_tokens(&golden).unwrap().into_iter().collect();
        let extra = [
            // Spec constructors and f64 constants (literal.rs).
            "Spec",
            "Int",
            "Float",
            "Bool",
            "Str",
            "DType",
            "Slice",
            "Ellipsis",
            "None",
            "List",
            "Some",
            "vec",
            "into",
            "true",
            "false",
            "f64",
            "NAN",
            "INFINITY",
            "NEG_INFINITY",
            "data",
            "tensor",
            "TDType",
            "Bool",
            "U8",
            "I8",
            "I16",
            "I32",
            "I64",
            "U16",
            "U32",
            "U64",
            "F16",
            "BF16",
            "F32",
            "F64",
            "C64",
            "C128",
            // The template's variant choices.
            "Random",
            "Real",
            "Msprobe",
            "Api",
            "PyTorch",
            "MindSpore",
            "MindTorch",
            "Some",
        ];
        allowed.extend(extra.iter().map(|s| s.to_string()));
        allowed
    })
}

/// A generated main.rs has only template tokens outside its literals and comments.
fn check_main_rs(src: &str) -> Result<(), String> {
    let foreign: BTreeSet<String> = rust_tokens(src)?.into_iter().filter(|t| !rust_allowed().contains(t)).collect();
    if foreign.is_empty() {
        Ok(())
    } else {
        Err(format!("tokens the template does not write: {foreign:?}"))
    }
}

/// A generated Cargo.toml has the template's lines: the golden project's,
/// but for the package name, the runtime's path (a TOML string) and comments.
fn check_cargo_toml(text: &str) -> Result<(), String> {
    let golden = std::fs::read_to_string(repo().join("golden/rust/Functional.softmax.0.backward/Cargo.toml")).unwrap();
    let (want, got): (Vec<&str>, Vec<&str>) = (golden.lines().collect(), text.lines().collect());
    if want.len() != got.len() {
        return Err(format!("{} lines, the template writes {}", got.len(), want.len()));
    }
    let toml_string = |s: &str| !s.contains('"') && !s.chars().any(char::is_control);
    for (w, g) in want.iter().zip(&got) {
        let ok = if w.starts_with('#') {
            g.starts_with('#')
        } else if w.starts_with("name = ") {
            g.strip_prefix("name = \"")
                .and_then(|r| r.strip_suffix('"'))
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        } else if w.starts_with("runtime = ") {
            g.strip_prefix("runtime = { path = \"")
                .and_then(|r| r.strip_suffix("\" }"))
                .is_some_and(|p| toml_string(&p.replace("\\\\", "").replace("\\\"", "")))
        } else {
            w == g
        };
        if !ok {
            return Err(format!("line {g:?} is not the template's {w:?}"));
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ running

fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = vec![];
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            found.push(path);
        }
    }
    found.sort();
    found
}

fn config(dump: &Path, api_name: Option<&str>) -> Option<OpConfig> {
    let mut cfg = json!({"dump_json_path": dump, "propagation": "forward", "data_mode": "random_data"});
    if let Some(name) = api_name {
        cfg["api_name"] = Value::from(name);
    }
    OpConfig::from_object(cfg.as_object().unwrap(), Path::new("config_op.json"), dump.parent().unwrap()).ok().map(|(c, _)| c)
}

/// An error op_generate may give for a hostile dump: anything but a
/// template failure (a bug).
fn acceptable(e: &Error) -> Result<(), TestCaseError> {
    if matches!(e, Error::Render(_)) {
        return Err(TestCaseError::fail(format!("a template failed: {e}")));
    }
    // Error messages quote dump text: they must stay one printable line.
    let text = e.to_string();
    if text.chars().any(|c| c.is_control()) {
        return Err(TestCaseError::fail(format!("the message is not one printable line: {text:?}")));
    }
    Ok(())
}

/// Renders one dump every way into `dir`, and checks the Rust output.
/// Returns whether anything was written.
fn render_case(dir: &Path, framework: Framework, dump: &str, first: &str) -> Result<bool, TestCaseError> {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("dump.json");
    std::fs::write(&path, dump).unwrap();
    for (lang, out) in [(Lang::Python, "py"), (Lang::Rust, "rs")] {
        let batch = BatchOptions { selector: ApiSelector::default(), propagation: Propagation::Both, progress: Progress::Quiet };
        let opts = Options {
            framework: framework.flag(),
            config: config(&path, None).unwrap(),
            out_dir: dir.join(out),
            lang,
            check: false,
            shared_module: false,
            runtime: Some(repo().join("runtime")),
            mode: Mode::Batch(batch),
        };
        match op_generate::run(&opts) {
            Ok(Outcome::Batch(report)) => report.failed.iter().try_for_each(|(_, e)| acceptable(e))?,
            Ok(other) => return Err(TestCaseError::fail(format!("batch mode gave {other:?}"))),
            Err(e) => acceptable(&e)?,
        }
    }
    // msprobe's one-API mode, on the first API (when its name is one a config can hold).
    if let Some(config) = config(&path, Some(first)).filter(|c| c.api_name.is_some()) {
        if let Err(e) = op_generate::run(&common::single(framework.flag(), config, &dir.join("single"), Lang::Python)) {
            acceptable(&e)?;
        }
    }
    for main in files_under(&dir.join("rs"), "main.rs") {
        check_main_rs(&std::fs::read_to_string(&main).unwrap()).map_err(|e| TestCaseError::fail(format!("{}: {e}", main.display())))?;
    }
    for toml in files_under(&dir.join("rs"), "Cargo.toml") {
        check_cargo_toml(&std::fs::read_to_string(&toml).unwrap()).map_err(|e| TestCaseError::fail(format!("{}: {e}", toml.display())))?;
    }
    Ok(!files_under(dir, ".py").is_empty() || !files_under(dir, "main.rs").is_empty())
}

fn python() -> PathBuf {
    std::env::var_os("MSPROBE_PYTHON").map(PathBuf::from).unwrap_or_else(|| "python3".into())
}

/// Every op name a table holds (the last part of dotted ones), for scan.py.
fn table_names(out: &Path) -> PathBuf {
    let mut names = BTreeSet::new();
    for list in runtime::ops::hooks::LISTS.iter().chain([&runtime::ops::hooks::TORCH_LINALG_ONLY]) {
        names.extend(list.names().map(|l| l.rsplit('.').next().unwrap().to_string()));
    }
    names.extend(runtime::ops::table().flat_map(|op| op.names.iter().map(|n| n.rsplit('.').next().unwrap().to_string())));
    let path = out.join("table_names.txt");
    std::fs::write(&path, names.into_iter().collect::<Vec<_>>().join("\n")).unwrap();
    path
}

/// Runs scan.py on every script under `dir`: (exit status, its report).
fn scan(dir: &Path, names: &Path) -> (Option<i32>, String) {
    let known = std::env::join_paths([repo().join("golden/python"), repo().join("python/msprobe_rs/repro")]).unwrap();
    let o = Command::new(python()).arg(repo().join("tests/property/scan.py")).arg(known).arg(names).arg(dir).output().unwrap();
    (o.status.code(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

/// `<target>` of the running test binary (`<target>/debug/deps/property-…`).
fn target_dir() -> PathBuf {
    std::env::current_exe().unwrap().ancestors().nth(3).unwrap().to_path_buf()
}

/// `cargo check` of a generated project, built like tests/rust_project.rs's
/// (the workspace's Cargo.lock, offline, in `<target>/generated-projects`).
fn cargo_check(project: &Path) -> Output {
    std::fs::copy(repo().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet"])
        .env("CARGO_TARGET_DIR", target_dir().join("generated-projects"))
        .current_dir(project)
        .output()
        .unwrap()
}

fn runner() -> TestRunner {
    let defaults = Config::default();
    let cases = if std::env::var_os("PROPTEST_CASES").is_some() { defaults.cases } else { CASES };
    let rng_seed = match defaults.rng_seed {
        RngSeed::Random => RngSeed::Fixed(SEED),
        fixed => fixed,
    };
    TestRunner::new(Config { cases, rng_seed, failure_persistence: None, ..defaults })
}

#[test]
fn hostile_dumps_render_no_foreign_code() {
    let root = tempfile::tempdir().unwrap();
    let (n, written, refused) = (Cell::new(0usize), Cell::new(0usize), Cell::new(0usize));
    // MSAdapter's dumps (`mindtorch`) are read with -f mindspore.
    for framework in Framework::ALL {
        let result = runner().run(&dump(framework), |(dump, first)| {
            let dir = root.path().join(format!("case{}", n.get()));
            n.set(n.get() + 1);
            if render_case(&dir, framework, &dump, &first)? {
                written.set(written.get() + 1);
            } else {
                refused.set(refused.get() + 1);
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{} dump: {e}", framework.as_str());
        }
    }
    // The strategies must reach both sides, or the test checks nothing.
    let (written, refused) = (written.get(), refused.get());
    assert!(written * 4 >= n.get() && refused > 0, "{written} of {} cases wrote files, {refused} none", n.get());

    let (code, report) = scan(root.path(), &table_names(root.path()));
    if code != Some(0) {
        let first = report.lines().next().unwrap_or_default();
        let case = first.split(['/', '\\']).find(|p| p.starts_with("case")).map(|c| root.path().join(c).join("dump.json"));
        let dump = case.and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
        panic!("scan.py: {report}\nthe first problem's dump:\n{dump}");
    }
    eprintln!("{n} cases, {written} wrote files: {}", report.trim(), n = n.get());

    let mut mains = files_under(root.path(), "main.rs");
    mains.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).unwrap().len()));
    assert!(mains.len() >= CARGO_CHECKS, "only {} Rust projects", mains.len());
    for main in mains.iter().take(CARGO_CHECKS) {
        let project = main.parent().unwrap().parent().unwrap();
        let o = cargo_check(project);
        assert!(o.status.success(), "cargo check {}: {}\n{}", project.display(), String::from_utf8_lossy(&o.stderr), std::fs::read_to_string(main).unwrap());
    }
}

// ------------------------------------------------------- the crafted inputs

/// The binary, with the workspace's runtime for Rust projects (`cargo_check` reuses its build).
fn msprobe(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).env("MSPROBE_RUNTIME_PATH", repo().join("runtime")).current_dir(dir).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn names_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default()
}

const MATMUL: &str = r#"{"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 2], "Max": 1.0, "Min": 0.0}, {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 2], "Max": 1.0, "Min": 0.0}], "input_kwargs": {}, "output": []}"#;

/// The issue's dump: `Torch.os.system.0` with the command as its argument,
/// beside an API torch does expose.
fn foreign_callable_dump(dir: &Path) {
    let system = r#"{"input_args": [{"type": "str", "value": "touch PWNED"}], "input_kwargs": {}, "output": []}"#;
    let dump = format!(r#"{{"framework": "pytorch", "data": {{"Torch.os.system.0.forward": {system}, "Torch.matmul.0.forward": {MATMUL}}}}}"#);
    std::fs::write(dir.join("dump.json"), dump).unwrap();
    std::fs::write(dir.join("one.json"), r#"{"dump_json_path": "dump.json", "api_name": "Torch.os.system.0"}"#).unwrap();
    std::fs::write(dir.join("all.json"), r#"{"dump_json_path": "dump.json"}"#).unwrap();
}

const REFUSED: &str =
    r#"dump.json: key "Torch.os.system.0.forward": expected an API that torch exposes under Torch (msprobe's list or the runtime's op table)"#;

#[test]
fn a_foreign_callable_is_refused_alone_and_in_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    foreign_callable_dump(dir.path());
    for lang in ["python", "rust"] {
        let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "one.json", "-o", lang, "--lang", lang]);
        assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
        assert_eq!(stderr(&o), format!("msprobe: error: {REFUSED}\n"));
        assert!(names_in(&dir.path().join(lang)).is_empty(), "{lang}: nothing written");
    }
    // In a batch it is one failure; the other API is still written.
    let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "all.json", "-o", "batch", "--all"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("msprobe: error: Torch.os.system.0.forward: {REFUSED}\n")), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 APIs, 1 scripts"), "{}", stderr(&o));
    assert_eq!(names_in(&dir.path().join("batch")), BTreeSet::from(["Torch.matmul.0.forward.py".to_string(), "manifest.json".to_string()]));
    // MindSpore names its own module.
    let ms = format!(r#"{{"framework": "mindspore", "data": {{"Mint.os.system.0.forward": {MATMUL}}}}}"#);
    std::fs::write(dir.path().join("ms.json"), ms).unwrap();
    std::fs::write(dir.path().join("ms_cfg.json"), r#"{"dump_json_path": "ms.json", "api_name": "Mint.os.system.0"}"#).unwrap();
    let o = msprobe(dir.path(), &["-f", "mindspore", "op_generate", "-i", "ms_cfg.json", "-o", "ms"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "msprobe: error: ms.json: key \"Mint.os.system.0.forward\": expected an API that mindspore exposes under Mint (msprobe's list or the runtime's op table)\n"
    );
}

#[test]
fn replay_runs_no_foreign_callable() {
    let dir = tempfile::tempdir().unwrap();
    foreign_callable_dump(dir.path());
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", "dump.json", "--output-dir", "r"]);
    // A skip row (exit 8): the runtime's op table has no such op.
    assert_eq!(o.status.code(), Some(8), "{}", stderr(&o));
    let details = names_in(&dir.path().join("r")).into_iter().find(|n| n.starts_with("accuracy_checking_details_")).unwrap();
    let text = std::fs::read_to_string(dir.path().join("r").join(details)).unwrap();
    assert!(text.contains("Torch.os.system.0.forward,,,,,,,skip,cannot replay here: Torch.os.system is not in the runtime's op table"), "{text}");
    assert!(!dir.path().join("PWNED").exists());
}

/// The issue's Rust payload: an argument "type" that ends a comment.
const COMMENT_PAYLOAD: &str = "x */, { let _ = std::fs::write(\"PWNED\", \"\"); Spec::None } /*";

#[test]
fn a_comment_ending_type_string_is_no_rust_code() {
    let dir = tempfile::tempdir().unwrap();
    let arg = json!({"type": COMMENT_PAYLOAD, "value": COMMENT_PAYLOAD});
    let tensor = json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": 1.0, "Min": 0.0});
    let dump = json!({"framework": "pytorch", "data": {"Functional.softmax.0.forward": {"input_args": [tensor, arg], "input_kwargs": {COMMENT_PAYLOAD: arg}, "output": []}}});
    std::fs::write(dir.path().join("dump.json"), dump.to_string()).unwrap();
    std::fs::write(dir.path().join("cfg.json"), r#"{"dump_json_path": "dump.json", "api_name": "Functional.softmax.0"}"#).unwrap();
    for lang in ["rust", "python"] {
        let o = msprobe(dir.path(), &["-f", "pytorch", "op_generate", "-i", "cfg.json", "-o", lang, "--lang", lang]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let project = dir.path().join("rust/Functional.softmax.0.forward");
    let main = std::fs::read_to_string(project.join("src/main.rs")).unwrap();
    check_main_rs(&main).unwrap();
    // The payload reaches the project only as the kwarg's name, a string literal.
    assert_eq!(main.matches("PWNED").count(), 1, "{main}");
    assert!(main.contains(r#"("x */, { let _ = std::fs::write(\"PWNED\", \"\"); Spec::None } /*".into(), Spec::None),"#), "{main}");
    let o = cargo_check(&project);
    assert!(o.status.success(), "{}\n{main}", String::from_utf8_lossy(&o.stderr));
    // The script holds it as string literals only.
    let script = std::fs::read_to_string(dir.path().join("python/Functional.softmax.0.forward.py")).unwrap();
    let lit = r#""x */, { let _ = std::fs::write(\"PWNED\", \"\"); Spec::None } /*""#;
    assert!(script.contains(&format!("        Unsupported({lit}),\n")) && script.contains(&format!("        {lit}: Unsupported({lit}),\n")), "{script}");
    assert_eq!(script.matches("PWNED").count(), 3);
}

/// The checkers find what they look for.
#[test]
fn the_checks_catch_planted_code() {
    assert!(check_main_rs("fn main() { let data = \"*/ std::fs::write\"; }").is_ok());
    for planted in ["fn main() { std::fs::write(\"PWNED\", \"\"); }", "/* x */ */ fn f() {}", "let s = \"unterminated;", "/* not closed", "let c = 'x';"] {
        assert!(check_main_rs(planted).is_err(), "{planted}");
    }
    let golden = std::fs::read_to_string(repo().join("golden/rust/Functional.softmax.0.backward/Cargo.toml")).unwrap();
    assert!(check_cargo_toml(&golden).is_ok());
    assert!(check_cargo_toml(&golden.replace("publish = false", "build = \"build.rs\"")).is_err());

    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(repo().join("golden/python/pytorch/Torch.matmul.0.forward.py")).unwrap();
    let plants = [
        ("call.py", good.replace("return torch.matmul(*args, **kwargs)", "return torch.os.system(*args, **kwargs)")),
        ("name.py", good.replace("    args = [\n", "    args = [__import__(\"os\"),\n")),
        ("syntax.py", good.replace("    args = [\n", "    args = [\"\"\"\n")),
        ("ascii.py", good.replace("# Settings from config_op.json.", "# é")),
    ];
    for (name, text) in &plants {
        assert_ne!(text, &good, "{name}: the plant must change the script");
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    std::fs::write(dir.path().join("good.py"), &good).unwrap();
    let (code, report) = scan(dir.path(), &table_names(dir.path()));
    assert_eq!(code, Some(1), "{report}");
    for (name, _) in &plants {
        assert!(report.lines().any(|l| l.contains(name)), "{name} not caught: {report}");
    }
    assert!(!report.contains("good.py"), "{report}");
}

/// Identifier tokens of a template's code: Tera comments, the language's
/// comments and string literals (docstrings included) are left out.
fn code_tokens(text: &str, python_like: bool) -> BTreeSet<String> {
    let b = text.as_bytes();
    let at = |i: usize, s: &str| b[i..].starts_with(s.as_bytes());
    let past = |i: usize, open: &str, close: &str| text[i + open.len()..].find(close).map_or(b.len(), |n| i + open.len() + n + close.len());
    let (mut code, mut i) = (Vec::new(), 0);
    while i < b.len() {
        i = if at(i, "{#") {
            past(i, "{#", "#}")
        } else if python_like && at(i, "\"\"\"") {
            past(i, "\"\"\"", "\"\"\"")
        } else if b[i] == b'"' || (python_like && b[i] == b'\'') {
            let mut j = i + 1;
            while j < b.len() && b[j] != b[i] && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if (python_like && b[i] == b'#') || (!python_like && at(i, "//")) {
            text[i..].find('\n').map_or(b.len(), |n| i + n)
        } else {
            code.push(if b[i].is_ascii() { b[i] } else { b' ' });
            i + 1
        };
    }
    String::from_utf8(code)
        .unwrap()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .map(str::to_string)
        .collect()
}

/// No template holds an API name: the op a script calls, and every fact
/// about it, come from the tables (src/render/api_map.rs, the runtime's op
/// table and hook lists, the package's generated tables) as data. An API
/// name is the op part of an op-table name or a hook-list name, as an
/// identifier token of the template's code.
#[test]
fn templates_hold_no_api_name() {
    // Words the templates cannot do without that happen to be API names:
    // Python's builtins int() and slice(), the numpy module, Rust's std.
    const UNAVOIDABLE: &[&str] = &["int", "slice", "numpy", "std"];
    let mut names = BTreeSet::new();
    for list in runtime::ops::hooks::LISTS.iter().chain([&runtime::ops::hooks::TORCH_LINALG_ONLY]) {
        names.extend(list.names().map(|l| l.rsplit('.').next().unwrap().to_string()));
    }
    names.extend(runtime::ops::table().flat_map(|op| op.names.iter().map(|n| n.rsplit('.').next().unwrap().to_string())));
    assert!(names.contains("matmul") && names.contains("dropout"));
    let mut found = vec![];
    for path in files_under(&repo().join("templates"), ".tera") {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.to_string_lossy();
        let python_like = !(name.ends_with(".rs.tera") || name.ends_with("rust/macros.tera"));
        for token in code_tokens(&text, python_like) {
            if names.contains(&token) && !UNAVOIDABLE.contains(&token.as_str()) {
                found.push(format!("{}: {token}", path.strip_prefix(repo()).unwrap().display()));
            }
        }
    }
    assert!(found.is_empty(), "API names in templates (take them from the tables): {found:?}");
    // The check finds one where it is planted.
    assert!(code_tokens("x = torch.matmul(a) # dropout\n\"\"\"softmax\"\"\" {# gelu #}", true).contains("matmul"));
    assert!(!code_tokens("# dropout\n\"softmax\" {# gelu #} 'relu'", true).iter().any(|t| names.contains(t)));
}
