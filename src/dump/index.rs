//! A fast structural scan of a dump: where each API entry's value lies in
//! the file, without parsing it.
//!
//! The scanner tracks only what JSON structure needs (strings, escapes,
//! nesting) and copies out the keys of the top-level object and of its
//! `"data"` object. Everything else is skipped at memchr speed. Selected
//! entries are later parsed from their byte range alone ([`read_entry`]),
//! so memory stays bounded by the largest selected entry, not by the file.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use super::nonfinite::NonFiniteReader;
use super::{DumpError, DumpHeader};

/// Where one entry's JSON value lies in the dump file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryLoc {
    /// The entry's key, e.g. `Tensor.add.0.forward`.
    pub key: String,
    /// Byte offset of the value's first byte (after the `:`).
    pub start: u64,
    /// Byte offset one past the value's end (the `,` or `}` that follows it).
    pub end: u64,
}

/// The dump's header fields and the selected entries, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DumpIndex {
    /// `task`, `level`, `framework`, `dump_data_dir`.
    pub header: DumpHeader,
    /// Locations of the entries the caller selected.
    pub entries: Vec<EntryLoc>,
}

/// Which top-level values to keep.
enum Keep {
    /// A header field: its raw bytes are parsed after the value ends.
    Header(String),
    /// An API entry (extract-file layout): its range is recorded.
    Entry(String),
}

struct Scanner<'a> {
    want: &'a mut dyn FnMut(&str) -> bool,
    /// Takes each selected entry's location as soon as its value ends.
    each: &'a mut dyn FnMut(EntryLoc) -> Result<(), DumpError>,
    /// The first error `each` returned; the scan stops at it.
    failed: Option<DumpError>,
    header: DumpHeader,
    /// Container kinds from the outside in: `{` or `[`.
    stack: Vec<u8>,
    /// Whether the object at each level expects a key next.
    expect_key: Vec<bool>,
    in_string: bool,
    escape: bool,
    /// The key being read (only at levels 1 and 2), and whether it is one.
    key: Option<Vec<u8>>,
    last_key: Vec<u8>,
    /// Inside `"data"` (level-2 keys are entries).
    in_data: bool,
    /// The value being recorded: its kind, start offset, and level.
    open: Option<(Keep, u64, usize)>,
    header_bytes: Vec<u8>,
    pending_value_at: Option<usize>,
}

/// Bytes that open, close or separate JSON values, or start a string.
const STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    let bytes = *b"\"{}[],:";
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
};

fn header_value(bytes: &[u8]) -> Option<String> {
    serde_json::from_slice::<Option<String>>(bytes).ok().flatten()
}

