//! A gateway on a temporary project, served on 127.0.0.1:0, and the real
//! SDK clients that talk to it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use extpool_host::{Host, HostOptions, Places};
use extpool_server::{Gateway, GatewayOptions};
use extpool_testkit::{StateDir, stdio_command};
use serde_json::Value;
use tempfile::TempDir;

/// Upper bound of anything a test waits for; only reached when broken.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A project directory with an empty home.
pub struct Project {
    pub dir: TempDir,
}

impl Project {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `extpool.yaml` (with `skills.paths: [./skills]`, no default roots).
    pub fn config(&self, servers_yaml: &str) -> PathBuf {
        let path = self.path().join("extpool.yaml");
        std::fs::write(
            &path,
            format!(
                "mcp_servers:\n{servers_yaml}skills:\n  paths: [./skills]\n  default_roots: false\n  watch: false\n"
            ),
        )
        .unwrap();
        path
    }

    /// Writes `skills/<name>/SKILL.md` and one reference file.
    pub fn skill(&self, name: &str, body: &str) {
        let dir = self.path().join("skills").join(name);
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: The {name} skill, for tests\n---\n{body}\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("references/notes.md"),
            format!("Notes of {name}.\n"),
        )
        .unwrap();
    }
}

/// A testkit server entry named `name` with `state`, as YAML.
pub fn testkit_yaml(name: &str, state: &StateDir) -> String {
    server_yaml(name, stdio_command(state.args()))
}

/// A testkit server entry named `name` with `state` and the conformance
/// suite's fixtures (`--conformance`), as YAML.
pub fn conformance_testkit_yaml(name: &str, state: &StateDir) -> String {
    let mut args = state.args();
    args.push("--conformance".into());
    server_yaml(name, stdio_command(args))
}

/// A server entry named `name` running `command`, as YAML.
pub fn server_yaml(name: &str, command: extpool_testkit::StdioCommand) -> String {
    let (program, args) = command.into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "  {name}:\n    command: {:?}\n    args: [{}]\n",
        program.display().to_string(),
        args.join(", ")
    )
}

/// A gateway that requires `token` (its holder: the gateway's one caller,
/// an operator) with a SQLite store of its own, and two callers that bring
/// API keys, `alice` and `bob` (not operators).
pub struct Keyed {
    pub served: Served,
    /// Alice's API key.
    pub alice: String,
    /// Bob's API key.
    pub bob: String,
    /// Kept alive (the store's directory) while served.
    _data: TempDir,
}

impl Keyed {
    /// Serves `project` with `options` (its token and store replaced).
    pub async fn start(project: Project, token: &str, options: GatewayOptions) -> Keyed {
        let data = tempfile::tempdir().unwrap();
        let state = extpool_state::StateStore::open_url(&format!(
            "sqlite:{}",
            data.path().join("state.db").display()
        ))
        .await
        .unwrap();
        let served = Served::start(
            project,
            GatewayOptions {
                bearer: Some(token.into()),
                state: Some(state.clone()),
                ..options
            },
        )
        .await;
        let alice = state.create_api_key("alice", false).await.unwrap().secret;
        let bob = state.create_api_key("bob", false).await.unwrap().secret;
        Keyed {
            served,
            alice,
            bob,
            _data: data,
        }
    }

    /// Stops serving, then lets the store go.
    pub async fn stop(self) {
        self.served.stop().await;
    }
}

/// A gateway serving a project, and where to reach it.
pub struct Served {
    pub url: String,
    pub base: String,
    pub gateway: Gateway,
    /// Kept alive (its directory) while served.
    _project: Project,
}

impl Served {
    /// Starts a host on `project` (relaying servers' requests) and serves it.
    pub async fn start(project: Project, options: GatewayOptions) -> Served {
        Self::start_until(project, options, std::future::pending()).await
    }

