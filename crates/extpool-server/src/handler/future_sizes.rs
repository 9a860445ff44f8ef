//! The sizes of the futures a `tools/call` goes through on the gateway
//! (issue: one way in, the call path's futures small): the front end's
//! per-request future ([`crate::front::serve`], what the HTTP task holds),
//! the handler's dispatch future ([`GatewayHandler::dispatch`]) and the
//! call's ([`GatewayHandler::call`]), for a session-era and a 2026-07-28
//! `tools/call`, against a real gateway in front of the raw echo server.
//! Each is measured, held to a bound, and then awaited, so the size is
//! that of a future that answers the call.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use extpool_host::core::Principal;
use extpool_host::{Host, HostOptions, Places};
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, GetMeta, InitializeRequestParams,
    JsonRpcRequest,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::GatewayHandler;
use super::caller::Caller;
use super::exchange::{Back, Exchange};
use crate::client_peer::{ClientPeer, Outbound};
use crate::gateway::{Gateway, GatewayOptions};
use crate::shared::Shared;

/// The bounds, about twice what each measured when they were set (a
/// debug build): the front end's per-request future (11,192 bytes in both
/// eras), the handler's dispatch future (7,144) and the call's (5,568).
const MAX_FRONT_FUTURE_BYTES: usize = 22 * 1024;
const MAX_DISPATCH_FUTURE_BYTES: usize = 14 * 1024;
const MAX_CALL_FUTURE_BYTES: usize = 11 * 1024;

/// The session-era protocol version the client speaks.
const SESSION_ERA: &str = "2025-11-25";
/// The stand-alone era.
const STATELESS_ERA: &str = "2026-07-28";

/// A gateway on a project with the raw echo server as `echo`, and the
/// project's directory (removed when dropped).
async fn gateway() -> (Gateway, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = dir.path().join("extpool.yaml");
    let echo = extpool_testkit::raw_echo_binary().display().to_string();
    std::fs::write(
        &config,
        format!("mcp_servers:\n  echo:\n    command: {echo:?}\nskills:\n  default_roots: false\n"),
    )
    .expect("writing extpool.yaml");
    let host = Host::start(HostOptions {
        places: Places {
            cwd: dir.path().to_path_buf(),
            home: Some(dir.path().join("home")),
            ..Places::default()
        },
        watch_skills: Some(false),
        relay: true,
        ..HostOptions::files([config])
    })
    .await
    .expect("starting the host");
    let gateway = Gateway::new(host, GatewayOptions::default())
        .await
        .expect("starting the gateway");
    (gateway, dir)
}

/// The name the gateway lists the raw echo server's `echo` tool by.
fn echo_tool(gateway: &Gateway) -> String {
    let tools = gateway.listed_tools();
    tools
        .iter()
        .map(|t| t.name.to_string())
        .find(|n| n.ends_with("echo") && n != "echo")
        .unwrap_or_else(|| panic!("no echo tool among {tools:?}"))
}

/// What `/mcp`'s route hands the front end: handlers of the gateway's.
fn make(shared: &Arc<Shared>) -> crate::front::MakeHandler {
    let shared = shared.clone();
    Box::new(move || Box::pin(async move { Ok(GatewayHandler::new(shared)) }))
}

/// A POST of `body` to `/mcp` with `headers` (and the media types).
fn post(body: &Value, headers: &[(&str, &str)]) -> Request {
    let mut r = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        r = r.header(*name, *value);
    }
    r.body(Body::from(body.to_string())).expect("a request")
}

/// The `_meta` a 2026-07-28 request carries.
fn stateless_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": STATELESS_ERA,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "future-sizes", "version": "1"}})
}

/// A `tools/call` of `tool` with id `id`, echoing `message` (with the
/// 2026-07-28 `_meta` when `stateless`).
fn call_body(tool: &str, id: u64, message: &str, stateless: bool) -> Value {
    let mut params = json!({"name": tool, "arguments": {"message": message}});
    if stateless {
        params["_meta"] = stateless_meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The text of the echo answer in an HTTP answer's body: JSON, or the
/// SSE stream a session's answer becomes when it takes longer than the
/// session's wait (a loaded machine), its event that carries the result.
async fn answered_text(response: axum::response::Response) -> String {
    let status = response.status();
    assert_eq!(status, 200);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("the answer's body");
    let text = String::from_utf8_lossy(&bytes);
    let answer = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|v| v.get("result").is_some() || v.get("error").is_some())
        })
        .unwrap_or_else(|| panic!("no answer in {text}"));
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
        .to_owned()
}

/// The request and the exchange the front end makes of `body` (a
/// `tools/call`): its `_meta` taken from its params, as
/// [`crate::front::Session`] takes it.
fn exchange(
    shared: &Shared,
    body: &Value,
    session: Option<Arc<InitializeRequestParams>>,
) -> (CallToolRequestParams, Exchange) {
    let message: ClientJsonRpcMessage = serde_json::from_value(body.clone()).expect("a message");
    let ClientJsonRpcMessage::Request(JsonRpcRequest {
        id,
        request: mut request @ ClientRequest::CallToolRequest(_),
        ..
    }) = message
    else {
        panic!("not a tools/call: {body}");
    };
    let meta = std::mem::take(request.get_meta_mut());
    let ClientRequest::CallToolRequest(call) = request else {
        unreachable!("matched above");
    };
    let standalone = session.is_none();
    let ex = Exchange {
        id,
        ct: CancellationToken::new(),
        meta,
        caller: Caller::of(shared, Arc::new(Principal::local())),
        headers: None,
        back: Back::Queue {
            client: Arc::new(NoRequests),
            progress: None,
        },
        session,
        standalone,
        span: None,
        read: Default::default(),
    };
    (call.params, ex)
}

