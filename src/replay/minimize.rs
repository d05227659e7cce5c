//! `replay --minimize`: every call the replay judged `error` shrunk to the
//! least data that still fails ([`runtime::minimize`]), and written as a
//! repro of its own under `<output>/minimized/<Prefix.op.N>/`: a dump of
//! the one call (`dump.json`, the cut tensors in `dump_tensor_data/`), its
//! `config_op.json`, and the script `op_generate -i` of that config
//! writes. `minimize_<stamp>.csv` lists every call: elements before and
//! after, replays used, each input's window, or why it kept its size.

use std::path::{Path, PathBuf};

use runtime::compare::Status;
use runtime::minimize::{minimize, Minimized, Outcome, Slot};
use runtime::replay::Rows;
use runtime::spec::Spec;

use super::error::ReplayError;
use super::options::{Options, Scope};
use crate::bridge;
use crate::config::{DataMode, DumpInput, OpConfig};
use crate::model::{ApiName, Direction};
use crate::output;
use crate::paths;
use crate::render::{PythonContext, Renderer};
use crate::source::{self, ArgAt, Source, SourceError};

/// One failing call, minimized or not.
#[derive(Debug)]
pub struct MinimizedCall {
    /// `Prefix.op.N`.
    pub api: String,
    /// The direction the minimized call replays (forward when its forward failed).
    pub direction: Direction,
    /// What the search found.
    pub found: Box<Minimized>,
    /// The repro's folder, when the call got smaller.
    pub folder: Option<PathBuf>,
    /// The repro's script, or why none was written.
    pub script: Result<PathBuf, String>,
}

/// What `--minimize` did.
#[derive(Debug)]
pub struct MinimizeReport {
    /// Every failing call.
    pub calls: Vec<MinimizedCall>,
    /// `minimize_<stamp>.csv`.
    pub file: PathBuf,
}

/// The columns of `minimize_<stamp>.csv`.
const HEADER: &[&str] = &["API Name", "Direction", "Status", "Elements Before", "Elements After", "Replays", "Slices", "Repro", "Message"];

/// Minimizes the calls of `rows` judged `error`, each within `budget`
/// replays, and writes their repros and the table into the output folder.
pub(super) fn run(opts: &Options, rows: &Rows, budget: u32) -> Result<MinimizeReport, ReplayError> {
    let file = dump_file(opts)?;
    let failing: Vec<ApiName> = rows
        .results
        .iter()
        .filter(|r| r.forward == Some(Status::Error) || r.backward == Some(Status::Error))
        .filter_map(|r| ApiName::parse(&r.api_name).ok())
        .collect();
    let (source, groups) = Source::open(&file, opts.framework, DataMode::Real, &|n| failing.contains(n))?;
    let mut calls = vec![];
    for g in &groups {
        let entries = source.read(g)?;
        let call = source.call(&entries)?;
        let direction = if entries.has_backward() && opts.propagation != Some(Direction::Forward) { Direction::Backward } else { Direction::Forward };
        let replay = bridge::to_replay(&call, source.framework(), &opts.config, direction, source.data_dir(), !opts.emulate);
        let folder = opts.output_dir.join("minimized").join(g.name.to_string());
        let tensors = folder.join("dump_tensor_data");
        let found = match minimize(&replay, budget, &opts.limits, &tensors).map_err(|e| ReplayError::Input { api: g.name.to_string(), source: e })? {
            Outcome::Passing(_) => continue,
            Outcome::Failing(m) => m,
        };
        let direction = if found.call.grad_outputs.is_some() { Direction::Backward } else { Direction::Forward };
        if found.kept.is_some() {
            let _ = std::fs::remove_dir_all(&folder);
            calls.push(MinimizedCall { api: g.name.to_string(), direction, found, folder: None, script: Err("kept its size".into()) });
            continue;
        }
        let dump = folder.join("dump.json");
        source.write_minimized(&dump, &entries, (&found.written, &counts(&found)), direction == Direction::Forward)?;
        let config = OpConfig {
            input: DumpInput::Dump { path: dump.clone(), extract_to: None },
            api_name: Some(g.name.clone()),
            propagation: direction,
            data_mode: DataMode::Real,
            iter_times: 1,
            ..opts.config.clone()
        };
        let config_path = folder.join("config_op.json");
        output::write(&config_path, serde_json::to_string_pretty(&config.to_json("dump.json")).unwrap_or_default().as_bytes())?;
        let script = script(opts, &folder, &config_path);
        calls.push(MinimizedCall { api: g.name.to_string(), direction, found, folder: Some(folder), script });
    }
    let table: Vec<Vec<String>> = calls.iter().map(row).collect();
    let file = runtime::report::write_table(&opts.output_dir, "minimize", HEADER, &table)?;
    Ok(MinimizeReport { calls, file })
}

