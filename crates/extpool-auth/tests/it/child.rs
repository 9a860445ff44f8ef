//! Child processes: this test binary re-run with `EXTPOOL_AUTH_CHILD` set
//! runs one role in `child_entry` instead of its tests.
//!
//! Roles: `refresh` (open a session on the store, wait for "go" on stdin,
//! get a token, print `TOKEN <fingerprint>`), `crash` (start an atomic
//! write of a record and abort half way).

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

use extpool_auth::{AuthContext, OAuthProfile, OAuthSession};

const ROLE: &str = "EXTPOOL_AUTH_CHILD";

/// How long a child may take to print an expected line.
const LINE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

/// A child process of this binary; killed on drop.
pub struct Child {
    process: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl Child {
    /// Reads stdout lines until one contains `marker`; returns what follows
    /// it (libtest may print "test child::child_entry ... " before it).
    pub fn expect_line(&mut self, marker: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(LINE_TIMEOUT)
                .unwrap_or_else(|e| panic!("child printed no {marker} line: {e}"));
            if let Some(at) = line.find(marker) {
                return line[at + marker.len()..].trim().to_owned();
            }
        }
    }

    /// Writes one line to the child's stdin.
    pub fn send(&mut self, line: &str) {
        let stdin = self.process.stdin.as_mut().expect("piped stdin");
        writeln!(stdin, "{line}").expect("write to child");
    }

    /// Waits for the child to exit.
    pub fn wait(mut self) -> std::process::ExitStatus {
        self.process.wait().expect("wait for child")
    }
}

/// Runs this binary as a child in `role` with `env`.
pub fn spawn(role: &str, env: &[(&str, &str)]) -> Child {
    let exe = std::env::current_exe().expect("current exe");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        "child::child_entry",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut process = cmd.spawn().expect("spawn child");
    let stdout = process.stdout.take().expect("piped stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Child { process, lines }
}

#[test]
fn child_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return; // a normal test run: nothing to do
    };
    match role.as_str() {
        "refresh" => refresh_role(),
        "crash" => crash_role(),
        other => panic!("unknown child role {other}"),
    }
}

#[allow(clippy::print_stdout)]
fn refresh_role() {
    let dir = std::env::var("CHILD_STORE").expect("CHILD_STORE");
    let url = std::env::var("CHILD_URL").expect("CHILD_URL");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let profile = OAuthProfile {
            store: Some(dir.into()),
            ..OAuthProfile::default()
        };
        let session =
            OAuthSession::new(super::support::SERVER, url, profile, AuthContext::default())
                .expect("session");
        println!("READY");
        std::io::stdout().flush().expect("flush");
        let mut go = String::new();
        std::io::stdin().read_line(&mut go).expect("wait for go");
        let token = session
            .access_token()
            .await
            .expect("token")
            .expect("some token");
        println!("TOKEN {}", token.fingerprint());
    });
}

fn crash_role() {
    let dir = std::env::var("CHILD_STORE").expect("CHILD_STORE");
    let store = extpool_auth::CredentialStore::open(&dir).expect("store");
    let path = store.record_path(super::support::SERVER, "grant");
    let _ = extpool_auth::store::fsutil::write_atomic_with(&path, |file| {
        file.write_all(b"EXTPOOLCRED1 half a record")?;
        file.sync_all()?;
        std::process::abort();
    });
}
