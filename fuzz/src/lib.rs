//! The bodies of the fuzz targets (`fuzz_targets/*.rs` are one-line
//! wrappers), shared with the root test `tests/fuzz_regressions.rs`, which
//! compiles this file with `#[path]` and replays `fuzz/regressions/` and
//! `fuzz/seeds/` through it on stable: a regression input runs exactly the
//! code the fuzzer ran.
//!
//! Each body feeds the bytes to a reader's public entry point the way the
//! commands do, and checks what the readers promise: no panic, no overflow,
//! no huge allocation or hang (libFuzzer's limits), every error one
//! printable line that names the file, every tensor read holding as many
//! values as its shape says, and an extract file's text reading back as the
//! entry it was written from. It depends only on `msprobe`, `runtime` and `serde_json`, so
//! the root crate can compile it without the fuzz crate's dependencies.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use msprobe::config::{DataMode, OpConfig, Overrides};
use msprobe::dump::{self, nonfinite};
use msprobe::model::{ApiCall, ApiName, Direction, Framework};
use msprobe::single_compare::discover::{array_id, numbered, Id};
use msprobe::source::Source;
use runtime::io::{read_tensor, HostTensor, IoError};
use serde_json::Value;

/// Every target: its name (`fuzz_targets/<name>.rs`, `seeds/<name>/`,
/// `regressions/<name>/`) and its body.
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("dump_index", dump_index),
    ("config", config),
    ("npy", npy),
    ("pt", pt),
    ("pt_archive", pt_archive),
    ("pickle", pickle),
    ("single_save_names", single_save_names),
    ("nan_analyze", nan_analyze),
    ("checkpoint", checkpoint),
    ("config_pack", config_pack),
    ("hyperparams", hyperparams),
];

/// A file holding the input, removed when dropped; the readers take paths.
/// Unique per process and call, so parallel tests do not share one.
struct Scratch(PathBuf);

