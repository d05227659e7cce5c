//! `construct.json`: each node's parent module (`{node: parent | null}`, or
//! Megatron's `{node: [parent, micro_step]}`), and the chain of modules
//! from the root down to an op.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::error::AnalyzeError;
use crate::unreadable::Unreadable;

/// The parent of every node of one rank.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Construct(HashMap<String, String>);

/// A parent as msprobe reads it: a name, nothing (`null`, `""`), or the
/// first item of Megatron's `[parent, micro_step]`.
fn parent(v: &Value) -> Option<Option<String>> {
    match v {
        Value::Null => Some(None),
        Value::String(s) => Some((!s.is_empty()).then(|| s.clone())),
        Value::Array(items) => match items.first() {
            None => Some(None),
            Some(first @ (Value::Null | Value::String(_))) => parent(first),
            Some(_) => None,
        },
        _ => None,
    }
}

impl Construct {
    /// Parses the text of `construct.json` at `path`.
    pub fn parse(path: &Path, text: &[u8]) -> Result<Construct, AnalyzeError> {
        let v: Value = serde_json::from_slice(text).map_err(|source| AnalyzeError::Json { path: path.to_path_buf(), source })?;
        let Value::Object(map) = v else {
            return Err(AnalyzeError::input(path, "expected an object {node: parent}"));
        };
        let mut parents = HashMap::new();
        for (node, v) in map {
            match parent(&v) {
                Some(Some(p)) => {
                    parents.insert(node, p);
                }
                Some(None) => {}
                None => return Err(AnalyzeError::input(path, format!("key {node:?}: expected a parent name, null, or [parent, micro_step]"))),
            }
        }
        Ok(Construct(parents))
    }

    /// Reads `construct.json` at `path`.
    pub fn read(path: &Path) -> Result<Construct, AnalyzeError> {
        let text = std::fs::read(path).map_err(Unreadable::at(path, "cannot read"))?;
        Construct::parse(path, &text)
    }

    /// The modules from the root down to `op`, then `op`; a cycle ends the
    /// chain before its first repeated node.
    pub fn chain(&self, op: &str) -> Vec<String> {
        let mut chain = vec![op.to_string()];
        let mut seen = std::collections::HashSet::from([op]);
        let mut node = op;
        while let Some(p) = self.0.get(node) {
            if !seen.insert(p.as_str()) {
                break;
            }
            chain.push(p.clone());
            node = p;
        }
        chain.reverse();
        chain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_follow_parents_in_both_formats_and_stop_at_cycles() {
        let text = br#"{"T.a.0.forward": "M.b.forward.0", "M.b.forward.0": ["M.root.forward.0", 0], "M.root.forward.0": null,
                        "x": "y", "y": "z", "z": "x", "e": [], "s": ""}"#;
        let c = Construct::parse(Path::new("c.json"), text).unwrap();
        assert_eq!(c.chain("T.a.0.forward"), ["M.root.forward.0", "M.b.forward.0", "T.a.0.forward"]);
        assert_eq!(c.chain("x"), ["z", "y", "x"]);
        assert_eq!(c.chain("e"), ["e"]);
        assert_eq!(c.chain("unknown"), ["unknown"]);
    }

    #[test]
    fn wrong_shapes_name_the_key() {
        let e = Construct::parse(Path::new("c.json"), br#"{"a": 5}"#).unwrap_err().to_string();
        assert_eq!(e, "c.json: key \"a\": expected a parent name, null, or [parent, micro_step]");
        let e = Construct::parse(Path::new("c.json"), b"[]").unwrap_err().to_string();
        assert_eq!(e, "c.json: expected an object {node: parent}");
        assert!(Construct::parse(Path::new("c.json"), b"{").unwrap_err().to_string().starts_with("c.json: not valid JSON: "));
    }
}
