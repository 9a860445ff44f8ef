//! SIGINT, SIGTERM and SIGHUP to a running `extpool watch` or `extpool
//! call` end it as a normal exit does: its servers are gone afterwards,
//! even one that ignores the end of its input and SIGTERM (only its
//! process group's SIGKILL ends it).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use extpool_testkit::StateDir;

use crate::support::{Sandbox, testkit};

/// A sandbox whose one server ignores stdin EOF, SIGTERM, SIGINT and SIGHUP.
fn stubborn(state: &StateDir) -> Sandbox {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  stubborn:\n    command: {}\n    args: [--ignore-eof, --ignore-sigterm, --state-dir, '{}']\nskills:\n  default_roots: false\n",
            testkit().display(),
            state.path().display()
        ),
    );
    sb
}

/// True while `pid` runs (a zombie has ended).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => !matches!(
            stat.rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next()),
            Some('Z' | 'X') | None
        ),
        Err(_) => false,
    }
}

/// Kills whatever the test left running (its servers), whatever happened.
struct Reaper<'a>(&'a StateDir);

impl Drop for Reaper<'_> {
    fn drop(&mut self) {
        for pid in self.0.pids() {
            if running(pid) {
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
    }
}

fn send(child: &Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Starts `extpool ARGS`, waits for the stderr line starting with
/// `ready_line` and for the server to have started, sends `signal`, and
/// returns extpool's exit code once it exited and the server is gone.
fn signalled(args: &[&str], ready_line: &str, signal: &str) -> i32 {
    let state = StateDir::new();
    let _reaper = Reaper(&state);
    let sb = stubborn(&state);
    let mut child = sb
        .command()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("extpool ended before {ready_line:?}"))
            .unwrap();
        if line.starts_with(ready_line) {
            break;
        }
    }
    let pids = state.pids();
    assert_eq!(pids.len(), 1, "one server started: {pids:?}");
    assert!(running(pids[0]));
    send(&child, signal);
    // On the kernel's word (pidfds): extpool exits, and its server ends.
    extpool_testkit::procs::wait_exited(child.id());
    let code = child.wait().unwrap().code();
    extpool_testkit::procs::wait_exited(pids[0]);
    assert!(!running(pids[0]));
    code.unwrap_or(-1)
}

#[test]
fn sigterm_ends_watch_and_its_servers() {
    let code = signalled(&["watch"], "watching ", "TERM");
    assert_eq!(code, 0, "watch ends normally on a signal");
}

#[test]
fn sighup_ends_watch_and_its_servers() {
    let code = signalled(&["watch"], "watching ", "HUP");
    assert_eq!(code, 0);
}

#[test]
fn sigint_ends_a_call_and_its_servers() {
    let code = signalled(
        &["call", "mcp__stubborn__sleep", "ms=600000"],
        "1 of 1 server ready",
        "INT",
    );
    assert_eq!(code, 130, "128 + SIGINT");
}

#[test]
fn sigterm_ends_a_call_and_its_servers() {
    let code = signalled(
        &["call", "mcp__stubborn__sleep", "ms=600000"],
        "1 of 1 server ready",
        "TERM",
    );
    assert_eq!(code, 143, "128 + SIGTERM");
}
