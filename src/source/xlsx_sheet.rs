//! The first worksheet of an `.xlsx` workbook as rows of text cells: what
//! msprobe compare writes its result table as (through pandas and
//! openpyxl). A reader for that machine-written XML only: shared, inline
//! and formula strings, numbers and booleans, cells placed by their
//! reference (`C7`), the five XML entities and character references. No
//! styles, dates or formulas are evaluated.

use std::io::Read;
use std::path::Path;

/// Why a workbook could not be read: one line, naming the part.
pub type SheetError = String;

/// The largest part read (an XML file inside the zip): msprobe's tables of
/// a whole training step stay far below it.
const MAX_PART: u64 = 1 << 30;

/// The rows of the workbook at `path`'s first sheet (in the workbook's
/// order), each as wide as its last non-empty cell.
pub fn first_sheet(path: &Path) -> Result<Vec<Vec<String>>, SheetError> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open it: {e}"))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| format!("expected an .xlsx workbook (a zip): {e}"))?;
    let mut part = |name: &str| -> Result<Option<String>, SheetError> {
        let mut entry = match zip.by_name(name) {
            Ok(e) => e,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) => return Err(format!("{name}: {e}")),
        };
        let mut text = String::new();
        entry.by_ref().take(MAX_PART).read_to_string(&mut text).map_err(|e| format!("{name}: expected UTF-8 XML: {e}"))?;
        Ok(Some(text))
    };
    let workbook = part("xl/workbook.xml")?.ok_or("expected xl/workbook.xml in the workbook")?;
    let rels = part("xl/_rels/workbook.xml.rels")?.unwrap_or_default();
    let sheet = first_sheet_part(&workbook, &rels).unwrap_or_else(|| "xl/worksheets/sheet1.xml".into());
    let shared = part("xl/sharedStrings.xml")?.map(|t| shared_strings(&t)).unwrap_or_default();
    let xml = part(&sheet)?.ok_or_else(|| format!("expected the first sheet's part {sheet} in the workbook"))?;
    rows(&xml, &shared).map_err(|e| format!("{sheet}: {e}"))
}

/// One XML tag: its name (without `/`), attributes' text, and whether it
/// opens, closes or is empty (`<x/>`).
struct Tag<'a> {
    name: &'a str,
    attrs: &'a str,
    closing: bool,
    empty: bool,
}

/// The tags of `xml` with the text before each.
fn tags(xml: &str) -> impl Iterator<Item = (&str, Tag<'_>)> {
    let mut rest = xml;
    std::iter::from_fn(move || loop {
        let start = rest.find('<')?;
        let text = &rest[..start];
        let end = start + rest[start..].find('>')?;
        let inner = &rest[start + 1..end];
        rest = &rest[end + 1..];
        if inner.starts_with('?') || inner.starts_with('!') {
            continue;
        }
        let closing = inner.starts_with('/');
        let inner = inner.trim_start_matches('/');
        let empty = inner.ends_with('/');
        let inner = inner.trim_end_matches('/');
        let (name, attrs) = inner.split_once(char::is_whitespace).unwrap_or((inner, ""));
        // `x:c` and `c` alike.
        let name = name.rsplit(':').next().unwrap_or(name);
        return Some((text, Tag { name, attrs, closing, empty }));
    })
}

/// The value of attribute `key` (unescaped).
fn attr(attrs: &str, key: &str) -> Option<String> {
    let mut rest = attrs;
    while let Some(eq) = rest.find('=') {
        let name = rest[..eq].trim().rsplit(':').next().unwrap_or("");
        let after = rest[eq + 1..].trim_start();
        let quote = after.chars().next()?;
        let body = &after[1..];
        let close = body.find(quote)?;
        if name == key || rest[..eq].trim() == key {
            return Some(unescape(&body[..close]));
        }
        rest = &body[close + 1..];
    }
    None
}

