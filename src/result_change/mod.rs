//! `result_change`: why a training run's loss or gradients change when the
//! probe is on (the seed's document 36). Runs the user's training command
//! once per [`Variant`] in a fresh process (baseline twice, then forced
//! synchronisation, module hooks, API wrappers), compares what
//! `msprobe_rs.ResultChange` recorded with run 1 bit for bit, rank by rank,
//! and writes the verdict with the document's conclusion.

pub mod compare;
pub mod error;
pub mod runs;
pub mod verdict;

use std::path::PathBuf;

pub use error::ResultChangeError;
pub use runs::{Ranks, TrainCommand, Variant};
pub use verdict::Verdict;

use runtime::atomic::{create_dir, write_atomic, WriteOptions};
use runtime::spec::Framework;

/// A validated `result_change` command line.
#[derive(Debug, Clone)]
pub struct Options {
    /// The framework ResultChange records (`MSPROBE_RC_FRAMEWORK`): PyTorch or MindSpore.
    pub framework: Framework,
    /// The training command and its arguments.
    pub command: TrainCommand,
    /// Folder of `result_change_<timestamp>.json` (created if missing).
    pub output: PathBuf,
    /// Record the hash of every op's output (`--ops`).
    pub ops: bool,
}

/// The verdict and the file it was written to.
#[derive(Debug)]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// `OUT/result_change_<timestamp>.json`.
    pub file: PathBuf,
}

/// Runs the variants, compares them and writes the verdict. Nothing is
/// written when a run fails; the other variants are not run once the
/// baseline is not reproducible.
pub fn run(opts: &Options) -> Result<Outcome, ResultChangeError> {
    let baseline = runs::run_once(opts, 1, Variant::Baseline)?;
    let check = |run: usize, variant: Variant| -> Result<compare::Difference, ResultChangeError> {
        let ranks = runs::run_once(opts, run, variant)?;
        let numbers = |r: &runs::Ranks| r.keys().copied().collect::<Vec<_>>();
        if numbers(&ranks) != numbers(&baseline) {
            return Err(ResultChangeError::RankSet { run, variant: variant.as_str(), got: numbers(&ranks), expected: numbers(&baseline) });
        }
        for (rank, steps) in &baseline {
            let got = ranks[rank].len();
            if got != steps.len() {
                return Err(ResultChangeError::StepCount { run, variant: variant.as_str(), rank: *rank, got, expected: steps.len() });
            }
        }
        Ok(compare::compare_ranks(&baseline, &ranks))
    };
    let repeat = check(2, Variant::Baseline)?;
    let mut variants = Vec::new();
    if repeat.changed.is_empty() {
        for (i, variant) in Variant::COMPARED.into_iter().enumerate() {
            variants.push((variant, check(i + 3, variant)?));
        }
    }
    let steps = baseline.values().map(Vec::len).max().unwrap_or(0);
    let verdict = Verdict::new(steps, baseline.len(), repeat, variants);
    create_dir(&opts.output)?;
    let ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let file = opts.output.join(format!("result_change_{ns}.json"));
    let text = serde_json::to_string_pretty(&verdict.to_json()).expect("a verdict is plain JSON");
    write_atomic(&file, format!("{text}\n").as_bytes(), WriteOptions::REPORT)?;
    Ok(Outcome { verdict, file })
}
