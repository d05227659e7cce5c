//! The one codec of msprobe's non-finite JSON tokens.
//!
//! msprobe writes `dump.json` with Python's `json.dump`, which emits bare
//! `NaN`, `Infinity` and `-Infinity` tokens. serde_json rejects them, so
//! [`NonFiniteReader`] rewrites each such token *outside string literals*
//! into a sentinel string (`"\u0000NaN"`, ...) that [`value`] maps back to
//! the float, and [`to_msprobe_json`] turns back into the bare token when a
//! dump-shaped file is written. The NUL byte cannot occur in a dumped name,
//! so the sentinel never collides with a real string value. The rewrite is
//! streaming: memory use is one fixed buffer whatever the file size.

use std::io::{self, BufRead, Read};

use runtime::pyfmt::{Escape, JsonWriter};
use serde_json::Value;

/// Sentinel strings that stand for the three non-finite JSON tokens.
const NAN_SENTINEL: &str = "\u{0}NaN";
/// See [`NAN_SENTINEL`].
const INF_SENTINEL: &str = "\u{0}Infinity";
/// See [`NAN_SENTINEL`].
const NEG_INF_SENTINEL: &str = "\u{0}-Infinity";

/// Maps a sentinel string written by [`NonFiniteReader`] back to its float.
pub fn value(v: &Value) -> Option<f64> {
    match v.as_str()? {
        NAN_SENTINEL => Some(f64::NAN),
        INF_SENTINEL => Some(f64::INFINITY),
        NEG_INF_SENTINEL => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// The sentinel value of a non-finite `x` (what [`NonFiniteReader`] reads
/// `NaN`, `Infinity` or `-Infinity` as); `None` for a finite `x`.
pub fn sentinel(x: f64) -> Option<Value> {
    let s = if x.is_nan() {
        NAN_SENTINEL
    } else if x == f64::INFINITY {
        INF_SENTINEL
    } else if x == f64::NEG_INFINITY {
        NEG_INF_SENTINEL
    } else {
        return None;
    };
    Some(Value::String(s.into()))
}

/// Pretty JSON text with the sentinels turned back into msprobe's bare
/// `NaN` / `Infinity` / `-Infinity` tokens, as Python's `json.dump(indent=2,
/// ensure_ascii=False)` writes it, so Python's json module (and msprobe)
/// read the file as they read a dump. Only a string *value* that is a
/// sentinel becomes a token; keys and all other strings are written
/// escaped, so no dumped text can turn into a token or break the JSON, and
/// reading the text back gives `v` again.
pub fn to_msprobe_json(v: &Value) -> String {
    to_python_json(v, 2, Escape::Utf8)
}

/// [`to_msprobe_json`] with `spaces` per level, as `json.dump(indent=spaces)`
/// writes the files msprobe writes with indent 4.
pub fn to_msprobe_json_indented(v: &Value, spaces: usize) -> String {
    to_python_json(v, spaces, Escape::Utf8)
}

/// [`to_msprobe_json`] with `indent` spaces per level and `escape`'s
/// strings (`Escape::Ascii`: `json.dump`'s default `ensure_ascii`), through
/// the one writer of Python's JSON ([`JsonWriter`]).
pub fn to_python_json(v: &Value, indent: usize, escape: Escape) -> String {
    let mut w = JsonWriter::new(indent, escape);
    write_value(&mut w, v);
    w.finish()
}

fn write_value(w: &mut JsonWriter, v: &Value) {
    match v {
        Value::Array(items) => {
            w.begin('[');
            items.iter().for_each(|x| write_value(w, x));
            w.end(']');
        }
        Value::Object(m) => {
            w.begin('{');
            for (k, x) in m {
                w.key(k);
                write_value(w, x);
            }
            w.end('}');
        }
        Value::Null => w.plain("null"),
        Value::Bool(b) => w.plain(b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => w.plain(i),
            (None, Some(u), _) => w.plain(u),
            (None, None, x) => w.float(x.unwrap_or(f64::NAN)),
        },
        Value::String(s) => match value(v) {
            Some(x) => w.float(x),
            None => w.str(s),
        },
    }
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Normal,
    InString,
    Escape,
    /// Saw a `-` outside a string; the next byte decides.
    Minus,
    /// Collecting the letters of a bare token (`NaN`, `Infinity`); the flag
    /// says whether a `-` preceded it.
    Token(bool),
}

/// Rewrites bare non-finite tokens of a JSON byte stream into sentinel strings.
pub struct NonFiniteReader<R> {
    inner: R,
    state: State,
    token: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
}

impl<R: BufRead> NonFiniteReader<R> {
    /// Wraps a buffered reader of msprobe JSON.
    pub fn new(inner: R) -> Self {
        NonFiniteReader { inner, state: State::Normal, token: Vec::new(), out: Vec::with_capacity(64 * 1024), pos: 0 }
    }

    fn flush_token(&mut self) {
        let negative = matches!(self.state, State::Token(true));
        let sentinel = match (negative, self.token.as_slice()) {
            (false, b"NaN") => Some(NAN_SENTINEL),
            (false, b"Infinity") => Some(INF_SENTINEL),
            (true, b"Infinity") => Some(NEG_INF_SENTINEL),
            _ => None,
        };
        match sentinel {
            Some(s) => {
                self.out.extend_from_slice(b"\"\\u0000");
                self.out.extend_from_slice(&s.as_bytes()[1..]);
                self.out.push(b'"');
            }
            None => {
                // Not ours: pass the bytes through and let the JSON parser report it.
                if negative {
                    self.out.push(b'-');
                }
                self.out.extend_from_slice(&self.token);
            }
        }
        self.token.clear();
        self.state = State::Normal;
    }

    fn push_normal(&mut self, b: u8) {
        match b {
            b'"' => {
                self.out.push(b);
                self.state = State::InString;
            }
            b'-' => self.state = State::Minus,
            b'N' | b'I' => {
                self.token.push(b);
                self.state = State::Token(false);
            }
            _ => self.out.push(b),
        }
    }

    fn process(&mut self, chunk: &[u8]) {
        for &b in chunk {
            match self.state {
                State::Normal => self.push_normal(b),
                State::InString => {
                    self.out.push(b);
                    match b {
                        b'\\' => self.state = State::Escape,
                        b'"' => self.state = State::Normal,
                        _ => {}
                    }
                }
                State::Escape => {
                    self.out.push(b);
                    self.state = State::InString;
                }
                State::Minus => {
                    if b == b'I' {
                        self.token.push(b);
                        self.state = State::Token(true);
                    } else {
                        self.out.push(b'-');
                        self.state = State::Normal;
                        self.push_normal(b);
                    }
                }
                State::Token(_) => {
                    if b.is_ascii_alphabetic() && self.token.len() < 16 {
                        self.token.push(b);
                    } else {
                        self.flush_token();
                        self.push_normal(b);
                    }
                }
            }
        }
    }
}

impl<R: BufRead> Read for NonFiniteReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.out.len() {
            self.out.clear();
            self.pos = 0;
            let chunk = self.inner.fill_buf()?;
            if chunk.is_empty() {
                if matches!(self.state, State::Token(_)) {
                    self.flush_token();
                } else if self.state == State::Minus {
                    self.out.push(b'-');
                    self.state = State::Normal;
                }
                if self.out.is_empty() {
                    return Ok(0);
                }
                break;
            }
            let n = chunk.len();
            // Copy out: `process` needs `&mut self` while `chunk` borrows `inner`.
            let chunk = chunk.to_vec();
            self.inner.consume(n);
            self.process(&chunk);
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_what_it_decodes() {
        let text = r#"{"a": [NaN, -Infinity, Infinity, "NaN", 1.5]}"#;
        let v: Value = serde_json::from_str(&rewrite(text)).unwrap();
        assert!(value(&v["a"][0]).unwrap().is_nan());
        assert_eq!(value(&v["a"][1]), Some(f64::NEG_INFINITY));
        assert_eq!(value(&v["a"][3]), None);
        let back = to_msprobe_json(&v);
        assert_eq!(back.split_whitespace().collect::<String>(), r#"{"a":[NaN,-Infinity,Infinity,"NaN",1.5]}"#);
    }

    #[test]
    fn sentinel_keys_and_strings_round_trip() {
        // The dump_index fuzz target's round-trip check (regression input in
        // fuzz/regressions/dump_index/): a key, or a string that holds a
        // sentinel after a quote, must not become a bare token.
        let text = r#"{"\u0000NaN": ["\"\u0000Infinity", NaN, "\u0000-Infinity\"", {}, []]}"#;
        let v: Value = serde_json::from_str(&rewrite(text)).unwrap();
        let back = to_msprobe_json(&v);
        assert_eq!(serde_json::from_str::<Value>(&rewrite(&back)).unwrap(), v, "{back}");
        assert_eq!(back.matches("NaN").count(), 2, "{back}");
        // Without sentinels (and floats whose repr is also serde_json's) the
        // text is serde_json's own pretty JSON; floats are Python's repr.
        let plain = serde_json::json!({"a": [1, -0.0, 1.5e-300, "x\"y\u{e9}", null, true, {}, [], {"b": []}], "c": {}});
        assert_eq!(to_msprobe_json(&plain), serde_json::to_string_pretty(&plain).unwrap());
        assert_eq!(to_msprobe_json(&serde_json::json!([1e-05, 1e16])), "[\n  1e-05,\n  1e+16\n]");
    }

    fn rewrite(s: &str) -> String {
        let mut out = String::new();
        NonFiniteReader::new(s.as_bytes()).read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn rewrites_bare_tokens_only() {
        assert_eq!(
            rewrite(r#"{"a": NaN, "b": [Infinity,-Infinity], "c": "NaN -Infinity", "d": -1.5e-3}"#),
            r#"{"a": "\u0000NaN", "b": ["\u0000Infinity","\u0000-Infinity"], "c": "NaN -Infinity", "d": -1.5e-3}"#
        );
    }

    #[test]
    fn escaped_quotes_keep_string_state() {
        assert_eq!(rewrite(r#"["a\"NaN", NaN]"#), r#"["a\"NaN", "\u0000NaN"]"#);
    }

    #[test]
    fn token_at_end_of_input() {
        assert_eq!(rewrite("NaN"), r#""\u0000NaN""#);
        assert_eq!(rewrite("-Infinity"), r#""\u0000-Infinity""#);
    }
}
