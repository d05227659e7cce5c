//! The `replay` command: dumped API calls replayed natively by the runtime
//! (no Python), with the accuracy CSVs written by the runtime's report writer.
//! One call from a config, or many from a dump (`--dump`), ranked worst first.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use runtime::compare::Status;
use runtime::dtype::TDType;
use runtime::replay::{replay, Rows};
use runtime::report::{write_report, DetailRow, ResultRow};
use runtime::spec::{DataMode as RtDataMode, Replay, Spec, TensorSpec};

use crate::calls::groups;
use crate::config::{DataMode, OpConfig, Propagation};
use crate::dump;
use crate::model::{ApiCall, Arg, Framework, Stat};
use crate::op_generate::Error;
use crate::select::ApiSelector;

fn stat(s: Stat) -> Option<f64> {
    match s {
        Stat::Num(x) => Some(x),
        Stat::Bool(b) => Some(b as u8 as f64),
        Stat::Missing => None,
    }
}

/// A dumped value as a runtime spec; tensor files are joined to `data_dir`.
fn spec(a: &Arg, data_dir: Option<&Path>) -> Spec {
    match a {
        Arg::Tensor(t) => match TDType::parse(t.dtype.torch) {
            Some(dtype) => Spec::Tensor(TensorSpec {
                dtype,
                shape: t.shape.iter().map(|&d| d as usize).collect(),
                low: stat(t.min),
                high: stat(t.max),
                requires_grad: t.requires_grad,
                data: match (&t.data_name, data_dir) {
                    (Some(n), Some(d)) => Some(d.join(n)),
                    _ => None,
                },
            }),
            // Complex tensors: the runtime has no complex dtype.
            None => Spec::Str(format!("<{} tensor>", t.dtype.torch)),
        },
        Arg::Bool(b) => Spec::Bool(*b),
        Arg::Int(i) => Spec::Int(*i),
        Arg::Float(x) => Spec::Float(*x),
        Arg::Str(s) => Spec::Str(s.clone()),
        Arg::Slice([a, b, c]) => Spec::Slice(*a, *b, *c),
        Arg::Ellipsis => Spec::Ellipsis,
        Arg::Size(d) => Spec::List(d.iter().map(|&x| Spec::Int(x)).collect()),
        Arg::DType(d) => TDType::parse(d.torch).map(Spec::DType).unwrap_or(Spec::None),
        Arg::Device(_) | Arg::MemoryFormat(_) | Arg::None | Arg::Unsupported(_) => Spec::None,
        Arg::List(items) => Spec::List(items.iter().map(|x| spec(x, data_dir)).collect()),
    }
}

/// The runtime's description of one call. With `use_recorded`, a tensor
/// dump's recorded outputs are the tested side.
pub fn to_replay(call: &ApiCall, framework: Framework, config: &OpConfig, propagation: Propagation, data_dir: Option<&Path>, use_recorded: bool) -> Replay {
    let specs = |args: &[Arg]| args.iter().map(|a| spec(a, data_dir)).collect::<Vec<_>>();
    let backward = propagation == Propagation::Backward;
    Replay {
        api: call.name.to_string(),
        framework: framework.as_str().to_string(),
        args: specs(&call.forward.args),
        kwargs: call.forward.kwargs.iter().map(|(k, v)| (k.clone(), spec(v, data_dir))).collect(),
        outputs: specs(&call.forward.outputs),
        grad_outputs: match (&call.backward, backward) {
            (Some(b), true) => Some(specs(&b.grad_outputs)),
            _ => None,
        },
        grad_inputs: call.backward.as_ref().map(|b| specs(&b.grad_inputs)).unwrap_or_default(),
        data_mode: match config.data_mode {
            DataMode::RandomData => RtDataMode::Random,
            DataMode::RealData => RtDataMode::Real,
        },
        seed: config.random_seed,
        iterations: config.iter_times,
        cosine_threshold: config.cosine_threshold,
        max_abs_err_threshold: config.max_abs_err_threshold,
        use_recorded,
    }
}

/// Options of `replay`.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Which APIs (`--dump` mode).
    pub selector: ApiSelector,
    /// forward / backward, or both (`None`).
    pub propagation: Option<Propagation>,
    /// Compare the bench with an emulated device run even when the dump
    /// recorded the outputs.
    pub emulate: bool,
}

/// What a replay produced.
pub struct ReplayReport {
    /// All rows.
    pub rows: Rows,
    /// The CSVs written: (details, result).
    pub files: (PathBuf, PathBuf),
}

