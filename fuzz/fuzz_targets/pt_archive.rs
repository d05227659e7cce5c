//! `cargo +nightly fuzz run pt_archive`: see fuzz/README.md; the body is
//! `msprobe_fuzz::pt_archive` (src/lib.rs), which tests/fuzz_regressions.rs replays.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| msprobe_fuzz::pt_archive(data));
