//! Batch mode: every selected API of a dump, rendered in parallel.
//!
//! One structural pass indexes the dump (keys and byte ranges only); the
//! APIs are grouped by name (forward and backward paired by name), filtered
//! and sharded; then rayon renders each script from its own entries, read
//! from their byte ranges. Memory is bounded by the index and the entries in
//! flight, never by the dump. Every write is atomic; `--check` writes nothing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::{Error, Source};
use crate::config::{OpConfig, Propagation};
use crate::calls::groups;
use crate::dump::{self, EntryLoc};
use crate::manifest::{self, Manifest, ManifestEntry};
use crate::model::{ApiName, Direction, Framework};
use crate::output;
use crate::render::{Lang, Renderer};
use crate::select::ApiSelector;

/// How to report progress on long batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// An indicatif bar (stderr is a terminal).
    Bar,
    /// A line every 10 % (logs, CI).
    Lines,
    /// Nothing but errors (`--quiet`).
    Quiet,
}

/// Flags of a batch run.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Which APIs.
    pub selector: ApiSelector,
    /// `--propagation`: forward, backward, or both (`None`).
    pub propagation: Option<Propagation>,
    /// Compare with the files on disk instead of writing.
    pub check: bool,
    /// Progress reporting.
    pub progress: Progress,
    /// Python scripts or Rust projects.
    pub lang: Lang,
}

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
    pub drifted: Vec<PathBuf>,
    /// `--check`: scripts with no file.
    pub missing: Vec<PathBuf>,
    /// `--check`: files the manifest lists that would no longer be generated.
    pub extra: Vec<PathBuf>,
    /// APIs that could not be rendered, with the reason.
    pub failed: Vec<String>,
    /// Wall time.
    pub elapsed: Duration,
}

/// One script to render.
struct Job<'a> {
    name: &'a ApiName,
    direction: Direction,
    forward: &'a EntryLoc,
    backward: Option<&'a EntryLoc>,
}

struct Reporter {
    mode: Progress,
    bar: Option<indicatif::ProgressBar>,
    done: AtomicUsize,
    total: usize,
}

