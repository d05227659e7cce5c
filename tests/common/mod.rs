//! Helpers shared by the integration tests: running op_generate on the
//! fixtures under tests/fixtures and locating the test Python.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use msprobe::config::OpConfig;
use msprobe::model::Framework;
use msprobe::op_generate;
use msprobe::render::Lang;

/// The repository root (integration tests run with it as the working directory).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether this run rewrites golden files and pinned verdicts
/// (`UPDATE_GOLDEN` set). Refused under CI (`CI` set, as `.ci/run` sets it):
/// a CI run that rewrote its own expectations would pass whatever changed.
pub fn update_golden() -> bool {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    assert!(!(update && std::env::var_os("CI").is_some()), "UPDATE_GOLDEN is set under CI (CI is set): golden files are rewritten only by hand, never by CI");
    update
}

/// One generated script: which dump, which API, how.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub framework: Framework,
    /// Dump folder under tests/fixtures, e.g. `pytorch/tensor`.
    pub dump: &'static str,
    pub api: &'static str,
    pub propagation: &'static str,
    pub data_mode: &'static str,
}

impl Case {
    pub const fn new(framework: Framework, dump: &'static str, api: &'static str, propagation: &'static str, data_mode: &'static str) -> Case {
        Case { framework, dump, api, propagation, data_mode }
    }

    /// The script's file name.
    pub fn file_name(&self) -> String {
        format!("{}.{}.py", self.api, self.propagation)
    }

    /// Generates the script into `out` and returns its path.
    pub fn generate(&self, out: &Path) -> PathBuf {
        let files = self.generate_with(out, false);
        assert_eq!(files, vec![out.join(self.file_name())]);
        files.into_iter().next().unwrap()
    }

    /// Generates the script with `--shared-module` into `out`: (the script, the module it imports).
    pub fn generate_shared(&self, out: &Path) -> (PathBuf, PathBuf) {
        let files = self.generate_with(out, true);
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(files[0], out.join(self.file_name()));
        (files[0].clone(), files[1].clone())
    }

    fn generate_with(&self, out: &Path, shared_module: bool) -> Vec<PathBuf> {
        let dump = format!("tests/fixtures/{}/dump.json", self.dump);
        let cfg = serde_json::json!({
            "dump_json_path": dump,
            "api_name": self.api,
            "propagation": self.propagation,
            "data_mode": self.data_mode,
            "random_seed": 42,
            "iter_times": 1,
        });
        let (config, unknown) = OpConfig::from_object(cfg.as_object().unwrap(), Path::new("config_op.json"), &repo()).unwrap();
        assert!(unknown.is_empty());
        let opts = op_generate::Options { shared_module, ..single(self.framework, config, out, Lang::Python) };
        match op_generate::run(&opts) {
            Ok(op_generate::Outcome::Single(done)) => done.files,
            Ok(other) => panic!("{self:?}: {other:?}"),
            Err(e) => panic!("{self:?}: {e}"),
        }
    }
}

/// Options of msprobe's one-API mode for `config`'s api_name, writing into
/// `out`, with the `-f` that reads `framework`'s dumps.
pub fn single(framework: Framework, config: OpConfig, out: &Path, lang: Lang) -> op_generate::Options {
    let name = config.api_name.clone().expect("the test config names an API");
    op_generate::Options {
        framework: framework.flag(),
        config,
        out_dir: out.to_path_buf(),
        lang,
        check: false,
        shared_module: false,
        runtime: None,
        mode: op_generate::Mode::Single(name),
    }
}

/// The Python with torch, MindSpore and numpy that scripts/setup-python-env.sh
/// made; the end-to-end tests cannot run without it.
pub fn python() -> PathBuf {
    match std::env::var_os("MSPROBE_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => panic!(
            "MSPROBE_PYTHON is not set: the end-to-end tests run generated scripts with real torch and MindSpore. \
             Run them through scripts/test.sh, which creates the environment (scripts/setup-python-env.sh) and sets it."
        ),
    }
}

/// msprobe 8.3.2 itself (mindstudio-probe from PyPI, which
/// scripts/setup-python-env.sh installs at `MSPROBE_832`, default
/// msprobe-8.3.2 beside the environment of [`python`], as the set-up puts
/// it wherever `MSPROBE_RS_VENV` or `XDG_CACHE_HOME` move that environment):
/// the oracle wherever the README claims its behaviour. Tests put it on PYTHONPATH.
pub fn msprobe_832() -> PathBuf {
    let beside_venv = || python().ancestors().nth(3).expect("MSPROBE_PYTHON is VENV/bin/python").join("msprobe-8.3.2");
    let path = std::env::var_os("MSPROBE_832").map(PathBuf::from).unwrap_or_else(beside_venv);
    assert!(path.join("msprobe/core/config_check").is_dir(), "msprobe 8.3.2 is not at {} (run scripts/setup-python-env.sh)", path.display());
    path
}

