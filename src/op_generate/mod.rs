//! The `op_generate` command: config -> dump calls -> scripts (or projects).
//!
//! [`single`] handles one API (msprobe's mode); [`batch`] every API of a
//! dump that a filter and a shard select. Both get their calls from the
//! source layer ([`crate::source`]), render them through one
//! [`Generator`](generator::Generator), and write through
//! [`crate::output::put`].

mod batch;
mod error;
mod file_list;
mod generator;
mod options;
mod single;

pub use batch::BatchReport;
pub use error::GenerateError;
pub use file_list::FileList;
pub use options::{BatchOptions, Mode, Options};
pub use single::Generated;

/// What a run did.
#[derive(Debug)]
pub enum Outcome {
    /// One API.
    Single(Generated),
    /// A batch.
    Batch(BatchReport),
}

/// Runs `op_generate`.
pub fn run(opts: &Options) -> Result<Outcome, GenerateError> {
    match &opts.mode {
        Mode::Single(name) => single::run(opts, name).map(Outcome::Single),
        Mode::Batch(b) => batch::run(opts, b).map(Outcome::Batch),
    }
}
