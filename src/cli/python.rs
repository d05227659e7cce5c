//! The one home of the binary's Python-interpreter lookups. Two Pythons
//! matter, and they are looked up differently:
//! - [`training_python`]: the training environment `config_check -d` lists
//!   the packages of, which the user names with `MSPROBE_PYTHON`;
//! - [`probe_python`]: the environment mindstudio-probe is installed in,
//!   which runs the commands that are mindstudio-probe's
//!   ([`super::foreign`]); pip puts it beside this binary.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable naming a Python explicitly.
const PYTHON_ENV: &str = "MSPROBE_PYTHON";

/// The Python of the training environment, for `config_check -d`:
/// `MSPROBE_PYTHON`; else `python3` on the PATH. A Python beside this
/// binary is not asked: msprobe-rs may be installed in a venv other than
/// the one the training runs in.
pub fn training_python() -> PathBuf {
    training_python_from(std::env::var_os(PYTHON_ENV))
}

/// The Python mindstudio-probe runs under, for the foreign commands:
/// `python3` (or `python`) beside this binary, where pip put both (the
/// environment it was installed into); else `MSPROBE_PYTHON`; else
/// `python3` on the PATH.
pub fn probe_python() -> PathBuf {
    let exe_dir = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf));
    probe_python_from(exe_dir.as_deref(), std::env::var_os(PYTHON_ENV))
}

/// [`training_python`] given the value of `MSPROBE_PYTHON`.
fn training_python_from(env: Option<OsString>) -> PathBuf {
    env.map(PathBuf::from).unwrap_or_else(|| PathBuf::from("python3"))
}

/// [`probe_python`] given the binary's folder and the value of
/// `MSPROBE_PYTHON`.
fn probe_python_from(exe_dir: Option<&Path>, env: Option<OsString>) -> PathBuf {
    exe_dir.and_then(python_in).unwrap_or_else(|| training_python_from(env))
}

/// `python3` or `python` in `dir`, when there is one.
fn python_in(dir: &Path) -> Option<PathBuf> {
    ["python3", "python"].iter().map(|name| dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn python_file(dir: &Path) -> PathBuf {
        dir.join(format!("python{}", std::env::consts::EXE_SUFFIX))
    }

    #[test]
    fn a_python_is_found_only_beside_the_binary() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(python_in(dir.path()), None);
        std::fs::write(python_file(dir.path()), "").unwrap();
        assert_eq!(python_in(dir.path()), Some(python_file(dir.path())));
    }

    #[test]
    fn the_training_python_is_msprobe_python_first_then_python3() {
        assert_eq!(training_python_from(Some("/venv/bin/python".into())), PathBuf::from("/venv/bin/python"));
        assert_eq!(training_python_from(None), PathBuf::from("python3"));
    }

    #[test]
    fn the_probe_python_is_beside_the_binary_first_then_msprobe_python_then_python3() {
        let dir = tempfile::tempdir().unwrap();
        let env = || Some(OsString::from("/venv/bin/python"));
        assert_eq!(probe_python_from(Some(dir.path()), env()), PathBuf::from("/venv/bin/python"));
        assert_eq!(probe_python_from(None, None), PathBuf::from("python3"));
        std::fs::write(python_file(dir.path()), "").unwrap();
        assert_eq!(probe_python_from(Some(dir.path()), env()), python_file(dir.path()));
    }
}
