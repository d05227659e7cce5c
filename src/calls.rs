//! Pairing a dump's entries into API calls: one structural pass, entries
//! grouped by `Prefix.op.N` (forward and backward matched by name), in the
//! order the calls first appear.

use std::collections::HashMap;
use std::path::Path;

use crate::dump::{self, DumpError, DumpHeader, EntryLoc};
use crate::model::{ApiName, Direction, Framework};
use crate::select::ApiSelector;

/// Where the entries of one API call lie in the dump.
pub struct Group {
    /// `Prefix.op.N`.
    pub name: ApiName,
    /// The forward entry, if dumped.
    pub forward: Option<EntryLoc>,
    /// The backward entry, if dumped.
    pub backward: Option<EntryLoc>,
}

/// Indexes `file` and pairs the entries of the APIs `framework` can replay
/// and `selector`'s filter accepts (the shard is left to the caller).
pub fn groups(file: &Path, framework: Framework, selector: &ApiSelector) -> Result<(DumpHeader, Vec<Group>), DumpError> {
    let mut want = |key: &str| match ApiName::parse_key(key) {
        Ok((name, _)) => framework.accepts(name.prefix) && selector.matches(&name),
        Err(_) => false,
    };
    let index = dump::index(file, &mut want)?;
    let mut order: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<Group> = vec![];
    for loc in index.entries {
        let (name, direction) = ApiName::parse_key(&loc.key).expect("the index only keeps parseable keys");
        let slot = *order.entry(name.to_string()).or_insert_with(|| {
            groups.push(Group { name, forward: None, backward: None });
            groups.len() - 1
        });
        match direction {
            Direction::Forward => groups[slot].forward = Some(loc),
            Direction::Backward => groups[slot].backward = Some(loc),
        }
    }
    Ok((index.header, groups))
}
