//! `nan_analyze` end to end on multi-rank steps built here from the real
//! PyTorch statistics fixture (tests/fixtures/pytorch/statistics: dump.json,
//! stack.json): NaN injected into one op's output on one rank, and
//! `Distributed.*` entries added around it. msprobe 8.3.2's own
//! nan_analyze is the oracle: it runs on every step (all in one Python
//! process, tests/nan_analyze/msprobe_832.py), and each case compares our
//! log lines and report with its, byte for byte after the timestamp, or
//! asserts the difference docs/nan-analyze.md documents.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

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
    collective("all_reduce", n, &[0, 1, 2, 3], input_nan, output_nan)
}

/// `Distributed.<api>.<n>.forward` over `ranks`, its input and output NaN or not.
fn collective(api: &str, n: usize, ranks: &[i64], input_nan: bool, output_nan: bool) -> (String, Value) {
    let group = json!({"type": "torch.ProcessGroup", "group_ranks": ranks, "group_id": 139});
    (format!("Distributed.{api}.{n}.forward"), json!({"input_args": [tensor(input_nan)], "input_kwargs": {"group": group}, "output": [tensor(output_nan)]}))
}

/// `dist.send(t, peer)` (`send`) or `dist.recv(t, peer)` (`recv`), the peer an int argument.
fn p2p(api: &str, n: usize, peer: i64, input_nan: bool, output_nan: bool) -> (String, Value) {
    let output = if api == "send" { Value::Null } else { json!([tensor(output_nan)]) };
    (format!("Distributed.{api}.{n}.forward"), json!({"input_args": [tensor(input_nan), {"type": "int", "value": peer}], "input_kwargs": {}, "output": output}))
}

/// The construct.json of every rank: the reported ops under a block of a
/// model (msprobe's `{node: parent}`).
fn construct(ops: &[&str]) -> Value {
    let mut c = Map::new();
    for op in ops {
        c.insert(op.to_string(), json!("Module.blocks.0.Block.forward.0"));
    }
    c.insert("Module.blocks.0.Block.forward.0".into(), json!("Module.model.TinyGPT.forward.0"));
    c.insert("Module.model.TinyGPT.forward.0".into(), Value::Null);
    Value::Object(c)
}

