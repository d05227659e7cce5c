//! Batch mode: every selected API of a dump, rendered in parallel.
//!
//! One structural pass indexes the dump into a compact [`Calls`] index
//! (names and byte ranges, forward and backward paired by name); the calls
//! are filtered and sharded; then rayon renders the scripts a chunk at a
//! time, each from its own entries read from their byte ranges. What stays
//! per script is a fixed-size record (call, file-name tail, hash); the
//! manifest is written, and with `--check` compared, streaming, and the
//! files a check names spill to disk ([`FileList`]). Memory is the index,
//! those records and one chunk in flight: about 100 bytes per call, never
//! the dump's bytes. Every write is atomic; `--check` writes nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::error::GenerateError;
use super::file_list::FileList;
use super::generator::Generator;
use super::options::{BatchOptions, Options};
use crate::config::Propagation;
use crate::manifest::{self, ManifestEntry, ManifestHead, ModuleEntry};
use crate::model::{ApiName, Direction};
use crate::output::{self, FileStatus};
use crate::paths;
use crate::progress::Reporter;
use crate::source::{self, Calls, Source};
use runtime::exit;

/// What a batch did, for the summary and the exit code.
#[derive(Debug, Default)]
pub struct BatchReport {
    /// APIs selected (after filter and shard), over all dumps.
    pub apis: usize,
    /// Scripts rendered.
    pub scripts: usize,
    /// Scripts written because they were new or changed.
    pub written: usize,
    /// APIs skipped in backward mode because the dump has no backward entry.
    pub without_backward: usize,
    /// `--check`: scripts whose file differs.
    pub drifted: FileList,
    /// `--check`: scripts with no file.
    pub missing: FileList,
    /// `--check`: files the manifest lists that would no longer be generated.
    pub extra: FileList,
    /// Scripts that could not be rendered or written: `Prefix.op.N.direction` and why.
    pub failed: Vec<(String, GenerateError)>,
    /// Wall time.
    pub elapsed: Duration,
}

impl BatchReport {
    /// The code of the gravest failure (4 dump, 5 write, 6 template), else
    /// 1 when `--check` found a difference, else 0.
    pub fn exit_code(&self, check: bool) -> u8 {
        if let Some(code) = self.failed.iter().map(|(_, e)| e.exit_code()).max() {
            code
        } else if check && !(self.drifted.is_empty() && self.missing.is_empty() && self.extra.is_empty()) {
            exit::DRIFT
        } else {
            exit::OK
        }
    }
}

impl BatchReport {
    /// Notes what became of the file at `path`: with `--check`, drifted or
    /// missing. Whether it was written.
    fn note(&mut self, path: PathBuf, status: FileStatus) -> bool {
        match status {
            FileStatus::Written => return true,
            FileStatus::Unchanged => {}
            FileStatus::Drifted => self.drifted.push(path),
            FileStatus::Missing => self.missing.push(path),
        }
        false
    }
}

/// Jobs rendered in parallel at a time: the scripts in flight are bounded
/// by this, not by the dump.
const CHUNK: usize = 8192;

/// One script (or project) to render: a call of the index and a direction.
type Job = (usize, Direction);

/// The jobs of call `i`: none when it is not selected (no forward entry,
/// filtered out or in another shard); else those the propagation asks
/// for, and whether its backward was asked for but not dumped.
fn jobs_of(calls: &Calls, i: usize, batch: &BatchOptions) -> Option<([Option<Direction>; 2], bool)> {
    if !(calls.has_forward(i) && batch.selector.in_shard(&calls.name(i))) {
        return None;
    }
    let forward = (batch.propagation != Propagation::Backward).then_some(Direction::Forward);
    let wants_backward = batch.propagation != Propagation::Forward;
    let backward = (wants_backward && calls.has_backward(i)).then_some(Direction::Backward);
    Some(([forward, backward], wants_backward && !calls.has_backward(i)))
}

/// A script rendered: its call, direction, the rest of its file name after
/// `<call>.<direction>` (an index into [`Scripts::tails`]) and its hash.
/// Fixed size, whatever the script holds.
struct Script {
    call: u32,
    tail: u32,
    direction: Direction,
    sha256: [u8; 32],
}

/// Every script of a batch, compact: file names are rebuilt from the call
/// names of the index and a few shared tails (`.py`, `/Cargo.toml`, ...).
struct Scripts<'a> {
    calls: &'a Calls,
    list: Vec<Script>,
    /// A file name's tail, or (`true`) a whole file name not made from its
    /// call's key.
    tails: Vec<(bool, String)>,
}

