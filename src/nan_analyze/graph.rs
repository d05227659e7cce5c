//! Communication ops as a graph: which op a name is, the direction of a
//! communication op (src, dst or link), which ranks and API it connects
//! to, connecting the ranks' ops to each other, and pruning the clean ones.

use std::collections::{BTreeSet, HashMap};

use crate::dump::EntryLoc;
use crate::source::ops::{OpStats, Peers, RankArg};

/// msprobe's communication APIs (`Distributed.<api>.<n>.<direction>`).
const COMM_APIS: [&str; 19] = [
    "send",
    "recv",
    "broadcast",
    "all_reduce",
    "reduce",
    "all_gather",
    "gather",
    "isend",
    "irecv",
    "scatter",
    "reduce_scatter",
    "_reduce_scatter_base",
    "_all_gather_base",
    "all_to_all_single",
    "all_to_all",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "send_object_list",
    "recv_object_list",
];

/// Which end of a communication an op is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The sending end.
    Src,
    /// The receiving end.
    Dst,
    /// An undirected op (all_reduce, all_gather, ...).
    Link,
}

impl Kind {
    fn opposite(self) -> Kind {
        match self {
            Kind::Src => Kind::Dst,
            Kind::Dst => Kind::Src,
            Kind::Link => Kind::Link,
        }
    }
}

/// The directed APIs and the end whose rank argument is the op's own rank.
fn directed(api: &str) -> Option<Kind> {
    match api {
        "send" | "isend" | "gather" | "send_object_list" => Some(Kind::Dst),
        "recv" | "irecv" | "broadcast" | "scatter" | "recv_object_list" => Some(Kind::Src),
        _ => None,
    }
}

/// The API a communication op meets on the other ranks.
fn peer_api(api: &str) -> &str {
    match api {
        "send" => "recv",
        "recv" => "send",
        "isend" => "irecv",
        "irecv" => "isend",
        "send_object_list" => "recv_object_list",
        "recv_object_list" => "send_object_list",
        other => other,
    }
}

/// The API of a communication op's name: `Distributed.<api>.<n>.<...>`
/// with `<api>` exactly one of msprobe's communication APIs.
pub fn comm_api(name: &str) -> Option<&str> {
    let mut parts = name.split('.');
    let (Some("Distributed"), Some(api), Some(_), Some(_)) = (parts.next(), parts.next(), parts.next(), parts.next()) else { return None };
    COMM_APIS.contains(&api).then_some(api)
}

/// Ops whose output msprobe does not judge (`Torch.empty*`, `Torch.fill*`).
/// A substring match anywhere in the name, as msprobe 8.3.2's own rule
/// (`is_ignore_op` in `msprobe/nan_analyze/utils.py`: `any(keyword in
/// op_name for keyword in ['Torch.empty', 'Torch.fill'])`), so that the
/// same ops are ignored.
pub fn is_ignored(name: &str) -> bool {
    name.contains("Torch.empty") || name.contains("Torch.fill")
}

/// msprobe's anomaly of a compute op: not an ignored op, every input
/// finite, some output not.
pub fn is_anomaly(op: &OpStats) -> bool {
    op.output && !(is_ignored(&op.loc.key) || op.input || op.input_args || op.input_kwargs)
}

/// An op the search may report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataNode {
    /// Its rank.
    pub rank: i64,
    /// Its name and where its entry lies.
    pub loc: EntryLoc,
    /// The layer of the communication op it is judged with.
    pub layer: usize,
    /// Its place among the compute ops since the last communication op.
    pub sub_layer: usize,
}

/// A communication op of one rank.
#[derive(Debug, Clone)]
pub struct CommNode {
    /// The op itself, as a reportable node.
    pub data: DataNode,
    /// Its API (`all_reduce`).
    pub api: String,
    /// Its end.
    pub kind: Kind,
    /// Its layer: its index among its rank's communication ops, or the
    /// layer of the op connected to it.
    pub layer: usize,
    /// `input_args` or `input_kwargs` holds a non-finite statistic.
    pub input_bad: bool,
    /// `output` does.
    pub output_bad: bool,
    /// The op's own inputs are finite and its output is not.
    pub anomaly: bool,
    /// The anomalous compute ops between the previous communication op and this one.
    pub compute_ops: Vec<DataNode>,
    peers: Peers,
    /// The ops it is connected to: (rank index, op index).
    pub edges: BTreeSet<(usize, usize)>,
    connected: bool,
}