/// XML text with its entities and character references replaced.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(end) = after.find(';') else {
            out.push_str(&rest[i..]);
            return out;
        };
        let entity = &after[..end];
        let c = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            e if e.starts_with("#x") => u32::from_str_radix(&e[2..], 16).ok().and_then(char::from_u32),
            e if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match c {
            Some(c) => out.push(c),
            None => out.push_str(&rest[i..i + 2 + end]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The part of the workbook's first sheet, from its relationship id.
fn first_sheet_part(workbook: &str, rels: &str) -> Option<String> {
    let id = tags(workbook).find(|(_, t)| t.name == "sheet" && !t.closing).and_then(|(_, t)| attr(t.attrs, "id"))?;
    let target =
        tags(rels).find(|(_, t)| t.name == "Relationship" && attr(t.attrs, "Id").as_deref() == Some(&id)).and_then(|(_, t)| attr(t.attrs, "Target"))?;
    Some(match target.strip_prefix('/') {
        Some(absolute) => absolute.to_string(),
        None => format!("xl/{target}"),
    })
}

/// The shared strings table: each `<si>`'s text runs joined.
fn shared_strings(xml: &str) -> Vec<String> {
    let (mut out, mut current, mut in_t) = (vec![], String::new(), false);
    for (text, tag) in tags(xml) {
        if in_t {
            current.push_str(&unescape(text));
        }
        match (tag.name, tag.closing, tag.empty) {
            ("si", false, false) => current.clear(),
            ("si", true, _) => out.push(std::mem::take(&mut current)),
            ("si", false, true) => out.push(String::new()),
            ("t", false, false) => in_t = true,
            ("t", true, _) => in_t = false,
            _ => {}
        }
    }
    out
}

/// The 0-based column of a cell reference (`C7` is 2).
fn column(reference: &str) -> Option<usize> {
    let letters: String = reference.chars().take_while(char::is_ascii_alphabetic).collect();
    if letters.is_empty() {
        return None;
    }
    letters.bytes().try_fold(0usize, |n, b| n.checked_mul(26)?.checked_add(usize::from(b.to_ascii_uppercase() - b'A') + 1)).map(|n| n - 1)
}

/// The rows of a worksheet's XML.
fn rows(xml: &str, shared: &[String]) -> Result<Vec<Vec<String>>, String> {
    let mut out: Vec<Vec<String>> = vec![];
    let mut cell: Option<(usize, String)> = None; // (column, type)
    let (mut value, mut in_value) = (String::new(), false);
    for (text, tag) in tags(xml) {
        if in_value {
            value.push_str(&unescape(text));
        }
        match (tag.name, tag.closing) {
            ("row", false) => {
                out.push(vec![]);
            }
            ("c", false) => {
                let row = out.last_mut().ok_or("expected a cell inside a row")?;
                let col = attr(tag.attrs, "r").and_then(|r| column(&r)).unwrap_or(row.len());
                value.clear();
                if tag.empty {
                    continue;
                }
                cell = Some((col, attr(tag.attrs, "t").unwrap_or_default()));
            }
            ("v" | "t", false) if cell.is_some() && !tag.empty => in_value = true,
            ("v" | "t", true) => in_value = false,
            ("c", true) => {
                let Some((col, kind)) = cell.take() else { continue };
                let text = match kind.as_str() {
                    "s" => {
                        let i: usize = value.trim().parse().map_err(|_| format!("expected a shared string index, got {value:?}"))?;
                        shared.get(i).cloned().ok_or_else(|| format!("shared string {i} is missing"))?
                    }
                    "b" => (if value.trim() == "1" { "True" } else { "False" }).to_string(),
                    _ => std::mem::take(&mut value),
                };
                let row = out.last_mut().ok_or("expected a cell inside a row")?;
                if row.len() <= col {
                    row.resize(col + 1, String::new());
                }
                row[col] = text;
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_of_every_kind_land_in_their_columns() {
        let shared = shared_strings(r#"<sst><si><t>NPU Name</t></si><si><r><t>a &amp; </t></r><r><t xml:space="preserve">b</t></r></si><si/></sst>"#);
        assert_eq!(shared, ["NPU Name", "a & b", ""]);
        let xml = r#"<?xml version="1.0"?><worksheet><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="C1" t="inlineStr"><is><t>x&lt;y</t></is></c></row><row r="2"><c r="B2"><v>0.5</v></c><c r="D2" t="b"><v>1</v></c><c r="E2" s="1"/></row></sheetData></worksheet>"#;
        assert_eq!(rows(xml, &shared).unwrap(), [vec!["NPU Name", "", "x<y"], vec!["", "0.5", "", "True"]]);
        assert_eq!(column("AA12"), Some(26));
        assert_eq!(unescape("&#65;&#x42;&bogus;"), "AB&bogus;");
    }

    #[test]
    fn the_first_sheet_is_found_through_the_workbooks_relationships() {
        let workbook = r#"<workbook><sheets><sheet name="result" sheetId="1" r:id="rId3"/></sheets></workbook>"#;
        let rels = r#"<Relationships><Relationship Id="rId1" Target="styles.xml"/><Relationship Id="rId3" Target="worksheets/sheet2.xml"/></Relationships>"#;
        assert_eq!(first_sheet_part(workbook, rels).as_deref(), Some("xl/worksheets/sheet2.xml"));
    }
}
