//! One run of the user's training command: a fresh process with RC.md's
//! environment (`MSPROBE_RC_DIR`, `MSPROBE_RC_VARIANT`, `MSPROBE_RC_OPS`,
//! the launch-blocking variables for `sync`) in a temporary folder of its
//! own, and the step files it left there, read in step order.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::error::ResultChangeError;
use crate::unreadable::Unreadable;

/// What one run changes, from the least to the most intrusive; the
/// spelling is `MSPROBE_RC_VARIANT`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Nothing changed.
    Baseline,
    /// Synchronisation forced: the launch-blocking variables and a host read of each op's output.
    Sync,
    /// No-op forward and full backward hooks on every module (msprobe's L0/mix).
    ModuleHooks,
    /// No-op wrappers of torch's APIs (msprobe's L1).
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

/// The step files of one run, parsed, step 0 first.
pub type Steps = Vec<Value>;

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

/// Runs `command` once as `variant` (run number `run`, 1-based) and
/// returns its step files.
pub fn run_once(command: &TrainCommand, run: usize, variant: Variant, ops: bool) -> Result<Steps, ResultChangeError> {
    let dir = RunDir::new(run)?;
    let (program, args) = command.0.split_first().expect("cli::flags requires a command");
    let mut cmd = Command::new(program);
    cmd.args(args).env("MSPROBE_RC_DIR", &dir.0).env("MSPROBE_RC_VARIANT", variant.as_str()).stdin(Stdio::null());
    if ops {
        cmd.env("MSPROBE_RC_OPS", "1");
    } else {
        cmd.env_remove("MSPROBE_RC_OPS");
    }
    if variant == Variant::Sync {
        cmd.env("ASCEND_LAUNCH_BLOCKING", "1").env("CUDA_LAUNCH_BLOCKING", "1");
    }
    let output = cmd.output().map_err(|source| ResultChangeError::Spawn { command: command.display(), source })?;
    if !output.status.success() {
        return Err(ResultChangeError::Failed {
            run,
            variant: variant.as_str(),
            command: command.display(),
            status: status_text(&output.status),
            tail: tail(&output.stderr, &output.stdout),
        });
    }
    let steps = read_steps(&dir.0)?;
    if steps.is_empty() {
        return Err(ResultChangeError::NoRecord { run, variant: variant.as_str(), command: command.display() });
    }
    Ok(steps)
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

/// The last non-empty line of stderr (else stdout), at most 300 characters.
fn tail(stderr: &[u8], stdout: &[u8]) -> String {
    let last = |bytes: &[u8]| String::from_utf8_lossy(bytes).lines().map(str::trim).rfind(|l| !l.is_empty()).map(str::to_owned);
    let line = last(stderr).or_else(|| last(stdout)).unwrap_or_else(|| "(no output)".into());
    line.chars().take(300).collect()
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
        assert_eq!(tail(b"a\nRuntimeError: boom\n\n", b"x"), "RuntimeError: boom");
        assert_eq!(tail(b"", b"done\n"), "done");
        assert_eq!(tail(b"", b""), "(no output)");
    }
}
