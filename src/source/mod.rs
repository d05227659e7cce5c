//! The source layer: from the dump a command is pointed at to typed API
//! calls. Every command goes through it (op_generate, replay, and the ones
//! to come); none reads a dump another way.
//!
//! - [`job_dumps`] resolves a path: a `dump.json`, a rank folder holding
//!   one, a step folder of rank folders, or a job root of step folders, in
//!   the job order ([`dump_files`]: the files alone); [`one_file`] is the
//!   single-dump case of a config.
//! - [`Source::open`] indexes one dump file (streaming, see [`crate::dump`]),
//!   pairs the selected entries into [`Group`]s by name, resolves the dump's
//!   framework from its header and `-f` ([`Source::framework`]: `-f mindspore`
//!   reads MSAdapter's `mindtorch` dumps) and, for real data, finds the
//!   tensor folder.
//! - [`Source::open_calls`] does the same into a compact [`Calls`] index
//!   (a fixed-size record per call), for batches over millions of calls.
//! - [`Source::read`] and [`Source::call`] turn a group into an [`ApiCall`];
//!   [`Source::check_real_data`] says whether real data can replay it, and
//!   [`Source::write_extract`] saves its entries as msprobe's extract file.
//! - [`Source::stacks`] reads the dump's `stack.json` ([`stack`]).
//! - [`ops`] streams a dump's entries as statistics (`nan_analyze`).
//!
//! Raw JSON stops here: commands see [`ApiCall`]s and opaque [`Entries`].
//! Every failure is a [`SourceError`], the lower layers' typed errors kept
//! as its sources.

mod calls;
pub mod compare_result;
mod extract;
mod minimized;

pub use minimized::ArgAt;
pub mod ops;
pub mod stack;
mod xlsx_sheet;

use std::path::{Path, PathBuf};

use runtime::atomic::WriteError;
use runtime::io::{resolve_inside, IoError};
use serde_json::Value;

use crate::config::{DataMode, DumpInput};
use crate::dump::{self, DumpError, DumpHeader, EntryLoc};
use crate::model::{ApiCall, ApiName, Arg, Direction, Framework, ModelError};

pub use calls::Calls;

/// Why the source layer could not hand a command its calls.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The dump is unreadable or malformed.
    #[error(transparent)]
    Dump(#[from] DumpError),
    /// An entry of the dump has an unexpected shape.
    #[error("{}: {source}", file.display())]
    Model {
        /// The dump file.
        file: PathBuf,
        /// What is wrong, with the JSON path.
        source: ModelError,
    },
    /// The dump does not hold what was asked for (or was made by another
    /// framework, or lacks its tensor folder).
    #[error("{}: {message}", file.display())]
    Selection {
        /// The dump file (or folder).
        file: PathBuf,
        /// What is missing or unsupported.
        message: String,
    },
    /// A tensor file of a call is missing or resolves outside its folder.
    #[error("{api}: {source}")]
    Tensor {
        /// The call, `Prefix.op.N`.
        api: String,
        /// The file and the problem.
        source: IoError,
    },
    /// The extract file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl SourceError {
    /// A selection error about `file`.
    pub fn selection(file: impl Into<PathBuf>, message: impl Into<String>) -> SourceError {
        SourceError::Selection { file: file.into(), message: message.into() }
    }

    /// [`runtime::exit::WRITE`] for a file not written, else
    /// [`runtime::exit::INPUT`]: the input is at fault.
    pub fn exit_code(&self) -> u8 {
        match self {
            SourceError::Write(_) => runtime::exit::WRITE,
            _ => runtime::exit::INPUT,
        }
    }
}

/// Where the entries of one API call lie in the dump.
#[derive(Debug, Clone)]
pub struct Group {
    /// `Prefix.op.N`.
    pub name: ApiName,
    /// The forward entry, if dumped.
    pub forward: Option<EntryLoc>,
    /// The backward entry, if dumped.
    pub backward: Option<EntryLoc>,
}

/// The raw entries of one call, as read from the dump; only this layer
/// looks inside.
pub struct Entries {
    name: ApiName,
    forward: Value,
    backward: Option<Value>,
}

impl Entries {
    /// Whether the dump has a backward entry for the call.
    pub fn has_backward(&self) -> bool {
        self.backward.is_some()
    }

