//! The SQLite state store under faults, through a real `extpool serve`
//! and its `/v1` API: a disk that fills up (a real tmpfs, really full) and
//! is freed again, and a second gateway started on the same file.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use extpool_testkit::small_disk::SmallDisk;
use serde_json::{Value, json};

use crate::serve::Served;
use crate::support::Sandbox;

/// How long the gateway may take to serve again once the disk has room
/// (its heartbeat is 1 s): a bound on a hang, never a pause.
const PATIENCE: Duration = Duration::from_secs(60);

/// A sandbox whose configuration has no server and no skill root.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        "mcp_servers: {}\nskills:\n  default_roots: false\n",
    );
    sb
}

/// A gateway's stderr lines, and a wake-up for each new one.
#[derive(Default)]
struct Log {
    lines: Mutex<Vec<String>>,
    added: Condvar,
}

impl Log {
    /// Waits (off the runtime's threads) until a line holds `text`,
    /// failing after [`PATIENCE`].
    async fn wait_for(self: &Arc<Self>, text: &'static str) {
        self.wait_for_from(0, text).await;
    }

    /// The number of lines logged so far.
    fn len(&self) -> usize {
        self.lines.lock().unwrap().len()
    }

    /// [`Log::wait_for`] among the lines logged after the first `from`.
    async fn wait_for_from(self: &Arc<Self>, from: usize, text: &'static str) {
        let log = self.clone();
        tokio::task::spawn_blocking(move || {
            let lines = log.lines.lock().unwrap();
            let (_lines, waited) = log
                .added
                .wait_timeout_while(lines, PATIENCE, |lines| {
                    !lines.iter().skip(from).any(|l| l.contains(text))
                })
                .unwrap();
            assert!(!waited.timed_out(), "the gateway never logged {text:?}");
        })
        .await
        .unwrap();
    }

    fn holds(&self, text: &str) -> bool {
        self.lines.lock().unwrap().iter().any(|l| l.contains(text))
    }
}

/// `extpool serve` on the SQLite file `state`, its stderr lines kept.
fn serve_on(sb: &Sandbox, state: &str) -> (Served, Arc<Log>) {
    let mut command = sb.command();
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--state", state])
        .args(["--replica-heartbeat", "1", "--toolhive", "false"])
        .env("EXTPOOL_LOG", "warn")
        .stderr(Stdio::piped());
    let mut served = Served::spawn_with_stderr(command);
    let log = Arc::new(Log::default());
    let stderr = served.stderr.take().unwrap();
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            // As an inherited stderr would: the test's own stderr.
            let _ = writeln!(std::io::stderr(), "{line}");
            kept.lines.lock().unwrap().push(line);
            kept.added.notify_all();
        }
    });
    (served, log)
}

/// The gateway's base URL (its printed endpoint without `/mcp`).
fn base_url(served: &Served) -> String {
    served.url.trim_end_matches("/mcp").to_owned()
}

async fn call(method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, String) {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

async fn create(base: &str, id: &str) -> (u16, String) {
    call(
        reqwest::Method::POST,
        &format!("{base}/v1/sessions"),
        Some(json!({"id": id})),
    )
    .await
}

async fn readyz(base: &str) -> (u16, String) {
    call(reqwest::Method::GET, &format!("{base}/readyz"), None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_session_writes_and_the_gateway_serves_again_once_it_has_room() {
    let disk = SmallDisk::mount(1 << 20);
    let sb = sandbox();
    let state = disk.path().join("state.db").display().to_string();
    let (served, log) = serve_on(&sb, &state);
    let base = base_url(&served);
    assert_eq!(create(&base, "before").await.0, 201);

    // Full: SQLite may still find room in its write-ahead log for a
    // write or two, so writes go on until one fails.
    disk.fill();
    let mut failed = None;
    for n in 0..200 {
        let (status, body) = create(&base, &format!("full-{n}")).await;
        if status >= 500 {
            failed = Some(body);
            break;
        }
        assert_eq!(status, 201, "{body}");
    }
    let failed = failed.expect("a session create failed on a full disk");
    assert!(failed.contains("error"), "{failed}");
    // It says why.
    log.wait_for("database or disk is full").await;

    // Room again: ready, and every operation serves, without a restart.
    disk.free();
    let freed = log.len();
    let (status, body) = readyz(&base).await;
    if status != 200 {
        // Not ready while its heartbeats fail: ready again at the first
        // that reaches the store, which the gateway logs.
        log.wait_for_from(freed, "the state store answers again")
            .await;
        let (status, body) = readyz(&base).await;
        assert_eq!(status, 200, "not ready once the store answered: {body}");
    } else {
        assert!(body.starts_with("ready"), "{body}");
    }
    for n in 0..24 {
        let id = format!("after-{n}");
        let (status, body) = create(&base, &id).await;
        assert_eq!(status, 201, "create {id}: {body}");
        let (status, body) = call(
            reqwest::Method::GET,
            &format!("{base}/v1/sessions/{id}"),
            None,
        )
        .await;
        assert_eq!(status, 200, "get {id}: {body}");
    }
    let (status, body) = call(
        reqwest::Method::DELETE,
        &format!("{base}/v1/sessions/before"),
        None,
    )
    .await;
    assert_eq!(status, 200, "delete: {body}");
    assert!(
        !log.holds("transaction depth"),
        "no connection was left inside a failed transaction"
    );
    drop(served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_gateway_on_the_same_sqlite_file_is_refused_pointing_to_postgresql() {
    let sb = sandbox();
    let state = sb.work().join("state.db").display().to_string();
    let (first, _log) = serve_on(&sb, &state);
    let base = base_url(&first);
    assert_eq!(create(&base, "kept").await.0, 201);

    let (code, stderr) = crate::replicas::refused_start(&sb, &state);
    assert_eq!(code, 1, "{stderr}");
    let said = stderr.trim();
    assert!(said.contains(&state), "names the file: {said}");
    assert!(said.contains("another extpool"), "says why: {said}");
    assert!(
        said.contains("PostgreSQL") && said.contains("postgres://"),
        "points to PostgreSQL for replicas: {said}"
    );
    assert_eq!(said.matches("state store").count(), 1, "said once: {said}");

    // The first serves on; a command that only reads or writes keys may
    // still open the file beside it.
    let (status, body) = call(
        reqwest::Method::GET,
        &format!("{base}/v1/sessions/kept"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let keys = sb.run(&["api-keys", "--state", &state, "list"]);
    assert_eq!(keys.code, 0, "{}", keys.stderr);

    // Once the first is gone (even killed), the file serves again.
    drop(first);
    let (again, _log) = serve_on(&sb, &state);
    let (status, body) = call(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/kept", base_url(&again)),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
}
