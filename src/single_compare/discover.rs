//! Which arrays a SingleSave run holds: every `.npy` file of
//! `DIR/data/<key>/step<N>/rank<R>/micro_step<M>/` (or, as `save_ex`
//! without a micro-batch writes them, of `.../rank<R>/` itself, micro-step
//! 0), each under its [`Key`]. Entries are visited in name order, so the
//! first error is the same on every run; nothing is read but names.
//!
//! Folder names are msprobe's: a `step`/`rank`/`micro_step` folder whose
//! number does not parse is an error, other folders and files are ignored
//! (the `.json` statistics among them). Two files that stand for the same
//! key are an error, not a silent last-one-wins. A symlink must resolve
//! inside the folder it sits in (the path rule of `runtime::io`).

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use runtime::io::{resolve_inside, IoError};

use super::error::CompareError;
use crate::unreadable::Unreadable;

/// Which array of one save an `.npy` file is: `<key>.npy` is 0, a list's
/// `<key>.<i>.npy` is `i`, a dict's `<key>.<name>.npy` is `name`, and a
/// file not named `<key>.*` is its whole file name, so that no two file
/// names share an id (but `<key>.npy` and `<key>.0.npy`, both 0 as in
/// msprobe).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Id {
    /// The tensor itself (0) or a list element.
    Index(u64),
    /// A dict entry's key.
    Name(String),
    /// The file name of an `.npy` file not named after its key.
    File(String),
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Index(n) => write!(f, "{n}"),
            Id::Name(s) | Id::File(s) => write!(f, "{s:?}"),
        }
    }
}

/// Where an array sits in a run: msprobe's row key, in its sort order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// `step<N>`.
    pub step: u64,
    /// `rank<R>`.
    pub rank: u64,
    /// `micro_step<M>`, 0 for files directly in the rank folder.
    pub micro_step: u64,
    /// The array within the save.
    pub id: Id,
}

/// The arrays of one run: per key (the `data/<key>` folder), per [`Key`],
/// the file. A key folder holding no array is not listed.
pub type Run = BTreeMap<String, BTreeMap<Key, PathBuf>>;

/// The number of a folder named `<prefix><digits>`: `None` when the name
/// does not start with `prefix` (the folder is not one of these), else the
/// number or why the name does not parse.
pub fn numbered(name: &str, prefix: &str) -> Option<Result<u64, String>> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Err(format!("expected a folder named {prefix}<N> (N a number), got {name:?}")));
    }
    Some(digits.parse().map_err(|_| format!("expected a folder named {prefix}<N> with N below 2^64, got {name:?}")))
}

/// The [`Id`] of the file `file` of key `tag`, or `None` when it is no
/// `.npy` file (or only the extension).
pub fn array_id(tag: &str, file: &str) -> Option<Id> {
    let stem = file.strip_suffix(".npy").filter(|s| !s.is_empty())?;
    if stem == tag {
        return Some(Id::Index(0));
    }
    match stem.strip_prefix(tag).and_then(|r| r.strip_prefix('.')).filter(|r| !r.is_empty()) {
        Some(rest) => Some(index(rest).map_or_else(|| Id::Name(rest.to_string()), Id::Index)),
        None => Some(Id::File(file.to_string())),
    }
}

