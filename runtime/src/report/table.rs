//! The ranked table printed on a terminal after a replay (by `msprobe
//! replay` and by generated Rust projects): worst rows first, msprobe's
//! metrics, Python's float formatting.

use std::fmt::Write;

use super::{any_effect, call_effects, DetailRow, Shares};
use crate::pyfmt;

/// What the table (and the HTML report) put first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RankBy {
    /// The calls whose own errors move the loss most (|the sum of their
    /// outputs' loss effects|), where rows have effects; else as `Error`.
    #[default]
    Effect,
    /// The worst verdicts and metrics.
    Error,
}

impl RankBy {
    /// Every order, for the `--rank-by` flag.
    pub const ALL: [RankBy; 2] = [RankBy::Effect, RankBy::Error];

    /// The flag's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RankBy::Effect => "effect",
            RankBy::Error => "error",
        }
    }
}

/// The details rows ranked as `by` says: by effect, the rows of the call
/// with the largest |effect| first (calls without one last), each group
/// then as by error; by error, worst first: by status (error, skip,
/// warning, pass), then by cosine (missing cosine counts as worst), then
/// by max absolute error.
pub fn ranked(details: &[DetailRow], by: RankBy) -> Vec<&DetailRow> {
    let mut v: Vec<(&DetailRow, f64)> = match by {
        RankBy::Effect => details.iter().zip(call_effects(details)).map(|(r, e)| (r, e.unwrap_or(-1.0))).collect(),
        RankBy::Error => details.iter().map(|r| (r, 0.0)).collect(),
    };
    v.sort_by(|(a, ea), (b, eb)| eb.partial_cmp(ea).unwrap_or(std::cmp::Ordering::Equal).then_with(|| by_error(a, b)));
    v.into_iter().map(|(r, _)| r).collect()
}

/// Worst first, by status, then cosine, then max absolute error.
fn by_error(a: &DetailRow, b: &DetailRow) -> std::cmp::Ordering {
    {
        let key = |r: &DetailRow| (std::cmp::Reverse(r.status), r.cosine.unwrap_or(f64::NEG_INFINITY));
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.partial_cmp(&kb.1).unwrap_or(std::cmp::Ordering::Equal))
            .then(b.max_abs.unwrap_or(f64::INFINITY).partial_cmp(&a.max_abs.unwrap_or(f64::INFINITY)).unwrap_or(std::cmp::Ordering::Equal))
    }
}

/// A metric cell: Python's `repr`, or `-` when not computed.
fn cell(x: Option<f64>) -> String {
    x.map(pyfmt::repr).unwrap_or_else(|| "-".into())
}

/// The `top` first rows (0: all) ranked `by`, as a table with a header
/// line, and a last line counting the rows left out; ranked by effect,
/// where rows have effects, a column of each row's loss effect.
pub fn ranked_table(details: &[DetailRow], top: usize, by: RankBy) -> String {
    let ranked = ranked(details, by);
    let shown = if top == 0 { ranked.len() } else { top.min(ranked.len()) };
    let shares = (by == RankBy::Effect && any_effect(details)).then(|| Shares::of(details));
    let effect = |r: &DetailRow| shares.as_ref().map(|s| format!(" {:>14}", cell(s.effect(r)))).unwrap_or_default();
    let header = if shares.is_some() { format!(" {:>14}", "loss_effect") } else { String::new() };
    let mut out = format!("{:<48} {:>20} {:>14}{header} {:>6}  message\n", "output", "cosine", "max_abs_err", "status");
    for r in &ranked[..shown] {
        let _ = writeln!(out, "{:<48} {:>20} {:>14}{} {:>6}  {}", r.api_name, cell(r.cosine), cell(r.max_abs), effect(r), r.status.as_str(), r.message);
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
        let names: Vec<&str> = ranked(&rows, RankBy::Error).iter().map(|r| r.api_name.as_str()).collect();
        assert_eq!(names, ["b", "c", "a"]);
        let mixed = [row("p", Status::Pass, Some(0.1)), row("w", Status::Warning, Some(1.0)), row("s", Status::Skip, None), row("e", Status::Error, Some(1.0))];
        let names: Vec<&str> = ranked(&mixed, RankBy::Effect).iter().map(|r| r.api_name.as_str()).collect();
        assert_eq!(names, ["e", "s", "w", "p"]);
        let table = ranked_table(&rows, 2, RankBy::Effect);
        assert_eq!(table.lines().count(), 4, "{table}");
        assert!(table.lines().nth(1).unwrap().starts_with("b ") && table.ends_with("... 1 more rows in the CSV\n"), "{table}");
        assert!(table.contains(" - ") || table.contains("1.0"), "{table}");
    }

    #[test]
    fn by_effect_the_call_that_moves_the_loss_most_comes_first() {
        let with = |name: &str, status, effect| DetailRow { effect, ..row(name, status, Some(1.0)) };
        let rows = [
            with("a.forward.output.0", Status::Error, Some(0.001)),
            with("b.forward.output.0", Status::Pass, Some(-0.5)),
            with("b.backward.output.0", Status::Pass, None),
            with("c.forward.output.0", Status::Error, None),
        ];
        let names = |by| ranked(&rows, by).iter().map(|r| r.api_name.as_str()).collect::<Vec<_>>();
        assert_eq!(names(RankBy::Effect), ["b.forward.output.0", "b.backward.output.0", "a.forward.output.0", "c.forward.output.0"]);
        assert_eq!(names(RankBy::Error), ["a.forward.output.0", "c.forward.output.0", "b.forward.output.0", "b.backward.output.0"]);
        let table = ranked_table(&rows, 0, RankBy::Effect);
        assert!(table.lines().next().unwrap().contains("loss_effect") && table.lines().nth(1).unwrap().contains("-0.5"), "{table}");
    }
}