    /// What identifies the call's inputs apart from its name: the entries'
    /// JSON (forward, then backward) with every `data_name` removed, and
    /// those tensor file names, in order (for a caller to hash the files).
    pub fn identity(&self) -> (String, Vec<String>) {
        fn strip(v: &Value, names: &mut Vec<String>) -> Value {
            match v {
                Value::Object(map) => Value::Object(
                    map.iter()
                        .filter_map(|(k, x)| match (k.as_str(), x) {
                            ("data_name", Value::String(n)) => {
                                names.push(n.clone());
                                None
                            }
                            _ => Some((k.clone(), strip(x, names))),
                        })
                        .collect(),
                ),
                Value::Array(items) => Value::Array(items.iter().map(|x| strip(x, names)).collect()),
                other => other.clone(),
            }
        }
        let mut names = vec![];
        let forward = strip(&self.forward, &mut names);
        let backward = self.backward.as_ref().map(|b| strip(b, &mut names));
        (serde_json::json!([forward, backward]).to_string(), names)
    }
}

/// One dump file, opened for a command.
#[derive(Debug)]
pub struct Source {
    file: PathBuf,
    header: DumpHeader,
    framework: Framework,
    data_dir: Option<PathBuf>,
    census: Census,
}

/// What a dump's entries are, counted as it is indexed: so that a command
/// can say that none was dropped unseen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Census {
    /// Entries whose key is an API call's (`Prefix.op.N.forward|backward`, any prefix).
    pub api_entries: usize,
    /// Those of them the command took (a prefix the op table's, and the
    /// filter selects them).
    pub taken: usize,
    /// Entries under a prefix msprobe writes that is never replayed
    /// natively, per prefix ([`Prefix::not_replayed`] says why).
    pub named: std::collections::BTreeMap<&'static str, usize>,
    /// Entries that are neither an API call's nor a module's (`Module.`,
    /// `Cell.`): keys no msprobe dumper writes.
    pub strays: usize,
}

impl Census {
    /// The counts of two dumps together.
    pub fn join(mut self, o: &Census) -> Census {
        self.api_entries += o.api_entries;
        self.taken += o.taken;
        self.strays += o.strays;
        for (p, n) in &o.named {
            *self.named.entry(p).or_default() += n;
        }
        self
    }
}

/// One dump of a job, where it lies in the job's folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDump {
    /// The `dump.json`.
    pub file: PathBuf,
    /// Its path relative to the folder the command was pointed at
    /// (`step0/rank1/dump.json`; the file name alone for a single dump).
    pub relative: PathBuf,
    /// The number of its `step*` folder, when the path is a job root or a step folder.
    pub step: Option<u64>,
    /// The number of its `rank*`/`proc*` folder, when the path is a job root or a step folder.
    pub rank: Option<u64>,
}

/// What a path holds: its dumps in the job order (steps by their number,
/// ranks by their number), and whether it is a whole step or job (a job
/// root or a step folder: each row then names its step and rank).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLayout {
    /// The dumps, in job order.
    pub dumps: Vec<JobDump>,
    /// A job root (`step*/rank*/dump.json`) or a step folder (`rank*/dump.json`).
    pub whole: bool,
}

/// The number a folder's name ends with (`rank12` → 12, `step3` → 3).
fn folder_number(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let digits = &name[name.trim_end_matches(|c: char| c.is_ascii_digit()).len()..];
    digits.parse().ok()
}

/// The folders of `dir` that hold a `dump.json`, by their number, then name.
fn rank_folders(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.join("dump.json").is_file()).collect()).unwrap_or_default();
    found.sort_by(|a, b| (folder_number(a), a).cmp(&(folder_number(b), b)));
    found
}

