//! `config_check -c CKPT1 CKPT2`: msprobe's Megatron checkpoint compare
//! (`core/config_check/ckpt_compare/`), without Python and without running
//! any code a checkpoint's pickle names.
//!
//! Each checkpoint's iteration folder and parallel layout are found
//! ([`layout`]), the pickles of its rank files read and its parameters
//! planned ([`merge::plan`]: names, TP joins, global layer and expert
//! indices); then each parameter present in both is read, merged and
//! compared ([`metrics`]), in parallel, one parameter's shards in memory at
//! a time per thread. The result ([`report`]) is written through the one
//! atomic writer, only after every parameter was compared: a broken input
//! leaves no file, and an existing output file is refused, never replaced.

mod error;
pub mod layout;
pub mod merge;
pub mod metrics;
mod options;
pub mod report;

pub use error::CheckpointError;
pub use layout::is_checkpoint_dir;
pub use options::Options;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use runtime::atomic::{write_atomic, WriteError, WriteOptions};
use runtime::limits::Limits;

use crate::schedule;
use metrics::Metrics;

/// What a compare found and wrote.
#[derive(Debug)]
pub struct Outcome {
    /// The result file.
    pub output: PathBuf,
    /// Parameters compared (present in both).
    pub compared: usize,
    /// Compared parameters whose values or shapes differ (`l2` not 0).
    pub differing: usize,
    /// Parameters only in the first, only in the second checkpoint.
    pub only: [Vec<String>; 2],
    /// Replicated parameters whose TP ranks disagree, per checkpoint.
    pub inconsistent: [Vec<String>; 2],
    /// Compared parameters with exactly one all-zero side (`cos` null).
    pub zero_norm: Vec<String>,
    /// Wall time of the whole compare.
    pub elapsed: Duration,
}

/// Compares the checkpoints `opts.bench` and `opts.cmp` and writes `opts.output`.
pub fn run(opts: &Options) -> Result<Outcome, CheckpointError> {
    let start = Instant::now();
    refuse_existing(&opts.output)?;
    let (bench, cmp) = rayon::join(|| plan(&opts.bench), || plan(&opts.cmp));
    let (bench, cmp) = (bench?, cmp?);
    let names = |params: &[merge::Param]| params.iter().map(|p| p.name.clone()).collect::<HashSet<String>>();
    let (in_bench, in_cmp) = (names(&bench), names(&cmp));
    let by_name: HashMap<&str, &merge::Param> = cmp.iter().map(|c| (c.name.as_str(), c)).collect();
    let pairs: Vec<(&merge::Param, &merge::Param)> = bench.iter().filter_map(|b| by_name.get(b.name.as_str()).map(|&c| (b, c))).collect();
    let budget = Limits::from_available_memory().memory_budget;
    let mut rows = Vec::with_capacity(pairs.len());
    for batch in schedule::batches(&pairs, pair_bytes, budget) {
        let done = batch
            .par_iter()
            .map(|(b, c)| {
                let (mb, mc) = (merge::materialize(b)?, merge::materialize(c)?);
                let m = metrics::metrics(&mb.shape, &mb.values, &mc.shape, &mc.values);
                Ok((b.name.clone(), m, [mb.inconsistent, mc.inconsistent]))
            })
            .collect::<Result<Vec<(String, Metrics, [bool; 2])>, CheckpointError>>()?;
        rows.extend(done);
    }

    let only = [
        bench.iter().filter(|p| !in_cmp.contains(&p.name)).map(|p| p.name.clone()).collect(),
        cmp.iter().filter(|p| !in_bench.contains(&p.name)).map(|p| p.name.clone()).collect(),
    ];
    let inconsistent = [0, 1].map(|side| rows.iter().filter(|r| r.2[side]).map(|r| r.0.clone()).collect());
    let zero_norm = rows.iter().filter(|r| r.1.cos.is_none() && r.1.l2.is_some()).map(|r| r.0.clone()).collect();
    let differing = rows.iter().filter(|r| r.1.l2 != Some(0.0)).count();
    let rows: Vec<(String, Metrics)> = rows.into_iter().map(|(n, m, _)| (n, m)).collect();
    let text = report::render(&rows);
    refuse_existing(&opts.output)?;
    write_atomic(&opts.output, text.as_bytes(), WriteOptions::REPORT)?;
    Ok(Outcome { output: opts.output.clone(), compared: rows.len(), differing, only, inconsistent, zero_norm, elapsed: start.elapsed() })
}

/// The bytes comparing a pair holds at its peak, by estimate: each side's
/// shards and their merged copy, as float32.
fn pair_bytes((b, c): &(&merge::Param, &merge::Param)) -> u64 {
    let side = |p: &merge::Param| p.shards.iter().map(|s| s.shape().iter().fold(1u64, |n, &d| n.saturating_mul(d as u64))).fold(0u64, u64::saturating_add);
    side(b).saturating_add(side(c)).saturating_mul(4 * 2)
}

/// The parameters of one checkpoint.
fn plan(path: &Path) -> Result<Vec<merge::Param>, CheckpointError> {
    merge::plan(&layout::layout(path)?)
}

/// msprobe refuses an output path that exists (a file, folder or link).
fn refuse_existing(output: &Path) -> Result<(), WriteError> {
    if output.symlink_metadata().is_ok() {
        let source = std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the output exists; it is never overwritten (remove it or choose another -o)");
        return Err(WriteError { path: output.to_path_buf(), source });
    }
    Ok(())
}
