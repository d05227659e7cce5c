//! `cargo +nightly fuzz run config_pack`: see fuzz/README.md; the body is
//! `msprobe_fuzz::config_pack` (src/lib.rs), which tests/fuzz_regressions.rs replays.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| msprobe_fuzz::config_pack(data));
