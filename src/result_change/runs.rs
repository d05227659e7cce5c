//! One run of the user's training command: a fresh process with RC.md's
//! environment (`MSPROBE_RC_DIR`, `MSPROBE_RC_VARIANT`, `MSPROBE_RC_OPS`,
//! `MSPROBE_RC_FRAMEWORK`, the launch-blocking variables for `sync`) in a temporary folder of its
//! own, its output streamed through as it comes (each line prefixed with
//! the run), and the step files it left there, per rank, in step order.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::error::ResultChangeError;
use super::Options;
use crate::unreadable::Unreadable;

/// What one run changes, from the least to the most intrusive; the
/// spelling is `MSPROBE_RC_VARIANT`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Nothing changed.
    Baseline,
    /// Synchronisation forced: the launch-blocking variables and a host read of each op's output.
    Sync,
    /// No-op forward and (full) backward hooks on every module or cell (msprobe's L0/mix).
    ModuleHooks,
    /// No-op wrappers of the framework's hook-list APIs (msprobe's L1).
    ApiHooks,
}

impl Variant {
    /// The variants compared with the baseline, in run order.
    pub const COMPARED: [Variant; 3] = [Variant::Sync, Variant::ModuleHooks, Variant::ApiHooks];

    /// The spelling in the environment and the verdict.
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Baseline => "baseline",
            Variant::Sync => "sync",
            Variant::ModuleHooks => "module_hooks",
            Variant::ApiHooks => "api_hooks",
        }
    }
}

/// The training command as given after `--`.
#[derive(Debug, Clone)]
pub struct TrainCommand(pub Vec<OsString>);

impl TrainCommand {
    /// The command as one line, for messages.
    pub fn display(&self) -> String {
        self.0.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ")
    }
}

/// The step files of one rank, parsed, step 0 first.
pub type Steps = Vec<Value>;

/// The step files of one run by rank: `MSPROBE_RC_DIR/rank_<r>/` for a
/// rank that knew its number (`RANK`, msrun's `RANK_ID`, `LOCAL_RANK`),
/// else the folder itself as rank 0 (one process).
pub type Ranks = BTreeMap<usize, Steps>;

/// A temporary folder removed when dropped.
struct RunDir(PathBuf);

impl RunDir {
    fn new(run: usize) -> Result<RunDir, ResultChangeError> {
        let ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!("msprobe_result_change_{}_{ns}_{run}", std::process::id()));
        std::fs::create_dir(&path).map_err(Unreadable::at(&path, "cannot create"))?;
        Ok(RunDir(path))
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `command` once as `variant` (run number `run`, 1-based),
/// streaming its stdout and stderr to ours, and returns its step files by
/// rank.
pub fn run_once(opts: &Options, run: usize, variant: Variant) -> Result<Ranks, ResultChangeError> {
    let command = &opts.command;
    let dir = RunDir::new(run)?;
    let (program, args) = command.0.split_first().expect("cli::flags requires a command");
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("MSPROBE_RC_DIR", &dir.0)
        .env("MSPROBE_RC_VARIANT", variant.as_str())
        .env("MSPROBE_RC_FRAMEWORK", opts.framework.as_str())
        .stdin(Stdio::null());
    if opts.ops {
        cmd.env("MSPROBE_RC_OPS", "1");
    } else {
        cmd.env_remove("MSPROBE_RC_OPS");
    }
    if variant == Variant::Sync {
        cmd.env("ASCEND_LAUNCH_BLOCKING", "1").env("CUDA_LAUNCH_BLOCKING", "1");
    }
    let prefix = format!("[run {run} {}] ", variant.as_str());
    let (status, last) = stream(&mut cmd, &prefix).map_err(|source| ResultChangeError::Spawn { command: command.display(), source })?;
    if !status.success() {
        return Err(ResultChangeError::Failed { run, variant: variant.as_str(), command: command.display(), status: status_text(&status), tail: last.tail() });
    }
    let ranks = read_ranks(&dir.0)?;
    if ranks.values().all(Vec::is_empty) {
        return Err(ResultChangeError::NoRecord { run, variant: variant.as_str(), command: command.display() });
    }
    let steps = ranks.values().map(Vec::len).max().unwrap_or(0);
    let plural = |n: usize, noun: &str| if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") };
    let _ = writeln!(std::io::stderr(), "{prefix}finished: {} recorded by {}", plural(steps, "step"), plural(ranks.len(), "rank"));
    Ok(ranks)
}

/// The last non-empty line each stream of a run gave.
#[derive(Default)]
struct LastLines {
    stdout: Option<String>,
    stderr: Option<String>,
}

impl LastLines {
    /// The last line of stderr (else stdout), at most 300 characters.
    fn tail(&self) -> String {
        let line = self.stderr.clone().or_else(|| self.stdout.clone()).unwrap_or_else(|| "(no output)".into());
        line.chars().take(300).collect()
    }
}

/// Spawns `cmd` with its stdout and stderr piped, writes each line of
/// either to our stderr behind `prefix` as it arrives (our stdout is the
/// verdict's), and waits for it.
fn stream(cmd: &mut Command, prefix: &str) -> std::io::Result<(std::process::ExitStatus, LastLines)> {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    // Each stream's pump writes its lines through and returns the last non-empty one.
    let pump = |source: Option<Box<dyn Read + Send>>| {
        let prefix = prefix.to_owned();
        std::thread::spawn(move || {
            let mut last = None;
            for line in source.map(BufReader::new).into_iter().flat_map(|r| r.split(b'\n')).map_while(Result::ok) {
                let text = String::from_utf8_lossy(&line).trim_end_matches('\r').to_owned();
                let _ = writeln!(std::io::stderr().lock(), "{prefix}{text}");
                if !text.trim().is_empty() {
                    last = Some(text.trim().to_owned());
                }
            }
            last
        })
    };
    let out = pump(child.stdout.take().map(|o| Box::new(o) as Box<dyn Read + Send>));
    let err = pump(child.stderr.take().map(|e| Box::new(e) as Box<dyn Read + Send>));
    let status = child.wait()?;
    let last = LastLines { stdout: out.join().unwrap_or(None), stderr: err.join().unwrap_or(None) };
    Ok((status, last))
}

/// `exited with code N` or `was killed by signal N`.
fn status_text(status: &std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with code {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("was killed by signal {signal}");
        }
    }
    "failed".into()
}

