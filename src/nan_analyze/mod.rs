//! `nan_analyze`: finds the first op whose inputs are finite and whose
//! output holds NaN or Inf in a multi-rank step, following the anomaly
//! back through the communication ops (msprobe 8.3.2's `nan_analyze`).
//!
//! [`ranks`] finds the rank folders; [`walk`] streams each rank's dump once
//! (through [`crate::source::ops`]) into the ops the phases need; [`graph`]
//! connects the communication ops across ranks; [`search`] runs the three
//! phases; [`report`] writes what was found, with [`construct`] and
//! `stack.json` ([`crate::source::stack`]) read from each rank's folder.

pub mod construct;
mod error;
pub mod graph;
mod options;
pub mod ranks;
pub mod report;
pub mod search;
pub mod walk;

use std::path::PathBuf;

use rayon::prelude::*;

pub use error::AnalyzeError;
pub use options::Options;

use crate::source::stack::StackFile;
use construct::Construct;
use report::RankFiles;
use search::Phase;

/// What a run found.
#[derive(Debug)]
pub struct Outcome {
    /// The ranks, sorted.
    pub ranks: Vec<i64>,
    /// The ranks whose dump holds no entry.
    pub without_data: Vec<i64>,
    /// The last phase that ran (the one that found the report's ops).
    pub last_phase: Phase,
    /// The communication ops that found no peer (`{rank}.{op name}`).
    pub unconnected: Vec<String>,
    /// The report written, when an anomaly was found.
    pub report: Option<PathBuf>,
}

/// Reads every rank (dumps streamed, in parallel), runs the phases, and
/// writes the report when one finds an anomalous op. Every input is read
/// and checked before anything is written.
pub fn run(opts: &Options) -> Result<Outcome, AnalyzeError> {
    let dirs = ranks::discover(&opts.input)?;
    let read: Vec<(walk::RankOps, Construct, StackFile)> = dirs
        .par_iter()
        .map(|d| {
            let ops = walk::walk(d.rank, &d.dump)?;
            Ok((ops, Construct::read(&d.construct)?, StackFile::read(&d.stack)?))
        })
        .collect::<Result<_, AnalyzeError>>()?;
    let ranks: Vec<i64> = dirs.iter().map(|d| d.rank).collect();
    let without_data = dirs.iter().zip(&read).filter(|(_, (ops, _, _))| ops.empty).map(|(d, _)| d.rank).collect();
    let (ops, files): (Vec<_>, Vec<_>) = read.into_iter().map(|(o, c, s)| (o, (c, s))).unzip();
    let found = search::search(&ranks, ops);
    let report = match found.phase {
        None => None,
        Some(_) => {
            let files: Vec<RankFiles> = dirs.iter().zip(&files).map(|(d, (c, s))| RankFiles { rank: d.rank, dump: &d.dump, construct: c, stack: s }).collect();
            let text = report::render(&found.nodes, &files)?;
            Some(report::write(&opts.output, &text)?)
        }
    };
    let last_phase = found.phase.unwrap_or(Phase::After);
    Ok(Outcome { ranks, without_data, last_phase, unconnected: found.unconnected, report })
}
