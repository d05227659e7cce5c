//! Precision standards: how one compared output is judged. `msprobe` is the
//! seed's rule (cosine above a threshold and max absolute error below one);
//! `api` is msprobe's precision checker's per-API, per-dtype standard
//! (binary equality, absolute threshold, ULP, thousandth, benchmark ratio).
//! The generated Python scripts judge with the same rules and messages
//! (`templates/python/_standard.py.tera`); shared cases in
//! `runtime/tests/standard/cases.json` hold both to the same verdicts.

use crate::compare::Status;
use crate::dtype::TDType;

/// The standard a run judges with (`--standard`, config key `standard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Standard {
    /// Cosine above `cosine_threshold` and max absolute error below
    /// `max_abs_err_threshold` (msprobe's op_generate rule; the default).
    #[default]
    Msprobe,
    /// Per API and dtype, msprobe's precision checker's standards.
    Api,
}

impl Standard {
    /// Both standards, in the CLI's order.
    pub const ALL: [Standard; 2] = [Standard::Msprobe, Standard::Api];

    /// The CLI / config spelling: `msprobe`, `api`.
    pub fn as_str(self) -> &'static str {
        match self {
            Standard::Msprobe => "msprobe",
            Standard::Api => "api",
        }
    }
}

/// One output to judge: the values of both sides (and of the reference
/// run, for the benchmark standard) as f64, element for element.
#[derive(Debug, Clone, Copy)]
pub struct Case<'a> {
    /// The dump's API name without the call counter (`Torch.matmul`, `Tensor.__add__`).
    pub api: &'a str,
    /// Whether the output is a gradient (a backward row).
    pub backward: bool,
    /// Whether the op table marks the op as data movement (values must be identical).
    pub exact_op: bool,
    /// The tested side's dtype: it picks the thresholds.
    pub dtype: TDType,
    /// The tested values.
    pub tested: &'a [f64],
    /// The bench values (raised precision).
    pub bench: &'a [f64],
    /// The op run on the CPU in the tested dtype, for the benchmark
    /// standard's ratios; `None` when no such run exists.
    pub reference: Option<&'a [f64]>,
    /// The msprobe standard's cosine threshold.
    pub cosine_threshold: f64,
    /// The msprobe standard's max absolute error threshold.
    pub max_abs_err_threshold: f64,
}

/// A verdict and what it was decided on.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The verdict.
    pub status: Status,
    /// Why it is not a pass (problems joined by `"; "`), or a note, or empty.
    pub message: String,
    /// The rule applied: `cosine and max abs`, `binary equality`,
    /// `absolute threshold`, `ulp`, `thousandth`, `benchmark`.
    pub rule: &'static str,
    /// The rule's own metrics, `name=value` joined by `"; "` (the
    /// `Standard Metrics` column of `--standard api` reports).
    pub metrics: String,
}

/// Judges one output by `standard`.
// Placeholder while the api rules are written: both standards apply the msprobe rule.
pub fn judge(_standard: Standard, case: &Case) -> Judged {
    match crate::compare::compare(case.tested, case.bench) {
        Ok(m) => {
            let (status, message) = m.status(case.cosine_threshold, case.max_abs_err_threshold);
            Judged { status, message, rule: "cosine and max abs", metrics: String::new() }
        }
        Err(e) => Judged { status: Status::Error, message: e.to_string(), rule: "cosine and max abs", metrics: String::new() },
    }
}
