//! Literals for dump values, in each language the templates write (Python,
//! Rust, TOML).
//!
//! This is the only place dump-controlled text turns into source text, and
//! it only ever produces *literals*: pure-ASCII quoted strings with every
//! special character escaped, numbers, booleans, none/option values, and
//! (for Rust projects) runtime [`Spec`] values built from those literals
//! with constructors fixed here. Templates place these where a value
//! belongs; no dump value can end a literal early.

use std::fmt::Write;

use runtime::dtype::TDType;
use runtime::pyfmt;
use runtime::spec::Spec;

/// A double-quoted ASCII literal: quotes, backslashes and `\n \r \t` get
/// the usual escapes, printable ASCII stays, every other character goes
/// through `other` (the language's escape syntax).
fn quoted(s: &str, other: impl Fn(&mut String, char)) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c => other(&mut out, c),
        }
    }
    out.push('"');
    out
}

/// A double-quoted, ASCII-only Python string literal for any text.
pub fn py_str(s: &str) -> String {
    quoted(s, |out, c| match c as u32 {
        n if n <= 0xff => write!(out, "\\x{n:02x}").unwrap(),
        n if n <= 0xffff => write!(out, "\\u{n:04x}").unwrap(),
        n => write!(out, "\\U{n:08x}").unwrap(),
    })
}

/// A Python float literal that round-trips the value, non-finite ones included.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        "float(\"nan\")".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "float(\"inf\")".into()
        } else {
            "float(\"-inf\")".into()
        }
    } else {
        // Debug prints the shortest round-trip form and always marks a float (`3.0`, `1e-8`).
        format!("{x:?}")
    }
}

/// `True` / `False`.
pub fn py_bool(b: bool) -> String {
    pyfmt::bool(b).into()
}

/// An optional literal: the value, or `None`.
pub fn py_opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| pyfmt::none().into())
}

/// A Rust string literal (ASCII only, `\u{..}` escapes).
pub fn rs_str(s: &str) -> String {
    quoted(s, |out, c| write!(out, "\\u{{{:x}}}", c as u32).unwrap())
}

/// A Rust f64 expression that round-trips the value, non-finite ones included.
pub fn rs_float(x: f64) -> String {
    if x.is_nan() {
        "f64::NAN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "f64::INFINITY".into()
        } else {
            "f64::NEG_INFINITY".into()
        }
    } else {
        format!("{x:?}")
    }
}

/// A TOML basic string (ASCII control characters escaped).
pub fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => write!(out, "\\u{:04X}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Rust `Option` literal: `Some(v)` or `None`.
fn rs_opt(v: Option<String>) -> String {
    match v {
        Some(v) => format!("Some({v})"),
        None => "None".into(),
    }
}

/// A runtime dtype in Rust source: `TDType::F32`.
fn rs_dtype(d: TDType) -> String {
    format!("TDType::{}", d.variant())
}

/// A runtime [`Spec`] as a Rust expression of a generated project: tensors
/// through the project's `data.tensor(..)` (its file relative to the
/// project), everything else as `Spec` constructors of literals.
pub fn rs_spec(spec: &Spec) -> String {
    let int = |x: &Option<i64>| rs_opt(x.map(|v| v.to_string()));
    match spec {
        Spec::Tensor(t) => format!(
            "data.tensor({}, &[{}], {}, {}, {}, {})",
            rs_dtype(t.dtype),
            t.shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", "),
            rs_opt(t.low.map(rs_float)),
            rs_opt(t.high.map(rs_float)),
            rs_opt(t.requires_grad.map(|b| b.to_string())),
            rs_opt(t.data.as_ref().map(|p| rs_str(&p.to_string_lossy()))),
        ),
        Spec::Int(i) => format!("Spec::Int({i})"),
        Spec::Float(x) => format!("Spec::Float({})", rs_float(*x)),
        Spec::Bool(b) => format!("Spec::Bool({b})"),
        Spec::Str(s) => format!("Spec::Str({}.into())", rs_str(s)),
        Spec::DType(d) => format!("Spec::DType({})", rs_dtype(*d)),
        Spec::Slice(a, b, c) => format!("Spec::Slice({}, {}, {})", int(a), int(b), int(c)),
        Spec::Ellipsis => "Spec::Ellipsis".into(),
        Spec::None => "Spec::None".into(),
        Spec::List(items) => format!("Spec::List(vec![{}])", items.iter().map(rs_spec).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_cannot_escape_their_quotes() {
        assert_eq!(py_str("a\"b\\c\n\"\"\"__import__('os')"), r#""a\"b\\c\n\"\"\"__import__('os')""#);
        assert_eq!(py_str("é\u{2028}😀\0"), r#""\xe9\u2028\U0001f600\x00""#);
    }

    #[test]
    fn rust_and_toml_strings_are_escaped() {
        assert_eq!(rs_str("a\"b\\\n\u{e9}"), r#""a\"b\\\n\u{e9}""#);
        assert_eq!(toml_str("C:\\x\"\n"), r#""C:\\x\"\u000A""#);
        assert_eq!(rs_float(f64::NEG_INFINITY), "f64::NEG_INFINITY");
        assert_eq!(rs_float(2.0), "2.0");
    }

    #[test]
    fn specs_are_constructors_of_literals() {
        let t = runtime::spec::TensorSpec {
            dtype: TDType::BF16,
            shape: vec![2, 3],
            low: Some(f64::NEG_INFINITY),
            high: None,
            requires_grad: Some(true),
            data: Some("d/x\"*/.pt".into()),
        };
        let list = Spec::List(vec![Spec::Tensor(t), Spec::Str("*/ x".into()), Spec::Slice(Some(1), None, Some(-1)), Spec::DType(TDType::C64)]);
        assert_eq!(
            rs_spec(&list),
            r#"Spec::List(vec![data.tensor(TDType::BF16, &[2, 3], Some(f64::NEG_INFINITY), None, Some(true), Some("d/x\"*/.pt")), Spec::Str("*/ x".into()), Spec::Slice(Some(1), None, Some(-1)), Spec::DType(TDType::C64)])"#
        );
    }

    #[test]
    fn floats_round_trip() {
        assert_eq!(py_float(3.0), "3.0");
        assert_eq!(py_float(1e-8), "1e-8");
        assert_eq!(py_float(-0.1), "-0.1");
        assert_eq!(py_float(f64::NEG_INFINITY), "float(\"-inf\")");
        assert_eq!(py_float(f64::NAN), "float(\"nan\")");
    }
}
