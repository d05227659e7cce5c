//! `replay --merge DIR`: the parts the shards of one job left in
//! `DIR/replay_parts/<set>/` (DIR's one option set, or DIR itself when it
//! is a set's folder) folded into msprobe's two CSVs (and the HTML
//! report) of the whole job, exactly as the unsharded run writes them
//! ([`super::report`]). Every part must be there, complete, once, and from
//! the same dump and options; anything else is refused in one line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use runtime::standard::Standard;

use super::error::ReplayError;
use super::html::Page;
use super::outcome::ReplayReport;
use super::part::{self, Part};
use super::report;
use crate::model::Framework;
use crate::unreadable::Unreadable;

/// Validated options of `replay --merge`.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// `-f`: the parts must have been made with it.
    pub framework: Framework,
    /// The folder the shards wrote into (`--output-dir` of each shard).
    pub dir: PathBuf,
    /// Where the CSVs go (default: `dir`).
    pub output_dir: PathBuf,
    /// `--html [FILE]`.
    pub html: Option<Option<PathBuf>>,
    /// `--rank-by`: what the HTML report's table puts first.
    pub rank_by: runtime::report::RankBy,
}

fn refuse(path: &Path, message: String) -> ReplayError {
    ReplayError::Part { path: path.to_path_buf(), message }
}

