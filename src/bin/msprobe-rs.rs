//! `msprobe-rs`: the `msprobe` binary under a name no other package
//! installs, so it runs msprobe-rs whichever package last wrote the
//! `msprobe` script of a Python environment (README, "Installation").

#[path = "../main.rs"]
mod entry;

fn main() -> std::process::ExitCode {
    entry::main()
}
