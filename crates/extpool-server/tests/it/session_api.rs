//! What a client of `/v1/sessions` may ask for, and what it is told:
//! per-session servers checked as configured ones are (URL, headers) and
//! against the address policy, counts bounded before anything is built,
//! malformed bodies and cursors refused naming what is wrong — never a
//! server error, never a panic — and a session idle for the timeout
//! closed in memory and opened again on its next request.

use std::time::Duration;

use extpool_server::GatewayOptions;
use extpool_testkit::{HttpServer, StateDir};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::{PATIENCE, Project, Served, within};

async fn served(options: GatewayOptions) -> (Served, tempfile::TempDir) {
    let db = tempfile::tempdir().unwrap();
    let store = extpool_state::StateStore::open_url(&format!(
        "sqlite:{}",
        db.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let project = Project::new();
    project.config("");
    let served = Served::start(
        project,
        GatewayOptions {
            state: Some(store),
            ..options
        },
    )
    .await;
    (served, db)
}

async fn send(method: reqwest::Method, url: &str, body: Option<String>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let response = within(request.send()).await.unwrap();
    let status = response.status().as_u16();
    let text = within(response.text()).await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn create(served: &Served, body: Value) -> (u16, Value) {
    send(
        reqwest::Method::POST,
        &format!("{}/v1/sessions", served.base),
        Some(body.to_string()),
    )
    .await
}

fn error(answer: &Value) -> &str {
    answer["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error in {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_session_servers_are_checked_before_a_session_is_made() {
    let (served, _db) = served(GatewayOptions::default()).await;
    let many_headers: serde_json::Map<String, Value> = (0..40_000)
        .map(|i| (format!("x-h{i}"), json!("v")))
        .collect();
    let many_servers: serde_json::Map<String, Value> = (0..5_000)
        .map(|i| (format!("s{i}"), json!({"url": "https://example.com/mcp"})))
        .collect();
    let cases = [
        (
            json!({"file": {"url": "file:///etc/passwd"}}),
            "scheme \"file\" is not http or https",
        ),
        (
            json!({"g": {"url": "gopher://example.com/1"}}),
            "scheme \"gopher\" is not http or https",
        ),
        (
            json!({"m": {"url": "http://169.254.169.254/latest/meta-data"}}),
            "is a cloud metadata address",
        ),
        (
            json!({"m": {"url": "http://metadata.google.internal/"}}),
            "metadata.google.internal is a cloud metadata address; a per-session server",
        ),
        (
            json!({"z": {"url": "http://0.0.0.0:1/"}}),
            "0.0.0.0 is an unspecified address (0.0.0.0)",
        ),
        (
            json!({"l": {"url": "http://[fe80::1]:8080/mcp"}}),
            "is a link-local address",
        ),
        (
            json!({"lo": {"url": "http://127.0.0.1:9/mcp"}}),
            "is a loopback address (127.0.0.1); a per-session server must be on a public address (a gateway whose operator allows them runs with --private-session-servers)",
        ),
        (
            json!({"lo": {"url": "http://localhost:9/mcp"}}),
            "localhost is a loopback address",
        ),
        (
            json!({"p": {"url": "https://10.1.2.3/mcp"}}),
            "is a private address",
        ),
        (
            json!({"c": {"url": "https://user:pw@example.com/mcp"}}),
            "credentials in the URL are not allowed",
        ),
        (
            json!({"h": {"url": "https://example.com/mcp", "headers": many_headers}}),
            "40000 headers; at most 64 are accepted",
        ),
        (
            json!({"h": {"url": "https://example.com/mcp", "headers": {"x-big": "v".repeat(9000)}}}),
            "a header value is at most 8192 bytes",
        ),
        (
            Value::Object(many_servers),
            "5000 per-session MCP servers asked for; this gateway holds at most 64 at once",
        ),
        (
            json!({"bad-name": {"url": "https://example.com/mcp"}}),
            "per-session server \"bad-name\"",
        ),
        (
            json!({"o": {"url": "https://example.com/mcp", "oauth": {}}}),
            "a per-session server cannot have an `oauth` profile",
        ),
    ];
    // Headers of HTTP itself: refused, naming the header.
    let http_headers = [
        "Host",
        "Content-Length",
        "Transfer-Encoding",
        "Connection",
        "Keep-Alive",
        "Upgrade",
        "TE",
        "Trailer",
        "Proxy-Authorization",
        "Proxy-Connection",
    ];
    let cases = cases
        .into_iter()
        .map(|(servers, says)| (servers, says.to_owned()))
        .chain(http_headers.iter().map(|header| {
            (
                json!({"h": {"url": "https://example.com/mcp", "headers": {*header: "x"}}}),
                format!("header \"{header}\": a header of HTTP itself (framing, the connection, a proxy), set by the HTTP client"),
            )
        }));
    for (servers, says) in cases {
        let (status, answer) = create(&served, json!({"mcp_servers": servers})).await;
        assert_eq!(status, 400, "{says}: {answer}");
        assert!(error(&answer).contains(&says), "{says}: {answer}");
    }
    for (body, says) in [
        ("[]", "the body is a JSON object"),
        ("7", "the body is a JSON object"),
        (
            "{\"mcp_servers\": 5}",
            "the body: invalid type: integer `5`",
        ),
        ("{\"idd\": \"x\"}", "unknown field `idd`"),
        // Its endpoint would be /sessions/../mcp, which clients send to /mcp.
        ("{\"id\": \"..\"}", "path segments"),
        ("{\"id\": \".\"}", "path segments"),
        ("{bad", "the body is not JSON"),
    ] {
        let (status, answer) = send(
            reqwest::Method::POST,
            &format!("{}/v1/sessions", served.base),
            Some(body.into()),
        )
        .await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(error(&answer).contains(says), "{body}: {answer}");
    }
    let (status, answer) = send(
        reqwest::Method::GET,
        &format!("{}/v1/sessions?cursor=garbage", served.base),
        None,
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert!(error(&answer).contains("cursor"), "{answer}");
    for query in ["limit=abc", "limit=-1", "cursor=a&cursor=b"] {
        let (status, answer) = send(
            reqwest::Method::GET,
            &format!("{}/v1/sessions?{query}", served.base),
            None,
        )
        .await;
        assert_eq!(status, 400, "{query}: {answer}");
        assert!(
            error(&answer).starts_with("the query string: "),
            "{query}: {answer}"
        );
    }
    let (status, answer) = send(
        reqwest::Method::GET,
        &format!("{}/v1/sources?after=x", served.base),
        None,
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert!(error(&answer).starts_with("the query string: "), "{answer}");
    // Nothing was made, and the gateway serves on.
    let (status, listed) = send(
        reqwest::Method::GET,
        &format!("{}/v1/sessions", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(listed["sessions"], json!([]), "{listed}");
    let (status, made) = create(&served, json!({"id": "fine"})).await;
    assert_eq!(status, 201, "{made}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_session_server_that_fails_shows_its_failure_in_the_session() {
    let (served, _db) = served(GatewayOptions {
        private_session_servers: true,
        ..GatewayOptions::default()
    })
    .await;
    // A port nothing listens on (for as long as `closed` lives).
    let closed = extpool_testkit::ClosedPort::new();
    let url = format!("http://{}/mcp", closed.addr());
    let (status, made) = create(
        &served,
        json!({"id": "broken", "mcp_servers": {"gone": {"url": url}}}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let (status, got) = send(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/broken", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "{got}");
    let row = &got["server_status"][0];
    assert_eq!(row["name"], "gone", "{got}");
    assert_eq!(row["state"], "failed", "{got}");
    assert!(
        row["error"].as_str().unwrap_or_default().contains("gone"),
        "{got}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_durable_session_closes_here_and_opens_again_on_its_next_request() {
    let (served, _db) = served(GatewayOptions {
        private_session_servers: true,
        session_idle_timeout: Duration::from_secs(1),
        ..GatewayOptions::default()
    })
    .await;
    let kit = StateDir::new();
    let own = HttpServer::spawn(kit.args());
    let (status, made) = create(
        &served,
        json!({"id": "napper", "mcp_servers": {"own": {"url": own.url()}}}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["server_status"][0]["state"], "ready", "{made}");
    let mut expirations = served.gateway.expirations();
    tokio::time::timeout(PATIENCE, expirations.wait_for(|n| *n >= 1))
        .await
        .expect("the idle session never closed")
        .unwrap();
    // Kept in the store, no longer open here.
    let (status, got) = send(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/napper", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["server_status"], Value::Null, "{got}");
    assert_eq!(got["open_on"], json!([]), "{got}");
    // Its next request opens it again, its own server with it.
    let (status, refreshed) = send(
        reqwest::Method::POST,
        &format!("{}/v1/sessions/napper/mcp-refresh", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "{refreshed}");
    let (_, got) = send(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/napper", served.base),
        None,
    )
    .await;
    assert_eq!(got["server_status"][0]["state"], "ready", "{got}");
    assert!(
        got["granted"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "mcp__own__echo"),
        "{got}"
    );
    served.stop().await;
}

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("EXTPOOL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// URLs of every kind a client might send; none that would reach out of
/// this machine (no public address, no name that must be looked up).
fn url() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(
            &[
                "http://127.0.0.1:9/mcp",
                "http://localhost:9/",
                "https://10.0.0.1/",
                "http://169.254.169.254/",
                "http://[::1]:9/",
                "http://[fe80::1]/",
                "file:///etc/passwd",
                "gopher://x/",
                "",
                "not a url",
                "http://",
                "https://:0/",
                "http://u:p@127.0.0.1/",
                "http://0.0.0.0:1/",
                "http://[::ffff:127.0.0.1]/",
                "http://2130706433/",
                "${SECRET}",
                "http://127.0.0.1:99999/",
            ][..]
        )
        .prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(Value::Null),
        Just(json!([])),
    ]
}

fn headers() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::collection::btree_map("[A-Za-z0-9:\\- \n]{0,12}", "[ -~\n\r]{0,16}", 0..80)
            .prop_map(|m| json!(m)),
        Just(json!("x-not-a-map")),
        Just(json!({"authorization": 5})),
    ]
}

fn server() -> impl Strategy<Value = Value> {
    (
        url(),
        headers(),
        prop::option::of("[a-z/]{0,8}"),
        any::<bool>(),
    )
        .prop_map(|(url, headers, command, both)| {
            let mut entry = json!({"url": url, "headers": headers});
            if both && let Some(command) = command {
                entry["command"] = json!(command);
            }
            entry
        })
}

/// Bodies of `POST /v1/sessions`: objects of its fields with values of
/// any kind, other JSON, and bytes that are not JSON.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let servers = prop::collection::btree_map("[a-zA-Z_\\-é]{0,8}", server(), 0..4);
    let object = (
        prop::option::of(prop_oneof![
            "[a-z0-9\\-]{0,80}".prop_map(Value::from),
            any::<i64>().prop_map(Value::from)
        ]),
        prop::option::of(servers.prop_map(|m| json!(m))),
        prop::option::of(any::<bool>()),
        prop::option::of("[a-z]{1,6}"),
    )
        .prop_map(|(id, servers, auto, extra)| {
            let mut body = serde_json::Map::new();
            if let Some(id) = id {
                body.insert("id".into(), id);
            }
            if let Some(servers) = servers {
                body.insert("mcp_servers".into(), servers);
            }
            if let Some(auto) = auto {
                body.insert("auto_grant".into(), json!(auto));
            }
            if let Some(extra) = extra {
                body.insert(extra, json!(1));
            }
            Value::Object(body).to_string().into_bytes()
        });
    prop_oneof![
        4 => object,
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => Just(b"[]".to_vec()),
        1 => Just(b"null".to_vec()),
    ]
}

#[test]
fn the_session_api_answers_any_body_without_a_server_error() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (served, _db) = runtime.block_on(served(GatewayOptions {
        session_commands: false,
        ..GatewayOptions::default()
    }));
    let url = format!("{}/v1/sessions", served.base);
    let client = reqwest::Client::new();
    proptest!(cases(64), |(body in body())| {
        let (status, text) = runtime.block_on(async {
            let response = within(client.post(&url).header("content-type", "application/json").body(body.clone()).send())
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, within(response.text()).await.unwrap())
        });
        prop_assert!(
            status == 201 || (400..500).contains(&status),
            "{status} for {}: {text}", String::from_utf8_lossy(&body)
        );
        if status != 201 {
            let answer: Value = serde_json::from_str(&text).unwrap_or_default();
            prop_assert!(answer["error"].is_string(), "{status}: {text}");
        }
    });
    // The gateway still answers.
    let health = runtime.block_on(async {
        within(client.get(format!("{}/healthz", served.base)).send())
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    assert_eq!(health, 200);
    runtime.block_on(served.stop());
}