/// A step: each rank's folder name (in rank order) and `data` entries, and
/// the construct.json every rank has.
struct Scenario {
    ranks: Vec<(&'static str, Vec<(String, Value)>)>,
    construct: Value,
}

/// Writes `step/<folder>/{dump,construct,stack}.json` for each rank.
fn write_step(f: &Fixture, step: &Path, s: &Scenario) {
    for (folder, ops) in &s.ranks {
        let dir = step.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let mut doc = f.header.clone();
        doc.insert("data".into(), Value::Object(ops.iter().cloned().collect()));
        std::fs::write(dir.join("dump.json"), to_msprobe_json(&Value::Object(doc))).unwrap();
        std::fs::write(dir.join("construct.json"), s.construct.to_string()).unwrap();
        std::fs::write(dir.join("stack.json"), f.stack.to_string()).unwrap();
    }
}

/// Folders `rank` (rank 0), `rank2`, `rank10` (the order is numeric, not the
/// folders' names) and `rankx` (not a rank): two ranks with an anomaly
/// before their first communication op.
fn before_communication(f: &Fixture) -> Scenario {
    let clean = [f.ops(0..8), vec![all_reduce(0, false, false)]].concat();
    let rank2 = [f.ops(0..5), vec![origin(f, 5)], spread(f, 6..8), vec![all_reduce(0, true, true)]].concat();
    let rank10 = [f.ops(0..3), vec![origin(f, 3)], vec![origin(f, 7)], vec![all_reduce(0, true, true)]].concat();
    let ranks = vec![("rank", clean), ("rank2", rank2), ("rank10", rank10), ("rankx", vec![])];
    Scenario { ranks, construct: construct(&["Tensor.__add__.0.forward"]) }
}

/// [`before_communication`] with Megatron's construct.json (`{node: [parent,
/// micro_step]}`) and a cycle beside the reported chain.
fn megatron_construct(f: &Fixture) -> Scenario {
    let mut s = before_communication(f);
    let c = s.construct.as_object_mut().unwrap();
    c.insert("Module.blocks.0.Block.forward.0".into(), json!(["Module.model.TinyGPT.forward.0", 0]));
    c.insert("Module.a.forward.0".into(), json!("Module.b.forward.0"));
    c.insert("Module.b.forward.0".into(), json!("Module.a.forward.0"));
    s
}

/// [`before_communication`] with a construct.json whose chain from the
/// reported op comes back to it.
fn construct_cycle(f: &Fixture) -> Scenario {
    let mut s = before_communication(f);
    s.construct["Module.blocks.0.Block.forward.0"] = json!("Tensor.__add__.0.forward");
    s
}

/// Four ranks; every rank's second all_reduce gets NaN out, only rank 2's
/// also puts NaN in (from its `Tensor.split.0`).
fn through_all_reduce(f: &Fixture) -> Scenario {
    let mut ranks = vec![];
    for (r, folder) in ["rank0", "rank1", "rank2", "rank3"].into_iter().enumerate() {
        let between = if r == 2 { [f.ops(6..8), vec![origin(f, 8)], spread(f, 9..12)].concat() } else { f.ops(6..12) };
        let ops = [f.ops(0..6), vec![all_reduce(0, false, false)], between, vec![all_reduce(1, r == 2, true)], spread(f, 12..16)].concat();
        ranks.push((folder, ops));
    }
    Scenario { ranks, construct: construct(&[]) }
}

/// rank 0 -> rank 1 -> rank 2: rank 0's Tensor.__add__.0 starts it after a clean exchange.
fn p2p_chain(f: &Fixture) -> Scenario {
    let rank0 =
        [f.ops(0..3), vec![p2p("send", 0, 1, false, false)], f.ops(3..5), vec![origin(f, 5)], spread(f, 6..7), vec![p2p("send", 1, 1, true, false)]].concat();
    let rank1 = [
        f.ops(0..3),
        vec![p2p("recv", 0, 0, false, false)],
        f.ops(3..6),
        vec![p2p("recv", 1, 0, false, true)],
        spread(f, 6..8),
        vec![p2p("send", 0, 2, true, false)],
    ]
    .concat();
    let rank2 = [f.ops(0..3), vec![p2p("recv", 0, 1, false, true)], spread(f, 3..5)].concat();
    Scenario { ranks: vec![("rank0", rank0), ("rank1", rank1), ("rank2", rank2)], construct: construct(&["Tensor.__add__.0.forward"]) }
}

/// Two send/recv pairs (0 -> 1, 2 -> 3) meet in the same round; rank 2's
/// anomaly comes earlier after the all_reduce than rank 0's.
fn two_groups_in_a_round(f: &Fixture) -> Scenario {
    let start = |r: usize| [f.ops(0..4), vec![all_reduce(0, false, false)]].concat().into_iter().chain(if r.is_multiple_of(2) { vec![] } else { f.ops(4..8) });
    let rank0: Vec<_> = start(0).chain([f.ops(4..7), vec![origin(f, 7)], vec![p2p("send", 0, 1, true, false)]].concat()).collect();
    let rank1: Vec<_> = start(1).chain([p2p("recv", 0, 0, false, true)]).collect();
    let rank2: Vec<_> = start(2).chain([vec![origin(f, 4)], spread(f, 5..8), vec![p2p("send", 0, 3, true, false)]].concat()).collect();
    let rank3: Vec<_> = start(3).chain([p2p("recv", 0, 2, false, true)]).collect();
    Scenario { ranks: vec![("rank0", rank0), ("rank1", rank1), ("rank2", rank2), ("rank3", rank3)], construct: construct(&[]) }
}

/// rank 1's anomaly comes after its last communication op.
fn after_communication(f: &Fixture) -> Scenario {
    let clean = || [f.ops(0..3), vec![all_reduce(0, false, false)], f.ops(3..6)].concat();
    let rank1 = [f.ops(0..3), vec![all_reduce(0, false, false)], f.ops(3..4), vec![origin(f, 4)], spread(f, 5..6), vec![origin(f, 6)]].concat();
    Scenario { ranks: vec![("rank0", clean()), ("rank1", rank1), ("rank2", clean()), ("rank3", clean())], construct: construct(&[]) }
}

/// No anomaly; an empty dump (a warning) and a lone broadcast from rank 0
/// that finds no peer (msprobe's log line); every rank the all_reduce names is dumped.
fn no_anomaly(f: &Fixture) -> Scenario {
    let mut s = absent_group_rank(f);
    s.ranks.push(("rank3", [f.ops(0..3), vec![all_reduce(0, false, false)], f.ops(3..6)].concat()));
    s
}

/// [`no_anomaly`] without rank 3, which the all_reduce's group names.
fn absent_group_rank(f: &Fixture) -> Scenario {
    let rank = |peer| {
        [f.ops(0..3), vec![all_reduce(0, false, false)], f.ops(3..6), vec![p2p(if peer == 1 { "send" } else { "recv" }, 0, peer, false, false)]].concat()
    };
    let broadcast = (
        "Distributed.broadcast.0.forward".to_string(),
        json!({"input_args": [tensor(false)], "input_kwargs": {"src": {"type": "int", "value": 0}}, "output": []}),
    );
    let rank0 = [rank(1), vec![broadcast]].concat();
    Scenario { ranks: vec![("rank0", rank0), ("rank1", rank(0)), ("rank2", vec![])], construct: construct(&[]) }
}

/// One rank without communication whose anomaly starts in
/// `Functional.layer_norm.0` (its `eps` and statistics spelled `1e-05` by Python).
fn exponent_floats(f: &Fixture) -> Scenario {
    Scenario { ranks: vec![("rank0", [f.ops(0..6), vec![origin(f, 6)], spread(f, 7..9)].concat())], construct: construct(&[]) }
}

/// Folders `rank0` and `rankk1`, the anomaly in `rankk1` (no communication):
/// `"rankk1".strip("rank")` is `"1"` for 8.3.2.
fn stripped_folder_name(f: &Fixture) -> Scenario {
    let ranks = vec![("rank0", f.ops(0..8)), ("rankk1", [f.ops(0..5), vec![origin(f, 5)], spread(f, 6..8)].concat())];
    Scenario { ranks, construct: construct(&[]) }
}

/// Two clean ranks whose collectives are `all_gather` on rank 0 and
/// `all_gather_into_tensor` on rank 1 (two different APIs).
fn prefix_api_names(f: &Fixture) -> Scenario {
    let rank = |api| [f.ops(0..3), vec![collective(api, 0, &[0, 1], false, false)]].concat();
    Scenario { ranks: vec![("rank0", rank("all_gather")), ("rank1", rank("all_gather_into_tensor"))], construct: construct(&[]) }
}

/// Every step of this file; msprobe 8.3.2 analyses them all in one process.
const SCENARIOS: &[(&str, fn(&Fixture) -> Scenario)] = &[
    ("before_communication", before_communication),
    ("megatron_construct", megatron_construct),
    ("construct_cycle", construct_cycle),
    ("through_all_reduce", through_all_reduce),
    ("p2p_chain", p2p_chain),
    ("two_groups_in_a_round", two_groups_in_a_round),
    ("after_communication", after_communication),
    ("no_anomaly", no_anomaly),
    ("absent_group_rank", absent_group_rank),
    ("exponent_floats", exponent_floats),
    ("stripped_folder_name", stripped_folder_name),
    ("prefix_api_names", prefix_api_names),
];

/// What msprobe 8.3.2's own nan_analyze (tests/nan_analyze/msprobe_832.py)
/// made of a scenario's step: its log lines (`LEVEL message`, without time
/// and pid), its crash, its report file's name and text.
struct Oracle {
    step: PathBuf,
    out: PathBuf,
    log: Vec<String>,
    error: Option<String>,
    report: Option<(PathBuf, String)>,
}

/// msprobe 8.3.2 on every scenario, the ranks listed in rank order (8.3.2
/// takes them in `os.listdir` order), and on `before_communication` once more
/// with them listed backwards (`before_communication/reversed`). Written
/// under the test target's temporary folder, removed first.
fn oracles() -> &'static HashMap<String, Oracle> {
    static ORACLES: OnceLock<HashMap<String, Oracle>> = OnceLock::new();
    ORACLES.get_or_init(|| {
        let f = fixture();
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nan_analyze_832");
        let _ = std::fs::remove_dir_all(&root);
        let mut jobs = vec![];
        let mut keys = vec![];
        for (name, build) in SCENARIOS {
            let s = build(&f);
            let step = root.join(name).join("step0");
            write_step(&f, &step, &s);
            let mut orders: Vec<(String, Vec<&str>)> = vec![(name.to_string(), s.ranks.iter().map(|r| r.0).collect())];
            if *name == "before_communication" {
                orders.push((format!("{name}/reversed"), s.ranks.iter().rev().map(|r| r.0).collect()));
            }
            for (key, listdir) in orders {
                let out = root.join(&key).join("out_832");
                jobs.push(json!({"step": step, "out": out, "listdir": listdir}));
                keys.push((key, step.clone(), out));
            }
        }
        let jobs_file = root.join("jobs.json");
        std::fs::write(&jobs_file, Value::Array(jobs).to_string()).unwrap();
        let answers: Vec<Value> = serde_json::from_str(&common::run_832("tests/nan_analyze/msprobe_832.py", &[jobs_file.as_os_str()])).unwrap();
        assert_eq!(answers.len(), keys.len());
        keys.into_iter()
            .zip(answers)
            .map(|((key, step, out), a)| {
                let files: Vec<PathBuf> = std::fs::read_dir(&out).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
                assert!(files.len() <= 1, "{files:?}");
                let report = files.into_iter().next().map(|p| {
                    let text = std::fs::read_to_string(&p).unwrap();
                    (p, text)
                });
                let log = a["log"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect();
                let error = a["error"].as_str().map(str::to_string);
                (key, Oracle { step, out, log, error, report })
            })
            .collect()
    })
}

/// Our run's log as 8.3.2's (`LEVEL message`): stderr's progress lines are
/// `INFO`, `msprobe: warning: ` ones `WARNING`, then stdout's result line;
/// the report's path as `OUT/anomaly_analyze_T.json`.
fn our_log(run: &Run, out: &Path) -> Vec<String> {
    let stderr = run.stderr.lines().map(|l| l.strip_prefix("msprobe: warning: ").map_or(format!("INFO {l}"), |w| format!("WARNING {w}")));
    let stdout = run.stdout.lines().map(|l| format!("INFO {l}"));
    stderr.chain(stdout).map(|l| normalise_path(&l, out)).collect()
}

/// `line` with `OUT_DIR/anomaly_analyze_<ns>.json` written `OUT/anomaly_analyze_T.json`.
fn normalise_path(line: &str, out: &Path) -> String {
    let prefix = format!("{}/anomaly_analyze_", out.display());
    match line.find(&prefix) {
        Some(at) => {
            let rest = &line[at + prefix.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            format!("{}OUT/anomaly_analyze_T{}", &line[..at], &rest[digits..])
        }
        None => line.to_string(),
    }
}

/// Runs this tool on `name`'s step, and 8.3.2's answer to it.
fn both(name: &str) -> (Run, &'static Oracle, tempfile::TempDir) {
    let oracle = &oracles()[name];
    let dir = tempfile::tempdir().unwrap();
    let run = analyze(&oracle.step, &dir.path().join("out"));
    (run, oracle, dir)
}

/// Runs this tool on `name`'s step and checks that it answers as msprobe
/// 8.3.2 does: exit 0, the same log lines, and the same report byte for byte
/// (after the timestamp in its name), or no report from either.
fn same_as_832(name: &str) -> Run {
    let (run, oracle, dir) = both(name);
    assert_eq!(oracle.error, None, "msprobe 8.3.2 crashed on {name}");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let theirs: Vec<String> = oracle.log.iter().map(|l| normalise_path(l, &oracle.out)).collect();
    assert_eq!(our_log(&run, &dir.path().join("out")), theirs, "log lines of {name}");
    let ours = run.report.as_ref().map(|r| r.0.as_str());
    assert_eq!(ours, oracle.report.as_ref().map(|r| r.1.as_str()), "the report of {name}");
    if let Some((file, _)) = &oracle.report {
        assert!(file.file_name().unwrap().to_str().unwrap().starts_with("anomaly_analyze_"));
    }
    run
}

/// What a run printed and the report it wrote (parsed, NaN as the sentinel), if any.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    report: Option<(String, Value)>,
    /// Whether the output folder exists after the run.
    out_exists: bool,
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
    Run { code: o.status.code(), stdout, stderr: String::from_utf8(o.stderr).unwrap(), report, out_exists: out.exists() }
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
    let run = same_as_832("before_communication");
    assert_eq!(run.stderr, BEFORE);
    let (text, report) = run.report.unwrap();
    let add = origin(&f, 5);
    assert_eq!(add.0, "Tensor.__add__.0.forward");
    let expected = json!({
        "rank_2": [node(&f, &add, &["Module.model.TinyGPT.forward.0", "Module.blocks.0.Block.forward.0", "Tensor.__add__.0.forward"])],
        "rank_10": [node(&f, &origin(&f, 3), &["Tensor.unsqueeze.0.forward"])],
    });
    assert_eq!(report, expected);
    // msprobe's layout: indent 2, the bare NaN token, key order kept.
    assert!(
        text.starts_with("{\n  \"rank_2\": [\n    {\n      \"op_name\": \"Tensor.__add__.0.forward\",\n      \"data_info\": {\n        \"input_args\": ["),
        "{text}"
    );
    assert_eq!(text.matches("\"Max\": NaN").count(), 2, "{text}");
}

/// The documented difference: 8.3.2 takes the ranks in `os.listdir` order
/// (here backwards), so its report's keys follow it; ours are in rank order.
#[test]
fn msprobe_832_orders_ranks_as_listdir_gives_them() {
    let (ours, theirs, _dir) = both("before_communication/reversed");
    let keys = |text: &str| -> Vec<String> {
        serde_json::from_reader::<_, Map<String, Value>>(NonFiniteReader::new(text.as_bytes())).unwrap().keys().cloned().collect()
    };
    assert_eq!(keys(&ours.report.unwrap().0), ["rank_2", "rank_10"]);
    assert_eq!(keys(&theirs.report.as_ref().unwrap().1), ["rank_10", "rank_2"]);
}

/// The documented differences in construct.json: 8.3.2 crashes on
/// Megatron's `[parent, micro_step]` (ours takes the parent, as 26.2.0), and
/// walks a cycle through the reported op once more (ours stops before the
/// first repeated node).
#[test]
fn megatron_constructs_and_cycles_where_msprobe_832_crashes_or_repeats() {
    let (plain, _, _d) = both("before_communication");
    let (megatron, theirs, _d2) = both("megatron_construct");
    assert_eq!(theirs.error.as_deref(), Some("TypeError: unhashable type: 'list'"));
    assert!(theirs.report.is_none());
    assert_eq!((megatron.code, &megatron.report.as_ref().unwrap().0), (Some(0), &plain.report.unwrap().0), "the same report as with msprobe's format");

    let (ours, theirs, _d3) = both("construct_cycle");
    assert_eq!(theirs.error, None);
    let chain =
        |text: &str| -> Value { serde_json::from_reader::<_, Value>(NonFiniteReader::new(text.as_bytes())).unwrap()["rank_2"][0]["construct_info"].clone() };
    let add = "Tensor.__add__.0.forward";
    assert_eq!(chain(&theirs.report.as_ref().unwrap().1), json!([add, "Module.blocks.0.Block.forward.0", add]));
    assert_eq!(chain(&ours.report.unwrap().0), json!(["Module.blocks.0.Block.forward.0", add]));
}

#[test]
fn an_anomaly_that_travels_through_all_reduce_is_reported_on_its_origin_rank() {
    let f = fixture();
    let run = same_as_832("through_all_reduce");
    assert_eq!(run.stderr, format!("{BEFORE}{DURING}"));
    let split = origin(&f, 8);
    assert_eq!(split.0, "Tensor.split.0.forward");
    assert_eq!(run.report.unwrap().1, json!({"rank_2": [node(&f, &split, &["Tensor.split.0.forward"])]}));
}

#[test]
fn p2p_chains_lead_back_to_the_sender() {
    let f = fixture();
    let run = same_as_832("p2p_chain");
    assert_eq!(run.stderr, format!("{BEFORE}{DURING}"));
    let add = origin(&f, 5);
    let chain = ["Module.model.TinyGPT.forward.0", "Module.blocks.0.Block.forward.0", "Tensor.__add__.0.forward"];
    assert_eq!(run.report.unwrap().1, json!({"rank_0": [node(&f, &add, &chain)]}));
}

#[test]
fn every_group_of_a_round_is_judged() {
    // The documented difference: msprobe 8.3.2 drops the second pair's ops
    // from the round and reports rank 0's later anomaly; ours judges both
    // groups and reports rank 2's.
    let f = fixture();
    let (run, theirs, _dir) = both("two_groups_in_a_round");
    assert_eq!((run.code, run.stderr.as_str()), (Some(0), format!("{BEFORE}{DURING}").as_str()));
    let expand = origin(&f, 4);
    assert_eq!(expand.0, "Tensor.expand.0.forward");
    assert_eq!(run.report.unwrap().1, json!({"rank_2": [node(&f, &expand, &["Tensor.expand.0.forward"])]}));
    let linear = origin(&f, 7);
    assert_eq!(linear.0, "Functional.linear.0.forward");
    let (_, text) = theirs.report.as_ref().unwrap();
    let value: Value = serde_json::from_reader(NonFiniteReader::new(text.as_bytes())).unwrap();
    assert_eq!(value, json!({"rank_0": [node(&f, &linear, &["Functional.linear.0.forward"])]}), "msprobe 8.3.2's answer");
}

#[test]
fn anomalies_after_the_last_communication_are_reported_per_rank() {
    let f = fixture();
    let run = same_as_832("after_communication");
    assert_eq!(run.stderr, format!("{BEFORE}{DURING}{AFTER}"));
    assert_eq!(run.report.unwrap().1, json!({"rank_1": [node(&f, &origin(&f, 4), &["Tensor.expand.0.forward"])]}));
}

/// Floats are written as Python's `repr` writes them (`1e-05`,
/// `-4.6566128730773926e-09`), as in 8.3.2's report.
#[test]
fn floats_are_spelled_as_pythons_repr() {
    let f = fixture();
    let run = same_as_832("exponent_floats");
    let (text, report) = run.report.unwrap();
    assert_eq!(report, json!({"rank_0": [node(&f, &origin(&f, 6), &["Functional.layer_norm.0.forward"])]}));
    assert!(text.contains("\"value\": 1e-05") && text.contains("\"Mean\": -4.6566128730773926e-09"), "{text}");
}

#[test]
fn no_anomaly_prints_msprobes_line_and_writes_nothing() {
    let run = same_as_832("no_anomaly");
    assert_eq!(run.stdout, "Cannot find any anomaly node, no need to generate analyze file.\n");
    let expected = format!(
        "{BEFORE}msprobe: warning: Rank 2 has no dump data!\n{DURING}Cannot find connected communication node for \"0.Distributed.broadcast.0.forward\".\n{AFTER}"
    );
    assert_eq!(run.stderr, expected);
    assert!(run.report.is_none() && !run.out_exists);
}

/// The documented difference: a group naming a rank that was not dumped
/// crashes 8.3.2 (KeyError); here that rank is skipped.
#[test]
fn a_group_rank_that_was_not_dumped_is_skipped_where_msprobe_832_crashes() {
    let (run, theirs, _dir) = both("absent_group_rank");
    assert_eq!(theirs.error.as_deref(), Some("KeyError: 3"));
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "Cannot find any anomaly node, no need to generate analyze file.\n"));
    assert!(run.report.is_none() && !run.out_exists);
}

