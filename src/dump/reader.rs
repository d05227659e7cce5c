//! The header of a dump, and tests of reading selected entries: the index
//! locates them, serde_json parses each one from its byte range.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::{index, read_entry, DumpError};
    use serde_json::Value;
    use std::io::Write;

    fn scan_str(s: &str, want: &str) -> Result<(DumpHeader, Vec<(String, Value)>), DumpError> {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(s.as_bytes()).unwrap();
        let idx = index(f.path(), &mut |k| k.starts_with(want))?;
        let got = idx.entries.iter().map(|loc| Ok((loc.key.clone(), read_entry(f.path(), loc)?))).collect::<Result<_, DumpError>>()?;
        Ok((idx.header, got))
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
        assert!(crate::dump::nonfinite::value(&got[0].1["v"]).unwrap().is_nan());
    }

    #[test]
    fn reports_bad_entries_with_their_key() {
        let e = scan_str("{\"data\": {\"a.x.0.forward\": [1,]}}", "a").unwrap_err().to_string();
        assert!(e.contains("not a valid msprobe dump.json: entry \"a.x.0.forward\" (bytes 27..31)"), "{e}");
        let e = scan_str("[1, 2]", "a").unwrap_err().to_string();
        assert!(e.contains("expected a dump object"), "{e}");
    }
}
