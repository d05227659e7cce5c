//! The calls of a dump as a compact index, for batches over dumps of
//! millions of entries: one fixed-size record per call (its forward and
//! backward byte ranges as `u64` pairs) and the calls' names in one shared
//! byte buffer, instead of a [`Group`] of owned strings per call.
//!
//! Built during the one structural pass over the dump
//! ([`crate::dump::for_each_entry`]): each selected entry appends a record;
//! forward and backward entries of one call are then paired by sorting the
//! records by name (no hash map), and the index is compacted in place. A
//! [`Group`] is made only for the call being read.

use super::Group;
use crate::dump::EntryLoc;
use crate::model::{ApiName, Direction};

/// The byte range of one entry; `start == u64::MAX` when there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u64,
    end: u64,
}

const NO_ENTRY: Span = Span { start: u64::MAX, end: u64::MAX };

impl Span {
    fn of(loc: &EntryLoc) -> Span {
        Span { start: loc.start, end: loc.end }
    }

    fn is_some(self) -> bool {
        self.start != u64::MAX
    }
}

/// Bits of [`Record::name`] holding the name's length (the rest: its offset).
const LEN_BITS: u32 = 16;

/// One call: where its name lies in [`Calls::names`] (offset and length
/// packed in one `u64`; length 0 marks a record merged into another) and
/// its two entries.
#[derive(Debug, Clone, Copy)]
struct Record {
    name: u64,
    forward: Span,
    backward: Span,
}

impl Record {
    fn offset(&self) -> usize {
        (self.name >> LEN_BITS) as usize
    }

    fn len(&self) -> usize {
        (self.name & ((1 << LEN_BITS) - 1)) as usize
    }

    fn pack(offset: usize, len: usize) -> u64 {
        ((offset as u64) << LEN_BITS) | len as u64
    }
}

/// The calls of one dump, in the order they first appear, each with its
/// forward and backward entry (when dumped).
#[derive(Debug, Default)]
pub struct Calls {
    /// Every call's `Prefix.op.N`, one after another.
    names: Vec<u8>,
    records: Vec<Record>,
}

impl Calls {
    /// Appends one entry (its key already known to be a valid API key).
    pub(super) fn push(&mut self, loc: &EntryLoc, name: &str, direction: Direction) {
        // msprobe names are at most 300 bytes; ApiName::parse refuses longer ones.
        debug_assert!(!name.is_empty() && name.len() < 1 << LEN_BITS);
        let name_ref = Record::pack(self.names.len(), name.len());
        self.names.extend_from_slice(name.as_bytes());
        let (forward, backward) = match direction {
            Direction::Forward => (Span::of(loc), NO_ENTRY),
            Direction::Backward => (NO_ENTRY, Span::of(loc)),
        };
        self.records.push(Record { name: name_ref, forward, backward });
    }

    /// Keeps only the calls whose name `keep` accepts.
    pub(super) fn retain(&mut self, keep: impl Fn(&ApiName) -> bool) {
        let names = &self.names;
        self.records.retain(|r| keep(&parse(&names[r.offset()..r.offset() + r.len()])));
        self.compact_names();
    }

    /// Pairs the entries of each call: the records of one name become one,
    /// at the place of the first; when a direction was dumped twice, the
    /// last entry counts (as a JSON object's repeated key does).
    pub(super) fn pair(&mut self) {
        let n = u32::try_from(self.records.len()).expect("fewer than 2^32 entries in one dump");
        let mut order: Vec<u32> = (0..n).collect();
        order.sort_unstable_by(|&a, &b| self.name_bytes(a as usize).cmp(self.name_bytes(b as usize)).then(a.cmp(&b)));
        let mut first = 0;
        for i in 1..order.len() {
            let (head, this) = (order[first] as usize, order[i] as usize);
            if self.name_bytes(head) != self.name_bytes(this) {
                first = i;
                continue;
            }
            let merged = self.records[this];
            let target = &mut self.records[head];
            if merged.forward.is_some() {
                target.forward = merged.forward;
            }
            if merged.backward.is_some() {
                target.backward = merged.backward;
            }
            self.records[this].name = 0;
        }
        drop(order);
        self.records.retain(|r| r.len() > 0);
        self.compact_names();
    }

