//! The one writer of msprobe's accuracy CSVs,
//! `accuracy_checking_details_<stamp>.csv` and
//! `accuracy_checking_result_<stamp>.csv`, byte for byte as the generated
//! Python scripts write them (`write_report` in
//! `python/msprobe_rs/repro/compare.py`): same headers, cells, quoting, BOM,
//! line ends, file names and permissions, and the same atomic write.

mod csv;
mod effect;
mod html;
mod stamp;
mod table;

pub use effect::{any_effect, call_effects, call_of, Shares};
pub use html::{render_html, write_html, HtmlArg, HtmlCall, HtmlCulprit, HtmlFrame, HtmlReport};
pub use table::{ranked, ranked_table, RankBy};

use std::fs;
use std::path::{Path, PathBuf};

use crate::atomic::{write_atomic, WriteOptions};
use crate::compare::Status;
use crate::standard::Standard;

/// Seconds tried past now before giving up on a free file name.
const MAX_STAMP_STEPS: i64 = 100_000;

/// One row of the details CSV: one compared output (or one failed call).
#[derive(Debug, Clone, PartialEq)]
pub struct DetailRow {
    /// `<API>.<forward|backward>.output.<i>`, or `<API>.<direction>` for a failed call.
    pub api_name: String,
    /// Bench dtype (`torch.float32`), `None` when no output was compared.
    pub bench_dtype: Option<String>,
    /// Tested dtype, `None` when no output was compared.
    pub tested_dtype: Option<String>,
    /// Bench shape, `None` when no output was compared.
    pub shape: Option<Vec<usize>>,
    /// Cosine similarity, `None` when not computed.
    pub cosine: Option<f64>,
    /// Max absolute error, `None` when not computed.
    pub max_abs: Option<f64>,
    /// Max relative error, `None` when not computed.
    pub max_rel: Option<f64>,
    /// The verdict.
    pub status: Status,
    /// Why it is not a pass, notes, and what was compared (tested and bench sides).
    pub message: String,
    /// The standard's rule that judged it (`absolute threshold`, ...), empty when none did.
    pub rule: String,
    /// The rule's own metrics (`name=value; ...`), empty when none.
    pub metrics: String,
    /// The element-wise relative errors binned by the metric pass
    /// ([`crate::compare::Metrics::rel_hist`]); not in the CSVs (the HTML report shows it).
    pub hist: Option<Vec<u64>>,
    /// Whose values the tested side held, `None` when nothing was compared:
    /// the summaries count device-judged and emulation-judged rows apart.
    pub tested_on: Option<TestedOn>,
    /// The first-order effect of this output's own error on the loss,
    /// `<dL/dy, y_device - y_bench>`, where the dump recorded the device's
    /// output and the loss's gradient with respect to it (forward rows).
    pub effect: Option<f64>,
    /// What rounding the exact output once can move the loss by (the
    /// rulebook's `loss_effect.noise_roundoffs`): an effect within it is noise.
    pub effect_noise: Option<f64>,
    /// Why a forward row has no effect, or why its estimate is unreliable; empty otherwise.
    pub effect_note: String,
    /// On a loss op's scalar forward output: the recorded loss and the
    /// recorded gradient at it (1 unless the loss was scaled).
    pub loss: Option<(f64, f64)>,
}

/// Whose values a compared row's tested side holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestedOn {
    /// A device's own values (recorded in the dump).
    Device,
    /// The emulated device's (random data, or a value the dump lacks).
    Emulated,
}

/// The summaries' split of `rows` judged under `standard`: how many were
/// judged on recorded device values and how many on an emulated device,
/// each with the standard that judged it.
pub fn tested_split(rows: &[DetailRow], standard: Standard) -> String {
    let n = |on| rows.iter().filter(|r| r.tested_on == Some(on)).count();
    format!(
        "{} judged on recorded device values ({} standard), {} on an emulated device ({} standard)",
        n(TestedOn::Device),
        standard.for_row(false).as_str(),
        n(TestedOn::Emulated),
        standard.for_row(true).as_str()
    )
}

impl DetailRow {
    /// A row that compared nothing: a call that failed or was skipped.
    pub fn uncompared(api_name: String, status: Status, message: String) -> DetailRow {
        DetailRow {
            api_name,
            bench_dtype: None,
            tested_dtype: None,
            shape: None,
            cosine: None,
            max_abs: None,
            max_rel: None,
            status,
            message,
            rule: String::new(),
            metrics: String::new(),
            hist: None,
            tested_on: None,
            effect: None,
            effect_noise: None,
            effect_note: String::new(),
            loss: None,
        }
    }
}

