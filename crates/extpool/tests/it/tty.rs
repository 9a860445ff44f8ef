//! The live status display, driven through tmux like a person at a
//! terminal, and its plain-line form when stderr is piped.

use std::io::Read;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::Sandbox;

/// Upper bound of any wait for the screen; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(120);

struct Tmux {
    socket: String,
    /// A message each time the pane prints something (tmux's pipe-pane),
    /// once [`Tmux::watch`] ran.
    printed: Option<mpsc::Receiver<()>>,
}

impl Tmux {
    fn new(sb: &Sandbox) -> Self {
        let socket = sb.dir.path().join("tmux.sock").display().to_string();
        Self {
            socket,
            printed: None,
        }
    }

    /// Hears the pane's output from now on: tmux copies it into a FIFO
    /// this test reads, so the screen is captured again each time the
    /// pane printed something, never on a timer.
    fn watch(&mut self, sb: &Sandbox) {
        let fifo = sb.fifo("pane.fifo");
        let (tx, rx) = mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            // Opening waits for tmux's end of the pipe.
            let Ok(mut pipe) = std::fs::File::open(&path) else {
                return;
            };
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 || tx.send(()).is_err() {
                    return;
                }
            }
        });
        let out = self.cmd(&[
            "pipe-pane",
            "-t",
            "t",
            &format!("cat > '{}'", fifo.display()),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.printed = Some(rx);
    }

    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux must be installed (Debian package tmux)")
    }

    fn capture(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    fn wait_for(&self, needle: &str) -> String {
        self.wait_until(needle, |screen| screen.contains(needle))
    }

    /// Captures the screen until `done` holds for it, again each time the
    /// pane printed something; returns that screen.
    fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let printed = self
            .printed
            .as_ref()
            .expect("Tmux::watch runs before the screen is waited on");
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if done(&screen) {
                return screen;
            }
            let left = PATIENCE.saturating_sub(start.elapsed());
            assert!(
                printed.recv_timeout(left).is_ok(),
                "never happened: {what}; screen:\n{screen}"
            );
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// The shell line running extpool with `args`, then printing
/// `DONE-<tag>-<exit code>`: each run waits for its own tag, so a screen
/// still showing an earlier run never counts.
fn shell_line(sb: &Sandbox, tag: &str, args: &str) -> String {
    format!(
        "cd '{}' && HOME='{}' NO_COLOR=1 '{}' {args}; echo DONE-{tag}-$?",
        sb.work().display(),
        sb.home().display(),
        env!("CARGO_BIN_EXE_extpool"),
    )
}

#[test]
fn live_status_on_a_terminal_and_plain_lines_when_piped() {
    let sb = Sandbox::new();
    sb.testkit_config("  broken:\n    command: ./does-not-exist\n");
    let mut tmux = Tmux::new(&sb);
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "160",
        "-y",
        "50",
        "sh",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmux.watch(&sb);

    // On a terminal: the block of per-server lines with marks, then the summary.
    tmux.cmd(&[
        "send-keys",
        "-t",
        "t",
        &shell_line(&sb, "live", "list tools >/dev/null"),
        "Enter",
    ]);
    // A configured server failed: the listing says so with exit code 1.
    let screen = tmux.wait_for("DONE-live-1");
    assert!(screen.contains("✓ testkit  ready in "), "{screen}");
    assert!(
        screen.contains("· 17 tools") || screen.contains(" tools"),
        "{screen}"
    );
    assert!(screen.contains("✗ broken   failed: "), "{screen}");
    assert!(
        screen.contains("1 of 2 servers ready, 1 failed"),
        "{screen}"
    );
    assert!(
        !screen.contains("testkit: connecting"),
        "live mode draws in place:\n{screen}"
    );

    // Piped: one plain line per change, no marks, no escape codes. The
    // screen is cleared first, and read only once this run's tag shows
    // with no trace of the first run left.
    tmux.cmd(&[
        "send-keys",
        "-t",
        "t",
        &format!(
            "clear; {}",
            shell_line(&sb, "piped", "list tools 2>&1 >/dev/null | cat")
        ),
        "Enter",
    ]);
    let screen = tmux.wait_until("the piped run, on a cleared screen", |screen| {
        screen.contains("DONE-piped-0") && !screen.contains("DONE-live")
    });
    assert!(screen.contains("testkit: connecting"), "{screen}");
    assert!(screen.contains("testkit: ready in "), "{screen}");
    assert!(screen.contains("broken: failed: "), "{screen}");
    assert!(!screen.contains("✓ testkit"), "{screen}");

    // A tool's result on a terminal: control characters shown escaped, so
    // a server cannot clear the screen.
    tmux.cmd(&[
        "send-keys",
        "-t",
        "t",
        &format!(
            "clear; {}",
            shell_line(
                &sb,
                "payload",
                r#"call mcp__testkit__echo "message=$(printf 'A\033[2JB')""#
            )
        ),
        "Enter",
    ]);
    let screen = tmux.wait_until("the payload run, on a cleared screen", |screen| {
        screen.contains("DONE-payload-0") && !screen.contains("DONE-piped")
    });
    assert!(screen.contains(r"A\x1b[2JB"), "{screen}");
}

/// Issue 17 item 21: a failure line longer than the terminal is wide must
/// not wrap — a wrapped row takes two lines, and redrawing the block by its
/// number of rows then leaves stale "connecting" lines above it.
#[test]
fn a_narrow_terminal_keeps_one_line_per_server() {
    let sb = Sandbox::new();
    let bin = crate::support::testkit().display().to_string();
    let long = format!("./does-not-exist-{}", "x".repeat(120));
    let mut config = String::from("mcp_servers:\n");
    for i in 0..4 {
        config.push_str(&format!("  kit{i}:\n    command: {bin}\n"));
    }
    for i in 0..2 {
        config.push_str(&format!("  broken{i}:\n    command: {long}\n"));
    }
    config.push_str("skills:\n  default_roots: false\n");
    sb.write("extpool.yaml", &config);
    let mut tmux = Tmux::new(&sb);
    let out = tmux.cmd(&["new-session", "-d", "-s", "t", "-x", "60", "-y", "40", "sh"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmux.watch(&sb);
    tmux.cmd(&[
        "send-keys",
        "-t",
        "t",
        &format!(
            "clear; {}",
            shell_line(&sb, "narrow", "list tools >/dev/null")
        ),
        "Enter",
    ]);
    let screen = tmux.wait_until("the narrow run, on a cleared screen", |screen| {
        screen.contains("DONE-narrow-1")
    });
    assert!(
        screen.contains("4 of 6 servers ready, 2 failed"),
        "{screen}"
    );
    assert!(!screen.contains("connecting"), "stale lines:\n{screen}");
    for name in ["kit0", "kit1", "kit2", "kit3", "broken0", "broken1"] {
        let rows = screen
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(name))
            .count();
        assert_eq!(rows, 1, "{name}:\n{screen}");
    }
    for line in screen.lines().filter(|l| l.contains("✗ broken")) {
        assert!(line.ends_with('…'), "cut, not wrapped: {line:?}\n{screen}");
        assert!(line.chars().count() < 60, "{line:?}");
    }
}
