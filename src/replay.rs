//! The `replay` command: dumped API calls replayed natively by the runtime
//! (no Python), with the accuracy CSVs written by the runtime's report writer.
//! One call from a config, or many from a dump (`--dump`).
//!
//! Sizes are bounded before anything is allocated (`runtime::limits`): a
//! tensor over `--tensor-size-limit`, or a call whose estimated working set
//! is over `--memory-budget`, is an input error alone and a `skip` row in a
//! batch; a batch runs calls in parallel only while their estimates
//! together stay within the budget (`within_budget`).

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, PoisonError};

use rayon::prelude::*;
use runtime::compare::Status;
use runtime::limits::{Limit, Limits, TooLarge};
use runtime::replay::{replay_within, Rows};
use runtime::report::{write_html, write_report, DetailRow, HtmlArg, HtmlCall, HtmlFrame, HtmlReport, ResultRow};
use runtime::spec::Replay;

use crate::bridge;
use crate::config::{DataMode, OpConfig};
use crate::error::{exit, Error};
use crate::model::{ApiCall, ApiName, Arg, Direction, Framework, Stat};
use crate::select::ApiSelector;
use crate::source::{self, Group, Source};

/// Which calls a replay takes.
#[derive(Debug, Clone)]
pub enum Scope {
    /// One call: the config's `api_name`.
    One(ApiName),
    /// `--dump`: every call the selector takes.
    Many(ApiSelector),
}

/// Validated options of one `replay` run.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-f`.
    pub framework: Framework,
    /// config_op.json (or the defaults, with `--dump` alone), overrides applied.
    pub config: OpConfig,
    /// One call or many.
    pub scope: Scope,
    /// forward / backward, or both (`None`).
    pub propagation: Option<Direction>,
    /// Compare the bench with an emulated device run even when the dump
    /// recorded the outputs.
    pub emulate: bool,
    /// `--allow-skip`: `skip` rows alone do not fail the run.
    pub allow_skip: bool,
    /// Where the CSVs go.
    pub output_dir: PathBuf,
    /// `--tensor-size-limit` and `--memory-budget`.
    pub limits: Limits,
    /// `--html [FILE]`: also write the HTML report, to FILE or (`Some(None)`)
    /// to `replay_report_<stamp>.html` in the output folder.
    pub html: Option<Option<PathBuf>>,
}

/// What a replay produced.
pub struct ReplayReport {
    /// All rows.
    pub rows: Rows,
    /// The CSVs written: (details, result).
    pub files: (PathBuf, PathBuf),
    /// The HTML report written, with `--html`.
    pub html: Option<PathBuf>,
}

impl ReplayReport {
    /// How many details rows have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.rows.details.iter().filter(|r| r.status == status).count()
    }

    /// [`exit::INACCURATE`] when some row is an error, else [`exit::SKIPPED`]
    /// when some is a skip (unless `--allow-skip`), else 0.
    pub fn exit_code(&self, allow_skip: bool) -> u8 {
        exit::for_statuses(self.rows.details.iter().map(|r| r.status), allow_skip)
    }
}

/// The direction one call is replayed in: a backward replay compares the
/// forward outputs too, so "both" is the backward replay where the dump
/// has a backward entry, else the forward one.
fn direction_of(wanted: Option<Direction>, g: &Group) -> Option<Direction> {
    match (wanted, g.backward.is_some()) {
        (Some(Direction::Backward), false) => None,
        (Some(d), _) => Some(d),
        (None, true) => Some(Direction::Backward),
        (None, false) => Some(Direction::Forward),
    }
}

/// One call ready to run: what the runtime replays, and its estimated
/// working set.
struct Prepared {
    replay: Replay,
    need: u64,
    /// The call's arguments as the HTML report shows them (only with `--html`).
    args: Vec<HtmlArg>,
}

