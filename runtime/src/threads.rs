//! One thread pool for the replay's work. candle runs its large elementwise
//! ops on a pool of its own (its "barrier pool", one thread less than the
//! cores), whose threads spin before they park and whose callers queue on
//! one lock. The replay already spreads its calls over rayon's threads, one
//! per core, so candle's pool only competes with them for the same cores:
//! its spinning took 6 % of a GPT-2 block's CPU time, and the calls waited
//! on each other's elementwise ops. With no thread of its own, candle runs
//! those ops on the thread that asks (measured, 2 cores: GPT-2 block
//! 1.21–1.26 s to 1.10–1.14 s wall; ResNet-50 statistics step 26.1–26.8 s
//! to 25.0–26.1 s; ResNet-50 tensor step unchanged).

/// Gives candle's elementwise pool no threads of its own
/// (`CANDLE_NUM_THREADS=1`) unless the user set its size. Called once,
/// first thing in `main`, before any other thread exists and before candle
/// reads the variable.
pub fn one_pool() {
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        std::env::set_var("CANDLE_NUM_THREADS", "1");
    }
}
