//! msprobe compare's result table (`compare_result_*.xlsx`, or the same
//! table as CSV), of a dump (its `NPU Name` side) against a bench dump, as
//! the rows `replay --from-compare` starts from: each row whose metrics
//! say the two sides differ, by its NPU name (`Torch.matmul.5.forward.output.0`).
//! Not only the rows compare marked failed: an error of scale keeps the
//! cosine above msprobe's thresholds, and msprobe 26.2.0 can mark every
//! row `pass`. Any of msprobe's result layouts (tensor, statistics, md5,
//! with or without the stack column, the columns its `-dm/-lm/-am/-cm`
//! mappings give) is read by its column names.

use std::path::{Path, PathBuf};

use super::xlsx_sheet;

/// The column that names a row's tensor in the tested dump.
pub const NPU_NAME: &str = "NPU Name";
/// Columns of differences: a non-zero value means the sides differ.
const DIFFERENCES: [&str; 7] = ["MaxAbsErr", "Max diff", "Min diff", "Mean diff", "L2norm diff", "EucDist", "MaxRelativeErr"];
/// Columns of similarity: below 1 means the sides differ.
const SIMILARITIES: [&str; 1] = ["Cosine"];
/// Columns of verdicts, and the values that mean "the same" (or, 8.3.2's `None`, "not compared": a side without data, a scalar's gradient).
const VERDICTS: [(&str, &[&str]); 3] = [
    ("Result", &["pass", "", "N/A", "None"]),
    ("Accuracy Reached or Not", &["Yes", "", "N/A", "None"]),
    ("Requires_grad Consistent", &["True", "", "N/A", "None"]),
];

/// The table could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct CompareResultError {
    /// The file.
    pub path: PathBuf,
    /// What was expected.
    pub message: String,
}

/// One row of the table whose sides differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Differing {
    /// The tensor in the tested dump (`Prefix.op.N.forward.output.0`).
    pub npu_name: String,
    /// Why the row counts as differing (`Cosine=0.998`, `MaxAbsErr=0.5`, `Result=error`).
    pub why: String,
}

/// The rows of the compare result at `path` (`.xlsx`, else CSV) whose sides differ, in table order.
pub fn differing_rows(path: &Path) -> Result<Vec<Differing>, CompareResultError> {
    let err = |message: String| CompareResultError { path: path.to_path_buf(), message };
    let is_xlsx = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("xlsx"));
    let rows = if is_xlsx { xlsx_sheet::first_sheet(path).map_err(err)? } else { csv_rows(path).map_err(err)? };
    differing(&rows).map_err(err)
}

/// The records of a CSV file (a UTF-8 BOM dropped).
fn csv_rows(path: &Path) -> Result<Vec<Vec<String>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let body = bytes.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(&bytes);
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(body);
    reader.records().map(|r| r.map(|r| r.iter().map(str::to_string).collect()).map_err(|e| format!("expected a CSV table: {e}"))).collect()
}

/// The differing rows of a table whose first row is its header.
fn differing(rows: &[Vec<String>]) -> Result<Vec<Differing>, String> {
    let header = rows.first().ok_or("expected a header row, got an empty table")?;
    let at = |name: &str| header.iter().position(|h| h.trim() == name);
    let name_col = at(NPU_NAME).ok_or_else(|| format!("expected msprobe compare's result table with an {NPU_NAME:?} column; the header is {header:?}"))?;
    let numeric = |cols: &[&'static str]| cols.iter().filter_map(|&c| at(c).map(|i| (c, i))).collect::<Vec<_>>();
    let (differences, similarities) = (numeric(&DIFFERENCES), numeric(&SIMILARITIES));
    let verdicts: Vec<(&str, usize, &[&str])> = VERDICTS.iter().filter_map(|&(c, same)| at(c).map(|i| (c, i, same))).collect();
    if differences.is_empty() && similarities.is_empty() && verdicts.is_empty() {
        return Err(format!("expected metric columns (Cosine, MaxAbsErr, Max diff, ... or Result); the header is {header:?}"));
    }
    let mut out = vec![];
    for row in &rows[1..] {
        let cell = |i: usize| row.get(i).map_or("", |c| c.trim());
        let name = cell(name_col);
        if name.is_empty() || name == "N/A" {
            continue;
        }
        let number = |i: usize| cell(i).parse::<f64>().ok();
        let mut why: Vec<String> = vec![];
        why.extend(differences.iter().filter(|&&(_, i)| number(i).is_some_and(|x| x != 0.0)).map(|&(c, i)| format!("{c}={}", cell(i))));
        why.extend(similarities.iter().filter(|&&(_, i)| number(i).is_some_and(|x| x < 1.0)).map(|&(c, i)| format!("{c}={}", cell(i))));
        why.extend(verdicts.iter().filter(|&&(_, i, same)| !same.iter().any(|s| s.eq_ignore_ascii_case(cell(i)))).map(|&(c, i, _)| format!("{c}={}", cell(i))));
        if !why.is_empty() {
            out.push(Differing { npu_name: name.to_string(), why: why.join(", ") });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[&[&str]]) -> Vec<Vec<String>> {
        rows.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect()
    }

    #[test]
    fn rows_whose_metrics_differ_are_taken_whatever_their_verdict() {
        let t = table(&[
            &["NPU Name", "Bench Name", "Cosine", "MaxAbsErr", "Result", "Err_message"],
            &["Torch.matmul.0.forward.input.0", "Torch.matmul.0.forward.input.0", "1.0", "0.0", "pass", ""],
            &["Torch.matmul.0.forward.output.0", "Torch.matmul.0.forward.output.0", "0.9999", "0.5", "pass", ""],
            &["Functional.softmax.0.forward.output.0", "N/A", "N/A", "N/A", "error", "no bench data"],
            &["N/A", "Tensor.add.0.forward.output.0", "1.0", "0.0", "pass", ""],
        ]);
        let got = differing(&t).unwrap();
        assert_eq!(got.iter().map(|d| d.npu_name.as_str()).collect::<Vec<_>>(), ["Torch.matmul.0.forward.output.0", "Functional.softmax.0.forward.output.0"]);
        assert_eq!(got[0].why, "MaxAbsErr=0.5, Cosine=0.9999");
        assert_eq!(got[1].why, "Result=error");
    }

    #[test]
    fn a_table_without_an_npu_name_is_refused() {
        let e = differing(&table(&[&["API Name", "Cosine"]])).unwrap_err();
        assert!(e.starts_with("expected msprobe compare's result table with an \"NPU Name\" column"), "{e}");
    }
}
