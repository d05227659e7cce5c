//! The one error type of the library and every exit code of the binary,
//! decided here and nowhere else (README, "Exit codes").

use std::path::PathBuf;

use runtime::atomic::WriteError;
use runtime::report::ReportError;

use crate::checkpoint::CheckpointError;
use crate::config::ConfigError;
use crate::cli::foreign::ForeignError;
use crate::config_check::ConfigCheckError;
use crate::dump::DumpError;
use crate::model::ModelError;
use crate::render::RenderError;
use crate::single_compare::CompareError;

/// Exit codes of outcomes and of each error class: the runtime's table,
/// shared with the generated projects and scripts.
pub use runtime::exit;

/// Why a command failed. Each variant maps to one documented exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Flags that do not go together, or a bad flag value.
    #[error("{0}")]
    Usage(String),
    /// config_op.json is unreadable or invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The dump is unreadable or malformed.
    #[error(transparent)]
    Dump(#[from] DumpError),
    /// An entry of the dump has an unexpected shape.
    #[error("{}: {source}", file.display())]
    Model {
        /// The dump file.
        file: PathBuf,
        /// What is wrong, with the JSON path.
        source: ModelError,
    },
    /// The dump does not hold what the config asks for.
    #[error("{}: {message}", file.display())]
    Selection {
        /// The dump file (or folder).
        file: PathBuf,
        /// What is missing or unsupported.
        message: String,
    },
    /// A tensor input of a call is unreadable, malformed or missing.
    #[error("{api}: {message}")]
    Input {
        /// The call, `Prefix.op.N`.
        api: String,
        /// The file and the problem.
        message: String,
    },
    /// A tensor of a call, or the call's estimated working set, is over a
    /// size limit (`--tensor-size-limit`, `--memory-budget`).
    #[error("{api}: {message}")]
    TooLarge {
        /// The call, `Prefix.op.N`.
        api: String,
        /// What is too large, the limit, and the flag that sets it.
        message: String,
    },
    /// An output file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The accuracy CSVs could not be written.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// A template failed: a bug in this tool.
    #[error("internal error: {0}")]
    Render(#[from] RenderError),
    /// `single_compare`: a run is not a SingleSave run, or an array file is broken.
    #[error(transparent)]
    SingleCompare(#[from] CompareError),
    /// Checkpoint compare: a checkpoint's folders, `args` or rank files are broken or hostile.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// `config_check`: a `-d` file, a pack or the training Python is unreadable or not as expected.
    #[error(transparent)]
    ConfigCheck(#[from] ConfigCheckError),
    /// A subcommand that is not ours could not reach mindstudio-probe's msprobe.
    #[error(transparent)]
    Foreign(#[from] ForeignError),
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::Config(_) => exit::CONFIG,
            Error::Dump(_) | Error::Model { .. } | Error::Selection { .. } | Error::Input { .. } | Error::TooLarge { .. } => exit::INPUT,
            Error::Write(_) | Error::Report(_) => exit::WRITE,
            Error::Render(_) => exit::INTERNAL,
            Error::SingleCompare(CompareError::Internal(_)) => exit::INTERNAL,
            Error::SingleCompare(_) => exit::INPUT,
            Error::Checkpoint(_) => exit::INPUT,
            Error::ConfigCheck(ConfigCheckError::Internal(_)) => exit::INTERNAL,
            Error::ConfigCheck(_) => exit::INPUT,
            Error::Foreign(_) => exit::USAGE,
        }
    }

    /// A selection error about `file`.
    pub fn selection(file: impl Into<PathBuf>, message: impl Into<String>) -> Error {
        Error::Selection { file: file.into(), message: message.into() }
    }
}