impl<'a> Scripts<'a> {
    fn add(&mut self, (call, direction): Job, file: &str, sha256: [u8; 32]) {
        let key_len = self.calls.name_str(call).len() + 1 + direction.as_str().len();
        let tail = match file.get(..key_len) {
            Some(key) if key.strip_prefix(self.calls.name_str(call)).and_then(|k| k.strip_prefix('.')) == Some(direction.as_str()) => (false, &file[key_len..]),
            _ => (true, file),
        };
        let index = match self.tails.iter().position(|(whole, t)| (*whole, t.as_str()) == tail) {
            Some(i) => i,
            None => {
                self.tails.push((tail.0, tail.1.to_string()));
                self.tails.len() - 1
            }
        };
        let call = u32::try_from(call).expect("fewer than 2^32 calls in one dump");
        self.list.push(Script { call, tail: index as u32, direction, sha256 });
    }

    /// The file name of script `k`, as pieces to join.
    fn file_pieces(&self, k: usize) -> [&[u8]; 4] {
        let s = &self.list[k];
        match &self.tails[s.tail as usize] {
            (true, whole) => [b"", b"", b"", whole.as_bytes()],
            (false, tail) => [self.calls.name_str(s.call as usize).as_bytes(), b".", s.direction.as_str().as_bytes(), tail.as_bytes()],
        }
    }

    fn file(&self, k: usize) -> String {
        String::from_utf8(self.file_pieces(k).concat()).expect("pieces of str")
    }

    /// The order of the scripts by file name, as the manifest lists them.
    fn by_file(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.list.len() as u32).collect();
        order.sort_by(|&a, &b| self.file_pieces(a as usize).iter().copied().flatten().cmp(self.file_pieces(b as usize).iter().copied().flatten()));
        order
    }

    /// Whether a script of this batch has the file name `file` (`order`: [`Scripts::by_file`]).
    fn has_file(&self, order: &[u32], file: &str) -> bool {
        order.binary_search_by(|&k| self.file_pieces(k as usize).iter().copied().flatten().cmp(file.as_bytes().iter())).is_ok()
    }

    /// The manifest entry of script `k`.
    fn entry(&self, k: usize) -> ManifestEntry {
        let s = &self.list[k];
        ManifestEntry {
            file: self.file(k),
            api: self.calls.name_str(s.call as usize).to_string(),
            direction: s.direction.as_str().into(),
            sha256: manifest::hex(&s.sha256),
        }
    }
}

