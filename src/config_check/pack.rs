//! The config pack: a zip archive in msprobe's layout (`env`, `pip`,
//! `hyperparameters/*.json`, `weights/step<S>/rank<R>/weight.json`,
//! `dataset/step<S>/rank<R>/dataset.json`, `random/rank<R>.json`), written
//! in one piece through the atomic writer and read fully validated.
//!
//! Reading checks every entry before it decompresses any: the names (no
//! absolute path, no `..` or `.` segment, no backslash, drive letter or
//! control character, no name that is both a file and a folder, no
//! symlink) and the sizes the headers declare (at most [`MAX_ENTRY`] bytes
//! an entry, [`MAX_TOTAL`] bytes in all, [`MAX_ENTRIES`] entries). Then each
//! entry is decompressed into memory, never past the size its header
//! declares, so a zip bomb that understates its size stops there too.
//! Nothing is written to disk while reading. A repeated name keeps its last
//! entry, as extraction by msprobe does.

use std::collections::BTreeMap;
use std::io::{BufReader, Cursor, Read, Write};
use std::path::{Path, PathBuf};

use runtime::atomic::{create_dir, write_atomic, WriteError, WriteOptions};
use serde_json::Value;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipArchive, ZipWriter};

use super::error::ConfigCheckError;
use crate::dump::nonfinite::NonFiniteReader;

/// The most bytes one entry may expand to (msprobe's limit).
pub const MAX_ENTRY: u64 = 1 << 30;
/// The most bytes all entries of a pack may expand to (msprobe allows 10
/// GiB; a pack is held in memory here).
pub const MAX_TOTAL: u64 = 2 << 30;
/// The most entries a pack may hold.
pub const MAX_ENTRIES: usize = 1_000_000;

/// A pack read into memory: entry name → content.
#[derive(Debug)]
pub struct Pack {
    /// The zip file.
    pub path: PathBuf,
    files: BTreeMap<String, Vec<u8>>,
}

impl Pack {
    /// An error about entry `name` of this pack.
    pub fn error(&self, name: &str, message: impl std::fmt::Display) -> ConfigCheckError {
        ConfigCheckError::Input { path: self.path.clone(), message: format!("entry {name:?}: {message}") }
    }

    /// Whether the pack has the file `target` or files under `target/`
    /// (msprobe's `os.path.exists(bench/<target>)`).
    pub fn has(&self, target: &str) -> bool {
        self.files.contains_key(target) || self.under(target).next().is_some()
    }

    /// The content of the file `name`.
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(Vec::as_slice)
    }

    /// The files under `folder/`, by name: (name, name below the folder, content).
    pub fn under<'a>(&'a self, folder: &str) -> impl Iterator<Item = (&'a str, &'a str, &'a [u8])> + 'a {
        let prefix = format!("{folder}/");
        let skip = prefix.len();
        self.files.range(prefix.clone()..).take_while(move |(k, _)| k.starts_with(&prefix)).map(move |(k, v)| (k.as_str(), &k[skip..], v.as_slice()))
    }

    /// Entry `name` parsed as msprobe's JSON (bare `NaN`/`Infinity` allowed).
    pub fn json(&self, name: &str, bytes: &[u8]) -> Result<Value, ConfigCheckError> {
        serde_json::from_reader(NonFiniteReader::new(bytes)).map_err(|source| ConfigCheckError::EntryJson {
            path: self.path.clone(),
            entry: name.to_string(),
            source,
        })
    }

    /// Every file, by name.
    pub fn files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }
}

/// Reads and validates the pack at `path`.
pub fn read(path: &Path) -> Result<Pack, ConfigCheckError> {
    let fail = |message: String| ConfigCheckError::Input { path: path.to_path_buf(), message };
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    if meta.is_dir() {
        return Err(fail(
            "is a folder; expected a config pack (.zip) written by config_check -d (two Megatron checkpoint folders are compared as checkpoints)".into(),
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let mut zip = ZipArchive::new(BufReader::new(file)).map_err(|e| fail(format!("not a zip archive: {e}")))?;
    if zip.len() > MAX_ENTRIES {
        return Err(fail(format!("holds {} entries, over the limit of {MAX_ENTRIES}", zip.len())));
    }
    let mut entries = Vec::new();
    let mut total = 0u64;
    for i in 0..zip.len() {
        let f = zip.by_index_raw(i).map_err(|e| fail(format!("entry {i}: unreadable: {e}")))?;
        let name = f.name().map_err(|e| fail(format!("entry {i}: unreadable name: {e}")))?.into_owned();
        let entry = |message: String| fail(format!("entry {name:?}: {message}"));
        let folder = name.ends_with('/');
        check_name(name.strip_suffix('/').unwrap_or(&name)).map_err(&entry)?;
        if f.is_symlink() {
            return Err(entry("is a symlink; a pack holds plain files".into()));
        }
        if folder {
            continue;
        }
        if f.size() > MAX_ENTRY {
            return Err(entry(format!("expands to {} bytes, over the limit of {MAX_ENTRY} bytes an entry", f.size())));
        }
        total += f.size();
        if total > MAX_TOTAL {
            return Err(fail(format!("expands to more than {MAX_TOTAL} bytes in all")));
        }
        entries.push((i, name, f.size()));
    }
    let names: std::collections::BTreeSet<&str> = entries.iter().map(|(_, n, _)| n.as_str()).collect();
    for name in &names {
        let folder = format!("{name}/");
        if names.range(folder.as_str()..).next().is_some_and(|n| n.starts_with(&folder)) {
            return Err(fail(format!("entry {name:?} is both a file and a folder")));
        }
    }
    let mut files = BTreeMap::new();
    for (i, name, size) in entries {
        let entry = |message: String| fail(format!("entry {name:?}: {message}"));
        let f = zip.by_index(i).map_err(|e| entry(format!("cannot decompress: {e}")))?;
        let mut bytes = Vec::with_capacity(size.min(1 << 20) as usize);
        f.take(size + 1).read_to_end(&mut bytes).map_err(|e| entry(format!("corrupt: {e}")))?;
        if bytes.len() as u64 > size {
            return Err(entry(format!("expands past the {size} bytes its header declares (a zip bomb)")));
        }
        files.insert(name, bytes);
    }
    Ok(Pack { path: path.to_path_buf(), files })
}

/// An entry name a pack may hold: relative, inside the pack, printable.
fn check_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("refused: {why}"));
    if name.is_empty() {
        return bad("an empty name");
    }
    if name.starts_with('/') || name.as_bytes().get(1) == Some(&b':') {
        return bad("an absolute path");
    }
    if name.contains('\\') {
        return bad("a backslash in the name");
    }
    if name.chars().any(char::is_control) {
        return bad("a control character in the name");
    }
    if name.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
        return bad("an empty, `.` or `..` path segment");
    }
    if name.len() > 4096 || name.split('/').any(|s| s.len() > 255) {
        return bad("a name longer than 4096 bytes or a segment longer than 255");
    }
    Ok(())
}

