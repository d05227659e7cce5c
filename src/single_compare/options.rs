//! The validated options of `single_compare`: the two runs, the output folder and the threads.

use std::path::PathBuf;

/// What to compare and where the workbooks go.
#[derive(Debug, Clone)]
pub struct Options {
    /// The first run (its `data/` folder is read).
    pub dir1: PathBuf,
    /// The second run.
    pub dir2: PathBuf,
    /// The folder of the workbooks (created when missing).
    pub output_path: PathBuf,
    /// Threads (msprobe's `num_processes`, 1 to 128).
    pub jobs: usize,
}