/// A size refusal as the command's error, naming the flag that sets the limit.
fn too_large(g: &Group, e: &TooLarge) -> Error {
    let flag = match e.limit {
        Limit::Tensor => "--tensor-size-limit",
        Limit::Budget => "--memory-budget",
    };
    Error::TooLarge { api: g.name.to_string(), message: format!("{e} ({flag})") }
}

/// Reads, types and bridges one call, and checks its sizes; or says why its
/// input is at fault: a call that cannot be read or typed, lacks the tensor
/// files real data needs, or is over a size limit.
fn prepare(opts: &Options, source: &Source, g: &Group, direction: Direction) -> Result<Prepared, Error> {
    let call = source.read_call(g)?;
    if opts.config.data_mode == DataMode::Real {
        source.check_real_data(&call, direction)?;
    }
    let replay = bridge::to_replay(&call, opts.framework, &opts.config, direction, source.data_dir(), !opts.emulate);
    let need = opts.limits.check(&replay).map_err(|e| too_large(g, &e))?;
    let args = if opts.html.is_some() { html_args(&call, opts.framework) } else { vec![] };
    Ok(Prepared { replay, need, args })
}

/// Replays a prepared call: its rows, or its broken input (an unreadable
/// tensor file).
fn run_prepared(opts: &Options, g: &Group, p: &Prepared) -> Result<Rows, Error> {
    replay_within(&p.replay, &opts.limits).map_err(|e| match e {
        runtime::error::Error::TooLarge(t) => too_large(g, &t),
        e => Error::Input { api: g.name.to_string(), message: e.to_string() },
    })
}

/// In a `--dump` batch, a call whose input is at fault is one `skip` row
/// naming the problem, and the rest goes on.
fn skip_rows(g: &Group, direction: Direction, e: &Error) -> Rows {
    let api = g.name.to_string();
    let message = match e {
        Error::TooLarge { .. } => format!("cannot replay here: {e}"),
        _ => format!("cannot replay here: broken input: {e}"),
    };
    let row = DetailRow::uncompared(format!("{api}.{}", direction.as_str()), Status::Skip, message.clone());
    let (forward, backward) = match direction {
        Direction::Forward => (Some(Status::Skip), None),
        Direction::Backward => (None, Some(Status::Skip)),
    };
    Rows { details: vec![row], results: vec![ResultRow { api_name: api, forward, backward, message }] }
}

/// Runs `work` on every item, on up to `threads` threads, admitting items
/// in order and only while the `need`s of those running sum to at most
/// `budget` (an item needing more than the whole budget runs alone).
/// Returns the results in item order. The threads are plain threads, not
/// the rayon pool's, so waiting for room never blocks work the running
/// items hand to rayon.
fn within_budget<T: Sync, R: Send>(items: &[T], need: impl Fn(&T) -> u64 + Sync, budget: u64, threads: usize, work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    /// The next item to admit and the sum of the needs running.
    struct Admission {
        next: usize,
        used: u64,
    }
    /// Gives an item's need back when it is done, even by a panic.
    struct Release<'a>(&'a Mutex<Admission>, &'a Condvar, u64);
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            self.0.lock().unwrap_or_else(PoisonError::into_inner).used -= self.2;
            self.1.notify_all();
        }
    }
    let (state, room) = (Mutex::new(Admission { next: 0, used: 0 }), Condvar::new());
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let (i, n) = {
                    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
                    loop {
                        let Some(item) = items.get(s.next) else { return };
                        let n = need(item);
                        if s.used == 0 || s.used.saturating_add(n) <= budget {
                            s.used += n;
                            s.next += 1;
                            break (s.next - 1, n);
                        }
                        s = room.wait(s).unwrap_or_else(PoisonError::into_inner);
                    }
                };
                let _release = Release(&state, &room, n);
                let r = work(&items[i]);
                *results[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
            });
        }
    });
    results.into_iter().map(|r| r.into_inner().unwrap_or_else(PoisonError::into_inner).expect("every item ran")).collect()
}

