//! Single mode: one API, as msprobe's op_generate did.

use std::path::PathBuf;

use super::error::GenerateError;
use super::generator::Generator;
use super::options::Options;
use crate::config::DumpInput;
use crate::model::{ApiName, Direction};
use crate::output::{self, FileStatus};
use crate::source::{self, Group, Source};
use runtime::exit;

/// What a successful run wrote (or, with `--check`, compared).
#[derive(Debug)]
pub struct Generated {
    /// The files: the script (and with `--shared-module` the module it
    /// imports), or a Rust project's Cargo.toml and src/main.rs.
    pub files: Vec<PathBuf>,
    /// The extract file, when the config names one.
    pub extract: Option<PathBuf>,
    /// With `--check`: the files whose content on disk differs (or is missing).
    pub drifted: Vec<PathBuf>,
}

impl Generated {
    /// 0, or [`exit::DRIFT`] when `--check` found a difference.
    pub fn exit_code(&self) -> u8 {
        if self.drifted.is_empty() {
            exit::OK
        } else {
            exit::DRIFT
        }
    }
}

/// Extracts the config's API from the dump, writes the extract file (when
/// configured) and the script into the output folder; with `--check`,
/// nothing is written.
pub(super) fn run(opts: &Options, name: &ApiName) -> Result<Generated, GenerateError> {
    let config = &opts.config;
    let file = source::one_file(&config.input, "point dump_json_path at one, or use --all")?;
    let (source, groups) = Source::open(&file, opts.framework, config.data_mode, &|n| n == name)?;
    let framework = source.framework();
    if !name.prefix.replayable_in(framework) {
        return Err(GenerateError::selection(file, format!("{name}: prefix {} is not replayable for {} dumps", name.prefix.as_str(), framework.as_str())));
    }
    let generator = Generator::new(opts, &opts.out_dir, &source)?;
    let group = groups.into_iter().next().unwrap_or(Group { name: name.clone(), forward: None, backward: None });
    let entries = source.read(&group)?;
    if config.propagation == Direction::Backward && !entries.has_backward() {
        let key = name.key(Direction::Backward);
        return Err(GenerateError::selection(file, format!("propagation is backward, but the dump has no {key:?} entry")));
    }
    let call = source.call(&entries)?;
    if !opts.check {
        output::create_dir(&opts.out_dir)?;
    }
    let files: Vec<(PathBuf, String)> = generator.files(&call, config.propagation)?.into_iter().map(|(rel, text)| (opts.out_dir.join(rel), text)).collect();
    let mut done = Generated { files: files.iter().map(|(p, _)| p.clone()).collect(), extract: None, drifted: vec![] };
    for (path, text) in &files {
        if matches!(output::put(path, text.as_bytes(), opts.check)?, FileStatus::Drifted | FileStatus::Missing) {
            done.drifted.push(path.clone());
        }
    }
    if let Some((module, status)) = generator.put_shared_module(&opts.out_dir)? {
        let path = opts.out_dir.join(&module.file);
        if matches!(status, FileStatus::Drifted | FileStatus::Missing) {
            done.drifted.push(path.clone());
        }
        done.files.push(path);
    }
    if opts.check {
        return Ok(done);
    }
    generator.write_runtime()?;
    if let DumpInput::Dump { extract_to: Some(path), .. } = &config.input {
        source.write_extract(path, &entries)?;
        done.extract = Some(path.clone());
    }
    Ok(done)
}
