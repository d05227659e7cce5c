//! The files a `--check` names (drifted, missing, extra): over a large dump
//! that can be every script, so beyond a few thousand the list goes to an
//! unnamed temporary file and is read back when printed.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many paths stay in memory before the list spills to disk.
const IN_MEMORY: usize = 4096;

/// An append-only list of paths, iterated in the order pushed.
#[derive(Debug, Default)]
pub struct FileList {
    first: Vec<PathBuf>,
    /// The paths after the first [`IN_MEMORY`], one per record (length,
    /// then the UTF-8 bytes of the path as displayed).
    spilled: Option<BufWriter<File>>,
    len: usize,
}

/// A temporary file nobody else can open: removed from its folder at once
/// where the system allows it (it lives on while open), else at drop.
fn unnamed_file() -> Option<File> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(".msprobe-rs-files-{}-{n}", std::process::id()));
    let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path).ok()?;
    let _ = std::fs::remove_file(&path);
    Some(file)
}

impl FileList {
    /// Appends a path.
    pub fn push(&mut self, path: PathBuf) {
        self.len += 1;
        if self.first.len() < IN_MEMORY {
            self.first.push(path);
            return;
        }
        if self.spilled.is_none() {
            match unnamed_file() {
                Some(f) => self.spilled = Some(BufWriter::new(f)),
                None => return self.first.push(path), // no temporary folder: keep it in memory
            }
        }
        let text = path.to_string_lossy();
        let w = self.spilled.as_mut().expect("set above");
        let written = w.write_all(&(text.len() as u64).to_le_bytes()).and_then(|()| w.write_all(text.as_bytes()));
        if written.is_err() {
            // The temporary file is full: keep it in memory.
            self.first.push(path);
        }
    }

    /// How many paths.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The spilled paths, read back from the start of the file.
    fn spilled(&self) -> Box<dyn Iterator<Item = PathBuf> + '_> {
        let Some(w) = &self.spilled else { return Box::new(std::iter::empty()) };
        let reader = w.get_ref().try_clone().and_then(|mut f| f.seek(SeekFrom::Start(0)).map(|_| f));
        let Ok(file) = reader else { return Box::new(std::iter::empty()) };
        let mut r = BufReader::new(file);
        Box::new(std::iter::from_fn(move || {
            let mut len = [0u8; 8];
            r.read_exact(&mut len).ok()?;
            let mut text = vec![0u8; u64::from_le_bytes(len) as usize];
            r.read_exact(&mut text).ok()?;
            Some(PathBuf::from(String::from_utf8(text).ok()?))
        }))
    }

    /// Writes out what is buffered, so that the paths can be read back.
    pub fn seal(&mut self) {
        if let Some(w) = &mut self.spilled {
            // A failed flush leaves the file short; printing then stops early.
            let _ = w.flush();
        }
    }
}

impl<'a> IntoIterator for &'a FileList {
    type Item = PathBuf;
    type IntoIter = Box<dyn Iterator<Item = PathBuf> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.first.iter().cloned().chain(self.spilled()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_order_in_memory_and_beyond() {
        let mut list = FileList::default();
        let paths: Vec<PathBuf> = (0..IN_MEMORY + 10).map(|i| PathBuf::from(format!("out/Tensor.add.{i}.forward.py"))).collect();
        for p in &paths {
            list.push(p.clone());
        }
        list.seal();
        assert_eq!((list.len(), list.first.len(), list.spilled.is_some()), (paths.len(), IN_MEMORY, true));
        assert_eq!(list.into_iter().collect::<Vec<_>>(), paths);
        assert_eq!(list.into_iter().count(), paths.len(), "read twice");
        assert!(FileList::default().is_empty());
    }
}
