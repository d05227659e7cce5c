//! The binary's half of the library: [`flags`] turns arguments into
//! validated options, [`run`] runs the command, [`printer`] prints, and
//! [`Error`] maps the command's error to the exit code. `main` only calls
//! these and exits with the code they give. No other module imports this one.

pub mod error;
pub mod flags;
pub mod foreign;
pub mod printer;
pub mod python;

pub use error::Error;
use flags::Options;
use runtime::exit;

use crate::{checkpoint, config_check, nan_analyze, op_generate, replay, result_change, single_compare};

/// Runs a validated command, prints its result, and returns the exit code
/// of its outcome (errors are the caller's to print).
pub fn run(options: Options) -> Result<u8, Error> {
    if let Some(path) = runtime::rulebook::check_override().map_err(Error::Rulebook)? {
        eprintln!("msprobe: judging by the rulebook {path} ({}), not the built-in one", runtime::rulebook::OVERRIDE);
    }
    match options {
        Options::OpGenerate { opts, config_input, unknown_keys, quiet } => {
            printer::unknown_keys(&config_input, &unknown_keys);
            Ok(match op_generate::run(&opts)? {
                op_generate::Outcome::Single(done) => {
                    printer::generated(&done, opts.check);
                    done.exit_code()
                }
                op_generate::Outcome::Batch(report) => {
                    printer::batch(&report, opts.check, quiet);
                    report.exit_code(opts.check)
                }
            })
        }
        Options::Replay { opts, top, rank_by } => {
            let report = replay::run(&opts)?;
            printer::replay(&report, top, rank_by);
            Ok(report.exit_code(opts.allow_skip))
        }
        Options::ReplayMerge { opts, top, rank_by, allow_skip } => {
            let report = replay::merge(&opts)?;
            printer::replay(&report, top, rank_by);
            Ok(report.exit_code(allow_skip))
        }
        Options::SingleCompare(opts) => {
            let outcome = single_compare::run(&opts)?;
            printer::single_compare(&outcome);
            Ok(exit::OK)
        }
        Options::NanAnalyze(opts) => {
            printer::nan_analyze(&nan_analyze::run(&opts)?);
            Ok(exit::OK)
        }
        Options::CheckpointCompare { opts } => {
            printer::checkpoint_compared(&checkpoint::run(&opts)?);
            Ok(exit::OK)
        }
        Options::ConfigCheck(opts) => {
            let outcome = config_check::run(&opts)?;
            printer::config_check(&outcome);
            Ok(outcome.exit_code())
        }
        Options::ResultChange(opts) => {
            printer::result_change(&result_change::run(&opts)?);
            Ok(exit::OK)
        }
        Options::Foreign(forward) => Ok(forward.run()?),
    }
}
