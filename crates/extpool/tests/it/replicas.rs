//! Scale-out: several `extpool serve` replicas on one PostgreSQL store, as
//! a deployment runs them behind a load balancer. Each test starts real
//! replicas (their own processes, ports and upstream connections) on a
//! database of its own on a real PostgreSQL server, and talks to them with
//! the CLI, plain HTTP and real MCP clients (the Python SDK for the
//! session era, rmcp for 2026-07-28), directly or through a balancer.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use extpool_testkit::balancer::{Balancer, Policy};
use extpool_testkit::postgres::PgServer;
use extpool_testkit::{HttpServer, StateDir, stdio_command};
use serde_json::{Value, json};

use crate::support::Sandbox;

/// Upper bound of anything a test waits for; only reached when broken.
const PATIENCE: Duration = Duration::from_secs(90);

/// A running replica: `extpool serve` on 127.0.0.1:0.
pub(crate) struct Replica {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub(crate) base: String,
    /// What it logged (at `info`), line by line.
    log: Arc<Log>,
}

/// A replica's log lines, and a wake-up for each new one.
#[derive(Default)]
struct Log {
    lines: Mutex<Vec<String>>,
    added: Condvar,
}

impl Log {
    /// Reads `stderr` to its end, passing each line on to the test
    /// process's stderr and keeping it.
    fn keep(self: Arc<Self>, stderr: impl std::io::Read + Send + 'static) {
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // As the inherited stderr did before: the test's own stderr.
                let _ = writeln!(std::io::stderr(), "{line}");
                self.lines.lock().unwrap().push(line);
                self.added.notify_all();
            }
        });
    }
}

