//! JSON values as Python sees them after `json.load`: `str()` and `repr()`
//! (what msprobe compares and what pandas writes into a cell) and `==`.
//! msprobe's non-finite tokens arrive as the sentinels of
//! [`crate::dump::nonfinite`] and count as floats.

use runtime::pyfmt;
use serde_json::Value;

use crate::dump::nonfinite;

/// The number a value is to Python (`bool` is an `int`), as a float, or
/// `None` for strings, lists, dicts and `None`.
pub fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        Value::String(_) => nonfinite::value(v),
        _ => None,
    }
}

/// Whether `v` is a Python `int` or `float` (a `bool` included).
pub fn is_number(v: &Value) -> bool {
    number(v).is_some()
}

/// `str(v)`: a string as it is, anything else as [`repr`].
pub fn str(v: &Value) -> String {
    match v {
        Value::String(s) if nonfinite::value(v).is_none() => s.clone(),
        _ => repr(v),
    }
}

/// `repr(v)`: `None`, `True`, `3`, `0.0001`, `1e-05`, `nan`, `'text'`,
/// `[1, 'a']`, `{'k': 1}`.
pub fn repr(v: &Value) -> String {
    match v {
        Value::Null => pyfmt::none().into(),
        Value::Bool(b) => pyfmt::bool(*b).into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            _ => pyfmt::repr(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => match nonfinite::value(v) {
            Some(x) => pyfmt::repr(x),
            None => pyfmt::str_repr(s),
        },
        Value::Array(items) => pyfmt::list(items.iter().map(repr)),
        Value::Object(m) => pyfmt::dict(m.iter().map(|(k, x)| (pyfmt::str_repr(k), repr(x)))),
    }
}

/// Python's `a == b` on loaded JSON: numbers (and bools) by value, NaN
/// unequal to itself, lists item by item, dicts by keys and values.
pub fn eq(a: &Value, b: &Value) -> bool {
    match (number(a), number(b)) {
        (Some(x), Some(y)) => return x == y,
        (Some(_), None) | (None, Some(_)) => return false,
        (None, None) => {}
    }
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| eq(p, q)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| eq(p, q))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn str_and_repr_read_like_python() {
        assert_eq!(str(&json!("1e-4")), "1e-4");
        assert_eq!(str(&json!(0.0001)), "0.0001");
        assert_eq!(str(&json!(1e-5)), "1e-05");
        assert_eq!(str(&json!(8.0)), "8.0");
        assert_eq!(str(&json!(42)), "42");
        assert_eq!(str(&json!(true)), "True");
        assert_eq!(str(&json!(null)), "None");
        assert_eq!(str(&json!([1, "a", [2.5, false]])), "[1, 'a', [2.5, False]]");
        assert_eq!(str(&json!({"k": "it's"})), "{'k': \"it's\"}");
        assert_eq!(str(&nonfinite::sentinel(f64::NEG_INFINITY).unwrap()), "-inf");
        assert_eq!(repr(&json!("a\nb\u{1}")), "'a\\nb\\x01'");
    }

    #[test]
    fn equality_is_pythons() {
        assert!(eq(&json!([1, true]), &json!([1.0, 1])));
        assert!(!eq(&json!("1"), &json!(1)));
        assert!(eq(&json!({"a": [1]}), &json!({"a": [1.0]})));
        let nan = nonfinite::sentinel(f64::NAN).unwrap();
        assert!(!eq(&nan, &nan));
    }
}
