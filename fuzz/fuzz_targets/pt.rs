//! `cargo +nightly fuzz run pt`: see fuzz/README.md; the body is
//! `msprobe_fuzz::pt` (src/lib.rs), which tests/fuzz_regressions.rs replays.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| msprobe_fuzz::pt(data));