/// The step files of a run's folder by rank: each `rank_<r>` folder's,
/// or the folder's own as rank 0; both at once is refused (two recorders
/// that disagree on whether they are ranks).
fn read_ranks(dir: &Path) -> Result<Ranks, ResultChangeError> {
    let mut ranks = Ranks::new();
    for entry in std::fs::read_dir(dir).map_err(Unreadable::at(dir, "cannot read"))? {
        let path = entry.map_err(Unreadable::at(dir, "cannot read"))?.path();
        let rank = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("rank_")).and_then(|r| r.parse::<usize>().ok());
        if let (Some(rank), true) = (rank, path.is_dir()) {
            ranks.insert(rank, read_steps(&path)?);
        }
    }
    let single = read_steps(dir)?;
    match (ranks.is_empty(), single.is_empty()) {
        (true, _) => Ok(Ranks::from([(0, single)])),
        (false, true) => Ok(ranks),
        (false, false) => Err(ResultChangeError::BadStep {
            file: dir.join("step_0.json"),
            expected: "expected step files per rank (rank_<r>/) or for one process, not both: every process of a run must see the same RANK, RANK_ID or LOCAL_RANK variables".into(),
        }),
    }
}

/// `step_<k>.json` of `dir`, k = 0, 1, ... with no gap, parsed.
fn read_steps(dir: &Path) -> Result<Steps, ResultChangeError> {
    let mut steps = Vec::new();
    loop {
        let file = dir.join(format!("step_{}.json", steps.len()));
        if !file.exists() {
            return Ok(steps);
        }
        let text = std::fs::read_to_string(&file).map_err(Unreadable::at(&file, "cannot read"))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| ResultChangeError::BadStep { file: file.clone(), expected: format!("expected ResultChange's JSON: {e}") })?;
        if !value.get("params").is_some_and(Value::is_object) || !value.get("loss_hex").is_some_and(Value::is_string) {
            return Err(ResultChangeError::BadStep { file, expected: "expected the keys \"loss_hex\" and \"params\" of ResultChange".into() });
        }
        steps.push(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_the_last_line_of_stderr_else_stdout() {
        let last = |stderr: Option<&str>, stdout: Option<&str>| LastLines { stderr: stderr.map(Into::into), stdout: stdout.map(Into::into) }.tail();
        assert_eq!(last(Some("RuntimeError: boom"), Some("x")), "RuntimeError: boom");
        assert_eq!(last(None, Some("done")), "done");
        assert_eq!(last(None, None), "(no output)");
    }

    #[test]
    fn ranks_are_read_from_their_folders_or_the_folder_is_rank_0() {
        let dir = tempfile::tempdir().unwrap();
        let step = r#"{"loss_hex": "0x1p+0", "params": {}}"#;
        std::fs::write(dir.path().join("step_0.json"), step).unwrap();
        assert_eq!(read_ranks(dir.path()).unwrap().keys().copied().collect::<Vec<_>>(), [0]);
        for r in [1, 0, 10] {
            std::fs::create_dir(dir.path().join(format!("rank_{r}"))).unwrap();
            std::fs::write(dir.path().join(format!("rank_{r}/step_0.json")), step).unwrap();
        }
        let e = read_ranks(dir.path()).unwrap_err().to_string();
        assert!(e.ends_with("not both: every process of a run must see the same RANK, RANK_ID or LOCAL_RANK variables"), "{e}");
        std::fs::remove_file(dir.path().join("step_0.json")).unwrap();
        let ranks = read_ranks(dir.path()).unwrap();
        assert_eq!(ranks.iter().map(|(r, s)| (*r, s.len())).collect::<Vec<_>>(), [(0, 1), (1, 1), (10, 1)]);
    }
}
