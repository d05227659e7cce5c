//! `stack.json` beside a dump, read for reports: the Python call stack
//! msprobe recorded for each API call, as typed frames. Two layouts are
//! read: `{"0": [[op names], [frames]], ...}` (msprobe 8) and
//! `{"<Prefix.op.N.direction>": [frames], ...}` (older dumps). A frame is
//! msprobe's text `File <path>, line <n>, in <function>, \n <code>`.
//! Raw JSON stops here: callers get [`Frame`]s.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

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
/// why there are none: a missing or malformed file is a note, never an error.
pub fn read_stacks(dump_file: &Path) -> Result<Stacks, String> {
    let path = dump_file.parent().unwrap_or(Path::new(".")).join("stack.json");
    let text = std::fs::read(&path).map_err(|e| format!("no call stacks: {}: {e}", path.display()))?;
    Stacks::parse(&text).map_err(|e| format!("no call stacks: {}: {e}", path.display()))
}

impl Stacks {
    /// Parses `stack.json`'s text.
    pub fn parse(text: &[u8]) -> Result<Stacks, String> {
        let v: Value = serde_json::from_slice(text).map_err(|e| format!("not valid JSON: {e}"))?;
        let Value::Object(map) = v else { return Err("expected an object".into()) };
        let mut by_key = HashMap::new();
        for (k, v) in map {
            let Value::Array(item) = v else { continue };
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
                    by_key.entry(k).or_insert_with(|| frames.iter().filter_map(Value::as_str).map(parse_frame).collect());
                }
                _ => {}
            }
        }
        Ok(Stacks { by_key })
    }

    /// The frames of `key` (`Prefix.op.N.forward`), user frames first (each
    /// group in recorded order); empty when the file has none.
    pub fn frames(&self, key: &str) -> Vec<Frame> {
        let mut f = self.by_key.get(key).cloned().unwrap_or_default();
        f.sort_by_key(|fr| !fr.user);
        f
    }

    /// How many keys have a stack.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no key has a stack.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
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

    #[test]
    fn both_layouts_user_frames_first() {
        let t = br#"{"0": [["A.a.0.forward"], ["File /x/site-packages/torch/m.py, line 3, in f, \n y()", "File /home/u/train.py, line 12, in step, \n out = model(x)"]]}"#;
        let s = Stacks::parse(t).unwrap();
        let f = s.frames("A.a.0.forward");
        assert_eq!((f[0].file.as_str(), f[0].line, f[0].function.as_str(), f[0].user), ("/home/u/train.py", 12, "step", true));
        assert_eq!(f[0].code, "out = model(x)");
        assert!(!f[1].user);
        let s = Stacks::parse(br#"{"B.b.0.backward": ["File a.py, line 1, in g, \n z"]}"#).unwrap();
        assert_eq!(s.frames("B.b.0.backward")[0].function, "g");
        assert!(s.frames("C.c.0.forward").is_empty());
        assert!(Stacks::parse(b"[1]").is_err() && Stacks::parse(b"{").is_err());
    }
}
