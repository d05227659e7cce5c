//! Native replay support for dumped API calls, without Python.
//!
//! - [`io`] reads the tensors msprobe dumps (`.pt` from PyTorch, `.npy` from
//!   MindSpore) into framework-independent [`io::HostTensor`]s.
//! - [`compare`] computes the accuracy metrics of a tested result against a
//!   bench result (cosine similarity, max absolute and relative error,
//!   NaN/Inf agreement) exactly as the generated Python scripts do.
//! - [`report`] writes msprobe's `accuracy_checking_details_*.csv` and
//!   `accuracy_checking_result_*.csv`, byte for byte like those scripts.
//! - [`pyfmt`] formats floats the way Python prints them, for both.
//!
//! The op table and the candle execution come later.

pub mod compare;
pub mod io;
pub mod pyfmt;
pub mod report;
