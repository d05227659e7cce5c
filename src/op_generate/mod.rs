//! The `op_generate` command: config -> dump entries -> typed calls -> scripts.
//!
//! [`single`] handles one API (msprobe's mode); [`batch`] every API of a
//! dump that a filter and a shard select. Both share what is here: the error
//! type, the checks a dump must pass, and rendering one call into one file.

mod batch;
mod single;

pub use batch::{run_batch, BatchOptions, BatchReport, Progress};
pub use single::{run, Generated};

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::config::{ConfigError, DataMode, OpConfig, Propagation};
use crate::dump::{DumpError, DumpHeader};
use crate::model::{ApiCall, ApiName, Arg, Framework, ModelError};
use crate::output::WriteError;
use crate::render::{Lang, RenderError, Renderer, ScriptContext};

/// Why `op_generate` failed. Each variant maps to one documented exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// config_op.json or a flag is unreadable or invalid (exit 3).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The dump is unreadable or malformed (exit 4).
    #[error(transparent)]
    Dump(#[from] DumpError),
    /// An entry of the dump has an unexpected shape (exit 4).
    #[error("{}: {source}", file.display())]
    Model {
        /// The dump file.
        file: PathBuf,
        /// What is wrong, with the JSON path.
        source: ModelError,
    },
    /// The dump does not hold what the config asks for (exit 4).
    #[error("{}: {message}", file.display())]
    Selection {
        /// The dump file.
        file: PathBuf,
        /// What is missing or unsupported.
        message: String,
    },
    /// An output file could not be written (exit 5).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A template failed: a bug in this tool (exit 6).
    #[error("internal error: {0}")]
    Render(#[from] RenderError),
}

impl Error {
    /// The process exit code for this error (see README, "Exit codes").
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_) => 3,
            Error::Dump(_) | Error::Model { .. } | Error::Selection { .. } => 4,
            Error::Write(_) => 5,
            Error::Render(_) => 6,
        }
    }
}

/// Checks that the dump was made by the framework given with `-f`.
pub(crate) fn check_framework(file: &Path, header: &DumpHeader, requested: Framework) -> Result<(), Error> {
    let message = match header.framework.as_deref() {
        None => return Ok(()),
        Some(f) if f == requested.as_str() => return Ok(()),
        Some("mindtorch") => "key \"framework\": mindtorch (MSAdapter) dumps are not supported yet; expected pytorch or mindspore".to_string(),
        Some(f) => format!("key \"framework\": the dump was made by {f:?}, but -f {} was given", requested.as_str()),
    };
    Err(Error::Selection { file: file.to_path_buf(), message })
}

/// The folder holding the dump's tensor files: `dump_data_dir` when it
/// exists, else `dump_tensor_data/` beside the dump (dumps move between machines).
pub(crate) fn data_dir(file: &Path, header: &DumpHeader) -> Option<PathBuf> {
    let recorded = header.dump_data_dir.as_deref().map(PathBuf::from).filter(|p| p.is_dir());
    let beside = file.parent().map(|p| p.join("dump_tensor_data")).filter(|p| p.is_dir());
    recorded.or(beside).map(|p| std::fs::canonicalize(&p).unwrap_or(p))
}

/// `target` relative to `base` (both absolute), e.g. `../dumps/x`; `None`
/// when they share no folder but the root, where an absolute path is clearer.
fn relative_path(base: &Path, target: &Path) -> Option<PathBuf> {
    let (b, t): (Vec<Component>, Vec<Component>) = (base.components().collect(), target.components().collect());
    let common = b.iter().zip(&t).take_while(|(x, y)| x == y).count();
    if common <= 1 {
        return None;
    }
    let mut rel: PathBuf = b[common..].iter().map(|_| Component::ParentDir).collect();
    rel.extend(&t[common..]);
    Some(if rel.as_os_str().is_empty() { PathBuf::from(".") } else { rel })
}

