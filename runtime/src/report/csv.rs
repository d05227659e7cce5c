//! The bytes of one CSV file as Python's `csv.writer` writes them to a file
//! opened with `encoding="utf-8-sig", newline=""`: a BOM, then the `csv`
//! crate's writer with CRLF line ends and minimal quoting (a cell is quoted
//! iff it holds a comma, a quote or a line-end char, or is a row's only
//! cell and empty; inner quotes doubled), as Python's QUOTE_MINIMAL does.
//! Cells are formatted like the scripts' `cell()`: empty for `None`,
//! `repr()` for floats, `str()` for everything else; a text cell a
//! spreadsheet would take for a formula gets a leading `'`
//! ([`spreadsheet_safe`]), as the scripts' `cell()` does.

use crate::pyfmt::repr;

/// The whole file: BOM, header row, then `rows`, each cell made
/// [`spreadsheet_safe`].
pub(super) fn encode(header: &[&str], rows: &[Vec<String>]) -> Vec<u8> {
    let mut writer = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::Necessary)
        .terminator(csv::Terminator::CRLF)
        .flexible(true)
        .from_writer("\u{feff}".as_bytes().to_vec());
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let cells = row.iter().map(|cell| spreadsheet_safe(cell).into_owned());
        writer.write_record(cells).expect("a flexible writer into memory cannot fail");
    }
    writer.into_inner().expect("flushing into memory cannot fail")
}

/// Characters that make a spreadsheet read a cell as a formula (or DDE).
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Whether `s` is a number as the reports print them (`-0.5`, `1e-08`,
/// `-inf`, `nan`): those keep their sign.
fn is_number(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    if ["inf", "infinity", "nan"].iter().any(|w| s.eq_ignore_ascii_case(w)) {
        return true;
    }
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => (digits(int) || int.is_empty()) && (digits(frac) || frac.is_empty()) && !(int.is_empty() && frac.is_empty()),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// A text cell that a spreadsheet would run as a formula (it starts with
/// `=`, `+`, `-`, `@`, a tab or a CR and is not a number) gets a leading
/// `'`, so spreadsheet programs show it as text: API names and messages
/// carry dump text.
pub(super) fn spreadsheet_safe(cell: &str) -> std::borrow::Cow<'_, str> {
    if cell.starts_with(FORMULA_STARTS) && !is_number(cell) {
        format!("'{cell}").into()
    } else {
        cell.into()
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
    crate::pyfmt::tuple(dims)
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
    fn formula_cells_become_text_and_numbers_keep_their_sign() {
        for text in ["=1+1", "+cmd|' /C calc'!A0", "-x", "@SUM(A1)", "\tx", "\rx", "-", "+", "=", "-1e", "-.e5", "--1"] {
            assert_eq!(spreadsheet_safe(text), format!("'{text}"), "{text:?}");
        }
        for number in ["-0.5", "+1", "-1e-08", "-1.5E+16", "-inf", "-Infinity", "-nan", "-.5", "-5.", "1", "x=1", "plain"] {
            assert_eq!(spreadsheet_safe(number), number, "{number:?}");
        }
    }

    #[test]
    fn minimal_quoting() {
        let rows = vec![vec!["a,b".to_string(), "say \"hi\"".into(), "x\ry".into(), "line\nbreak".into(), "plain; text".into(), String::new()]];
        let got = String::from_utf8(encode(&["h"], &rows)).unwrap();
        assert_eq!(got, "\u{feff}h\r\n\"a,b\",\"say \"\"hi\"\"\",\"x\ry\",\"line\nbreak\",plain; text,\r\n");
    }

    /// Python's `csv.writer` writes `['']` as `""` (a bare empty line would
    /// read back as no row) and `['', '']` as `,`; spaces, `#` and a lone
    /// quote as Python does too.
    #[test]
    fn empty_cells_as_python_writes_them() {
        let rows: Vec<Vec<String>> = [vec![""], vec!["", ""], vec!["a", ""], vec!["", "x"], vec![" "], vec!["#x"], vec!["\""]]
            .iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect();
        let got = String::from_utf8(encode(&["h"], &rows)).unwrap();
        assert_eq!(got, "\u{feff}h\r\n\"\"\r\n,\r\na,\r\n,x\r\n \r\n#x\r\n\"\"\"\"\r\n");
    }
}
