//! `anomaly_analyze_{timestamp}.json`: per rank (`rank_N`, in the order
//! found) the reported ops, each with its dumped data, its module chain
//! and its call stack, written as msprobe writes it (indent 2, bare
//! NaN/Infinity tokens, ASCII with `\u` escapes).

use std::path::{Path, PathBuf};

use runtime::atomic::{create_dir, write_atomic, WriteOptions};
use runtime::pyfmt::Escape;
use serde_json::{Map, Value};

use super::error::AnalyzeError;
use crate::dump::nonfinite;
use crate::source::ops::{data_info, RawJson};

use super::construct::Construct;
use super::graph::DataNode;
use crate::source::stack::StackFile;

/// One reported op.
#[derive(serde::Serialize)]
struct NodeInfo {
    op_name: String,
    data_info: RawJson,
    construct_info: Vec<String>,
    stack_info: RawJson,
}

/// What the report needs of a rank.
pub struct RankFiles<'a> {
    /// The rank number.
    pub rank: i64,
    /// Its dump.
    pub dump: &'a Path,
    /// Its construct.json.
    pub construct: &'a Construct,
    /// Its stack.json.
    pub stack: &'a StackFile,
}

/// The report's text: `{"rank_N": [node, ...], ...}`.
pub fn render(nodes: &[DataNode], ranks: &[RankFiles]) -> Result<String, AnalyzeError> {
    let mut by_rank: Vec<(i64, Vec<NodeInfo>)> = vec![];
    for n in nodes {
        let Some(files) = ranks.iter().find(|r| r.rank == n.rank) else { continue };
        let op = &n.loc.key;
        // A forward op's data info is its input_args, input_kwargs and
        // output, any other op's its input and output; "forward" is found
        // anywhere in the name, as msprobe 8.3.2's own rule
        // (`DataNode.gen_node_info` in `msprobe/nan_analyze/graph.py`:
        // `if Const.FORWARD in self.op_name`), so the reports agree.
        let info = NodeInfo {
            op_name: op.clone(),
            data_info: data_info(files.dump, &n.loc, op.contains("forward"))?,
            construct_info: files.construct.chain(op),
            stack_info: files.stack.frames_of(op),
        };
        match by_rank.iter_mut().find(|(r, _)| *r == n.rank) {
            Some((_, list)) => list.push(info),
            None => by_rank.push((n.rank, vec![info])),
        }
    }
    let doc: Map<String, Value> = by_rank.into_iter().map(|(r, list)| (format!("rank_{r}"), serde_json::to_value(list).unwrap_or_default())).collect();
    Ok(nonfinite::to_python_json(&Value::Object(doc), 2, Escape::Ascii))
}

/// Writes `text` as `anomaly_analyze_{nanoseconds since the epoch}.json`
/// into `dir` (created if missing), atomically; returns the file.
pub fn write(dir: &Path, text: &str) -> Result<PathBuf, AnalyzeError> {
    create_dir(dir)?;
    let ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let file = dir.join(format!("anomaly_analyze_{ns}.json"));
    write_atomic(&file, text.as_bytes(), WriteOptions::REPORT)?;
    Ok(file)
}
