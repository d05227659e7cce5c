//! The one `.xlsx` writer: tables ([`table`]) as msprobe's `save_excel`
//! writes them through pandas. Each header is in pandas' style (bold, thin
//! border, centred); numbers are numbers, booleans booleans, infinities
//! the text `inf`/`-inf`, NaN and `None` empty cells. A table of 1,048,500
//! rows or more is split, as msprobe splits it, into nearly equal sheets
//! `<name>_part_<i>` (`part_<i>` for the unnamed `Sheet1`). Text is only
//! ever written as string cells, never as formulas, so a value such as
//! `--flag` or `=1+1` is shown, never run.

pub mod table;

use rust_xlsxwriter::{Format, FormatAlign, FormatBorder, Workbook, Worksheet};

/// Why [`workbook`] failed (the writer's own error: a bug in this tool).
pub use rust_xlsxwriter::XlsxError;

pub use table::{Cell, Level, Table};

/// msprobe's `MAX_EXCEL_LENGTH`: a table this long or longer is split.
const MAX_ROWS: usize = 1_048_500;

/// The workbook bytes of `sheets` (name, table), in order; a sheet without
/// a name is pandas' `Sheet1`.
pub fn workbook(sheets: &[(Option<&str>, &Table)]) -> Result<Vec<u8>, XlsxError> {
    let mut book = Workbook::new();
    let header = Format::new().set_bold().set_border(FormatBorder::Thin).set_align(FormatAlign::Center);
    for (name, table) in sheets {
        if table.rows.len() < MAX_ROWS {
            sheet(book.add_worksheet().set_name(name.unwrap_or("Sheet1"))?, &header, table.header, &table.rows)?;
        } else {
            let parts = table.rows.len().div_ceil(MAX_ROWS);
            for (i, slice) in table.rows.chunks(table.rows.len().div_ceil(parts)).enumerate() {
                let part = name.map_or(format!("part_{i}"), |name| format!("{name}_part_{i}"));
                sheet(book.add_worksheet().set_name(part)?, &header, table.header, slice)?;
            }
        }
    }
    book.save_to_buffer()
}

/// The most characters an xlsx cell holds.
const CELL_CHARS: usize = 32_767;

/// Marks a text cut to fit a cell.
const CUT: &str = "… [cut: over 32767 characters]";

/// `s`, cut to fit a cell when longer (a pack's value or a joined stack
/// can be), with a marker saying so, instead of failing the whole workbook.
fn fitted(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(CELL_CHARS) {
        None => s.into(),
        Some(_) => {
            let keep = CELL_CHARS - CUT.chars().count();
            let end = s.char_indices().nth(keep).map_or(s.len(), |(i, _)| i);
            format!("{}{CUT}", &s[..end]).into()
        }
    }
}

fn sheet(ws: &mut Worksheet, format: &Format, header: &[&str], rows: &[Vec<Cell>]) -> Result<(), XlsxError> {
    for (col, name) in (0u16..).zip(header) {
        ws.write_string_with_format(0, col, *name, format)?;
    }
    for (r, row) in (1u32..).zip(rows) {
        for (col, cell) in (0u16..).zip(row) {
            match cell {
                Cell::Empty => {}
                Cell::Text(s) => {
                    ws.write_string(r, col, fitted(s))?;
                }
                Cell::Int(n) => {
                    ws.write_number(r, col, *n as f64)?;
                }
                Cell::Number(x) if x.is_nan() => {}
                Cell::Number(x) if x.is_infinite() => {
                    ws.write_string(r, col, if *x > 0.0 { "inf" } else { "-inf" })?;
                }
                Cell::Number(x) => {
                    ws.write_number(r, col, *x)?;
                }
                Cell::Bool(b) => {
                    ws.write_boolean(r, col, *b)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Read};

    use super::*;

    fn entry(book: &[u8], name: &str) -> String {
        let mut zip = zip::ZipArchive::new(Cursor::new(book)).unwrap();
        let mut text = String::new();
        zip.by_name(name).unwrap().read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn sheets_are_named_and_text_is_never_a_formula() {
        let table = Table::new(&["a", "b"], vec![vec![Cell::text("=1+1"), Cell::Number(f64::INFINITY)], vec![Cell::Empty, Cell::Number(f64::NAN)]]);
        let book = workbook(&[(None, &table), (Some("summary"), &table)]).unwrap();
        let names = entry(&book, "xl/workbook.xml");
        assert!(names.contains("name=\"Sheet1\"") && names.contains("name=\"summary\""), "{names}");
        let sheet = entry(&book, "xl/worksheets/sheet1.xml");
        assert!(!sheet.contains("<f>"), "{sheet}");
        assert!(entry(&book, "xl/sharedStrings.xml").contains("=1+1"));
    }

    #[test]
    fn text_over_a_cells_limit_is_cut_and_marked() {
        assert_eq!(fitted("short"), "short");
        let long = "é".repeat(40_000);
        let cut = fitted(&long);
        assert_eq!(cut.chars().count(), CELL_CHARS);
        assert!(cut.ends_with(CUT));
        let table = Table::new(&["a"], vec![vec![Cell::text(&long)]]);
        assert!(workbook(&[(None, &table)]).is_ok());
    }
}
