//! The one [`Generator`] both modes render a dump's calls through, into
//! scripts or Rust projects, and write with.

use std::path::{Path, PathBuf};

use super::error::GenerateError;
use super::options::Options;
use crate::bridge;
use crate::config::{DataMode, OpConfig};
use crate::manifest::{self, ModuleEntry};
use crate::model::{ApiCall, Direction, Framework, Prefix};
use crate::output;
use crate::output::FileStatus;
use crate::paths::{self, PathRef};
use crate::render::{self, runtime_crate, Lang, NotExposed, PythonContext, Renderer, RustContext, SharedModule};
use crate::source::Source;

/// Renders the calls of one dump into files for one output folder, as configured.
pub(super) struct Generator<'a> {
    renderer: Renderer,
    opts: &'a Options,
    source: &'a Source,
    /// The output folder, absolute: paths in the files are relative to it.
    out_abs: PathBuf,
    /// The dump as Python scripts name it.
    dump: PathRef,
    /// The runtime crate's folder, absolute (Rust projects depend on it).
    runtime: PathBuf,
}

/// Where Rust projects find the runtime crate: `opts.runtime`, else the
/// embedded copy's folder in the output folder (`-o`), which every rank's
/// projects share.
fn runtime_folder(opts: &Options) -> PathBuf {
    match &opts.runtime {
        Some(dir) => paths::absolute(dir),
        None => paths::absolute(&opts.out_dir).join(runtime_crate::folder_name()),
    }
}

impl<'a> Generator<'a> {
    /// The generator of `source`'s calls into `out_dir`.
    pub(super) fn new(opts: &'a Options, out_dir: &Path, source: &'a Source) -> Result<Generator<'a>, GenerateError> {
        let out_abs = paths::absolute(out_dir);
        let dump = paths::refer(&out_abs, &paths::absolute(source.file()));
        Ok(Generator { renderer: Renderer::new()?, opts, source, out_abs, dump, runtime: runtime_folder(opts) })
    }

    /// Writes the embedded runtime crate where the Rust projects look for
    /// it (Rust output without `opts.runtime`, not `--check`), through the
    /// one atomic writer: files already holding the same bytes are left
    /// alone, so concurrent shards and reruns agree.
    pub(super) fn write_runtime(&self) -> Result<(), GenerateError> {
        if self.opts.lang != Lang::Rust || self.opts.runtime.is_some() || self.opts.check {
            return Ok(());
        }
        for (rel, text) in runtime_crate::files() {
            output::put(&self.runtime.join(rel), text.as_bytes(), false)?;
        }
        Ok(())
    }

    /// With `--shared-module`: writes (or with `--check`, compares) the
    /// shared module into `out_dir`, the folder of this dump's scripts,
    /// through the one atomic writer (same bytes: left alone, so shards and
    /// reruns agree); its manifest entry and what became of it.
    pub(super) fn put_shared_module(&self, out_dir: &Path) -> Result<Option<(ModuleEntry, FileStatus)>, GenerateError> {
        if !self.opts.shared_module || self.opts.lang != Lang::Python {
            return Ok(None);
        }
        let (file, text) = self.renderer.shared_module(self.source.framework())?;
        let status = output::put(&out_dir.join(&file), text.as_bytes(), self.opts.check)?;
        Ok(Some((ModuleEntry { sha256: manifest::sha256_hex(text.as_bytes()), file }, status)))
    }

    /// The files of `call` in `direction`: (path relative to the output
    /// folder, text). Paths inside them (dump, tensor folder, runtime crate)
    /// are relative to the file when they share a tree, so the output stays
    /// valid when the whole tree moves.
    pub(super) fn files(&self, call: &ApiCall, direction: Direction) -> Result<Vec<(String, String)>, GenerateError> {
        let (framework, source) = (self.source.framework(), self.source);
        // Only an API its framework exposes under the prefix gets a script or a
        // project: a script would call it by name.
        let refused = |e: NotExposed| GenerateError::selection(source.file(), format!("key {:?}: {e}", call.name.key(direction)));
        render::exposed(framework, &call.name).map_err(refused)?;
        if self.opts.config.data_mode == DataMode::Real {
            source.check_real_data(call, direction)?;
        }
        let config = &OpConfig { propagation: direction, ..self.opts.config.clone() };
        Ok(match self.opts.lang {
            // PyTorch scripts of NPU calls bench with the machinery's references (npu_bench.py);
            // MSAdapter's scripts have none yet.
            Lang::Python if call.name.prefix == Prefix::Npu && framework == Framework::MindTorch => {
                return Err(GenerateError::selection(
                    source.file(),
                    format!("key {:?}: Python scripts for MSAdapter's NPU calls are not generated yet (use --lang rust or replay)", call.name.key(direction)),
                ));
            }
            Lang::Python => {
                let data_dir = source.data_dir().map(|d| paths::refer(&self.out_abs, d));
                let mut ctx = PythonContext::new(call, framework, config, direction, data_dir.as_ref(), &self.dump.text).map_err(refused)?;
                if self.opts.shared_module {
                    ctx.shared = Some(SharedModule::new(framework, "."));
                }
                vec![self.renderer.python(framework, &ctx)?]
            }
            Lang::Rust => {
                // A Rust project sits one folder deeper than a Python script.
                let project = self.out_abs.join(call.name.key(direction));
                let data_dir = source.data_dir().map(|d| paths::refer(&project, d));
                let replay = bridge::to_replay(call, framework, config, direction, data_dir.as_ref().map(|d| Path::new(&d.text)), true);
                self.renderer.rust(&RustContext::new(&replay, direction, &paths::refer(&project, &self.runtime)))?
            }
        })
    }
}