/// The documented difference in rank folders: 8.3.2 strips the letters of
/// `rank` from both ends of a folder's name, so `rankk1` is its rank 1; here
/// a rank folder is `rank` and digits only, and `rankk1` is not one.
#[test]
fn a_folder_is_a_rank_only_when_rank_is_followed_by_digits() {
    let f = fixture();
    let (run, theirs, _dir) = both("stripped_folder_name");
    let (_, text) = theirs.report.as_ref().unwrap();
    let value: Value = serde_json::from_reader(NonFiniteReader::new(text.as_bytes())).unwrap();
    assert_eq!(value, json!({"rank_1": [node(&f, &origin(&f, 5), &["Tensor.__add__.0.forward"])]}), "msprobe 8.3.2's answer");
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "Cannot find any anomaly node, no need to generate analyze file.\n"));
    assert!(run.report.is_none() && !run.out_exists);
}

/// The documented difference in matching peers: 8.3.2 finds a peer by a
/// prefix of its name, so rank 0's `all_gather` meets rank 1's
/// `all_gather_into_tensor`; here peers have the same API, and rank 0's op
/// finds none (its log line).
#[test]
fn peers_are_matched_by_exact_api_not_by_prefix() {
    let (run, theirs, _dir) = both("prefix_api_names");
    let none = "INFO Cannot find any anomaly node, no need to generate analyze file.";
    let phases = ["INFO Start searching anomaly node before communication.", "INFO Start searching anomaly node during communication."];
    let after = "INFO Start searching anomaly node after communication.";
    let lines = |l: &[&str]| -> Vec<String> { l.iter().map(|s| s.to_string()).collect() };
    assert_eq!((theirs.error.as_deref(), theirs.log.clone()), (None, lines(&[&phases[..], &[after, none]].concat())));
    let unmatched = "INFO Cannot find connected communication node for \"0.Distributed.all_gather.0.forward\".";
    assert_eq!(our_log(&run, Path::new("out")), lines(&[&phases[..], &[unmatched, after, none]].concat()));
    assert!(run.report.is_none() && theirs.report.is_none());
}