/// The dumps a path stands for ([`JobLayout`]): the path itself when it is
/// a file; `dump.json` in it (a rank folder); the `dump.json` files one
/// level down (a step folder of `rank*`/`proc*` folders); or two levels
/// down (a job root of `step*` folders). A folder holding none of these
/// stands for its missing `dump.json` (reading it reports the file).
pub fn job_dumps(path: &Path) -> JobLayout {
    let single = |file: PathBuf| {
        let relative = PathBuf::from(file.file_name().unwrap_or(file.as_os_str()));
        JobLayout { dumps: vec![JobDump { file, relative, step: None, rank: None }], whole: false }
    };
    if !path.is_dir() {
        return single(path.to_path_buf());
    }
    let direct = path.join("dump.json");
    if direct.is_file() {
        return single(direct);
    }
    let in_step = |step_dir: &Path, step: Option<u64>, base: &Path| {
        rank_folders(step_dir)
            .into_iter()
            .map(|r| {
                let file = r.join("dump.json");
                let relative = file.strip_prefix(base).map(Path::to_path_buf).unwrap_or_else(|_| file.clone());
                JobDump { rank: folder_number(&r), file, relative, step }
            })
            .collect::<Vec<_>>()
    };
    let ranks = in_step(path, folder_number(path), path);
    if !ranks.is_empty() {
        return JobLayout { dumps: ranks, whole: true };
    }
    let mut steps: Vec<PathBuf> = std::fs::read_dir(path)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("step")))
                .collect()
        })
        .unwrap_or_default();
    steps.sort_by(|a, b| (folder_number(a), a).cmp(&(folder_number(b), b)));
    let dumps: Vec<JobDump> = steps.iter().flat_map(|s| in_step(s, folder_number(s), path)).collect();
    if dumps.is_empty() {
        return single(direct);
    }
    JobLayout { dumps, whole: true }
}

/// The dump files a path stands for, in job order ([`job_dumps`]).
pub fn dump_files(path: &Path) -> Vec<PathBuf> {
    job_dumps(path).dumps.into_iter().map(|d| d.file).collect()
}

/// The one dump file a command reads; `hint` says what to do when the
/// path holds several (one per rank).
pub fn one_file(input: &DumpInput, hint: &str) -> Result<PathBuf, SourceError> {
    let mut files = dump_files(input.path());
    if files.len() > 1 {
        let list: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        return Err(SourceError::selection(input.path(), format!("holds several dumps ({}); {hint}", list.join(", "))));
    }
    Ok(files.remove(0))
}

/// The framework of the dump, from its header and `-f` (the one place
/// where `-f` resolves): the header's when `-f` is the flag that reads it
/// (`-f mindspore` reads MSAdapter's `mindtorch` dumps, as msprobe does),
/// `-f`'s own for a dump without one.
fn resolve_framework(file: &Path, header: &DumpHeader, requested: Framework) -> Result<Framework, SourceError> {
    let Some(f) = header.framework.as_deref() else { return Ok(requested) };
    let dumped = Framework::parse(f);
    let message = match (dumped, dumped.and_then(Framework::adapter)) {
        (Some(d), _) if d.flag() == requested => return Ok(d),
        (Some(d), Some(adapter)) => {
            format!("key \"framework\": {f:?} marks an {adapter} dump, which is read with -f {}, not -f {}", d.flag().as_str(), requested.as_str())
        }
        _ => format!("key \"framework\": the dump was made by {f:?}, but -f {} was given", requested.as_str()),
    };
    Err(SourceError::selection(file, message))
}

/// The folder holding the dump's tensor files: `dump_data_dir` when it
/// exists, else `dump_tensor_data/` beside the dump (dumps move between machines).
fn find_data_dir(file: &Path, header: &DumpHeader) -> Option<PathBuf> {
    let recorded = header.dump_data_dir.as_deref().map(PathBuf::from).filter(|p| p.is_dir());
    let beside = file.parent().map(|p| p.join("dump_tensor_data")).filter(|p| p.is_dir());
    recorded.or(beside).map(|p| std::fs::canonicalize(&p).unwrap_or(p))
}

impl Source {
    /// Indexes `file` and pairs the entries of the calls its framework can
    /// replay and `want` selects, in the order the calls first appear;
    /// resolves the framework from the header and `-f` (`requested`,
    /// [`Source::framework`]) and, for `data_mode` real_data, finds the
    /// tensor folder.
    pub fn open(file: &Path, requested: Framework, data_mode: DataMode, want: &dyn Fn(&ApiName) -> bool) -> Result<(Source, Vec<Group>), SourceError> {
        let (source, calls) = Source::open_calls(file, requested, data_mode, want)?;
        Ok((source, calls.groups()))
    }

