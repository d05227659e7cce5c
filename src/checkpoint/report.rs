//! The result file as msprobe's `save_json(out, results, indent=4)` writes
//! it: `{"<name>": {"l2": .., "cos": .., "numel": .., "shape": ..}}`,
//! floats as Python's `repr`, non-finite ones as bare `NaN`/`Infinity`
//! tokens, `None` as `null`, no trailing newline.

use runtime::pyfmt::repr;

use crate::render::literal::json_str;

use super::metrics::{Metrics, Pair};

/// The JSON text of the rows, in order.
pub fn render(rows: &[(String, Metrics)]) -> String {
    if rows.is_empty() {
        return "{}".into();
    }
    let mut out = String::from("{");
    for (i, (name, m)) in rows.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        out.push_str(&format!("    {}: {{\n", json_str(name)));
        out.push_str(&format!("        \"l2\": {},\n", float(m.l2)));
        out.push_str(&format!("        \"cos\": {},\n", float(m.cos)));
        let numel = match &m.numel {
            Pair::Same(n) => n.to_string(),
            Pair::Differ(a, b) => list(&[a.to_string(), b.to_string()], 2),
        };
        out.push_str(&format!("        \"numel\": {numel},\n"));
        let dims = |s: &[usize]| s.iter().map(usize::to_string).collect::<Vec<_>>();
        let shape = match &m.shape {
            Pair::Same(s) => list(&dims(s), 2),
            Pair::Differ(a, b) => list(&[list(&dims(a), 3), list(&dims(b), 3)], 2),
        };
        out.push_str(&format!("        \"shape\": {shape}\n    }}"));
    }
    out.push_str("\n}");
    out
}

/// A JSON list of rendered items at nesting `level` (4 spaces each).
fn list(items: &[String], level: usize) -> String {
    if items.is_empty() {
        return "[]".into();
    }
    let pad = "    ".repeat(level + 1);
    let body: Vec<String> = items.iter().map(|i| format!("{pad}{i}")).collect();
    format!("[\n{}\n{}]", body.join(",\n"), "    ".repeat(level))
}

fn float(x: Option<f64>) -> String {
    match x {
        None => "null".into(),
        Some(v) if v.is_nan() => "NaN".into(),
        Some(v) if v.is_infinite() => if v > 0.0 { "Infinity" } else { "-Infinity" }.into(),
        Some(v) => repr(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_json_dump_indent_4() {
        let same = Metrics { l2: Some(0.0), cos: Some(1.0), numel: Pair::Same(128), shape: Pair::Same(vec![16, 8]) };
        let differ = Metrics { l2: None, cos: Some(f64::NAN), numel: Pair::Differ(4, 2), shape: Pair::Differ(vec![], vec![2]) };
        let text = render(&[("a.w".into(), same), ("b\u{e9}".into(), differ)]);
        let expected = "{\n    \"a.w\": {\n        \"l2\": 0.0,\n        \"cos\": 1.0,\n        \"numel\": 128,\n        \"shape\": [\n            16,\n            8\n        ]\n    },\n    \"b\\u00e9\": {\n        \"l2\": null,\n        \"cos\": NaN,\n        \"numel\": [\n            4,\n            2\n        ],\n        \"shape\": [\n            [],\n            [\n                2\n            ]\n        ]\n    }\n}";
        assert_eq!(text, expected);
        assert_eq!(render(&[]), "{}");
    }
}
