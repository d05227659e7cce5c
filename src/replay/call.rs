//! Replaying the selected calls: each call read, typed, bridged and
//! size-checked ([`prepare`]), then run by the runtime; one call's broken
//! input is the command's error ([`replay_one`]), a batch's is that call's
//! `skip` row, and a batch runs calls in parallel within the memory budget
//! ([`replay_batch`], [`crate::schedule::within_budget`]).

use std::time::Instant;

use rayon::prelude::*;
use runtime::compare::Status;
use runtime::limits::{Admitted, Limit, TooLarge};
use runtime::replay::{replay_admitted, Rows};
use runtime::report::{DetailRow, HtmlArg, ResultRow};

use super::args;
use super::error::ReplayError;
use super::options::Options;
use crate::bridge;
use crate::config::DataMode;
use crate::model::Direction;
use crate::schedule::within_budget;
use crate::source::{Group, Source};

/// One call of a batch: its dump, where its entries lie, its direction.
pub(super) type Item<'a> = (&'a Source, &'a Group, Direction);

/// One call ready to run: what the runtime replays, admitted under the
/// limits with its estimated working set.
struct Prepared {
    admitted: Admitted,
    /// The call's arguments as the HTML report shows them (only with `--html`).
    args: Vec<HtmlArg>,
}

/// A size refusal as the command's error, naming the flag that sets the limit.
fn too_large(g: &Group, source: TooLarge) -> ReplayError {
    let flag = match source.limit {
        Limit::Tensor => "--tensor-size-limit",
        Limit::Budget => "--memory-budget",
    };
    ReplayError::TooLarge { api: g.name.to_string(), source, flag }
}

/// Reads, types and bridges one call, and checks its sizes; or says why its
/// input is at fault: a call that cannot be read or typed, lacks the tensor
/// files real data needs, or is over a size limit.
fn prepare(opts: &Options, source: &Source, g: &Group, direction: Direction) -> Result<Prepared, ReplayError> {
    let call = source.read_call(g)?;
    if opts.config.data_mode == DataMode::Real {
        source.check_real_data(&call, direction)?;
    }
    let replay = bridge::to_replay(&call, source.framework(), &opts.config, direction, source.data_dir(), !opts.emulate);
    // Checked once: the estimate schedules the batch, and the runtime runs
    // the admitted call without checking again.
    let admitted = opts.limits.admit(replay).map_err(|e| too_large(g, e))?;
    let args = args::of(&call, source.framework());
    Ok(Prepared { admitted, args })
}

/// Replays a prepared call: its rows, or its broken input (an unreadable
/// tensor file).
fn run_prepared(g: &Group, p: &Prepared) -> Result<Rows, ReplayError> {
    replay_admitted(&p.admitted).map_err(|e| match e {
        runtime::error::Error::TooLarge(t) => too_large(g, t),
        source => ReplayError::Input { api: g.name.to_string(), source },
    })
}

/// In a `--dump` batch, a call whose input is at fault is one `skip` row
/// naming the problem, and the rest goes on.
fn skip_rows(g: &Group, direction: Direction, e: &ReplayError) -> Rows {
    let api = g.name.to_string();
    let message = match e {
        ReplayError::TooLarge { .. } => format!("cannot replay here: {e}"),
        _ => format!("cannot replay here: broken input: {e}"),
    };
    let row = DetailRow::uncompared(format!("{api}.{}", direction.as_str()), Status::Skip, message.clone());
    let (forward, backward) = match direction {
        Direction::Forward => (Some(Status::Skip), None),
        Direction::Backward => (None, Some(Status::Skip)),
    };
    Rows { details: vec![row], results: vec![ResultRow { api_name: api, forward, backward, message }] }
}

/// Replays one call: its rows and its arguments, or its broken input
/// (the command's error, no CSV).
pub(super) fn replay_one(opts: &Options, source: &Source, g: &Group, direction: Direction) -> Result<(Rows, Vec<HtmlArg>), ReplayError> {
    let p = prepare(opts, source, g, direction)?;
    Ok((run_prepared(g, &p)?, p.args))
}

/// Replays a `--dump` batch (a broken input is a `skip` row; calls run in
/// parallel, `-j` at most, within `--memory-budget`), handing each call's
/// rows, arguments and seconds (reading its tensors, running and judging
/// it) to `done` with its index as soon as it finishes.
pub(super) fn replay_batch(opts: &Options, items: &[Item], done: impl Fn(usize, Rows, Vec<HtmlArg>, f64) + Sync) {
    let prepared: Vec<_> = items.par_iter().enumerate().map(|(i, &(source, g, d))| (i, g, d, prepare(opts, source, g, d))).collect();
    let need = |(_, _, _, p): &(usize, &Group, Direction, Result<Prepared, ReplayError>)| p.as_ref().map_or(0, |p| p.admitted.need());
    let jobs = opts.jobs.unwrap_or_else(rayon::current_num_threads);
    within_budget(&prepared, need, opts.limits.memory_budget, jobs, |(i, g, d, p)| {
        let start = Instant::now();
        let rows = p.as_ref().map_err(|e| skip_rows(g, *d, e)).and_then(|p| run_prepared(g, p).map_err(|e| skip_rows(g, *d, &e))).unwrap_or_else(|rows| rows);
        done(*i, rows, p.as_ref().map(|p| p.args.clone()).unwrap_or_default(), start.elapsed().as_secs_f64());
    });
}
