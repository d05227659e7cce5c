//! The `replay` command: dumped API calls replayed natively by the runtime
//! (no Python), with the accuracy CSVs written by the runtime's report writer.
//! One call from a config, or many from a dump (`--dump`).
//!
//! It flows one way: the source layer opens the dump (and, with `--html`,
//! its `stack.json`); [`select`] picks the calls and their directions;
//! [`call`] replays them, one record per call; the CSVs, then the page
//! ([`html`]), are written from those records.
//!
//! Sizes are bounded before anything is allocated (`runtime::limits`): a
//! tensor over `--tensor-size-limit`, or a call whose estimated working set
//! is over `--memory-budget`, is an input error alone and a `skip` row in a
//! batch; a batch runs calls in parallel only while their estimates
//! together stay within the budget ([`crate::schedule`]).

mod args;
mod blame;
mod call;
mod cost;
mod dedupe;
mod error;
mod finish;
mod flow;
mod html;
mod job;
mod merge;
mod minimize;
mod options;
mod outcome;
mod part;
mod report;
mod resume;
mod select;
mod shard;

pub use blame::{Blame, BlameReport, Blamed};
pub use error::ReplayError;
pub use merge::{merge, MergeOptions};
pub use minimize::{MinimizeReport, MinimizedCall};
pub use options::{Options, Scope};
pub use outcome::{PartOutcome, ReplayReport};

use crate::model::{ApiName, Direction};
use crate::select::{ApiSelector, Shard};
use crate::source::{self, Census, Source};
use finish::{finish_shard, Finished};
use html::{Page, StackView};
use job::Job;
use part::{CallRecord, Header, Settings};
use resume::Resumed;

/// Replays the selected calls of the config's dump and writes the CSVs
/// (and, with `--html`, the page): one call, or (`--dump`) this shard of
/// the whole job ([`run_job`]).
pub fn run(opts: &Options) -> Result<ReplayReport, ReplayError> {
    if let Some(compare) = &opts.from_compare {
        return blame::run(opts, compare);
    }
    let mut report = match &opts.scope {
        Scope::One(name) => run_one(opts, name)?,
        Scope::Many(selector) => run_job(opts, selector)?,
    };
    // A shard of several leaves the verdicts, and so the minimizing, to the merge.
    if let (Some(budget), Some(_)) = (opts.minimize, &report.files) {
        report.minimize = Some(minimize::run(opts, &report.rows, budget)?);
    }
    Ok(report)
}

/// One call of one dump: a broken input is the command's error, no CSV.
fn run_one(opts: &Options, name: &ApiName) -> Result<ReplayReport, ReplayError> {
    let file = source::one_file(&opts.config.input, "point at one rank's dump.json")?;
    let selector = ApiSelector::exactly(name);
    let (source, groups) = Source::open(&file, opts.framework, opts.config.data_mode, &|n: &ApiName| selector.matches(n))?;
    let stacks = opts.html.as_ref().map(|_| StackView::new(source.stacks()));
    let (calls, selected) = select::directions(&groups, opts.propagation);
    let Some(&(g, direction)) = calls.first() else { return Err(select::nothing_selected(&file, selected)) };
    let group = &groups[g];
    let (rows, args) = call::replay_one(opts, &source, group, direction)?;
    let stack = stacks.as_ref().map(|s| s.frames(&group.name)).unwrap_or_default();
    let place = part::Place { ordinal: 0, step: None, rank: None, api: group.name.to_string(), direction: direction.as_str().into() };
    let record = CallRecord::new(place, None, None, &rows, &args, &stack);
    let page = stacks.map(|s| Page {
        dump: &file,
        framework: source.framework(),
        standard: opts.config.standard,
        emulate: opts.emulate,
        stack_note: s.note,
        output_dir: &opts.output_dir,
        rank_by: opts.rank_by,
        culprits: vec![],
    });
    let w = report::write(&opts.output_dir, opts.config.standard, (false, false), &[record], opts.html.as_ref().zip(page))?;
    Ok(ReplayReport {
        rows: w.rows,
        files: Some(w.files),
        html: w.html,
        part: None,
        merge_hint: None,
        standard: opts.config.standard,
        blame: None,
        minimize: None,
    })
}

/// The sha256 of the rulebook in force, as JSON: what a part records of
/// the rules its verdicts were judged by.
fn rulebook_digest() -> String {
    use sha2::{Digest, Sha256};
    let text = serde_json::to_string(runtime::rulebook::get()).unwrap_or_default();
    dedupe::hex(&Sha256::digest(text.as_bytes()))
}

/// The options a part records.
fn settings(opts: &Options, selector: &ApiSelector) -> Settings {
    let c = &opts.config;
    Settings {
        framework: opts.framework.as_str().into(),
        standard: c.standard.as_str().into(),
        propagation: opts.propagation.map_or("both", Direction::as_str).into(),
        emulate: opts.emulate,
        data_mode: c.data_mode.as_str().into(),
        filter: selector.filter.as_ref().map(|r| r.as_str().to_string()),
        random_seed: c.random_seed,
        iter_times: c.iter_times,
        cosine_threshold: c.cosine_threshold,
        max_abs_err_threshold: c.max_abs_err_threshold,
        rulebook: rulebook_digest(),
    }
}

