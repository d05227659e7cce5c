//! The validated options of one `op_generate` run: one API or a batch.

use std::path::PathBuf;

use crate::config::{OpConfig, Propagation};
use crate::model::{ApiName, Framework};
use crate::progress::Progress;
use crate::render::Lang;
use crate::select::ApiSelector;

/// Validated options of one `op_generate` run.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-f` (the dump's own framework is [`Source::framework`](crate::source::Source::framework)).
    pub framework: Framework,
    /// config_op.json with the flags' overrides applied.
    pub config: OpConfig,
    /// `-o`: where the files go (created if missing).
    pub out_dir: PathBuf,
    /// `--lang`.
    pub lang: Lang,
    /// `--check`: compare with the files on disk instead of writing.
    pub check: bool,
    /// `--shared-module` (Python): the machinery goes once into each folder
    /// of scripts as a versioned module the scripts import, instead of
    /// being inlined into every script.
    pub shared_module: bool,
    /// The runtime crate Rust projects depend on (`MSPROBE_RUNTIME_PATH`);
    /// `None`: the copy compiled into this binary, written beside them.
    pub runtime: Option<PathBuf>,
    /// One API, or a batch.
    pub mode: Mode,
}

/// What to generate.
#[derive(Debug, Clone)]
pub enum Mode {
    /// msprobe's one-API mode: the config's `api_name`.
    Single(ApiName),
    /// `--all` / `--filter`.
    Batch(BatchOptions),
}

/// What batch mode generates.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// `--filter`, `--shard`.
    pub selector: ApiSelector,
    /// `--propagation` (default: the config's).
    pub propagation: Propagation,
    /// Progress reporting.
    pub progress: Progress,
}
