//! The records of a replay (one run's, or a job's merged parts) as
//! msprobe's two CSVs, with each row's `Step` and `Rank` for a job root or
//! a step folder, and, with `--html`, the page: the one path from records
//! to files, so a merge writes what the unsharded run writes.

use std::path::{Path, PathBuf};

use runtime::replay::Rows;
use runtime::report::{write_job_report, JobColumns};
use runtime::standard::Standard;

use super::error::ReplayError;
use super::html::{self, Page};
use super::part::CallRecord;

/// The report files written.
pub(super) struct Written {
    /// All rows, in job order.
    pub rows: Rows,
    /// The CSVs: (details, result).
    pub files: (PathBuf, PathBuf),
    /// The page, with `--html`.
    pub html: Option<PathBuf>,
}

/// A cell of the Step and Rank columns: the folder's number.
fn cell(n: Option<u64>) -> String {
    n.map(|n| n.to_string()).unwrap_or_default()
}

/// Writes the CSVs of `records` (in job order) into `out`, with the Step
/// and Rank columns when `whole`, the loss effect columns with `effects`
/// (a dump's replay) when a row has an effect, and the page when `html`
/// says where.
pub(super) fn write(
    out: &Path,
    standard: Standard,
    (whole, effects): (bool, bool),
    records: &[CallRecord],
    html: Option<(&Option<PathBuf>, Page)>,
) -> Result<Written, ReplayError> {
    let (rows, calls) = html::join(records);
    let mut tags: (Vec<[String; 2]>, Vec<[String; 2]>) = (vec![], vec![]);
    if whole {
        for r in records {
            let tag = [cell(r.place.step), cell(r.place.rank)];
            let own = r.rows();
            tags.0.extend(std::iter::repeat_n(tag.clone(), own.details.len()));
            tags.1.extend(std::iter::repeat_n(tag, own.results.len()));
        }
    }
    let job = whole.then_some(JobColumns { details: &tags.0, results: &tags.1 });
    let files = write_job_report(out, &rows.details, &rows.results, standard, job, effects)?;
    let html = match html {
        Some((target, page)) => Some(html::write(&page, target, &rows, calls)?),
        None => None,
    };
    Ok(Written { rows, files, html })
}
