//! The three phases of the search for the first anomalous op: before,
//! during and after communication (msprobe 8.3.2's `NanAnalyzer.analyze`).

use std::collections::{BTreeSet, VecDeque};

use super::graph::{self, CommNode, DataNode, Kind};
use super::walk::RankOps;

/// The phase that found the reported ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before each rank's first communication op: one op per rank at most.
    Before,
    /// Among the connected communication ops: one op.
    During,
    /// After each rank's last communication op: one op per rank at most.
    After,
}

/// What the search found, and what it could not connect.
#[derive(Debug, Default)]
pub struct Found {
    /// The phase that found `nodes` (`None`: no phase found any).
    pub phase: Option<Phase>,
    /// The reported ops, in the order found.
    pub nodes: Vec<DataNode>,
    /// The ids of the communication ops that found no peer (phase 2 ran).
    pub unconnected: Vec<String>,
}

/// Runs the phases over the ranks (`ranks[i]` is the number of `ops[i]`),
/// stopping at the first that finds anything.
pub fn search(ranks: &[i64], ops: Vec<RankOps>) -> Found {
    let before: Vec<DataNode> = ops.iter().filter_map(|o| o.before.clone()).collect();
    if !before.is_empty() {
        return Found { phase: Some(Phase::Before), nodes: before, unconnected: vec![] };
    }
    let mut after = vec![];
    let mut comm = vec![];
    for o in ops {
        after.push(o.after.into_iter().next());
        comm.push(o.comm);
    }
    let unconnected = graph::connect(ranks, &mut comm);
    let nodes = graph::prune(comm);
    if let Some(first) = first_in_groups(&nodes) {
        return Found { phase: Some(Phase::During), nodes: vec![first], unconnected };
    }
    let after: Vec<DataNode> = after.into_iter().flatten().collect();
    let phase = (!after.is_empty()).then_some(Phase::After);
    Found { phase, nodes: after, unconnected }
}

/// The ops connected to `start`, itself included, sorted.
fn group(nodes: &[Vec<Option<CommNode>>], start: (usize, usize)) -> Vec<(usize, usize)> {
    let mut members = BTreeSet::from([start]);
    let mut queue = vec![start];
    while let Some((ri, ni)) = queue.pop() {
        let Some(n) = &nodes[ri][ni] else { continue };
        for &e in &n.edges {
            if members.insert(e) {
                queue.push(e);
            }
        }
    }
    members.into_iter().collect()
}

/// The suspects of a group: the anomalous compute ops before each sending
/// or undirected member whose inputs are not finite (judged at its layer),
/// then each member whose own inputs are finite and output is not.
fn suspects(nodes: &[Vec<Option<CommNode>>], members: &[(usize, usize)], out: &mut Vec<DataNode>) {
    let live = || members.iter().filter_map(|&(ri, ni)| nodes[ri][ni].as_ref());
    for m in live().filter(|m| matches!(m.kind, Kind::Src | Kind::Link) && m.input_bad) {
        out.extend(m.compute_ops.iter().map(|op| DataNode { layer: m.layer, ..op.clone() }));
    }
    for m in live().filter(|m| m.anomaly) {
        out.push(DataNode { layer: m.layer, ..m.data.clone() });
    }
}

/// Phase 2's search: rounds that take the next unseen op of each rank (by
/// layer) and judge the groups they belong to; the first round with a
/// suspect reports the one with the lowest (layer, sub_layer), the first
/// found on a tie. (msprobe 8.3.2 drops an op taken in a round that is not
/// in an earlier group of that round instead of judging its group.)
fn first_in_groups(nodes: &[Vec<Option<CommNode>>]) -> Option<DataNode> {
    let mut queues: Vec<VecDeque<(usize, usize)>> = nodes
        .iter()
        .enumerate()
        .map(|(ri, rank)| {
            let mut live: Vec<(usize, usize)> = rank.iter().enumerate().filter(|(_, n)| n.is_some()).map(|(ni, _)| (ri, ni)).collect();
            live.sort_by_key(|&(ri, ni)| nodes[ri][ni].as_ref().map_or(0, |n| n.layer));
            live.into()
        })
        .collect();
    let mut seen: BTreeSet<(usize, usize)> = BTreeSet::new();
    while queues.iter().any(|q| !q.is_empty()) {
        let mut groups: Vec<Vec<(usize, usize)>> = vec![];
        let mut grouped: BTreeSet<(usize, usize)> = BTreeSet::new();
        for q in &mut queues {
            let Some(next) = std::iter::from_fn(|| q.pop_front()).find(|id| !seen.contains(id)) else { continue };
            if grouped.contains(&next) {
                continue;
            }
            let g = group(nodes, next);
            grouped.extend(g.iter().copied());
            groups.push(g);
        }
        let mut found = vec![];
        for g in &groups {
            seen.extend(g.iter().copied());
            suspects(nodes, g, &mut found);
        }
        if let Some(first) = found.into_iter().min_by_key(|n| (n.layer, n.sub_layer)) {
            return Some(first);
        }
    }
    None
}
