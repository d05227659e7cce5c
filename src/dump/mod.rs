//! The one reader of msprobe `dump.json` files.
//!
//! It streams: the document is never held in memory whole. One structural
//! pass ([`index`], or [`for_each_entry`] handing each location to a
//! callback) finds the header fields and the byte range of every selected
//! entry; each entry is then parsed from its range alone ([`read_entry`],
//! or [`EntryReader`] for many in file order). Memory is bounded by the largest entry parsed, not by
//! the file. Entries that are not selected are checked for structure only
//! (balanced brackets, terminated strings), not parsed. Both msprobe's
//! dump layout (`{"task", "level", "framework", "dump_data_dir", "data": {...}}`)
//! and the extract files of msprobe 8.3.2's op_generate (API keys at the top
//! level, plus `framework` / `real_data_path`) are accepted.

mod index;
pub mod nonfinite;
mod reader;

pub use index::{for_each_entry, index, read_entry, DumpIndex, EntryLoc, EntryReader};
pub use reader::DumpHeader;

use std::path::PathBuf;

/// Why a dump could not be read; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// The file could not be opened or read.
    #[error("{}: cannot read dump: {source}", path.display())]
    Io {
        /// The dump file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid (msprobe-flavoured) JSON or not a dump object.
    #[error("{}: not a valid msprobe dump.json: {message}", path.display())]
    Format {
        /// The dump file.
        path: PathBuf,
        /// serde_json's message, with line and column.
        message: String,
    },
}
