//! The statistics view of a dump, for `nan_analyze`: per entry, which fields
//! hold a non-finite `Max`/`Min`, and the rank arguments a communication op
//! is connected by. The dump is streamed ([`crate::dump::for_each_entry`]
//! and one [`EntryReader`]): each entry is parsed, summarised and dropped.
//! A report copies an entry's fields unchanged; they leave this layer as an
//! opaque [`RawJson`].

use std::path::Path;

use serde_json::{Map, Value};

use crate::dump::{self, nonfinite, DumpError, DumpHeader, EntryLoc, EntryReader};

/// A rank argument of a communication op (`src`, `src_group`, `dst`,
/// `dst_group` in `input_kwargs`), as msprobe tests it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankArg {
    /// Not among the kwargs.
    Absent,
    /// Present but false in Python's sense (`null`, `0`, `""`, `[]`, `{}`, `false`).
    Falsy,
    /// Present and true: its `value` when that is an integer.
    Given(Option<i64>),
}

/// What the communication analysis reads of an op's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peers {
    /// `input_kwargs.src`.
    pub src: RankArg,
    /// `input_kwargs.src_group`.
    pub src_group: RankArg,
    /// `input_kwargs.dst`.
    pub dst: RankArg,
    /// `input_kwargs.dst_group`.
    pub dst_group: RankArg,
    /// The `value` of each `input_args` item whose `type` is `"int"`, in
    /// order (`None` when that value is not an integer).
    pub int_args: Vec<Option<i64>>,
    /// The integers of `input_kwargs.group.group_ranks` when `group` is
    /// true (none when it lacks the list).
    pub group_ranks: Option<Vec<i64>>,
}

/// One entry of a dump, through its statistics.
#[derive(Debug, Clone)]
pub struct OpStats {
    /// The entry's key (the op name) and where it lies in the file.
    pub loc: EntryLoc,
    /// A top-level item of `input` has a non-finite `Max` or `Min`.
    pub input: bool,
    /// The same for `input_args`.
    pub input_args: bool,
    /// The same for `input_kwargs`.
    pub input_kwargs: bool,
    /// The same for `output`.
    pub output: bool,
    /// The rank arguments.
    pub peers: Peers,
}

/// A piece of a dump copied unchanged into a report (non-finite values
/// stay sentinels until the report is written with
/// [`nonfinite::to_msprobe_json`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct RawJson(pub(super) Value);

/// Python's truth value of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// msprobe's overflow test of one statistic: `str(v).lower()` is `nan`,
/// `inf` or `-inf` (with or without a trailing tab). JSON's `NaN` and
/// `Infinity` tokens pass, as do strings such as `"NaN"`, not `"Infinity"`.
fn non_finite(v: Option<&Value>) -> bool {
    let Some(v) = v else { return false };
    if nonfinite::value(v).is_some() {
        return true;
    }
    let Some(s) = v.as_str() else { return false };
    let s = s.to_lowercase();
    matches!(s.strip_suffix('\t').unwrap_or(&s), "nan" | "inf" | "-inf")
}

/// Whether a top-level item of a field (the elements of a list, the values
/// of an object) is an object whose `Max` or `Min` is non-finite. Nested
/// lists are not descended into, as in msprobe.
fn field_anomaly(field: Option<&Value>) -> bool {
    let items: Box<dyn Iterator<Item = &Value>> = match field {
        Some(Value::Array(a)) => Box::new(a.iter()),
        Some(Value::Object(o)) => Box::new(o.values()),
        _ => return false,
    };
    items.filter_map(Value::as_object).any(|item| non_finite(item.get("Max")) || non_finite(item.get("Min")))
}

fn rank_arg(kwargs: Option<&Map<String, Value>>, key: &str) -> RankArg {
    match kwargs.and_then(|k| k.get(key)) {
        None => RankArg::Absent,
        Some(v) if !truthy(v) => RankArg::Falsy,
        Some(v) => RankArg::Given(v.get("value").and_then(Value::as_i64)),
    }
}

fn peers(op: &Map<String, Value>) -> Peers {
    let kwargs = op.get("input_kwargs").and_then(Value::as_object);
    let int_args = match op.get("input_args") {
        Some(Value::Array(args)) => {
            args.iter().filter(|a| a.get("type").and_then(Value::as_str) == Some("int")).map(|a| a.get("value").and_then(Value::as_i64)).collect()
        }
        _ => vec![],
    };
    let group_ranks = kwargs.and_then(|k| k.get("group")).filter(|g| truthy(g)).map(|g| match g.get("group_ranks") {
        Some(Value::Array(r)) => r.iter().filter_map(Value::as_i64).collect(),
        _ => vec![],
    });
    Peers {
        src: rank_arg(kwargs, "src"),
        src_group: rank_arg(kwargs, "src_group"),
        dst: rank_arg(kwargs, "dst"),
        dst_group: rank_arg(kwargs, "dst_group"),
        int_args,
        group_ranks,
    }
}

