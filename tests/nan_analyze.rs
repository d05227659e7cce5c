//! `nan_analyze` end to end on multi-rank steps built here from the real
//! PyTorch statistics fixture (tests/fixtures/pytorch/statistics: dump.json,
//! stack.json): NaN injected into one op's output on one rank, and
//! `Distributed.*` entries added around it. Each case compares the whole
//! report (only the timestamp of its file name varies).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use msprobe::dump::nonfinite::{to_msprobe_json, NonFiniteReader};
use serde_json::{json, Map, Value};

/// msprobe's bare `NaN`, as the dump codec's sentinel (written as the token).
const NAN: &str = "\u{0}NaN";

/// The fixture's header, its `data` entries in order, and its stack.json.
struct Fixture {
    header: Map<String, Value>,
    ops: Vec<(String, Value)>,
    stack: Value,
}

fn fixture() -> Fixture {
    let dir = common::repo().join("tests/fixtures/pytorch/statistics");
    let text = std::fs::read(dir.join("dump.json")).unwrap();
    let mut dump: Map<String, Value> = serde_json::from_reader(NonFiniteReader::new(text.as_slice())).unwrap();
    let Some(Value::Object(data)) = dump.remove("data") else { panic!("the fixture has data") };
    let stack = serde_json::from_slice(&std::fs::read(dir.join("stack.json")).unwrap()).unwrap();
    Fixture { header: dump, ops: data.into_iter().collect(), stack }
}

impl Fixture {
    /// The fixture's `i`-th entry.
    fn op(&self, i: usize) -> (String, Value) {
        self.ops[i].clone()
    }

    /// The entries `range` of the fixture, untouched.
    fn ops(&self, range: std::ops::Range<usize>) -> Vec<(String, Value)> {
        range.map(|i| self.op(i)).collect()
    }

    /// The frames stack.json records for `op`.
    fn frames(&self, op: &str) -> Value {
        let items = self.stack.as_object().unwrap().values();
        items.map(|v| v.as_array().unwrap()).find(|item| item[0].as_array().unwrap().iter().any(|n| n == op)).map_or(json!({}), |item| item[1].clone())
    }
}

/// Sets the `Max` of the first tensor among `field`'s top-level items to NaN.
fn poison(entry: &mut Value, field: &str) {
    let items: Vec<&mut Value> = match &mut entry[field] {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(o) => o.values_mut().collect(),
        _ => panic!("{field} holds no items"),
    };
    let tensor = items.into_iter().find(|t| t.get("Max").is_some()).expect("a tensor with Max");
    tensor["Max"] = json!(NAN);
}

/// The `i`-th fixture op with NaN in its output (its inputs finite): where an anomaly starts.
fn origin(f: &Fixture, i: usize) -> (String, Value) {
    let (name, mut v) = f.op(i);
    poison(&mut v, "output");
    (name, v)
}

/// The fixture ops `range` with NaN in their inputs and outputs: the anomaly spreading.
fn spread(f: &Fixture, range: std::ops::Range<usize>) -> Vec<(String, Value)> {
    range
        .map(|i| {
            let (name, mut v) = f.op(i);
            poison(&mut v, "input_args");
            poison(&mut v, "output");
            (name, v)
        })
        .collect()
}

fn tensor(nan: bool) -> Value {
    json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 16, 64], "Max": if nan { json!(NAN) } else { json!(1.5) }, "Min": -1.5, "Mean": 0.0, "Norm": 3.0, "requires_grad": false})
}

/// `Distributed.all_reduce.<n>.forward` over ranks 0..4, its input and output NaN or not.
fn all_reduce(n: usize, input_nan: bool, output_nan: bool) -> (String, Value) {
    let group = json!({"type": "torch.ProcessGroup", "group_ranks": [0, 1, 2, 3], "group_id": 139});
    (format!("Distributed.all_reduce.{n}.forward"), json!({"input_args": [tensor(input_nan)], "input_kwargs": {"group": group}, "output": [tensor(output_nan)]}))
}

