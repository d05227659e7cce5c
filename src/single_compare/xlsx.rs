//! A key's rows as msprobe's workbook (`save_excel`): sheet `Sheet1`, the
//! header in pandas' style (bold, thin border, centred), numbers as
//! numbers, shapes as `"[4, 8]"`, an infinite error as the string `inf`, a
//! missing value as an empty cell; plus a `note` column. A table of
//! 1,048,500 rows or more is split, as msprobe splits it, into nearly equal
//! sheets `part_0`, `part_1`, ... Text is only ever written as string
//! cells, never as formulas, so no cell can run in a spreadsheet.

use rust_xlsxwriter::{Format, FormatAlign, FormatBorder, Workbook, Worksheet, XlsxError};

use super::discover::Id;
use super::row::Row;

/// msprobe's twelve columns, then `note` (why a row has no figures).
pub const HEADER: [&str; 13] = [
    "step",
    "rank",
    "micro_step",
    "id",
    "shape1",
    "shape2",
    "相同元素百分比(%)",
    "首个不匹配元素索引",
    "最大绝对误差",
    "最大相对误差",
    "误差在千分之一内元素占比(%)",
    "误差在百分之一内元素占比(%)",
    "note",
];

/// msprobe's `MAX_EXCEL_LENGTH`: a table this long or longer is split.
const MAX_ROWS: usize = 1_048_500;

/// The `.xlsx` bytes of `rows` (already in order).
pub fn workbook(rows: &[&Row]) -> Result<Vec<u8>, XlsxError> {
    let mut book = Workbook::new();
    let header = Format::new().set_bold().set_border(FormatBorder::Thin).set_align(FormatAlign::Center);
    if rows.len() < MAX_ROWS {
        sheet(book.add_worksheet().set_name("Sheet1")?, &header, rows)?;
    } else {
        let parts = rows.len().div_ceil(MAX_ROWS);
        for (i, slice) in rows.chunks(rows.len().div_ceil(parts)).enumerate() {
            sheet(book.add_worksheet().set_name(format!("part_{i}"))?, &header, slice)?;
        }
    }
    book.save_to_buffer()
}

fn sheet(ws: &mut Worksheet, header: &Format, rows: &[&Row]) -> Result<(), XlsxError> {
    for (col, name) in (0u16..).zip(HEADER) {
        ws.write_string_with_format(0, col, name, header)?;
    }
    for (r, row) in (1u32..).zip(rows) {
        let k = &row.key;
        ws.write_number(r, 0, k.step as f64)?;
        ws.write_number(r, 1, k.rank as f64)?;
        ws.write_number(r, 2, k.micro_step as f64)?;
        match &k.id {
            Id::Index(n) => ws.write_number(r, 3, *n as f64)?,
            Id::Name(s) | Id::File(s) => ws.write_string(r, 3, s)?,
        };
        for (col, shape) in [(4, &row.shape1), (5, &row.shape2)] {
            if let Some(shape) = shape {
                ws.write_string(r, col, shape_text(shape))?;
            }
        }
        if let Some(m) = &row.metrics {
            ws.write_number(r, 6, m.same_percent)?;
            if let Some(i) = m.first_mismatch {
                ws.write_number(r, 7, i as f64)?;
            }
            for (col, v) in [(8, m.max_abs), (9, m.max_rel)] {
                if v.is_infinite() {
                    ws.write_string(r, col, if v > 0.0 { "inf" } else { "-inf" })?;
                } else {
                    ws.write_number(r, col, v)?;
                }
            }
            ws.write_number(r, 10, m.within_thousandth)?;
            ws.write_number(r, 11, m.within_hundredth)?;
        }
        let note = row.note.text();
        if !note.is_empty() {
            ws.write_string(r, 12, note)?;
        }
    }
    Ok(())
}

/// A shape as Python prints a list: `[4, 8]`, `[]`.
fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_read_like_python_lists() {
        assert_eq!(shape_text(&[4, 8]), "[4, 8]");
        assert_eq!(shape_text(&[3]), "[3]");
        assert_eq!(shape_text(&[]), "[]");
    }
}
