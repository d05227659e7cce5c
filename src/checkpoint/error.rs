//! Why a checkpoint compare failed, and its exit code.

use std::path::{Path, PathBuf};

use runtime::atomic::WriteError;
use runtime::exit;
use runtime::io::IoError;

use crate::unreadable::Unreadable;

/// Why a checkpoint compare failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The folders or the `args` are not a Megatron checkpoint's.
    #[error("{}: {message}", path.display())]
    Layout {
        /// The file or folder.
        path: PathBuf,
        /// What was expected and what was found.
        message: String,
    },
    /// A checkpoint folder could not be listed or its tracker file read.
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    /// A rank file is unreadable, truncated, hostile or not a checkpoint.
    #[error(transparent)]
    File(#[from] IoError),
    /// The result file exists, or could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl CheckpointError {
    /// A [`CheckpointError::Layout`] about `path`.
    pub(super) fn layout(path: &Path, message: impl Into<String>) -> Self {
        CheckpointError::Layout { path: path.to_path_buf(), message: message.into() }
    }

    /// [`exit::WRITE`] for the result file, else [`exit::INPUT`].
    pub fn exit_code(&self) -> u8 {
        match self {
            CheckpointError::Write(_) => exit::WRITE,
            _ => exit::INPUT,
        }
    }
}
