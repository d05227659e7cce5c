//! Streaming traversal of a dump document with serde's visitor API.

use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::{DumpError, NonFiniteReader};

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

/// A dump path may name the file or the folder that holds it
/// (`step0/rank/`): returns the `dump.json` to read.
pub fn resolve_dump_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("dump.json")
    } else {
        path.to_path_buf()
    }
}

struct Scan<'a> {
    want: &'a mut dyn FnMut(&str) -> bool,
    sink: &'a mut dyn FnMut(String, Value),
}

impl Scan<'_> {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: String, map: &mut A) -> Result<(), A::Error> {
        if (self.want)(&key) {
            let v: Value = map.next_value()?;
            (self.sink)(key, v);
        } else {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

struct Data<'s, 'a>(&'s mut Scan<'a>);

impl<'de> DeserializeSeed<'de> for Data<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Data<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the \"data\" object of API entries")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            self.0.entry(key, &mut map)?;
        }
        Ok(())
    }
}

struct Top<'s, 'a>(&'s mut Scan<'a>);

impl<'de> Visitor<'de> for Top<'_, '_> {
    type Value = DumpHeader;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a dump object with \"data\"")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DumpHeader, A::Error> {
        let mut h = DumpHeader::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "task" => h.task = map.next_value()?,
                "level" => h.level = map.next_value()?,
                "framework" => h.framework = map.next_value()?,
                "dump_data_dir" | "real_data_path" => h.dump_data_dir = map.next_value()?,
                "data" => map.next_value_seed(Data(self.0))?,
                // msprobe 8.3.2 extract files hold the API entries at the top level.
                _ if key.ends_with(".forward") || key.ends_with(".backward") => self.0.entry(key, &mut map)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(h)
    }
}

/// Streams the dump at `path`: every API entry whose key `want` accepts is
/// built and handed to `sink` in file order; the header is returned.
pub fn scan(path: &Path, want: &mut dyn FnMut(&str) -> bool, sink: &mut dyn FnMut(String, Value)) -> Result<DumpHeader, DumpError> {
    let file = File::open(path).map_err(|source| DumpError::Io { path: path.to_path_buf(), source })?;
    let reader = NonFiniteReader::new(BufReader::with_capacity(256 * 1024, file));
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut scan = Scan { want, sink };
    let header = serde::Deserializer::deserialize_map(&mut de, Top(&mut scan)).and_then(|h| de.end().map(|()| h));
    header.map_err(|e| match e.classify() {
        serde_json::error::Category::Io => DumpError::Io { path: path.to_path_buf(), source: e.into() },
        _ => DumpError::Format { path: path.to_path_buf(), message: e.to_string() },
    })
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
        assert_eq!(h.framework.as_deref(), Some("pytorch"));
        assert_eq!(h.dump_data_dir.as_deref(), Some("/d"));
        assert_eq!(got.len(), 1);
        assert!(super::super::nonfinite_value(&got[0].1["v"]).unwrap().is_nan());
    }

    #[test]
    fn accepts_msprobe_extract_files() {
        let (h, got) = scan_str(r#"{"Mint.add.0.forward": {}, "Mint.add.0.backward": {}, "real_data_path": "/x", "framework": "mindspore"}"#, "Mint").unwrap();
        assert_eq!(got.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["Mint.add.0.forward", "Mint.add.0.backward"]);
        assert_eq!(h.dump_data_dir.as_deref(), Some("/x"));
    }

    #[test]
    fn reports_position_of_bad_json() {
        let e = scan_str("{\"data\": {\"a\": [1,}}", "a").unwrap_err().to_string();
        assert!(e.contains("not a valid msprobe dump.json") && e.contains("line 1"), "{e}");
        let e = scan_str("[1, 2]", "a").unwrap_err().to_string();
        assert!(e.contains("expected a dump object"), "{e}");
    }
}
