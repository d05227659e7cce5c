//! Writing generated files: every file goes through the one atomic writer
//! ([`runtime::atomic`]: a temporary sibling renamed into place), and
//! `--check` compares instead of writing, through the same function.
//! (Generated files are not fsynced: a batch writes thousands, and a rename
//! is already atomic for every reader; durability across a power cut is not
//! promised.)

use std::path::Path;

pub use runtime::atomic::{create_dir, WriteError};
use runtime::atomic::{write_atomic, WriteOptions};

/// Writes `bytes` to `path` atomically (a generated file).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic(path, bytes, WriteOptions::GENERATED)
}

/// What happened to one generated file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    /// Written, because it was new or changed.
    Written,
    /// Already on disk with the same bytes (not rewritten).
    Unchanged,
    /// `--check`: on disk with other bytes.
    Drifted,
    /// `--check`: not on disk.
    Missing,
}

/// Writes `bytes` to `path` unless the file already holds them; with
/// `check`, only compares.
pub fn put(path: &Path, bytes: &[u8], check: bool) -> Result<FileStatus, WriteError> {
    let on_disk = std::fs::read(path).ok();
    Ok(match (on_disk, check) {
        (Some(old), _) if old == bytes => FileStatus::Unchanged,
        (Some(_), true) => FileStatus::Drifted,
        (None, true) => FileStatus::Missing,
        (_, false) => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                create_dir(parent)?;
            }
            write(path, bytes)?;
            FileStatus::Written
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_skips_and_checks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/a.py");
        assert_eq!(put(&p, b"x", true).unwrap(), FileStatus::Missing);
        assert!(!p.exists());
        assert_eq!(put(&p, b"x", false).unwrap(), FileStatus::Written);
        assert_eq!(put(&p, b"x", false).unwrap(), FileStatus::Unchanged);
        assert_eq!(put(&p, b"y", true).unwrap(), FileStatus::Drifted);
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
    }
}