/// The client side of an exchange made here: the raw echo server asks
/// its client nothing, so nothing is taken.
struct NoRequests;

#[async_trait::async_trait]
impl extpool_host::CallClient for NoRequests {
    async fn request(&self, method: &str, _params: Value) -> Result<Value, String> {
        Err(format!("this test's client takes no {method}"))
    }

    fn accepts(&self, _method: &str) -> bool {
        false
    }

    fn log(&self, _params: Value) {}
}

/// Measures `future` (named `what`), holds it to `max`, then awaits it.
async fn sized<F: Future>(what: &str, future: F, max: usize) -> F::Output {
    let bytes = std::mem::size_of_val(&future);
    eprintln!("{what}: {bytes} bytes");
    assert!(bytes <= max, "{what} is {bytes} bytes, over {max}");
    future.await
}

/// The handler's dispatch and call futures of `body` (a `tools/call` of
/// `handler`'s client, `session` its `initialize` if it has one),
/// measured and awaited: each answers with `message`.
async fn dispatch_and_call(
    era: &str,
    handler: &GatewayHandler,
    body: &Value,
    session: Option<Arc<InitializeRequestParams>>,
    message: &str,
) {
    let shared = handler.shared().clone();
    let (params, ex) = exchange(&shared, body, session.clone());
    let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(params));
    let result = sized(
        &format!("the handler's dispatch future ({era})"),
        handler.dispatch(request, &ex),
        MAX_DISPATCH_FUTURE_BYTES,
    )
    .await
    .expect("the dispatch answers");
    let text = serde_json::to_value(&result).expect("a result");
    assert_eq!(text["content"][0]["text"], message, "{text}");
    let (params, ex) = exchange(&shared, body, session);
    let response = sized(
        &format!("the call's future ({era})"),
        handler.call(params, &ex),
        MAX_CALL_FUTURE_BYTES,
    )
    .await
    .expect("the call answers");
    let text = serde_json::to_value(rmcp::model::ServerResult::from(response)).expect("a response");
    assert_eq!(text["content"][0]["text"], message, "{text}");
}

#[tokio::test]
async fn a_session_era_tools_call_goes_through_small_futures() {
    let (gateway, _dir) = gateway().await;
    let shared = gateway.shared.clone();
    let tool = echo_tool(&gateway);
    let version = [("mcp-protocol-version", SESSION_ERA)];
    let params = json!({"protocolVersion": SESSION_ERA, "capabilities": {},
        "clientInfo": {"name": "future-sizes", "version": "1"}});
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params});
    let answer = crate::front::serve(&shared, "", post(&init, &version), make(&shared)).await;
    assert_eq!(answer.status(), 200);
    let session = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let headers = [version[0], ("mcp-session-id", session.as_str())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer =
        crate::front::serve(&shared, "", post(&initialized, &headers), make(&shared)).await;
    assert_eq!(answer.status(), 202);

    let call = call_body(&tool, 1, "through the front", false);
    let front = crate::front::serve(&shared, "", post(&call, &headers), make(&shared));
    let answer = sized(
        "the front end's per-request future (session era)",
        front,
        MAX_FRONT_FUTURE_BYTES,
    )
    .await;
    assert_eq!(answered_text(answer).await, "through the front");

    // A session's handler, initialized as the front end initializes one.
    let params: InitializeRequestParams = serde_json::from_value(params).expect("params");
    let handler = GatewayHandler::new(shared.clone());
    let principal = Principal::local();
    let outbound = Outbound::new(params.clone());
    handler
        .initialize(&principal, &params, ClientPeer::Own(outbound))
        .await
        .expect("initialized");
    let call = call_body(&tool, 2, "through the handler", false);
    let session = Some(Arc::new(params));
    dispatch_and_call(
        "session era",
        &handler,
        &call,
        session,
        "through the handler",
    )
    .await;
    gateway.shutdown().await;
}

#[tokio::test]
async fn a_2026_07_28_tools_call_goes_through_small_futures() {
    let (gateway, _dir) = gateway().await;
    let shared = gateway.shared.clone();
    let tool = echo_tool(&gateway);
    let call = call_body(&tool, 1, "through the front", true);
    let headers = [
        ("mcp-protocol-version", STATELESS_ERA),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool.as_str()),
    ];
    let front = crate::front::serve(&shared, "", post(&call, &headers), make(&shared));
    let answer = sized(
        "the front end's per-request future (2026-07-28)",
        front,
        MAX_FRONT_FUTURE_BYTES,
    )
    .await;
    assert_eq!(answered_text(answer).await, "through the front");

    // A stand-alone request's handler, made as the front end makes one.
    let handler = GatewayHandler::new(shared.clone());
    let call = call_body(&tool, 2, "through the handler", true);
    dispatch_and_call("2026-07-28", &handler, &call, None, "through the handler").await;
    gateway.shutdown().await;
}
