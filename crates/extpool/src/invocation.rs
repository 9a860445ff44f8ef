//! How the user runs extpool, so that the commands it prints to try next
//! can be typed as they are: `extpool …` for an installed extpool, and
//! `cargo run -p extpool -- …` when cargo started it (`cargo run` from a
//! checkout, as the README's first line does). One function decides;
//! every printed hint asks it.
//!
//! Run through cargo means: cargo is the parent process (on Linux, its
//! name in `/proc`; elsewhere the `CARGO` variable cargo sets). The
//! variable alone is not trusted on Linux: every process a test run
//! starts inherits it from `cargo test`, and a program that starts the
//! built binary is not `cargo run`.

use std::sync::OnceLock;

/// What a hint starts with when cargo runs extpool.
const THROUGH_CARGO: &str = "cargo run -p extpool --";

/// What a hint starts with otherwise.
const INSTALLED: &str = "extpool";

/// The words that run extpool, as a hint spells them.
pub fn program() -> &'static str {
    static PROGRAM: OnceLock<&'static str> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        if started_by_cargo() {
            THROUGH_CARGO
        } else {
            INSTALLED
        }
    })
}

/// `rest` (a command line without the program) as the user would type it.
pub fn cmd(rest: &str) -> String {
    format!("{} {rest}", program())
}

#[cfg(target_os = "linux")]
fn started_by_cargo() -> bool {
    let parent = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    std::fs::read_to_string(format!("/proc/{parent}/comm"))
        .is_ok_and(|name| is_cargo(name.trim_end()))
}

#[cfg(not(target_os = "linux"))]
fn started_by_cargo() -> bool {
    std::env::var_os("CARGO").is_some()
}

/// Whether a process name is cargo's.
fn is_cargo(name: &str) -> bool {
    name == "cargo" || name.eq_ignore_ascii_case("cargo.exe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_is_told_by_its_name() {
        assert!(is_cargo("cargo"));
        assert!(!is_cargo("cargo-nextest"));
        assert!(!is_cargo("bash"));
        assert_eq!(cmd("list tools"), format!("{} list tools", program()));
    }
}
