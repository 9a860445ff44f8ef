//! DNS rebinding into the addresses a per-session server may not be on:
//! the address rule is checked at every connection, on the address then
//! connected to — not only when the session is made.
//!
//! `extpool serve` runs in a mount namespace of its own (`unshare`, as an
//! unprivileged user) whose `/etc/hosts` is a file this test rewrites, so
//! what a name resolves to is the test's, through the resolver the gateway
//! uses for every connection (the C library's `getaddrinfo`, which reads
//! the hosts file at each lookup). No public DNS is asked.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use extpool_testkit::{HttpServer, StateDir};
use serde_json::{Value, json};

use crate::serve::{Served, sigterm};
use crate::support::Sandbox;

/// The name the per-session servers are reached by.
const NAME: &str = "mcp.rebind.example";
/// A public address (by the rule), where nothing answers for the test.
const PUBLIC: &str = "198.51.99.7";
/// Upper bound of anything a test waits for; only reached when broken.
const PATIENCE: Duration = Duration::from_secs(90);

/// The gateway's hosts file, rewritten in place (it is bind-mounted).
struct Hosts(PathBuf);

impl Hosts {
    fn new(sb: &Sandbox, address: &str) -> Hosts {
        let hosts = Hosts(sb.write("hosts", ""));
        hosts.point(address);
        hosts
    }

    /// Makes [`NAME`] resolve to `addresses` (a space between two), and
    /// nothing else.
    fn point(&self, addresses: &str) {
        let lines: String = addresses
            .split(' ')
            .map(|address| format!("{address} {NAME}\n"))
            .collect();
        std::fs::write(&self.0, format!("127.0.0.1 localhost\n{lines}")).unwrap();
    }
}

/// The arguments of a testkit server with state `kit` that answers
/// requests for [`NAME`] (by port), as a server deployed behind it does.
fn serving_the_name(kit: &StateDir) -> Vec<String> {
    let mut args = kit.args();
    args.extend(["--allowed-host".to_owned(), NAME.to_owned()]);
    args
}

/// `extpool serve ARGS` in the sandbox, in a mount namespace whose
/// `/etc/hosts` is `hosts`.
fn serve_resolving_with(sb: &Sandbox, hosts: &Hosts, args: &[&str]) -> Served {
    let probe = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "true"])
        .output()
        .expect("running unshare (util-linux)");
    assert!(
        probe.status.success(),
        "this test gives the gateway a hosts file of its own with unprivileged user and mount namespaces (unshare --user --mount), which this machine refuses: {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let gateway = sb.command();
    let mut command = Command::new("unshare");
    command.args(["--user", "--map-root-user", "--mount", "sh", "-c"]);
    command.arg("mount --bind \"$0\" /etc/hosts && exec \"$@\"");
    command.arg(&hosts.0).arg(gateway.get_program());
    command.arg("serve").args(args);
    command.current_dir(gateway.get_current_dir().unwrap_or(Path::new(".")));
    for (key, value) in gateway.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    Served::spawn(command)
}

/// `METHOD base+path` with a JSON body: status and JSON.
fn api(base: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = reqwest::Client::new().request(method, format!("{base}{path}"));
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
    })
}

