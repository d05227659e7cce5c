//! One pass over one rank's dump: the ops before its first communication
//! op (phase 1), then its communication ops with the anomalous compute ops
//! between them (phase 2), and those after its last one (phase 3).

use std::path::Path;

use super::error::AnalyzeError;
use crate::source::ops::scan_ops;

use super::graph::{self, is_anomaly, CommNode, DataNode};

/// What the search needs of one rank.
#[derive(Debug, Default)]
pub struct RankOps {
    /// The dump has no entries.
    pub empty: bool,
    /// The first op before any communication op whose inputs are finite and
    /// whose output is not (the walk of phase 1 stops there).
    pub before: Option<DataNode>,
    /// The communication ops from the first one on, in order; empty after
    /// an anomaly in phase 1.
    pub comm: Vec<CommNode>,
    /// The anomalous compute ops after the last communication op.
    pub after: Vec<DataNode>,
}

/// Streams the dump of `rank` at `file` into [`RankOps`].
pub fn walk(rank: i64, file: &Path) -> Result<RankOps, AnalyzeError> {
    let mut ops = RankOps { empty: true, ..RankOps::default() };
    // The anomalous compute ops since the last communication op, and how
    // many compute ops (ignored ones aside) came since.
    let mut pending: Vec<DataNode> = vec![];
    let mut sub_layer = 0;
    let header = scan_ops(file, &mut |op| {
        ops.empty = false;
        let comm = graph::comm_api(&op.loc.key).is_some();
        if ops.comm.is_empty() {
            // Phase 1: until the first communication op or the first anomaly.
            if ops.before.is_some() {
                return;
            }
            if !comm {
                if is_anomaly(&op) {
                    ops.before = Some(DataNode { rank, loc: op.loc, layer: 0, sub_layer: 0 });
                }
                return;
            }
        }
        if comm {
            let layer = ops.comm.len();
            ops.comm.push(CommNode::new(rank, op, layer, sub_layer, std::mem::take(&mut pending)));
            sub_layer = 0;
        } else if !graph::is_ignored(&op.loc.key) {
            if is_anomaly(&op) {
                pending.push(DataNode { rank, loc: op.loc, layer: 0, sub_layer });
            }
            sub_layer += 1;
        }
    })?;
    if let Some(f) = header.framework.filter(|f| f != "pytorch") {
        return Err(AnalyzeError::input(file, format!("key \"framework\": the dump was made by {f:?}; nan_analyze reads PyTorch dumps only, as msprobe")));
    }
    ops.after = pending;
    Ok(ops)
}
