//! The `replay` command: dumped API calls replayed natively by the runtime
//! (no Python), with the accuracy CSVs written by the runtime's report writer.
//! One call from a config, or many from a dump (`--dump`).
//!
//! It flows one way: the source layer opens the dump (and, with `--html`,
//! its `stack.json`); [`select`] picks the calls and their directions;
//! [`call`] replays them, one record per call; the CSVs, then the page
//! ([`html`]), are written from those records.
//!
//! Sizes are bounded before anything is allocated (`runtime::limits`): a
//! tensor over `--tensor-size-limit`, or a call whose estimated working set
//! is over `--memory-budget`, is an input error alone and a `skip` row in a
//! batch; a batch runs calls in parallel only while their estimates
//! together stay within the budget ([`crate::schedule`]).

mod args;
mod call;
mod html;
mod select;

use std::path::{Path, PathBuf};

use runtime::compare::Status;
use runtime::exit;
use runtime::limits::{Limits, TooLarge};
use runtime::replay::Rows;
use runtime::report::{write_report, ReportError};

use crate::config::OpConfig;
use crate::model::{ApiName, Direction, Framework};
use crate::select::ApiSelector;
use crate::source::{self, Source, SourceError};

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
}

/// Why `replay` failed (in a `--dump` batch, a call's input error is its
/// `skip` row instead).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The dump is unreadable or malformed, a call of it is (its entries,
    /// its tensor files), or it holds no call to replay as asked.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A tensor of a call, or the call's estimated working set, is over a
    /// size limit.
    #[error("{api}: {source} ({flag})")]
    TooLarge {
        /// The call, `Prefix.op.N`.
        api: String,
        /// What is too large, and the limit.
        source: TooLarge,
        /// The flag that sets the limit.
        flag: &'static str,
    },
    /// A tensor input of a call is unreadable, malformed or missing.
    #[error("{api}: {source}")]
    Input {
        /// The call, `Prefix.op.N`.
        api: String,
        /// The runtime's reason.
        source: runtime::error::Error,
    },
    /// The CSVs or the HTML report could not be written.
    #[error(transparent)]
    Report(#[from] ReportError),
}

impl ReplayError {
    /// [`exit::WRITE`] for an output, else [`exit::INPUT`]: the input is
    /// at fault.
    pub fn exit_code(&self) -> u8 {
        match self {
            ReplayError::Source(e) => e.exit_code(),
            ReplayError::Report(_) => exit::WRITE,
            ReplayError::TooLarge { .. } | ReplayError::Input { .. } => exit::INPUT,
        }
    }
}

/// What a replay produced.
pub struct ReplayReport {
    /// All rows.
    pub rows: Rows,
    /// The CSVs written: (details, result).
    pub files: (PathBuf, PathBuf),
    /// The HTML report written, with `--html`.
    pub html: Option<PathBuf>,
}

impl ReplayReport {
    /// How many details rows have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.rows.details.iter().filter(|r| r.status == status).count()
    }

    /// [`exit::INACCURATE`] when some row is an error, else [`exit::SKIPPED`]
    /// when some is a skip (unless `--allow-skip`), else 0.
    pub fn exit_code(&self, allow_skip: bool) -> u8 {
        exit::for_statuses(self.rows.details.iter().map(|r| r.status), allow_skip)
    }
}

/// Replays the selected calls of the config's dump and writes the CSVs
/// (and, with `--html`, the page).
pub fn run(opts: &Options) -> Result<ReplayReport, ReplayError> {
    let file = source::one_file(&opts.config.input, "point at one rank's dump.json")?;
    let selector = match &opts.scope {
        Scope::Many(selector) => selector.clone(),
        Scope::One(name) => ApiSelector::exactly(name),
    };
    let (source, groups) = Source::open(&file, opts.framework, opts.config.data_mode, &|n: &ApiName| selector.matches(n))?;
    let stacks = opts.html.as_ref().map(|_| html::StackView::new(source.stacks()));
    let jobs = select::jobs(&file, &groups, &selector, opts.propagation)?;
    let records = call::replay_jobs(opts, &source, &jobs)?;
    let (rows, calls) = html::join(records, stacks.as_ref());
    let files = write_report(Path::new(&opts.output_dir), &rows.details, &rows.results, opts.config.standard)?;
    let html = match (&opts.html, &stacks) {
        (Some(target), Some(stacks)) => Some(html::write(opts, (&file, source.framework()), target, &rows, calls, stacks)?),
        _ => None,
    };
    Ok(ReplayReport { rows, files, html })
}
