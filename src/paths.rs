//! Paths written into generated files (scripts, projects, manifests): relative
//! to the file's folder when both lie in one tree, so a checked-in folder of
//! scripts and its dump can move together.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute and resolved (symlinks, `..`) when it exists, else
/// joined to the current folder.
pub fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// `target` relative to `base` (both absolute), e.g. `../dumps/x`; `None`
/// when they share no folder but the root, where an absolute path is clearer.
fn relative_path(base: &Path, target: &Path) -> Option<PathBuf> {
    (common_depth(base, target) > 1).then(|| relative_always(base, target))
}

fn common_depth(base: &Path, target: &Path) -> usize {
    base.components().zip(target.components()).take_while(|(x, y)| x == y).count()
}

/// `target` relative to `base` (both absolute), through the root if need be
/// (`../../data/d`): what manifests store, so they hold no absolute path.
pub fn relative_always(base: &Path, target: &Path) -> PathBuf {
    let common = common_depth(base, target);
    let mut rel: PathBuf = base.components().skip(common).map(|_| Component::ParentDir).collect();
    rel.extend(target.components().skip(common));
    if rel.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rel
    }
}

/// How a generated file refers to `target` from the folder `base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRef {
    /// The path text.
    pub text: String,
    /// Whether it is relative to `base`.
    pub relative: bool,
}

/// `target` as seen from `base`: relative when they share a tree, else absolute.
pub fn refer(base: &Path, target: &Path) -> PathRef {
    match relative_path(base, target) {
        Some(rel) => PathRef { text: rel.to_string_lossy().into_owned(), relative: true },
        None => PathRef { text: target.to_string_lossy().into_owned(), relative: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_between_trees() {
        let rel = |a: &str, b: &str| relative_path(Path::new(a), Path::new(b)).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(rel("/w/repo/out", "/w/repo/dumps/d"), Some("../dumps/d".into()));
        assert_eq!(rel("/w/repo/out", "/w/repo/out/data"), Some("data".into()));
        assert_eq!(rel("/w/repo/out", "/w/repo/out"), Some(".".into()));
        assert_eq!(rel("/tmp/out", "/data/dumps"), None);
        assert_eq!(relative_always(Path::new("/tmp/out"), Path::new("/data/d")), PathBuf::from("../../data/d"));
        assert_eq!(refer(Path::new("/tmp/out"), Path::new("/data/d")), PathRef { text: "/data/d".into(), relative: false });
    }
}
