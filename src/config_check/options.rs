//! The validated options of `config_check`: pack this environment or compare two packs.

use std::path::PathBuf;

/// What to do.
#[derive(Debug, Clone)]
pub enum Options {
    /// `-d FILES... -o PACK.zip`: pack this environment.
    Collect {
        /// Launch scripts (`.sh`) and configs (`.yaml`, `.yml`) to read hyperparameters from.
        files: Vec<PathBuf>,
        /// The pack (ends with `.zip`); an existing pack is merged into.
        output: PathBuf,
        /// The training environment's Python, asked for its `sys.path`.
        python: PathBuf,
    },
    /// `-c BENCH.zip CMP.zip -o OUT`: compare two packs.
    Compare {
        /// The bench pack.
        bench: PathBuf,
        /// The pack compared with it.
        cmp: PathBuf,
        /// The folder of `bench/`, `cmp/` and `result.xlsx`.
        output: PathBuf,
    },
}
