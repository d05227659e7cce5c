//! `result.xlsx` as msprobe's `save_excel` writes it: a `summary` sheet
//! (`filename`, `pass_check`), then one sheet per check that ran, each
//! header in pandas' style (bold, thin border, centred). Numbers are
//! numbers, booleans booleans, infinities the text `inf`/`-inf`, NaN and
//! `None` empty cells; a sheet of 1,048,500 rows or more is split into
//! `<name>_part_<i>` sheets. Text is only ever written as string cells, so
//! a value such as `--flag` or `=1+1` is shown, never run, and needs no
//! refusal (msprobe aborts the whole result on such values).

use rust_xlsxwriter::{Format, FormatAlign, FormatBorder, Workbook, Worksheet, XlsxError};

use super::table::{Cell, Table};

/// msprobe's `MAX_EXCEL_LENGTH`: a sheet this long or longer is split.
const MAX_ROWS: usize = 1_048_500;

/// The summary sheet's columns (msprobe's).
pub const SUMMARY_HEADER: &[&str] = &["filename", "pass_check"];

/// The workbook bytes of `sheets` (name, table), in order.
pub fn workbook(sheets: &[(&str, &Table)]) -> Result<Vec<u8>, XlsxError> {
    let mut book = Workbook::new();
    let header = Format::new().set_bold().set_border(FormatBorder::Thin).set_align(FormatAlign::Center);
    for (name, table) in sheets {
        if table.rows.len() < MAX_ROWS {
            sheet(book.add_worksheet().set_name(*name)?, &header, table.header, &table.rows)?;
        } else {
            let parts = table.rows.len().div_ceil(MAX_ROWS);
            for (i, slice) in table.rows.chunks(table.rows.len().div_ceil(parts)).enumerate() {
                sheet(book.add_worksheet().set_name(format!("{name}_part_{i}"))?, &header, table.header, slice)?;
            }
        }
    }
    book.save_to_buffer()
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
                    ws.write_string(r, col, s)?;
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