/// What a shard's run did, with the job's census: its API entries against
/// those that get rows and those named, never replayed.
fn part_outcome(job: &Job, path: std::path::PathBuf, shard: Shard, counts: (usize, usize, usize)) -> PartOutcome {
    let census = job.dumps.iter().fold(Census::default(), |a, d| a.join(d.source.census()));
    PartOutcome {
        path,
        shard,
        replayed: counts.0,
        judged: counts.1,
        shared: counts.2,
        entries: census.api_entries,
        named: census.named,
        // A backward replay judges the forward entry's outputs too.
        with_rows: job.calls.iter().map(|c| if c.direction == Direction::Backward { 2 } else { 1 }).sum(),
        strays: census.strays,
    }
}

/// `--dump`: this shard (all of the job without `--shard`) of the job at
/// the config's input, resumed from what an earlier run left in the
/// output folder's parts, recorded there as a part; an unsharded run then
/// writes the CSVs (and the page) from its part.
fn run_job(opts: &Options, selector: &ApiSelector) -> Result<ReplayReport, ReplayError> {
    run_job_with(opts, selector, |_| Ok(None::<BlameReport>))
}

/// [`run_job`], with `blame` judging the job's rows (`--from-compare`)
/// before the reports are written: its culprits go on the page.
fn run_job_with<B: Into<Option<BlameReport>>>(
    opts: &Options,
    selector: &ApiSelector,
    blame: impl FnOnce(&runtime::replay::Rows) -> Result<B, ReplayError>,
) -> Result<ReplayReport, ReplayError> {
    let root = opts.config.input.path();
    let job = Job::open(opts, root, selector)?;
    let shard = selector.shard.unwrap_or(Shard { index: 0, count: 1 });
    let (units, costs) = job.units(opts.config.data_mode);
    let shard_of = shard::partition(&costs, shard.count);
    let mut mine: Vec<usize> = units.iter().zip(&shard_of).filter(|(_, &s)| s == shard.index).flat_map(|(u, _)| u.iter().copied()).collect();
    mine.sort_unstable();
    let header = Header {
        format: part::FORMAT.into(),
        shard: shard.index,
        shards: shard.count,
        root: root.display().to_string(),
        whole: job.whole,
        read_as: job.dumps[0].source.framework().as_str().into(),
        dumps: job.ids.clone(),
        options: settings(opts, selector),
        job_calls: job.calls.len(),
    };
    let parts = part::set_dir(&opts.output_dir, &header);
    let Finished { part, path, counts } = match resume::load(&parts, &header)? {
        Resumed::Complete(p) => {
            let n = p.calls.len();
            Finished { part: *p, path: part::part_path(&parts, shard.index, shard.count), counts: (0, n, 0) }
        }
        Resumed::Journal(done, len) => finish_shard(opts, &job, &mine, &parts, header, done, Some(len))?,
        Resumed::Fresh => finish_shard(opts, &job, &mine, &parts, header, vec![], None)?,
    };
    let outcome = part_outcome(&job, path, shard, counts);
    if shard.count > 1 {
        let (rows, _) = html::join(&part.calls);
        let html = if opts.html.is_some() { " --html" } else { "" };
        // With parts of other option sets beside, the merge is pointed at this set's.
        let merge_dir = if part::sets(&opts.output_dir).len() > 1 {
            format!("{} --output-dir {}", parts.display(), opts.output_dir.display())
        } else {
            opts.output_dir.display().to_string()
        };
        let hint = format!("msprobe -f {} replay --merge {merge_dir}{html}", opts.framework.as_str());
        return Ok(ReplayReport {
            rows,
            files: None,
            html: None,
            part: Some(outcome),
            merge_hint: Some(hint),
            standard: opts.config.standard,
            blame: None,
            minimize: None,
        });
    }
    let blame: Option<BlameReport> = blame(&html::join(&part.calls).0)?.into();
    let dump = if job.whole { root.to_path_buf() } else { job.dumps[0].at.file.clone() };
    let page = Page {
        dump: &dump,
        framework: job.dumps[0].source.framework(),
        standard: opts.config.standard,
        emulate: opts.emulate,
        stack_note: part.stack_notes.join("; "),
        output_dir: &opts.output_dir,
        rank_by: opts.rank_by,
        culprits: blame.as_ref().map(BlameReport::html_rows).unwrap_or_default(),
    };
    let w = report::write(&opts.output_dir, opts.config.standard, (job.whole, true), &part.calls, opts.html.as_ref().map(|t| (t, page)))?;
    Ok(ReplayReport {
        rows: w.rows,
        files: Some(w.files),
        html: w.html,
        part: Some(outcome),
        merge_hint: None,
        standard: opts.config.standard,
        blame,
        minimize: None,
    })
}
