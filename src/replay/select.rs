//! Which calls a replay takes, and in which direction each is replayed.

use std::path::Path;

use super::ReplayError;
use crate::model::Direction;
use crate::select::ApiSelector;
use crate::source::{Group, SourceError};

/// One call to replay: where its entries lie and its direction.
pub(super) type Job<'a> = (&'a Group, Direction);

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

/// The calls of `groups` (those of the dump at `file` that `selector`
/// matched) in `selector`'s shard that have a forward entry, each with its
/// direction; an error when none is left.
pub(super) fn jobs<'a>(file: &Path, groups: &'a [Group], selector: &ApiSelector, propagation: Option<Direction>) -> Result<Vec<Job<'a>>, ReplayError> {
    let selected: Vec<&Group> = groups.iter().filter(|g| g.forward.is_some() && selector.in_shard(&g.name)).collect();
    if selected.is_empty() {
        return Err(SourceError::selection(file, "no API selected (check api_name / --filter)").into());
    }
    let jobs: Vec<Job> = selected.into_iter().filter_map(|g| direction_of(propagation, g).map(|d| (g, d))).collect();
    if jobs.is_empty() {
        return Err(SourceError::selection(file, "propagation is backward, but no selected API has a backward entry").into());
    }
    Ok(jobs)
}