impl Scratch {
    fn new(ext: &str, data: &[u8]) -> Scratch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("msprobe-fuzz-{}-{n}.{ext}", std::process::id()));
        std::fs::write(&path, data).expect("writing the fuzz input to the temp folder");
        Scratch(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// An error message must be one printable line (no newline, escape or other
/// control character, whatever the input held).
fn one_printable_line(message: &str) {
    assert!(!message.is_empty() && !message.chars().any(char::is_control), "the error is not one printable line: {message:?}");
}

/// An error message must be one printable line naming the file it is about.
fn names_file(message: &str, path: &Path) {
    one_printable_line(message);
    let p = path.display().to_string();
    assert!(message.contains(&p), "the error does not name {p}: {message}");
}

/// `dump.json`: the streaming index over arbitrary bytes, every indexed
/// entry parsed from its range, written as an extract file's text and read
/// back, and typed as the model would; then each
/// framework's view through [`Source`], as `op_generate` and `replay` open
/// a dump (index, pair by name, read and type each call, check real data).
pub fn dump_index(data: &[u8]) {
    let file = Scratch::new("json", data);
    let path = file.path();
    match dump::index(path, &mut |_| true) {
        Err(e) => names_file(&e.to_string(), path),
        Ok(idx) => {
            for loc in &idx.entries {
                assert!(loc.start <= loc.end && loc.end <= data.len() as u64, "entry {loc:?} outside the {}-byte file", data.len());
                match dump::read_entry(path, loc) {
                    Err(e) => names_file(&e.to_string(), path),
                    Ok(v) => {
                        // What an extract file holds must read back as the entry.
                        let text = nonfinite::to_msprobe_json(&v);
                        let mut back = String::new();
                        nonfinite::NonFiniteReader::new(text.as_bytes()).read_to_string(&mut back).expect("reading a string");
                        let again: Result<Value, _> = serde_json::from_str(&back);
                        assert!(again.as_ref().is_ok_and(|a| *a == v), "the extract-file text does not read back as the entry: {text}");
                        if let Ok((name, direction)) = ApiName::parse_key(&loc.key) {
                            let typed = match direction {
                                Direction::Forward => ApiCall::from_entries(name, &v, None),
                                Direction::Backward => ApiCall::from_entries(name, &Value::Object(Default::default()), Some(&v)),
                            };
                            if let Err(e) = typed {
                                one_printable_line(&e.to_string());
                            }
                        }
                    }
                }
            }
        }
    }
    for framework in [Framework::PyTorch, Framework::MindSpore] {
        let (source, groups) = match Source::open(path, framework, DataMode::Random, &|_| true) {
            Ok(opened) => opened,
            Err(e) => {
                names_file(&e.to_string(), path);
                continue;
            }
        };
        for g in &groups {
            match source.read_call(g) {
                Ok(call) => {
                    for direction in [Direction::Forward, Direction::Backward] {
                        if let Err(e) = source.check_real_data(&call, direction) {
                            names_file(&e.to_string(), path);
                        }
                    }
                }
                Err(e) => names_file(&e.to_string(), path),
            }
        }
    }
}

/// `config_op.json`: [`OpConfig::load`] (read, JSON, every key validated),
/// then the command line's overrides.
pub fn config(data: &[u8]) {
    let file = Scratch::new("json", data);
    match OpConfig::load(file.path()) {
        Err(e) => names_file(&e.to_string(), file.path()),
        Ok((mut c, _unknown_keys)) => {
            c.apply(&Overrides { data_mode: Some(DataMode::Real), ..Overrides::default() });
            assert_eq!(c.iter_times, 1, "real_data runs once");
        }
    }
}

/// A tensor read must hold as many values as its shape says; an error names the file.
fn check_tensor(result: Result<HostTensor, IoError>, path: &Path) {
    match result {
        Ok(t) => {
            let count = t.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            assert_eq!(count, Some(t.data.len()), "shape {:?} but {} values", t.shape, t.data.len());
            assert!(t.dtype.is_computable(), "a tensor of dtype {:?} was read", t.dtype);
        }
        Err(e) => {
            let message = e.to_string();
            one_printable_line(&message);
            assert!(message.starts_with(&path.display().to_string()), "the error does not start with the file: {message}");
        }
    }
}

/// A `.npy` file (MindSpore's tensor dumps), through `read_tensor` as replay reads it.
pub fn npy(data: &[u8]) {
    let file = Scratch::new("npy", data);
    check_tensor(read_tensor(file.path()), file.path());
}

/// A whole `.pt` file (zip + pickle + storage), through `read_tensor`.
pub fn pt(data: &[u8]) {
    let file = Scratch::new("pt", data);
    check_tensor(read_tensor(file.path()), file.path());
}

/// The `.pt` reader past the zip layer: mutating a real `.pt` mostly breaks
/// its CRCs, so this target builds a valid archive around fuzzed parts. The
/// input is a little-endian `u16` n, then n bytes of `data.pkl`, then the
/// bytes of the storage `data/0`; they are stored uncompressed, as
/// `torch.save` does, with `byteorder` = `little`.
pub fn pt_archive(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else { return };
    let (pkl, storage) = rest.split_at(usize::from(u16::from_le_bytes(*len)).min(rest.len()));
    let zip = stored_zip(&[("archive/byteorder", b"little"), ("archive/data.pkl", pkl), ("archive/data/0", storage)]);
    pt(&zip);
}

/// The pickle interpreter alone, on the bytes of a `data.pkl`.
pub fn pickle(data: &[u8]) {
    if let Err(e) = runtime::io::check_tensor_pickle(data) {
        one_printable_line(&e);
    }
}

/// A Megatron `model_optim_rng.pt` past the zip layer, as the checkpoint
/// compare reads it: the input is a little-endian `u16` n, n bytes of
/// `data.pkl`, then storage bytes, stored as `archive/data/0` to
/// `archive/data/31`. The pickle runs in the interpreter's checkpoint mode
/// alone, then through `read_pt_index`, and every tensor it lists is read:
/// as many values as its shape says, or an error naming the file.
pub fn checkpoint(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else { return };
    let (pkl, storage) = rest.split_at(usize::from(u16::from_le_bytes(*len)).min(rest.len()));
    if let Err(e) = runtime::io::check_checkpoint_pickle(pkl) {
        one_printable_line(&e);
    }
    let keys: Vec<String> = (0..32).map(|k| format!("archive/data/{k}")).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("archive/byteorder", b"little"), ("archive/data.pkl", pkl)];
    entries.extend(keys.iter().map(|k| (k.as_str(), storage)));
    let file = Scratch::new("pt", &stored_zip(&entries));
    match runtime::io::read_pt_index(file.path()) {
        Err(e) => names_file(&e.to_string(), file.path()),
        Ok(index) => {
            for (name, t) in &index.tensors {
                match t.read_f32() {
                    Ok(v) => assert_eq!(Some(v.len()), t.shape().iter().try_fold(1usize, |a, &d| a.checked_mul(d)), "{name}: shape {:?}", t.shape()),
                    Err(e) => names_file(&e.to_string(), file.path()),
                }
            }
        }
    }
}

