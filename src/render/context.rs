//! The render context: an [`ApiCall`] and its settings as the templates see
//! them. Every dump value arrives here already as a literal of the target
//! language (see [`super::literal`]); the templates only arrange literals.

use serde::Serialize;

use super::api_map::{self, Callable};
use super::literal::{py_str, toml_str, Literals, Python, Rust};
use crate::config::{OpConfig, Propagation};
use crate::model::{ApiCall, Arg, DType, Framework, Stat};

/// One argument value for the templates, tagged by `kind`.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArgCtx {
    /// A dumped tensor (`TensorSpec(...)` in the script).
    Tensor {
        /// dtype string literal in the dump's spelling.
        dtype: String,
        /// Shape as a Python list literal.
        shape: String,
        /// Dumped Min (literal or `None`).
        low: String,
        /// Dumped Max (literal or `None`).
        high: String,
        /// `True`/`False`/`None`.
        requires_grad: String,
        /// File name literal or `None`.
        data_name: String,
    },
    /// A plain literal (number, bool, str, None).
    Literal {
        /// The literal.
        lit: String,
        /// `int`, `float`, `bool`, `str` or `none` (typed languages need it).
        ty: &'static str,
    },
    /// `slice(start, stop, step)`.
    Slice {
        /// Start literal.
        start: String,
        /// Stop literal.
        stop: String,
        /// Step literal.
        step: String,
    },
    /// `...`.
    Ellipsis,
    /// `DType(...)`: a dtype argument.
    Dtype {
        /// dtype string literal.
        lit: String,
    },
    /// `Device(...)`: replaced by the run's device (tested) or CPU (bench).
    Device {
        /// device string literal.
        lit: String,
    },
    /// `Size([...])`.
    Size {
        /// Dimensions list literal.
        lit: String,
    },
    /// `MemoryFormat(...)`.
    MemoryFormat {
        /// Format name literal.
        lit: String,
    },
    /// `Unsupported(...)`: replayed as None.
    Unsupported {
        /// Type name literal.
        lit: String,
    },
    /// A list of values.
    List {
        /// The items.
        items: Vec<ArgCtx>,
    },
}

/// A keyword argument.
#[derive(Debug, Serialize)]
pub struct KwargCtx {
    /// The keyword as a string literal.
    pub key: String,
    /// Its value.
    pub value: ArgCtx,
}

/// Everything a script template needs.
#[derive(Debug, Serialize)]
pub struct ScriptContext {
    /// `msprobe-rs <version>`.
    pub generator: String,
    /// `pytorch` / `mindspore`.
    pub framework: &'static str,
    /// `Prefix.op.N` (validated: identifiers and digits only).
    pub api_name: String,
    /// `Prefix.op.N.forward|backward`, the script's file stem.
    pub api_full_name: String,
    /// `forward` / `backward`.
    pub propagation: &'static str,
    /// The callable under test.
    pub tested: Callable,
    /// The bench callable.
    pub bench: Callable,
    /// Positional arguments.
    pub args: Vec<ArgCtx>,
    /// Keyword arguments.
    pub kwargs: Vec<KwargCtx>,
    /// Gradients w.r.t. the outputs (backward only).
    pub grad_outputs: Vec<ArgCtx>,
    /// `"random_data"` / `"real_data"` literal.
    pub data_mode: String,
    /// Seed.
    pub random_seed: u64,
    /// Iterations.
    pub iter_times: u32,
    /// Cosine threshold literal.
    pub cosine_threshold: String,
    /// Max-abs-error threshold literal.
    pub max_abs_err_threshold: String,
    /// Folder of the tensor files as a string literal, or `None`.
    pub data_dir: String,
    /// Whether `data_dir` is relative to the script's own folder.
    pub data_dir_relative: bool,
    /// The dump this came from, as a string literal (for the header comment and messages).
    pub source: String,
    /// Rust only: recorded forward outputs (the tested side of real-data replays).
    pub outputs: Vec<ArgCtx>,
    /// Rust only: recorded gradients w.r.t. the inputs.
    pub grad_inputs: Vec<ArgCtx>,
    /// Rust only: the cargo package name.
    pub package: String,
    /// Rust only: the runtime crate's folder, as a TOML string.
    pub runtime_path: String,
}

fn stat(s: Stat, l: &dyn Literals) -> String {
    match s {
        Stat::Num(x) => l.opt(Some(l.float(x))),
        Stat::Bool(b) => l.opt(Some(l.float(b as u8 as f64))),
        Stat::Missing => l.opt(None),
    }
}

/// A dtype in the target language: Python gets the dump's spelling as a
/// string, Rust the runtime's `TDType` variant.
fn dtype_lit(d: &DType, fw: Framework, lang: Lang) -> String {
    match (lang, fw) {
        (Lang::Python, Framework::PyTorch) => py_str(&format!("torch.{}", d.torch)),
        (Lang::Python, Framework::MindSpore) => py_str(d.mindspore),
        (Lang::Rust, _) => format!("TDType::{}", rust_dtype(d)),
    }
}

