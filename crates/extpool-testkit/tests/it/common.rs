//! Client-side helpers: connecting an rmcp client to a server over stdio or
//! HTTP, recording server notifications, and bounding every wait.

use std::{
    future::Future,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use extpool_testkit::StdioCommand;
#[allow(deprecated)] // logging (SEP-2577) is deprecated, but servers still send it
use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, JsonObject, LoggingMessageNotificationParam,
        ProgressNotificationParam,
    },
    service::{NotificationContext, RunningService, ServiceError},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tokio::sync::Notify;

/// Number of built-in tools of the test server.
pub const BUILTIN_TOOL_COUNT: usize = 23;

/// No extra server arguments.
pub const NO_ARGS: &[&str] = &[];

/// Upper bound for anything a test waits for; only reached when broken.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Awaits `f`, failing the test if it takes longer than [`PATIENCE`].
pub async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(PATIENCE, f)
        .await
        .expect("timed out waiting")
}

/// Waits until `check` holds for what the servers recorded in `state`
/// (looking again at each change there), failing after [`PATIENCE`].
pub async fn recorded(
    state: &extpool_testkit::StateDir,
    what: &str,
    check: impl FnMut(&extpool_testkit::StateDir) -> bool,
) {
    state.until(what, PATIENCE, check).await;
}

/// Records the list_changed notifications a client receives.
#[derive(Clone, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<&'static str>>>,
    arrived: Arc<Notify>,
}

impl Recorder {
    fn record(&self, event: &'static str) {
        self.events.lock().unwrap().push(event);
        self.arrived.notify_waiters();
    }

    /// How many notifications of `kind` ("tools", "resources", "prompts",
    /// "log", "progress") arrived so far.
    pub fn count(&self, kind: &str) -> usize {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| **e == kind)
            .count()
    }

    /// Waits until at least `n` notifications of `kind` arrived.
    pub async fn wait_for(&self, kind: &str, n: usize) {
        within(async {
            loop {
                let arrived = self.arrived.notified();
                if self.count(kind) >= n {
                    return;
                }
                // Re-check periodically in case a notification raced the
                // registration above.
                let _ = tokio::time::timeout(Duration::from_millis(100), arrived).await;
            }
        })
        .await;
    }
}

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.record("tools");
    }

    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.record("resources");
    }

    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.record("prompts");
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        _: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.record("log");
    }

    async fn on_progress(&self, _: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        self.record("progress");
    }
}

/// A connected client.
pub type Client = RunningService<RoleClient, Recorder>;

/// Connects to a stdio server; the child runs in its own process group,
/// killed when the client goes away. Its stderr is discarded.
pub async fn connect_command(command: StdioCommand) -> (Client, Recorder) {
    connect_tokio_command(command.tokio_command(), Stdio::null()).await
}

/// `command` as the leader of its own process group, killed synchronously
/// when dropped (rmcp's own cleanup runs in a task that may never run once
/// a test's runtime shuts down).
pub fn group_killed_on_drop(command: tokio::process::Command) -> process_wrap::tokio::CommandWrap {
    let mut wrap = process_wrap::tokio::CommandWrap::from(command);
    wrap.wrap(process_wrap::tokio::ProcessGroup::leader())
        .wrap(process_wrap::tokio::KillOnDrop);
    wrap
}

/// Connects to the command line `command`, with stderr sent to `stderr`.
pub async fn connect_tokio_command(
    command: tokio::process::Command,
    stderr: Stdio,
) -> (Client, Recorder) {
    let (transport, _) = TokioChildProcess::builder(group_killed_on_drop(command))
        .stderr(stderr)
        .spawn()
        .expect("spawning the stdio server");
    let recorder = Recorder::default();
    let client = within(recorder.clone().serve(transport))
        .await
        .expect("MCP handshake over stdio");
    (client, recorder)
}

/// Connects to the test server over stdio with the extra `args`.
pub async fn connect_stdio(args: &[&str]) -> (Client, Recorder) {
    connect_command(extpool_testkit::stdio_command(args)).await
}

/// Connects to a streamable HTTP server at `url`, with a bearer token if
/// given; returns the handshake's outcome.
pub async fn try_connect_http(
    url: &str,
    token: Option<&str>,
) -> Result<(Client, Recorder), rmcp::service::ClientInitializeError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token.to_owned());
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    let recorder = Recorder::default();
    let client = within(recorder.clone().serve(transport)).await?;
    Ok((client, recorder))
}

/// Connects to a streamable HTTP server at `url`.
pub async fn connect_http(url: &str) -> (Client, Recorder) {
    try_connect_http(url, None)
        .await
        .expect("MCP handshake over HTTP")
}

/// Arguments as a JSON object.
pub fn args(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// Calls `tool` with `arguments`.
pub async fn call(
    client: &Client,
    tool: &'static str,
    arguments: serde_json::Value,
) -> Result<CallToolResult, ServiceError> {
    within(client.call_tool(CallToolRequestParams::new(tool).with_arguments(args(arguments)))).await
}

/// Calls `tool` and returns its only text block.
pub async fn call_text(
    client: &Client,
    tool: &'static str,
    arguments: serde_json::Value,
) -> String {
    let result = call(client, tool, arguments)
        .await
        .unwrap_or_else(|e| panic!("calling {tool}: {e}"));
    assert_ne!(result.is_error, Some(true), "{tool} failed: {result:?}");
    text_of(&result)
}

/// The text of a result's first block.
pub fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_else(|| panic!("no text block in {result:?}"))
}
