//! `cargo +nightly fuzz run nan_analyze`: see fuzz/README.md; the body is
//! `msprobe_fuzz::nan_analyze` (src/lib.rs), which tests/fuzz_regressions.rs replays.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| msprobe_fuzz::nan_analyze(data));
