//! `stack.json` beside a dump: the Python call stack msprobe recorded for
//! each API call. The one reader of the file: [`StackFile`] is its items as
//! msprobe reads them (`nan_analyze` copies their frames unchanged, looked
//! up by msprobe's rule), [`Stacks`] the typed frames reports show. Two
//! layouts: `{"0": [[op names], [frames]], ...}` (msprobe 8) and
//! `{"<Prefix.op.N.direction>": [frames], ...}` (older dumps). A frame is
//! msprobe's text `File <path>, line <n>, in <function>, \n <code>`.
//! Raw JSON stops here: callers get [`Frame`]s or opaque [`RawJson`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::ops::RawJson;

/// What is wrong with a `stack.json`.
#[derive(Debug, thiserror::Error)]
pub enum StackProblem {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    /// The text is not JSON.
    #[error("not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// The JSON is not an object.
    #[error("expected an object {{\"0\": [[op names], [frames]], ...}}")]
    NotAnObject,
    /// The value of this key is not a list.
    #[error("key {0:?}: expected a list [[op names], [frames]]")]
    NotAList(String),
}

/// Why a `stack.json` could not be read: the file and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct StackError {
    /// The `stack.json`.
    pub path: PathBuf,
    /// What is wrong with it.
    #[source]
    pub problem: StackProblem,
}

/// The items of a `stack.json`, in file order: (key, the list it holds).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StackFile(Vec<(String, Vec<Value>)>);

impl StackFile {
    /// Parses the file's text: an object whose values are lists (msprobe
    /// refuses other values too).
    pub fn parse(text: &[u8]) -> Result<StackFile, StackProblem> {
        let v: Value = serde_json::from_slice(text).map_err(StackProblem::Json)?;
        let Value::Object(map) = v else {
            return Err(StackProblem::NotAnObject);
        };
        map.into_iter()
            .map(|(k, v)| match v {
                Value::Array(item) => Ok((k, item)),
                _ => Err(StackProblem::NotAList(k)),
            })
            .collect::<Result<_, _>>()
            .map(StackFile)
    }

    /// Reads the file at `path`.
    pub fn read(path: &Path) -> Result<StackFile, StackError> {
        let fail = |problem| StackError { path: path.to_path_buf(), problem };
        let text = std::fs::read(path).map_err(|e| fail(StackProblem::Read(e)))?;
        StackFile::parse(&text).map_err(fail)
    }

    /// msprobe's lookup (`nan_analyze`): the second element of the first
    /// item of two or more whose first element holds `op` (Python's `in`:
    /// an element of a list, a substring of a string, a key of an object),
    /// or `{}` as msprobe writes when there is none.
    pub fn frames_of(&self, op: &str) -> RawJson {
        let holds = |names: &Value| match names {
            Value::Array(a) => a.iter().any(|n| n.as_str() == Some(op)),
            Value::String(s) => s.contains(op),
            Value::Object(o) => o.contains_key(op),
            _ => false,
        };
        let found = self.0.iter().find(|(_, item)| item.len() >= 2 && holds(&item[0])).map(|(_, item)| item[1].clone());
        RawJson(found.unwrap_or(Value::Object(Map::new())))
    }
}

/// One Python frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The source file.
    pub file: String,
    /// The line number (0 when not recorded).
    pub line: u64,
    /// The function.
    pub function: String,
    /// The code line, trimmed.
    pub code: String,
    /// Whether the frame is the user's code (not a library's, not msprobe's).
    pub user: bool,
}

/// The stacks of one dump, by op key (`Prefix.op.N.forward`).
#[derive(Debug, Default)]
pub struct Stacks {
    by_key: HashMap<String, Vec<Frame>>,
}

/// The stacks of the dump at `dump_file` (its sibling `stack.json`), or
/// why there are none (for the caller's note: a missing or malformed file
/// is never an error).
pub fn read_stacks(dump_file: &Path) -> Result<Stacks, StackError> {
    let path = dump_file.parent().unwrap_or(Path::new(".")).join("stack.json");
    StackFile::read(&path).map(|f| Stacks::from_file(&f))
}

