//! `replay --from-compare FILE --dump DUMP`: from msprobe compare's result
//! of DUMP against a bench dump, which of the calls that differ are wrong
//! themselves. Compare flags every call downstream of a culprit; each
//! differing call is replayed here on its own recorded inputs, and its
//! recorded outputs judged against the float64 bench: an output that fails
//! is the call's **own error** (the device is wrong for the inputs it
//! received); a call whose outputs pass **inherited** its difference, and
//! is pointed at the nearest own-error call upstream of it ([`flow`]: the
//! data flow its statistics show, else the dump's order).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use runtime::compare::Status;
use runtime::replay::Rows;
use runtime::report::{call_of, write_table, DetailRow, HtmlCulprit, Shares, TestedOn};

use super::error::ReplayError;
use super::flow::Flow;
use super::options::Scope;
use super::outcome::ReplayReport;
use super::Options;
use crate::model::{ApiCall, ApiName};
use crate::select::ApiSelector;
use crate::source::compare_result::{differing_rows, Differing};
use crate::source::{self, Source};

/// How a differing call came to differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Blame {
    /// An output of its own fails on its recorded inputs.
    Own,
    /// Its outputs are right for its inputs: the difference came from upstream.
    Inherited,
    /// The replay could not replay a differing output (a `skip`, or none).
    Unjudged,
}

impl Blame {
    /// As the culprits table spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Blame::Own => "own error",
            Blame::Inherited => "inherited",
            Blame::Unjudged => "unjudged",
        }
    }
}

/// One differing call of the compare result.
#[derive(Debug, Clone)]
pub struct Blamed {
    /// `Prefix.op.N`.
    pub api: String,
    /// Own error, inherited, or unjudged.
    pub blame: Blame,
    /// The own-error call it inherited from, and how it was found
    /// (`data flow` or `dump order`); `None` for an own error, or when none is upstream.
    pub upstream: Option<(String, &'static str)>,
    /// Its loss effect (the sum over its forward outputs), when the dump has one.
    pub effect: Option<f64>,
    /// The compare rows that differ (NPU names).
    pub rows: Vec<String>,
    /// Why compare's rows differ (their metrics).
    pub metrics: String,
    /// The replay's verdict on its failing outputs (an own error's messages).
    pub verdict: String,
}

/// What `--from-compare` found.
#[derive(Debug, Clone)]
pub struct BlameReport {
    /// Every differing call: own errors first (largest |effect| first), then the rest in dump order.
    pub calls: Vec<Blamed>,
    /// Differing rows whose call is not in the dump.
    pub missing: Vec<String>,
    /// The culprits CSV.
    pub file: PathBuf,
}

impl BlameReport {
    /// The differing calls as the HTML report lists them.
    pub fn html_rows(&self) -> Vec<HtmlCulprit> {
        self.calls
            .iter()
            .map(|b| HtmlCulprit {
                api: b.api.clone(),
                blame: b.blame.as_str().into(),
                upstream: b.upstream.as_ref().map(|(u, how)| format!("{u} ({how})")).unwrap_or_default(),
                effect: b.effect,
            })
            .collect()
    }

