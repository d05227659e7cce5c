//! What to replay, independent of any dump format: the API, its arguments
//! as specs (tensors by dtype, shape and value range or data file), the
//! recorded outputs and gradients, and the settings. The CLI builds a
//! [`Replay`] from a dump; a generated Rust project writes one as code.

use std::fmt;
use std::path::PathBuf;

use crate::dtype::TDType;
use crate::prefix::Prefix;

/// The framework that made a dump: it decides MindSpore-specific op
/// meanings (`MS.` entries of the op table) and how dtypes are spelled in
/// reports. The CLI's `-f` and the dump model use this same type.
///
/// `MindTorch` is MSAdapter (mindtorch): PyTorch code run on MindSpore,
/// dumped by msprobe's MindSpore dumper (`"framework": "mindtorch"`). Its
/// calls are PyTorch's ([`Framework::api_family`]); it is read with
/// `-f mindspore` ([`Framework::flag`]), as in msprobe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framework {
    /// PyTorch (`pytorch`).
    PyTorch,
    /// MindSpore (`mindspore`).
    MindSpore,
    /// MSAdapter (`mindtorch`): PyTorch's API on MindSpore.
    MindTorch,
}

impl Framework {
    /// Every framework, as dumps spell them.
    pub const ALL: [Framework; 3] = [Framework::PyTorch, Framework::MindSpore, Framework::MindTorch];

    /// The values of `-f`, in the CLI's order.
    pub const FLAGS: [Framework; 2] = [Framework::PyTorch, Framework::MindSpore];

    /// Parses the dump spelling (`pytorch`, `mindspore`, `mindtorch`).
    pub fn parse(s: &str) -> Option<Framework> {
        Framework::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The dump spelling (`"framework"` of a dump's header).
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::PyTorch => "pytorch",
            Framework::MindSpore => "mindspore",
            Framework::MindTorch => "mindtorch",
        }
    }

    /// The `-f` value that reads this framework's dumps: MSAdapter's are
    /// MindSpore's dumper's, as msprobe has it.
    pub fn flag(self) -> Framework {
        match self {
            Framework::PyTorch => Framework::PyTorch,
            Framework::MindSpore | Framework::MindTorch => Framework::MindSpore,
        }
    }

    /// The framework whose API names, hook lists and op semantics this
    /// framework's dumped calls have: MSAdapter's are PyTorch's.
    pub fn api_family(self) -> Framework {
        match self {
            Framework::PyTorch | Framework::MindTorch => Framework::PyTorch,
            Framework::MindSpore => Framework::MindSpore,
        }
    }

    /// The name reports give the maker of this framework's dumps where it
    /// is not the framework itself: `MSAdapter` for mindtorch dumps.
    pub fn adapter(self) -> Option<&'static str> {
        match self {
            Framework::PyTorch | Framework::MindSpore => None,
            Framework::MindTorch => Some("MSAdapter"),
        }
    }

    /// A dtype as this framework's dumps and reports spell it
    /// (`torch.float32`, `Float32`; MSAdapter's dumps also write
    /// mindtorch's own `mindtorch.float32`, reported by MindSpore's name).
    pub fn dtype_name(self, d: TDType) -> String {
        match self {
            Framework::PyTorch => format!("torch.{}", d.name()),
            Framework::MindSpore | Framework::MindTorch => d.mindspore_name().to_string(),
        }
    }
}

/// The API call a replay runs, `Prefix.op.N` in its three parts, split
/// once where the dump's name is parsed: `Prefix.op` ([`ApiId::name`])
/// picks the op-table entry, `call` is the dump's call counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiId {
    /// The hooked namespace, e.g. `Torch`, `Tensor`, `Functional`.
    pub prefix: Prefix,
    /// The op within it, e.g. `matmul`, `__add__`.
    pub op: String,
    /// The call counter, e.g. `0`.
    pub call: String,
}

impl ApiId {
    /// `Prefix.op`, the op table's name of the API (`Torch.matmul`).
    pub fn name(&self) -> String {
        format!("{}.{}", self.prefix, self.op)
    }
}

impl fmt::Display for ApiId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.prefix, self.op, self.call)
    }
}

/// A tensor argument as dumped.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    /// Logical dtype.
    pub dtype: TDType,
    /// Shape.
    pub shape: Vec<usize>,
    /// Dumped Min (None when not recorded).
    pub low: Option<f64>,
    /// Dumped Max.
    pub high: Option<f64>,
    /// `requires_grad` as dumped.
    pub requires_grad: Option<bool>,
    /// The dumped tensor file, for real data.
    pub data: Option<PathBuf>,
}

