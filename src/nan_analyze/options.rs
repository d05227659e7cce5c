//! What to analyse and where the report goes.

use std::path::PathBuf;

/// What to analyse and where the report goes.
#[derive(Debug, Clone)]
pub struct Options {
    /// The step folder holding the rank folders (`-i`).
    pub input: PathBuf,
    /// The report's folder (`-o`, default `./output`), created if missing.
    pub output: PathBuf,
}
