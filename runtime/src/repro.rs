//! The entry point of generated Rust repro projects: small builders for the
//! inputs they spell out as code, and a `main` that replays, prints and
//! writes the CSVs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::dtype::TDType;
use crate::exit;
use crate::replay::replay;
use crate::report::{ranked_table, write_report};
use crate::spec::{Replay, Spec, TensorSpec};

/// Where a project's tensor files are: their paths are relative to `base`
/// (generated projects pass their manifest folder, so the project and the
/// dump can move together) unless absolute.
pub struct Data {
    base: PathBuf,
}

impl Data {
    /// Tensor files relative to `base`.
    pub fn new(base: &str) -> Data {
        Data { base: PathBuf::from(base) }
    }

    /// A tensor argument: dtype, shape, dumped value range, `requires_grad`,
    /// and its file in the dump (used in real-data mode).
    pub fn tensor(&self, dtype: TDType, shape: &[usize], low: Option<f64>, high: Option<f64>, requires_grad: Option<bool>, file: Option<&str>) -> Spec {
        Spec::Tensor(TensorSpec { dtype, shape: shape.to_vec(), low, high, requires_grad, data: file.map(|f| self.base.join(f)) })
    }
}

/// Replays `r`, prints the ranked table, writes the CSVs into
/// `output_dir`; exits with the codes of [`crate::exit`]: 0 when no row is
/// an error or a skip (or only skips, with `--allow-skip` on the command
/// line), 3 some error, 8 some skip, 4 a broken input (no CSV), 5 the CSVs
/// cannot be written.
pub fn main(r: &Replay, output_dir: &str) -> ExitCode {
    let rows = match replay(r) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit::INPUT);
        }
    };
    print!("{}", ranked_table(&rows.details, 0, crate::report::RankBy::Error));
    match write_report(Path::new(output_dir), &rows.details, &rows.results, r.standard) {
        Ok((details, result)) => {
            println!("wrote {}", result.display());
            println!("wrote {}", details.display());
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit::WRITE);
        }
    }
    let allow_skip = std::env::args().skip(1).any(|a| a == "--allow-skip");
    ExitCode::from(exit::for_statuses(rows.details.iter().map(|d| d.status), allow_skip))
}
