//! The entry point of generated Rust repro projects: small builders for the
//! inputs they spell out as code, and a `main` that replays, prints and
//! writes the CSVs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::compare::Status;
use crate::dtype::TDType;
use crate::replay::replay;
use crate::report::write_report;
use crate::spec::{Replay, Spec, TensorSpec};

/// Where a project's tensor files are: `dir`, relative to `base` when given
/// (generated projects pass their manifest folder, so the project and the
/// dump can move together).
pub struct Data {
    dir: Option<PathBuf>,
}

impl Data {
    /// The tensor folder `dir` (joined to `base` when both are given).
    pub fn new(base: Option<&str>, dir: Option<&str>) -> Data {
        let dir = dir.map(|d| match base {
            Some(b) => Path::new(b).join(d),
            None => PathBuf::from(d),
        });
        Data { dir }
    }

    /// A tensor argument: dtype, shape, dumped value range, `requires_grad`,
    /// and its file in the dump (used in real-data mode).
    pub fn tensor(&self, dtype: TDType, shape: &[usize], low: Option<f64>, high: Option<f64>, requires_grad: Option<bool>, file: Option<&str>) -> Spec {
        Spec::Tensor(TensorSpec {
            dtype,
            shape: shape.to_vec(),
            low,
            high,
            requires_grad,
            data: match (&self.dir, file) {
                (Some(d), Some(f)) => Some(d.join(f)),
                (None, Some(f)) => Some(PathBuf::from(f)),
                _ => None,
            },
        })
    }
}

/// Replays `r`, prints one line per compared output, writes the CSVs into
/// `output_dir`; exit status 0 when every row passes, 3 otherwise, 1 when
/// the CSVs cannot be written.
pub fn main(r: &Replay, output_dir: &str) -> ExitCode {
    let rows = replay(r);
    for d in &rows.details {
        let num = |x: Option<f64>| x.map(crate::pyfmt::repr).unwrap_or_else(|| "-".into());
        let note = if d.message.is_empty() { String::new() } else { format!("  ({})", d.message) };
        println!("  {}: {}  cosine={}  max_abs_err={}{note}", d.api_name, d.status.as_str(), num(d.cosine), num(d.max_abs));
    }
    match write_report(Path::new(output_dir), &rows.details, &rows.results) {
        Ok((details, result)) => {
            println!("wrote {}", result.display());
            println!("wrote {}", details.display());
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    }
    if rows.details.iter().all(|d| d.status == Status::Pass) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    }
}
