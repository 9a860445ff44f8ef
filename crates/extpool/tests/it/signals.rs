//! SIGINT, SIGTERM and SIGHUP to a running `extpool watch` or `extpool
//! call` end it as a normal exit does: its servers are gone afterwards,
//! even one that ignores the end of its input and SIGTERM (only its
//! process group's SIGKILL ends it). SIGKILL to `extpool serve`, `watch` or
//! `call`, which leaves extpool no chance to close anything, ends that
//! server too (its parent-death signal, Linux).

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Stdio};
use std::time::Duration;

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

/// Upper bound of a wait for a server's start; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(60);

fn send(child: &Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Reads `output` up to the line that contains `ready`; returns the rest
/// of its lines, to keep the pipe open.
fn read_until<R: Read>(output: R, ready: &str) -> std::io::Lines<BufReader<R>> {
    let mut lines = BufReader::new(output).lines();
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("extpool ended before {ready:?}"))
            .unwrap();
        if line.contains(ready) {
            return lines;
        }
    }
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
    let _lines = read_until(child.stderr.take().unwrap(), ready_line);
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

/// Where extpool says it is ready.
enum Ready {
    /// A line of its stderr containing this.
    Stderr(&'static str),
    /// The gateway's endpoint, on its stdout.
    Serving,
}

/// Starts `extpool ARGS` with the stubborn server, waits until it is
/// `ready` and the server has started, kills extpool with SIGKILL (it
/// closes nothing), and waits on the server's pidfd until it has exited:
/// only its parent-death signal can end it.
fn sigkilled(args: &[&str], ready: Ready) {
    let state = StateDir::new();
    let _reaper = Reaper(&state);
    let sb = stubborn(&state);
    let mut command = sb.command();
    command.args(args);
    // The rest of the output, kept open.
    let (mut child, _rest): (Child, Box<dyn Iterator<Item = std::io::Result<String>>>) = match ready
    {
        Ready::Stderr(line) => {
            let mut child = command
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let rest = read_until(child.stderr.take().unwrap(), line);
            (child, Box::new(rest))
        }
        Ready::Serving => {
            let mut child = command
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap();
            let rest = read_until(child.stdout.take().unwrap(), "http://");
            (child, Box::new(rest))
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(state.until("the server started", PATIENCE, |s| s.pids().len() == 1));
    let server = state.pids()[0];
    assert!(running(server));
    send(&child, "KILL");
    extpool_testkit::procs::wait_exited(child.id());
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "extpool was killed: {status}");
    // On the kernel's word (a pidfd); the server ignores the end of its
    // stdin and SIGTERM, and extpool sent nothing.
    extpool_testkit::procs::wait_exited(server);
    assert!(!running(server));
}

#[test]
fn sigkill_of_serve_ends_its_servers() {
    sigkilled(
        &["serve", "--listen", "127.0.0.1:0", "--toolhive=false"],
        Ready::Serving,
    );
}

#[test]
fn sigkill_of_watch_ends_its_servers() {
    sigkilled(&["watch"], Ready::Stderr("watching "));
}

#[test]
fn sigkill_of_a_call_ends_its_servers() {
    sigkilled(
        &["call", "mcp__stubborn__sleep", "ms=600000"],
        Ready::Stderr("1 of 1 server ready"),
    );
}