/// The zip bytes of `entries` (deflated, msprobe's 1980-01-01 timestamp,
/// mode 0640, no folder entries).
pub fn zip_bytes(entries: &[(String, Vec<u8>)]) -> Result<Vec<u8>, zip::result::ZipError> {
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated).last_modified_time(DateTime::default()).unix_permissions(0o640);
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in entries {
        zip.start_file(name.as_str(), options)?;
        zip.write_all(bytes)?;
    }
    Ok(zip.finish()?.into_inner())
}

/// Writes the pack's files under `dir`, replacing what was there: they go
/// to a temporary sibling folder first, which then takes `dir`'s place, so
/// `dir` never holds a partial or stale extraction.
pub fn extract(pack: &Pack, dir: &Path) -> Result<(), WriteError> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let sibling = |tag: &str| dir.with_file_name(format!(".{name}.{tag}-{}", std::process::id()));
    let (staging, old) = (sibling("tmp"), sibling("old"));
    let remove = |p: &Path| match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
        Ok(_) => std::fs::remove_file(p),
        Err(_) => Ok(()),
    };
    fn err(path: &Path) -> impl Fn(std::io::Error) -> WriteError + '_ {
        move |source| WriteError { path: path.to_path_buf(), source }
    }
    remove(&staging).map_err(err(&staging))?;
    let written = (|| {
        create_dir(&staging)?;
        for (name, bytes) in pack.files() {
            let file = staging.join(name);
            if let Some(parent) = file.parent() {
                create_dir(parent)?;
            }
            write_atomic(&file, bytes, WriteOptions::REPORT)?;
        }
        if std::fs::symlink_metadata(dir).is_ok() {
            std::fs::rename(dir, &old).map_err(err(dir))?;
        }
        std::fs::rename(&staging, dir).map_err(err(dir))
    })();
    if written.is_err() {
        let _ = remove(&staging);
        return written;
    }
    remove(&old).map_err(err(&old))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_outside_the_pack_are_refused() {
        for (name, why) in [
            ("/etc/passwd", "an absolute path"),
            ("a/../../x", "an empty, `.` or `..` path segment"),
            ("C:/x", "an absolute path"),
            ("a\\b", "a backslash in the name"),
            ("a//b", "an empty, `.` or `..` path segment"),
            ("a\nb", "a control character in the name"),
        ] {
            assert_eq!(check_name(name), Err(format!("refused: {why}")), "{name:?}");
        }
        assert_eq!(check_name("weights/step0/rank0/weight.json"), Ok(()));
    }

    #[test]
    fn written_packs_read_back_and_extract_whole() {
        let dir = tempfile::tempdir().unwrap();
        let zip = dir.path().join("p.zip");
        let entries = vec![("env".to_string(), b"{}".to_vec()), ("hyperparameters/hyperparameters_static.json".to_string(), b"{\"a\": NaN}".to_vec())];
        std::fs::write(&zip, zip_bytes(&entries).unwrap()).unwrap();
        let pack = read(&zip).unwrap();
        assert!(pack.has("hyperparameters") && pack.has("env") && !pack.has("weights"));
        assert_eq!(pack.under("hyperparameters").map(|(_, rel, _)| rel).collect::<Vec<_>>(), vec!["hyperparameters_static.json"]);
        let out = dir.path().join("bench");
        std::fs::create_dir_all(out.join("stale")).unwrap();
        extract(&pack, &out).unwrap();
        assert!(!out.join("stale").exists());
        assert_eq!(std::fs::read(out.join("env")).unwrap(), b"{}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no staging folder left");
    }
}
