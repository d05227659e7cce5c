//! `config_check`: msprobe's static collection and comparison of two
//! training environments.
//!
//! Collection (`-d`) packs this machine's environment variables ([`env`]),
//! the training Python's installed distributions ([`pip`]) and the
//! hyperparameters of launch scripts ([`shell`]) and YAML configs
//! ([`yaml`]), merged by [`hyperparams`], into a zip in msprobe's layout
//! ([`pack`]). The dynamic parts (weights, dataset, random) are collected
//! inside training by the Python package (`msprobe_rs.config_checker`).
//!
//! Comparison (`-c`) reads and validates both packs fully in memory, runs
//! the checks ([`compare`]: [`env`], [`pip`], [`stats`], [`hyperparams`],
//! [`random`]) and renders `result.xlsx` ([`crate::xlsx`]) before it writes
//! anything: a broken pack fails with nothing written. Then each pack is
//! extracted into `OUT/bench` and `OUT/cmp` (replacing earlier
//! extractions whole) and the workbook is written atomically.

pub mod compare;
pub mod difflib;
pub mod env;
mod error;
pub mod hyperparams;
mod options;
pub mod pack;
pub mod pip;
pub mod pyvalue;
pub mod random;
pub mod shell;
pub mod stats;
pub mod yaml;

pub use error::ConfigCheckError;
pub use options::Options;

use std::path::{Path, PathBuf};

use runtime::atomic::{create_dir, write_atomic, WriteError, WriteOptions};
use runtime::exit;
use serde_json::{Map, Value};

use crate::dump::nonfinite::to_msprobe_json_indented;
use crate::unreadable::Unreadable;
use crate::xlsx::{self, Cell, Level, Table};

/// The summary sheet's columns (msprobe's).
const SUMMARY_HEADER: &[&str] = &["filename", "pass_check"];

/// A `-d` file is read up to this size.
const MAX_SCRIPT: u64 = 16 << 20;

/// What a run did.
#[derive(Debug)]
pub enum Outcome {
    /// A pack was written.
    Collected {
        /// The pack.
        zip: PathBuf,
        /// Environment variables packed.
        env_vars: usize,
        /// Python distributions listed.
        packages: usize,
        /// Hyperparameters read from the `-d` files (none: no file written).
        hyperparameters: usize,
        /// Entries kept from the pack that was already at `zip`.
        kept: usize,
    },
    /// Two packs were compared.
    Compared {
        /// `result.xlsx`.
        result: PathBuf,
        /// Each check that ran, with its verdict, in sheet order.
        checks: Vec<(&'static str, Level)>,
        /// Required checks that did not run: a pack lacks their part.
        not_compared: Vec<&'static str>,
    },
}

impl Outcome {
    /// 0, or [`exit::PACKS_DIFFER`] when a required check is an `error`.
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Compared { checks, .. } if checks.iter().any(|(n, l)| *l == Level::Error && compare::REQUIRED.contains(n)) => exit::PACKS_DIFFER,
            _ => exit::OK,
        }
    }
}

/// Runs `config_check`.
pub fn run(options: &Options) -> Result<Outcome, ConfigCheckError> {
    match options {
        Options::Collect { files, output, python } => collect(files, output, python),
        Options::Compare { bench, cmp, output } => compare_packs(bench, cmp, output),
    }
}

/// The hyperparameters of the `-d` files, merged.
fn hyperparameters(files: &[PathBuf]) -> Result<Map<String, Value>, ConfigCheckError> {
    let mut all = Map::new();
    for path in files {
        let fail = |message: String| ConfigCheckError::Input { path: path.clone(), message };
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !matches!(ext, "sh" | "yaml" | "yml") {
            return Err(fail("expected a .sh launch script or a .yaml/.yml config".into()));
        }
        let unreadable = Unreadable::at(path, "cannot read");
        let meta = std::fs::metadata(path).map_err(&unreadable)?;
        if !meta.is_file() {
            return Err(fail("is not a file".into()));
        }
        if meta.len() > MAX_SCRIPT {
            return Err(fail(format!("is {} bytes, over the limit of {MAX_SCRIPT}", meta.len())));
        }
        let bytes = std::fs::read(path).map_err(&unreadable)?;
        let parsed = if ext == "sh" {
            shell::parse(&String::from_utf8_lossy(&bytes))
        } else {
            let text = String::from_utf8(bytes).map_err(|_| fail("expected UTF-8 text".into()))?;
            yaml::flatten(&yaml::parse(&text).map_err(fail)?)
        };
        hyperparams::merge(&mut all, parsed);
    }
    Ok(all)
}

fn collect(files: &[PathBuf], output: &Path, python: &Path) -> Result<Outcome, ConfigCheckError> {
    let hyper = hyperparameters(files)?;
    let env = env::collect(std::env::vars_os().map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned())));
    let pip = pip::collect(python)?;
    let mut entries =
        vec![("env".to_string(), to_msprobe_json_indented(&Value::Object(env.clone()), 4).into_bytes()), ("pip".to_string(), pip.clone().into_bytes())];
    if !hyper.is_empty() {
        entries.push(("hyperparameters/hyperparameters_static.json".to_string(), to_msprobe_json_indented(&Value::Object(hyper.clone()), 4).into_bytes()));
    }
    let mut kept = 0;
    if std::fs::symlink_metadata(output).is_ok() {
        let existing = pack::read(output).map_err(|e| match e {
            ConfigCheckError::Input { path, message } => {
                ConfigCheckError::Input { path, message: format!("-o names an existing file that is not a config pack to add to: {message}") }
            }
            other => other,
        })?;
        for (name, bytes) in existing.files() {
            if !entries.iter().any(|(n, _)| n == name) {
                entries.push((name.to_string(), bytes.to_vec()));
                kept += 1;
            }
        }
    }
    let bytes = pack::zip_bytes(&entries).map_err(ConfigCheckError::Zip)?;
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir(parent)?;
    }
    write_atomic(output, &bytes, WriteOptions::REPORT)?;
    Ok(Outcome::Collected { zip: output.to_path_buf(), env_vars: env.len(), packages: pip.lines().count(), hyperparameters: hyper.len(), kept })
}

fn compare_packs(bench: &Path, cmp: &Path, output: &Path) -> Result<Outcome, ConfigCheckError> {
    let (b, c) = (pack::read(bench)?, pack::read(cmp)?);
    let checks = compare::checks(&b, &c)?;
    let summary = Table::new(SUMMARY_HEADER, checks.iter().map(|k| vec![Cell::text(k.name), Cell::level(k.level)]).collect());
    let mut sheets = vec![(Some("summary"), &summary)];
    sheets.extend(checks.iter().map(|k| (Some(k.name), &k.table)));
    let book = xlsx::workbook(&sheets).map_err(ConfigCheckError::Workbook)?;
    create_dir(output)?;
    // An earlier result must never sit beside newly extracted packs, should
    // an extraction or the write below fail.
    let result = output.join("result.xlsx");
    match std::fs::remove_file(&result) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(WriteError { path: result, source: e }.into()),
        _ => {}
    }
    pack::extract(&b, &output.join("bench"))?;
    pack::extract(&c, &output.join("cmp"))?;
    write_atomic(&result, &book, WriteOptions::REPORT)?;
    let not_compared = compare::REQUIRED.into_iter().filter(|n| !checks.iter().any(|k| k.name == *n)).collect();
    Ok(Outcome::Compared { result, checks: checks.iter().map(|k| (k.name, k.level)).collect(), not_compared })
}
