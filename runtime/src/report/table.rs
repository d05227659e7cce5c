//! The ranked table printed on a terminal after a replay (by `msprobe
//! replay` and by generated Rust projects): worst rows first, msprobe's
//! metrics, Python's float formatting.

use std::fmt::Write;

use super::DetailRow;
use crate::pyfmt;

/// The details rows ranked worst first: by status (error, skip, warning,
/// pass), then by cosine
/// (missing cosine counts as worst), then by max absolute error.
pub fn ranked(details: &[DetailRow]) -> Vec<&DetailRow> {
    let mut v: Vec<&DetailRow> = details.iter().collect();
    v.sort_by(|a, b| {
        let key = |r: &DetailRow| (std::cmp::Reverse(r.status), r.cosine.unwrap_or(f64::NEG_INFINITY));
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.partial_cmp(&kb.1).unwrap_or(std::cmp::Ordering::Equal))
            .then(b.max_abs.unwrap_or(f64::INFINITY).partial_cmp(&a.max_abs.unwrap_or(f64::INFINITY)).unwrap_or(std::cmp::Ordering::Equal))
    });
    v
}

/// A metric cell: Python's `repr`, or `-` when not computed.
fn cell(x: Option<f64>) -> String {
    x.map(pyfmt::repr).unwrap_or_else(|| "-".into())
}

/// The `top` worst rows (0: all) as a table with a header line, and a last
/// line counting the rows left out.
pub fn ranked_table(details: &[DetailRow], top: usize) -> String {
    let ranked = ranked(details);
    let shown = if top == 0 { ranked.len() } else { top.min(ranked.len()) };
    let mut out = format!("{:<48} {:>20} {:>14} {:>6}  message\n", "output", "cosine", "max_abs_err", "status");
    for r in &ranked[..shown] {
        let _ = writeln!(out, "{:<48} {:>20} {:>14} {:>6}  {}", r.api_name, cell(r.cosine), cell(r.max_abs), r.status.as_str(), r.message);
    }
    if shown < ranked.len() {
        let _ = writeln!(out, "... {} more rows in the CSV", ranked.len() - shown);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Status;

    fn row(name: &str, status: Status, cosine: Option<f64>) -> DetailRow {
        DetailRow { cosine, max_abs: Some(0.5), ..DetailRow::uncompared(name.into(), status, String::new()) }
    }

    #[test]
    fn errors_first_then_lowest_cosine() {
        let rows = [row("a", Status::Pass, Some(0.9)), row("b", Status::Error, Some(1.0)), row("c", Status::Pass, Some(0.5))];
        let names: Vec<&str> = ranked(&rows).iter().map(|r| r.api_name.as_str()).collect();
        assert_eq!(names, ["b", "c", "a"]);
        let mixed = [row("p", Status::Pass, Some(0.1)), row("w", Status::Warning, Some(1.0)), row("s", Status::Skip, None), row("e", Status::Error, Some(1.0))];
        let names: Vec<&str> = ranked(&mixed).iter().map(|r| r.api_name.as_str()).collect();
        assert_eq!(names, ["e", "s", "w", "p"]);
        let table = ranked_table(&rows, 2);
        assert_eq!(table.lines().count(), 4, "{table}");
        assert!(table.lines().nth(1).unwrap().starts_with("b ") && table.ends_with("... 1 more rows in the CSV\n"), "{table}");
        assert!(table.contains(" - ") || table.contains("1.0"), "{table}");
    }
}