    /// [`Source::open`] with the calls in a compact index ([`Calls`]), for
    /// batches over dumps of millions of calls.
    pub fn open_calls(file: &Path, requested: Framework, data_mode: DataMode, want: &dyn Fn(&ApiName) -> bool) -> Result<(Source, Calls), SourceError> {
        // The header may come after the entries: keep what any framework `-f` reads could replay.
        let readable = |name: &ApiName| Framework::ALL.iter().any(|&f| f.flag() == requested && name.prefix.replayable_in(f));
        let mut calls = Calls::default();
        let mut census = Census::default();
        let header = dump::for_each_entry(file, &mut |_| true, &mut |loc| {
            match ApiName::parse_key(&loc.key) {
                Ok((name, direction)) => {
                    census.api_entries += 1;
                    if readable(&name) && want(&name) {
                        calls.push(&loc, &loc.key[..loc.key.len() - direction.as_str().len() - 1], direction);
                    } else if name.prefix.not_replayed().is_some() {
                        *census.named.entry(name.prefix.as_str()).or_default() += 1;
                    }
                }
                Err(_) if !loc.key.starts_with("Module.") && !loc.key.starts_with("Cell.") => census.strays += 1,
                Err(_) => {}
            }
            Ok(())
        })?;
        let framework = resolve_framework(file, &header, requested)?;
        let data_dir = find_data_dir(file, &header);
        if data_mode == DataMode::Real && data_dir.is_none() {
            return Err(SourceError::selection(file, "real_data: no tensor folder found (neither dump_data_dir nor dump_tensor_data/ beside the dump exists)"));
        }
        calls.retain(|name| name.prefix.replayable_in(framework));
        calls.pair();
        census.taken = (0..calls.len()).map(|i| calls.group(i)).map(|g| usize::from(g.forward.is_some()) + usize::from(g.backward.is_some())).sum();
        Ok((Source { file: file.to_path_buf(), header, framework, data_dir, census }, calls))
    }

    /// The framework of the dump: `-f`'s, or the one it reads (`mindtorch`
    /// for an MSAdapter dump read with `-f mindspore`). Its calls are
    /// typed, bridged and rendered for this one.
    pub fn framework(&self) -> Framework {
        self.framework
    }

    /// What the dump's entries are, and how many the command took.
    pub fn census(&self) -> &Census {
        &self.census
    }

    /// The dump file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The folder of the tensor files (absolute), when there is one.
    pub fn data_dir(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }

    /// Reads the entries of a group; it must have a forward entry.
    pub fn read(&self, g: &Group) -> Result<Entries, SourceError> {
        let Some(forward) = &g.forward else {
            return Err(SourceError::selection(&self.file, format!("API {} not found (no key {:?})", g.name, g.name.key(Direction::Forward))));
        };
        Ok(Entries {
            name: g.name.clone(),
            forward: dump::read_entry(&self.file, forward)?,
            backward: g.backward.as_ref().map(|b| dump::read_entry(&self.file, b)).transpose()?,
        })
    }

    /// Types the entries of one call.
    pub fn call(&self, e: &Entries) -> Result<ApiCall, SourceError> {
        ApiCall::from_entries(e.name.clone(), &e.forward, e.backward.as_ref()).map_err(|source| SourceError::Model { file: self.file.clone(), source })
    }

    /// Reads and types the call of a group.
    pub fn read_call(&self, g: &Group) -> Result<ApiCall, SourceError> {
        self.call(&self.read(g)?)
    }

    /// real_data needs a file for every input tensor (and, backward, every
    /// dumped gradient) that exists and resolves inside the tensor folder
    /// (the runtime's one check of the path rule,
    /// `runtime::io::resolve_inside`): a missing file, or a symlink out, is
    /// refused here, before a script or project that would read it is written.
    pub fn check_real_data(&self, call: &ApiCall, direction: Direction) -> Result<(), SourceError> {
        let mut values: Vec<(String, &Arg)> = vec![];
        for (i, a) in call.forward.args.iter().enumerate() {
            values.push((format!("input_args[{i}]"), a));
        }
        for (k, a) in &call.forward.kwargs {
            values.push((format!("input_kwargs.{k}"), a));
        }
        if let (Direction::Backward, Some(b)) = (direction, &call.backward) {
            for (i, a) in b.grad_outputs.iter().enumerate() {
                values.push((format!("backward input[{i}]"), a));
            }
        }
        if let Some((path, _)) = values.iter().find(|(_, a)| a.tensors().iter().any(|t| t.data_name.is_none())) {
            return Err(SourceError::selection(
                &self.file,
                format!("{}: {path} has no data_name; real_data needs a dump made with task \"tensor\" (or use data_mode random_data)", call.name),
            ));
        }
        let Some(dir) = &self.data_dir else { return Ok(()) };
        for name in values.iter().flat_map(|(_, a)| a.tensors()).filter_map(|t| t.data_name.as_deref()) {
            resolve_inside(&dir.join(name)).map_err(|source| SourceError::Tensor { api: call.name.to_string(), source })?;
        }
        Ok(())
    }

