//! Replays every committed fuzz input through the fuzz targets' own bodies
//! (`fuzz/src/lib.rs`, compiled here with `#[path]`), on stable and without
//! cargo-fuzz, so that `.ci/run` keeps every crash the fuzzers found fixed:
//! `fuzz/regressions/<target>/*` (one file per crash, kept after its fix)
//! and `fuzz/seeds/<target>/*` (the starting corpora). A body panics on a
//! crash or a broken promise (an error that does not name its file, a
//! tensor whose values do not match its shape). See fuzz/README.md.

#[path = "../fuzz/src/lib.rs"]
mod fuzz_targets;

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, sorted; none when it does not exist.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fuzz_dir().join(kind).join(target))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs every input of `kind` through every target; returns how many ran.
fn replay(kind: &str) -> usize {
    let mut failures = vec![];
    let mut ran = 0;
    for &(target, body) in fuzz_targets::TARGETS {
        for file in inputs(kind, target) {
            let data = std::fs::read(&file).unwrap();
            if std::panic::catch_unwind(|| body(&data)).is_err() {
                failures.push(file.display().to_string());
            }
            ran += 1;
        }
    }
    assert!(failures.is_empty(), "fuzz inputs that still fail (see the panics above):\n{}", failures.join("\n"));
    ran
}

/// Every file below `dir`, counted without the targets' list (a file in a
/// folder no target reads would not be replayed).
fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).map(|p| if p.is_dir() { count_files(&p) } else { 1 }).sum()
}

/// The regression files committed when this test was written: fewer means
/// some were lost.
const COMMITTED_REGRESSIONS: usize = 6;

#[test]
fn every_regression_input_is_handled() {
    let ran = replay("regressions");
    assert_eq!(ran, count_files(&fuzz_dir().join("regressions")), "a file under fuzz/regressions/ was not replayed");
    assert!(ran >= COMMITTED_REGRESSIONS, "{ran} regression inputs replayed, expected at least the {COMMITTED_REGRESSIONS} committed");
}

#[test]
fn every_seed_is_handled() {
    // The seeds are real fixtures: each target must have some, and pass them.
    for &(target, _) in fuzz_targets::TARGETS {
        assert!(!inputs("seeds", target).is_empty(), "fuzz/seeds/{target}/ is empty");
    }
    assert!(replay("seeds") > 0);
}

#[test]
fn regression_folders_name_targets() {
    // A folder for no target would never be replayed.
    let targets: Vec<&str> = fuzz_targets::TARGETS.iter().map(|(t, _)| *t).collect();
    for dir in ["regressions", "seeds"] {
        for entry in std::fs::read_dir(fuzz_dir().join(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(targets.contains(&name.as_str()), "fuzz/{dir}/{name} is no fuzz target (one of {targets:?})");
        }
    }
    // Every target has a cargo-fuzz binary of its name.
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for t in &targets {
        assert!(manifest.contains(&format!("path = \"fuzz_targets/{t}.rs\"")), "fuzz/Cargo.toml has no [[bin]] {t}");
    }
}

#[test]
fn stored_zip_is_a_zip_the_pt_reader_opens() {
    // pt_archive's archive builder: the fixture's own parts make the same tensor.
    let seed = std::fs::read(fuzz_dir().join("seeds/pt_archive/f32.bin")).unwrap();
    let n = usize::from(u16::from_le_bytes([seed[0], seed[1]]));
    let zip = fuzz_targets::stored_zip(&[("a/byteorder", b"little"), ("a/data.pkl", &seed[2..2 + n]), ("a/data/0", &seed[2 + n..])]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f32.pt");
    std::fs::write(&path, zip).unwrap();
    let built = runtime::io::read_pt(&path).unwrap();
    let original = runtime::io::read_pt(Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/tests/data/f32.pt")).unwrap();
    assert_eq!(format!("{built:?}"), format!("{original:?}")); // NaN-holding: compare the printed values
}
