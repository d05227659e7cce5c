//! Writing output files atomically: the content goes to a temporary file in
//! the target folder, which is then renamed over the final name. A killed
//! process or a bad input never leaves a partial file under the final name.
//! (Files are not fsynced: a batch writes thousands, and a rename is already
//! atomic for every reader; durability across a power cut is not promised.)

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {source}", path.display())]
pub struct WriteError {
    /// The file (or folder) that failed.
    pub path: PathBuf,
    /// The OS error.
    pub source: std::io::Error,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates `dir` and its parents.
pub fn create_dir(dir: &Path) -> Result<(), WriteError> {
    fs::create_dir_all(dir).map_err(|source| WriteError { path: dir.to_path_buf(), source })
}

/// Writes `bytes` to `path` via a temporary sibling and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |source| WriteError { path: path.to_path_buf(), source };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_leaves_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.py");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "second");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn failure_names_the_file() {
        let e = write_atomic(Path::new("/nonexistent-dir/x.py"), b"x").unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent-dir/x.py: cannot write"));
    }
}
