//! `cargo +nightly fuzz run hyperparams`: see fuzz/README.md; the body is
//! `msprobe_fuzz::hyperparams` (src/lib.rs), which tests/fuzz_regressions.rs replays.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| msprobe_fuzz::hyperparams(data));
