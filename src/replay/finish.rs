//! A shard's calls replayed and recorded: those an earlier run's journal
//! does not hold, identical calls once, each finished call appended to the
//! journal, then the complete part written.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use runtime::replay::Rows;
use runtime::report::HtmlArg;

use super::error::ReplayError;
use super::html::StackView;
use super::job::Job;
use super::options::Options;
use super::part::{CallRecord, Header, Part};
use super::resume::{self, Journal};
use super::{call, dedupe};
use crate::config::DataMode;
use crate::progress::Reporter;

/// Who judges a call that is not replayed on its own: an identical call
/// an earlier run judged (an index into its records), or one this run replays.
enum Judge {
    Earlier(usize),
    Now(usize),
}

/// A shard's complete part, where it is, and how many of its calls were
/// (replayed, already judged, shared) by this run.
pub(super) struct Finished {
    /// The complete part.
    pub part: Part,
    /// Where it was written.
    pub path: PathBuf,
    /// (replayed, already judged, shared).
    pub counts: (usize, usize, usize),
}

/// Replays the calls of `mine` that `done` (an earlier run's journal) does
/// not hold, identical calls once, appending each finished call to the
/// journal; then writes the complete part.
pub(super) fn finish_shard(
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
    let (views, stack_notes) = stack_views(job, mine);
    let stack = |o: usize| views[&job.calls[o].dump].frames(job.name(o));
    let keys = identity_keys(opts, job, mine, &todo);
    let plan = plan(&todo, &keys, &done);
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
    let work = runs.iter().map(|&(o, _)| job.calls[o].cost).fold(0, u64::saturating_add);
    let reporter = Reporter::new(opts.progress, runs.len(), work, "replay", "replay", "calls");
    call::replay_batch(opts, &items, |i, rows: Rows, args: Vec<HtmlArg>, seconds| {
        let (o, clones) = runs[i];
        reporter.tick(job.calls[o].cost, read_bytes(job, o, opts.config.data_mode));
        let mut record = CallRecord::new(job.place(o), keys[&o].clone(), None, &rows, &args, &stack(o));
        record.seconds = Some(seconds);
        let copies: Vec<CallRecord> = clones.iter().map(|&c| share(&record, c)).collect();
        emit(record);
        copies.into_iter().for_each(&emit);
    });
    reporter.finish();
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

/// The bytes of the tensor files a call read (none with random data).
fn read_bytes(job: &Job, o: usize, data_mode: DataMode) -> u64 {
    let c = &job.calls[o];
    match (data_mode, job.dumps[c.dump].source.data_dir()) {
        (DataMode::Real, Some(dir)) => c.files.iter().filter_map(|f| std::fs::metadata(dir.join(f)).ok()).map(|m| m.len()).sum(),
        _ => 0,
    }
}

/// The stacks of every dump of the shard, and the notes of those without
/// (each once, in order).
fn stack_views(job: &Job, mine: &[usize]) -> (HashMap<usize, StackView>, Vec<String>) {
    let mut shard_dumps: Vec<usize> = mine.iter().map(|&o| job.calls[o].dump).collect();
    shard_dumps.dedup();
    let views: HashMap<usize, StackView> = shard_dumps.par_iter().map(|&d| (d, StackView::new(job.dumps[d].source.stacks()))).collect();
    let mut notes: Vec<String> = vec![];
    for d in &shard_dumps {
        let note = &views[d].note;
        if !note.is_empty() && !notes.contains(note) {
            notes.push(note.clone());
        }
    }
    (views, notes)
}

/// The identity key of each call to do: only candidates (a class with
/// several calls in the shard) have their files hashed; `None` for a call
/// with no identical twin possible.
fn identity_keys(opts: &Options, job: &Job, mine: &[usize], todo: &[usize]) -> HashMap<usize, Option<String>> {
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
    todo.par_iter().map(|&o| (o, key_of(o))).collect()
}

/// Who judges each call to do, with the identical calls that share its
/// verdict: an earlier run's record of the same key, or the first call of
/// its key replayed now.
fn plan(todo: &[usize], keys: &HashMap<usize, Option<String>>, done: &[CallRecord]) -> Vec<(Judge, Vec<usize>)> {
    let earlier: HashMap<&str, usize> =
        done.iter().enumerate().filter(|(_, r)| r.shares.is_none()).filter_map(|(i, r)| r.key.as_deref().map(|k| (k, i))).collect();
    let mut plan: Vec<(Judge, Vec<usize>)> = vec![];
    let mut by_key: HashMap<&str, usize> = HashMap::new();
    for &o in todo {
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
    plan
}
