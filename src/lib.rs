//! msprobe-rs: turns API calls recorded in an msprobe `dump.json` into
//! standalone repro scripts.
//!
//! Data flows one way: [`dump`] (streaming reader) -> [`model`] (typed calls)
//! -> [`render`] (templates) -> files written by [`output`]. The
//! [`op_generate`] module wires those stages for the command of that name;
//! `main.rs` only parses arguments and maps errors to exit codes.

pub mod calls;
pub mod config;
pub mod dump;
pub mod manifest;
pub mod model;
pub mod op_generate;
pub mod output;
pub mod replay;
pub mod render;
pub mod select;