/// A zip archive of uncompressed entries (the local headers, the central
/// directory and its end record; no zip64, the entries are small).
pub fn stored_zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    fn u16le(out: &mut Vec<u8>, v: usize) {
        out.extend_from_slice(&(v as u16).to_le_bytes());
    }
    fn u32le(out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, body) in entries {
        let offset = out.len() as u32;
        let crc = crc32(body);
        // Local file header: version 2.0, no flags, stored, no time.
        u32le(&mut out, 0x0403_4b50);
        out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        u32le(&mut out, crc);
        u32le(&mut out, body.len() as u32);
        u32le(&mut out, body.len() as u32);
        u16le(&mut out, name.len());
        u16le(&mut out, 0);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(body);
        // Its central directory record.
        u32le(&mut central, 0x0201_4b50);
        central.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        u32le(&mut central, crc);
        u32le(&mut central, body.len() as u32);
        u32le(&mut central, body.len() as u32);
        u16le(&mut central, name.len());
        central.extend_from_slice(&[0; 12]); // extra, comment, disk, attributes
        u32le(&mut central, offset);
        central.extend_from_slice(name.as_bytes());
    }
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&central);
    u32le(&mut out, 0x0605_4b50);
    out.extend_from_slice(&[0, 0, 0, 0]);
    u16le(&mut out, entries.len());
    u16le(&mut out, entries.len());
    u32le(&mut out, central.len() as u32);
    u32le(&mut out, cd_offset);
    u16le(&mut out, 0);
    out
}

/// CRC-32 (IEEE), as zip stores it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// SingleSave names (`single_compare`'s discovery): the first line is a key
/// (tag), every other line a folder or file name. A `step`/`rank`/
/// `micro_step` number parses only from `<prefix><ASCII digits>` and gives
/// that number back, else the error is one printable line; a file's id is
/// `None` exactly for names that are no `<stem>.npy`, spells the name back
/// (`<tag>.npy`, `<tag>.<id>.npy` or the name itself), and no two names of one
/// key get the same id but `<tag>.npy` and `<tag>.0.npy` (both 0).
pub fn single_save_names(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let tag = lines.next().unwrap_or_default();
    let mut seen: std::collections::HashMap<Id, &str> = std::collections::HashMap::new();
    for name in lines {
        for prefix in ["step", "rank", "micro_step"] {
            match numbered(name, prefix) {
                None => assert!(!name.starts_with(prefix), "{name:?}"),
                Some(Ok(n)) => {
                    let digits = &name[prefix.len()..];
                    assert!(digits.bytes().all(|b| b.is_ascii_digit()) && digits.parse() == Ok(n), "{name:?} -> {n}");
                    assert_eq!(numbered(&format!("{prefix}{n}"), prefix), Some(Ok(n)));
                }
                Some(Err(message)) => one_printable_line(&message),
            }
        }
        let id = array_id(tag, name);
        assert_eq!(id.is_none(), !name.ends_with(".npy") || name == ".npy", "{tag:?} {name:?}");
        let Some(id) = id else { continue };
        one_printable_line(&id.to_string());
        let spelled = match &id {
            Id::Index(0) if name == format!("{tag}.npy") => true,
            Id::Index(n) => name == format!("{tag}.{n}.npy"),
            Id::Name(s) => !s.is_empty() && name == format!("{tag}.{s}.npy"),
            // Not `<tag>.npy`, nor `<tag>.<rest>.npy` with a non-empty rest.
            Id::File(f) => f == name && name != format!("{tag}.npy") && !(name.starts_with(&format!("{tag}.")) && name.len() > tag.len() + ".x.npy".len() - 1),
        };
        assert!(spelled, "{tag:?} {name:?} -> {id:?}");
        if let Some(other) = seen.insert(id.clone(), name) {
            // A tensor and a list's first element are both id 0, as in msprobe.
            let zero = [format!("{tag}.npy"), format!("{tag}.0.npy")];
            assert!(
                other == name || (zero.contains(&other.to_string()) && zero.contains(&name.to_string())),
                "{other:?} and {name:?} of key {tag:?} have the id {id:?}"
            );
        }
    }
}