    /// [`Served::start`], its shutdown begun when `shutdown` completes
    /// (`Gateway::serve_http_until`).
    pub async fn start_until(
        project: Project,
        options: GatewayOptions,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Served {
        Self::serve(project, options, None, shutdown).await
    }

    /// [`Served::start`] on `listener`, bound by the caller, who needed its
    /// address first (an issuer's audience is the URL clients use).
    pub async fn start_on(
        project: Project,
        options: GatewayOptions,
        listener: tokio::net::TcpListener,
    ) -> Served {
        Self::serve(project, options, Some(listener), std::future::pending()).await
    }

    /// Starts the host and serves it on `listener` (none: one bound on
    /// 127.0.0.1:0) until `shutdown` completes.
    async fn serve(
        project: Project,
        options: GatewayOptions,
        listener: Option<tokio::net::TcpListener>,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Served {
        let host = Host::start(HostOptions {
            places: Places {
                cwd: project.path().to_path_buf(),
                home: Some(project.path().join("home")),
                ..Places::default()
            },
            watch_skills: Some(false),
            relay: true,
            per_caller_servers: true,
            ..HostOptions::files([project.path().join("extpool.yaml")])
        })
        .await
        .unwrap();
        let gateway = Gateway::new(host, options).await.unwrap();
        let listener = match listener {
            Some(listener) => listener,
            None => tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        };
        let addr = listener.local_addr().unwrap();
        let serving = gateway.clone();
        tokio::spawn(async move { serving.serve_http_until(listener, shutdown).await });
        Served {
            url: format!("http://{addr}/mcp"),
            base: format!("http://{addr}"),
            gateway,
            _project: project,
        }
    }

    /// Stops serving and shuts the host down.
    pub async fn stop(self) {
        self.gateway.shutdown().await;
    }
}

/// Which SDK client.
#[derive(Debug, Clone, Copy)]
pub enum Sdk {
    Python,
    TypeScript,
}

/// Runs `steps` with an SDK client against `url`; returns its JSON lines
/// (the first is `initialize`). Fails the test when the client fails.
pub async fn sdk_client(sdk: Sdk, url: &str, steps: Value) -> Vec<Value> {
    sdk_client_with(sdk, &["--url", url], steps).await
}

/// Upper bound of one SDK client process: a whole Python or Node process
/// (interpreter start, SDK import, every step). On 2 cores shared with
/// other builds the Python SDK's import alone took 16 s of wall time for
/// 1.7 s of CPU, so [`PATIENCE`] is too short a bound for a process; this
/// one still catches a hang, and the failure shows the steps done.
pub const CLIENT_PATIENCE: Duration = Duration::from_secs(300);

/// [`sdk_client`] with the connection arguments given (`--url URL` or
/// `--stdio CMD ARGS…`).
pub async fn sdk_client_with(sdk: Sdk, connect: &[&str], steps: Value) -> Vec<Value> {
    let mut command = match sdk {
        Sdk::Python => extpool_testkit::peers::python_client(),
        Sdk::TypeScript => extpool_testkit::peers::typescript_client(),
    };
    command.args(connect).arg(steps.to_string());
    client_lines(command, &format!("{sdk:?} client")).await
}

/// Runs `command`, a client process that prints one JSON object per line,
/// within [`CLIENT_PATIENCE`]; returns its lines. Fails the test when it
/// fails (its output shown, named `what`).
pub async fn client_lines(command: std::process::Command, what: &str) -> Vec<Value> {
    let mut command = tokio::process::Command::from(command);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let stdout = read_all(child.stdout.take().unwrap());
    let stderr = read_all(child.stderr.take().unwrap());
    let waited = tokio::time::timeout(CLIENT_PATIENCE, child.wait()).await;
    if waited.is_err() {
        let _ = child.kill().await;
    }
    // The pipes close with the client (a grandchild could hold them open:
    // then what arrived so far is not shown).
    let collect = |task: tokio::task::JoinHandle<String>| async move {
        tokio::time::timeout(PATIENCE, task)
            .await
            .map(Result::unwrap)
            .unwrap_or_else(|_| "(its output pipe stayed open)".into())
    };
    let (stdout, stderr) = (collect(stdout).await, collect(stderr).await);
    let Ok(status) = waited else {
        panic!(
            "the {what} did not finish within {} s; steps done (one line each): \
             {stdout}\nstderr: {stderr}",
            CLIENT_PATIENCE.as_secs()
        );
    };
    let status = status.unwrap();
    assert!(
        status.success(),
        "the {what} failed: {status}\nstdout: {stdout}\nstderr: {stderr}"
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Everything `pipe` yields until it closes, as text.
fn read_all<R>(mut pipe: R) -> tokio::task::JoinHandle<String>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    use tokio::io::AsyncReadExt;
    tokio::spawn(async move {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes).await;
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Polls `check` until it holds, failing after [`PATIENCE`].
pub async fn eventually(mut check: impl FnMut() -> bool, what: &str) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub use extpool_testkit::procs::pids_with;

/// A 2026-07-28 request sent by hand: `method` with `params` (the per-request
/// `_meta` added), the `MCP-Protocol-Version` header, and `headers` as given
/// (the test decides `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`). Returns
/// the HTTP status and the JSON-RPC message answering it (from a JSON body
/// or the SSE stream).
pub async fn raw_2026(
    url: &str,
    method: &str,
    mut params: Value,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
    });
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = post_2026(url, headers, &body).await;
    let status = response.status().as_u16();
    let text = tokio::time::timeout(PATIENCE, response.text())
        .await
        .expect("no body")
        .unwrap();
    let message = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in: {text}"))
    });
    (status, message)
}

/// A client that speaks the session era (`initialize`, 2025-11-25).
#[derive(Clone, Debug)]
pub struct SessionEra;

impl rmcp::ClientHandler for SessionEra {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::default(),
            rmcp::model::Implementation::new("session-era-test", "1"),
        );
        info.protocol_version = rmcp::model::ProtocolVersion::V_2025_11_25;
        info
    }
}

