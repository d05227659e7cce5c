//! The `replay` command: dumped API calls replayed natively by the runtime
//! (no Python), with the accuracy CSVs written by the runtime's report writer.
//! One call from a config, or many from a dump (`--dump`).

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use runtime::compare::Status;
use runtime::replay::{replay, Rows};
use runtime::report::{write_report, DetailRow, ResultRow};

use crate::bridge;
use crate::config::{DataMode, OpConfig};
use crate::error::{exit, Error};
use crate::model::{ApiName, Direction, Framework};
use crate::select::ApiSelector;
use crate::source::{self, Group, Source};

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
    /// `-f`.
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
}

/// What a replay produced.
pub struct ReplayReport {
    /// All rows.
    pub rows: Rows,
    /// The CSVs written: (details, result).
    pub files: (PathBuf, PathBuf),
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

/// The direction one call is replayed in: a backward replay compares the
/// forward outputs too, so "both" is the backward replay where the dump
/// has a backward entry, else the forward one.
fn direction_of(wanted: Option<Direction>, g: &Group) -> Option<Direction> {
    match (wanted, g.backward.is_some()) {
        (Some(Direction::Backward), false) => None,
        (Some(d), _) => Some(d),
        (None, true) => Some(Direction::Backward),
        (None, false) => Some(Direction::Forward),
    }
}

/// One call's rows, or why its input is broken: a call that cannot be read
/// or typed, lacks the tensor files real data needs, or has an unreadable
/// tensor file.
fn replay_group(opts: &Options, source: &Source, g: &Group, direction: Direction) -> Result<Rows, Error> {
    let call = source.read_call(g)?;
    if opts.config.data_mode == DataMode::Real {
        source.check_real_data(&call, direction)?;
    }
    replay(&bridge::to_replay(&call, opts.framework, &opts.config, direction, source.data_dir(), !opts.emulate)).map_err(|e| Error::Input { api: g.name.to_string(), message: e.to_string() })
}

/// In a `--dump` batch, a call whose input is broken is one `skip` row
/// naming the problem, and the rest goes on.
fn skip_rows(g: &Group, direction: Direction, e: &Error) -> Rows {
    let (api, message) = (g.name.to_string(), format!("cannot replay here: broken input: {e}"));
    let row = DetailRow::uncompared(format!("{api}.{}", direction.as_str()), Status::Skip, message.clone());
    let (forward, backward) = match direction {
        Direction::Forward => (Some(Status::Skip), None),
        Direction::Backward => (None, Some(Status::Skip)),
    };
    Rows { details: vec![row], results: vec![ResultRow { api_name: api, forward, backward, message }] }
}

/// Replays the selected calls of the config's dump and writes the CSVs.
pub fn run(opts: &Options) -> Result<ReplayReport, Error> {
    let config = &opts.config;
    let file = source::one_file(&config.input, "point at one rank's dump.json")?;
    let selector = match &opts.scope {
        Scope::Many(selector) => selector.clone(),
        Scope::One(name) => ApiSelector::exactly(name),
    };
    let (source, groups) = Source::open(&file, opts.framework, config.data_mode, &|n: &ApiName| selector.matches(n))?;
    let selected: Vec<&Group> = groups.iter().filter(|g| g.forward.is_some() && selector.in_shard(&g.name)).collect();
    if selected.is_empty() {
        return Err(Error::selection(file, "no API selected (check api_name / --filter)"));
    }
    let jobs: Vec<(&Group, Direction)> = selected.into_iter().filter_map(|g| direction_of(opts.propagation, g).map(|d| (g, d))).collect();
    if jobs.is_empty() {
        return Err(Error::selection(file, "propagation is backward, but no selected API has a backward entry"));
    }
    let per_api: Vec<Rows> = match &opts.scope {
        // One call: a broken input is the command's error (no CSV).
        Scope::One(_) => vec![replay_group(opts, &source, jobs[0].0, jobs[0].1)?],
        Scope::Many(_) => jobs.par_iter().map(|(g, d)| replay_group(opts, &source, g, *d).unwrap_or_else(|e| skip_rows(g, *d, &e))).collect(),
    };
    let mut rows = Rows::default();
    for r in per_api {
        rows.details.extend(r.details);
        rows.results.extend(r.results);
    }
    let files = write_report(Path::new(&opts.output_dir), &rows.details, &rows.results, config.standard)?;
    Ok(ReplayReport { rows, files })
}