/// A folder removed when dropped (as [`Scratch`], for the readers that take a folder).
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `nan_analyze`'s readers: the bytes as `construct.json` (an error names
/// the file; a chain ends, also on cycles) and as `stack.json` (both views:
/// msprobe's lookup and the typed frames; an error is one line),
/// then as the `dump.json` of two ranks of a step analysed whole (an error
/// names a file of the step; a report reads back as JSON with msprobe's
/// tokens).
pub fn nan_analyze(data: &[u8]) {
    use msprobe::nan_analyze::{self, construct::Construct};
    use msprobe::source::stack::{StackFile, Stacks};
    let path = Path::new("fuzz/construct.json");
    match Construct::parse(path, data) {
        Ok(c) => {
            let chain = c.chain("Torch.add.0.forward");
            assert_eq!(chain.last().map(String::as_str), Some("Torch.add.0.forward"));
        }
        Err(e) => names_file(&e.to_string(), path),
    }
    match StackFile::parse(data) {
        Ok(s) => {
            _ = s.frames_of("Torch.add.0.forward");
            _ = Stacks::from_file(&s).frames("Torch.add.0.forward");
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = ScratchDir(std::env::temp_dir().join(format!("msprobe-fuzz-nan-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))));
    let step = dir.0.join("step0");
    for rank in ["rank0", "rank1"] {
        std::fs::create_dir_all(step.join(rank)).expect("creating the scratch step");
        std::fs::write(step.join(rank).join("dump.json"), data).expect("writing the fuzz input");
        std::fs::write(step.join(rank).join("construct.json"), "{}").expect("writing construct.json");
        std::fs::write(step.join(rank).join("stack.json"), "{}").expect("writing stack.json");
    }
    match nan_analyze::run(&nan_analyze::Options { input: step.clone(), output: dir.0.join("out") }) {
        Ok(outcome) => {
            if let Some(report) = outcome.report {
                let text = std::fs::read(&report).expect("the report was written");
                let v: Value = serde_json::from_reader(nonfinite::NonFiniteReader::new(text.as_slice())).expect("the report is msprobe JSON");
                assert!(v.as_object().is_some_and(|o| !o.is_empty()), "the report holds ranks");
            }
        }
        Err(e) => names_file(&e.to_string(), &step),
    }
}

/// `config_check -c`: the bytes as a pack (a zip), read with every entry
/// validated before it is decompressed, then compared with itself by
/// every check: an error names the pack, a table's rows are as wide as its
/// header.
pub fn config_pack(data: &[u8]) {
    use msprobe::config_check::{compare, pack};
    let file = Scratch::new("zip", data);
    match pack::read(file.path()) {
        Err(e) => names_file(&e.to_string(), file.path()),
        Ok(p) => match compare::checks(&p, &p) {
            Err(e) => names_file(&e.to_string(), file.path()),
            Ok(checks) => {
                for c in checks {
                    assert!(c.table.rows.iter().all(|r| r.len() == c.table.header.len()), "{}: a row is not as wide as the header", c.name);
                }
            }
        },
    }
}

/// `config_check -d`: the bytes as a launch script and as a YAML config;
/// the shell reader never fails, the YAML reader's errors are one line.
pub fn hyperparams(data: &[u8]) {
    use msprobe::config_check::{shell, yaml};
    let text = String::from_utf8_lossy(data);
    let _ = shell::parse(&text);
    match yaml::parse(&text) {
        Ok(node) => _ = yaml::flatten(&node),
        Err(e) => one_printable_line(&e),
    }
}
