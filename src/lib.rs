//! msprobe-rs: turns API calls recorded in an msprobe `dump.json` into
//! standalone repro scripts, and replays them natively.
//!
//! Data flows one way: [`dump`] (streaming reader) -> [`source`] (dump
//! resolution, framework and tensor-folder checks, typed calls) -> [`model`]
//! -> [`render`] (templates; files written by [`output`]) or [`bridge`] ->
//! the `runtime` crate. The commands, [`op_generate`] and [`replay`], wire
//! those stages and never import each other; [`cli`] turns arguments into
//! their options and prints their results; every failure is one
//! [`error::Error`] with one exit code. Every workbook a command writes
//! goes through the one [`xlsx`] writer.

pub mod bridge;
pub mod checkpoint;
pub mod cli;
pub mod config;
pub mod config_check;
pub mod dump;
pub mod error;
pub mod manifest;
pub mod model;
pub mod nan_analyze;
pub mod op_generate;
pub mod output;
pub mod paths;
pub mod progress;
pub mod render;
pub mod replay;
pub mod select;
pub mod single_compare;
pub mod source;
pub mod xlsx;