    /// Saves the entries as msprobe 8.3.2's extract file: a small dump of
    /// this call, readable by msprobe and by this tool (`extract_api_path`).
    pub fn write_extract(&self, path: &Path, e: &Entries) -> Result<(), SourceError> {
        Ok(extract::write(path, &self.header, self.framework, e)?)
    }

    /// Saves the dump of a minimized call (`replay --minimize`): `e` with
    /// its tensors named as `files` has them, forward only when
    /// `forward_only`, its tensors in `dump_tensor_data/` beside it, the
    /// int arguments the cut changed as `ints` has them.
    pub fn write_minimized(
        &self,
        path: &Path,
        e: &Entries,
        cut: (&[runtime::minimize::Written], &[(ArgAt, i64)]),
        forward_only: bool,
    ) -> Result<(), SourceError> {
        minimized::write(path, self.header.level.clone(), self.framework, e, cut, forward_only)
    }

    /// The call stacks msprobe recorded beside the dump (`stack.json`), or
    /// why there are none (for a note: a missing or malformed file is never
    /// an error).
    pub fn stacks(&self) -> Result<stack::Stacks, stack::StackError> {
        stack::read_stacks(&self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every dump.json under `dir`, recursively.
    fn dumps_under(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dumps_under(&p, out);
            } else if p.file_name().is_some_and(|n| n == "dump.json") {
                out.push(p);
            }
        }
    }

