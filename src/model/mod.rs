//! The typed model of a dumped API call: what the renderers and the runtime
//! consume. Built once from the JSON entries the dump reader hands over;
//! nothing downstream sees raw JSON.

mod arg;
mod call;
mod dtype;
mod key;

pub use arg::{Arg, Stat, TensorDesc};
pub use call::{ApiCall, Backward, Forward};
pub use dtype::{DType, DTypeKind};
pub use key::{ApiName, Direction, NameError, Prefix};

/// Why a dump entry cannot be typed; names the JSON path and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A value does not have the expected shape.
    #[error("{path}: expected {expected}")]
    Arg {
        /// Where, as `Key.field[i].sub`.
        path: String,
        /// What was expected there.
        expected: String,
    },
}

/// The framework that produced a dump, from its `framework` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framework {
    /// PyTorch (`"pytorch"`).
    PyTorch,
    /// MindSpore (`"mindspore"`).
    MindSpore,
}

impl Framework {
    /// Parses the CLI / dump spelling.
    pub fn parse(s: &str) -> Option<Framework> {
        match s {
            "pytorch" => Some(Framework::PyTorch),
            "mindspore" => Some(Framework::MindSpore),
            _ => None,
        }
    }

    /// The CLI / dump spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::PyTorch => "pytorch",
            Framework::MindSpore => "mindspore",
        }
    }

    /// Whether this framework's dumps can contain the prefix.
    pub fn accepts(self, prefix: Prefix) -> bool {
        match self {
            Framework::PyTorch => matches!(prefix, Prefix::Functional | Prefix::Tensor | Prefix::Torch),
            Framework::MindSpore => matches!(prefix, Prefix::Functional | Prefix::Tensor | Prefix::Mint | Prefix::MintFunctional),
        }
    }
}
