//! An I/O failure on a named file or folder, with the OS error kept as its
//! source: the one form of "PATH: cannot read: ..." that the commands' errors
//! share (each holds it as a variant).

use std::path::{Path, PathBuf};

/// `PATH: what: the OS error`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {what}: {source}", path.display())]
pub struct Unreadable {
    /// The file or folder.
    pub path: PathBuf,
    /// What could not be done (`cannot read`, `cannot list`, ...).
    pub what: &'static str,
    /// Why.
    pub source: std::io::Error,
}

impl Unreadable {
    /// The error of failing `what` on `path`, for `map_err`.
    pub fn at(path: &Path, what: &'static str) -> impl Fn(std::io::Error) -> Unreadable {
        let path = path.to_path_buf();
        move |source| Unreadable { path: path.clone(), what, source }
    }
}
