//! The context of the Rust templates (`templates/rust/`): a
//! [`runtime::spec::Replay`], made by [`crate::bridge`], as a cargo project
//! spells it. Every value arrives as a Rust literal from
//! [`super::literal`]; the templates only arrange them.

use serde::Serialize;

use runtime::spec::{DataMode, DumpDevice, Framework, Replay};
use runtime::standard::Standard;

use super::literal::{rs_float, rs_spec, rs_str, toml_str};
use crate::model::Direction;
use crate::paths::PathRef;

/// A keyword argument.
#[derive(Debug, Serialize)]
pub struct KwargRs {
    /// The keyword as a string literal.
    pub key: String,
    /// Its value as a `Spec` expression.
    pub value: String,
}

/// Everything the Rust project templates need.
#[derive(Debug, Serialize)]
pub struct RustContext {
    /// `msprobe-rs <version>`.
    pub generator: String,
    /// `pytorch` / `mindspore`, for the doc comment.
    pub framework: &'static str,
    /// The `Framework` variant.
    pub framework_variant: &'static str,
    /// `Prefix.op.N` (validated: identifiers and digits only).
    pub api_name: String,
    /// `Prefix.op.N.forward|backward`, the project's folder.
    pub api_full_name: String,
    /// `forward` / `backward`.
    pub propagation: &'static str,
    /// The API's prefix (`Torch`) as a string literal.
    pub api_prefix: String,
    /// The op within the prefix (`matmul`) as a string literal.
    pub api_op: String,
    /// The call counter as a string literal.
    pub api_call: String,
    /// Positional arguments, as `Spec` expressions.
    pub args: Vec<String>,
    /// Keyword arguments.
    pub kwargs: Vec<KwargRs>,
    /// Recorded forward outputs (the tested side of real-data replays).
    pub outputs: Vec<String>,
    /// Whether the gradient is replayed (`grad_outputs` is `Some`).
    pub backward: bool,
    /// Gradients w.r.t. the outputs (backward only).
    pub grad_outputs: Vec<String>,
    /// Recorded gradients w.r.t. the inputs.
    pub grad_inputs: Vec<String>,
    /// The `DataMode` variant.
    pub data_mode: &'static str,
    /// Seed.
    pub random_seed: u64,
    /// Iterations.
    pub iter_times: u32,
    /// Cosine threshold literal.
    pub cosine_threshold: String,
    /// Max-abs-error threshold literal.
    pub max_abs_err_threshold: String,
    /// The precision standard's variant name (`Msprobe`, `Api`).
    pub standard: &'static str,
    /// Whether the recorded outputs are the tested side.
    pub use_recorded: bool,
    /// The device the dump was recorded on, as `DumpDevice`'s variant name (`Cpu`, `Cuda`, `Npu`).
    pub dump_device: &'static str,
    /// The cargo package name.
    pub package: String,
    /// The runtime crate's folder as a TOML string (relative to the project
    /// when they share a tree).
    pub runtime_path: String,
}

impl RustContext {
    /// The context of `replay` in `direction`; `runtime` is the runtime
    /// crate's folder as seen from the project.
    pub fn new(replay: &Replay, direction: Direction, runtime: &PathRef) -> RustContext {
        let api_full_name = format!("{}.{}", replay.api, direction.as_str());
        let specs = |list: &[runtime::spec::Spec]| list.iter().map(rs_spec).collect::<Vec<_>>();
        let package = format!("repro-{api_full_name}")
            .to_ascii_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        RustContext {
            generator: format!("msprobe-rs {}", env!("CARGO_PKG_VERSION")),
            framework: replay.framework.as_str(),
            framework_variant: match replay.framework {
                Framework::PyTorch => "PyTorch",
                Framework::MindSpore => "MindSpore",
                Framework::MindTorch => "MindTorch",
            },
            api_name: replay.api.to_string(),
            api_full_name,
            propagation: direction.as_str(),
            api_prefix: rs_str(replay.api.prefix.as_str()),
            api_op: rs_str(&replay.api.op),
            api_call: rs_str(&replay.api.call),
            args: specs(&replay.args),
            kwargs: replay.kwargs.iter().map(|(k, v)| KwargRs { key: rs_str(k), value: rs_spec(v) }).collect(),
            outputs: specs(&replay.outputs),
            backward: replay.grad_outputs.is_some(),
            grad_outputs: replay.grad_outputs.as_deref().map(specs).unwrap_or_default(),
            grad_inputs: specs(&replay.grad_inputs),
            data_mode: match replay.data_mode {
                DataMode::Random => "Random",
                DataMode::Real => "Real",
            },
            random_seed: replay.seed,
            iter_times: replay.iterations,
            cosine_threshold: rs_float(replay.cosine_threshold),
            max_abs_err_threshold: rs_float(replay.max_abs_err_threshold),
            standard: match replay.standard {
                Standard::Default => "Default",
                Standard::Msprobe => "Msprobe",
                Standard::Api => "Api",
                Standard::Bound => "Bound",
            },
            use_recorded: replay.use_recorded,
            dump_device: match replay.dump_device {
                DumpDevice::Cpu => "Cpu",
                DumpDevice::Cuda => "Cuda",
                DumpDevice::Npu => "Npu",
            },
            package,
            runtime_path: toml_str(&runtime.text),
        }
    }
}