impl CommNode {
    /// A communication op of `rank` at `layer`, after `sub_layer` compute ops.
    pub fn new(rank: i64, op: OpStats, layer: usize, sub_layer: usize, compute_ops: Vec<DataNode>) -> CommNode {
        let api = comm_api(&op.loc.key).unwrap_or_default().to_string();
        let kind = kind(&op.peers, &api, rank);
        CommNode {
            anomaly: is_anomaly(&op),
            input_bad: op.input_args || op.input_kwargs,
            output_bad: op.output,
            data: DataNode { rank, loc: op.loc, layer, sub_layer },
            api,
            kind,
            layer,
            compute_ops,
            peers: op.peers,
            edges: BTreeSet::new(),
            connected: false,
        }
    }

    /// `{rank}.{op name}`, msprobe's node id.
    pub fn id(&self) -> String {
        format!("{}.{}", self.data.rank, self.data.loc.key)
    }

    /// The ranks it names: its peer (`dst`/`dst_group`, `src`/`src_group`),
    /// else its integer arguments; plus its group's ranks.
    fn ranks(&self) -> BTreeSet<i64> {
        let p = &self.peers;
        let mut ranks = BTreeSet::new();
        for pair in [[p.dst, p.dst_group], [p.src, p.src_group]] {
            // msprobe takes the first key present, true or not.
            if let Some(RankArg::Given(Some(r))) = pair.into_iter().find(|a| *a != RankArg::Absent) {
                ranks.insert(r);
            }
        }
        if ranks.is_empty() {
            ranks.extend(p.int_args.iter().flatten());
        }
        ranks.extend(p.group_ranks.iter().flatten());
        ranks
    }
}

/// The end of a communication op: an explicit `src`/`src_group`, then
/// `dst`/`dst_group` (equal to the own rank or not), then for a directed
/// API its first integer argument; otherwise undirected.
fn kind(p: &Peers, api: &str, rank: i64) -> Kind {
    for (args, own) in [([p.src, p.src_group], Kind::Src), ([p.dst, p.dst_group], Kind::Dst)] {
        if let Some(RankArg::Given(v)) = args.into_iter().find(|a| matches!(a, RankArg::Given(_))) {
            return if v == Some(rank) { own } else { own.opposite() };
        }
    }
    match (directed(api), p.int_args.first()) {
        (Some(own), Some(v)) => {
            if *v == Some(rank) {
                own
            } else {
                own.opposite()
            }
        }
        _ => Kind::Link,
    }
}

/// Connects the communication ops of the ranks (`nodes[i]` is the i-th
/// rank's, `ranks[i]` its number) as msprobe does, with the API matched
/// exactly: each op of each rank but the last is connected, per rank it
/// names (or every rank), to the first op not yet taken by this rank whose
/// API is the peer API, whose end is the opposite one, and that names this
/// rank (or names none and is undirected). Returns the ids of the ops that
/// found no peer.
///
/// For one rank the candidates of a (rank, API, end) are a fixed list in
/// order, and the ops taken from it are always its first ones, so a cursor
/// per list replaces msprobe's rescan from the start (linear, not quadratic).
pub fn connect(ranks: &[i64], nodes: &mut [Vec<CommNode>]) -> Vec<String> {
    let named: Vec<Vec<BTreeSet<i64>>> = nodes.iter().map(|r| r.iter().map(CommNode::ranks).collect()).collect();
    let mut unconnected = vec![];
    for ri in 0..ranks.len().saturating_sub(1) {
        let (searched, rank) = (&ranks[..=ri], ranks[ri]);
        // (target rank index, API, end) -> (candidates in order, how many are taken).
        let mut lists: HashMap<(usize, String, Kind), (Vec<usize>, usize)> = HashMap::new();
        for ni in 0..nodes[ri].len() {
            let cur = &nodes[ri][ni];
            let (want_api, want_kind) = (peer_api(&cur.api).to_string(), cur.kind.opposite());
            let targets: Vec<i64> = if named[ri][ni].is_empty() { ranks.to_vec() } else { named[ri][ni].iter().copied().collect() };
            let mut found = cur.connected;
            for r in targets.into_iter().filter(|r| !searched.contains(r)) {
                let Some(rj) = ranks.iter().position(|&x| x == r) else { continue };
                let (list, taken) = lists.entry((rj, want_api.clone(), want_kind)).or_insert_with(|| {
                    let fits = |(tj, t): &(usize, &CommNode)| {
                        let theirs = &named[rj][*tj];
                        t.api == want_api && t.kind == want_kind && ((theirs.is_empty() && directed(&t.api).is_none()) || theirs.contains(&rank))
                    };
                    (nodes[rj].iter().enumerate().filter(fits).map(|(tj, _)| tj).collect(), 0)
                });
                let Some(&tj) = list.get(*taken) else { continue };
                *taken += 1;
                let layer = nodes[ri][ni].layer;
                let t = &mut nodes[rj][tj];
                t.layer = layer;
                t.data.layer = layer;
                t.connected = true;
                t.edges.insert((ri, ni));
                let cur = &mut nodes[ri][ni];
                cur.connected = true;
                cur.edges.insert((rj, tj));
                found = true;
            }
            if !found {
                unconnected.push(nodes[ri][ni].id());
            }
        }
    }
    unconnected
}

