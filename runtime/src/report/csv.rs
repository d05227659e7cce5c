//! The bytes of one CSV file as Python's `csv.writer` writes them to a file
//! opened with `encoding="utf-8-sig", newline=""`: a BOM, CRLF line ends,
//! minimal quoting. Cells are formatted like the scripts' `cell()`: empty
//! for `None`, `repr()` for floats, `str()` for everything else.

use crate::pyfmt::repr;

/// The whole file: BOM, header row, then `rows`.
pub(super) fn encode(header: &[&str], rows: &[Vec<String>]) -> Vec<u8> {
    let mut out = String::from("\u{feff}");
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_cell(&mut out, cell);
        }
        out.push_str("\r\n");
    }
    out.into_bytes()
}

/// QUOTE_MINIMAL: quoted iff the cell holds the delimiter, the quote char or
/// a line-end char; inner quotes are doubled.
fn push_cell(out: &mut String, cell: &str) {
    if cell.contains([',', '"', '\r', '\n']) {
        out.push('"');
        out.push_str(&cell.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(cell);
    }
}

/// An optional float: `repr(x)`, or empty for `None`.
pub(super) fn float(x: Option<f64>) -> String {
    x.map(repr).unwrap_or_default()
}

/// An optional text: itself, or empty for `None`.
pub(super) fn text(s: Option<&str>) -> String {
    s.unwrap_or_default().to_string()
}

/// A shape as Python's `str(tuple)`: `(2, 3)`, `(6,)`, `()`.
pub(super) fn shape(dims: &[usize]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!("({})", dims.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_print_like_python_tuples() {
        assert_eq!(shape(&[2, 3]), "(2, 3)");
        assert_eq!(shape(&[6]), "(6,)");
        assert_eq!(shape(&[]), "()");
    }

    #[test]
    fn minimal_quoting() {
        let rows = vec![vec!["a,b".to_string(), "say \"hi\"".into(), "x\ry".into(), "line\nbreak".into(), "plain; text".into(), String::new()]];
        let got = String::from_utf8(encode(&["h"], &rows)).unwrap();
        assert_eq!(got, "\u{feff}h\r\n\"a,b\",\"say \"\"hi\"\"\",\"x\ry\",\"line\nbreak\",plain; text,\r\n");
    }
}