/// msprobe 26.2.0 and what its msprobe.pytorch needs, beside the test
/// Python (scripts/setup-python-env.sh), as a PYTHONPATH.
pub fn msprobe_26() -> String {
    let cache = python().ancestors().nth(3).expect("MSPROBE_PYTHON is VENV/bin/python").to_path_buf();
    let (target, extra) = (cache.join("msprobe-26.2.0"), cache.join("msprobe-26.2.0-pytorch"));
    assert!(target.join("msprobe").is_dir(), "msprobe 26.2.0 is not at {} (run scripts/setup-python-env.sh)", target.display());
    format!("{}:{}", target.display(), extra.display())
}

/// Runs the oracle script `script` (a path under the repository) with
/// `args` in [`python`], msprobe 8.3.2 ([`msprobe_832`]) on PYTHONPATH and a
/// fixed hash seed (8.3.2 iterates sets of strings); it must succeed. Its stdout.
pub fn run_832(script: &str, args: &[&std::ffi::OsStr]) -> String {
    let o = Command::new(python())
        .arg(repo().join(script))
        .args(args)
        .env("PYTHONPATH", msprobe_832())
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "{script} (msprobe 8.3.2) failed ({:?})\nstdout:\n{out}\nstderr:\n{err}", o.status);
    out
}

/// The Python of the MSAdapter test environment (mindspore-dev
/// 2.6.0.dev20250323, mindtorch 0.4.0 and the real torch) that
/// scripts/setup-mindtorch-env.sh made; the MSAdapter script tests cannot
/// run without it.
pub fn mindtorch_python() -> PathBuf {
    match std::env::var_os("MSPROBE_MINDTORCH_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => panic!(
            "MSPROBE_MINDTORCH_PYTHON is not set: the MSAdapter tests run generated scripts under MSAdapter. \
             Run them through scripts/test.sh, which creates the environment (scripts/setup-mindtorch-env.sh) and sets it."
        ),
    }
}

/// The records of one of msprobe's accuracy CSVs, header first: its UTF-8
/// BOM checked, then [`csv_body_records`] of the rest.
pub fn csv_records(text: &str) -> Vec<Vec<String>> {
    let body = text.strip_prefix('\u{feff}').unwrap_or_else(|| panic!("a CSV starts with a UTF-8 BOM: {text:?}"));
    csv_body_records(body)
}

/// The records of a CSV's text after its BOM (as Python reads a file opened
/// with `encoding="utf-8-sig"`), header first, as the `csv` crate reads
/// them, after checking the text is exactly what Python's csv module writes
/// for them (`newline=""`): every record ended by CRLF, cells quoted only
/// where QUOTE_MINIMAL quotes them.
pub fn csv_body_records(body: &str) -> Vec<Vec<String>> {
    let records: Vec<Vec<String>> = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(body.as_bytes())
        .records()
        .map(|r| r.unwrap_or_else(|e| panic!("{e}: {body:?}")).iter().map(str::to_string).collect())
        .collect();
    let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::CRLF).from_writer(vec![]);
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let canonical = String::from_utf8(writer.into_inner().unwrap()).unwrap();
    assert_eq!(body, canonical, "a CSV as Python's csv module writes it (CRLF, minimal quoting)");
    records
}