    /// Moves the names of the records kept to the front of the buffer, in
    /// order (records only ever drop out, so each name moves left or stays).
    fn compact_names(&mut self) {
        let mut to = 0;
        for r in &mut self.records {
            let (from, len) = (r.offset(), r.len());
            self.names.copy_within(from..from + len, to);
            r.name = Record::pack(to, len);
            to += len;
        }
        self.names.truncate(to);
        self.names.shrink_to_fit();
        self.records.shrink_to_fit();
    }

    fn name_bytes(&self, i: usize) -> &[u8] {
        let r = &self.records[i];
        &self.names[r.offset()..r.offset() + r.len()]
    }

    /// How many calls.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The `Prefix.op.N` of call `i`.
    pub fn name_str(&self, i: usize) -> &str {
        std::str::from_utf8(self.name_bytes(i)).expect("names are stored from str")
    }

    /// The name of call `i`.
    pub fn name(&self, i: usize) -> ApiName {
        parse(self.name_bytes(i))
    }

    /// Whether call `i` has a forward entry.
    pub fn has_forward(&self, i: usize) -> bool {
        self.records[i].forward.is_some()
    }

    /// Whether call `i` has a backward entry.
    pub fn has_backward(&self, i: usize) -> bool {
        self.records[i].backward.is_some()
    }

    /// Call `i` as a [`Group`], to read it.
    pub fn group(&self, i: usize) -> Group {
        let r = &self.records[i];
        let name = self.name(i);
        let loc = |span: Span, direction| span.is_some().then(|| EntryLoc { key: name.key(direction), start: span.start, end: span.end });
        Group { forward: loc(r.forward, Direction::Forward), backward: loc(r.backward, Direction::Backward), name }
    }

    /// Every call as a [`Group`] (for commands that keep them all).
    pub fn groups(&self) -> Vec<Group> {
        (0..self.len()).map(|i| self.group(i)).collect()
    }
}

fn parse(bytes: &[u8]) -> ApiName {
    let text = std::str::from_utf8(bytes).expect("names are stored from str");
    ApiName::parse(text).expect("only valid names are stored")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(key: &str, start: u64) -> EntryLoc {
        EntryLoc { key: key.into(), start, end: start + 1 }
    }

    fn calls(keys: &[&str]) -> Calls {
        let mut c = Calls::default();
        for (i, key) in keys.iter().enumerate() {
            let (name, direction) = ApiName::parse_key(key).unwrap();
            c.push(&loc(key, i as u64 * 10), &name.to_string(), direction);
        }
        c.pair();
        c
    }

    #[test]
    fn a_call_costs_one_fixed_record_and_its_name() {
        // 8 bytes of name reference and two u64 ranges: the index grows by
        // this much (plus the name's bytes) per call, whatever the entries hold.
        assert_eq!(std::mem::size_of::<Record>(), 40);
        let c = calls(&["Tensor.add.0.forward", "Torch.matmul.12.forward", "Tensor.add.0.backward"]);
        assert_eq!(c.names.len(), "Tensor.add.0".len() + "Torch.matmul.12".len());
        assert_eq!(c.records.capacity(), 2);
    }

    #[test]
    fn pairs_directions_in_first_appearance_order() {
        let c = calls(&["Torch.x.0.backward", "Tensor.b.1.backward", "Tensor.a.0.forward", "Tensor.b.1.forward", "Tensor.a.0.backward", "Tensor.a.0.forward"]);
        let names: Vec<&str> = (0..c.len()).map(|i| c.name_str(i)).collect();
        assert_eq!(names, ["Torch.x.0", "Tensor.b.1", "Tensor.a.0"]);
        assert!(!c.has_forward(0) && c.has_backward(0));
        let g = c.group(2);
        assert_eq!(g.forward, Some(EntryLoc { key: "Tensor.a.0.forward".into(), start: 50, end: 51 }), "the last forward entry counts");
        assert_eq!(g.backward.map(|b| b.start), Some(40));
        assert_eq!(c.group(1).forward.map(|f| f.start), Some(30));
    }

    #[test]
    fn retains_by_name() {
        let mut c = calls(&["Tensor.add.1.forward", "Mint.add.0.forward", "Tensor.add.10.forward"]);
        c.retain(|n| n.prefix == crate::model::Prefix::Tensor);
        assert_eq!((c.len(), c.name_str(0), c.name_str(1)), (2, "Tensor.add.1", "Tensor.add.10"));
    }
}
