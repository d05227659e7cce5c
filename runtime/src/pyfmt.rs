//! Python's text forms, reproduced exactly, in one place: every file this
//! toolchain writes that Python (msprobe, pandas, the generated scripts)
//! writes too must match it byte for byte.
//!
//! - floats: `repr(float)` ([`repr`], the CSV cells, JSON numbers) and
//!   `format(x, ".6g")` ([`format_g6`], the verdict messages);
//! - `repr(str)` ([`str_repr`]) and the `str()` of lists, tuples and dicts
//!   ([`list`], [`tuple`], [`dict`]);
//! - JSON as Python's `json` module writes it ([`json_str`], [`JsonWriter`]):
//!   its string escapes with or without `ensure_ascii` (and an HTML-safe
//!   form), floats as `repr`, non-finite ones as the bare `NaN`,
//!   `Infinity`, `-Infinity` tokens, and `json.dump(indent=N)`'s layout
//!   or the compact `separators=(",", ":")` one ([`JsonWriter`]).

use std::fmt::Write;

/// `repr(x)` of a Python float: the shortest digits that round-trip, in
/// positional form (`1.0`, `0.0001`, `1234.5`) when the decimal exponent is
/// in -4..16, otherwise scientific (`1e-05`, `1.5e+16`); `nan`, `inf`, `-inf`.
pub fn repr(x: f64) -> String {
    if let Some(s) = non_finite(x) {
        return s.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0.0");
    }
    let (digits, exp) = shortest(x.abs());
    if (-4..16).contains(&exp) {
        let (int, frac) = positional(&digits, exp);
        format!("{sign}{int}.{}", if frac.is_empty() { "0" } else { &frac })
    } else {
        format!("{sign}{}", scientific(&digits, exp))
    }
}

/// `format(x, ".6g")`: six significant digits, round-half-even on the exact
/// value, trailing zeros removed, positional when the exponent is in -4..6.
pub fn format_g6(x: f64) -> String {
    const P: i32 = 6;
    if let Some(s) = non_finite(x) {
        return s.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0");
    }
    let (digits, exp) = split(&format!("{:.*e}", (P - 1) as usize, x.abs()));
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    if (-4..P).contains(&exp) {
        let (int, frac) = positional(digits, exp);
        if frac.is_empty() {
            format!("{sign}{int}")
        } else {
            format!("{sign}{int}.{frac}")
        }
    } else {
        format!("{sign}{}", scientific(digits, exp))
    }
}

/// The shortest round-trip digits of `x > 0` and its decimal exponent, as
/// Python's `repr` chooses them. Rust's `{:e}` finds the same number of
/// digits, but when two candidates are equally near `x` it may take the
/// upper one where Python rounds half to even (`1584391378837919.25` is
/// `...919.2` in Python). The correctly rounded value with that many digits
/// is Python's choice whenever it round-trips.
fn shortest(x: f64) -> (String, i32) {
    let (digits, exp) = split(&format!("{x:e}"));
    let rounded = format!("{:.*e}", digits.len() - 1, x);
    if rounded.parse::<f64>() == Ok(x) {
        split(&rounded)
    } else {
        (digits, exp)
    }
}

fn non_finite(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("nan")
    } else if x.is_infinite() {
        Some(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        None
    }
}

/// `"1.2345e-3"` to (`"12345"`, -3).
fn split(sci: &str) -> (String, i32) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// Digits `d1d2...` times 10^(exp) as integer and fraction digit strings
/// (fraction without trailing zeros).
fn positional(digits: &str, exp: i32) -> (String, String) {
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        ("0".into(), format!("{zeros}{digits}").trim_end_matches('0').into())
    } else {
        let point = exp as usize + 1;
        if digits.len() <= point {
            (format!("{digits}{}", "0".repeat(point - digits.len())), String::new())
        } else {
            let (int, frac) = digits.split_at(point);
            (int.into(), frac.trim_end_matches('0').into())
        }
    }
}

/// `d.ddde±XX`, as Python writes exponents (sign always, at least 2 digits).
fn scientific(digits: &str, exp: i32) -> String {
    let (first, rest) = digits.split_at(digits.len().min(1));
    let mantissa = if rest.is_empty() { first.to_string() } else { format!("{first}.{rest}") };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// `repr(s)` of a Python `str`: single quotes unless the text holds a
/// single quote and no double quote; backslashes, the quote, `\n \r \t`
/// and the other C0 and C1 control characters escaped.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `str(list)` of items already in their `repr` form: `[4, 8]`, `[]`.
pub fn list<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    format!("[{}]", joined(items))
}

/// `str(tuple)` of items already in their `repr` form: `(2, 3)`, `(6,)`, `()`.
pub fn tuple<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    match items.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", items.join(", ")),
    }
}

/// `str(dict)` of (key, value) pairs already in their `repr` form: `{'k': 1}`.
pub fn dict<K: std::fmt::Display, V: std::fmt::Display>(pairs: impl IntoIterator<Item = (K, V)>) -> String {
    format!("{{{}}}", joined(pairs.into_iter().map(|(k, v)| format!("{k}: {v}"))))
}

