//! `ResultChangeError`: why `result_change` gave no verdict, each a one-line
//! message naming the run and the command, with its exit code.

use runtime::atomic::WriteError;
use runtime::exit;

use crate::unreadable::Unreadable;

/// Why `result_change` failed; nothing was written to the output folder.
#[derive(Debug, thiserror::Error)]
pub enum ResultChangeError {
    /// The training command could not be started (it does not exist).
    #[error("result_change: cannot run `{command}`: {source}")]
    Spawn {
        /// The command as given.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A run of the training command failed.
    #[error("result_change: run {run} ({variant}) of `{command}` {status}: {tail}")]
    Failed {
        /// 1-based run number.
        run: usize,
        /// The variant of that run.
        variant: &'static str,
        /// The command as given.
        command: String,
        /// `exited with code N` or `was killed by signal N`.
        status: String,
        /// The last line of its output.
        tail: String,
    },
    /// A run succeeded but wrote no step file.
    #[error("result_change: run {run} ({variant}) of `{command}` recorded no step: call rc.record(loss) after each backward (ResultChange of msprobe_rs)")]
    NoRecord {
        /// 1-based run number.
        run: usize,
        /// The variant of that run.
        variant: &'static str,
        /// The command as given.
        command: String,
    },
    /// A step file is not what ResultChange writes.
    #[error("{}: {expected}", file.display())]
    BadStep {
        /// The step file (in the run's temporary folder).
        file: std::path::PathBuf,
        /// What was expected.
        expected: String,
    },
    /// A run recorded other ranks than the baseline.
    #[error("result_change: run {run} ({variant}) recorded ranks {got:?}, the baseline ranks {expected:?}")]
    RankSet {
        /// 1-based run number.
        run: usize,
        /// The variant.
        variant: &'static str,
        /// Ranks of this run.
        got: Vec<usize>,
        /// Ranks of run 1.
        expected: Vec<usize>,
    },
    /// A rank of a run recorded another number of steps than in the baseline.
    #[error("result_change: run {run} ({variant}) recorded {got} steps on rank {rank}, the baseline {expected}")]
    StepCount {
        /// 1-based run number.
        run: usize,
        /// The variant.
        variant: &'static str,
        /// The rank (0 for a single process).
        rank: usize,
        /// Steps of this run.
        got: usize,
        /// Steps of run 1.
        expected: usize,
    },
    /// A run folder could not be made or read.
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    /// The verdict could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl ResultChangeError {
    /// The exit code: a command that does not exist is a usage error; a
    /// failing run or a missing record is bad input; a failed write is
    /// [`exit::WRITE`].
    pub fn exit_code(&self) -> u8 {
        match self {
            ResultChangeError::Spawn { .. } => exit::USAGE,
            ResultChangeError::Failed { .. }
            | ResultChangeError::NoRecord { .. }
            | ResultChangeError::BadStep { .. }
            | ResultChangeError::StepCount { .. }
            | ResultChangeError::RankSet { .. }
            | ResultChangeError::Unreadable(_) => exit::INPUT,
            ResultChangeError::Write(_) => exit::WRITE,
        }
    }
}
