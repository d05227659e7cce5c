//! What to replay, independent of any dump format: the API, its arguments
//! as specs (tensors by dtype, shape and value range or data file), the
//! recorded outputs and gradients, and the settings. The CLI builds a
//! [`Replay`] from a dump; a generated Rust project writes one as code.

use std::path::PathBuf;

use crate::dtype::TDType;

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

/// Where input values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataMode {
    /// Seeded random values within the dumped [Min, Max].
    Random,
    /// The dumped tensor files.
    Real,
}

/// Everything one replay needs.
#[derive(Debug, Clone)]
pub struct Replay {
    /// `Prefix.op.N`.
    pub api: String,
    /// `pytorch` or `mindspore` (decides MindSpore-specific semantics and dtype names).
    pub framework: String,
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
    /// Real data: compare the bench against the recorded outputs instead of
    /// an emulated device run (when every needed output was recorded).
    pub use_recorded: bool,
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