fn not_an_op(file: &Path, key: &str) -> DumpError {
    DumpError::Format { path: file.to_path_buf(), message: format!("entry {key:?}: expected an object (input_args, input_kwargs, output or input, output)") }
}

/// Streams every entry of the dump at `file` in order, handing each one's
/// statistics to `each`; returns the header. An entry that is not an
/// object is an error naming its key.
pub fn scan_ops(file: &Path, each: &mut dyn FnMut(OpStats)) -> Result<DumpHeader, DumpError> {
    let mut reader = EntryReader::open(file)?;
    let header = dump::for_each_entry(file, &mut |_| true, &mut |loc| {
        let v = reader.read(&loc)?;
        let op = v.as_object().ok_or_else(|| not_an_op(file, &loc.key))?;
        let stats = OpStats {
            input: field_anomaly(op.get("input")),
            input_args: field_anomaly(op.get("input_args")),
            input_kwargs: field_anomaly(op.get("input_kwargs")),
            output: field_anomaly(op.get("output")),
            peers: peers(op),
            loc,
        };
        each(stats);
        Ok(())
    })?;
    Ok(header)
}

/// msprobe's `data_info` of the entry at `loc`: `input_args`,
/// `input_kwargs` and `output` when `forward`, else `input` and `output`;
/// a missing field is `[]` (`{}` for `input_kwargs` and `output`).
pub fn data_info(file: &Path, loc: &EntryLoc, forward: bool) -> Result<RawJson, DumpError> {
    let v = EntryReader::open(file)?.read(loc)?;
    let op = v.as_object().ok_or_else(|| not_an_op(file, &loc.key))?;
    let field = |k: &str, default: Value| op.get(k).cloned().unwrap_or(default);
    let mut out = Map::new();
    let keys: &[(&str, Value)] = if forward {
        &[("input_args", Value::Array(vec![])), ("input_kwargs", Value::Object(Map::new())), ("output", Value::Object(Map::new()))]
    } else {
        &[("input", Value::Array(vec![])), ("output", Value::Object(Map::new()))]
    };
    for (k, default) in keys {
        out.insert(k.to_string(), field(k, default.clone()));
    }
    Ok(RawJson(Value::Object(out)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn statistics_and_peers_as_msprobe_tests_them() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let text = r#"{"data": {
            "A.a.0.forward": {"input_args": [{"Max": 1.0, "Min": "-INF"}, [{"Max": NaN}]], "input_kwargs": {"x": {"Max": 2, "Min": "Infinity"}}, "output": [{"Max": NaN}]},
            "Distributed.send.0.forward": {"input_args": [{"Max": 1}, {"type": "int", "value": 3}, {"type": "int", "value": "x"}], "input_kwargs": {"dst": null, "src": {"type": "int", "value": 1}, "group": {"group_ranks": [0, 3]}}, "output": {"o": {"Min": -Infinity}}},
            "B.b.0.backward": {"input": [{"Min": "nan\t"}], "output": {}, "input_kwargs": {"group": {}}}}}"#;
        f.write_all(text.as_bytes()).unwrap();
        let mut got = vec![];
        scan_ops(f.path(), &mut |s| got.push(s)).unwrap();
        let flags: Vec<_> = got.iter().map(|s| (s.loc.key.as_str(), s.input, s.input_args, s.input_kwargs, s.output)).collect();
        assert_eq!(
            flags,
            [
                ("A.a.0.forward", false, true, false, true),
                ("Distributed.send.0.forward", false, false, false, true),
                ("B.b.0.backward", true, false, false, false)
            ]
        );
        let p = &got[1].peers;
        assert_eq!((p.src, p.src_group, p.dst, p.dst_group), (RankArg::Given(Some(1)), RankArg::Absent, RankArg::Falsy, RankArg::Absent));
        assert_eq!((p.int_args.clone(), p.group_ranks.clone()), (vec![Some(3), None], Some(vec![0, 3])));
        assert_eq!(got[2].peers.group_ranks, None);
        let info = serde_json::to_value(data_info(f.path(), &got[2].loc, false).unwrap()).unwrap();
        assert_eq!(info, serde_json::json!({"input": [{"Min": "nan\t"}], "output": {}}));
        let info = serde_json::to_value(data_info(f.path(), &got[1].loc, true).unwrap()).unwrap();
        assert_eq!(nonfinite::to_msprobe_json(&info["output"]).split_whitespace().collect::<String>(), r#"{"o":{"Min":-Infinity}}"#);
    }

    #[test]
    fn an_entry_that_is_no_object_is_named() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(br#"{"data": {"A.a.0.forward": {}, "A.b.0.forward": [1]}}"#).unwrap();
        let e = scan_ops(f.path(), &mut |_| {}).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: not a valid msprobe dump.json: entry \"A.b.0.forward\": expected an object (input_args, input_kwargs, output or input, output)",
                f.path().display()
            )
        );
    }
}