/// The state and error of session `id`'s one server, as `GET` shows it.
fn server_status(base: &str, id: &str) -> (String, String) {
    let (status, got) = api(base, "GET", &format!("/v1/sessions/{id}"), None);
    assert_eq!(status, 200, "{got}");
    let row = &got["server_status"][0];
    (
        row["state"].as_str().unwrap_or_default().to_owned(),
        row["error"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Refreshes session `id` once and returns its server's error, which must
/// say `refused`; fails if the server was reached. No retry is needed: the
/// refresh answers after a reconciliation cycle begun after it was asked
/// (one still running is finished first), and that cycle connects the
/// failed server anew, resolving its name through the hosts file as it is
/// now.
fn refreshed_and_refused(base: &str, id: &str, refused: &str) -> String {
    let (status, answer) = api(
        base,
        "POST",
        &format!("/v1/sessions/{id}/mcp-refresh"),
        None,
    );
    assert_eq!(status, 200, "{answer}");
    let (state, error) = server_status(base, id);
    assert_ne!(state, "ready", "the rebound server was reached: {answer}");
    assert!(
        error.contains(refused),
        "not refused as {refused:?} at the first refresh after the rewrite: {state} {error}"
    );
    error
}

#[test]
fn a_name_that_rebinds_after_the_create_is_refused_at_connect() {
    let sb = Sandbox::new();
    sb.write("extpool.yaml", "mcp_servers: {}\n");
    // The server a rebinding would reach: on loopback.
    let kit = StateDir::new();
    let target = HttpServer::spawn(serving_the_name(&kit));
    let port = target.url().rsplit(':').next().unwrap().to_owned();
    let url = format!("http://{NAME}:{port}");
    let hosts = Hosts::new(&sb, PUBLIC);
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let mut served =
        serve_resolving_with(&sb, &hosts, &["--listen", "127.0.0.1:0", "--state", &db]);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    // Made while the name is public: accepted.
    let server = json!({"url": url, "startup_timeout_ms": 3000});
    let (status, made) = api(
        &base,
        "POST",
        "/v1/sessions",
        Some(json!({"id": "flip", "mcp_servers": {"flip": server}})),
    );
    assert_eq!(status, 201, "{made}");
    // The name now answers loopback: each connection after is refused,
    // naming the address, and nothing reaches the server there.
    hosts.point("127.0.0.1");
    let error = refreshed_and_refused(
        &base,
        "flip",
        "mcp.rebind.example is a loopback address (127.0.0.1); a per-session server must be on a public address",
    );
    assert!(error.contains("cannot connect to"), "{error}");
    // Other rebinding targets, each refused as it resolves.
    for (address, says) in [
        ("::1", "is a loopback address (::1)"),
        (
            "::ffff:127.0.0.1",
            "is a loopback address (::ffff:127.0.0.1)",
        ),
        ("10.11.12.13", "is a private address (10.11.12.13)"),
        (
            "169.254.169.254",
            "is a cloud metadata address (169.254.169.254)",
        ),
        // One refused address among public ones refuses the name.
        ("198.51.99.7 127.0.0.2", "is a loopback address (127.0.0.2)"),
    ] {
        hosts.point(address);
        refreshed_and_refused(&base, "flip", says);
    }
    assert_eq!(
        kit.requests(),
        Vec::<Value>::new(),
        "a rebound connection reached the server"
    );
    assert_eq!(sigterm(&mut served), 143);
}

#[test]
fn a_private_server_whose_name_rebinds_to_metadata_is_refused_at_its_reconnect() {
    let sb = Sandbox::new();
    sb.write("extpool.yaml", "mcp_servers: {}\n");
    let kit = StateDir::new();
    let mut target = HttpServer::spawn(serving_the_name(&kit));
    let port = target.url().rsplit(':').next().unwrap().to_owned();
    let url = format!("http://{NAME}:{port}");
    let hosts = Hosts::new(&sb, "127.0.0.1");
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let mut served = serve_resolving_with(
        &sb,
        &hosts,
        &[
            "--listen",
            "127.0.0.1:0",
            "--state",
            &db,
            "--private-session-servers",
        ],
    );
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let server = json!({"url": url, "startup_timeout_ms": 3000});
    let (status, made) = api(
        &base,
        "POST",
        "/v1/sessions",
        Some(json!({"id": "inside", "mcp_servers": {"inside": server}})),
    );
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["server_status"][0]["state"], "ready", "{made}");
    let endpoint = format!("{base}/sessions/inside/mcp");
    assert_eq!(call_echo(&endpoint), Ok("reached".to_owned()));
    // The name moves to the metadata address and the server's connection
    // breaks: the next call's reconnect resolves again, and is refused.
    hosts.point("169.254.169.254");
    target.kill();
    let told = call_echo(&endpoint).unwrap_err();
    assert!(
        told.contains("mcp.rebind.example is a cloud metadata address (169.254.169.254); a per-session server must be on a public address"),
        "{told}"
    );
    assert_eq!(sigterm(&mut served), 143);
}

/// Calls the per-session server's `echo` through the session's endpoint
/// (an rmcp client): its text, or the error the call ended with.
fn call_echo(endpoint: &str) -> Result<String, String> {
    use rmcp::ServiceExt;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let transport =
            rmcp::transport::StreamableHttpClientTransport::from_uri(endpoint.to_owned());
        let client = tokio::time::timeout(PATIENCE, ().serve(transport))
            .await
            .unwrap()
            .unwrap();
        let mut params = rmcp::model::CallToolRequestParams::new("mcp__inside__echo");
        params.arguments = json!({"message": "reached"}).as_object().cloned();
        let called = tokio::time::timeout(PATIENCE, client.call_tool(params))
            .await
            .unwrap();
        let _ = client.cancel().await;
        let result = called.map_err(|e| e.to_string())?;
        let text = result.content[0].as_text().unwrap().text.clone();
        if result.is_error == Some(true) {
            Err(text)
        } else {
            Ok(text)
        }
    })
}
