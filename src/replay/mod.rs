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
mod cost;
mod dedupe;
mod html;
mod job;
mod merge;
mod part;
mod report;
mod resume;
mod select;
mod shard;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use runtime::atomic::WriteError;
use runtime::compare::Status;
use runtime::exit;
use runtime::limits::{Limits, TooLarge};
use runtime::replay::Rows;
use runtime::report::{HtmlArg, ReportError};

pub use merge::{merge, MergeOptions};

use crate::config::{DataMode, OpConfig};
use crate::model::{ApiName, Direction, Framework};
use crate::select::{ApiSelector, Shard};
use crate::source::{self, Source, SourceError};
use crate::unreadable::Unreadable;
use html::{Page, StackView};
use job::Job;
use part::{CallRecord, Header, Part, Settings};
use resume::{Journal, Resumed};

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
    /// A part or journal could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A dump or the parts folder could not be read.
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    /// A part or journal was refused: made from another dump or with other
    /// options, malformed, or (merging) missing, duplicated or incomplete.
    #[error("{}: {message}", path.display())]
    Part {
        /// The part, the journal, or the parts folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl ReplayError {
    /// [`exit::WRITE`] for an output, else [`exit::INPUT`]: the input is
    /// at fault.
    pub fn exit_code(&self) -> u8 {
        match self {
            ReplayError::Source(e) => e.exit_code(),
            ReplayError::Report(_) | ReplayError::Write(_) => exit::WRITE,
            ReplayError::TooLarge { .. } | ReplayError::Input { .. } | ReplayError::Unreadable(_) | ReplayError::Part { .. } => exit::INPUT,
        }
    }
}

/// What a shard's run did: its part, and how many of its calls it
/// replayed, found already judged, and judged by an identical call's verdict.
pub struct PartOutcome {
    /// The complete part.
    pub path: PathBuf,
    /// The shard.
    pub shard: Shard,
    /// Calls replayed by this run.
    pub replayed: usize,
    /// Calls an earlier run (its journal or complete part) had judged.
    pub judged: usize,
    /// Calls that share the verdict of an identical call replayed.
    pub shared: usize,
}

/// What a replay produced.
pub struct ReplayReport {
    /// All rows (of this shard, for a shard of several).
    pub rows: Rows,
    /// The CSVs written: (details, result); none for a shard of several,
    /// which writes only its part.
    pub files: Option<(PathBuf, PathBuf)>,
    /// The HTML report written, with `--html`.
    pub html: Option<PathBuf>,
    /// A `--dump` replay's part.
    pub part: Option<PartOutcome>,
    /// For a shard of several: the command that merges the parts (with
    /// `--html` when the shard was given it: the page is the merge's).
    pub merge_hint: Option<String>,
}

impl ReplayReport {
    /// How many details rows have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.rows.details.iter().filter(|r| r.status == status).count()
    }

    /// [`exit::INACCURATE`] when some row is an error, else [`exit::SKIPPED`]
    /// when some is a skip (unless `--allow-skip`), else 0. A shard of
    /// several that completed its part exits 0: the verdict is the merge's
    /// (so a job engine's dependent merge step runs).
    pub fn exit_code(&self, allow_skip: bool) -> u8 {
        if self.files.is_none() && self.part.is_some() {
            return exit::OK;
        }
        exit::for_statuses(self.rows.details.iter().map(|r| r.status), allow_skip)
    }
}

/// Replays the selected calls of the config's dump and writes the CSVs
/// (and, with `--html`, the page): one call, or (`--dump`) this shard of
/// the whole job ([`run_job`]).
pub fn run(opts: &Options) -> Result<ReplayReport, ReplayError> {
    match &opts.scope {
        Scope::One(name) => run_one(opts, name),
        Scope::Many(selector) => run_job(opts, selector),
    }
}

/// One call of one dump: a broken input is the command's error, no CSV.
fn run_one(opts: &Options, name: &ApiName) -> Result<ReplayReport, ReplayError> {
    let file = source::one_file(&opts.config.input, "point at one rank's dump.json")?;
    let selector = ApiSelector::exactly(name);
    let (source, groups) = Source::open(&file, opts.framework, opts.config.data_mode, &|n: &ApiName| selector.matches(n))?;
    let stacks = opts.html.as_ref().map(|_| StackView::new(source.stacks()));
    let (calls, selected) = select::directions(&groups, opts.propagation);
    let Some(&(g, direction)) = calls.first() else { return Err(select::nothing_selected(&file, selected)) };
    let group = &groups[g];
    let (rows, args) = call::replay_one(opts, &source, group, direction)?;
    let stack = stacks.as_ref().map(|s| s.frames(&group.name)).unwrap_or_default();
    let place = part::Place { ordinal: 0, step: None, rank: None, api: group.name.to_string(), direction: direction.as_str().into() };
    let record = CallRecord::new(place, None, None, &rows, &args, &stack);
    let page = stacks.map(|s| Page {
        dump: &file,
        framework: source.framework(),
        standard: opts.config.standard,
        emulate: opts.emulate,
        stack_note: s.note,
        output_dir: &opts.output_dir,
    });
    let w = report::write(&opts.output_dir, opts.config.standard, false, &[record], opts.html.as_ref().zip(page))?;
    Ok(ReplayReport { rows: w.rows, files: Some(w.files), html: w.html, part: None, merge_hint: None })
}

