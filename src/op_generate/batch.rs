//! Batch mode: every selected API of a dump, rendered in parallel.
//!
//! One structural pass indexes the dump (keys and byte ranges only); the
//! APIs are grouped by name (forward and backward paired by name), filtered
//! and sharded; then rayon renders each script from its own entries, read
//! from their byte ranges. Memory is bounded by the index and the entries in
//! flight, never by the dump. Every write is atomic; `--check` writes nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::{BatchOptions, Generator, Options};
use crate::config::Propagation;
use super::GenerateError;
use runtime::exit;
use crate::manifest::{self, Manifest, ManifestEntry};
use crate::model::{ApiName, Direction};
use crate::output::{self, FileStatus};
use crate::paths;
use crate::progress::Reporter;
use crate::source::{self, Group, Source};

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

/// One script (or project) to render.
struct Job<'a> {
    group: &'a Group,
    direction: Direction,
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
    report.elapsed = started.elapsed();
    Ok(report)
}

fn one_dump(opts: &Options, batch: &BatchOptions, file: &Path, out_dir: &Path, report: &mut BatchReport) -> Result<(), GenerateError> {
    let selector = &batch.selector;
    let (source, groups) = Source::open(file, opts.framework, opts.config.data_mode, &|n: &ApiName| selector.matches(n))?;
    let generator = Generator::new(opts, out_dir, &source)?;
    let mut jobs: Vec<Job> = vec![];
    for g in groups.iter().filter(|g| g.forward.is_some() && selector.in_shard(&g.name)) {
        report.apis += 1;
        if batch.propagation != Propagation::Backward {
            jobs.push(Job { group: g, direction: Direction::Forward });
        }
        if batch.propagation != Propagation::Forward {
            match &g.backward {
                Some(_) => jobs.push(Job { group: g, direction: Direction::Backward }),
                None => report.without_backward += 1,
            }
        }
    }
    if !opts.check {
        output::create_dir(out_dir)?;
    }
    let reporter = Reporter::new(batch.progress, jobs.len(), &file.display().to_string(), "op_generate", "scripts");
    let results: Vec<_> = jobs
        .par_iter()
        .map(|job| {
            let result = render_job(job, &source, &generator, out_dir, opts.check);
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
                    report.written += usize::from(report.note(out_dir.join(&entry.file), status));
                    entries.push(entry);
                }
            }
            Err(failure) => report.failed.push(failure),
        }
    }
    report.scripts += entries.len();
    entries.sort_by(|a, b| a.file.cmp(&b.file));
    let mut modules = vec![];
    if let Some((module, status)) = generator.put_shared_module(out_dir)? {
        // Not a script: its writing is not counted, its drift is.
        report.note(out_dir.join(&module.file), status);
        modules.push(module);
    }
    let manifest = Manifest {
        generator: format!("msprobe-rs {}", env!("CARGO_PKG_VERSION")),
        framework: source.framework().as_str().into(),
        dump: paths::relative_always(&paths::absolute(out_dir), &paths::absolute(file)).to_string_lossy().into_owned(),
        lang: opts.lang.as_str().into(),
        propagation: batch.propagation.as_str().into(),
        filter: selector.filter.as_ref().map(|r| r.as_str().to_string()),
        shard: selector.shard.map(|s| s.to_string()),
        scripts: entries,
        modules,
    };
    let manifest_path = out_dir.join(manifest::file_name(selector.shard));
    if opts.check {
        let on_disk = Manifest::read(&manifest_path);
        if let Some(old) = &on_disk {
            for e in &old.scripts {
                if !manifest.scripts.iter().any(|n| n.file == e.file) {
                    report.extra.push(out_dir.join(&e.file));
                }
            }
            for m in &old.modules {
                if !manifest.modules.iter().any(|n| n.file == m.file) {
                    report.extra.push(out_dir.join(&m.file));
                }
            }
        }
        if on_disk.as_ref() != Some(&manifest) && report.drifted.is_empty() && report.missing.is_empty() && report.extra.is_empty() {
            report.drifted.push(manifest_path);
        }
    } else {
        generator.write_runtime()?;
        manifest.write(&manifest_path)?;
    }
    Ok(())
}

fn render_job(job: &Job, source: &Source, generator: &Generator, out_dir: &Path, check: bool) -> Result<Vec<(ManifestEntry, FileStatus)>, (String, GenerateError)> {
    let name = &job.group.name;
    let fail = |e: GenerateError| (format!("{name}.{}", job.direction.as_str()), e);
    let call = source.read_call(job.group).map_err(|e| fail(e.into()))?;
    let files = generator.files(&call, job.direction).map_err(fail)?;
    files
        .into_iter()
        .map(|(file, text)| {
            let status = output::put(&out_dir.join(&file), text.as_bytes(), check).map_err(|e| fail(e.into()))?;
            let entry = ManifestEntry { file, api: name.to_string(), direction: job.direction.as_str().into(), sha256: manifest::sha256_hex(text.as_bytes()) };
            Ok((entry, status))
        })
        .collect()
}
