//! Why a pack could not be made or compared, and its exit code.

use std::path::PathBuf;

use runtime::atomic::WriteError;
use runtime::exit;

use crate::unreadable::Unreadable;
use crate::xlsx::XlsxError;

/// Why a pack could not be made or compared (files are named).
#[derive(Debug, thiserror::Error)]
pub enum ConfigCheckError {
    /// A `-d` file, a pack or the Python is unreadable or not as expected.
    #[error("{}: {message}", path.display())]
    Input {
        /// The file (or program).
        path: PathBuf,
        /// What was expected and what was found.
        message: String,
    },
    /// A `-d` file could not be read.
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    /// The training environment's Python could not be started.
    #[error("{}: cannot run it to list the installed packages: {source} (set MSPROBE_PYTHON to the training environment's python)", path.display())]
    NoPython {
        /// The Python.
        path: PathBuf,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// The Python printed something other than `sys.path` as JSON.
    #[error("{}: expected sys.path as a JSON list, got {got:?}: {source}", path.display())]
    SysPath {
        /// The Python.
        path: PathBuf,
        /// What it printed, trimmed.
        got: String,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// An entry of a pack is not JSON.
    #[error("{}: entry {entry:?}: not valid JSON: {source}", path.display())]
    EntryJson {
        /// The pack.
        path: PathBuf,
        /// The entry.
        entry: String,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// The zip writer failed: a bug in this tool.
    #[error("internal error: writing the zip in memory: {0}")]
    Zip(#[source] zip::result::ZipError),
    /// The workbook writer failed: a bug in this tool.
    #[error("internal error: rendering result.xlsx: {0}")]
    Workbook(#[source] XlsxError),
    /// The pack, an extraction or the result could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl ConfigCheckError {
    /// [`exit::INPUT`] for an input's fault, [`exit::WRITE`] for an
    /// output's, [`exit::INTERNAL`] for this tool's.
    pub fn exit_code(&self) -> u8 {
        match self {
            ConfigCheckError::Input { .. }
            | ConfigCheckError::Unreadable(_)
            | ConfigCheckError::NoPython { .. }
            | ConfigCheckError::SysPath { .. }
            | ConfigCheckError::EntryJson { .. } => exit::INPUT,
            ConfigCheckError::Zip(_) | ConfigCheckError::Workbook(_) => exit::INTERNAL,
            ConfigCheckError::Write(_) => exit::WRITE,
        }
    }
}