/// The int arguments the cut changed, where the forward entry has them.
fn counts(m: &Minimized) -> Vec<(ArgAt, i64)> {
    m.counts
        .iter()
        .filter_map(|&slot| {
            let Some(Spec::Int(v)) = slot.spec(&m.call) else { return None };
            let at = match slot {
                Slot::Arg(i) => ArgAt::Positional(i),
                Slot::Kwarg(i) => ArgAt::Keyword(m.call.kwargs.get(i)?.0.clone()),
                _ => return None,
            };
            Some((at, *v))
        })
        .collect()
}

/// The one dump `--minimize` reads: the config's, or `--dump`'s when it is
/// one rank's (a job of several ranks is minimized rank by rank).
fn dump_file(opts: &Options) -> Result<PathBuf, ReplayError> {
    let input = match &opts.scope {
        Scope::One(_) => opts.config.input.clone(),
        Scope::Many(_) => DumpInput::Dump { path: opts.config.input.path().to_path_buf(), extract_to: None },
    };
    Ok(source::one_file(&input, "--minimize takes one rank's dump: point --dump at its dump.json or rank folder")?)
}

/// Writes the script `op_generate -i config_op.json -o FOLDER` writes for
/// the minimized call, from the same config and dump, so that op_generate
/// regenerates it byte for byte; or says why there is none.
fn script(opts: &Options, folder: &Path, config_path: &Path) -> Result<PathBuf, String> {
    let text = |e: &dyn std::fmt::Display| e.to_string();
    let (config, _) = OpConfig::load(config_path).map_err(|e| text(&e))?;
    let name = config.api_name.clone().ok_or("no api_name")?;
    let (source, groups) = Source::open(config.input.path(), opts.framework, DataMode::Real, &|n| *n == name).map_err(|e: SourceError| text(&e))?;
    let group = groups.first().ok_or("the minimized dump holds no call")?;
    let call = source.read_call(group).map_err(|e| text(&e))?;
    let out_abs = paths::absolute(folder);
    let dump = paths::refer(&out_abs, &paths::absolute(source.file()));
    let data_dir = source.data_dir().map(|d| paths::refer(&out_abs, d));
    let ctx = PythonContext::new(&call, source.framework(), &config, config.propagation, data_dir.as_ref(), &dump.text).map_err(|e| text(&e))?;
    let (rel, script) = Renderer::new().and_then(|r| r.python(source.framework(), &ctx)).map_err(|e| text(&e))?;
    let path = folder.join(rel);
    output::write(&path, script.as_bytes()).map_err(|e| text(&e))?;
    Ok(path)
}

/// A call's row of `minimize_<stamp>.csv`.
fn row(c: &MinimizedCall) -> Vec<String> {
    let m = &c.found;
    let status = if m.kept.is_some() { "kept size" } else { "minimized" };
    let repro = match (&c.folder, &c.script) {
        (Some(_), Ok(script)) => script.display().to_string(),
        (Some(folder), Err(_)) => folder.display().to_string(),
        (None, _) => String::new(),
    };
    let message = match (&m.kept, &c.script) {
        (Some(why), _) => why.clone(),
        (None, Err(why)) => format!("no script: {why}"),
        (None, Ok(_)) => {
            m.rows.details.iter().filter(|d| d.status == Status::Error).map(|d| format!("{}: {}", d.api_name, d.message)).collect::<Vec<_>>().join("; ")
        }
    };
    vec![
        c.api.clone(),
        c.direction.as_str().into(),
        status.into(),
        m.before.to_string(),
        m.after.to_string(),
        m.replays.to_string(),
        m.slices.join(" "),
        repro,
        message,
    ]
}