/// Replays the selected calls of the config's dump and writes the CSVs.
pub fn run(opts: &Options) -> Result<ReplayReport, Error> {
    let config = &opts.config;
    let file = source::one_file(&config.input, "point at one rank's dump.json")?;
    let selector = match &opts.scope {
        Scope::Many(selector) => selector.clone(),
        Scope::One(name) => ApiSelector::exactly(name),
    };
    let (source, groups) = Source::open(&file, opts.framework, config.data_mode, &|n: &ApiName| selector.matches(n))?;
    let selected: Vec<&Group> = groups.iter().filter(|g| g.forward.is_some() && selector.in_shard(&g.name)).collect();
    if selected.is_empty() {
        return Err(Error::selection(file, "no API selected (check api_name / --filter)"));
    }
    let jobs: Vec<(&Group, Direction)> = selected.into_iter().filter_map(|g| direction_of(opts.propagation, g).map(|d| (g, d))).collect();
    if jobs.is_empty() {
        return Err(Error::selection(file, "propagation is backward, but no selected API has a backward entry"));
    }
    let (per_api, mut args): (Vec<Rows>, Vec<Vec<HtmlArg>>) = match &opts.scope {
        // One call: a broken input is the command's error (no CSV).
        Scope::One(_) => {
            let (g, d) = jobs[0];
            let p = prepare(opts, &source, g, d)?;
            (vec![run_prepared(opts, g, &p)?], vec![p.args])
        }
        Scope::Many(_) => {
            let prepared: Vec<_> = jobs.par_iter().map(|&(g, d)| (g, d, prepare(opts, &source, g, d))).collect();
            let need = |(_, _, p): &(&Group, Direction, Result<Prepared, Error>)| p.as_ref().map_or(0, |p| p.need);
            let rows = within_budget(&prepared, need, opts.limits.memory_budget, rayon::current_num_threads(), |(g, d, p)| {
                p.as_ref().map_err(|e| skip_rows(g, *d, e)).and_then(|p| run_prepared(opts, g, p).map_err(|e| skip_rows(g, *d, &e))).unwrap_or_else(|rows| rows)
            });
            (rows, prepared.into_iter().map(|(_, _, p)| p.map(|p| p.args).unwrap_or_default()).collect())
        }
    };
    let mut rows = Rows::default();
    let mut ranges = Vec::with_capacity(per_api.len());
    for r in per_api {
        let start = rows.details.len();
        rows.details.extend(r.details);
        ranges.push(start..rows.details.len());
        rows.results.extend(r.results);
    }
    let files = write_report(Path::new(&opts.output_dir), &rows.details, &rows.results, config.standard)?;
    let html = match &opts.html {
        None => None,
        Some(target) => {
            let path = target.clone().unwrap_or_else(|| runtime::report::default_html_path(&opts.output_dir));
            let (stacks, stack_note) = match source::stack::read_stacks(&file) {
                Ok(s) => (s, String::new()),
                Err(note) => (source::stack::Stacks::default(), note),
            };
            let calls = jobs
                .iter()
                .zip(ranges)
                .zip(args.iter_mut())
                .map(|((&(g, _), rows), args)| HtmlCall {
                    api: g.name.to_string(),
                    rows,
                    args: std::mem::take(args),
                    stack: stacks
                        .frames(&g.name.key(Direction::Forward))
                        .into_iter()
                        .map(|f| HtmlFrame { file: f.file, line: f.line, function: f.function, code: f.code, user: f.user })
                        .collect(),
                })
                .collect();
            let report = HtmlReport {
                title: file.display().to_string(),
                framework: opts.framework.as_str().to_string(),
                standard: config.standard.as_str().to_string(),
                tested: if opts.emulate { "emulated device (--emulate)".into() } else { "the dump's recorded outputs where present, else the emulated device (see each Message)".into() },
                command: std::env::args().map(|a| if a.contains(' ') { format!("'{a}'") } else { a }).collect::<Vec<_>>().join(" "),
                generated: runtime::report::stamp_now(),
                stack_note,
                repro: repro_command(opts.framework, &file),
                details: &rows.details,
                calls,
            };
            write_html(&path, &report)?;
            Some(path)
        }
    };
    Ok(ReplayReport { rows, files, html })
}