/// Removes the ops whose inputs and output are finite and that follow no
/// anomalous compute op, with their edges; the rest keep their places
/// (`None` marks a removed op).
pub fn prune(nodes: Vec<Vec<CommNode>>) -> Vec<Vec<Option<CommNode>>> {
    let mut kept: Vec<Vec<Option<CommNode>>> =
        nodes.into_iter().map(|rank| rank.into_iter().map(|n| (n.input_bad || n.output_bad || !n.compute_ops.is_empty()).then_some(n)).collect()).collect();
    let live: BTreeSet<(usize, usize)> =
        kept.iter().enumerate().flat_map(|(ri, r)| r.iter().enumerate().filter(|(_, n)| n.is_some()).map(move |(ni, _)| (ri, ni))).collect();
    for n in kept.iter_mut().flatten().flatten() {
        n.edges.retain(|e| live.contains(e));
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn communication_apis_match_exactly() {
        assert_eq!(comm_api("Distributed.all_reduce.0.forward"), Some("all_reduce"));
        assert_eq!(comm_api("Distributed.reduce_scatter_tensor.3.forward"), Some("reduce_scatter_tensor"));
        assert_eq!(comm_api("Distributed.batch_isend_irecv.0.forward"), None);
        assert_eq!(comm_api("Distributed.barrier.0.forward"), None);
        assert_eq!(comm_api("Distributed.all_reduce"), None);
        assert_eq!(comm_api("Torch.all_reduce.0.forward"), None);
        assert!(is_ignored("Torch.empty_like.0.forward") && is_ignored("Torch.fill_.1.forward") && !is_ignored("Tensor.fill_.0.forward"));
    }

    fn peers(src: RankArg, dst: RankArg, int_args: Vec<Option<i64>>, group: Option<Vec<i64>>) -> Peers {
        Peers { src, src_group: RankArg::Absent, dst, dst_group: RankArg::Absent, int_args, group_ranks: group }
    }

    #[test]
    fn ends_follow_msprobe() {
        use RankArg::*;
        assert_eq!(kind(&peers(Given(Some(1)), Absent, vec![], None), "broadcast", 1), Kind::Src);
        assert_eq!(kind(&peers(Given(Some(0)), Absent, vec![], None), "broadcast", 1), Kind::Dst);
        assert_eq!(kind(&peers(Falsy, Given(Some(2)), vec![], None), "send", 1), Kind::Src);
        assert_eq!(kind(&peers(Absent, Absent, vec![Some(1)], None), "send", 0), Kind::Src);
        assert_eq!(kind(&peers(Absent, Absent, vec![Some(0)], None), "send", 0), Kind::Dst);
        assert_eq!(kind(&peers(Absent, Absent, vec![Some(0)], None), "recv", 1), Kind::Dst);
        assert_eq!(kind(&peers(Absent, Absent, vec![Some(0)], Some(vec![0, 1])), "all_reduce", 0), Kind::Link);
    }
}
