//! Resuming a shard: what an earlier run into the same output folder left
//! ([`load`]: a complete part, or a journal whose truncated last line, cut by
//! a kill, is ignored), refused when it was made from another dump or with
//! other options; the journal a run appends each finished call to
//! ([`Journal`]); and the complete part written atomically at the end
//! ([`finish`], the journal then removed).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use runtime::atomic::{write_atomic, WriteError, WriteOptions};

use super::error::ReplayError;
use super::part::{self, CallRecord, Header, Part};
use crate::unreadable::Unreadable;

/// What an earlier run of this shard left.
pub enum Resumed {
    /// Nothing.
    Fresh,
    /// A complete part: nothing is left to replay.
    Complete(Box<Part>),
    /// A journal: the calls it holds, and the length of its complete lines.
    Journal(Vec<CallRecord>, u64),
}

/// The one-line refusal of a part or journal of another job or options.
fn refuse(path: &Path, what: String) -> ReplayError {
    ReplayError::Part { path: path.to_path_buf(), message: format!("{what}; remove it or pick another --output-dir") }
}

/// Reads what the parts folder holds for `ours`'s shard.
pub fn load(parts: &Path, ours: &Header) -> Result<Resumed, ReplayError> {
    let complete = part::part_path(parts, ours.shard, ours.shards);
    if complete.is_file() {
        let text = fs::read_to_string(&complete).map_err(Unreadable::at(&complete, "cannot read"))?;
        let found: Part = serde_json::from_str(&text).map_err(|e| refuse(&complete, format!("not a replay part ({e})")))?;
        if let Some((what, detail)) = found.header.differs(ours, true) {
            return Err(refuse(&complete, format!("{what} ({detail})")));
        }
        return Ok(Resumed::Complete(Box::new(found)));
    }
    let journal = part::journal_path(parts, ours.shard, ours.shards);
    if !journal.is_file() {
        return Ok(Resumed::Fresh);
    }
    let text = fs::read(&journal).map_err(Unreadable::at(&journal, "cannot read"))?;
    // Only lines that end with a newline were written whole.
    let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut lines = text[..whole].split(|&b| b == b'\n').filter(|l| !l.is_empty());
    let Some(first) = lines.next() else { return Ok(Resumed::Fresh) };
    let header: Header = serde_json::from_slice(first).map_err(|e| refuse(&journal, format!("not a replay journal ({e})")))?;
    if let Some((what, detail)) = header.differs(ours, true) {
        return Err(refuse(&journal, format!("{what} ({detail})")));
    }
    let records = lines
        .enumerate()
        .map(|(i, l)| serde_json::from_slice(l).map_err(|e| refuse(&journal, format!("line {}: not a call record ({e})", i + 2))))
        .collect::<Result<Vec<CallRecord>, _>>()?;
    Ok(Resumed::Journal(records, whole as u64))
}

/// The journal of a running shard: one line per finished call, each
/// written with one `write` and flushed, so a kill loses at most the line
/// being written.
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
}

impl Journal {
    /// Starts the journal of `header`'s shard, or continues one whose
    /// complete lines are `keep` bytes long (the truncated rest dropped).
    pub fn open(parts: &Path, header: &Header, keep: Option<u64>) -> Result<Journal, ReplayError> {
        let path = part::journal_path(parts, header.shard, header.shards);
        let err = |source| ReplayError::Write(WriteError { path: path.clone(), source });
        runtime::atomic::create_dir(parts)?;
        let file = match keep {
            Some(len) => {
                let f = OpenOptions::new().write(true).open(&path).map_err(err)?;
                f.set_len(len).map_err(err)?;
                OpenOptions::new().append(true).open(&path).map_err(err)?
            }
            None => {
                let mut f = File::create(&path).map_err(err)?;
                let line = serde_json::to_string(header).expect("a header serialises") + "\n";
                f.write_all(line.as_bytes()).and_then(|_| f.flush()).map_err(err)?;
                OpenOptions::new().append(true).open(&path).map_err(err)?
            }
        };
        Ok(Journal { path, file: Mutex::new(file) })
    }

    /// Appends one finished call.
    pub fn append(&self, record: &CallRecord) -> Result<(), ReplayError> {
        let line = serde_json::to_string(record).expect("a record serialises") + "\n";
        let mut file = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        file.write_all(line.as_bytes()).and_then(|_| file.flush()).map_err(|source| ReplayError::Write(WriteError { path: self.path.clone(), source }))
    }
}

/// Writes the complete part atomically and removes the journal.
pub fn finish(parts: &Path, part: &Part) -> Result<PathBuf, ReplayError> {
    let path = part::part_path(parts, part.header.shard, part.header.shards);
    let text = serde_json::to_string(part).expect("a part serialises") + "\n";
    write_atomic(&path, text.as_bytes(), WriteOptions::REPORT)?;
    let journal = part::journal_path(parts, part.header.shard, part.header.shards);
    match fs::remove_file(&journal) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ReplayError::Write(WriteError { path: journal, source: e })),
        _ => Ok(path),
    }
}
