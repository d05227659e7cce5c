//! `cargo +nightly fuzz run checkpoint`: see fuzz/README.md; the body is
//! `msprobe_fuzz::checkpoint` (src/lib.rs), which tests/fuzz_regressions.rs replays.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| msprobe_fuzz::checkpoint(data));