fn dump_file(config: &OpConfig) -> Result<PathBuf, Error> {
    let path = config.dump_json_path.clone().or_else(|| config.extract_api_path.clone()).expect("config validation requires one");
    let files = dump::resolve_dump_files(&path);
    if files.len() > 1 {
        return Err(Error::Selection { file: path, message: "holds several rank dumps; point at one".into() });
    }
    Ok(files.into_iter().next().expect("at least one"))
}

/// Replays the selected calls of the config's dump (all of them in `--dump`
/// mode, else the config's `api_name`) and writes the CSVs into `out_dir`.
pub fn run(framework: Framework, config: &OpConfig, many: bool, opts: &ReplayOptions, out_dir: &Path) -> Result<ReplayReport, Error> {
    let file = dump_file(config)?;
    let selector = if many {
        opts.selector.clone()
    } else {
        let name = config.api_name.as_ref().ok_or_else(|| Error::Selection { file: file.clone(), message: "api_name is required without --dump".into() })?;
        ApiSelector { filter: Some(regex::Regex::new(&format!("^{}$", regex::escape(&name.to_string()))).expect("an escaped name is a valid regex")), shard: None }
    };
    let (header, groups) = groups(&file, framework, &selector)?;
    crate::op_generate::check_framework(&file, &header, framework)?;
    let data_dir = crate::op_generate::data_dir(&file, &header);
    if config.data_mode == DataMode::RealData && data_dir.is_none() {
        return Err(Error::Selection { file, message: "real_data: no tensor folder found".into() });
    }
    let jobs: Vec<_> = groups.iter().filter(|g| g.forward.is_some() && selector.in_shard(&g.name)).collect();
    if jobs.is_empty() {
        return Err(Error::Selection { file, message: "no API selected (check api_name / --filter)".into() });
    }
    // A backward replay compares the forward outputs too, so "both" is the
    // backward replay where the dump has a backward entry, else the forward one.
    let per_api: Vec<Rows> = jobs
        .par_iter()
        .filter_map(|g| match (opts.propagation, g.backward.is_some()) {
            (Some(Propagation::Backward), false) => None,
            (Some(p), _) => Some((g, p)),
            (None, true) => Some((g, Propagation::Backward)),
            (None, false) => Some((g, Propagation::Forward)),
        })
        .map(|(g, p)| {
            let api = g.name.to_string();
            let fail = |message: String| Rows {
                details: vec![DetailRow { api_name: format!("{api}.{}", p.direction().as_str()), bench_dtype: None, tested_dtype: None, shape: None, cosine: None, max_abs: None, max_rel: None, status: Status::Error, message: message.clone() }],
                results: vec![ResultRow { api_name: api.clone(), forward: Some(Status::Error), backward: None, message }],
            };
            let read = |loc: &dump::EntryLoc| dump::read_entry(&file, loc).map_err(|e| e.to_string());
            let entries = read(g.forward.as_ref().expect("filtered above")).and_then(|f| Ok((f, g.backward.as_ref().map(read).transpose()?)));
            let (fwd, bwd) = match entries {
                Ok(x) => x,
                Err(e) => return fail(e),
            };
            match ApiCall::from_entries(g.name.clone(), &fwd, bwd.as_ref()) {
                Ok(call) => replay(&to_replay(&call, framework, config, p, data_dir.as_deref(), !opts.emulate)),
                Err(e) => fail(e.to_string()),
            }
        })
        .collect();
    let mut rows = Rows::default();
    for r in per_api {
        rows.details.extend(r.details);
        rows.results.extend(r.results);
    }
    let files = write_report(out_dir, &rows.details, &rows.results).map_err(|e| Error::Selection { file: out_dir.to_path_buf(), message: e.to_string() })?;
    Ok(ReplayReport { rows, files })
}

/// The details rows ranked worst first: errors first, then by cosine
/// (missing cosine counts as worst), then by max absolute error.
pub fn ranked(details: &[DetailRow]) -> Vec<&DetailRow> {
    let mut v: Vec<&DetailRow> = details.iter().collect();
    v.sort_by(|a, b| {
        let key = |r: &DetailRow| (r.status == Status::Pass, r.cosine.unwrap_or(f64::NEG_INFINITY));
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.partial_cmp(&kb.1).unwrap_or(std::cmp::Ordering::Equal))
            .then(b.max_abs.unwrap_or(f64::INFINITY).partial_cmp(&a.max_abs.unwrap_or(f64::INFINITY)).unwrap_or(std::cmp::Ordering::Equal))
    });
    v
}
