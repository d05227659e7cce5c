//! `cargo +nightly fuzz run single_save_names`: see fuzz/README.md; the body
//! is `msprobe_fuzz::single_save_names` (src/lib.rs), which
//! tests/fuzz_regressions.rs replays.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| msprobe_fuzz::single_save_names(data));
