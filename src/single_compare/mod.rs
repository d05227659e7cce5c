//! `single_compare`: msprobe's `SingleComparator` (there it is a Python API
//! only). Two SingleSave runs (`DIR/data/<key>/step<N>/rank<R>/
//! micro_step<M>/*.npy`) are compared array by array, in parallel; each key
//! gets `<key>.xlsx` with msprobe's columns, one row per array of either
//! run, sorted by (step, rank, micro_step, id).
//!
//! Both runs are discovered ([`discover`]), then every row is read and
//! computed ([`row`], [`metrics`]) before anything is written: a broken
//! input (a bad folder name, a symlink out of the run, an unreadable or
//! truncated `.npy`) fails the command with nothing written, not even the
//! output folder. The workbooks ([`crate::xlsx`], one per key, its rows'
//! cells in one unnamed sheet) are then written through the atomic writer,
//! so each file is whole.

pub mod discover;
mod error;
pub mod metrics;
mod options;
pub mod row;

pub use error::CompareError;
pub use options::Options;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use runtime::atomic::{create_dir, write_atomic, WriteError, WriteOptions};

use crate::xlsx::{self, Table};
use discover::{discover, Key};
use row::{Note, Row};

/// What a compare found and wrote.
#[derive(Debug)]
pub struct Outcome {
    /// The workbooks written, one per key, in key order.
    pub files: Vec<PathBuf>,
    /// Rows written, over all keys.
    pub rows: usize,
    /// Compared rows that are not identical (some element differs).
    pub differing: usize,
    /// Rows whose shapes differ.
    pub shapes_differ: usize,
    /// Rows of an array found only in the first, only in the second run.
    pub one_sided: [usize; 2],
    /// Keys found only in the first, only in the second run.
    pub keys_only: [Vec<String>; 2],
    /// Wall time of the whole compare.
    pub elapsed: Duration,
}

/// Compares the runs `opts.dir1` and `opts.dir2` and writes the workbooks.
pub fn run(opts: &Options) -> Result<Outcome, CompareError> {
    let start = Instant::now();
    if opts.output_path.exists() && !opts.output_path.is_dir() {
        let source = std::io::Error::new(std::io::ErrorKind::AlreadyExists, "expected a folder, found a file");
        return Err(WriteError { path: opts.output_path.clone(), source }.into());
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(opts.jobs).build().map_err(CompareError::ThreadPool)?;
    pool.install(|| compare(opts, start))
}

fn compare(opts: &Options, start: Instant) -> Result<Outcome, CompareError> {
    let (run1, run2) = rayon::join(|| discover(&opts.dir1), || discover(&opts.dir2));
    let (run1, run2) = (run1?, run2?);
    if run1.is_empty() && run2.is_empty() {
        let message = format!("expected .npy files under data/<key>/step<N>/rank<R> here or in {}, found none", opts.dir2.display());
        return Err(CompareError::Layout { path: opts.dir1.clone(), message });
    }
    let empty = Default::default();
    let tags: BTreeSet<&String> = run1.keys().chain(run2.keys()).collect();
    let mut work: Vec<(&str, Key, Option<&Path>, Option<&Path>)> = vec![];
    for &tag in &tags {
        let (a, b) = (run1.get(tag).unwrap_or(&empty), run2.get(tag).unwrap_or(&empty));
        let keys: BTreeSet<&Key> = a.keys().chain(b.keys()).collect();
        work.extend(keys.into_iter().map(|k| (tag.as_str(), k.clone(), a.get(k).map(PathBuf::as_path), b.get(k).map(PathBuf::as_path))));
    }
    let rows: Vec<Result<Row, CompareError>> = work.par_iter().map(|(_, key, f1, f2)| row::row(key.clone(), *f1, *f2)).collect();
    let rows = rows.into_iter().collect::<Result<Vec<Row>, _>>()?;

    let mut per_tag: Vec<(&str, Vec<&Row>)> = vec![];
    for ((tag, ..), row) in work.iter().zip(&rows) {
        match per_tag.last_mut() {
            Some((t, list)) if t == tag => list.push(row),
            _ => per_tag.push((tag, vec![row])),
        }
    }
    // Every workbook is rendered before the first is written, so a failure
    // leaves nothing behind but whole files.
    let books = per_tag
        .par_iter()
        .map(|(tag, list)| {
            let table = Table::new(&row::HEADER, list.iter().map(|r| r.cells()).collect());
            let bytes = xlsx::workbook(&[(None, &table)]).map_err(|source| CompareError::Workbook { tag: tag.to_string(), source })?;
            Ok((opts.output_path.join(format!("{tag}.xlsx")), bytes))
        })
        .collect::<Result<Vec<(PathBuf, Vec<u8>)>, CompareError>>()?;
    create_dir(&opts.output_path)?;
    let mut files = Vec::with_capacity(books.len());
    for (path, bytes) in books {
        write_atomic(&path, &bytes, WriteOptions::REPORT)?;
        files.push(path);
    }

    let count = |note| rows.iter().filter(|r| r.note == note).count();
    let only = |run: &discover::Run, other: &discover::Run| run.keys().filter(|k| !other.contains_key(*k)).cloned().collect();
    Ok(Outcome {
        files,
        rows: rows.len(),
        differing: rows.iter().filter(|r| r.metrics.is_some_and(|m| m.first_mismatch.is_some())).count(),
        shapes_differ: count(Note::ShapesDiffer),
        one_sided: [count(Note::OnlyInDir1), count(Note::OnlyInDir2)],
        keys_only: [only(&run1, &run2), only(&run2, &run1)],
        elapsed: start.elapsed(),
    })
}