    /// Nothing dropped: in every fixture dump (the repository's and
    /// ../shared's), every API entry is taken as a call that gets rows (a
    /// forward entry to replay from) or is under a prefix never replayed
    /// natively, counted with its reason; and no entry is neither an API
    /// call's nor a module's.
    #[test]
    fn every_entry_of_every_fixture_is_taken() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = vec![];
        dumps_under(&repo.join("tests/fixtures"), &mut files);
        dumps_under(&repo.join("../shared/fixtures"), &mut files);
        assert!(files.len() > 50, "{} fixture dumps", files.len());
        let (mut problems, mut read) = (vec![], 0);
        for file in &files {
            let opened = [Framework::PyTorch, Framework::MindSpore].into_iter().find_map(|f| Source::open(file, f, DataMode::Random, &|_| true).ok());
            let Some((source, groups)) = opened else { continue };
            read += 1;
            let c = source.census();
            if c.taken + c.named.values().sum::<usize>() != c.api_entries || c.strays != 0 {
                problems.push(format!("{}: {c:?}", file.display()));
            }
            for g in groups.iter().filter(|g| g.forward.is_none()) {
                problems.push(format!("{}: {} has no forward entry to replay from", file.display(), g.name));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        // Only deliberately broken fixtures (bad-input tests) fail to open.
        assert!(read * 10 >= files.len() * 9, "{read} of {} fixture dumps opened", files.len());
    }

    #[test]
    fn minus_f_resolves_the_dumps_framework() {
        use Framework::*;
        let r = |f: Option<&str>, requested| {
            let header = DumpHeader { framework: f.map(String::from), ..DumpHeader::default() };
            resolve_framework(Path::new("d.json"), &header, requested).map_err(|e| e.to_string())
        };
        assert_eq!(r(Some("mindtorch"), MindSpore), Ok(MindTorch));
        assert_eq!(r(Some("mindspore"), MindSpore), Ok(MindSpore));
        assert_eq!(r(Some("pytorch"), PyTorch), Ok(PyTorch));
        assert_eq!((r(None, PyTorch), r(None, MindSpore)), (Ok(PyTorch), Ok(MindSpore)));
        assert_eq!(
            r(Some("mindtorch"), PyTorch),
            Err("d.json: key \"framework\": \"mindtorch\" marks an MSAdapter dump, which is read with -f mindspore, not -f pytorch".into())
        );
        assert_eq!(r(Some("pytorch"), MindSpore), Err("d.json: key \"framework\": the dump was made by \"pytorch\", but -f mindspore was given".into()));
        assert_eq!(r(Some("mindspore"), PyTorch), Err("d.json: key \"framework\": the dump was made by \"mindspore\", but -f pytorch was given".into()));
        assert_eq!(r(Some("MindTorch"), MindSpore), Err("d.json: key \"framework\": the dump was made by \"MindTorch\", but -f mindspore was given".into()));
    }

    #[test]
    fn a_header_after_the_entries_still_decides_which_prefixes_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("dump.json");
        let entry = r#"{"input_args": [], "input_kwargs": {}, "output": []}"#;
        let dump = |fw: &str| {
            format!(r#"{{"data": {{"Torch.add.0.forward": {entry}, "Mint.add.0.forward": {entry}, "Tensor.add.0.forward": {entry}}}, "framework": "{fw}"}}"#)
        };
        let names = |fw: &str| {
            std::fs::write(&file, dump(fw)).unwrap();
            let (source, groups) = Source::open(&file, Framework::MindSpore, DataMode::Random, &|_: &ApiName| true).unwrap();
            (source.framework(), groups.iter().map(|g| g.name.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(names("mindtorch"), (Framework::MindTorch, vec!["Torch.add.0".to_string(), "Tensor.add.0".into()]));
        assert_eq!(names("mindspore"), (Framework::MindSpore, vec!["Mint.add.0".to_string(), "Tensor.add.0".into()]));
    }

    #[test]
    fn job_roots_are_read_in_job_order() {
        let dir = tempfile::tempdir().unwrap();
        for folder in ["step10/rank0", "step2/rank10", "step2/rank2", "step2/proc3", "step2/notes", "logs"] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
            if !folder.ends_with("notes") && folder != "logs" {
                std::fs::write(dir.path().join(folder).join("dump.json"), "{}").unwrap();
            }
        }
        let layout = job_dumps(dir.path());
        assert!(layout.whole);
        let got: Vec<(String, Option<u64>, Option<u64>)> = layout.dumps.iter().map(|d| (d.relative.display().to_string(), d.step, d.rank)).collect();
        assert_eq!(
            got,
            [
                ("step2/rank2/dump.json".to_string(), Some(2), Some(2)),
                ("step2/proc3/dump.json".into(), Some(2), Some(3)),
                ("step2/rank10/dump.json".into(), Some(2), Some(10)),
                ("step10/rank0/dump.json".into(), Some(10), Some(0)),
            ]
        );
        let step = job_dumps(&dir.path().join("step2"));
        assert!(step.whole && step.dumps.len() == 3 && step.dumps[0].relative == Path::new("rank2/dump.json") && step.dumps[0].step == Some(2));
        let one = job_dumps(&dir.path().join("step2/rank2/dump.json"));
        assert_eq!((one.whole, one.dumps[0].relative.as_path(), one.dumps[0].step), (false, Path::new("dump.json"), None));
    }

    #[test]
    fn resolves_step_folders() {
        let dir = tempfile::tempdir().unwrap();
        for rank in ["rank1", "rank0"] {
            std::fs::create_dir(dir.path().join(rank)).unwrap();
            std::fs::write(dir.path().join(rank).join("dump.json"), "{}").unwrap();
        }
        let files = dump_files(dir.path());
        assert_eq!(files, vec![dir.path().join("rank0/dump.json"), dir.path().join("rank1/dump.json")]);
        assert_eq!(dump_files(&dir.path().join("rank0")), vec![dir.path().join("rank0/dump.json")]);
        assert!(job_dumps(dir.path()).whole && !job_dumps(&dir.path().join("rank0")).whole);
        let e = one_file(&DumpInput::Extract(dir.path().to_path_buf()), "point at one").unwrap_err().to_string();
        assert!(e.contains("holds several dumps (") && e.contains("rank1/dump.json); point at one"), "{e}");
    }
}