/// `f`, failing the test after [`PATIENCE`].
pub async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(PATIENCE, f).await.expect("timed out")
}

/// A 2026-07-28 rmcp client (`server/discover`) of `url`.
pub async fn modern(url: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    modern_with(url, ()).await
}

/// A 2026-07-28 rmcp client of `url` with `handler`.
pub async fn modern_with<H: rmcp::ClientHandler>(
    url: &str,
    handler: H,
) -> rmcp::service::RunningService<rmcp::RoleClient, H> {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    within(handler.serve_with_lifecycle(
        rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned()),
        lifecycle,
    ))
    .await
    .expect("server/discover")
}

/// A testkit server over streamable HTTP with the 2026-07-28 era's tools
/// (`--modern`) and `args`, recording its requests in `state`.
pub async fn modern_http_upstream(state: &StateDir, args: &[&str]) -> extpool_testkit::HttpServer {
    let mut all = state.args();
    all.push("--modern".into());
    all.extend(args.iter().map(|a| (*a).to_owned()));
    tokio::task::spawn_blocking(move || extpool_testkit::HttpServer::spawn(all))
        .await
        .unwrap()
}

/// A remote server entry named `name` at `url`, spoken to in `protocol`'s
/// era, with `extra` YAML lines (indented under the entry), as YAML.
pub fn remote_yaml(name: &str, url: &str, protocol: &str, extra: &str) -> String {
    format!("  {name}:\n    url: {url:?}\n    protocol: {protocol:?}\n{extra}")
}

/// A POST of `body` to MCP endpoint `url` as a session-era client sends
/// it: JSON, accepting JSON and SSE, with `session`'s id and protocol
/// version when given.
pub fn mcp_post(url: &str, session: Option<(&str, &str)>, body: String) -> reqwest::RequestBuilder {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    if let Some((id, version)) = session {
        request = request
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", version);
    }
    request
}

/// The next SSE event's JSON of `response`, reading more of it as needed
/// (`buffer` keeps what came after); comments and empty events skipped.
pub async fn next_event(
    response: &mut reqwest::Response,
    buffer: &mut String,
) -> serde_json::Value {
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data: String = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            if !data.is_empty() {
                return serde_json::from_str(&data).unwrap();
            }
            continue;
        }
        let chunk = within(response.chunk())
            .await
            .unwrap()
            .expect("the stream ended");
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

/// POSTs `body`, a 2026-07-28 message, to `url` with the era's
/// `Content-Type`, `Accept` and `MCP-Protocol-Version`, and `headers` as
/// given (the test decides `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`): its
/// answer.
pub async fn post_2026(url: &str, headers: &[(&str, &str)], body: &Value) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    within(request.body(body.to_string()).send()).await.unwrap()
}

/// A raw 2026-07-28 `subscriptions/listen` of `url` with id `id` asking
/// for `notifications` (a `SubscriptionFilter` as JSON), whose stream
/// acknowledges `acknowledged` under that id: the open answer, and what
/// was read of it past the acknowledgment.
pub async fn raw_listen(
    url: &str,
    id: &str,
    notifications: Value,
    acknowledged: Value,
) -> (reqwest::Response, String) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
    "params": {
        "notifications": notifications,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }});
    let mut response = post_2026(url, &[("mcp-method", "subscriptions/listen")], &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut buffer = String::new();
    let ack = next_event(&mut response, &mut buffer).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["notifications"], acknowledged, "{ack}");
    assert_eq!(subscription_id(&ack), Some(Value::from(id)), "{ack}");
    (response, buffer)
}

/// The subscription id in `message`'s `_meta`, if any.
pub fn subscription_id(message: &Value) -> Option<Value> {
    message["params"]["_meta"]
        .as_object()
        .and_then(|m| m.iter().find(|(k, _)| k.ends_with("subscriptionId")))
        .map(|(_, v)| v.clone())
}

/// The HTTP status (and `Retry-After`) an rmcp client's request failed
/// with, when it failed for one: how rmcp reads a 429 (a rate limit's
/// refusal, SEP-3304), by its status and header, not its body.
pub fn http_status_of(e: &rmcp::ServiceError) -> Option<(u16, Option<String>)> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(StreamableHttpError::HttpStatus(status)) =
            c.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return Some((status.status, status.retry_after.clone()));
        }
        cause = c.source();
    }
    None
}
