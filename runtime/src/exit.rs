//! Every exit code of the binary, of the generated Rust projects and of the
//! generated Python scripts (rendered into them from here), decided here
//! and nowhere else (README, "Exit codes"). The same code means the same
//! thing everywhere.

use crate::compare::Status;

/// Everything passed (warnings included) / every file was written.
pub const OK: u8 = 0;
/// `--check` found generated files that differ from the dump.
pub const DRIFT: u8 = 1;
/// A bad command line (clap uses 2 for its own errors too).
pub const USAGE: u8 = 2;
/// Some row is an `error`: the device's result is inaccurate.
pub const INACCURATE: u8 = 3;
/// An unreadable or malformed input: the dump, a tensor file, or a dump
/// that lacks what was asked.
pub const INPUT: u8 = 4;
/// An output could not be written.
pub const WRITE: u8 = 5;
/// A bug in this tool (a template failed to render, a script crashed).
pub const INTERNAL: u8 = 6;
/// An invalid `config_op.json`.
pub const CONFIG: u8 = 7;
/// No row is an `error`, but some are `skip`: calls the tool could not
/// replay (`--allow-skip` makes this 0).
pub const SKIPPED: u8 = 8;
/// `config_check -c`: the packs differ in a required check (env, pip,
/// hyperparameters, weights, dataset is an `error`).
pub const PACKS_DIFFER: u8 = 9;

/// The exit code of a run whose rows have these statuses: an `error`
/// anywhere wins, then a `skip` (unless `allow_skip`), else [`OK`].
pub fn for_statuses(statuses: impl IntoIterator<Item = Status>, allow_skip: bool) -> u8 {
    match statuses.into_iter().max() {
        Some(Status::Error) => INACCURATE,
        Some(Status::Skip) if !allow_skip => SKIPPED,
        _ => OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_means_one_thing() {
        let mut codes = [OK, DRIFT, USAGE, INACCURATE, INPUT, WRITE, INTERNAL, CONFIG, SKIPPED, PACKS_DIFFER];
        codes.sort_unstable();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn error_beats_skip_beats_warning() {
        use Status::*;
        assert_eq!(for_statuses([Pass, Warning], false), OK);
        assert_eq!(for_statuses([Pass, Skip, Warning], false), SKIPPED);
        assert_eq!(for_statuses([Skip], true), OK);
        assert_eq!(for_statuses([Skip, Error, Pass], true), INACCURATE);
        assert_eq!(for_statuses([], false), OK);
    }
}
