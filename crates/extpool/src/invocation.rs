//! How the user runs extpool, so that the commands it prints to try next
//! can be typed as they are: `extpool …` for an installed extpool, and
//! `cargo run -p extpool -- …` when cargo started it (`cargo run` from a
//! checkout, as the README's first line does). One function decides;
//! every printed hint asks it.
//!
//! Run through cargo means, on Linux: cargo is the parent process (its
//! name in `/proc`), or cargo replaced itself with extpool (as `cargo run`
//! does on Unix), which shows as the `CARGO` variable cargo sets being in
//! extpool's environment but not in its parent's (the shell's). The
//! variable alone is not trusted: every process a test run starts
//! inherits it from `cargo test`, and a program that starts the built
//! binary is not `cargo run`. Elsewhere, the variable.

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
    use std::io::Read;
    let parent = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    let parent_is_cargo = std::fs::read_to_string(format!("/proc/{parent}/comm"))
        .is_ok_and(|name| is_cargo(name.trim_end()));
    if parent_is_cargo || std::env::var_os("CARGO").is_none() {
        return parent_is_cargo;
    }
    // Bounded: an environment is at most a few hundred KiB.
    let mut environ = Vec::new();
    let read = std::fs::File::open(format!("/proc/{parent}/environ"))
        .and_then(|f| f.take(4 << 20).read_to_end(&mut environ));
    read.is_ok() && !has_cargo_variable(&environ)
}

/// Whether a `/proc/PID/environ` (NUL-separated) sets `CARGO`.
#[cfg(target_os = "linux")]
fn has_cargo_variable(environ: &[u8]) -> bool {
    environ
        .split(|b| *b == 0)
        .any(|kv| kv.starts_with(b"CARGO="))
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
        #[cfg(target_os = "linux")]
        {
            assert!(has_cargo_variable(b"A=1\0CARGO=/x/cargo\0"));
            assert!(!has_cargo_variable(b"CARGO_HOME=/x\0"));
        }
        assert_eq!(cmd("list tools"), format!("{} list tools", program()));
    }
}
