//! The YAML subset training configs use, read without a YAML crate, and
//! msprobe's flattening of it into hyperparameters (`YamlParser`).
//!
//! Supported: block mappings and sequences by indentation (a sequence may
//! sit at its key's indentation), single-line flow collections (`[1, 2]`,
//! `{a: 1}`), plain, single- and double-quoted scalars, comments, one
//! document (`---` / `...`). Plain scalars resolve as PyYAML's YAML 1.1
//! resolver does: `null`/`~`/empty, `true`/`yes`/`on`/... booleans, ints
//! (decimal, `0x`, `0b`, octal `0...`, `_` separators), floats only with a
//! dot (`1.0e-4`; `1e-4` stays a string) or `.inf`/`.nan`, dates (which
//! msprobe drops); everything else is a string. Refused with the line
//! number: anchors, aliases, tags, block scalars (`|`, `>`), complex keys,
//! multi-line plain or flow scalars, several documents. Keys are read as
//! text (`1:` is the key `"1"`); a repeated key keeps the last value in its first place, as
//! PyYAML does.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::dump::nonfinite;

/// A parsed YAML node.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `null`, `~` or nothing.
    Null,
    /// A boolean, an int or a float, as JSON.
    Scalar(Value),
    /// A timestamp, which msprobe's flattening drops.
    Date(String),
    /// A block or flow sequence.
    List(Vec<Node>),
    /// A block or flow mapping, in file order.
    Map(Vec<(String, Node)>),
}

/// The deepest indentation read (it bounds the nesting, and so the recursion).
const MAX_INDENT: usize = 200;
/// The deepest nesting of flow collections read.
const MAX_FLOW_DEPTH: usize = 64;

struct Line {
    no: usize,
    indent: usize,
    text: String,
}

/// Parses `text`; the error names the line and what is not supported.
pub fn parse(text: &str) -> Result<Node, String> {
    let mut lines = Vec::new();
    let mut docs = 0;
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        if raw.starts_with('%') {
            return Err(format!("line {no}: YAML directives are not supported"));
        }
        let body = strip_comment(raw).trim_end();
        if body == "---" || body.starts_with("--- ") {
            docs += 1;
            if docs > 1 || !lines.is_empty() {
                return Err(format!("line {no}: expected a single YAML document"));
            }
            if !body[3..].trim().is_empty() {
                return Err(format!("line {no}: content after `---` is not supported"));
            }
            continue;
        }
        if body == "..." {
            break;
        }
        if body.trim().is_empty() {
            continue;
        }
        if body.starts_with('\t') || body.trim_start_matches(' ').starts_with('\t') {
            return Err(format!("line {no}: tabs cannot indent YAML"));
        }
        let indent = body.len() - body.trim_start().len();
        if indent > MAX_INDENT {
            return Err(format!("line {no}: indentation deeper than {MAX_INDENT} columns is not supported"));
        }
        lines.push(Line { no, indent, text: body.trim_start().to_string() });
    }
    if lines.is_empty() {
        return Ok(Node::Null);
    }
    if lines.len() == 1 && !is_item(&lines[0].text) && split_key(&lines[0].text).is_none() {
        return scalar_or_flow(&lines[0].text, lines[0].no);
    }
    let mut pos = 0;
    let indent = lines[0].indent;
    let node = block(&mut lines, &mut pos, indent)?;
    match lines.get(pos) {
        Some(l) => Err(format!("line {}: expected a key or `- ` at indentation {indent}, found indentation {}", l.no, l.indent)),
        None => Ok(node),
    }
}

/// `raw` without a `#` comment (a `#` at the start or after a space, outside quotes).
fn strip_comment(raw: &str) -> &str {
    let (mut single, mut double, mut prev) = (false, false, ' ');
    for (i, c) in raw.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single && prev != '\\' => double = !double,
            '#' if !single && !double && (prev == ' ' || prev == '\t') => return &raw[..i],
            _ => {}
        }
        prev = c;
    }
    raw
}

