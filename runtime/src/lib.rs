//! Native replay of dumped API calls.
//!
//! This crate is a placeholder: the op table, candle execution and metrics
//! arrive with the runtime issue. It exists now so that the workspace layout
//! (CLI at the root, runtime beside it) is fixed from the first commit.