impl Scanner<'_> {
    fn level(&self) -> usize {
        self.stack.len()
    }

    fn key_done(&mut self, key: Vec<u8>) {
        self.last_key = key;
    }

    /// A value starts at `pos` in an object at `level` whose key was just read.
    fn value_start(&mut self, pos: u64, level: usize) {
        let key = String::from_utf8_lossy(&self.last_key).into_owned();
        let keep = match (level, key.as_str()) {
            (1, "task" | "level" | "framework" | "dump_data_dir" | "real_data_path") => Some(Keep::Header(key)),
            (1, "data") => {
                self.in_data = true;
                None
            }
            (1, k) if k.ends_with(".forward") || k.ends_with(".backward") => (self.want)(k).then_some(Keep::Entry(key)),
            (2, k) if self.in_data => (self.want)(k).then_some(Keep::Entry(key)),
            _ => None,
        };
        if let Some(k) = keep {
            self.header_bytes.clear();
            self.open = Some((k, pos, level));
        }
    }

    /// The value recorded at `level` ends at `pos`.
    fn value_end(&mut self, pos: u64, level: usize) {
        if matches!(self.open, Some((_, _, l)) if l == level) {
            let (keep, start, _) = self.open.take().expect("checked above");
            match keep {
                Keep::Entry(key) => {
                    if self.failed.is_none() {
                        self.failed = (self.each)(EntryLoc { key, start, end: pos }).err();
                    }
                }
                Keep::Header(key) => {
                    // The recorded bytes end with the `,` or `}` that closed the value.
                    let bytes = self.header_bytes.trim_ascii_end();
                    let bytes = bytes.strip_suffix(b",").or_else(|| bytes.strip_suffix(b"}")).unwrap_or(bytes);
                    let v = header_value(bytes);
                    let h = &mut self.header;
                    match key.as_str() {
                        "task" => h.task = v,
                        "level" => h.level = v,
                        "framework" => h.framework = v,
                        _ => h.dump_data_dir = v,
                    }
                }
            }
        }
    }

    /// Whether the value being recorded is a header field, whose bytes are kept.
    fn recording_header(&self) -> bool {
        matches!(self.open, Some((Keep::Header(_), _, _)))
    }

    /// Scans `chunk`, which starts at byte `base` of the file: strings are
    /// read by [`Self::string_bytes`], the bytes between them that cannot
    /// change the structure are skipped, and the others go to [`Self::byte`].
    fn scan(&mut self, chunk: &[u8], base: u64) -> Result<(), String> {
        let mut i = 0;
        while i < chunk.len() {
            if self.in_string {
                match self.string_bytes(&chunk[i..]) {
                    Some(n) => i += n,
                    None => return Ok(()),
                }
                continue;
            }
            if self.pending_value_at.is_none() && !self.recording_header() {
                // Fast path: skip bytes that cannot change the structure.
                match chunk[i..].iter().position(|&b| STRUCTURAL[b as usize]) {
                    Some(j) => i += j,
                    None => return Ok(()),
                }
            }
            self.byte(chunk[i], base + i as u64)?;
            i += 1;
        }
        Ok(())
    }

    /// Reads `rest`, which starts inside a string, up to the next quote or
    /// backslash (or the one byte an escape takes), copying it into the key
    /// and the header field being read. How many bytes it read; `None` when
    /// the string goes on past `rest`, all of which it read.
    fn string_bytes(&mut self, rest: &[u8]) -> Option<usize> {
        if self.escape {
            // The byte right after a backslash is taken literally.
            self.escape = false;
            if let Some(k) = self.key.as_mut() {
                k.push(rest[0]);
            }
            if self.recording_header() {
                self.header_bytes.push(rest[0]);
            }
            return Some(1);
        }
        // Jump to the next quote or backslash.
        let Some(j) = memchr::memchr2(b'"', b'\\', rest) else {
            if let Some(k) = self.key.as_mut() {
                k.extend_from_slice(rest);
            }
            if self.recording_header() {
                self.header_bytes.extend_from_slice(rest);
            }
            return None;
        };
        if let Some(k) = self.key.as_mut() {
            k.extend_from_slice(&rest[..j]);
        }
        if self.recording_header() {
            self.header_bytes.extend_from_slice(&rest[..=j]);
        }
        if rest[j] == b'\\' {
            self.escape = true;
            if let Some(k) = self.key.as_mut() {
                k.push(b'\\');
            }
        } else {
            self.in_string = false;
            if let Some(k) = self.key.take() {
                self.key_done(k);
            }
        }
        Some(j + 1)
    }

    /// One byte `b` outside strings, at `pos` in the file: it may start the
    /// value a `:` announced and be recorded into a header field; a quote,
    /// a bracket, `:` or `,` moves the scan through the structure.
    fn byte(&mut self, b: u8, pos: u64) -> Result<(), String> {
        if let Some(level) = self.pending_value_at {
            if !b.is_ascii_whitespace() {
                self.pending_value_at = None;
                self.value_start(pos, level);
            }
        }
        if self.recording_header() {
            self.header_bytes.push(b);
        }
        match b {
            b'"' => {
                self.in_string = true;
                let level = self.level();
                if level > 0 && self.stack[level - 1] == b'{' && self.expect_key[level - 1] {
                    self.expect_key[level - 1] = false;
                    if level <= 2 {
                        self.key = Some(Vec::new());
                    }
                }
            }
            b'{' | b'[' => {
                self.stack.push(b);
                self.expect_key.push(b == b'{');
            }
            b'}' | b']' => self.close(b, pos)?,
            b':' => {
                // Only values of the top object and of `"data"` are of interest.
                let level = self.level();
                if level <= 2 {
                    self.pending_value_at = Some(level);
                }
            }
            b',' => {
                let level = self.level();
                self.value_end(pos, level);
                if level > 0 && self.stack[level - 1] == b'{' {
                    self.expect_key[level - 1] = true;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The closing bracket `b` at `pos`: it must match the container it
    /// closes, whose last value ends here.
    fn close(&mut self, b: u8, pos: u64) -> Result<(), String> {
        let level = self.level();
        let Some(open) = self.stack.pop() else {
            return Err(format!("unbalanced {:?} at byte {pos}", b as char));
        };
        self.expect_key.pop();
        if (open == b'{') != (b == b'}') {
            return Err(format!("mismatched {:?} at byte {pos}", b as char));
        }
        // The container's last value ends here.
        self.value_end(pos, level);
        if level == 2 && self.in_data {
            self.in_data = false;
        }
        Ok(())
    }
}

/// Scans the dump at `path` once, recording the location of every entry
/// whose key `want` accepts (entries of `"data"`, or top-level API keys of
/// an msprobe 8.3.2 extract file) and parsing the header fields.
pub fn index(path: &Path, want: &mut dyn FnMut(&str) -> bool) -> Result<DumpIndex, DumpError> {
    let mut entries = Vec::new();
    let header = for_each_entry(path, want, &mut |loc| {
        entries.push(loc);
        Ok(())
    })?;
    Ok(DumpIndex { header, entries })
}

/// The same pass as [`index`], but each selected entry's location goes to
/// `each` as soon as the entry ends, in file order, instead of into a list
/// (memory stays flat however many entries the dump has); the scan stops at
/// the first error `each` returns. Returns the header fields.
pub fn for_each_entry(
    path: &Path,
    want: &mut dyn FnMut(&str) -> bool,
    each: &mut dyn FnMut(EntryLoc) -> Result<(), DumpError>,
) -> Result<DumpHeader, DumpError> {
    let io = |source| DumpError::Io { path: path.to_path_buf(), source };
    let fmt = |message: String| DumpError::Format { path: path.to_path_buf(), message };
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
    let mut s = Scanner {
        want,
        each,
        failed: None,
        header: DumpHeader::default(),
        stack: Vec::new(),
        expect_key: Vec::new(),
        in_string: false,
        escape: false,
        key: None,
        last_key: Vec::new(),
        in_data: false,
        open: None,
        header_bytes: Vec::new(),
        pending_value_at: None,
    };
    let mut base = 0u64;
    let mut saw_object = false;
    loop {
        let chunk = reader.fill_buf().map_err(io)?;
        if chunk.is_empty() {
            break;
        }
        if !saw_object {
            match chunk.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'{') => saw_object = true,
                Some(_) => return Err(fmt("expected a dump object at the top level".into())),
                None => {}
            }
        }
        let n = chunk.len();
        s.scan(chunk, base).map_err(fmt)?;
        if let Some(e) = s.failed.take() {
            return Err(e);
        }
        reader.consume(n);
        base += n as u64;
    }
    if !saw_object || !s.stack.is_empty() || s.in_string {
        return Err(fmt(format!("the document ends early (at byte {base}) or is empty")));
    }
    Ok(s.header)
}

/// Parses one entry from its byte range (msprobe's NaN/Infinity tokens allowed).
pub fn read_entry(path: &Path, loc: &EntryLoc) -> Result<Value, DumpError> {
    let io = |source| DumpError::Io { path: path.to_path_buf(), source };
    let mut file = File::open(path).map_err(io)?;
    file.seek(SeekFrom::Start(loc.start)).map_err(io)?;
    let reader = NonFiniteReader::new(BufReader::new(file.take(loc.end - loc.start)));
    serde_json::from_reader(reader)
        .map_err(|e| DumpError::Format { path: path.to_path_buf(), message: format!("entry {:?} (bytes {}..{}): {e}", loc.key, loc.start, loc.end) })
}

/// Reads entries one after another through one open file, for a pass over
/// every entry of a large dump in file order: each range is read into a
/// buffer the size of that entry and parsed from it (msprobe's NaN/Infinity
/// tokens allowed), so memory stays bounded by the largest entry.
pub struct EntryReader {
    path: std::path::PathBuf,
    file: BufReader<File>,
    pos: u64,
    raw: Vec<u8>,
    text: Vec<u8>,
}

impl EntryReader {
    /// Opens the dump at `path`.
    pub fn open(path: &Path) -> Result<EntryReader, DumpError> {
        let file = File::open(path).map_err(|source| DumpError::Io { path: path.to_path_buf(), source })?;
        Ok(EntryReader { path: path.to_path_buf(), file: BufReader::with_capacity(1 << 20, file), pos: 0, raw: Vec::new(), text: Vec::new() })
    }

    /// Parses the entry at `loc` (a location [`index`] gave for this file).
    pub fn read(&mut self, loc: &EntryLoc) -> Result<Value, DumpError> {
        let io = |source| DumpError::Io { path: self.path.clone(), source };
        let skip = loc.start.checked_sub(self.pos).and_then(|d| i64::try_from(d).ok());
        match skip {
            Some(d) => self.file.seek_relative(d).map_err(io)?,
            None => {
                self.file.seek(SeekFrom::Start(loc.start)).map_err(io)?;
            }
        }
        self.raw.clear();
        (&mut self.file).take(loc.end - loc.start).read_to_end(&mut self.raw).map_err(io)?;
        self.pos = loc.start + self.raw.len() as u64;
        // Without the text `NaN` or `Infinity` there is no token to rewrite.
        let text = if memchr::memmem::find(&self.raw, b"NaN").is_some() || memchr::memmem::find(&self.raw, b"Infinity").is_some() {
            self.text.clear();
            NonFiniteReader::new(self.raw.as_slice()).read_to_end(&mut self.text).map_err(io)?;
            &self.text
        } else {
            &self.raw
        };
        serde_json::from_slice(text)
            .map_err(|e| DumpError::Format { path: self.path.clone(), message: format!("entry {:?} (bytes {}..{}): {e}", loc.key, loc.start, loc.end) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn entry_reader_reads_in_any_order() {
        let f = file(DUMP);
        let idx = index(f.path(), &mut |_| true).unwrap();
        let mut r = EntryReader::open(f.path()).unwrap();
        for loc in idx.entries.iter().chain(idx.entries.iter().rev()) {
            assert_eq!(r.read(loc).unwrap(), read_entry(f.path(), loc).unwrap(), "{}", loc.key);
        }
        let bad = EntryLoc { key: "A.x.0.forward".into(), start: idx.entries[0].start, end: idx.entries[0].end - 2 };
        let e = r.read(&bad).unwrap_err().to_string();
        assert!(e.contains("not a valid msprobe dump.json: entry \"A.x.0.forward\""), "{e}");
    }

    fn file(s: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(s.as_bytes()).unwrap();
        f
    }

    const DUMP: &str = r#"{"task": "tensor", "level": "L1", "framework": "py\"torch", "dump_data_dir": null,
      "data": {"A.x.0.forward": {"v": [NaN, "a}\"]", {"k": -Infinity}]}, "A.x.0.backward" :{"g":1},
               "B.y.0.forward": {}}, "extra": [1, {"data": {"A.x.0.forward": 5}}]}"#;

    #[test]
    fn locates_selected_entries_and_header() {
        let f = file(DUMP);
        let idx = index(f.path(), &mut |k| k.starts_with("A.")).unwrap();
        assert_eq!(idx.header.task.as_deref(), Some("tensor"));
        assert_eq!(idx.header.framework.as_deref(), Some("py\"torch"));
        assert_eq!(idx.header.dump_data_dir, None);
        let keys: Vec<&str> = idx.entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["A.x.0.forward", "A.x.0.backward"]);
        let v = read_entry(f.path(), &idx.entries[0]).unwrap();
        assert_eq!(v["v"][1], "a}\"]");
        assert!(crate::dump::nonfinite::value(&v["v"][2]["k"]).unwrap().is_infinite());
        assert_eq!(read_entry(f.path(), &idx.entries[1]).unwrap()["g"], 1);
    }

    #[test]
    fn reads_extract_layout_and_escaped_keys() {
        let f = file(r#"{"Mint.add.0.forward": {"a": 1}, "real_data_path": "/x", "Mint.add.0.backward": [], "framework": "mindspore"}"#);
        let idx = index(f.path(), &mut |_| true).unwrap();
        assert_eq!(idx.entries.len(), 2);
        assert_eq!(idx.header.dump_data_dir.as_deref(), Some("/x"));
        let f = file(r#"{"data": {"T.a\"b.0.forward": 1}}"#);
        assert_eq!(index(f.path(), &mut |_| true).unwrap().entries[0].key, "T.a\\\"b.0.forward");
    }

    #[test]
    fn floats_parse_exactly() {
        // serde_json's default parser is 1 ulp off here; dumps need `float_roundtrip`.
        let f = file(r#"{"data": {"A.x.0.forward": {"Max": 1.8675579901499675, "Min": -2.1280465126037598}}}"#);
        let idx = index(f.path(), &mut |_| true).unwrap();
        let v = read_entry(f.path(), &idx.entries[0]).unwrap();
        assert_eq!(v["Max"].as_f64(), Some(1.8675579901499675));
        assert_eq!(v["Min"].as_f64(), Some(-2.1280465126037598));
    }

    #[test]
    fn rejects_broken_documents() {
        for bad in ["", "[1]", r#"{"data": {"A.x.0.forward": [1, 2}}"#, r#"{"data": {"#, r#"{"a": "x"#] {
            let f = file(bad);
            assert!(matches!(index(f.path(), &mut |_| true), Err(DumpError::Format { .. })), "{bad:?}");
        }
    }
}
