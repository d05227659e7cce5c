//! The validated options of `config_check -c` of two checkpoints.

use std::path::PathBuf;

/// The two checkpoints and the result file.
#[derive(Debug, Clone)]
pub struct Options {
    /// The first checkpoint (folder with the tracker file, or an iteration folder).
    pub bench: PathBuf,
    /// The second checkpoint.
    pub cmp: PathBuf,
    /// The JSON file to write; it must not exist.
    pub output: PathBuf,
}
