//! What a replay produced: its rows, files and part, and its exit code.

use std::path::PathBuf;

use runtime::compare::Status;
use runtime::exit;
use runtime::replay::Rows;
use runtime::standard::Standard;

use crate::select::Shard;

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
    /// The job's API entries (every dump's, any prefix).
    pub entries: usize,
    /// The job's entries that get rows: a call replayed backward has its
    /// forward and backward entries judged, one replayed forward its forward.
    pub with_rows: usize,
    /// The entries under prefixes never replayed natively, per prefix.
    pub named: std::collections::BTreeMap<&'static str, usize>,
    /// Entries that are neither an API call's nor a module's.
    pub strays: usize,
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
    /// The standard the rows were judged by (the summary names it).
    pub standard: Standard,
    /// With `--from-compare`: the differing calls, own errors and inherited.
    pub blame: Option<super::blame::BlameReport>,
    /// With `--minimize`: the failing calls shrunk, and their repros.
    pub minimize: Option<super::minimize::MinimizeReport>,
}

impl ReplayReport {
    /// A report of nothing replayed (`--from-compare` with no differing call in the dump).
    pub fn empty(standard: Standard) -> ReplayReport {
        ReplayReport { rows: Rows::default(), files: None, html: None, part: None, merge_hint: None, standard, blame: None, minimize: None }
    }

    /// How many details rows have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.rows.details.iter().filter(|r| r.status == status).count()
    }

    /// [`exit::INACCURATE`] when `--from-compare` found an own error or some row is an error, else [`exit::SKIPPED`]
    /// when some is a skip (unless `--allow-skip`), else 0. A shard of
    /// several that completed its part exits 0: the verdict is the merge's
    /// (so a job engine's dependent merge step runs).
    pub fn exit_code(&self, allow_skip: bool) -> u8 {
        if self.blame.as_ref().is_some_and(|b| b.culprits().next().is_some()) {
            return exit::INACCURATE;
        }
        if self.files.is_none() && self.part.is_some() {
            return exit::OK;
        }
        exit::for_statuses(self.rows.details.iter().map(|r| r.status), allow_skip)
    }
}