/// [`csv_records`] of the file at `path`.
pub fn csv_file_records(path: &Path) -> Vec<Vec<String>> {
    csv_records(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// The bytes of a little-endian .npy file of `shape` (C order) holding
/// `data`, whose elements are `descr` (`<f4`, `<i8`, ...).
pub fn npy_bytes(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    bytes
}

/// A float32 .npy file of `shape` holding `values`.
pub fn npy_f32(shape: &[usize], values: &[f32]) -> Vec<u8> {
    npy_bytes("<f4", shape, &values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>())
}

/// The rows of the one `accuracy_checking_details_*.csv` in `dir`, as
/// (API Name, Status, Message), whether it has msprobe's nine columns or eleven.
pub fn detail_rows(dir: &Path) -> Vec<(String, String, String)> {
    let file = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("accuracy_checking_details_"))
        .unwrap();
    let records = csv_file_records(&file);
    let status = records[0].iter().position(|h| h == "Status").unwrap();
    records[1..].iter().map(|cells| (cells[0].clone(), cells[status].clone(), cells[status + 1].clone())).collect()
}

/// Runs `code` as `test_script.py` in `dir` with the `msprobe_rs` package
/// (`python/`) on PYTHONPATH and no rank or binary variables from the
/// caller's environment, then `env`.
pub fn python_in(dir: &Path, code: &str, env: &[(&str, &str)]) -> Output {
    let script = dir.join("test_script.py");
    std::fs::write(&script, code).unwrap();
    let mut cmd = Command::new(python());
    cmd.arg(&script).current_dir(dir).env("PYTHONPATH", repo().join("python")).env("PYTHONDONTWRITEBYTECODE", "1");
    for var in ["RANK", "RANK_ID", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "MSPROBE_BIN"] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// [`python_in`], which must succeed; its stdout.
pub fn run_ok(dir: &Path, code: &str, env: &[(&str, &str)]) -> String {
    let o = python_in(dir, code, env);
    let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "python failed ({:?})\nstdout:\n{out}\nstderr:\n{err}", o.status);
    out
}

/// Runs scripts (each with its extra arguments) through tests/e2e/harness.py
/// with `interpreter`: the frameworks imported once, each script in a
/// process of its own, in an order shuffled by `MSPROBE_E2E_SEED` (taken
/// from the environment, else from the clock, and carried in each line as
/// `seed` so that a failure names the order to rerun). The CSVs go under
/// `out/csv`. Returns each script's JSON line, in the order of `runs`.
pub fn harness(interpreter: &Path, runs: &[(PathBuf, Vec<&str>)], out: &Path) -> Vec<serde_json::Value> {
    let seed = std::env::var("MSPROBE_E2E_SEED").unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        nanos.to_string()
    });
    let mut cmd = Command::new(interpreter);
    cmd.arg(repo().join("tests/e2e/harness.py")).arg(out.join("csv")).env("MSPROBE_E2E_SEED", &seed);
    for (script, args) in runs {
        cmd.arg(std::iter::once(script.to_string_lossy().into_owned()).chain(args.iter().map(|a| a.to_string())).collect::<Vec<_>>().join("::"));
    }
    let output = cmd.current_dir(out).output().expect("start the test Python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "harness failed (MSPROBE_E2E_SEED={seed}): {stdout}\n{stderr}");
    let mut lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // The scripts ran in a shuffled order: back to the order of `runs`.
    lines.sort_by_key(|l| l["index"].as_u64().unwrap());
    assert!(
        lines.len() == runs.len() && lines.iter().enumerate().all(|(i, l)| l["index"] == i),
        "one result per script (MSPROBE_E2E_SEED={seed}):\n{stdout}\n{stderr}"
    );
    lines
}

/// Whether the script sweeps run every item: `MSPROBE_RS_SWEEP=full` (the
/// full sweep, a separate command in the README); otherwise they run the
/// fixed, seeded sample of [`sweep`], which keeps CI within its time.
pub fn sweep_is_full() -> bool {
    std::env::var("MSPROBE_RS_SWEEP").is_ok_and(|v| v == "full")
}

/// The seed of [`sweep`]'s sample: `MSPROBE_RS_SWEEP_SEED`, else a fixed one.
fn sweep_seed() -> u64 {
    std::env::var("MSPROBE_RS_SWEEP_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20261202)
}

/// A script sweep's items: every one under [`sweep_is_full`], else a fixed,
/// seeded sample that keeps one item of each class. `key` gives an item's
/// group and its unique name (`mlp` and `mlp_8.3.2_tensor/Torch.tanh.3.forward.py`);
/// its class is the group and the name's file part without its call
/// counters (`mlp/Torch.tanh.forward.py`): every API of every group, in each
/// direction, still runs; of its repeated calls (and of the group's dumps)
/// one, chosen by the seed (`MSPROBE_RS_SWEEP_SEED` draws another). The
/// order of `items` is kept.
pub fn sweep<T>(items: Vec<T>, key: impl Fn(&T) -> (String, String)) -> Vec<T> {
    if sweep_is_full() {
        return items;
    }
    let seed = sweep_seed();
    let class = |group: &str, name: &str| {
        let file = name.rsplit_once('/').map_or(name, |(_, file)| file);
        let parts: Vec<&str> = file.split('.').filter(|part| part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit())).collect();
        format!("{group}/{}", parts.join("."))
    };
    let mut chosen: std::collections::BTreeMap<String, (u64, usize)> = std::collections::BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let (group, name) = key(item);
        let draw = splitmix(seed ^ fnv1a(name.as_bytes()));
        let slot = chosen.entry(class(&group, &name)).or_insert((draw, i));
        if draw < slot.0 {
            *slot = (draw, i);
        }
    }
    let keep: std::collections::BTreeSet<usize> = chosen.values().map(|&(_, i)| i).collect();
    items.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, item)| item).collect()
}

/// FNV-1a of `bytes`: a stable hash (std's is randomised per process).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// splitmix64's finaliser: the seed's draw for one name.
fn splitmix(x: u64) -> u64 {
    let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Copies the folder `from` (plain files and folders) to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
