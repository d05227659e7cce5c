//! The binary's error: a bad command line, an invalid config, or the error
//! of the command that ran, each mapped to its one process exit code
//! (`runtime::exit`, README "Exit codes"). The commands' errors know their
//! own codes; this is the only place that knows them all.

use runtime::exit;

use super::foreign::ForeignError;
use crate::checkpoint::CheckpointError;
use crate::config::ConfigError;
use crate::config_check::ConfigCheckError;
use crate::nan_analyze::AnalyzeError;
use crate::op_generate::GenerateError;
use crate::replay::ReplayError;
use crate::result_change::ResultChangeError;
use crate::single_compare::CompareError;

/// Why the binary failed; [`Error::exit_code`] is its exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Flags that do not go together, or a bad flag value.
    #[error("{0}")]
    Usage(String),
    /// The rulebook `MSPROBE_RS_RULEBOOK` names is unreadable or not a rulebook.
    #[error("{0}")]
    Rulebook(String),
    /// config_op.json is unreadable or invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `op_generate` failed.
    #[error(transparent)]
    OpGenerate(#[from] GenerateError),
    /// `replay` failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// `nan_analyze` failed.
    #[error(transparent)]
    NanAnalyze(#[from] AnalyzeError),
    /// `single_compare` failed.
    #[error(transparent)]
    SingleCompare(#[from] CompareError),
    /// `config_check -d` or `-c` of two packs failed.
    #[error(transparent)]
    ConfigCheck(#[from] ConfigCheckError),
    /// `config_check -c` of two checkpoints failed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// `result_change` failed.
    #[error(transparent)]
    ResultChange(#[from] ResultChangeError),
    /// A subcommand that is not ours could not reach mindstudio-probe's msprobe.
    #[error(transparent)]
    Foreign(#[from] ForeignError),
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Foreign(_) => exit::USAGE,
            Error::Config(_) | Error::Rulebook(_) => exit::CONFIG,
            Error::OpGenerate(e) => e.exit_code(),
            Error::Replay(e) => e.exit_code(),
            Error::NanAnalyze(e) => e.exit_code(),
            Error::SingleCompare(e) => e.exit_code(),
            Error::ConfigCheck(e) => e.exit_code(),
            Error::Checkpoint(e) => e.exit_code(),
            Error::ResultChange(e) => e.exit_code(),
        }
    }
}