fn joined<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    items.into_iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// Which characters a JSON string writes as `\uXXXX` escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// `json.dump(ensure_ascii=False)`: only the control characters; other
    /// text as UTF-8.
    Utf8,
    /// `json.dump`'s default, `ensure_ascii=True`: every character outside
    /// printable ASCII, as UTF-16 units.
    Ascii,
    /// [`Escape::Ascii`], and `<`, `>`, `&` too, so that the string cannot end
    /// an HTML `<script>` block it is embedded in.
    Html,
}

/// Appends `s` as a JSON string literal the way Python's `json` module
/// writes it: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, every other
/// control character (and, as `escape` says, other characters) as `\uxxxx`.
pub fn json_str(out: &mut String, s: &str, escape: Escape) {
    let as_unicode = |c: char| match escape {
        Escape::Utf8 => (c as u32) < 0x20,
        Escape::Ascii => !(' '..='~').contains(&c),
        Escape::Html => !(' '..='~').contains(&c) || matches!(c, '<' | '>' | '&'),
    };
    out.push('"');
    for c in s.chars() {
        if let Some(short) = JSON_SHORT_ESCAPES.iter().find_map(|&(k, e)| (k == c).then_some(e)) {
            out.push_str(short);
        } else if as_unicode(c) {
            for unit in c.encode_utf16(&mut [0; 2]) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out.push('"');
}

/// The characters Python's `json` module escapes with a backslash and a letter.
const JSON_SHORT_ESCAPES: [(char, &str); 7] = [('"', "\\\""), ('\\', "\\\\"), ('\n', "\\n"), ('\r', "\\r"), ('\t', "\\t"), ('\u{8}', "\\b"), ('\u{c}', "\\f")];

/// [`json_str`] as a new string.
pub fn json_string(s: &str, escape: Escape) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    json_str(&mut out, s, escape);
    out
}

/// A float as Python's `json` module writes it: `repr`, or the bare
/// `NaN`, `Infinity`, `-Infinity` tokens (`allow_nan`, its default).
pub fn json_float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        repr(x)
    }
}

/// A writer of JSON text in `json.dump(obj, indent=N)`'s layout: one item
/// per line, `N` spaces per level, `","` and `": "` separators, empty lists
/// and objects as `[]` and `{}`, no trailing newline; or, made by
/// [`JsonWriter::compact`], in `json.dumps(obj, separators=(",", ":"))`'s:
/// one line, no spaces. Values are written in document order:
/// [`JsonWriter::begin`] and [`JsonWriter::end`] a list or an object,
/// [`JsonWriter::key`] before each member's value.
pub struct JsonWriter {
    out: String,
    /// The indentation of one level; `None` for the compact layout.
    unit: Option<String>,
    escape: Escape,
    /// Per open list or object: whether it has an item yet.
    open: Vec<bool>,
    /// A key was written; its value comes next, on the same line.
    after_key: bool,
}

impl JsonWriter {
    /// A writer with `indent` spaces per level and `escape`'s strings.
    pub fn new(indent: usize, escape: Escape) -> JsonWriter {
        JsonWriter { out: String::new(), unit: Some(" ".repeat(indent)), escape, open: vec![], after_key: false }
    }

    /// A writer of the compact layout (no line breaks, `","` and `":"`
    /// separators) with `escape`'s strings.
    pub fn compact(escape: Escape) -> JsonWriter {
        JsonWriter { unit: None, ..JsonWriter::new(0, escape) }
    }

    /// The separator and line break before an item.
    fn item(&mut self) {
        if std::mem::take(&mut self.after_key) {
            return;
        }
        if let Some(has_items) = self.open.last_mut() {
            if std::mem::replace(has_items, true) {
                self.out.push(',');
            }
            self.newline();
        }
    }

    /// A line break and the current level's indentation (nothing in the compact layout).
    fn newline(&mut self) {
        let Some(unit) = &self.unit else { return };
        self.out.push('\n');
        for _ in 0..self.open.len() {
            self.out.push_str(unit);
        }
    }

    /// Opens a list (`'['`) or an object (`'{'`).
    pub fn begin(&mut self, bracket: char) {
        self.item();
        self.out.push(bracket);
        self.open.push(false);
    }

    /// Closes the innermost list (`']'`) or object (`'}'`).
    pub fn end(&mut self, bracket: char) {
        if self.open.pop() == Some(true) {
            self.newline();
        }
        self.out.push(bracket);
    }

    /// A member's key; its value is written next.
    pub fn key(&mut self, k: &str) {
        self.item();
        json_str(&mut self.out, k, self.escape);
        self.out.push_str(if self.unit.is_some() { ": " } else { ":" });
        self.after_key = true;
    }

    /// A string.
    pub fn str(&mut self, s: &str) {
        self.item();
        json_str(&mut self.out, s, self.escape);
    }

