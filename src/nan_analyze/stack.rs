//! `stack.json`: `{"0": [[op names], [frames]], ...}`, the call stack of
//! each group of ops.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::Error;

/// The stack items of one rank: (the op names, the frames).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Stack(Vec<(Value, Value)>);

impl Stack {
    /// Parses the text of `stack.json` at `path`: an object whose values
    /// are lists (msprobe refuses other values too).
    pub fn parse(path: &Path, text: &[u8]) -> Result<Stack, Error> {
        let v: Value = serde_json::from_slice(text).map_err(|e| Error::selection(path, format!("not valid JSON: {e}")))?;
        let Value::Object(map) = v else {
            return Err(Error::selection(path, "expected an object {\"0\": [[op names], [frames]], ...}"));
        };
        let mut items = vec![];
        for (k, v) in map {
            let Value::Array(mut item) = v else {
                return Err(Error::selection(path, format!("key {k:?}: expected a list [[op names], [frames]]")));
            };
            if item.len() >= 2 {
                item.truncate(2);
                let frames = item.pop().expect("two items");
                items.push((item.pop().expect("one item"), frames));
            }
        }
        Ok(Stack(items))
    }

    /// Reads `stack.json` at `path`.
    pub fn read(path: &Path) -> Result<Stack, Error> {
        let text = std::fs::read(path).map_err(|e| Error::selection(path, format!("cannot read: {e}")))?;
        Stack::parse(path, &text)
    }

    /// The frames of the first item whose names hold `op` (Python's `in`:
    /// an element of a list, a substring of a string, a key of an object),
    /// or `{}` as msprobe writes when there is none.
    pub fn frames(&self, op: &str) -> Value {
        let holds = |names: &Value| match names {
            Value::Array(a) => a.iter().any(|n| n.as_str() == Some(op)),
            Value::String(s) => s.contains(op),
            Value::Object(o) => o.contains_key(op),
            _ => false,
        };
        self.0.iter().find(|(names, _)| holds(names)).map(|(_, frames)| frames.clone()).unwrap_or(Value::Object(Map::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_of_the_first_item_naming_the_op() {
        let text = br#"{"0": [["A.a.0.forward"], ["f0"]], "1": [["B.b.0.forward", "A.a.0.forward"], ["f1"]], "2": [["C"]], "3": ["xD.d.0.forwardx", "f3"]}"#;
        let s = Stack::parse(Path::new("s.json"), text).unwrap();
        assert_eq!(s.frames("A.a.0.forward"), json!(["f0"]));
        assert_eq!(s.frames("B.b.0.forward"), json!(["f1"]));
        assert_eq!(s.frames("D.d.0.forward"), json!("f3"));
        assert_eq!(s.frames("C"), json!({}));
    }

    #[test]
    fn values_must_be_lists() {
        let e = Stack::parse(Path::new("s.json"), br#"{"0": [[], []], "1": {"a": 1}}"#).unwrap_err().to_string();
        assert_eq!(e, "s.json: key \"1\": expected a list [[op names], [frames]]");
        let e = Stack::parse(Path::new("s.json"), b"[1]").unwrap_err().to_string();
        assert_eq!(e, "s.json: expected an object {\"0\": [[op names], [frames]], ...}");
    }
}
