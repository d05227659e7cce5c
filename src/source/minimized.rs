//! The dump of a minimized call (`replay --minimize`): its entries with
//! each tensor naming the `.npy` file cut for it (shape and msprobe's
//! statistics of the cut), written through the extract writer with no
//! `dump_data_dir`, so the tensors are found in `dump_tensor_data/` beside
//! it wherever the folder moves.

use std::path::Path;

use runtime::minimize::Written;
use serde_json::{json, Value};

use super::{extract, Entries, SourceError};
use crate::dump::{nonfinite, DumpHeader};
use crate::model::Framework;

/// The file name of a path, as a dump's `data_name` holds it.
fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `v` with every tensor whose `data_name` was cut naming its new file,
/// shape and statistics (a recorded checksum of the whole tensor dropped).
fn rewrite(v: &Value, files: &[Written]) -> Value {
    match v {
        Value::Object(map) => {
            let cut = map.get("data_name").and_then(Value::as_str).and_then(|n| files.iter().find(|w| file_name(&w.original) == n));
            let mut out: serde_json::Map<String, Value> = map.iter().map(|(k, x)| (k.clone(), rewrite(x, files))).collect();
            if let Some(w) = cut {
                out.insert("data_name".into(), json!(file_name(&w.file)));
                out.insert("shape".into(), json!(w.shape));
                for (key, value) in ["Max", "Min", "Mean", "Norm"].iter().zip(w.stats.map_or([None; 4], |s| s.map(Some))) {
                    let number = |x: f64| serde_json::Number::from_f64(x).map(Value::Number).or_else(|| nonfinite::sentinel(x)).unwrap_or(Value::Null);
                    out.insert((*key).into(), value.map_or(Value::Null, number));
                }
                out.remove("md5");
                out.remove("crc32");
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|x| rewrite(x, files)).collect()),
        other => other.clone(),
    }
}

/// Where an int argument of a forward entry is: `input_args[i]` or `input_kwargs[name]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgAt {
    /// A positional argument.
    Positional(usize),
    /// A keyword argument.
    Keyword(String),
}

/// `forward` with each of `ints` set (a cut's `head_num`).
fn set_ints(mut forward: Value, ints: &[(ArgAt, i64)]) -> Value {
    for (at, v) in ints {
        let slot = match at {
            ArgAt::Positional(i) => forward.get_mut("input_args").and_then(|a| a.get_mut(*i)),
            ArgAt::Keyword(k) => forward.get_mut("input_kwargs").and_then(|a| a.get_mut(k.as_str())),
        };
        if let Some(slot) = slot {
            *slot = json!({"type": "int", "value": v});
        }
    }
    forward
}

/// Writes the dump of the minimized call `e` at `path`: forward only when
/// `forward_only`, every tensor named as `files` has it, the int arguments
/// the cut changed as `ints` has them.
pub(super) fn write(
    path: &Path,
    level: Option<String>,
    framework: Framework,
    e: &Entries,
    (files, ints): (&[Written], &[(ArgAt, i64)]),
    forward_only: bool,
) -> Result<(), SourceError> {
    let header = DumpHeader { task: Some("tensor".into()), level, framework: Some(framework.as_str().into()), dump_data_dir: None };
    let entries = Entries {
        name: e.name.clone(),
        forward: set_ints(rewrite(&e.forward, files), ints),
        backward: if forward_only { None } else { e.backward.as_ref().map(|b| rewrite(b, files)) },
    };
    Ok(extract::write(path, &header, framework, &entries)?)
}
