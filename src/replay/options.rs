//! The validated options of one `replay` run.

use std::path::PathBuf;

use runtime::limits::Limits;

use crate::config::OpConfig;
use crate::model::{ApiName, Direction, Framework};
use crate::progress::Progress;
use crate::select::ApiSelector;
use runtime::report::RankBy;

/// Which calls a replay takes.
#[derive(Debug, Clone)]
pub enum Scope {
    /// One call: the config's `api_name`.
    One(ApiName),
    /// `--dump`: every call the selector takes.
    Many(ApiSelector),
}

/// Validated options of one `replay` run.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-f` (the dump's own framework is [`Source::framework`]).
    pub framework: Framework,
    /// config_op.json (or the defaults, with `--dump` alone), overrides applied.
    pub config: OpConfig,
    /// One call or many.
    pub scope: Scope,
    /// forward / backward, or both (`None`).
    pub propagation: Option<Direction>,
    /// Compare the bench with an emulated device run even when the dump
    /// recorded the outputs.
    pub emulate: bool,
    /// `--allow-skip`: `skip` rows alone do not fail the run.
    pub allow_skip: bool,
    /// Where the CSVs go.
    pub output_dir: PathBuf,
    /// `--tensor-size-limit` and `--memory-budget`.
    pub limits: Limits,
    /// `--html [FILE]`: also write the HTML report, to FILE or (`Some(None)`)
    /// to `replay_report_<stamp>.html` in the output folder.
    pub html: Option<Option<PathBuf>>,
    /// How `--dump` shows its progress on stderr.
    pub progress: Progress,
    /// `--from-compare FILE`: msprobe compare's result of the dump against
    /// a bench dump; its differing calls are replayed and blamed.
    pub from_compare: Option<PathBuf>,
    /// `--rank-by`: what the HTML report's table puts first.
    pub rank_by: RankBy,
    /// `--minimize` with its `--minimize-budget`: the failing calls are
    /// shrunk within that many replays each and written as repros.
    pub minimize: Option<u32>,
    /// `-j`: at most this many calls of a `--dump` batch at once (`None`:
    /// one per rayon thread).
    pub jobs: Option<usize>,
}