/// `dist.send(t, peer)` (`send`) or `dist.recv(t, peer)` (`recv`), the peer an int argument.
fn p2p(api: &str, n: usize, peer: i64, input_nan: bool, output_nan: bool) -> (String, Value) {
    let output = if api == "send" { Value::Null } else { json!([tensor(output_nan)]) };
    (format!("Distributed.{api}.{n}.forward"), json!({"input_args": [tensor(input_nan), {"type": "int", "value": peer}], "input_kwargs": {}, "output": output}))
}

/// The construct.json of every rank: the reported ops under a Megatron-style
/// (`[parent, micro_step]`) block, and a cycle msprobe 8.3.2 walks twice.
fn construct(ops: &[&str]) -> Value {
    let mut c = Map::new();
    for op in ops {
        c.insert(op.to_string(), json!("Module.blocks.0.Block.forward.0"));
    }
    c.insert("Module.blocks.0.Block.forward.0".into(), json!(["Module.model.TinyGPT.forward.0", 0]));
    c.insert("Module.model.TinyGPT.forward.0".into(), Value::Null);
    c.insert("Module.a.forward.0".into(), json!("Module.b.forward.0"));
    c.insert("Module.b.forward.0".into(), json!("Module.a.forward.0"));
    Value::Object(c)
}

/// Writes `step/<folder>/{dump,construct,stack}.json` for each rank.
fn write_step(f: &Fixture, step: &Path, ranks: &[(&str, Vec<(String, Value)>)], construct_json: &Value) {
    for (folder, ops) in ranks {
        let dir = step.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let mut doc = f.header.clone();
        doc.insert("data".into(), Value::Object(ops.iter().cloned().collect()));
        std::fs::write(dir.join("dump.json"), to_msprobe_json(&Value::Object(doc))).unwrap();
        std::fs::write(dir.join("construct.json"), construct_json.to_string()).unwrap();
        std::fs::write(dir.join("stack.json"), f.stack.to_string()).unwrap();
    }
}

/// What a run printed and the report it wrote (parsed, NaN as the sentinel), if any.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    report: Option<(String, Value)>,
}

fn analyze(step: &Path, out: &Path) -> Run {
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(["-f", "pytorch", "nan_analyze", "-i"]).arg(step).arg("-o").arg(out).output().unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(out).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
    assert!(files.len() <= 1, "{files:?}");
    let report = files.first().map(|file| {
        let name = file.file_name().unwrap().to_str().unwrap();
        let stamp = name.strip_prefix("anomaly_analyze_").and_then(|s| s.strip_suffix(".json")).unwrap();
        assert!(!stamp.is_empty() && stamp.bytes().all(|b| b.is_ascii_digit()), "{name}");
        let text = std::fs::read_to_string(file).unwrap();
        let value = serde_json::from_reader(NonFiniteReader::new(text.as_bytes())).unwrap();
        (text, value)
    });
    let stdout = String::from_utf8(o.stdout).unwrap();
    if let Some(file) = files.first() {
        assert_eq!(stdout, format!("The analyze result is saved in: {}\n", file.display()));
    }
    Run { code: o.status.code(), stdout, stderr: String::from_utf8(o.stderr).unwrap(), report }
}

/// One reported op as msprobe writes it: the entry's forward fields.
fn node(f: &Fixture, (name, entry): &(String, Value), construct_info: &[&str]) -> Value {
    json!({
        "op_name": name,
        "data_info": {"input_args": entry["input_args"], "input_kwargs": entry["input_kwargs"], "output": entry["output"]},
        "construct_info": construct_info,
        "stack_info": f.frames(name),
    })
}

const BEFORE: &str = "Start searching anomaly node before communication.\n";
const DURING: &str = "Start searching anomaly node during communication.\n";
const AFTER: &str = "Start searching anomaly node after communication.\n";