/// One row of the result CSV: the verdicts of one replay of an API.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRow {
    /// `Prefix.op.N`.
    pub api_name: String,
    /// Verdict over the forward rows; `None` when there were none.
    pub forward: Option<Status>,
    /// Verdict over the backward rows; `None` when there were none.
    pub backward: Option<Status>,
    /// The failing rows' messages, `<name>: <message>` joined by `"; "`.
    pub message: String,
}

/// The report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The OS refused to create the folder or a file.
    #[error("{}: cannot write the report: {source}", path.display())]
    Write {
        /// The folder or file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Every stamp tried already names a report.
    #[error("{}: expected a free report file name, but {MAX_STAMP_STEPS} consecutive stamps are taken", dir.display())]
    NoFreeName {
        /// The output folder.
        dir: PathBuf,
    },
}

/// The cells of the two columns a job's replay appends to both CSVs
/// (the rulebook's `csv.job`): each row's step and rank (`0`, `3`; empty when its
/// folder has no number), one pair per row.
#[derive(Debug, Clone, Copy)]
pub struct JobColumns<'a> {
    /// One `[step, rank]` per details row.
    pub details: &'a [[String; 2]],
    /// One `[step, rank]` per result row.
    pub results: &'a [[String; 2]],
}

/// Writes both CSVs into `dir` (with `Standard::Api` and `Standard::Bound`, the details carry
/// the rulebook's two `csv.standard` columns after msprobe's nine; every
/// column name is the rulebook's, [`crate::rulebook`]) (created with mode 0o750 if missing) and
/// returns their paths as `(details, result)`. The stamp is the local time
/// now, advanced a second at a time until neither name exists, so a run
/// never overwrites an earlier report; each file is written to a temporary
/// sibling and renamed into place (mode 0o640, synced; see [`crate::atomic`]),
/// details first.
pub fn write_report(dir: impl AsRef<Path>, details: &[DetailRow], results: &[ResultRow], standard: Standard) -> Result<(PathBuf, PathBuf), ReportError> {
    write_job_report(dir, details, results, standard, None, false)
}

/// [`write_report`], with a job's `Step` and `Rank` columns last in both
/// CSVs when `job` is given, and with `effects`, when a row has a loss
/// effect, the rulebook's three `csv.effect` columns ([`Shares`]) after
/// the details' others (before Step and Rank).
pub fn write_job_report(
    dir: impl AsRef<Path>,
    details: &[DetailRow],
    results: &[ResultRow],
    standard: Standard,
    job: Option<JobColumns>,
    effects: bool,
) -> Result<(PathBuf, PathBuf), ReportError> {
    let dir = dir.as_ref();
    create_dir(dir)?;
    let (details_path, result_path) = free_names(dir, stamp::now())?;
    let write =
        |path: &Path, bytes: Vec<u8>| write_atomic(path, &bytes, WriteOptions::REPORT).map_err(|e| ReportError::Write { path: e.path, source: e.source });
    // msprobe's nine columns, unless the standard is another than msprobe's own.
    let extended = !matches!(standard, Standard::Msprobe | Standard::Default);
    let columns = &crate::rulebook::get().csv;
    let names = |list: &'static [String]| list.iter().map(String::as_str);
    let mut header: Vec<&str> = names(&columns.details).collect();
    if extended {
        header.extend(names(&columns.standard));
    }
    let shares = (effects && any_effect(details)).then(|| Shares::of(details));
    if shares.is_some() {
        header.extend(names(&columns.effect));
    }
    let mut result_header: Vec<&str> = names(&columns.result).collect();
    if job.is_some() {
        header.extend(names(&columns.job));
        result_header.extend(names(&columns.job));
    }
    let tagged = |mut cells: Vec<String>, tags: Option<&[String; 2]>| {
        cells.extend(tags.into_iter().flatten().cloned());
        cells
    };
    let detail_rows: Vec<Vec<String>> = details
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut c = detail_cells(r);
            if extended {
                c.extend([r.rule.clone(), r.metrics.clone()]);
            }
            if let Some(s) = &shares {
                c.extend(s.cells(r));
            }
            tagged(c, job.and_then(|j| j.details.get(i)))
        })
        .collect();
    let result_rows: Vec<Vec<String>> = results.iter().enumerate().map(|(i, r)| tagged(result_cells(r), job.and_then(|j| j.results.get(i)))).collect();
    write(&details_path, csv::encode(&header, &detail_rows))?;
    write(&result_path, csv::encode(&result_header, &result_rows))?;
    Ok((details_path, result_path))
}

