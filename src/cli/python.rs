//! The one lookup of the Python interpreter the binary runs: for the
//! commands that are mindstudio-probe's ([`super::foreign`]) and for the
//! training environment `config_check -d` lists the packages of.

use std::path::{Path, PathBuf};

/// The Python this binary runs: `python3` (or `python`) beside this binary,
/// where pip put both (the environment it was installed into); else
/// `MSPROBE_PYTHON`; else `python3` on the PATH.
pub fn python() -> PathBuf {
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().and_then(python_in));
    beside.or_else(|| std::env::var_os("MSPROBE_PYTHON").map(PathBuf::from)).unwrap_or_else(|| PathBuf::from("python3"))
}

/// `python3` or `python` in `dir`, when there is one.
fn python_in(dir: &Path) -> Option<PathBuf> {
    ["python3", "python"].iter().map(|name| dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_is_found_only_beside_the_binary() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(python_in(dir.path()), None);
        std::fs::write(dir.path().join(format!("python{}", std::env::consts::EXE_SUFFIX)), "").unwrap();
        assert_eq!(python_in(dir.path()), Some(dir.path().join(format!("python{}", std::env::consts::EXE_SUFFIX))));
    }
}
