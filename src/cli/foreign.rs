//! Subcommands that are not msprobe-rs's (`compare`, `run_ut`, `parse`,
//! ...) go to mindstudio-probe's `msprobe`, so one `msprobe` on the PATH
//! answers both: the Python beside this binary (the environment pip
//! installed it into) runs mindstudio-probe's console-script entry as pip's
//! own `msprobe` script would, with the command line unchanged, and its
//! exit code becomes ours (README, "Installation").

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};

use super::python::probe_python;

/// The exit code of [`LAUNCHER`] when mindstudio-probe (or its `msprobe`
/// console script) is not installed for the Python that ran it. It also
/// creates the file [`MISSING_ENV`] names, so that mindstudio-probe's own
/// exit 117 is never taken for "not installed".
const NOT_INSTALLED: i32 = 117;

/// The environment variable naming the file the launcher creates when
/// mindstudio-probe is not installed.
const MISSING_ENV: &str = "MSPROBE_RS_FOREIGN_MISSING";

/// Runs mindstudio-probe's `msprobe` console-script entry (8.3.2:
/// `msprobe.msprobe:main`, read from its metadata) as pip's script does:
/// `sys.argv[0]` is `msprobe`, the arguments follow unchanged, and the
/// current folder is not on `sys.path`.
const LAUNCHER: &str = r#"import sys
if sys.path and sys.path[0] == "":
    del sys.path[0]
from importlib import metadata
try:
    eps = [e for e in metadata.distribution("mindstudio-probe").entry_points if e.group == "console_scripts" and e.name == "msprobe"]
except metadata.PackageNotFoundError:
    eps = []
if not eps:
    import os
    open(os.environ["MSPROBE_RS_FOREIGN_MISSING"], "x").close()
    sys.exit(117)
sys.argv[0] = "msprobe"
sys.exit(eps[0].load()())
"#;

/// Why a subcommand could not reach mindstudio-probe.
#[derive(Debug, thiserror::Error)]
pub enum ForeignError {
    /// No mindstudio-probe for this Python.
    #[error("`{command}` is not an msprobe-rs command, and mindstudio-probe (whose msprobe has the other commands) is not installed for {}: pip install mindstudio-probe, or see msprobe --help for msprobe-rs's commands", python.display())]
    NotInstalled {
        /// The subcommand.
        command: String,
        /// The Python that was asked.
        python: PathBuf,
    },
    /// The Python could not be started.
    #[error("`{command}` is not an msprobe-rs command; it goes to mindstudio-probe's msprobe, but {} could not run: {source}", python.display())]
    NoPython {
        /// The subcommand.
        command: String,
        /// The Python that was tried.
        python: PathBuf,
        /// Why it did not start.
        source: std::io::Error,
    },
}

/// A command line for mindstudio-probe's `msprobe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// Every argument after the program name, unchanged (mindstudio-probe
    /// reads `-f FRAMEWORK` and the subcommand by position).
    pub args: Vec<OsString>,
    /// The subcommand, for messages.
    pub command: String,
}

impl Forward {
    /// This process's command line, whose subcommand (the first of
    /// `external`, as clap hands it over) is not ours.
    pub fn from_process(external: &[OsString]) -> Forward {
        let command = external.first().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        Forward { args: std::env::args_os().skip(1).collect(), command }
    }

    /// Runs mindstudio-probe's `msprobe` with these arguments (stdin,
    /// stdout and stderr inherited) and returns its exit code.
    pub fn run(&self) -> Result<u8, ForeignError> {
        let python = probe_python();
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let missing = std::env::temp_dir().join(format!("msprobe-rs-foreign-{}-{nanos}", std::process::id()));
        let status = Command::new(&python).arg("-c").arg(LAUNCHER).args(&self.args).env(MISSING_ENV, &missing).status();
        let not_installed = std::fs::remove_file(&missing).is_ok();
        match status {
            Ok(s) if s.code() == Some(NOT_INSTALLED) && not_installed => Err(ForeignError::NotInstalled { command: self.command.clone(), python }),
            Ok(s) => Ok(exit_code(s)),
            Err(source) => Err(ForeignError::NoPython { command: self.command.clone(), python, source }),
        }
    }
}

/// The child's exit code; a signal `n` is `128 + n`, as shells report it.
fn exit_code(status: ExitStatus) -> u8 {
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return (128 + signal).clamp(0, 255) as u8;
    }
    status.code().map_or(runtime::exit::INTERNAL, |c| c.clamp(0, 255) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launcher_exits_with_the_not_installed_code() {
        assert!(LAUNCHER.contains(&format!("sys.exit({NOT_INSTALLED})")));
    }
}
