//! Why `nan_analyze` failed, and its exit code.

use std::path::PathBuf;

use runtime::atomic::WriteError;
use runtime::exit;

use crate::dump::DumpError;
use crate::source::stack::StackError;
use crate::unreadable::Unreadable;

/// Why `nan_analyze` failed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// A rank's dump is unreadable or malformed.
    #[error(transparent)]
    Dump(#[from] DumpError),
    /// A rank's `stack.json` is unreadable or malformed.
    #[error("{0}")]
    Stack(#[from] StackError),
    /// The step folder, a rank folder or a `construct.json` is not as
    /// msprobe lays them out, or a dump is not PyTorch's.
    #[error("{}: {message}", path.display())]
    Input {
        /// The file or folder.
        path: PathBuf,
        /// What was expected and what was found.
        message: String,
    },
    /// A folder could not be listed or a `construct.json` read.
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    /// A `construct.json` is not JSON.
    #[error("{}: not valid JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// The report could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl AnalyzeError {
    /// An input error about `path`.
    pub fn input(path: impl Into<PathBuf>, message: impl Into<String>) -> AnalyzeError {
        AnalyzeError::Input { path: path.into(), message: message.into() }
    }

    /// [`exit::WRITE`] for the report, else [`exit::INPUT`].
    pub fn exit_code(&self) -> u8 {
        match self {
            AnalyzeError::Write(_) => exit::WRITE,
            _ => exit::INPUT,
        }
    }
}