    /// A float ([`json_float`]: `repr`, or a bare non-finite token).
    pub fn float(&mut self, x: f64) {
        self.item();
        self.out.push_str(&json_float(x));
    }

    /// An integer, a bool or `null`: text JSON and Python spell alike.
    pub fn plain(&mut self, text: impl std::fmt::Display) {
        self.item();
        let _ = write!(self.out, "{text}");
    }

    /// The text written.
    pub fn finish(self) -> String {
        self.out
    }
}

/// `repr(b)` of a Python `bool`: `True`, `False`.
pub fn bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// `repr(None)`.
pub fn none() -> &'static str {
    "None"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g6_matches_python() {
        for (x, want) in [
            (0.0280359, "0.0280359"),
            (1.11035, "1.11035"),
            (0.000198623, "0.000198623"),
            (1e-05, "1e-05"),
            (1.5e20, "1.5e+20"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.99, "0.99"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (1234565.0, "1.23456e+06"),
            (0.9999995, "1"),
            (999999.5, "1e+06"),
            (0.00012345678, "0.000123457"),
            (-2.5e-300, "-2.5e-300"),
            (5e-324, "4.94066e-324"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(format_g6(x), want, "{x:?}");
        }
    }

    #[test]
    fn repr_matches_python() {
        for (x, want) in [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e-08, "1e-08"),
            (1.5e16, "1.5e+16"),
            (2.5e-05, "2.5e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (123.456, "123.456"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1_584_391_378_837_919.0 + 0.25, "1584391378837919.2"),
            (1_584_391_378_837_919.0 + 0.75, "1584391378837919.8"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(repr(x), want, "{x:?}");
        }
    }

    #[test]
    fn python_text_forms() {
        assert_eq!(str_repr("a\nb\u{1}"), "'a\\nb\\x01'");
        assert_eq!(str_repr("it's"), "\"it's\"");
        assert_eq!(str_repr("'\""), "'\\'\"'");
        assert_eq!((list([4, 8]), list(Vec::<u8>::new())), ("[4, 8]".to_string(), "[]".to_string()));
        assert_eq!((tuple([2, 3]), tuple([6]), tuple(Vec::<u8>::new())), ("(2, 3)".to_string(), "(6,)".to_string(), "()".to_string()));
        assert_eq!(dict([("'k'", 1)]), "{'k': 1}");
        assert_eq!((bool(true), bool(false), none()), ("True", "False", "None"));
    }

    #[test]
    fn json_strings_are_pythons() {
        let s = "a\"b\\\t\u{8}\u{c}\u{7f}<&>\u{e9}\u{1F600}\u{1}";
        assert_eq!(json_string(s, Escape::Utf8), "\"a\\\"b\\\\\\t\\b\\f\u{7f}<&>\u{e9}\u{1F600}\\u0001\"");
        assert_eq!(json_string(s, Escape::Ascii), r#""a\"b\\\t\b\f\u007f<&>\u00e9\ud83d\ude00\u0001""#);
        assert_eq!(json_string(s, Escape::Html), r#""a\"b\\\t\b\f\u007f\u003c\u0026\u003e\u00e9\ud83d\ude00\u0001""#);
        assert_eq!(serde_json::to_string(s).unwrap(), json_string(s, Escape::Utf8), "ensure_ascii=False is serde_json's escaping too");
    }

    #[test]
    fn json_writer_is_pythons_layout() {
        let mut w = JsonWriter::new(2, Escape::Ascii);
        w.begin('{');
        w.key("a");
        w.begin('[');
        for x in [-2.5, 1e-05, 1e16, f64::NAN] {
            w.float(x);
        }
        w.plain(1);
        w.plain("null");
        w.begin('{');
        w.end('}');
        w.begin('[');
        w.end(']');
        w.end(']');
        w.key("\u{e9}");
        w.str("x");
        w.end('}');
        assert_eq!(w.finish(), "{\n  \"a\": [\n    -2.5,\n    1e-05,\n    1e+16,\n    NaN,\n    1,\n    null,\n    {},\n    []\n  ],\n  \"\\u00e9\": \"x\"\n}");
        let mut w = JsonWriter::new(4, Escape::Utf8);
        w.begin('{');
        w.end('}');
        assert_eq!(w.finish(), "{}");
        assert_eq!((json_float(f64::NEG_INFINITY), json_float(0.1)), ("-Infinity".to_string(), "0.1".to_string()));
        let mut w = JsonWriter::compact(Escape::Html);
        w.begin('{');
        w.key("a");
        w.begin('[');
        w.float(0.5);
        w.str("</");
        w.begin('[');
        w.end(']');
        w.end(']');
        w.key("b");
        w.plain(1);
        w.end('}');
        assert_eq!(w.finish(), r#"{"a":[0.5,"\u003c/",[]],"b":1}"#, "json.dumps(separators=(',', ':')), HTML-safe");
    }
}