/// A list index as SingleSave writes one: digits without a leading zero.
fn index(text: &str) -> Option<u64> {
    let canonical = text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// Every array of the run in `dir` (its `data/` folder).
pub fn discover(dir: &Path) -> Result<Run, CompareError> {
    let data = dir.join("data");
    match resolve_inside(&data) {
        Ok(resolved) if resolved.is_dir() => {}
        Ok(_) => return Err(layout(&data, "expected the data folder of a SingleSave run, found a file")),
        Err(IoError::Read { source, .. }) => {
            return Err(layout(&data, format!("expected the data folder of a SingleSave run (data/<key>/step<N>/rank<R>): {source}")))
        }
        Err(e) => return Err(refused(&data, e)),
    }
    let mut run = Run::new();
    for (tag, tag_dir, is_dir) in entries(&data)? {
        if !is_dir {
            continue;
        }
        let tag = printable(&tag_dir, tag)?;
        for (step, step_dir) in numbered_folders(&tag_dir, "step")? {
            for (rank, rank_dir) in numbered_folders(&step_dir, "rank")? {
                for (name, path, is_dir) in entries(&rank_dir)? {
                    if !is_dir {
                        add(&mut run, &tag, (step, rank, 0), name, path)?;
                        continue;
                    }
                    match numbered(&name, "micro_step") {
                        None => {}
                        Some(Err(message)) => return Err(layout(&rank_dir, message)),
                        Some(Ok(micro)) => {
                            for (file, file_path, is_dir) in entries(&path)? {
                                if !is_dir {
                                    add(&mut run, &tag, (step, rank, micro), file, file_path)?;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(run)
}

/// Records `path` (named `file`) under `tag` when it is an `.npy` file;
/// a second file for the same key is an error naming both.
fn add(run: &mut Run, tag: &str, (step, rank, micro_step): (u64, u64, u64), file: String, path: PathBuf) -> Result<(), CompareError> {
    let Some(id) = array_id(tag, &file) else { return Ok(()) };
    printable(&path, file)?;
    let key = Key { step, rank, micro_step, id };
    let arrays = run.entry(tag.to_string()).or_default();
    if let Some(first) = arrays.get(&key) {
        let message =
            format!("{} already stands for step {step}, rank {rank}, micro_step {micro_step}, id {}: expected one file per array", first.display(), key.id);
        return Err(layout(&path, message));
    }
    arrays.insert(key, path);
    Ok(())
}

/// The folders of `dir` named `<prefix><N>`, with N, in name order.
fn numbered_folders(dir: &Path, prefix: &str) -> Result<Vec<(u64, PathBuf)>, CompareError> {
    let mut found = vec![];
    for (name, path, is_dir) in entries(dir)? {
        match numbered(&name, prefix) {
            None => {}
            Some(Err(message)) => return Err(layout(dir, message)),
            Some(Ok(_)) if !is_dir => return Err(layout(&path, format!("expected {prefix}<N> to be a folder, found a file"))),
            Some(Ok(n)) => found.push((n, path)),
        }
    }
    Ok(found)
}

/// The entries of `dir` in name order: name (lossy UTF-8; [`printable`]
/// refuses the lossy ones that are used), path, and whether it is a folder
/// (a symlink is followed once it is known to stay inside `dir`).
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, bool)>, CompareError> {
    let read = fs::read_dir(dir).map_err(Unreadable::at(dir, "cannot read the folder"))?;
    let mut out = vec![];
    for entry in read {
        let entry = entry.map_err(Unreadable::at(dir, "cannot read the folder"))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(Unreadable::at(&path, "cannot read"))?;
        let is_dir = if kind.is_symlink() {
            let resolved = resolve_inside(&path).map_err(|e| refused(&path, e))?;
            resolved.is_dir()
        } else {
            kind.is_dir()
        };
        out.push((entry.file_name().to_string_lossy().into_owned(), path, is_dir));
    }
    out.sort();
    Ok(out)
}

/// `name` when it can appear in a one-line message and a cell: UTF-8 without
/// control characters.
fn printable(path: &Path, name: String) -> Result<String, CompareError> {
    if name.contains(char::REPLACEMENT_CHARACTER) || name.chars().any(char::is_control) {
        let parent = path.parent().unwrap_or(Path::new(""));
        return Err(layout(parent, format!("expected printable UTF-8 names, got {name:?}")));
    }
    Ok(name)
}

fn layout(path: &Path, message: impl Into<String>) -> CompareError {
    CompareError::Layout { path: path.to_path_buf(), message: message.into() }
}

/// A symlink that leaves its folder, or one that cannot be resolved.
fn refused(path: &Path, e: IoError) -> CompareError {
    match e {
        IoError::Outside { resolved, dir, .. } => {
            layout(path, format!("refused: it resolves to {}, outside the run folder {}", resolved.display(), dir.display()))
        }
        IoError::Read { source, .. } => layout(path, format!("cannot resolve: {source}")),
        other => CompareError::Tensor(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_numbers_parse_or_say_why() {
        assert_eq!(numbered("step12", "step"), Some(Ok(12)));
        assert_eq!(numbered("rank007", "rank"), Some(Ok(7)));
        assert_eq!(numbered("other", "step"), None);
        assert_eq!(numbered("step", "step"), Some(Err("expected a folder named step<N> (N a number), got \"step\"".into())));
        assert_eq!(numbered("step-1", "step"), Some(Err("expected a folder named step<N> (N a number), got \"step-1\"".into())));
        assert_eq!(numbered("micro_step2x", "micro_step"), Some(Err("expected a folder named micro_step<N> (N a number), got \"micro_step2x\"".into())));
        assert_eq!(
            numbered("rank99999999999999999999", "rank"),
            Some(Err("expected a folder named rank<N> with N below 2^64, got \"rank99999999999999999999\"".into()))
        );
    }

    #[test]
    fn ids_keep_dict_entries_apart() {
        let id = |f| array_id("loss", f);
        assert_eq!(id("loss.npy"), Some(Id::Index(0)));
        assert_eq!(id("loss.3.npy"), Some(Id::Index(3)));
        assert_eq!(id("loss.0.npy"), Some(Id::Index(0)));
        assert_eq!(id("loss.03.npy"), Some(Id::Name("03".into())));
        assert_eq!(id("loss.mean.npy"), Some(Id::Name("mean".into())));
        assert_eq!(id("loss.a.b.npy"), Some(Id::Name("a.b".into())));
        assert_eq!(id("loss.99999999999999999999.npy"), Some(Id::Name("99999999999999999999".into())));
        assert_eq!(id("lossy.npy"), Some(Id::File("lossy.npy".into())));
        assert_eq!(id("other_12.npy"), Some(Id::File("other_12.npy".into())));
        // A foreign file never takes a dict entry's id (found by the fuzz target).
        assert_ne!(id("anks.npy"), id("loss.anks.npy"));
        assert_eq!(id("loss.json"), None);
        assert_eq!(id(".npy"), None);
        assert_eq!(array_id("123", "123.npy"), Some(Id::Index(0)));
        assert!(Id::Index(u64::MAX) < Id::Name(String::new()) && Id::Name("z".into()) < Id::File(String::new()), "indices, then names, then files");
    }
}
