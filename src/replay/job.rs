//! A `--dump` replay's input as one job: every dump the root stands for
//! ([`crate::source::job_dumps`]), each opened by the source layer with its
//! own tensor folder, and every selected call in the job order (steps,
//! ranks, then the dump's own order), with what sharding and deduplication
//! need to know of it before anything runs: its estimated cost
//! ([`super::cost`]) and its candidates' key ([`super::dedupe`]). Each
//! dump is identified by its path under the root, size and sha256.

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;

use super::error::ReplayError;
use super::options::Options;
use super::part::{DumpId, Place};
use super::{cost, dedupe, select};
use crate::config::DataMode;
use crate::model::{ApiName, Direction};
use crate::select::ApiSelector;
use crate::source::{self, Group, JobDump, Source, SourceError};
use crate::unreadable::Unreadable;

/// One dump of the job, opened.
pub(super) struct Dump {
    /// Where it lies in the job.
    pub at: JobDump,
    /// The opened dump.
    pub source: Source,
    /// Its calls the filter matched.
    pub groups: Vec<Group>,
}

/// One call of the job.
pub(super) struct Call {
    /// Its dump, an index into [`Job::dumps`].
    pub dump: usize,
    /// Its group in that dump.
    pub group: usize,
    /// The direction it is replayed in.
    pub direction: Direction,
    /// Its estimated cost (0 when its entries cannot be typed: it is then a skip row).
    pub cost: u64,
    /// Its candidates' key, when its entries could be read.
    pub class: Option<String>,
    /// The tensor files its entries name.
    pub files: Vec<String>,
}

/// A job: its dumps and its calls in job order.
pub(super) struct Job {
    /// A job root or a step folder (rows name their step and rank).
    pub whole: bool,
    /// The dumps, in job order.
    pub dumps: Vec<Dump>,
    /// The calls, in job order: a call's ordinal is its index here.
    pub calls: Vec<Call>,
    /// The dumps' identities, in job order.
    pub ids: Vec<DumpId>,
}

impl Job {
    /// Opens every dump under `root` and lists the calls `selector`'s
    /// filter takes in `opts`'s directions; an error when the job has none.
    pub fn open(opts: &Options, root: &Path, selector: &ApiSelector) -> Result<Job, ReplayError> {
        let layout = source::job_dumps(root);
        let want = |n: &ApiName| selector.matches(n);
        let opened: Vec<(Source, Vec<Group>)> =
            layout.dumps.par_iter().map(|d| Source::open(&d.file, opts.framework, opts.config.data_mode, &want)).collect::<Result<_, SourceError>>()?;
        let ids: Vec<DumpId> = layout
            .dumps
            .par_iter()
            .map(|d| {
                let (size, sha256) = dedupe::hash_file(&d.file).map_err(Unreadable::at(&d.file, "cannot read"))?;
                Ok(DumpId { path: d.relative.to_string_lossy().into_owned(), size, sha256 })
            })
            .collect::<Result<_, ReplayError>>()?;
        let dumps: Vec<Dump> = layout.dumps.into_iter().zip(opened).map(|(at, (source, groups))| Dump { at, source, groups }).collect();
        let (mut picked, mut selected) = (vec![], 0);
        for (i, d) in dumps.iter().enumerate() {
            let (calls, n) = select::directions(&d.groups, opts.propagation);
            selected += n;
            picked.extend(calls.into_iter().map(|(g, direction)| (i, g, direction)));
        }
        if picked.is_empty() {
            let what = if layout.whole { root.to_path_buf() } else { dumps[0].at.file.clone() };
            return Err(select::nothing_selected(&what, selected));
        }
        let calls = picked
            .into_par_iter()
            .map(|(dump, group, direction)| {
                let d = &dumps[dump];
                let g = &d.groups[group];
                let entries = d.source.read(g).ok();
                let typed = entries.as_ref().and_then(|e| d.source.call(e).ok());
                let cost = typed.as_ref().map_or(0, |c| cost::estimate(c, direction, iterations(opts)));
                let identity = entries.map(|e| e.identity());
                let class = identity.as_ref().map(|(json, _)| dedupe::class_key(&g.name, direction, d.source.framework(), json));
                let files = identity.map(|(_, files)| files).unwrap_or_default();
                Call { dump, group, direction, cost, class, files }
            })
            .collect();
        Ok(Job { whole: layout.whole, dumps, calls, ids })
    }

    /// The name of a call.
    pub fn name(&self, ordinal: usize) -> &ApiName {
        let c = &self.calls[ordinal];
        &self.dumps[c.dump].groups[c.group].name
    }

    /// A call's place in the job, as its record states it.
    pub fn place(&self, ordinal: usize) -> Place {
        let c = &self.calls[ordinal];
        let at = &self.dumps[c.dump].at;
        Place { ordinal, step: at.step, rank: at.rank, api: self.name(ordinal).to_string(), direction: c.direction.as_str().into() }
    }

    /// The units `--shard` partitions, in job order of their first call:
    /// the calls with the same candidates' key together, the others alone;
    /// with their costs (one replay for random data, where equal keys are
    /// identical calls; each call's own with real data, whose files may
    /// still differ).
    pub fn units(&self, data_mode: DataMode) -> (Vec<Vec<usize>>, Vec<u64>) {
        let mut units: Vec<Vec<usize>> = vec![];
        let mut by_class: HashMap<&str, usize> = HashMap::new();
        for (i, c) in self.calls.iter().enumerate() {
            match c.class.as_deref() {
                Some(k) => match by_class.get(k) {
                    Some(&u) => units[u].push(i),
                    None => {
                        by_class.insert(k, units.len());
                        units.push(vec![i]);
                    }
                },
                None => units.push(vec![i]),
            }
        }
        let costs = units
            .iter()
            .map(|u| match data_mode {
                DataMode::Random => self.calls[u[0]].cost,
                DataMode::Real => u.iter().map(|&i| self.calls[i].cost).fold(0, u64::saturating_add),
            })
            .collect();
        (units, costs)
    }
}

/// The runs a call's replay makes (real data is read once).
fn iterations(opts: &Options) -> u32 {
    match opts.config.data_mode {
        DataMode::Random => opts.config.iter_times,
        DataMode::Real => 1,
    }
}