    /// The own-error calls.
    pub fn culprits(&self) -> impl Iterator<Item = &Blamed> {
        self.calls.iter().filter(|c| c.blame == Blame::Own)
    }
}

/// The culprits CSV's columns.
const COLUMNS: [&str; 7] = ["API Name", "Blame", "Upstream Own Error", "Loss Effect", "Compare Rows", "Compare Metrics", "Replay Verdict"];

/// A compare row's call and the rest of its name (`forward.output.0`).
fn split(npu_name: &str) -> Option<(&str, &str)> {
    let call = call_of(npu_name);
    (call.len() < npu_name.len()).then(|| (call, &npu_name[call.len() + 1..]))
}

/// One differing call, judged by the replay's `rows` of its outputs that
/// compare's `diffs` name.
fn blame_call(api: String, diffs: &[&Differing], rows: &HashMap<&str, &DetailRow>, details: &[DetailRow], shares: &Shares) -> Blamed {
    let mut blame = Blame::Inherited;
    let mut verdicts = vec![];
    for d in diffs {
        let Some((_, rest)) = split(&d.npu_name) else { continue };
        // Only a call's outputs (forward outputs, input gradients) can be its own error.
        if !(rest.starts_with("forward.output") || rest.starts_with("backward.output")) {
            continue;
        }
        match rows.get(d.npu_name.as_str()) {
            // Only the device's own recorded values can be its error (an emulated row judges the emulation).
            Some(r) if r.status == Status::Error && r.tested_on == Some(TestedOn::Device) => {
                blame = Blame::Own;
                verdicts.push(format!("{}: {}", r.api_name, r.message));
            }
            // Judged right on the device's values; or an emulated row, where the dump's values are
            // not this output's (msprobe recorded the last autograd node's gradients): no evidence either way.
            Some(r) if r.status != Status::Skip => {}
            _ if blame != Blame::Own => blame = Blame::Unjudged,
            _ => {}
        }
    }
    let effects: Vec<f64> = details.iter().filter(|r| call_of(&r.api_name) == api).filter_map(|r| shares.effect(r)).collect();
    let effect = (!effects.is_empty()).then(|| effects.iter().sum());
    let metrics = diffs.iter().map(|d| format!("{}: {}", d.npu_name, d.why)).collect::<Vec<_>>().join("; ");
    let rows = diffs.iter().map(|d| d.npu_name.clone()).collect();
    Blamed { api, blame, upstream: None, effect, rows, metrics, verdict: verdicts.join("; ") }
}

/// The culprits CSV's rows.
fn culprit_rows(calls: &[Blamed]) -> Vec<Vec<String>> {
    calls
        .iter()
        .map(|b| {
            vec![
                b.api.clone(),
                b.blame.as_str().into(),
                b.upstream.as_ref().map(|(u, how)| format!("{u} ({how})")).unwrap_or_default(),
                b.effect.map(runtime::pyfmt::repr).unwrap_or_default(),
                b.rows.join(" "),
                b.metrics.clone(),
                b.verdict.clone(),
            ]
        })
        .collect()
}

/// Replays the calls `compare` flags (their CSVs as any `--dump` replay
/// writes them) and classifies them into the culprits CSV: the replay's
/// report with its blame.
pub(super) fn run(opts: &Options, compare: &Path) -> Result<ReplayReport, ReplayError> {
    let differing = differing_rows(compare).map_err(|e| ReplayError::Part { path: e.path, message: e.message })?;
    let file = source::one_file(&opts.config.input, "point --dump at the one dump.json that compare's NPU side read")?;
    let (source, groups) = Source::open(&file, opts.framework, opts.config.data_mode, &|_: &ApiName| true)?;
    let calls = groups.iter().filter(|g| g.forward.is_some()).map(|g| source.read_call(g)).collect::<Result<Vec<_>, _>>()?;
    let index: HashMap<String, usize> = calls.iter().enumerate().map(|(i, c)| (c.name.to_string(), i)).collect();

    // The differing rows by call, in dump order.
    let mut by_call: Vec<(usize, Vec<&Differing>)> = vec![];
    let mut missing = vec![];
    for d in &differing {
        match split(&d.npu_name).and_then(|(call, _)| index.get(call)) {
            Some(&i) => match by_call.iter_mut().find(|(j, _)| *j == i) {
                Some((_, rows)) => rows.push(d),
                None => by_call.push((i, vec![d])),
            },
            None => missing.push(d.npu_name.clone()),
        }
    }
    by_call.sort_by_key(|(i, _)| *i);
    let classify = |rows: &Rows| classify(opts, &calls, &by_call, rows, missing.clone());
    if by_call.is_empty() {
        let mut report = ReplayReport::empty(opts.config.standard);
        report.blame = Some(classify(&Rows::default())?);
        return Ok(report);
    }
    let names: Vec<String> = by_call.iter().map(|(i, _)| regex::escape(&calls[*i].name.to_string())).collect();
    let filter = Regex::new(&format!("^(?:{})$", names.join("|"))).expect("escaped names make a valid regex");
    let selector = ApiSelector { filter: Some(filter), shard: None };
    super::run_job_with(&Options { scope: Scope::Many(selector.clone()), ..opts.clone() }, &selector, classify)
}

/// The blame of the differing calls `by_call` (indexes into the dump's
/// `calls`, with their compare rows) from the replay's `rows`, its culprits
/// CSV written.
fn classify(opts: &Options, calls: &[ApiCall], by_call: &[(usize, Vec<&Differing>)], rows: &Rows, missing: Vec<String>) -> Result<BlameReport, ReplayError> {
    let by_name: HashMap<&str, &DetailRow> = rows.details.iter().map(|r| (r.api_name.as_str(), r)).collect();
    let shares = Shares::of(&rows.details);
    let mut blamed: Vec<(usize, Blamed)> =
        by_call.iter().map(|(i, diffs)| (*i, blame_call(calls[*i].name.to_string(), diffs, &by_name, &rows.details, &shares))).collect();
    let own: Vec<usize> = blamed.iter().filter(|(_, b)| b.blame == Blame::Own).map(|(i, _)| *i).collect();
    let flow = Flow::of(calls);
    let is_own = |j: usize| own.contains(&j);
    for (i, b) in blamed.iter_mut().filter(|(_, b)| b.blame != Blame::Own) {
        let found = flow.nearest(*i, &is_own, false).or_else(|| flow.nearest(*i, &is_own, true)).map(|j| (j, "data flow"));
        let found = found.or_else(|| own.iter().copied().filter(|&j| j < *i).max().map(|j| (j, "dump order")));
        b.upstream = found.map(|(j, how)| (calls[j].name.to_string(), how));
    }
    blamed.sort_by(|(i, a), (j, b)| {
        let size = |b: &Blamed| b.effect.map_or(-1.0, f64::abs);
        a.blame.cmp(&b.blame).then(if a.blame == Blame::Own { size(b).total_cmp(&size(a)) } else { i.cmp(j) })
    });
    let calls: Vec<Blamed> = blamed.into_iter().map(|(_, b)| b).collect();
    let file = write_table(&opts.output_dir, "replay_culprits", &COLUMNS, &culprit_rows(&calls))?;
    Ok(BlameReport { calls, missing, file })
}