fn name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A file of `replay_parts/`, as its name says: (shards, shard, whether it
/// is a journal, path); sorted, parts come before their journals.
type Found = (u32, u32, bool, PathBuf);

/// Merges the parts of `opts.dir` into the job's report.
pub fn merge(opts: &MergeOptions) -> Result<ReplayReport, ReplayError> {
    let none = || refuse(&opts.dir, "no replay parts (replay_parts/<set>/part_I_of_N.json, written by replay --dump ROOT --shard I/N --output-dir DIR)".into());
    let dir = set_folder(&opts.dir).ok_or_else(none)??;
    let found = list_parts(&dir)?;
    let parts = read_parts(&found)?;
    names_agree(&found, &parts)?;
    let Some((first, rest)) = parts.split_first() else { return Err(none()) };
    same_run(opts.framework, first, rest)?;
    complete(&dir, &first.1, &parts)?;
    write_job(opts, parts)
}

/// The folder of the parts to merge: `dir` itself when it holds parts (a
/// set's folder), else the one option set of `dir/replay_parts/`; `None`
/// without parts, an error naming the sets when there are several.
fn set_folder(dir: &Path) -> Option<Result<PathBuf, ReplayError>> {
    if part::holds_parts(dir) {
        return Some(Ok(dir.to_path_buf()));
    }
    match part::sets(dir).as_slice() {
        [] => None,
        [one] => Some(Ok(one.clone())),
        several => {
            let names: Vec<String> = several.iter().map(|p| name(p)).collect();
            let message = format!(
                "holds the parts of {} option sets ({}): merge one with --merge {}/<set> --output-dir {}",
                several.len(),
                names.join(", "),
                part::dir(dir).display(),
                dir.display()
            );
            Some(Err(refuse(&part::dir(dir), message)))
        }
    }
}

/// The parts and journals in `dir` (a set's folder), by their names;
/// other files are ignored.
fn list_parts(dir: &Path) -> Result<Vec<Found>, ReplayError> {
    let mut found: Vec<Found> = std::fs::read_dir(dir)
        .map_err(Unreadable::at(dir, "cannot list"))?
        .filter_map(Result::ok)
        .filter_map(|e| part::parse_name(&e.file_name().to_string_lossy()).map(|(i, n, j)| (n, i, j, e.path())))
        .collect();
    found.sort();
    Ok(found)
}

/// Reads every part (not the journals) of `found`, in its order.
fn read_parts(found: &[Found]) -> Result<Vec<(PathBuf, Part)>, ReplayError> {
    let mut parts: Vec<(PathBuf, Part)> = vec![];
    for (_, _, _, path) in found.iter().filter(|f| !f.2) {
        let text = std::fs::read_to_string(path).map_err(Unreadable::at(path, "cannot read"))?;
        let p: Part = serde_json::from_str(&text).map_err(|e| refuse(path, format!("not a replay part ({e})")))?;
        parts.push((path.clone(), p));
    }
    Ok(parts)
}

/// Refuses a part that holds another shard than its name says, and a
/// journal whose shard left no part (it did not finish).
fn names_agree(found: &[Found], parts: &[(PathBuf, Part)]) -> Result<(), ReplayError> {
    for (path, p) in parts {
        let (i, n, _) = part::parse_name(&name(path)).expect("listed by its name");
        if (p.header.shard, p.header.shards) != (i, n) {
            return Err(refuse(
                path,
                format!("holds shard {}/{}, not {i}/{n} as its name says (a duplicated or renamed part)", p.header.shard, p.header.shards),
            ));
        }
    }
    for (n, i, _, path) in found.iter().filter(|f| f.2) {
        if !found.iter().any(|f| !f.2 && (f.0, f.1) == (*n, *i)) {
            return Err(refuse(
                path,
                format!("shard {i}/{n} left only its journal (killed or still running): rerun it with --shard {i}/{n} into the same --output-dir to finish it"),
            ));
        }
    }
    Ok(())
}

/// Refuses parts of other runs than the `first`'s (another shard count,
/// dump or options), and a run made with another `-f` than `framework`.
fn same_run(framework: Framework, (first_path, first): &(PathBuf, Part), rest: &[(PathBuf, Part)]) -> Result<(), ReplayError> {
    let first_name = name(first_path);
    for (path, p) in rest {
        if p.header.shards != first.header.shards {
            return Err(refuse(
                path,
                format!("a part of {} shards, but {first_name} is one of {} (parts of another run)", p.header.shards, first.header.shards),
            ));
        }
        if let Some((what, detail)) = p.header.differs(&first.header, false) {
            return Err(refuse(path, format!("{what} than {first_name} ({detail})")));
        }
    }
    if first.header.options.framework != framework.as_str() {
        return Err(refuse(first_path, format!("made with -f {}, not -f {}", first.header.options.framework, framework.as_str())));
    }
    Ok(())
}

/// Refuses a job some shard of which is missing, whose parts cover a call
/// twice, or that does not cover every call of the job (`first`'s header).
fn complete(dir: &Path, first: &Part, parts: &[(PathBuf, Part)]) -> Result<(), ReplayError> {
    let count = first.header.shards;
    let missing: Vec<u32> = (0..count).filter(|i| !parts.iter().any(|(_, p)| p.header.shard == *i)).collect();
    if !missing.is_empty() {
        let list = |f: &dyn Fn(u32) -> String| missing.iter().map(|&i| f(i)).collect::<Vec<_>>().join(", ");
        return Err(refuse(dir, format!("missing shards {} of {count} (no {})", list(&|i| i.to_string()), list(&|i| format!("part_{i}_of_{count}.json")))));
    }
    let mut owner: HashMap<usize, String> = HashMap::new();
    for (path, p) in parts {
        for c in &p.calls {
            if let Some(other) = owner.insert(c.place.ordinal, name(path)) {
                return Err(refuse(path, format!("covers call {} ({}), which {other} covers too (a duplicated part)", c.place.ordinal, c.place.api)));
            }
        }
    }
    if owner.len() != first.header.job_calls {
        return Err(refuse(dir, format!("the parts cover {} of the job's {} calls", owner.len(), first.header.job_calls)));
    }
    Ok(())
}

/// Writes the job's CSVs (and HTML report) from the checked parts, their
/// calls in the job's order, as the unsharded run writes them.
fn write_job(opts: &MergeOptions, parts: Vec<(PathBuf, Part)>) -> Result<ReplayReport, ReplayError> {
    let header = parts[0].1.header.clone();
    let mut notes: Vec<String> = vec![];
    for (_, p) in &parts {
        for n in &p.stack_notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }
    let mut calls: Vec<_> = parts.into_iter().flat_map(|(_, p)| p.calls).collect();
    calls.sort_by_key(|c| c.place.ordinal);
    let standard = Standard::ALL.into_iter().find(|s| s.as_str() == header.options.standard).unwrap_or(Standard::Msprobe);
    let framework = Framework::parse(&header.read_as).unwrap_or(opts.framework);
    let root = PathBuf::from(&header.root);
    let page = Page {
        dump: &root,
        framework,
        standard,
        emulate: header.options.emulate,
        stack_note: notes.join("; "),
        output_dir: &opts.output_dir,
        rank_by: opts.rank_by,
        culprits: vec![],
    };
    let w = report::write(&opts.output_dir, standard, (header.whole, true), &calls, opts.html.as_ref().map(|t| (t, page)))?;
    Ok(ReplayReport { rows: w.rows, files: Some(w.files), html: w.html, part: None, merge_hint: None, standard, blame: None, minimize: None })
}
