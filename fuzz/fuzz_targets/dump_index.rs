//! `cargo +nightly fuzz run dump_index`: see fuzz/README.md; the body is
//! `msprobe_fuzz::dump_index` (src/lib.rs), which tests/fuzz_regressions.rs replays.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| msprobe_fuzz::dump_index(data));
