//! Why `op_generate` failed, and the exit code of each reason.

use std::path::PathBuf;

use runtime::exit;

use crate::output::WriteError;
use crate::render::RenderError;
use crate::source::SourceError;

/// Why `op_generate` (or one script of a batch) failed.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The dump is unreadable or malformed, or lacks what was asked for.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The dump holds the call, but no script can be written for it (its
    /// prefix is not replayable, it lacks the entry the propagation needs,
    /// the framework does not expose the API).
    #[error("{}: {message}", file.display())]
    Selection {
        /// The dump file.
        file: PathBuf,
        /// What is missing or unsupported.
        message: String,
    },
    /// An output file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A template failed: a bug in this tool.
    #[error("internal error: {0}")]
    Render(#[from] RenderError),
}

impl GenerateError {
    /// A selection error about `file`.
    pub fn selection(file: impl Into<PathBuf>, message: impl Into<String>) -> GenerateError {
        GenerateError::Selection { file: file.into(), message: message.into() }
    }

    /// [`exit::INPUT`] for the dump's fault, [`exit::WRITE`] for an
    /// output's, [`exit::INTERNAL`] for a template's.
    pub fn exit_code(&self) -> u8 {
        match self {
            GenerateError::Source(e) => e.exit_code(),
            GenerateError::Selection { .. } => exit::INPUT,
            GenerateError::Write(_) => exit::WRITE,
            GenerateError::Render(_) => exit::INTERNAL,
        }
    }
}
