//! Native replay of dumped API calls, without Python.
//!
//! Data flows one way: a [`spec::Replay`] (what to replay) -> [`inputs`]
//! (seeded random data or the dumped tensor files, via [`io`]) -> [`exec`]
//! runs an [`ops`] table entry on the bench ([`ctx::Side::Bench`], f64) and
//! on the emulated device (the dumped dtypes) with candle -> [`compare`]
//! (metrics) -> [`report`] (msprobe's CSVs). [`replay::replay`] ties it up.
//!
//! - [`io`] reads the tensors msprobe dumps (`.pt`, `.npy`), only from
//!   inside their folder; [`limits`] bounds every size before allocation.
//! - [`ops`] is the op table: one entry per API name, PyTorch semantics.
//! - [`compare`] computes cosine, max absolute and relative error.
//! - [`report`] writes the CSVs byte for byte like the Python scripts,
//!   through [`atomic`], the one atomic file writer (the CLI uses it too);
//!   [`pyfmt`] formats floats the way Python prints them.

pub mod atomic;
pub mod bind;
pub mod compare;
pub mod ctx;
pub mod device;
pub mod dtype;
pub mod error;
pub mod exec;
pub mod exit;
pub mod grad_layout;
pub mod heap;
pub mod inputs;
pub mod io;
pub mod limits;
pub mod minimize;
pub mod ops;
pub mod prefix;
pub mod pyfmt;
pub mod replay;
pub mod report;
pub mod repro;
pub mod rulebook;
pub mod simd;
pub mod spec;
pub mod standard;
pub mod threads;
pub mod value;
