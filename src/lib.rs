//! msprobe-rs: turns API calls recorded in an msprobe `dump.json` into
//! standalone repro scripts, replays them natively, and reimplements
//! msprobe's other offline commands without Python.
//!
//! The layers, from the bottom up; data flows one way and no module reaches
//! back up:
//! - [`dump`] (the streaming reader of `dump.json`, msprobe's non-finite
//!   tokens), [`output`] (generated files written atomically, or compared),
//!   [`paths`], [`xlsx`] (the one workbook writer), [`schedule`] (the one
//!   memory-budget scheduler), [`progress`], [`unreadable`] (an I/O failure
//!   on a named file, as every command reports it);
//! - [`model`]: the typed calls, names and arguments of a dump;
//! - [`config`] (`config_op.json`), [`select`] (which calls a batch takes)
//!   and [`manifest`], which speak of the model's names;
//! - [`source`]: dump resolution, framework and tensor-folder checks,
//!   `stack.json`, and the dump's calls as the [`model`] types them;
//! - [`render`] (templates) and [`bridge`] (to the `runtime` crate's specs);
//! - the commands, each with its own error type and exit codes, none
//!   importing another: [`op_generate`] (repro scripts or Rust projects),
//!   [`replay`] (native replay, accuracy CSVs, HTML report),
//!   [`single_compare`] (two SingleSave runs), [`nan_analyze`] (the first
//!   NaN/Inf across ranks), [`config_check`] (pack and compare training
//!   environments) and [`checkpoint`] (`config_check -c` of two Megatron
//!   checkpoints) and [`result_change`] (why a run's loss changes with the
//!   probe on: the user's training command rerun per variant);
//! - [`cli`]: arguments to validated options, printing, and the binary's
//!   [`cli::Error`], which maps each command's error to its exit code
//!   (`runtime::exit`). Nothing below imports it.

pub mod bridge;
pub mod checkpoint;
pub mod cli;
pub mod config;
pub mod config_check;
pub mod dump;
pub mod manifest;
pub mod model;
pub mod nan_analyze;
pub mod op_generate;
pub mod output;
pub mod paths;
pub mod progress;
pub mod render;
pub mod replay;
pub mod result_change;
pub mod schedule;
pub mod select;
pub mod single_compare;
pub mod source;
pub mod unreadable;
pub mod xlsx;