/// Generates (or with `--check`, compares) the scripts of every selected
/// API of the config's dump. A folder holding several rank dumps gets one
/// subfolder per rank in the output folder.
pub(super) fn run(opts: &Options, batch: &BatchOptions) -> Result<BatchReport, GenerateError> {
    let started = Instant::now();
    let files = source::dump_files(opts.config.input.path());
    let mut report = BatchReport::default();
    for file in &files {
        let out = match (files.len() > 1, file.parent().and_then(Path::file_name)) {
            (true, Some(rank)) => opts.out_dir.join(rank),
            _ => opts.out_dir.clone(),
        };
        one_dump(opts, batch, file, &out, &mut report)?;
    }
    for list in [&mut report.drifted, &mut report.missing, &mut report.extra] {
        list.seal();
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Generates (or with `--check`, compares) the scripts of one dump file in
/// `out_dir`: its selected calls rendered a chunk at a time, then its
/// manifest written (or compared).
fn one_dump(opts: &Options, batch: &BatchOptions, file: &Path, out_dir: &Path, report: &mut BatchReport) -> Result<(), GenerateError> {
    let selector = &batch.selector;
    let (source, calls) = Source::open_calls(file, opts.framework, opts.config.data_mode, &|n: &ApiName| selector.matches(n))?;
    let generator = Generator::new(opts, out_dir, &source)?;
    let total = count_jobs(&calls, batch, report);
    if !opts.check {
        output::create_dir(out_dir)?;
    }
    let reporter = Reporter::new(batch.progress, total, total as u64, &file.display().to_string(), "op_generate", "scripts");
    let mut scripts = Scripts { calls: &calls, list: Vec::with_capacity(total), tails: vec![] };
    let jobs = (0..calls.len()).filter_map(|i| jobs_of(&calls, i, batch).map(|(d, _)| (i, d))).flat_map(|(i, d)| d.into_iter().flatten().map(move |d| (i, d)));
    let render = |job| render_job(&calls, job, &source, &generator, out_dir, opts.check);
    render_chunks(jobs, render, &reporter, out_dir, &mut scripts, report);
    reporter.finish();
    report.scripts += scripts.list.len();
    let order = scripts.by_file();
    let mut modules = vec![];
    if let Some((module, status)) = generator.put_shared_module(out_dir)? {
        // Not a script: its writing is not counted, its drift is.
        report.note(out_dir.join(&module.file), status);
        modules.push(module);
    }
    let head = manifest_head(opts, batch, &source, file, out_dir);
    let manifest_path = out_dir.join(manifest::file_name(selector.shard));
    if opts.check {
        check_manifest(manifest_path, &head, &scripts, &order, &modules, out_dir, report);
    } else {
        generator.write_runtime()?;
        manifest::write(&manifest_path, &head, order.iter().map(|&k| scripts.entry(k as usize)), &modules)?;
    }
    Ok(())
}

/// Counts the selected APIs (and those without the backward asked for)
/// into `report`; the number of scripts to render, for the progress bar.
fn count_jobs(calls: &Calls, batch: &BatchOptions, report: &mut BatchReport) -> usize {
    let mut total = 0;
    for (directions, without_backward) in (0..calls.len()).filter_map(|i| jobs_of(calls, i, batch)) {
        report.apis += 1;
        report.without_backward += usize::from(without_backward);
        total += directions.iter().flatten().count();
    }
    total
}

/// Renders `jobs` with `render` in parallel, [`CHUNK`] at a time so that
/// the scripts in flight stay bounded; each file goes into `scripts` and
/// what became of it into `report`.
fn render_chunks(
    mut jobs: impl Iterator<Item = Job>,
    render: impl Fn(Job) -> Result<Vec<(String, [u8; 32], FileStatus)>, (String, GenerateError)> + Sync,
    reporter: &Reporter,
    out_dir: &Path,
    scripts: &mut Scripts<'_>,
    report: &mut BatchReport,
) {
    let mut chunk: Vec<Job> = Vec::with_capacity(CHUNK);
    loop {
        chunk.clear();
        chunk.extend(jobs.by_ref().take(CHUNK));
        if chunk.is_empty() {
            break;
        }
        let results: Vec<_> = chunk
            .par_iter()
            .map(|&job| {
                let result = render(job);
                reporter.tick(1, 0);
                result
            })
            .collect();
        for (&job, r) in chunk.iter().zip(results) {
            match r {
                Ok(files) => {
                    for (file, sha256, status) in files {
                        report.written += usize::from(report.note(out_dir.join(&file), status));
                        scripts.add(job, &file, sha256);
                    }
                }
                Err(failure) => report.failed.push(failure),
            }
        }
    }
}

/// The manifest's head: what made the scripts of `file`, and how.
fn manifest_head(opts: &Options, batch: &BatchOptions, source: &Source, file: &Path, out_dir: &Path) -> ManifestHead {
    let selector = &batch.selector;
    ManifestHead {
        generator: format!("msprobe-rs {}", env!("CARGO_PKG_VERSION")),
        framework: source.framework().as_str().into(),
        dump: paths::relative_always(&paths::absolute(out_dir), &paths::absolute(file)).to_string_lossy().into_owned(),
        lang: opts.lang.as_str().into(),
        propagation: batch.propagation.as_str().into(),
        filter: selector.filter.as_ref().map(|r| r.as_str().to_string()),
        shard: selector.shard.map(|s| s.to_string()),
    }
}

/// `--check` of the manifest at `manifest_path`, compared entry by entry
/// as it is read: the files it lists that this batch would not generate are
/// extra; when no file drifted, is missing or extra but the manifest
/// differs, the manifest itself has drifted.
fn check_manifest(
    manifest_path: PathBuf,
    head: &ManifestHead,
    scripts: &Scripts<'_>,
    order: &[u32],
    modules: &[ModuleEntry],
    out_dir: &Path,
    report: &mut BatchReport,
) {
    let (mut extra, mut seen, mut same) = (FileList::default(), 0, true);
    let on_disk = manifest::read(&manifest_path, &mut |e| {
        if !scripts.has_file(order, &e.file) {
            extra.push(out_dir.join(&e.file));
        }
        same = same && order.get(seen).is_some_and(|&k| scripts.entry(k as usize) == e);
        seen += 1;
    });
    let same = match on_disk {
        Some((old_head, old_modules)) => {
            extra.seal();
            for p in &extra {
                report.extra.push(p);
            }
            for m in &old_modules {
                if !modules.iter().any(|n| n.file == m.file) {
                    report.extra.push(out_dir.join(&m.file));
                }
            }
            same && seen == order.len() && old_head == *head && old_modules == modules
        }
        None => false,
    };
    if !same && report.drifted.is_empty() && report.missing.is_empty() && report.extra.is_empty() {
        report.drifted.push(manifest_path);
    }
}

/// Renders (and writes, or with `--check` compares) the files of one job:
/// each file's name, hash and what became of it.
fn render_job(
    calls: &Calls,
    (call, direction): Job,
    source: &Source,
    generator: &Generator,
    out_dir: &Path,
    check: bool,
) -> Result<Vec<(String, [u8; 32], FileStatus)>, (String, GenerateError)> {
    let fail = |e: GenerateError| (format!("{}.{}", calls.name_str(call), direction.as_str()), e);
    let call = source.read_call(&calls.group(call)).map_err(|e| fail(e.into()))?;
    let files = generator.files(&call, direction).map_err(fail)?;
    files
        .into_iter()
        .map(|(file, text)| {
            let status = output::put(&out_dir.join(&file), text.as_bytes(), check).map_err(|e| fail(e.into()))?;
            Ok((file, manifest::sha256(text.as_bytes()), status))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_costs_a_fixed_record() {
        // The batch holds this much per script (plus the index's record
        // per call), whatever the script's size.
        assert_eq!(std::mem::size_of::<Script>(), 44);
    }
}
