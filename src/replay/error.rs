//! Why `replay` failed, and its exit code.

use std::path::PathBuf;

use runtime::atomic::WriteError;
use runtime::exit;
use runtime::limits::TooLarge;
use runtime::report::ReportError;

use crate::source::SourceError;
use crate::unreadable::Unreadable;

/// Why `replay` failed (in a `--dump` batch, a call's input error is its
/// `skip` row instead).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The dump is unreadable or malformed, a call of it is (its entries,
    /// its tensor files), or it holds no call to replay as asked.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A tensor of a call, or the call's estimated working set, is over a
    /// size limit.
    #[error("{api}: {source} ({flag})")]
    TooLarge {
        /// The call, `Prefix.op.N`.
        api: String,
        /// What is too large, and the limit.
        source: TooLarge,
        /// The flag that sets the limit.
        flag: &'static str,
    },
    /// A tensor input of a call is unreadable, malformed or missing.
    #[error("{api}: {source}")]
    Input {
        /// The call, `Prefix.op.N`.
        api: String,
        /// The runtime's reason.
        source: runtime::error::Error,
    },
    /// The CSVs or the HTML report could not be written.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// A part or journal could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A dump or the parts folder could not be read.
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    /// A part or journal was refused: made from another dump or with other
    /// options, malformed, or (merging) missing, duplicated or incomplete.
    #[error("{}: {message}", path.display())]
    Part {
        /// The part, the journal, or the parts folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl ReplayError {
    /// [`exit::WRITE`] for an output, else [`exit::INPUT`]: the input is
    /// at fault.
    pub fn exit_code(&self) -> u8 {
        match self {
            ReplayError::Source(e) => e.exit_code(),
            ReplayError::Report(_) | ReplayError::Write(_) => exit::WRITE,
            ReplayError::TooLarge { .. } | ReplayError::Input { .. } | ReplayError::Unreadable(_) | ReplayError::Part { .. } => exit::INPUT,
        }
    }
}