impl Reporter {
    fn new(mode: Progress, total: usize, label: &str) -> Reporter {
        let bar = (mode == Progress::Bar).then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({per_sec}, {eta})") {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(label.to_string());
            bar
        });
        Reporter { mode, bar, done: AtomicUsize::new(0), total }
    }

    fn tick(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(bar) = &self.bar {
            bar.inc(1);
        } else if self.mode == Progress::Lines && self.total >= 10 && done % (self.total / 10) == 0 {
            eprintln!("op_generate: {done}/{} scripts", self.total);
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Generates (or with `check`, compares) the scripts of every selected API
/// of the config's dump. A folder holding several rank dumps gets one
/// subfolder per rank in `out_dir`.
pub fn run_batch(framework: Framework, config: &OpConfig, out_dir: &Path, opts: &BatchOptions) -> Result<BatchReport, Error> {
    let started = Instant::now();
    let dump_path = config.dump_json_path.clone().or_else(|| config.extract_api_path.clone()).expect("config validation requires one");
    let files = dump::resolve_dump_files(&dump_path);
    let renderer = Renderer::new()?;
    let mut report = BatchReport::default();
    for file in &files {
        let out = match (files.len() > 1, file.parent().and_then(Path::file_name)) {
            (true, Some(rank)) => out_dir.join(rank),
            _ => out_dir.to_path_buf(),
        };
        one_dump(framework, config, file, &out, opts, &renderer, &mut report)?;
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

fn one_dump(
    framework: Framework,
    config: &OpConfig,
    file: &Path,
    out_dir: &Path,
    opts: &BatchOptions,
    renderer: &Renderer,
    report: &mut BatchReport,
) -> Result<(), Error> {
    let (header, groups) = groups(file, framework, &opts.selector)?;
    let source = Source::new(file, &header, framework, config.data_mode)?;
    let mut jobs: Vec<Job> = vec![];
    for g in groups.iter().filter(|g| opts.selector.in_shard(&g.name)) {
        let Some(forward) = &g.forward else { continue };
        report.apis += 1;
        if opts.propagation != Some(Propagation::Backward) {
            jobs.push(Job { name: &g.name, direction: Direction::Forward, forward, backward: g.backward.as_ref() });
        }
        if opts.propagation != Some(Propagation::Forward) {
            match &g.backward {
                Some(b) => jobs.push(Job { name: &g.name, direction: Direction::Backward, forward, backward: Some(b) }),
                None => report.without_backward += 1,
            }
        }
    }
    if !opts.check {
        output::create_dir(out_dir)?;
    }
    let reporter = Reporter::new(opts.progress, jobs.len(), &file.display().to_string());
    let results: Vec<Result<Vec<(ManifestEntry, Status)>, String>> = jobs
        .par_iter()
        .map(|job| {
            let result = render_job(job, &source, renderer, framework, config, out_dir, opts);
            reporter.tick();
            result
        })
        .collect();
    reporter.finish();

    let mut entries = vec![];
    for r in results {
        match r {
            Ok(files) => {
                for (entry, status) in files {
                    let path = out_dir.join(&entry.file);
                    match status {
                        Status::Written => report.written += 1,
                        Status::Unchanged => {}
                        Status::Drifted => report.drifted.push(path),
                        Status::Missing => report.missing.push(path),
                    }
                    entries.push(entry);
                }
            }
            Err(message) => report.failed.push(message),
        }
    }
    report.scripts += entries.len();
    entries.sort_by(|a, b| a.file.cmp(&b.file));
    let manifest = Manifest {
        generator: format!("msprobe-rs {}", env!("CARGO_PKG_VERSION")),
        framework: framework.as_str().into(),
        dump: file.to_string_lossy().into_owned(),
        lang: match opts.lang {
            Lang::Python => "python".into(),
            Lang::Rust => "rust".into(),
        },
        propagation: match opts.propagation {
            Some(p) => p.direction().as_str().into(),
            None => "both".into(),
        },
        filter: opts.selector.filter.as_ref().map(|r| r.as_str().to_string()),
        shard: opts.selector.shard.map(|s| s.to_string()),
        scripts: entries,
    };
    let manifest_path = out_dir.join(manifest::file_name(opts.selector.shard));
    if opts.check {
        let on_disk = Manifest::read(&manifest_path);
        if let Some(old) = &on_disk {
            for e in &old.scripts {
                if !manifest.scripts.iter().any(|n| n.file == e.file) {
                    report.extra.push(out_dir.join(&e.file));
                }
            }
        }
        if on_disk.as_ref() != Some(&manifest) && report.drifted.is_empty() && report.missing.is_empty() && report.extra.is_empty() {
            report.drifted.push(manifest_path);
        }
    } else {
        manifest.write(&manifest_path)?;
    }
    Ok(())
}

/// What happened to one script.
enum Status {
    Written,
    Unchanged,
    Drifted,
    Missing,
}

fn render_job(
    job: &Job,
    source: &Source,
    renderer: &Renderer,
    framework: Framework,
    config: &OpConfig,
    out_dir: &Path,
    opts: &BatchOptions,
) -> Result<Vec<(ManifestEntry, Status)>, String> {
    let fail = |e: Error| format!("{}.{}: {e}", job.name, job.direction.as_str());
    let forward = dump::read_entry(&source.file, job.forward).map_err(|e| fail(e.into()))?;
    let backward = match job.backward {
        Some(b) => Some(dump::read_entry(&source.file, b).map_err(|e| fail(e.into()))?),
        None => None,
    };
    let propagation = match job.direction {
        Direction::Forward => Propagation::Forward,
        Direction::Backward => Propagation::Backward,
    };
    let files = source.render(renderer, framework, config, propagation, opts.lang, job.name, (&forward, backward.as_ref()), out_dir).map_err(fail)?;
    let mut out = vec![];
    for (file_name, text) in files {
        let path = out_dir.join(&file_name);
        let on_disk = std::fs::read(&path).ok();
        let status = match (on_disk, opts.check) {
            (Some(old), _) if old == text.as_bytes() => Status::Unchanged,
            (Some(_), true) => Status::Drifted,
            (None, true) => Status::Missing,
            (_, false) => {
                if let Some(parent) = path.parent() {
                    output::create_dir(parent).map_err(|e| fail(e.into()))?;
                }
                output::write_atomic(&path, text.as_bytes()).map_err(|e| fail(e.into()))?;
                Status::Written
            }
        };
        let entry = ManifestEntry {
            file: file_name,
            api: job.name.to_string(),
            direction: job.direction.as_str().into(),
            sha256: manifest::sha256_hex(text.as_bytes()),
        };
        out.push((entry, status));
    }
    Ok(out)
}
