//! The loss effect columns of the details CSV (the rulebook's
//! `csv.effect`: Loss Effect, Loss Share, Effect Note) and the order of the
//! rows by effect. An effect is divided by the gradient recorded at the
//! loss (a loss scale; 1 without one), and its share is of the last
//! recorded loss, or, without one, of the sum of every |effect|.

use super::DetailRow;
use crate::pyfmt::repr;

/// What the effects of a set of rows are divided by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shares {
    /// The gradient recorded at the loss (a loss scale), else 1.
    pub scale: f64,
    /// The loss (`true`) or the sum of |effect|.
    pub of_loss: bool,
    /// |loss|, or the sum of |effect| (after `scale`).
    pub denominator: f64,
}

impl Shares {
    /// The shares of `details`: of the last row's loss that recorded one, else of the sum of |effect|.
    pub fn of(details: &[DetailRow]) -> Shares {
        match details.iter().rev().find_map(|r| r.loss) {
            Some((loss, scale)) => Shares { scale, of_loss: true, denominator: loss.abs() },
            None => Shares { scale: 1.0, of_loss: false, denominator: details.iter().filter_map(|r| r.effect).map(f64::abs).sum() },
        }
    }

    /// A row's effect, unscaled.
    pub fn effect(&self, r: &DetailRow) -> Option<f64> {
        r.effect.map(|e| e / self.scale)
    }

    /// A row's share.
    pub fn share(&self, r: &DetailRow) -> Option<f64> {
        self.effect(r).map(|e| if self.denominator > 0.0 { e / self.denominator } else { 0.0 })
    }

    /// The three cells of a row.
    pub fn cells(&self, r: &DetailRow) -> [String; 3] {
        [self.effect(r).map(repr).unwrap_or_default(), self.share(r).map(repr).unwrap_or_default(), r.effect_note.clone()]
    }
}

/// Whether any row has an effect: the CSV then has the effect columns.
pub fn any_effect(details: &[DetailRow]) -> bool {
    details.iter().any(|r| r.effect.is_some())
}

/// The call a row belongs to: its name before `.forward` / `.backward`.
pub fn call_of(api_name: &str) -> &str {
    [".forward", ".backward"].iter().find_map(|d| api_name.find(d).map(|i| &api_name[..i])).unwrap_or(api_name)
}

/// |the sum of the effects| of each row's call (its forward rows'), `None` for a call with none.
pub fn call_effects(details: &[DetailRow]) -> Vec<Option<f64>> {
    let mut sums: std::collections::HashMap<&str, f64> = std::collections::HashMap::new();
    for r in details {
        if let Some(e) = r.effect {
            *sums.entry(call_of(&r.api_name)).or_default() += e;
        }
    }
    details.iter().map(|r| sums.get(call_of(&r.api_name)).map(|s| s.abs())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Status;

    fn row(name: &str, effect: Option<f64>, loss: Option<(f64, f64)>) -> DetailRow {
        DetailRow { effect, loss, ..DetailRow::uncompared(name.into(), Status::Pass, String::new()) }
    }

    #[test]
    fn shares_are_of_the_last_loss_unscaled_else_of_all_effects() {
        let rows = [row("a.forward.output.0", Some(2.0), None), row("l.forward.output.0", Some(0.0), Some((4.0, 2.0)))];
        let s = Shares::of(&rows);
        assert_eq!(s.cells(&rows[0]), ["1.0".to_string(), "0.25".into(), String::new()]);
        let rows = [row("a.forward.output.0", Some(-3.0), None), row("b.forward.output.0", Some(1.0), None), row("b.backward.output.0", None, None)];
        let s = Shares::of(&rows);
        assert_eq!((s.of_loss, s.share(&rows[0]), s.share(&rows[2])), (false, Some(-0.75), None));
        assert_eq!(call_effects(&rows), [Some(3.0), Some(1.0), Some(1.0)]);
    }
}