fn is_item(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

fn block(lines: &mut [Line], pos: &mut usize, indent: usize) -> Result<Node, String> {
    if is_item(&lines[*pos].text) {
        sequence(lines, pos, indent)
    } else {
        mapping(lines, pos, indent)
    }
}

/// The value after `- ` or `key: ` on line `at`, or the block below it.
fn value_of(lines: &mut [Line], pos: &mut usize, at: usize, rest: &str, offset: usize) -> Result<Node, String> {
    let no = lines[at].no;
    if rest.is_empty() {
        *pos = at + 1;
        return match lines.get(*pos) {
            Some(next) if next.indent > lines[at].indent => {
                let indent = next.indent;
                block(lines, pos, indent)
            }
            _ => Ok(Node::Null),
        };
    }
    if is_item(rest) || split_key(rest).is_some() {
        // A compact nested collection: continue as if it started its own line.
        lines[at].indent += offset;
        if lines[at].indent > MAX_INDENT {
            return Err(format!("line {no}: indentation deeper than {MAX_INDENT} columns is not supported"));
        }
        lines[at].text = rest.to_string();
        *pos = at;
        let indent = lines[at].indent;
        return block(lines, pos, indent);
    }
    *pos = at + 1;
    let node = scalar_or_flow(rest, no)?;
    match lines.get(*pos) {
        Some(next) if next.indent > lines[at].indent => Err(format!("line {}: multi-line scalars are not supported", next.no)),
        _ => Ok(node),
    }
}

fn sequence(lines: &mut [Line], pos: &mut usize, indent: usize) -> Result<Node, String> {
    let mut items = Vec::new();
    while *pos < lines.len() && lines[*pos].indent == indent && is_item(&lines[*pos].text) {
        let at = *pos;
        let text = lines[at].text.clone();
        let rest = text[1..].trim_start();
        let offset = text.len() - rest.len();
        items.push(value_of(lines, pos, at, rest, offset)?);
    }
    Ok(Node::List(items))
}

fn mapping(lines: &mut [Line], pos: &mut usize, indent: usize) -> Result<Node, String> {
    let (mut entries, mut index) = (Vec::new(), HashMap::new());
    while *pos < lines.len() && lines[*pos].indent == indent && !is_item(&lines[*pos].text) {
        let at = *pos;
        let (no, text) = (lines[at].no, lines[at].text.clone());
        let Some((key, rest)) = split_key(&text) else {
            return Err(format!("line {no}: expected `key: value`, got {text:?}"));
        };
        let key = match scalar_or_flow(key, no)? {
            Node::Scalar(Value::String(s)) => s,
            Node::Scalar(v) => v.to_string(),
            Node::Null => "null".into(),
            Node::Date(d) => d,
            _ => return Err(format!("line {no}: complex keys are not supported")),
        };
        let rest_trim = rest.trim_start();
        let node = if rest_trim.is_empty() {
            *pos = at + 1;
            match lines.get(*pos) {
                Some(next) if next.indent > indent || (next.indent == indent && is_item(&next.text)) => {
                    let i = next.indent;
                    block(lines, pos, i)?
                }
                _ => Node::Null,
            }
        } else {
            *pos = at + 1;
            let node = scalar_or_flow(rest_trim, no)?;
            if let Some(next) = lines.get(*pos) {
                if next.indent > indent {
                    return Err(format!("line {}: multi-line scalars are not supported", next.no));
                }
            }
            node
        };
        insert(&mut entries, &mut index, key, node);
    }
    Ok(Node::Map(entries))
}

/// Adds `key` to a mapping; a repeated key takes the new value in its
/// first place, as a Python dict does.
fn insert(entries: &mut Vec<(String, Node)>, index: &mut HashMap<String, usize>, key: String, node: Node) {
    match index.get(&key) {
        Some(&i) => entries[i].1 = node,
        None => {
            index.insert(key.clone(), entries.len());
            entries.push((key, node));
        }
    }
}

/// `key: rest` split at the first `:` followed by a space or the end,
/// outside quotes and brackets.
fn split_key(text: &str) -> Option<(&str, &str)> {
    if text.starts_with('?') {
        return None;
    }
    let (mut single, mut double, mut depth) = (false, false, 0i32);
    let bytes = text.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'[' | b'{' if !single && !double => depth += 1,
            b']' | b'}' if !single && !double => depth -= 1,
            b':' if !single && !double && depth == 0 && bytes.get(i + 1).is_none_or(|&n| n == b' ') => return Some((text[..i].trim_end(), &text[i + 1..])),
            _ => {}
        }
    }
    None
}

