//! The `op_generate` command: config -> dump calls -> scripts (or projects).
//!
//! [`single`] handles one API (msprobe's mode); [`batch`] every API of a
//! dump that a filter and a shard select. Both get their calls from the
//! source layer ([`crate::source`]), render them through one [`Generator`],
//! and write through [`crate::output::put`].

mod batch;
mod single;

pub use batch::BatchReport;
pub use single::Generated;

use std::path::{Path, PathBuf};

use crate::bridge;
use crate::config::{DataMode, OpConfig, Propagation};
use crate::error::Error;
use crate::model::{ApiCall, Direction, Framework};
use crate::paths;
use crate::progress::Progress;
use crate::render::{runtime_dir, Lang, PythonContext, Renderer, RustContext};
use crate::select::ApiSelector;
use crate::source::Source;

/// Validated options of one `op_generate` run.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-f`.
    pub framework: Framework,
    /// config_op.json with the flags' overrides applied.
    pub config: OpConfig,
    /// `-o`: where the files go (created if missing).
    pub out_dir: PathBuf,
    /// `--lang`.
    pub lang: Lang,
    /// `--check`: compare with the files on disk instead of writing.
    pub check: bool,
    /// `--all` / `--filter`: batch mode; `None` is msprobe's one-API mode.
    pub batch: Option<BatchOptions>,
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

impl Options {
    /// msprobe's one-API mode, writing.
    pub fn single(framework: Framework, config: OpConfig, out_dir: impl Into<PathBuf>, lang: Lang) -> Options {
        Options { framework, config, out_dir: out_dir.into(), lang, check: false, batch: None }
    }
}

/// What a run did.
#[derive(Debug)]
pub enum Outcome {
    /// One API.
    Single(Generated),
    /// A batch.
    Batch(BatchReport),
}

/// Runs `op_generate`.
pub fn run(opts: &Options) -> Result<Outcome, Error> {
    match &opts.batch {
        None => single::run(opts).map(Outcome::Single),
        Some(b) => batch::run(opts, b).map(Outcome::Batch),
    }
}

/// Renders calls into files for one output folder, as configured.
struct Generator<'a> {
    renderer: Renderer,
    opts: &'a Options,
    /// The output folder, absolute: paths in the files are relative to it.
    out_abs: PathBuf,
}

impl<'a> Generator<'a> {
    fn new(opts: &'a Options, out_dir: &Path) -> Result<Generator<'a>, Error> {
        Ok(Generator { renderer: Renderer::new()?, opts, out_abs: paths::absolute(out_dir) })
    }

    /// The files of `call` in `direction`: (path relative to the output
    /// folder, text). Paths inside them (tensor folder, runtime crate) are
    /// relative to the file when they share a tree, so the output stays
    /// valid when the whole tree moves.
    fn files(&self, source: &Source, call: &ApiCall, direction: Direction) -> Result<Vec<(String, String)>, Error> {
        let (framework, config) = (self.opts.framework, &self.opts.config);
        if config.data_mode == DataMode::RealData {
            source.check_real_data(call, direction)?;
        }
        let config = &OpConfig { propagation: direction, ..config.clone() };
        Ok(match self.opts.lang {
            Lang::Python => {
                let data_dir = source.data_dir().map(|d| paths::refer(&self.out_abs, d));
                let dump = paths::refer(&self.out_abs, &paths::absolute(source.file()));
                let ctx = PythonContext::new(call, framework, config, direction, data_dir.as_ref(), &dump.text);
                vec![self.renderer.python(framework, &ctx)?]
            }
            Lang::Rust => {
                // A Rust project sits one folder deeper than a Python script.
                let project = self.out_abs.join(call.name.key(direction));
                let data_dir = source.data_dir().map(|d| paths::refer(&project, d));
                let replay = bridge::to_replay(call, framework, config, direction, data_dir.as_ref().map(|d| Path::new(&d.text)), true);
                let runtime = paths::refer(&project, &paths::absolute(&runtime_dir()));
                self.renderer.rust(&RustContext::new(&replay, direction, &runtime))?
            }
        })
    }
}
