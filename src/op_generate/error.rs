//! Why `op_generate` failed, and the exit code of each reason.

use std::path::PathBuf;

use runtime::exit;

use crate::output::WriteError;
use crate::render::RenderError;
use crate::source::SourceError;

/// Why `op_generate` (or one script of a batch) failed.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The dump is unreadable or malformed, or lacks what was asked for
    /// (a call whose prefix is not replayable, without the entry the
    /// propagation needs, or that the framework does not expose, is a
    /// [`SourceError::Selection`] too).
    #[error(transparent)]
    Source(#[from] SourceError),
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
        SourceError::selection(file, message).into()
    }

    /// The source layer's code for the dump's fault, [`exit::WRITE`] for an
    /// output's, [`exit::INTERNAL`] for a template's.
    pub fn exit_code(&self) -> u8 {
        match self {
            GenerateError::Source(e) => e.exit_code(),
            GenerateError::Write(_) => exit::WRITE,
            GenerateError::Render(_) => exit::INTERNAL,
        }
    }
}
