//! The one atomic file writer of msprobe-rs (scripts, projects, manifests,
//! extract files and CSV reports alike): the content goes to a new hidden
//! temporary file in the target folder, which is then renamed over the final
//! name. A killed process or a failed write never leaves a partial file
//! under the final name, and a failure removes the temporary file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file or folder could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {source}", path.display())]
pub struct WriteError {
    /// The file (or folder) that failed.
    pub path: PathBuf,
    /// The OS error.
    pub source: std::io::Error,
}

/// How a file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// Unix permission bits of the final file (`None`: the process default).
    pub mode: Option<u32>,
    /// fsync before the rename, for files that must survive a power cut
    /// (reports); batches of thousands of scripts skip it.
    pub durable: bool,
}

impl WriteOptions {
    /// Generated files: default permissions, not synced.
    pub const GENERATED: WriteOptions = WriteOptions { mode: None, durable: false };
    /// msprobe's CSV reports: mode 0o640, synced.
    pub const REPORT: WriteOptions = WriteOptions { mode: Some(0o640), durable: true };
}

/// Creates `dir` and its parents.
pub fn create_dir(dir: &Path) -> Result<(), WriteError> {
    fs::create_dir_all(dir).map_err(|source| WriteError { path: dir.to_path_buf(), source })
}

/// Writes `bytes` to `path` via a new temporary sibling and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8], options: WriteOptions) -> Result<(), WriteError> {
    write_atomic_with(path, options, &mut |file| file.write_all(bytes))
}

/// [`write_atomic`] of what `fill` writes, for a file too large to hold in
/// memory (a batch's manifest): the same temporary sibling and rename.
pub fn write_atomic_with(path: &Path, options: WriteOptions, fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>) -> Result<(), WriteError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let err = |source| WriteError { path: path.to_path_buf(), source };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (tmp, mut file) = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        match fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(err(source)),
        }
    };
    let result = (|| {
        fill(&mut file)?;
        if options.durable {
            file.sync_all()?;
        }
        drop(file);
        #[cfg(unix)]
        if let Some(mode) = options.mode {
            fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        }
        fs::rename(&tmp, path)
    })();
    result.map_err(|source| {
        let _ = fs::remove_file(&tmp);
        err(source)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_and_leaves_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.py");
        write_atomic(&p, b"first", WriteOptions::GENERATED).unwrap();
        write_atomic(&p, b"second", WriteOptions::REPORT).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "second");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        #[cfg(unix)]
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&p).unwrap().permissions()) & 0o777, 0o640);
    }

    #[test]
    fn failure_names_the_file_and_leaves_no_temporary() {
        let e = write_atomic(Path::new("/nonexistent-dir/x.py"), b"x", WriteOptions::GENERATED).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent-dir/x.py: cannot write"), "{e}");
        // Renaming a file over a non-empty folder fails after the temporary is written.
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("taken");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("x"), b"x").unwrap();
        assert!(write_atomic(&target, b"data", WriteOptions::REPORT).is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
