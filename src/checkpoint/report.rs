//! The result file as msprobe's `save_json(out, results, indent=4)` writes
//! it: `{"<name>": {"l2": .., "cos": .., "numel": .., "shape": ..}}`,
//! floats as Python's `repr`, non-finite ones as bare `NaN`/`Infinity`
//! tokens, `None` as `null`, no trailing newline.

use runtime::pyfmt::{Escape, JsonWriter};

use super::metrics::{Metrics, Pair};

/// The JSON text of the rows, in order.
pub fn render(rows: &[(String, Metrics)]) -> String {
    let mut w = JsonWriter::new(4, Escape::Ascii);
    w.begin('{');
    for (name, m) in rows {
        w.key(name);
        w.begin('{');
        for (key, x) in [("l2", m.l2), ("cos", m.cos)] {
            w.key(key);
            match x {
                Some(x) => w.float(x),
                None => w.plain("null"),
            }
        }
        w.key("numel");
        pair(&mut w, &m.numel, |w, n| w.plain(n));
        w.key("shape");
        pair(&mut w, &m.shape, |w, dims| {
            w.begin('[');
            dims.iter().for_each(|d| w.plain(d));
            w.end(']');
        });
        w.end('}');
    }
    w.end('}');
    w.finish()
}

/// The one value both sides agree on, else `[bench, compared]`.
fn pair<T>(w: &mut JsonWriter, p: &Pair<T>, item: impl Fn(&mut JsonWriter, &T)) {
    match p {
        Pair::Same(v) => item(w, v),
        Pair::Differ(a, b) => {
            w.begin('[');
            item(w, a);
            item(w, b);
            w.end(']');
        }
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