/// Writes one more table of a replay (`<prefix>_<stamp>.csv` in `dir`,
/// stamped as the accuracy CSVs are, at a free name) with the same CSV
/// form (BOM, quoting, CRLF, spreadsheet-safe cells) and the same atomic
/// write; returns its path.
pub fn write_table(dir: &Path, prefix: &str, header: &[&str], rows: &[Vec<String>]) -> Result<PathBuf, ReportError> {
    create_dir(dir)?;
    let now = stamp::now();
    let path = (0..MAX_STAMP_STEPS)
        .map(|step| dir.join(format!("{prefix}_{}.csv", stamp::local_stamp(now.saturating_add(step)))))
        .find(|p| !p.exists())
        .ok_or_else(|| ReportError::NoFreeName { dir: dir.to_path_buf() })?;
    write_atomic(&path, &csv::encode(header, rows), WriteOptions::REPORT).map_err(|e| ReportError::Write { path: e.path, source: e.source })?;
    Ok(path)
}

/// The default HTML report path in `dir`: `replay_report_<stamp>.html`,
/// stamped with the local time now as the CSVs are.
pub fn default_html_path(dir: &Path) -> PathBuf {
    dir.join(format!("replay_report_{}.html", stamp::local_stamp(stamp::now())))
}

/// The local time now as the reports stamp it (`YYYYMMDDHHMMSS`).
pub fn stamp_now() -> String {
    stamp::local_stamp(stamp::now())
}

/// The first pair of names, from the stamp of `now` on, of which neither exists.
fn free_names(dir: &Path, now: i64) -> Result<(PathBuf, PathBuf), ReportError> {
    (0..MAX_STAMP_STEPS)
        .map(|step| {
            let stamp = stamp::local_stamp(now.saturating_add(step));
            (dir.join(format!("accuracy_checking_details_{stamp}.csv")), dir.join(format!("accuracy_checking_result_{stamp}.csv")))
        })
        .find(|(d, r)| !d.exists() && !r.exists())
        .ok_or_else(|| ReportError::NoFreeName { dir: dir.to_path_buf() })
}

fn detail_cells(r: &DetailRow) -> Vec<String> {
    vec![
        r.api_name.clone(),
        csv::text(r.bench_dtype.as_deref()),
        csv::text(r.tested_dtype.as_deref()),
        r.shape.as_deref().map(csv::shape).unwrap_or_default(),
        csv::float(r.cosine),
        csv::float(r.max_abs),
        csv::float(r.max_rel),
        r.status.as_str().into(),
        r.message.clone(),
    ]
}

fn result_cells(r: &ResultRow) -> Vec<String> {
    vec![r.api_name.clone(), csv::text(r.forward.map(Status::as_str)), csv::text(r.backward.map(Status::as_str)), r.message.clone()]
}

/// `os.makedirs(dir, mode=0o750, exist_ok=True)`: parents get the default
/// mode, the folder itself 0o750 (less the umask).
fn create_dir(dir: &Path) -> Result<(), ReportError> {
    let err = |source| ReportError::Write { path: dir.to_path_buf(), source };
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(err)?;
    }
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o750);
    match builder.create(dir) {
        Err(e) if !(e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir()) => Err(err(e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taken_stamps_advance_one_second_until_both_names_are_free() {
        let dir = tempfile::tempdir().unwrap();
        let now = 1_700_000_058; // crosses a minute boundary on the way
        let stamp = |k| stamp::local_stamp(now + k);
        // Second 0: both taken; 1: only details; 2: only result; 3: free.
        for (k, kind) in [(0, "details"), (0, "result"), (1, "details"), (2, "result")] {
            fs::write(dir.path().join(format!("accuracy_checking_{kind}_{}.csv", stamp(k))), b"taken").unwrap();
        }
        let (d, r) = free_names(dir.path(), now).unwrap();
        assert_eq!(d, dir.path().join(format!("accuracy_checking_details_{}.csv", stamp(3))));
        assert_eq!(r, dir.path().join(format!("accuracy_checking_result_{}.csv", stamp(3))));
    }
}