/// An argument as dumped.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    /// A tensor.
    Tensor(TensorSpec),
    /// int
    Int(i64),
    /// float
    Float(f64),
    /// bool
    Bool(bool),
    /// str
    Str(String),
    /// A dtype argument.
    DType(TDType),
    /// slice(start, stop, step)
    Slice(Option<i64>, Option<i64>, Option<i64>),
    /// ...
    Ellipsis,
    /// None, and values the dump could not record.
    None,
    /// list / tuple
    List(Vec<Spec>),
}

/// Where input values come from (config_op.json's `data_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataMode {
    /// `random_data`: seeded random values within the dumped [Min, Max].
    Random,
    /// `real_data`: the dumped tensor files.
    Real,
}

impl DataMode {
    /// Both modes.
    pub const ALL: [DataMode; 2] = [DataMode::Random, DataMode::Real];

    /// msprobe's spelling: `random_data`, `real_data`.
    pub fn as_str(self) -> &'static str {
        match self {
            DataMode::Random => "random_data",
            DataMode::Real => "real_data",
        }
    }
}

/// Everything one replay needs.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The call: `Prefix`, `op` and its counter.
    pub api: ApiId,
    /// Decides MindSpore-specific semantics and dtype names.
    pub framework: Framework,
    /// Positional arguments.
    pub args: Vec<Spec>,
    /// Keyword arguments.
    pub kwargs: Vec<(String, Spec)>,
    /// Recorded forward outputs (real data: the device side by default).
    pub outputs: Vec<Spec>,
    /// Backward: gradients w.r.t. the outputs, as dumped. `None` = forward only.
    pub grad_outputs: Option<Vec<Spec>>,
    /// Recorded gradients w.r.t. the inputs (one per positional input).
    pub grad_inputs: Vec<Spec>,
    /// Random or real data.
    pub data_mode: DataMode,
    /// Seed of every random stream.
    pub seed: u64,
    /// Replays (random data draws new values each time).
    pub iterations: u32,
    /// Pass: cosine above this ...
    pub cosine_threshold: f64,
    /// ... and max absolute error below this.
    pub max_abs_err_threshold: f64,
    /// The precision standard every row is judged by.
    pub standard: crate::standard::Standard,
    /// Real data: compare the bench against the recorded outputs instead of
    /// an emulated device run (when every needed output was recorded).
    pub use_recorded: bool,
    /// The device the dump's values were recorded on.
    pub dump_device: DumpDevice,
}

/// The device a dump's values were recorded on: which of the rulebook's
/// `reduced_operands` (a device's float32 kernels that round their
/// operands shorter by default) its recorded float32 rows are held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DumpDevice {
    /// A CPU: float32 kernels in float32.
    #[default]
    Cpu,
    /// An NVIDIA GPU (cuDNN's TF32 convolutions).
    Cuda,
    /// An Ascend NPU (torch_npu's HF32 convolutions).
    Npu,
}

impl DumpDevice {
    /// Every device, in the order the help lists them.
    pub const ALL: [DumpDevice; 3] = [DumpDevice::Cpu, DumpDevice::Cuda, DumpDevice::Npu];

    /// The name the command line, config_op.json and the rulebook use.
    pub fn as_str(self) -> &'static str {
        match self {
            DumpDevice::Cpu => "cpu",
            DumpDevice::Cuda => "cuda",
            DumpDevice::Npu => "npu",
        }
    }
}

impl Spec {
    /// The tensors in this spec, depth first.
    pub fn tensors(&self) -> Vec<&TensorSpec> {
        match self {
            Spec::Tensor(t) => vec![t],
            Spec::List(items) => items.iter().flat_map(Spec::tensors).collect(),
            _ => vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dump_framework_is_read_by_one_flag_and_has_one_api_family() {
        for f in Framework::ALL {
            assert_eq!(Framework::parse(f.as_str()), Some(f));
            assert!(Framework::FLAGS.contains(&f.flag()), "{}", f.as_str());
            assert_eq!(f.api_family().api_family(), f.api_family());
        }
        for f in Framework::FLAGS {
            assert_eq!((f.flag(), f.api_family(), f.adapter()), (f, f, None));
        }
        let mt = Framework::MindTorch;
        assert_eq!((mt.flag(), mt.api_family(), mt.adapter()), (Framework::MindSpore, Framework::PyTorch, Some("MSAdapter")));
        assert_eq!(mt.dtype_name(TDType::BF16), "BFloat16");
    }
}
