//! The `msprobe` binary: parse the arguments, run the command, exit with
//! its code (README, "Exit codes"). Everything else is in the library.

use std::process::ExitCode;

use msprobe::cli::{self, flags, printer};

/// Zeroed blocks written, not left to the kernel's zero page (runtime::heap).
#[global_allocator]
static ALLOCATOR: runtime::heap::WrittenZeros = runtime::heap::WrittenZeros;

pub fn main() -> ExitCode {
    runtime::heap::keep_freed_memory();
    runtime::threads::one_pool();
    match flags::parse().and_then(cli::run) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            printer::error(&e);
            ExitCode::from(e.exit_code())
        }
    }
}