fn scalar_or_flow(text: &str, no: usize) -> Result<Node, String> {
    let mut flow = Flow { s: text, i: 0, no, depth: 0 };
    let node = flow.node(false)?;
    flow.skip_spaces();
    if flow.i < text.len() {
        return Err(format!("line {no}: unexpected {:?} after a value", &text[flow.i..]));
    }
    Ok(node)
}

/// A one-line value: a quoted or plain scalar, or a flow collection.
struct Flow<'a> {
    s: &'a str,
    i: usize,
    no: usize,
    depth: usize,
}

impl Flow<'_> {
    fn err(&self, what: &str) -> String {
        format!("line {}: {what}", self.no)
    }

    fn skip_spaces(&mut self) {
        while self.s[self.i..].starts_with(' ') {
            self.i += 1;
        }
    }

    fn node(&mut self, in_flow: bool) -> Result<Node, String> {
        self.depth += 1;
        let node = self.node_inner(in_flow);
        self.depth -= 1;
        node
    }

    /// A value at the current position: what is not supported is refused,
    /// the rest is read by the helper for its first character.
    fn node_inner(&mut self, in_flow: bool) -> Result<Node, String> {
        if self.depth > MAX_FLOW_DEPTH {
            return Err(self.err(&format!("flow collections nested deeper than {MAX_FLOW_DEPTH} are not supported")));
        }
        self.skip_spaces();
        match self.s[self.i..].chars().next() {
            Some('&') | Some('*') => Err(self.err("anchors and aliases are not supported")),
            Some('!') => Err(self.err("tags are not supported")),
            Some('|') | Some('>') => Err(self.err("block scalars (| and >) are not supported")),
            Some('[') => self.flow_sequence(),
            Some('{') => self.flow_mapping(),
            Some('\'') => self.single_quoted(),
            Some('"') => self.double_quoted(),
            _ => Ok(self.plain(in_flow)),
        }
    }

    /// A flow sequence `[a, b]`, its `[` at the current position.
    fn flow_sequence(&mut self) -> Result<Node, String> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.skip_spaces();
            if self.s[self.i..].starts_with(']') {
                self.i += 1;
                return Ok(Node::List(items));
            }
            items.push(self.node(true)?);
            self.skip_spaces();
            match self.s[self.i..].chars().next() {
                Some(',') => self.i += 1,
                Some(']') => {}
                _ => return Err(self.err("expected `,` or `]` in a flow sequence (flow collections must fit on one line)")),
            }
        }
    }

    /// A flow mapping `{a: 1, b}`, its `{` at the current position.
    fn flow_mapping(&mut self) -> Result<Node, String> {
        self.i += 1;
        let (mut entries, mut index) = (Vec::new(), HashMap::new());
        loop {
            self.skip_spaces();
            if self.s[self.i..].starts_with('}') {
                self.i += 1;
                return Ok(Node::Map(entries));
            }
            let key = match self.node(true)? {
                Node::Scalar(Value::String(s)) => s,
                Node::Scalar(v) => v.to_string(),
                Node::Null => "null".into(),
                Node::Date(d) => d,
                _ => return Err(self.err("complex keys are not supported")),
            };
            self.skip_spaces();
            let value = if self.s[self.i..].starts_with(':') {
                self.i += 1;
                self.node(true)?
            } else {
                Node::Null
            };
            insert(&mut entries, &mut index, key, value);
            self.skip_spaces();
            match self.s[self.i..].chars().next() {
                Some(',') => self.i += 1,
                Some('}') => {}
                _ => return Err(self.err("expected `,` or `}` in a flow mapping (flow collections must fit on one line)")),
            }
        }
    }

    /// A single-quoted scalar (`''` is a quote), its quote at the current position.
    fn single_quoted(&mut self) -> Result<Node, String> {
        let rest = &self.s[self.i..];
        let mut out = String::new();
        let mut chars = rest.char_indices().skip(1).peekable();
        while let Some((j, c)) = chars.next() {
            if c == '\'' {
                if chars.peek().is_some_and(|&(_, n)| n == '\'') {
                    chars.next();
                    out.push('\'');
                    continue;
                }
                self.i += j + 1;
                return Ok(Node::Scalar(Value::String(out)));
            }
            out.push(c);
        }
        Err(self.err("unterminated single-quoted string (multi-line strings are not supported)"))
    }

    /// A double-quoted scalar with its escapes, its quote at the current position.
    fn double_quoted(&mut self) -> Result<Node, String> {
        let rest = &self.s[self.i..];
        let mut out = String::new();
        let mut chars = rest.char_indices().skip(1);
        while let Some((j, c)) = chars.next() {
            match c {
                '"' => {
                    self.i += j + 1;
                    return Ok(Node::Scalar(Value::String(out)));
                }
                '\\' => {
                    let (_, e) = chars.next().ok_or_else(|| self.err("unterminated escape in a double-quoted string"))?;
                    let hex = |n: usize, chars: &mut dyn Iterator<Item = (usize, char)>| -> Option<char> {
                        let digits: String = chars.take(n).map(|(_, c)| c).collect();
                        u32::from_str_radix(&digits, 16).ok().filter(|_| digits.len() == n).and_then(char::from_u32)
                    };
                    let ch = match e {
                        'n' => Some('\n'),
                        't' | '\t' => Some('\t'),
                        'r' => Some('\r'),
                        '0' => Some('\0'),
                        '\\' | '"' | '/' | ' ' => Some(e),
                        'x' => hex(2, &mut chars),
                        'u' => hex(4, &mut chars),
                        'U' => hex(8, &mut chars),
                        _ => None,
                    };
                    out.push(ch.ok_or_else(|| self.err(&format!("unknown escape {:?} in a double-quoted string", format!("\\{e}"))))?);
                }
                c => out.push(c),
            }
        }
        Err(self.err("unterminated double-quoted string (multi-line strings are not supported)"))
    }

    /// A plain scalar, resolved; in a flow collection it ends at `,`, `]`,
    /// `}` or a key's `: `.
    fn plain(&mut self, in_flow: bool) -> Node {
        let rest = &self.s[self.i..];
        let end = if in_flow { rest.find([',', ']', '}']).unwrap_or(rest.len()) } else { rest.len() };
        let mut plain = &rest[..end];
        if in_flow {
            if let Some((k, _)) = split_key(plain) {
                plain = k;
            }
        }
        let plain = plain.trim_end();
        self.i += rest[..end].find(plain).unwrap_or(0) + plain.len();
        resolve(plain)
    }
}