impl Stacks {
    /// The typed frames of a file's items, by op key.
    pub fn from_file(file: &StackFile) -> Stacks {
        let mut by_key = HashMap::new();
        for (k, item) in &file.0 {
            match item.as_slice() {
                // msprobe 8: [[names], [frames]]
                [Value::Array(names), Value::Array(frames), ..] if names.iter().all(Value::is_string) => {
                    let frames: Vec<Frame> = frames.iter().filter_map(Value::as_str).map(parse_frame).collect();
                    for n in names.iter().filter_map(Value::as_str) {
                        by_key.entry(n.to_string()).or_insert_with(|| frames.clone());
                    }
                }
                // older: key -> [frames]
                frames if frames.iter().all(Value::is_string) => {
                    by_key.entry(k.clone()).or_insert_with(|| frames.iter().filter_map(Value::as_str).map(parse_frame).collect());
                }
                _ => {}
            }
        }
        Stacks { by_key }
    }

    /// The frames of `key` (`Prefix.op.N.forward`), user frames first (each
    /// group in recorded order); empty when the file has none.
    pub fn frames(&self, key: &str) -> Vec<Frame> {
        let mut f = self.by_key.get(key).cloned().unwrap_or_default();
        f.sort_by_key(|fr| !fr.user);
        f
    }
}

/// `File <path>, line <n>, in <function>, \n <code>`; anything else is kept
/// whole as the file.
fn parse_frame(s: &str) -> Frame {
    let (head, code) = s.split_once('\n').unwrap_or((s, ""));
    let head = head.trim().trim_end_matches(',');
    let parsed = head.strip_prefix("File ").and_then(|rest| {
        let (file, rest) = rest.rsplit_once(", line ")?;
        let (line, function) = rest.split_once(", in ")?;
        Some((file.to_string(), line.trim().parse().ok()?, function.trim().to_string()))
    });
    let (file, line, function) = parsed.unwrap_or_else(|| (head.to_string(), 0, String::new()));
    let library = ["site-packages/", "dist-packages/", "/lib/python", "msprobe/", "<frozen "].iter().any(|p| file.contains(p));
    Frame { user: !library && line > 0, file, line, function, code: code.trim().to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks(text: &[u8]) -> Result<Stacks, StackProblem> {
        StackFile::parse(text).map(|f| Stacks::from_file(&f))
    }

    #[test]
    fn both_layouts_user_frames_first() {
        let t = br#"{"0": [["A.a.0.forward"], ["File /x/site-packages/torch/m.py, line 3, in f, \n y()", "File /home/u/train.py, line 12, in step, \n out = model(x)"]]}"#;
        let s = stacks(t).unwrap();
        let f = s.frames("A.a.0.forward");
        assert_eq!((f[0].file.as_str(), f[0].line, f[0].function.as_str(), f[0].user), ("/home/u/train.py", 12, "step", true));
        assert_eq!(f[0].code, "out = model(x)");
        assert!(!f[1].user);
        let s = stacks(br#"{"B.b.0.backward": ["File a.py, line 1, in g, \n z"]}"#).unwrap();
        assert_eq!(s.frames("B.b.0.backward")[0].function, "g");
        assert!(s.frames("C.c.0.forward").is_empty());
        assert!(stacks(b"[1]").is_err() && stacks(b"{").is_err());
    }

    #[test]
    fn msprobes_lookup_takes_the_first_item_naming_the_op() {
        let text = br#"{"0": [["A.a.0.forward"], ["f0"]], "1": [["B.b.0.forward", "A.a.0.forward"], ["f1"]], "2": [["C"]], "3": ["xD.d.0.forwardx", "f3"]}"#;
        let s = StackFile::parse(text).unwrap();
        let json = |op: &str| serde_json::to_value(s.frames_of(op)).unwrap();
        assert_eq!(json("A.a.0.forward"), serde_json::json!(["f0"]));
        assert_eq!(json("B.b.0.forward"), serde_json::json!(["f1"]));
        assert_eq!(json("D.d.0.forward"), serde_json::json!("f3"));
        assert_eq!(json("C"), serde_json::json!({}));
    }

    #[test]
    fn values_must_be_lists() {
        assert_eq!(StackFile::parse(br#"{"0": [[], []], "1": {"a": 1}}"#).unwrap_err().to_string(), "key \"1\": expected a list [[op names], [frames]]");
        assert_eq!(StackFile::parse(b"[1]").unwrap_err().to_string(), "expected an object {\"0\": [[op names], [frames]], ...}");
    }
}