fn rust_dtype(d: &DType) -> &'static str {
    match d.torch {
        "bool" => "Bool",
        "uint8" => "U8",
        "int8" => "I8",
        "int16" => "I16",
        "int32" => "I32",
        "int64" => "I64",
        "uint16" => "U16",
        "uint32" => "U32",
        "uint64" => "U64",
        "float16" => "F16",
        "bfloat16" => "BF16",
        "float32" => "F32",
        _ => "F64",
    }
}

fn int_list(v: impl IntoIterator<Item = String>) -> String {
    format!("[{}]", v.into_iter().collect::<Vec<_>>().join(", "))
}

fn arg(a: &Arg, fw: Framework, lang: Lang) -> ArgCtx {
    let l = lang.literals();
    let lit = |lit: String, ty: &'static str| ArgCtx::Literal { lit, ty };
    match a {
        Arg::Tensor(t) => ArgCtx::Tensor {
            dtype: dtype_lit(&t.dtype, fw, lang),
            shape: int_list(t.shape.iter().map(u64::to_string)),
            low: stat(t.min, l),
            high: stat(t.max, l),
            requires_grad: l.opt(t.requires_grad.map(|b| l.bool(b))),
            data_name: l.opt(t.data_name.as_deref().map(|n| l.str(n))),
        },
        Arg::Bool(b) => lit(l.bool(*b), "bool"),
        Arg::Int(i) => lit(i.to_string(), "int"),
        Arg::Float(x) => lit(l.float(*x), "float"),
        Arg::Str(s) => lit(l.str(s), "str"),
        Arg::None => lit(l.opt(None), "none"),
        Arg::Slice([a, b, c]) => {
            let o = |x: &Option<i64>| l.opt(x.map(|v| v.to_string()));
            ArgCtx::Slice { start: o(a), stop: o(b), step: o(c) }
        }
        Arg::Ellipsis => ArgCtx::Ellipsis,
        Arg::Size(d) => ArgCtx::Size { lit: int_list(d.iter().map(i64::to_string)) },
        Arg::DType(d) => ArgCtx::Dtype { lit: dtype_lit(d, fw, lang) },
        Arg::Device(d) => ArgCtx::Device { lit: l.str(d) },
        Arg::MemoryFormat(m) => ArgCtx::MemoryFormat { lit: l.str(m) },
        Arg::Unsupported(t) => ArgCtx::Unsupported { lit: l.str(t) },
        Arg::List(items) => ArgCtx::List { items: items.iter().map(|x| arg(x, fw, lang)).collect() },
    }
}

/// The language a context is rendered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// A standalone Python script.
    Python,
    /// A cargo project on the runtime crate.
    Rust,
}

impl Lang {
    fn literals(self) -> &'static dyn Literals {
        match self {
            Lang::Python => &Python,
            Lang::Rust => &Rust,
        }
    }
}

impl ScriptContext {
    /// Builds the context for `call` as configured, in `lang`'s literals;
    /// `data_dir` is the tensor folder (and whether it is relative to the
    /// script's folder), `source` the dump path shown to the reader.
    pub fn new(call: &ApiCall, framework: Framework, cfg: &OpConfig, data_dir: Option<(&str, bool)>, source: &str, lang: Lang) -> ScriptContext {
        let l = lang.literals();
        let backward = cfg.propagation == Propagation::Backward;
        let api_full_name = call.name.key(cfg.propagation.direction());
        let args = |list: &[Arg]| list.iter().map(|a| arg(a, framework, lang)).collect::<Vec<_>>();
        let package: String = format!("repro-{api_full_name}").to_ascii_lowercase().split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-");
        ScriptContext {
            generator: format!("msprobe-rs {}", env!("CARGO_PKG_VERSION")),
            framework: framework.as_str(),
            api_name: call.name.to_string(),
            api_full_name,
            propagation: cfg.propagation.direction().as_str(),
            tested: api_map::tested(framework, &call.name),
            bench: api_map::bench(framework, &call.name),
            args: args(&call.forward.args),
            kwargs: call.forward.kwargs.iter().map(|(k, v)| KwargCtx { key: l.str(k), value: arg(v, framework, lang) }).collect(),
            grad_outputs: match (&call.backward, backward) {
                (Some(b), true) => args(&b.grad_outputs),
                _ => vec![],
            },
            data_mode: l.str(cfg.data_mode.as_str()),
            random_seed: cfg.random_seed,
            iter_times: cfg.iter_times,
            cosine_threshold: l.float(cfg.cosine_threshold),
            max_abs_err_threshold: l.float(cfg.max_abs_err_threshold),
            data_dir: l.opt(data_dir.map(|(d, _)| l.str(d))),
            data_dir_relative: matches!(data_dir, Some((_, true))),
            source: l.str(source),
            outputs: if lang == Lang::Rust { args(&call.forward.outputs) } else { vec![] },
            grad_inputs: match (&call.backward, lang) {
                (Some(b), Lang::Rust) => args(&b.grad_inputs),
                _ => vec![],
            },
            package,
            runtime_path: toml_str(&runtime_path()),
        }
    }
}

/// Where generated Rust projects find the runtime crate: `MSPROBE_RUNTIME_PATH`,
/// else the `runtime/` folder of the source tree this binary was built from.
fn runtime_path() -> String {
    std::env::var("MSPROBE_RUNTIME_PATH").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/runtime").to_string())
}