#[test]
fn anomalies_before_any_communication_are_reported_per_rank_in_rank_order() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step0");
    // Folders `rank` (rank 0), `rank2`, `rank10`: the order is numeric, not the folders' names.
    let clean = [f.ops(0..8), vec![all_reduce(0, false, false)]].concat();
    let rank2 = [f.ops(0..5), vec![origin(&f, 5)], spread(&f, 6..8), vec![all_reduce(0, true, true)]].concat();
    let rank10 = [f.ops(0..3), vec![origin(&f, 3)], vec![origin(&f, 7)], vec![all_reduce(0, true, true)]].concat();
    let c = construct(&["Tensor.__add__.0.forward"]);
    write_step(&f, &step, &[("rank", clean), ("rank2", rank2), ("rank10", rank10), ("rankx", vec![])], &c);
    let run = analyze(&step, &dir.path().join("out"));
    assert_eq!((run.code, run.stderr.as_str()), (Some(0), BEFORE));
    let (text, report) = run.report.unwrap();
    let add = origin(&f, 5);
    assert_eq!(add.0, "Tensor.__add__.0.forward");
    let expected = json!({
        "rank_2": [node(&f, &add, &["Module.model.TinyGPT.forward.0", "Module.blocks.0.Block.forward.0", "Tensor.__add__.0.forward"])],
        "rank_10": [node(&f, &origin(&f, 3), &["Tensor.unsqueeze.0.forward"])],
    });
    assert_eq!(report, expected);
    // msprobe's layout: indent 2, the bare NaN token, key order kept.
    assert!(text.starts_with("{\n  \"rank_2\": [\n    {\n      \"op_name\": \"Tensor.__add__.0.forward\",\n      \"data_info\": {\n        \"input_args\": ["), "{text}");
    assert_eq!(text.matches("\"Max\": NaN").count(), 2, "{text}");
}

#[test]
fn an_anomaly_that_travels_through_all_reduce_is_reported_on_its_origin_rank() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step3");
    let mut ranks = vec![];
    for r in 0..4 {
        let between = if r == 2 { [f.ops(6..8), vec![origin(&f, 8)], spread(&f, 9..12)].concat() } else { f.ops(6..12) };
        // Every rank's second all_reduce gets NaN out; only rank 2's also puts NaN in.
        let ops = [f.ops(0..6), vec![all_reduce(0, false, false)], between, vec![all_reduce(1, r == 2, true)], spread(&f, 12..16)].concat();
        ranks.push((format!("rank{r}"), ops));
    }
    let ranks: Vec<(&str, Vec<(String, Value)>)> = ranks.iter().map(|(n, o)| (n.as_str(), o.clone())).collect();
    write_step(&f, &step, &ranks, &construct(&[]));
    let run = analyze(&step, &dir.path().join("out"));
    assert_eq!((run.code, run.stderr), (Some(0), format!("{BEFORE}{DURING}")));
    let split = origin(&f, 8);
    assert_eq!(split.0, "Tensor.split.0.forward");
    assert_eq!(run.report.unwrap().1, json!({"rank_2": [node(&f, &split, &["Tensor.split.0.forward"])]}));
}

#[test]
fn p2p_chains_lead_back_to_the_sender() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step0");
    // rank 0 -> rank 1 -> rank 2: rank 0's Tensor.__add__.0 starts it after a clean exchange.
    let rank0 = [f.ops(0..3), vec![p2p("send", 0, 1, false, false)], f.ops(3..5), vec![origin(&f, 5)], spread(&f, 6..7), vec![p2p("send", 1, 1, true, false)]].concat();
    let rank1 = [f.ops(0..3), vec![p2p("recv", 0, 0, false, false)], f.ops(3..6), vec![p2p("recv", 1, 0, false, true)], spread(&f, 6..8), vec![p2p("send", 0, 2, true, false)]].concat();
    let rank2 = [f.ops(0..3), vec![p2p("recv", 0, 1, false, true)], spread(&f, 3..5)].concat();
    write_step(&f, &step, &[("rank0", rank0), ("rank1", rank1), ("rank2", rank2)], &construct(&["Tensor.__add__.0.forward"]));
    let run = analyze(&step, &dir.path().join("out"));
    assert_eq!((run.code, run.stderr), (Some(0), format!("{BEFORE}{DURING}")));
    let add = origin(&f, 5);
    let chain = ["Module.model.TinyGPT.forward.0", "Module.blocks.0.Block.forward.0", "Tensor.__add__.0.forward"];
    assert_eq!(run.report.unwrap().1, json!({"rank_0": [node(&f, &add, &chain)]}));
}