static INT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$").expect("valid regex"));
static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
        .expect("valid regex")
});
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?$")
        .expect("valid regex")
});

/// A plain scalar as PyYAML's resolver types it.
fn resolve(plain: &str) -> Node {
    match plain {
        "" | "~" | "null" | "Null" | "NULL" => return Node::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => return Node::Scalar(Value::Bool(true)),
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => return Node::Scalar(Value::Bool(false)),
        _ => {}
    }
    if INT.is_match(plain) {
        let digits = plain.replace('_', "");
        let (negative, body) = match digits.as_bytes()[0] {
            b'-' => (true, &digits[1..]),
            b'+' => (false, &digits[1..]),
            _ => (false, &digits[..]),
        };
        let parsed = if let Some(b) = body.strip_prefix("0b") {
            i128::from_str_radix(b, 2)
        } else if let Some(h) = body.strip_prefix("0x") {
            i128::from_str_radix(h, 16)
        } else if body.len() > 1 && body.starts_with('0') {
            i128::from_str_radix(&body[1..], 8)
        } else {
            body.parse::<i128>()
        };
        let value = parsed.ok().map(|n| if negative { -n } else { n });
        return match value.and_then(|n| i64::try_from(n).ok().map(Value::from).or_else(|| u64::try_from(n).ok().map(Value::from))) {
            Some(v) => Node::Scalar(v),
            // Python keeps any int; past 64 bits its digits are kept as text.
            None => Node::Scalar(Value::String(plain.to_string())),
        };
    }
    if FLOAT.is_match(plain) {
        let text = plain.replace('_', "").to_ascii_lowercase();
        let x = match text.trim_start_matches(['+', '-']) {
            ".inf" => f64::INFINITY * if text.starts_with('-') { -1.0 } else { 1.0 },
            ".nan" => f64::NAN,
            _ => text.replace(".e", ".0e").parse::<f64>().unwrap_or(f64::NAN),
        };
        return Node::Scalar(nonfinite::sentinel(x).unwrap_or_else(|| Value::from(x)));
    }
    if DATE.is_match(plain) {
        return Node::Date(plain.to_string());
    }
    Node::Scalar(Value::String(plain.to_string()))
}