/// The options a part records.
fn settings(opts: &Options, selector: &ApiSelector) -> Settings {
    let c = &opts.config;
    Settings {
        framework: opts.framework.as_str().into(),
        standard: c.standard.as_str().into(),
        propagation: opts.propagation.map_or("both", Direction::as_str).into(),
        emulate: opts.emulate,
        data_mode: c.data_mode.as_str().into(),
        filter: selector.filter.as_ref().map(|r| r.as_str().to_string()),
        random_seed: c.random_seed,
        iter_times: c.iter_times,
        cosine_threshold: c.cosine_threshold,
        max_abs_err_threshold: c.max_abs_err_threshold,
    }
}

/// `--dump`: this shard (all of the job without `--shard`) of the job at
/// the config's input, resumed from what an earlier run left in the
/// output folder's parts, recorded there as a part; an unsharded run then
/// writes the CSVs (and the page) from its part.
fn run_job(opts: &Options, selector: &ApiSelector) -> Result<ReplayReport, ReplayError> {
    let root = opts.config.input.path();
    let job = Job::open(opts, root, selector)?;
    let shard = selector.shard.unwrap_or(Shard { index: 0, count: 1 });
    let (units, costs) = job.units(opts.config.data_mode);
    let shard_of = shard::partition(&costs, shard.count);
    let mut mine: Vec<usize> = units.iter().zip(&shard_of).filter(|(_, &s)| s == shard.index).flat_map(|(u, _)| u.iter().copied()).collect();
    mine.sort_unstable();
    let header = Header {
        format: part::FORMAT.into(),
        shard: shard.index,
        shards: shard.count,
        root: root.display().to_string(),
        whole: job.whole,
        read_as: job.dumps[0].source.framework().as_str().into(),
        dumps: job.ids.clone(),
        options: settings(opts, selector),
        job_calls: job.calls.len(),
    };
    let parts = part::dir(&opts.output_dir);
    let Finished { part, path, counts } = match resume::load(&parts, &header)? {
        Resumed::Complete(p) => {
            let n = p.calls.len();
            Finished { part: *p, path: part::part_path(&parts, shard.index, shard.count), counts: (0, n, 0) }
        }
        Resumed::Journal(done, len) => finish_shard(opts, &job, &mine, &parts, header, done, Some(len))?,
        Resumed::Fresh => finish_shard(opts, &job, &mine, &parts, header, vec![], None)?,
    };
    let outcome = PartOutcome { path, shard, replayed: counts.0, judged: counts.1, shared: counts.2 };
    if shard.count > 1 {
        let (rows, _) = html::join(&part.calls);
        let html = if opts.html.is_some() { " --html" } else { "" };
        let hint = format!("msprobe -f {} replay --merge {}{html}", opts.framework.as_str(), opts.output_dir.display());
        return Ok(ReplayReport { rows, files: None, html: None, part: Some(outcome), merge_hint: Some(hint) });
    }
    let dump = if job.whole { root.to_path_buf() } else { job.dumps[0].at.file.clone() };
    let page = Page {
        dump: &dump,
        framework: job.dumps[0].source.framework(),
        standard: opts.config.standard,
        emulate: opts.emulate,
        stack_note: part.stack_notes.join("; "),
        output_dir: &opts.output_dir,
    };
    let w = report::write(&opts.output_dir, opts.config.standard, job.whole, &part.calls, opts.html.as_ref().map(|t| (t, page)))?;
    Ok(ReplayReport { rows: w.rows, files: Some(w.files), html: w.html, part: Some(outcome), merge_hint: None })
}

/// Who judges a call that is not replayed on its own: an identical call
/// an earlier run judged (an index into its records), or one this run replays.
enum Judge {
    Earlier(usize),
    Now(usize),
}

/// A shard's complete part, where it is, and how many of its calls were
/// (replayed, already judged, shared) by this run.
struct Finished {
    part: Part,
    path: PathBuf,
    counts: (usize, usize, usize),
}

