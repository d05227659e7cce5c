//! Which calls a replay takes, and in which direction each is replayed.

use std::path::Path;

use super::error::ReplayError;
use crate::model::Direction;
use crate::source::{Group, SourceError};

/// The direction one call is replayed in: a backward replay compares the
/// forward outputs too, so "both" is the backward replay where the dump
/// has a backward entry, else the forward one.
fn direction_of(wanted: Option<Direction>, g: &Group) -> Option<Direction> {
    match (wanted, g.backward.is_some()) {
        (Some(Direction::Backward), false) => None,
        (Some(d), _) => Some(d),
        (None, true) => Some(Direction::Backward),
        (None, false) => Some(Direction::Forward),
    }
}

/// The calls of `groups` (those the filter matched) that have a forward
/// entry, each by its index with its direction, and how many had a
/// forward entry at all.
pub(super) fn directions(groups: &[Group], propagation: Option<Direction>) -> (Vec<(usize, Direction)>, usize) {
    let selected: Vec<usize> = (0..groups.len()).filter(|&i| groups[i].forward.is_some()).collect();
    let n = selected.len();
    (selected.into_iter().filter_map(|i| direction_of(propagation, &groups[i]).map(|d| (i, d))).collect(), n)
}

/// The error when nothing is left to replay in `what` (a dump file or a
/// job's root): no call selected, or none with the backward entry asked for.
pub(super) fn nothing_selected(what: &Path, selected: usize) -> ReplayError {
    let message =
        if selected == 0 { "no API selected (check api_name / --filter)" } else { "propagation is backward, but no selected API has a backward entry" };
    SourceError::selection(what, message).into()
}