#[test]
fn every_group_of_a_round_is_judged() {
    // Two send/recv pairs (0 -> 1, 2 -> 3) meet in the same round; rank 2's
    // anomaly comes earlier after the all_reduce than rank 0's. msprobe
    // 8.3.2 drops the second pair's ops from the round and reports rank 0.
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step0");
    let start = |r: usize| [f.ops(0..4), vec![all_reduce(0, false, false)]].concat().into_iter().chain(if r.is_multiple_of(2) { vec![] } else { f.ops(4..8) });
    let rank0: Vec<_> = start(0).chain([f.ops(4..7), vec![origin(&f, 7)], vec![p2p("send", 0, 1, true, false)]].concat()).collect();
    let rank1: Vec<_> = start(1).chain([p2p("recv", 0, 0, false, true)]).collect();
    let rank2: Vec<_> = start(2).chain([vec![origin(&f, 4)], spread(&f, 5..8), vec![p2p("send", 0, 3, true, false)]].concat()).collect();
    let rank3: Vec<_> = start(3).chain([p2p("recv", 0, 2, false, true)]).collect();
    write_step(&f, &step, &[("rank0", rank0), ("rank1", rank1), ("rank2", rank2), ("rank3", rank3)], &construct(&[]));
    let run = analyze(&step, &dir.path().join("out"));
    assert_eq!((run.code, run.stderr), (Some(0), format!("{BEFORE}{DURING}")));
    let expand = origin(&f, 4);
    assert_eq!(expand.0, "Tensor.expand.0.forward");
    assert_eq!(run.report.unwrap().1, json!({"rank_2": [node(&f, &expand, &["Tensor.expand.0.forward"])]}));
}

#[test]
fn anomalies_after_the_last_communication_are_reported_per_rank() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step0");
    let rank0 = [f.ops(0..3), vec![all_reduce(0, false, false)], f.ops(3..6)].concat();
    let rank1 = [f.ops(0..3), vec![all_reduce(0, false, false)], f.ops(3..4), vec![origin(&f, 4)], spread(&f, 5..6), vec![origin(&f, 6)]].concat();
    write_step(&f, &step, &[("rank0", rank0), ("rank1", rank1)], &construct(&[]));
    let run = analyze(&step, &dir.path().join("out"));
    assert_eq!((run.code, run.stderr), (Some(0), format!("{BEFORE}{DURING}{AFTER}")));
    assert_eq!(run.report.unwrap().1, json!({"rank_1": [node(&f, &origin(&f, 4), &["Tensor.expand.0.forward"])]}));
}

#[test]
fn no_anomaly_prints_msprobes_line_and_writes_nothing() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step0");
    let rank = |peer| [f.ops(0..3), vec![all_reduce(0, false, false)], f.ops(3..6), vec![p2p(if peer == 1 { "send" } else { "recv" }, 0, peer, false, false)]].concat();
    // An empty dump is a warning; a lone broadcast from rank 0 finds no peer (msprobe's log line).
    let broadcast = ("Distributed.broadcast.0.forward".to_string(), json!({"input_args": [tensor(false)], "input_kwargs": {"src": {"type": "int", "value": 0}}, "output": []}));
    let rank0 = [rank(1), vec![broadcast]].concat();
    write_step(&f, &step, &[("rank0", rank0), ("rank1", rank(0)), ("rank2", vec![])], &construct(&[]));
    let out = dir.path().join("out");
    let run = analyze(&step, &out);
    assert_eq!(run.code, Some(0));
    assert_eq!(run.stdout, "Cannot find any anomaly node, no need to generate analyze file.\n");
    let expected = format!(
        "{BEFORE}msprobe: warning: Rank 2 has no dump data!\n{DURING}Cannot find connected communication node for \"0.Distributed.broadcast.0.forward\".\n{AFTER}"
    );
    assert_eq!(run.stderr, expected);
    assert!(run.report.is_none() && !out.exists());
}