/// Replays the calls of `mine` that `done` (an earlier run's journal) does
/// not hold, identical calls once, appending each finished call to the
/// journal; then writes the complete part.
fn finish_shard(
    opts: &Options,
    job: &Job,
    mine: &[usize],
    parts: &Path,
    header: Header,
    done: Vec<CallRecord>,
    keep: Option<u64>,
) -> Result<Finished, ReplayError> {
    let journal = Journal::open(parts, &header, keep)?;
    let finished: HashSet<usize> = done.iter().map(|r| r.place.ordinal).collect();
    let todo: Vec<usize> = mine.iter().copied().filter(|o| !finished.contains(o)).collect();
    // The stacks of every dump of the shard (the part notes those without).
    let shard_dumps: Vec<usize> = {
        let mut d: Vec<usize> = mine.iter().map(|&o| job.calls[o].dump).collect();
        d.dedup();
        d
    };
    let views: HashMap<usize, StackView> = shard_dumps.par_iter().map(|&d| (d, StackView::new(job.dumps[d].source.stacks()))).collect();
    let mut stack_notes: Vec<String> = vec![];
    for d in &shard_dumps {
        let note = &views[d].note;
        if !note.is_empty() && !stack_notes.contains(note) {
            stack_notes.push(note.clone());
        }
    }
    let stack = |o: usize| views[&job.calls[o].dump].frames(job.name(o));
    // Identical calls: only candidates (a class with several calls in the shard) have their files hashed.
    let mut class_size: HashMap<&str, usize> = HashMap::new();
    for &o in mine {
        if let Some(k) = job.calls[o].class.as_deref() {
            *class_size.entry(k).or_default() += 1;
        }
    }
    let key_of = |o: usize| -> Option<String> {
        let c = &job.calls[o];
        let class = c.class.as_deref().filter(|k| class_size[k] > 1)?;
        match opts.config.data_mode {
            DataMode::Random => Some(class.to_string()),
            DataMode::Real => dedupe::input_key(class, job.dumps[c.dump].source.data_dir(), &c.files),
        }
    };
    let keys: HashMap<usize, Option<String>> = todo.par_iter().map(|&o| (o, key_of(o))).collect();
    let earlier: HashMap<&str, usize> =
        done.iter().enumerate().filter(|(_, r)| r.shares.is_none()).filter_map(|(i, r)| r.key.as_deref().map(|k| (k, i))).collect();
    let mut plan: Vec<(Judge, Vec<usize>)> = vec![];
    let mut by_key: HashMap<&str, usize> = HashMap::new();
    for &o in &todo {
        let key = keys[&o].as_deref();
        match key.and_then(|k| by_key.get(k)) {
            Some(&p) => plan[p].1.push(o),
            None => {
                if let Some(k) = key {
                    by_key.insert(k, plan.len());
                }
                match key.and_then(|k| earlier.get(k)) {
                    Some(&i) => plan.push((Judge::Earlier(i), vec![o])),
                    None => plan.push((Judge::Now(o), vec![])),
                }
            }
        }
    }
    let new: Mutex<Vec<CallRecord>> = Mutex::new(vec![]);
    let failed: Mutex<Option<ReplayError>> = Mutex::new(None);
    let emit = |record: CallRecord| {
        if let Err(e) = journal.append(&record) {
            failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(e);
        }
        new.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(record);
    };
    let share = |from: &CallRecord, o: usize| {
        let api = job.name(o).to_string();
        let note = dedupe::note(&from.place.api, job.whole.then_some((from.place.step, from.place.rank)));
        let dir = |ordinal: usize| job.dumps[job.calls[ordinal].dump].source.data_dir().map(|d| d.display().to_string());
        let dirs = dir(from.place.ordinal).zip(dir(o));
        let rows = dedupe::shared_rows(&from.rows(), (&from.place.api, &api), dirs.as_ref().map(|(a, b)| (a.as_str(), b.as_str())), &note);
        CallRecord::new(job.place(o), from.key.clone(), Some(from.place.ordinal), &rows, &from.args(), &stack(o))
    };
    let mut shared = 0;
    for (judge, clones) in &plan {
        if let Judge::Earlier(i) = judge {
            clones.iter().for_each(|&o| emit(share(&done[*i], o)));
        }
        shared += clones.len();
    }
    let runs: Vec<(usize, &[usize])> = plan.iter().filter_map(|(j, clones)| if let Judge::Now(o) = j { Some((*o, clones.as_slice())) } else { None }).collect();
    let items: Vec<call::Item> = runs
        .iter()
        .map(|&(o, _)| {
            let c = &job.calls[o];
            let d = &job.dumps[c.dump];
            (&d.source, &d.groups[c.group], c.direction)
        })
        .collect();
    call::replay_batch(opts, &items, |i, rows: Rows, args: Vec<HtmlArg>| {
        let (o, clones) = runs[i];
        let record = CallRecord::new(job.place(o), keys[&o].clone(), None, &rows, &args, &stack(o));
        let copies: Vec<CallRecord> = clones.iter().map(|&c| share(&record, c)).collect();
        emit(record);
        copies.into_iter().for_each(&emit);
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        return Err(e);
    }
    let judged = done.len();
    let mut calls = done;
    calls.extend(new.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner));
    calls.sort_by_key(|r| r.place.ordinal);
    let part = Part { header, stack_notes, calls };
    drop(journal);
    let path = resume::finish(parts, &part)?;
    Ok(Finished { part, path, counts: (runs.len(), judged, shared) })
}
