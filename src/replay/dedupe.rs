//! Identical calls replayed once. Two calls are identical when they have
//! the same API (the op without its call counter), direction, arguments and
//! inputs: the entries' JSON with `data_name` removed and, with real data,
//! the sha256 of every tensor file the entries name.
//!
//! With random data the JSON alone decides: the runtime draws a call's
//! random inputs from the config's seed, the iteration and the tensor's
//! place among the call's arguments (`runtime::inputs::realize`), from the
//! dumped dtype, shape and range, never from the call's name or counter; so
//! identical entries give identical inputs and the same verdict.
//!
//! The key has two stages: the [`class_key`] (no file read) groups the
//! candidates, which `--shard` keeps in one shard; the [`input_key`] adds
//! the tensor files' hashes. A call sharing a verdict keeps its own rows
//! ([`shared_rows`]: its own API name, the Message saying whose verdict).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use runtime::replay::Rows;
use sha2::{Digest, Sha256};

use crate::model::{ApiName, Direction, Framework};

/// A digest in hex (the parts' ids and option sets use it too).
pub(super) fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The size and hex sha256 of a file, read in blocks.
pub fn hash_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = File::open(path)?;
    let (mut hasher, mut buf, mut size) = (Sha256::new(), vec![0u8; 1 << 20], 0u64);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok((size, hex(&hasher.finalize())));
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
}

/// The candidates' key: the API without its counter, the direction, the
/// framework the dump is read as, and the entries' JSON without `data_name`.
pub fn class_key(name: &ApiName, direction: Direction, read_as: Framework, entries: &str) -> String {
    let mut h = Sha256::new();
    for part in [name.prefix.as_str(), ".", &name.op, "\0", direction.as_str(), "\0", read_as.as_str(), "\0", entries] {
        h.update(part.as_bytes());
    }
    hex(&h.finalize())
}

/// The full key: the class key and, for each named tensor file in
/// `data_dir` in order, the sha256 of its bytes, or its name when it
/// cannot be read (the replay then says the same of each: the file is
/// missing); `None` without a tensor folder.
pub fn input_key(class: &str, data_dir: Option<&Path>, names: &[String]) -> Option<String> {
    if names.is_empty() {
        return Some(class.to_string());
    }
    let dir = data_dir?;
    let mut h = Sha256::new();
    h.update(class.as_bytes());
    for name in names {
        match hash_file(&dir.join(name)) {
            Ok((_, file)) => h.update(format!("\0{file}")),
            Err(_) => h.update(format!("\0missing {name}")),
        }
    }
    Some(hex(&h.finalize()))
}

/// `text` with each `from` that is not followed by a digit (so
/// `Torch.add.1` does not match inside `Torch.add.12`) replaced by `to`.
fn rename(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        let after = &rest[i + from.len()..];
        out.push_str(&rest[..i]);
        out.push_str(if after.starts_with(|c: char| c.is_ascii_digit()) { from } else { to });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// How a Message says whose verdict it shares: `shares the verdict of
/// <API> in step S rank R (identical call and inputs)`, without the step
/// and rank for a single dump (`place` `None`).
pub fn note(api: &str, place: Option<(Option<u64>, Option<u64>)>) -> String {
    let mut at = String::new();
    if let Some((step, rank)) = place {
        for (what, n) in [("step", step), ("rank", rank)] {
            if let Some(n) = n {
                at.push_str(&format!(" {what} {n}"));
            }
        }
        if !at.is_empty() {
            at.insert_str(0, " in");
        }
    }
    format!("shares the verdict of {api}{at} (identical call and inputs)")
}

/// The rows of a call that shares the verdict of `from`: `from`'s rows with
/// its name replaced by `to` (and, in Messages, `from`'s tensor folder by
/// the call's own, `dirs`) and each Message ending with `; <note>` (the
/// note alone where the Message was empty).
pub fn shared_rows(rows: &Rows, (from, to): (&str, &str), dirs: Option<(&str, &str)>, note: &str) -> Rows {
    let message = |m: &str| {
        let m = match dirs {
            Some((a, b)) => rename(m, a, b),
            None => m.to_string(),
        };
        match rename(&m, from, to) {
            m if m.is_empty() => note.to_string(),
            m => format!("{m}; {note}"),
        }
    };
    let mut out = Rows { details: rows.details.clone(), results: rows.results.clone() };
    for d in &mut out.details {
        d.api_name = rename(&d.api_name, from, to);
        d.message = message(&d.message);
    }
    for r in &mut out.results {
        r.api_name = rename(&r.api_name, from, to);
        r.message = message(&r.message);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime::compare::Status;
    use runtime::report::{DetailRow, ResultRow};

    #[test]
    fn names_are_replaced_whole_and_the_note_says_where() {
        assert_eq!(rename("Torch.add.1.forward: x; Torch.add.12.forward", "Torch.add.1", "Torch.add.7"), "Torch.add.7.forward: x; Torch.add.12.forward");
        assert_eq!(note("Torch.add.0", None), "shares the verdict of Torch.add.0 (identical call and inputs)");
        assert_eq!(note("Torch.add.0", Some((Some(1), Some(3)))), "shares the verdict of Torch.add.0 in step 1 rank 3 (identical call and inputs)");
        let rows = Rows {
            details: vec![DetailRow::uncompared("Torch.add.1.forward.output.0".into(), Status::Pass, "tested: x; bench: y".into())],
            results: vec![ResultRow { api_name: "Torch.add.1".into(), forward: Some(Status::Pass), backward: None, message: String::new() }],
        };
        let shared = shared_rows(&rows, ("Torch.add.1", "Torch.add.4"), Some(("x", "z")), "N");
        assert_eq!((shared.details[0].api_name.as_str(), shared.details[0].message.as_str()), ("Torch.add.4.forward.output.0", "tested: z; bench: y; N"));
        assert_eq!((shared.results[0].api_name.as_str(), shared.results[0].message.as_str()), ("Torch.add.4", "N"));
    }

    #[test]
    fn keys_ignore_the_counter_and_hash_the_files() {
        let (a, b) = (ApiName::parse("Torch.add.0").unwrap(), ApiName::parse("Torch.add.5").unwrap());
        let k = class_key(&a, Direction::Forward, Framework::PyTorch, "{}");
        assert_eq!(k, class_key(&b, Direction::Forward, Framework::PyTorch, "{}"));
        assert_ne!(k, class_key(&a, Direction::Backward, Framework::PyTorch, "{}"));
        assert_ne!(k, class_key(&a, Direction::Forward, Framework::PyTorch, "[]"));
        let dir = tempfile::tempdir().unwrap();
        for (n, bytes) in [("x.npy", b"1"), ("y.npy", b"1"), ("z.npy", b"2")] {
            std::fs::write(dir.path().join(n), bytes).unwrap();
        }
        let key = |n: &str| input_key(&k, Some(dir.path()), &[n.to_string()]);
        assert_eq!(key("x.npy"), key("y.npy"));
        assert_ne!(key("x.npy"), key("z.npy"));
        assert_ne!(key("missing.npy"), key("other.npy"));
        assert_eq!(key("missing.npy"), key("missing.npy"));
        assert_eq!(input_key(&k, None, &["x.npy".into()]), None);
        assert_eq!(input_key(&k, None, &[]), Some(k.clone()));
    }
}