/// The command that writes a call's repro script from this dump, with
/// `{API_RE}` where the page puts the call's name as a regex (`^Torch\.matmul\.0$`).
fn repro_command(framework: Framework, dump: &Path) -> String {
    format!(
        "msprobe -f {} op_generate -i config_op.json -o ./op_repro --filter '{{API_RE}}'   # config_op.json: {{\"dump_json_path\": \"{}\"}}",
        framework.as_str(),
        dump.display()
    )
}

/// A recorded statistic as text.
fn stat_text(s: &Stat) -> String {
    match s {
        Stat::Num(x) => runtime::pyfmt::format_g6(*x),
        Stat::Bool(b) => if *b { "True" } else { "False" }.into(),
        Stat::Missing => "-".into(),
    }
}

/// One argument (a list flattened as `name[i]`) as the report shows it.
fn push_arg(out: &mut Vec<HtmlArg>, name: String, a: &Arg, framework: Framework) {
    match a {
        Arg::Tensor(t) => out.push(HtmlArg { name, dtype: framework.dtype_name(t.dtype), shape: format!("{:?}", t.shape), min: stat_text(&t.min), max: stat_text(&t.max) }),
        Arg::List(items) if items.iter().any(|i| matches!(i, Arg::Tensor(_))) && items.len() <= 64 => {
            for (i, x) in items.iter().enumerate() {
                push_arg(out, format!("{name}[{i}]"), x, framework);
            }
        }
        other => {
            let text = format!("{other:?}");
            let text = if text.len() > 120 { format!("{}...", &text[..text.char_indices().nth(117).map_or(text.len(), |(i, _)| i)]) } else { text };
            out.push(HtmlArg { name, dtype: "value".into(), shape: String::new(), min: text, max: String::new() })
        }
    }
}

/// The arguments and recorded outputs of a call.
fn html_args(call: &ApiCall, framework: Framework) -> Vec<HtmlArg> {
    let mut out = vec![];
    for (i, a) in call.forward.args.iter().enumerate() {
        push_arg(&mut out, format!("args[{i}]"), a, framework);
    }
    for (k, a) in &call.forward.kwargs {
        push_arg(&mut out, format!("kwargs.{k}"), a, framework);
    }
    for (i, a) in call.forward.outputs.iter().enumerate() {
        push_arg(&mut out, format!("output[{i}]"), a, framework);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn the_running_needs_never_exceed_the_budget() {
        let needs: Vec<u64> = vec![3, 5, 2, 8, 1, 1, 4, 6, 2, 7, 3, 3, 20, 1];
        let (running, peak) = (AtomicU64::new(0), AtomicU64::new(0));
        let out = within_budget(&needs, |&n| n, 10, 4, |&n| {
            let now = running.fetch_add(n, Ordering::SeqCst) + n;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            running.fetch_sub(n, Ordering::SeqCst);
            n * 10
        });
        assert_eq!(out, needs.iter().map(|n| n * 10).collect::<Vec<_>>(), "results in item order");
        // 20 is over the budget alone and runs alone; everything else fits in 10.
        assert_eq!(peak.load(Ordering::SeqCst), 20);
        let peak = AtomicU64::new(0);
        let small: Vec<u64> = needs.into_iter().filter(|&n| n <= 10).collect();
        let running = AtomicU64::new(0);
        within_budget(&small, |&n| n, 10, 4, |&n| {
            peak.fetch_max(running.fetch_add(n, Ordering::SeqCst) + n, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            running.fetch_sub(n, Ordering::SeqCst);
        });
        let peak = peak.load(Ordering::SeqCst);
        assert!(peak <= 10 && peak > 8, "ran concurrently within the budget: peak {peak}");
        assert!(within_budget(&Vec::<u64>::new(), |&n| n, 10, 4, |&n| n).is_empty());
    }
}
