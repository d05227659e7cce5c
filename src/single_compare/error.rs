//! Why `single_compare` could not compare two runs, and its exit code.

use std::path::PathBuf;

use runtime::atomic::WriteError;
use runtime::exit;
use runtime::io::IoError;

use crate::unreadable::Unreadable;
use crate::xlsx::XlsxError;

/// Why a run could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A run's folders are not laid out as SingleSave lays them out.
    #[error("{}: {message}", path.display())]
    Layout {
        /// The file or folder.
        path: PathBuf,
        /// What was expected and what was found.
        message: String,
    },
    /// A run's folder could not be read.
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    /// An array file is unreadable, truncated, hostile or outside its folder.
    #[error(transparent)]
    Tensor(#[from] IoError),
    /// The thread pool could not be built: a bug in this tool (or a
    /// system out of threads).
    #[error("internal error: thread pool: {0}")]
    ThreadPool(#[source] rayon::ThreadPoolBuildError),
    /// The workbook writer failed: a bug in this tool.
    #[error("internal error: {tag}.xlsx: {source}")]
    Workbook {
        /// The key whose workbook it was.
        tag: String,
        /// The writer's error.
        source: XlsxError,
    },
    /// The output folder or a workbook could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl CompareError {
    /// [`exit::INPUT`] for a run's fault, [`exit::WRITE`] for an output's,
    /// [`exit::INTERNAL`] for this tool's.
    pub fn exit_code(&self) -> u8 {
        match self {
            CompareError::Layout { .. } | CompareError::Unreadable(_) | CompareError::Tensor(_) => exit::INPUT,
            CompareError::ThreadPool(_) | CompareError::Workbook { .. } => exit::INTERNAL,
            CompareError::Write(_) => exit::WRITE,
        }
    }
}
