//! Reading selected entries of a dump: the index locates them, serde_json
//! parses each one from its byte range.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{index, read_entry, DumpError};

/// The top-level fields of a dump, everything but `data`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DumpHeader {
    /// `statistics` or `tensor`.
    pub task: Option<String>,
    /// `L1`, `mix`, ...
    pub level: Option<String>,
    /// `pytorch`, `mindspore` or `mindtorch`.
    pub framework: Option<String>,
    /// Where the tensor files were written (`dump_data_dir`, or an extract
    /// file's `real_data_path`).
    pub dump_data_dir: Option<String>,
}

/// Where the dump of a path is: the path itself when it is a file, else
/// `dump.json` in that folder, else the `dump.json` files one level down
/// (a `step*` folder holding `rank*`/`proc*` folders), sorted.
pub fn resolve_dump_files(path: &Path) -> Vec<PathBuf> {
    if !path.is_dir() {
        return vec![path.to_path_buf()];
    }
    let direct = path.join("dump.json");
    if direct.is_file() {
        return vec![direct];
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path().join("dump.json")).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    found.sort();
    if found.is_empty() {
        vec![direct] // reading it reports the missing file
    } else {
        found
    }
}

/// Reads every API entry of the dump at `path` whose key `want` accepts,
/// handing each to `sink` in file order; returns the header.
pub fn scan(path: &Path, want: &mut dyn FnMut(&str) -> bool, sink: &mut dyn FnMut(String, Value)) -> Result<DumpHeader, DumpError> {
    let idx = index(path, want)?;
    for loc in &idx.entries {
        sink(loc.key.clone(), read_entry(path, loc)?);
    }
    Ok(idx.header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn scan_str(s: &str, want: &str) -> Result<(DumpHeader, Vec<(String, Value)>), DumpError> {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(s.as_bytes()).unwrap();
        let mut got = vec![];
        let h = scan(f.path(), &mut |k| k.starts_with(want), &mut |k, v| got.push((k, v)))?;
        Ok((h, got))
    }

    #[test]
    fn selects_entries_and_reads_header() {
        let (h, got) = scan_str(
            r#"{"task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": "/d",
                "data": {"A.x.0.forward": {"v": NaN}, "B.y.0.forward": {"v": [1, {"z": -Infinity}]}}}"#,
            "A.",
        )
        .unwrap();
        assert_eq!((h.task.as_deref(), h.level.as_deref()), (Some("tensor"), Some("L1")));
        assert_eq!(h.framework.as_deref(), Some("pytorch"));
        assert_eq!(h.dump_data_dir.as_deref(), Some("/d"));
        assert_eq!(got.len(), 1);
        assert!(crate::dump::nonfinite_value(&got[0].1["v"]).unwrap().is_nan());
    }

    #[test]
    fn reports_bad_entries_with_their_key() {
        let e = scan_str("{\"data\": {\"a.x.0.forward\": [1,]}}", "a").unwrap_err().to_string();
        assert!(e.contains("not a valid msprobe dump.json: entry \"a.x.0.forward\" (bytes 27..31)"), "{e}");
        let e = scan_str("[1, 2]", "a").unwrap_err().to_string();
        assert!(e.contains("expected a dump object"), "{e}");
    }

    #[test]
    fn resolves_step_folders() {
        let dir = tempfile::tempdir().unwrap();
        for rank in ["rank1", "rank0"] {
            std::fs::create_dir(dir.path().join(rank)).unwrap();
            std::fs::write(dir.path().join(rank).join("dump.json"), "{}").unwrap();
        }
        let files = resolve_dump_files(dir.path());
        assert_eq!(files, vec![dir.path().join("rank0/dump.json"), dir.path().join("rank1/dump.json")]);
        assert_eq!(resolve_dump_files(&dir.path().join("rank0")), vec![dir.path().join("rank0/dump.json")]);
    }
}
