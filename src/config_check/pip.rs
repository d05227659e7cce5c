//! The `pip` check: installed Python distributions and their versions.
//!
//! Collection asks the Python of the training environment for its
//! `sys.path` (`MSPROBE_PYTHON`, else `python3` on `PATH`; run as `python
//! -c`, importing nothing but `sys` and `json`), then reads the `Name` and
//! `Version` headers of every `*.dist-info/METADATA` and
//! `*.egg-info[/PKG-INFO]` on it, as `importlib.metadata` finds them. The
//! pack's `pip` file is msprobe's, one `Name=version` line per
//! distribution; where a name is installed twice on the path, only the
//! first (the one Python imports) is listed.
//!
//! Comparison checks msprobe 26.2.0's list (transformers, deepspeed,
//! megatron, numpy, datasets, peft, mindspore, torch) plus `megatron-core`
//! (Megatron's name on PyPI), whatever `-f` says; 8.3.2 appends the `-f`
//! value, `pytorch`, which is no distribution name, so it never compares
//! torch. Names match as pip matches them (case, `-`, `_` and `.` ignored;
//! msprobe matches them exactly).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::ConfigCheckError;
use crate::xlsx::{Cell, Level, Table};

/// The distributions compared, in row order.
const CHECKED: [&str; 9] = ["transformers", "deepspeed", "megatron", "megatron-core", "numpy", "datasets", "peft", "mindspore", "torch"];

/// The sheet's columns (msprobe's).
pub const HEADER: &[&str] = &["package", "bench version", "cmp version", "level"];

/// A metadata file's headers are read up to this many bytes.
const HEADER_BYTES: u64 = 1 << 20;

/// The `pip` file of the Python `python`'s environment.
pub fn collect(python: &Path) -> Result<String, ConfigCheckError> {
    let fail = |message: String| ConfigCheckError::Input { path: python.to_path_buf(), message };
    let out = Command::new(python)
        .args(["-c", "import sys, json; print(json.dumps(sys.path))"])
        .output()
        .map_err(|source| ConfigCheckError::NoPython { path: python.to_path_buf(), source })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(fail(format!("printing sys.path failed ({}): {}", out.status, err.lines().last().unwrap_or("").escape_debug())));
    }
    let path: Vec<String> = serde_json::from_slice(&out.stdout).map_err(|source| ConfigCheckError::SysPath {
        path: python.to_path_buf(),
        got: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        source,
    })?;
    let mut seen = std::collections::HashSet::new();
    let mut text = String::new();
    for dir in path.iter().filter(|d| !d.is_empty()) {
        for (name, version) in distributions(Path::new(dir)) {
            if seen.insert(normalize(&name)) {
                text.push_str(&format!("{name}={version}\n"));
            }
        }
    }
    Ok(text)
}

/// `(Name, Version)` of each distribution in `dir`, by file name.
fn distributions(dir: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            if name.ends_with(".dist-info") {
                Some(p.join("METADATA"))
            } else if name.ends_with(".egg-info") {
                Some(if p.is_dir() { p.join("PKG-INFO") } else { p })
            } else {
                None
            }
        })
        .collect();
    files.sort();
    files.iter().filter_map(|f| headers(f)).collect()
}

/// The `Name` and `Version` of one metadata file (its header block).
fn headers(file: &Path) -> Option<(String, String)> {
    let reader = BufReader::new(std::fs::File::open(file).ok()?.take(HEADER_BYTES));
    let (mut name, mut version) = (None, None);
    for line in reader.lines() {
        let line = line.ok()?;
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Name:") {
            name.get_or_insert_with(|| v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Version:") {
            version.get_or_insert_with(|| v.trim().to_string());
        }
    }
    Some((name?, version?))
}

/// A distribution name as pip compares them (PEP 503).
fn normalize(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// msprobe's reading of a `pip` file: `name → version` (the part after
/// `=` when there is exactly one `=`, else empty), the last line of a name winning.
fn parse(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|line| {
            let parts: Vec<&str> = line.trim().split('=').collect();
            (normalize(parts[0]), if parts.len() == 2 { parts[1].to_string() } else { String::new() })
        })
        .collect()
}

/// The rows of two packs' `pip` files: one error row per checked
/// distribution whose versions differ (`None` where it is missing).
pub fn compare(bench: &str, cmp: &str) -> Table {
    let (bench, cmp) = (parse(bench), parse(cmp));
    let version =
        |list: &[(String, String)], name: &str| list.iter().rev().find(|(n, _)| *n == normalize(name)).map(|(_, v)| v.clone()).filter(|v| !v.is_empty());
    let rows = CHECKED
        .iter()
        .filter_map(|name| {
            let (b, c) = (version(&bench, name), version(&cmp, name));
            (b != c).then(|| {
                vec![
                    Cell::text(name),
                    Cell::Text(b.unwrap_or_else(|| "None".into())),
                    Cell::Text(c.unwrap_or_else(|| "None".into())),
                    Cell::level(Level::Error),
                ]
            })
        })
        .collect();
    Table::new(HEADER, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_is_compared_and_names_match_as_pip_matches_them() {
        let bench = "torch=2.1.0\nNumPy=1.26.4\nmegatron_core=0.8.0\nnumpy=1.26.4\n";
        let cmp = "torch=2.4.0\nnumpy=1.26.4\nMegatron-Core=0.8.0\ntransformers=4.40.0\n";
        assert_eq!(compare(bench, cmp).texts(), vec![vec!["transformers", "None", "4.40.0", "error"], vec!["torch", "2.1.0", "2.4.0", "error"]]);
    }

    #[test]
    fn metadata_headers_are_read_from_dist_info_and_egg_info() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("numpy-1.26.4.dist-info")).unwrap();
        std::fs::write(d.join("numpy-1.26.4.dist-info/METADATA"), "Metadata-Version: 2.1\nName: numpy\nVersion: 1.26.4\n\nName: not-this\n").unwrap();
        std::fs::write(d.join("old.egg-info"), "Name: old\nVersion: 0.1\n").unwrap();
        std::fs::create_dir_all(d.join("broken.dist-info")).unwrap();
        assert_eq!(distributions(d), vec![("numpy".to_string(), "1.26.4".to_string()), ("old".to_string(), "0.1".to_string())]);
    }
}