/// A real Megatron step's `Distributed.all_reduce`
/// (tests/fixtures/real/pangu_pytorch, recorded on an Ascend NPU by msprobe:
/// its output `[tensor, null]`, its `group` null, the world) with NaN out of
/// it and none in: the one rank's anomaly is that call, found during
/// communication, and the report keeps the recorded layout, the null
/// output item included.
#[test]
fn a_real_all_reduce_with_a_null_output_and_a_null_group_is_read() {
    let real = common::repo().join("tests/fixtures/real/pangu_pytorch");
    let dir = tempfile::tempdir().unwrap();
    let (step, out) = (dir.path().join("step"), dir.path().join("out"));
    let rank = step.join("rank0");
    std::fs::create_dir_all(&rank).unwrap();
    for file in ["construct.json", "stack.json"] {
        std::fs::copy(real.join(file), rank.join(file)).unwrap();
    }
    let text = std::fs::read(real.join("dump.json")).unwrap();
    let mut dump: Value = serde_json::from_reader(NonFiniteReader::new(text.as_slice())).unwrap();
    let name = "Distributed.all_reduce.0.forward";
    let entry = &mut dump["data"][name];
    assert_eq!(entry["output"].as_array().map(|o| o.len()), Some(2), "{entry}");
    assert!(entry["output"][1].is_null() && entry["input_kwargs"]["group"].is_null(), "{entry}");
    poison(entry, "output");
    let poisoned = entry.clone();
    std::fs::write(rank.join("dump.json"), to_msprobe_json(&dump)).unwrap();
    let run = analyze(&step, &out);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let (_, report) = run.report.expect("a report");
    let nodes = report["rank_0"].as_array().expect("rank_0's nodes");
    assert_eq!(nodes.len(), 1, "{report}");
    assert_eq!(nodes[0]["op_name"], name);
    assert_eq!(nodes[0]["data_info"]["output"], poisoned["output"]);
    assert!(nodes[0]["data_info"]["output"][1].is_null());
}
