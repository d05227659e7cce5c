//! The typed model of a dumped API call: what the renderers and the runtime
//! consume. Built once from the JSON entries the dump reader hands over;
//! nothing downstream sees raw JSON.

mod arg;
mod call;
mod key;

pub use arg::{Arg, Stat, TensorDesc};
pub use call::{ApiCall, Backward, Forward};
pub use key::{ApiName, Direction, NameError, Prefix};
/// The one dtype type (the runtime's), with every framework's spellings.
pub use runtime::dtype::TDType;
/// The framework that produced a dump (the runtime's type, shared by `-f`).
pub use runtime::spec::Framework;

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