/// real_data needs a file for every input tensor (and dumped gradient).
fn check_real_data(call: &ApiCall, propagation: Propagation, file: &Path) -> Result<(), Error> {
    let mut values: Vec<(String, &Arg)> = vec![];
    for (i, a) in call.forward.args.iter().enumerate() {
        values.push((format!("input_args[{i}]"), a));
    }
    for (k, a) in &call.forward.kwargs {
        values.push((format!("input_kwargs.{k}"), a));
    }
    if let (Propagation::Backward, Some(b)) = (propagation, &call.backward) {
        for (i, a) in b.grad_outputs.iter().enumerate() {
            values.push((format!("backward input[{i}]"), a));
        }
    }
    for (path, a) in values {
        if a.tensors().iter().any(|t| t.data_name.is_none()) {
            return Err(Error::Selection {
                file: file.to_path_buf(),
                message: format!(
                    "{}: {path} has no data_name; real_data needs a dump made with task \"tensor\" (or use data_mode random_data)",
                    call.name
                ),
            });
        }
    }
    Ok(())
}

/// One dump prepared for rendering: its file, header and tensor folder.
struct Source {
    file: PathBuf,
    data_dir: Option<PathBuf>,
}

impl Source {
    fn new(file: &Path, header: &DumpHeader, framework: Framework, data_mode: DataMode) -> Result<Source, Error> {
        check_framework(file, header, framework)?;
        let data_dir = data_dir(file, header);
        if data_mode == DataMode::RealData && data_dir.is_none() {
            return Err(Error::Selection {
                file: file.to_path_buf(),
                message: "real_data: no tensor folder found (neither dump_data_dir nor dump_tensor_data/ beside the dump exists)".into(),
            });
        }
        Ok(Source { file: file.to_path_buf(), data_dir })
    }

    /// Types the call and renders its files for `propagation` in `lang`;
    /// returns (path relative to `out_dir`, text) pairs. The tensor folder is
    /// written relative to the script (or project) when they share a tree,
    /// so the output stays valid when the whole tree moves.
    #[allow(clippy::too_many_arguments)]
    fn render(
        &self,
        renderer: &Renderer,
        framework: Framework,
        config: &OpConfig,
        propagation: Propagation,
        lang: Lang,
        name: &ApiName,
        entries: (&Value, Option<&Value>),
        out_dir: &Path,
    ) -> Result<Vec<(String, String)>, Error> {
        let call = ApiCall::from_entries(name.clone(), entries.0, entries.1).map_err(|source| Error::Model { file: self.file.clone(), source })?;
        if config.data_mode == DataMode::RealData {
            check_real_data(&call, propagation, &self.file)?;
        }
        let out_abs = std::fs::canonicalize(out_dir).unwrap_or_else(|_| out_dir.to_path_buf());
        // A Rust project sits one folder deeper than a Python script.
        let base = match lang {
            Lang::Python => out_abs,
            Lang::Rust => out_abs.join(name.key(propagation.direction())),
        };
        let data_dir = self.data_dir.as_ref().map(|d| match relative_path(&base, d) {
            Some(rel) => (rel.to_string_lossy().into_owned(), true),
            None => (d.to_string_lossy().into_owned(), false),
        });
        let config = OpConfig { propagation, ..config.clone() };
        let ctx = ScriptContext::new(&call, framework, &config, data_dir.as_ref().map(|(d, rel)| (d.as_str(), *rel)), &self.file.to_string_lossy(), lang);
        Ok(renderer.files(framework, lang, &ctx)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_between_trees() {
        let rel = |a: &str, b: &str| relative_path(Path::new(a), Path::new(b)).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(rel("/w/repo/out", "/w/repo/dumps/d"), Some("../dumps/d".into()));
        assert_eq!(rel("/w/repo/out", "/w/repo/out/data"), Some("data".into()));
        assert_eq!(rel("/w/repo/out", "/w/repo/out"), Some(".".into()));
        assert_eq!(rel("/tmp/out", "/data/dumps"), None);
    }
}