impl Replica {
    /// Starts replicas `ids` on `state` in `sb`, all at once (every
    /// process is started before any is waited for), with `extra` flags.
    pub(crate) fn start_together(
        sb: &Sandbox,
        state: &str,
        ids: &[&str],
        extra: &[&str],
    ) -> Vec<Replica> {
        let children: Vec<Child> = ids
            .iter()
            .map(|id| {
                sb.command()
                    .args(["serve", "--listen", "127.0.0.1:0", "--state", state])
                    .args(["--replica-id", id])
                    .args(extra)
                    .env("EXTPOOL_LOG", "info")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        children
            .into_iter()
            .map(|mut child| {
                let log = Arc::new(Log::default());
                log.clone().keep(child.stderr.take().unwrap());
                let stdout = child.stdout.take().unwrap();
                let mut lines = BufReader::new(stdout).lines();
                let base = loop {
                    let line = lines
                        .next()
                        .unwrap_or_else(|| panic!("a replica ended before printing its endpoint"))
                        .unwrap();
                    if let Some(at) = line.find("http://") {
                        break line[at..].trim().trim_end_matches("/mcp").to_owned();
                    }
                };
                std::thread::spawn(move || lines.for_each(drop));
                Replica { child, base, log }
            })
            .collect()
    }

    /// Waits until the replica logs a line that `wanted` accepts (looking
    /// at each line as it comes), failing after [`PATIENCE`].
    async fn logged(&self, what: &str, wanted: impl Fn(&str) -> bool + Send + 'static) {
        let (log, what) = (self.log.clone(), what.to_owned());
        blocking(move || {
            let lines = log.lines.lock().unwrap();
            let (_lines, waited) = log
                .added
                .wait_timeout_while(lines, PATIENCE, |lines| !lines.iter().any(|l| wanted(l)))
                .unwrap();
            assert!(!waited.timed_out(), "never logged: {what}");
        })
        .await;
    }

    /// Kills the replica like a crash (SIGKILL) and reaps it.
    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A configuration whose servers are `servers_yaml` (indented entries).
fn config(sb: &Sandbox, servers_yaml: &str) {
    sb.write(
        "extpool.yaml",
        &format!("mcp_servers:\n{servers_yaml}skills:\n  default_roots: false\n"),
    );
}

/// The shared upstream `kit` at `url`.
fn remote_kit(url: &str) -> String {
    format!("  kit:\n    url: {url}\n")
}

/// `extpool sessions --gateway BASE ARGS`, parsed as JSON (it must succeed).
fn sessions_cli(sb: &Sandbox, base: &str, args: &[&str]) -> Value {
    let mut all = vec!["sessions", "--gateway", base];
    all.extend_from_slice(args);
    let r = sb.run(&all);
    assert_eq!(r.code, 0, "extpool {all:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// Runs the Python SDK client at `url` with `steps`; its JSON lines.
fn python(url: &str, steps: Value) -> Vec<Value> {
    crate::serve::python(&["--url", url], steps)
}

async fn http(method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// Runs blocking `f` (a child process) off the runtime's threads.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_replica_serves_any_session_in_both_eras() {
    let pg = PgServer::shared();
    let db = pg.database();
    let kit = HttpServer::start();
    let sb = std::sync::Arc::new(Sandbox::new());
    config(&sb, &remote_kit(kit.url()));
    // Two replicas starting together on a fresh database: one migrates.
    let replicas = Replica::start_together(&sb, &db, &["a-1", "b-1"], &[]);
    let (a, b) = (replicas[0].base.clone(), replicas[1].base.clone());
    assert_eq!(
        pg.psql(
            &db,
            "SELECT string_agg(version::text, ',' ORDER BY version) FROM extpool_schema"
        ),
        every_version(),
        "every migration applied once"
    );
    // Created on A; listed, shown, refreshed on B.
    let created = sessions_cli(&sb, &a, &["create", "--id", "s1"]);
    assert!(strings(&created["granted"]).contains(&"mcp__kit__echo".to_owned()));
    let listed = sb.run(&["sessions", "--gateway", &b, "list"]);
    assert!(
        listed.stdout.lines().any(|l| l.starts_with("s1 ")),
        "{}",
        listed.stdout
    );
    let got = sessions_cli(&sb, &b, &["get", "s1"]);
    assert_eq!(got["open_on"], json!(["a-1"]), "{got}");
    // A tool arrives upstream (through B's plain endpoint): available, not granted.
    let url = format!("{b}/mcp");
    let out = blocking(move || {
        python(
            &url,
            json!([{"op": "call", "name": "mcp__kit__add_tool", "args": {"name": "later"}}]),
        )
    })
    .await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    let refreshed = sessions_cli(&sb, &b, &["refresh", "s1"]);
    assert_eq!(refreshed["authority_changed"], true, "{refreshed}");
    assert_eq!(refreshed["added"], json!(["mcp__kit__later"]));
    assert_eq!(refreshed["replica"], "b-1", "the revision is B's");
    let got = sessions_cli(&sb, &a, &["get", "s1"]);
    assert_eq!(got["session"]["revision"], refreshed["revision"]);
    assert_eq!(got["session"]["revision_by"], "b-1");
    assert_eq!(got["open_on"], json!(["a-1", "b-1"]), "{got}");
    assert!(strings(&got["granted"]).contains(&"mcp__kit__later".to_owned()));

    // The session era, one client session hopping between replicas on
    // every request: its Mcp-Session-Id is resumed by whichever gets it.
    let lb = Balancer::start([a.clone(), b.clone()], Policy::RoundRobin).await;
    let url = format!("{}/sessions/s1/mcp", lb.url());
    let out = blocking(move || {
        python(
            &url,
            json!([
                {"op": "list_tools"},
                {"op": "call", "name": "mcp__kit__later"},
                {"op": "call", "name": "mcp__kit__echo", "args": {"message": "hop"}},
                {"op": "call", "name": "mcp__kit__echo", "args": {"message": "hop again"}},
            ]),
        )
    })
    .await;
    assert!(strings(&out[1]["tools"]).contains(&"mcp__kit__later".to_owned()));
    assert_eq!(out[2]["is_error"], false, "{out:?}");
    assert_eq!(out[3]["text"], json!(["hop"]));
    assert_eq!(out[4]["text"], json!(["hop again"]));
    let served = lb.served();
    assert!(
        served.iter().all(|n| *n >= 2),
        "both replicas served: {served:?}"
    );

    // The 2026-07-28 era: stateless requests, any replica.
    let modern = modern_client(&format!("{}/sessions/s1/mcp", lb.url())).await;
    let before = lb.served();
    let tools = modern.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "mcp__kit__later"));
    for word in ["one", "two"] {
        let mut call = rmcp::model::CallToolRequestParams::new("mcp__kit__echo");
        call.arguments = json!({"message": word}).as_object().cloned();
        let result = modern.call_tool(call).await.unwrap();
        assert_eq!(result.content[0].as_text().unwrap().text, word);
    }
    let after = lb.served();
    assert!(
        after[0] > before[0] && after[1] > before[1],
        "both replicas served the 2026 client: {before:?} -> {after:?}"
    );
    drop(modern);

    // Deleted through A: B closes it too (its endpoint answers 404).
    sessions_cli(&sb, &a, &["delete", "s1"]);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let endpoint = format!("{b}/sessions/s1/mcp");
    replicas[1]
        .logged("B closes the session deleted through A", |l| {
            l.contains("session closed on this replica") && l.contains("session=s1")
        })
        .await;
    let status = reqwest::Client::new()
        .post(&endpoint)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 404);
    drop(replicas);
}

/// An rmcp client of the 2026-07-28 era (`server/discover`, stateless).
async fn modern_client(url: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    let client = tokio::time::timeout(
        PATIENCE,
        ().serve_with_lifecycle(
            rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned()),
            lifecycle,
        ),
    )
    .await
    .expect("server/discover in time")
    .expect("server/discover");
    assert_eq!(
        client.peer_info().map(|i| i.protocol_version.clone()),
        Some(rmcp::model::ProtocolVersion::V_2026_07_28)
    );
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_refreshes_on_two_replicas_end_with_the_union() {
    let pg = PgServer::shared();
    let db = pg.database();
    // Each replica its own upstream process (as during a rolling update,
    // they differ): a tool added through one is active on that one only.
    let kit = StateDir::new();
    let (program, args) = stdio_command(kit.args()).into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    let sb = std::sync::Arc::new(Sandbox::new());
    config(
        &sb,
        &format!(
            "  kit:\n    command: {:?}\n    args: [{}]\n",
            program.display().to_string(),
            args.join(", ")
        ),
    );
    let replicas = Replica::start_together(&sb, &db, &["a-2", "b-2"], &[]);
    let (a, b) = (replicas[0].base.clone(), replicas[1].base.clone());
    sessions_cli(&sb, &a, &["create", "--id", "shared"]);
    for (base, tool) in [(&a, "from_a"), (&b, "from_b")] {
        let url = format!("{base}/mcp");
        let out = blocking(move || {
            python(
                &url,
                json!([{"op": "call", "name": "mcp__kit__add_tool", "args": {"name": tool}}]),
            )
        })
        .await;
        assert_eq!(out[1]["is_error"], false, "{out:?}");
    }
    // Both refresh at once, twice: the second round confirms.
    for round in 0..2 {
        let refreshes: Vec<_> = [a.clone(), b.clone()]
            .into_iter()
            .map(|base| {
                let sb = sb.clone();
                tokio::task::spawn_blocking(move || {
                    sessions_cli(&sb, &base, &["refresh", "shared"])
                })
            })
            .collect();
        let mut answers = Vec::new();
        for r in refreshes {
            answers.push(r.await.unwrap());
        }
        let (on_a, on_b) = (&answers[0], &answers[1]);
        assert_eq!(on_a["replica"], "a-2");
        assert_eq!(on_b["replica"], "b-2");
        if round == 0 {
            assert_eq!(on_a["added"], json!(["mcp__kit__from_a"]), "{on_a}");
            assert_eq!(on_b["added"], json!(["mcp__kit__from_b"]), "{on_b}");
        } else {
            for answer in [on_a, on_b] {
                assert_eq!(answer["authority_changed"], false, "{answer}");
            }
        }
        let got = sessions_cli(&sb, &b, &["get", "shared"]);
        let granted = strings(&got["granted"]);
        for name in ["mcp__kit__from_a", "mcp__kit__from_b", "mcp__kit__echo"] {
            assert!(granted.contains(&name.to_owned()), "{name}: {granted:?}");
        }
        assert_eq!(got["session"]["granted_count"], json!(granted.len()));
    }
    drop(replicas);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_call_leaves_the_session_usable_on_another() {
    let pg = PgServer::shared();
    let db = pg.database();
    let sb = Sandbox::new();
    config(&sb, "  {}\n");
    // Heartbeats every second: A is taken for gone 3 s after it dies. The
    // per-session server is on loopback, which the operator allows here.
    let mut replicas = Replica::start_together(
        &sb,
        &db,
        &["a-3", "b-3"],
        &["--replica-heartbeat", "1", "--private-session-servers"],
    );
    let lb = Balancer::start(
        [replicas[0].base.clone(), replicas[1].base.clone()],
        Policy::Failover,
    )
    .await;
    // The session's own server, shared by whichever replica serves it.
    let kit_state = StateDir::new();
    let kit = HttpServer::spawn(kit_state.args());
    let (status, created) = http(
        reqwest::Method::POST,
        &format!("{}/v1/sessions", lb.url()),
        Some(json!({"id": "sturdy", "mcp_servers": {"kit": {"url": kit.url()}}})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(lb.served(), [1, 0], "A serves while it lives");
    let url = format!("{}/sessions/sturdy/mcp", lb.url());
    let client = tokio::task::spawn_blocking(move || {
        python(
            &url,
            json!([
                {"op": "call", "name": "mcp__kit__add_tool", "args": {"name": "late"}},
                {"op": "call", "name": "mcp__kit__sleep", "args": {"ms": 600000}, "expect_error": true},
                {"op": "list_tools"},
                {"op": "call", "name": "mcp__kit__echo", "args": {"message": "after"}},
                {"op": "call", "name": "mcp__kit__late", "expect_error": true},
                {"op": "call", "name": "RefreshMcpSources"},
                {"op": "call", "name": "mcp__kit__late"},
            ]),
        )
    });
    // Mid-call: the sleep has reached the session's server through A.
    kit_state
        .until("the sleep call is in flight", PATIENCE, |s| {
            s.counter("sleep") == 1
        })
        .await;
    replicas[0].kill9();
    let out = tokio::time::timeout(PATIENCE, client)
        .await
        .expect("the client finishes")
        .unwrap();
    assert!(
        out[2]["error"].is_string(),
        "the call in flight failed: {out:?}"
    );
    // The same client session, now on B: what it was granted, and no more.
    let tools = strings(&out[3]["tools"]);
    assert!(tools.contains(&"mcp__kit__echo".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"mcp__kit__late".to_owned()), "{tools:?}");
    assert_eq!(out[4]["text"], json!(["after"]));
    let refused = out[5]["error"].as_str().unwrap();
    assert!(refused.contains("not granted to this session"), "{refused}");
    let refresh: Value = serde_json::from_str(out[6]["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(refresh["added"], json!(["mcp__kit__late"]), "{refresh}");
    assert_eq!(refresh["replica"], "b-3");
    assert_eq!(out[7]["is_error"], false, "{out:?}");
    assert!(lb.served()[1] > 0, "B took over");
    // A is swept once its lease passes; the session is held by B alone.
    let session = format!("{}/v1/sessions/sturdy", lb.url());
    replicas[1]
        .logged("A is taken for gone", |l| {
            l.contains("replica went away") && l.contains("a-3")
        })
        .await;
    let (status, got) = http(reqwest::Method::GET, &session, None).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["open_on"], json!(["b-3"]), "{got}");
    assert!(strings(&got["granted"]).contains(&"mcp__kit__late".to_owned()));
    let (_, listed) = http(
        reqwest::Method::GET,
        &format!("{}/v1/replicas", lb.url()),
        None,
    )
    .await;
    let ids: Vec<&str> = listed["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["b-3"], "{listed}");
    drop(replicas);
}

/// Runs `extpool serve --state STATE`, which must stop without serving;
/// returns its exit code and stderr. A replica that starts serving
/// instead is killed and the test fails.
pub(crate) fn refused_start(sb: &Sandbox, state: &str) -> (i32, String) {
    let mut child = sb
        .command()
        .args(["serve", "--listen", "127.0.0.1:0", "--state", state])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
        text
    });
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.unwrap();
        if line.contains("http://") {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a replica served a store it should refuse ({state}): {line}");
        }
    }
    let status = child.wait().unwrap();
    (status.code().unwrap_or(-1), stderr.join().unwrap())
}

#[test]
fn a_replica_refuses_a_store_it_cannot_use_saying_why_once() {
    let pg = PgServer::shared();
    let db = pg.database();
    let sb = Sandbox::new();
    config(&sb, "  {}\n");
    // A wrong password: refused, the store named masked, the password never shown.
    let wrong_password = "not-the-Pass-0815";
    let wrong = db.replace(extpool_testkit::postgres::PASSWORD, wrong_password);
    assert_ne!(wrong, db);
    let (code, stderr) = refused_start(&sb, &wrong);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("password authentication failed"),
        "{stderr}"
    );
    assert!(!stderr.contains(wrong_password), "{stderr}");
    assert_eq!(
        stderr.matches("state store").count(),
        1,
        "said once: {stderr}"
    );
    // A store a newer extpool migrated: refused, and left as it was.
    drop(Replica::start_together(&sb, &db, &["n-1"], &[]));
    pg.psql(
        &db,
        "INSERT INTO extpool_schema (version, description, applied_at_ms) \
         VALUES (999, 'from the future', 0)",
    );
    let (code, stderr) = refused_start(&sb, &db);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("schema version 999"), "{stderr}");
    assert!(stderr.contains("run a newer extpool"), "{stderr}");
    assert!(
        !stderr.contains(extpool_testkit::postgres::PASSWORD),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("state store").count(),
        1,
        "said once: {stderr}"
    );
    assert_eq!(
        pg.psql(
            &db,
            "SELECT string_agg(version::text, ',' ORDER BY version) FROM extpool_schema"
        ),
        format!("{},999", every_version()),
        "the store is untouched"
    );
}

#[test]
fn a_plain_path_and_an_sqlite_url_name_the_same_store() {
    let sb = Sandbox::new();
    config(&sb, "  {}\n");
    let path = sb.dir.path().join("replica.db");
    let plain = path.display().to_string();
    let replicas = Replica::start_together(&sb, &plain, &["f-1"], &[]);
    sessions_cli(&sb, &replicas[0].base, &["create", "--id", "kept"]);
    drop(replicas);
    assert!(path.is_file(), "the store is the file given");
    let url = format!("sqlite:{plain}");
    let replicas = Replica::start_together(&sb, &url, &["f-2"], &[]);
    let got = sessions_cli(&sb, &replicas[0].base, &["get", "kept"]);
    assert_eq!(got["session"]["id"], "kept", "{got}");
    drop(replicas);
}

/// Every schema version this build applies, as `extpool_schema` lists
/// them (`1,2,…`).
fn every_version() -> String {
    (1..=extpool_state::SCHEMA_VERSION)
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",")
}