/// msprobe's `YamlParser`: mappings flattened into `a.b.c` keys; a list of
/// scalars and lists is one value, any other list is flattened with its
/// indices as keys; `null`s, dates and empty mappings are dropped.
pub fn flatten(node: &Node) -> Map<String, Value> {
    let mut out = Map::new();
    walk(node, "", &mut out);
    out
}

fn walk(node: &Node, prefix: &str, out: &mut Map<String, Value>) {
    let join = |key: &str| if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") };
    match node {
        Node::Map(entries) => entries.iter().for_each(|(k, v)| walk(v, &join(k), out)),
        Node::List(items) if items.iter().all(|x| matches!(x, Node::Scalar(_) | Node::List(_))) => {
            out.insert(prefix.to_string(), to_value(node));
        }
        Node::List(items) => items.iter().enumerate().for_each(|(i, v)| walk(v, &join(&i.to_string()), out)),
        Node::Scalar(v) => {
            out.insert(prefix.to_string(), v.clone());
        }
        Node::Null | Node::Date(_) => {}
    }
}

/// A node as JSON (inside a list kept whole; a date as its text).
fn to_value(node: &Node) -> Value {
    match node {
        Node::Null => Value::Null,
        Node::Scalar(v) => v.clone(),
        Node::Date(d) => Value::String(d.clone()),
        Node::List(items) => Value::Array(items.iter().map(to_value).collect()),
        Node::Map(entries) => Value::Object(entries.iter().map(|(k, v)| (k.clone(), to_value(v))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn flat(text: &str) -> Value {
        Value::Object(flatten(&parse(text).unwrap()))
    }

    #[test]
    fn scalars_resolve_as_pyyaml_does() {
        let v = flat("a: 1e-4\nb: 1.0e-4\nc: 0x1F\nd: 017\ne: yes\nf: ~\ng: '3'\nh: 1_000\ni: -.inf\nj: 2024-01-02\nk: \"x\\ty\"\nl: 09\nm: 3.\n");
        let inf = nonfinite::sentinel(f64::NEG_INFINITY).unwrap();
        assert_eq!(v, json!({"a": "1e-4", "b": 0.0001, "c": 31, "d": 15, "e": true, "g": "3", "h": 1000, "i": inf, "k": "x\ty", "l": "09", "m": 3.0}));
    }

    #[test]
    fn nesting_flattens_into_dotted_keys() {
        let text = "# comment\nmodel:\n  hidden-size: 4096   # trailing\n  layers: [1, 2, [3]]\n  empty: {}\ntrain:\n  lrs:\n  - 0.1\n  - 0.01\n  stages:\n    - name: warm\n      steps: 10\n    - name: main\n  url: 'http://x#y'\n";
        assert_eq!(
            flat(text),
            json!({"model.hidden-size": 4096, "model.layers": [1, 2, [3]], "train.lrs": [0.1, 0.01], "train.stages.0.name": "warm", "train.stages.0.steps": 10, "train.stages.1.name": "main", "train.url": "http://x#y"})
        );
    }

    #[test]
    fn unsupported_features_name_the_line() {
        assert_eq!(parse("a: &x 1\n").unwrap_err(), "line 1: anchors and aliases are not supported");
        assert_eq!(parse("a: 1\nb: |\n  text\n").unwrap_err(), "line 2: block scalars (| and >) are not supported");
        assert_eq!(parse("a: one\n  two\n").unwrap_err(), "line 2: multi-line scalars are not supported");
        assert_eq!(parse("a: 1\n---\nb: 2\n").unwrap_err(), "line 2: expected a single YAML document");
        assert_eq!(parse("a: [1, 2\n").unwrap_err(), "line 1: expected `,` or `]` in a flow sequence (flow collections must fit on one line)");
        assert_eq!(parse("just text\n").map(|n| flatten(&n)).unwrap(), Map::from_iter([(String::new(), json!("just text"))]));
    }
}
