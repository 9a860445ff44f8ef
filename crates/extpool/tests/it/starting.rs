//! What the start-up status says while a server takes long to start: the
//! latest line the server wrote to stderr (`cargo` compiling it, `npx`
//! downloading it) instead of a bare "connecting".

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::support::{Sandbox, testkit};

/// How long a test waits for a line before it fails (never a pause: each
/// wait ends as soon as the line comes).
const PATIENCE: Duration = Duration::from_secs(120);

/// Reads `stderr` on a thread; the lines arrive on the returned channel.
fn lines_of(stderr: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits for a line containing `needle`; returns every line seen so far.
fn wait_for(rx: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) {
    loop {
        match rx.recv_timeout(PATIENCE) {
            Ok(line) => {
                let found = line.contains(needle);
                seen.push(line);
                if found {
                    return;
                }
            }
            Err(e) => panic!(
                "no line with {needle:?} ({e}); stderr so far:\n{}",
                seen.join("\n")
            ),
        }
    }
}

/// A running `extpool`, killed if the test ends before it does.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_server_that_builds_says_what_it_is_doing_while_it_connects() {
    let sb = Sandbox::new();
    // The server writes a build step to stderr, then waits until the test
    // has seen it in extpool's status before it starts serving.
    let go = sb.fifo("go");
    sb.write(
        "build-then-serve.sh",
        &format!(
            "echo '   Compiling example-server v1.0.0 (/src/example)' >&2\nread _ < '{}'\nexec '{}'\n",
            go.display(),
            testkit().display()
        ),
    );
    sb.write(
        "extpool.yaml",
        "mcp_servers:\n  slow:\n    command: sh\n    args: [build-then-serve.sh]\n    startup_timeout_ms: 600000\n",
    );
    let mut child = Running(
        sb.command()
            .args(["list", "tools"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn extpool"),
    );
    let rx = lines_of(child.0.stderr.take().unwrap());
    let stdout = lines_of(child.0.stdout.take().unwrap());
    let mut seen = Vec::new();
    wait_for(
        &rx,
        "slow: connecting: Compiling example-server v1.0.0 (/src/example)",
        &mut seen,
    );
    // Seen while connecting: the server is not ready before it is let go.
    assert!(
        !seen.iter().any(|l| l.contains("ready in")),
        "{}",
        seen.join("\n")
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(&go)
        .and_then(|mut fifo| fifo.write_all(b"go\n"))
        .expect("let the server go");
    wait_for(&rx, "slow: ready in ", &mut seen);
    let status = child.0.wait().expect("extpool ends");
    assert!(status.success(), "{}", seen.join("\n"));
    let stdout: Vec<String> = stdout.iter().collect();
    assert!(
        stdout.iter().any(|l| l.contains("mcp__slow__echo")),
        "{}",
        stdout.join("\n")
    );
}
