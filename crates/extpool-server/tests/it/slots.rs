//! MCP sessions that end, and requests that cannot confuse them, over raw
//! HTTP (what a careless client sends): an abandoned session frees its
//! slot after the idle timeout and is resumed from the store when its
//! client comes back; the refusal at the limit says when a slot frees; a
//! request id in flight is refused a second time, on a session resumed
//! (here or on another replica) as on a fresh one; a session id nobody
//! issued is unknown whatever the slots; malformed bodies get JSON-RPC
//! errors; a failed `initialize` leaves no session.

use std::time::Duration;

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{PATIENCE, Project, Served, mcp_post, testkit_yaml, within};

const VERSION: &str = "2025-11-25";

/// An answer: status, headers and the JSON-RPC message (from JSON or SSE).
struct Answer {
    status: u16,
    /// The first SSE event id, if the answer is a stream: the gateway's
    /// own answers number theirs `index/i<stream>`, rmcp's `index/<stream>`.
    first_event_id: Option<String>,
    session: Option<String>,
    retry_after: Option<String>,
    message: Value,
}

async fn post(url: &str, session: Option<&str>, body: &str) -> Answer {
    let request = mcp_post(url, session.map(|id| (id, VERSION)), body.to_owned());
    let response = within(request.send()).await.unwrap();
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (session, retry_after) = (header("mcp-session-id"), header("retry-after"));

    let text = within(response.text()).await.unwrap();
    let first_event_id = text
        .lines()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned());
    let message = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or(Value::String(text.clone()))
    });
    Answer {
        status,
        first_event_id,
        session,
        retry_after,
        message,
    }
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "careless", "version": "1"}}})
    .to_string()
}

/// A session made by hand and then abandoned: no GET stream, nothing open.
async fn initialize(url: &str) -> Answer {
    let answer = post(url, None, &initialize_body()).await;
    if let Some(id) = &answer.session {
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let done = post(url, Some(id), &initialized.to_string()).await;
        assert_eq!(done.status, 202, "{}", done.message);
    }
    answer
}

fn call(id: u64, name: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": args}})
    .to_string()
}

async fn served(kit: &StateDir, options: GatewayOptions) -> (Served, tempfile::TempDir) {
    let db = tempfile::tempdir().unwrap();
    let store = extpool_state::StateStore::open_url(&format!(
        "sqlite:{}",
        db.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", kit));
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

/// Waits until `n` sessions in all have been ended for being idle.
async fn expired(served: &Served, n: u64) {
    let mut expirations = served.gateway.expirations();
    tokio::time::timeout(PATIENCE, expirations.wait_for(|total| *total >= n))
        .await
        .expect("sessions never expired")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_session_frees_its_slot_and_is_resumed_when_its_client_returns() {
    let kit = StateDir::new();
    let (served, _db) = served(
        &kit,
        GatewayOptions {
            max_sessions: 1,
            // Long enough that a loaded machine never lets the session
            // expire before the refused initialize below is answered.
            session_idle_timeout: Duration::from_secs(4),
            ..GatewayOptions::default()
        },
    )
    .await;
    let url = &served.url;
    let abandoned = initialize(url).await;
    assert_eq!(abandoned.status, 200, "{}", abandoned.message);
    let first = abandoned.session.unwrap();

    // At the limit: refused at once, told when a slot frees, no session.
    let refused = post(url, None, &initialize_body()).await;
    assert_eq!(refused.status, 503, "{}", refused.message);
    assert_eq!(
        refused.session, None,
        "a refused initialize makes no session"
    );
    let message = refused.message["error"]["message"].as_str().unwrap();
    let expires_in: u64 = message
        .split("the longest-idle one expires in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    assert!(
        message.contains("holds at most 1 MCP sessions at once (extpool serve --max-sessions)")
            && message.contains(&format!(
                "the longest-idle one expires in {expires_in} s (--session-idle-timeout 4)"
            ))
            && (1..=4).contains(&expires_in),
        "{message}"
    );
    assert_eq!(refused.message["id"], 0);
    assert_eq!(
        refused.retry_after.as_deref(),
        Some(expires_in.to_string().as_str())
    );

    // The abandoned session's slot goes after the idle timeout.
    expired(&served, 1).await;
    let second = initialize(url).await;
    assert_eq!(second.status, 200, "{}", second.message);
    let second = second.session.unwrap();
    let echo = post(
        url,
        Some(&second),
        &call(1, "mcp__testkit__echo", json!({"message": "new"})),
    )
    .await;
    assert_eq!(
        echo.message["result"]["content"][0]["text"], "new",
        "{}",
        echo.message
    );

    // Once that one is idle too, the first client comes back: its session
    // is resumed from the store, as if nothing happened.
    expired(&served, 2).await;
    let back = post(
        url,
        Some(&first),
        &call(2, "mcp__testkit__echo", json!({"message": "back"})),
    )
    .await;
    assert_eq!(back.status, 200, "{}", back.message);
    assert_eq!(
        back.message["result"]["content"][0]["text"], "back",
        "{}",
        back.message
    );
    // Resumed, it is answered by the gateway's own front end like a
    // session made here, from the request that resumed it on (with a store
    // every answer not ready at once is a primed stream).
    // The gateway's own answers are JSON or streams numbered `index/i<n>`;
    // rmcp's, in session mode, are always streams numbered `index/<n>`.
    let own = |answer: &Answer| {
        answer
            .first_event_id
            .as_deref()
            .is_none_or(|id| id.starts_with("0/i"))
    };
    assert!(own(&echo), "{:?}", echo.first_event_id);
    assert!(own(&back), "{:?}: {}", back.first_event_id, back.message);
    let again = post(
        url,
        Some(&first),
        &call(3, "mcp__testkit__echo", json!({"message": "again"})),
    )
    .await;
    assert!(own(&again), "{:?}", again.first_event_id);
    assert_eq!(again.message["result"]["content"][0]["text"], "again");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_in_flight_is_refused_and_no_stream_is_left_open() {
    let kit = StateDir::new();
    let (served, _db) = served(&kit, GatewayOptions::default()).await;
    let url = served.url.clone();
    let session = initialize(&url).await.session.unwrap();
    // Request 7 waits at a barrier for a second party.
    let barrier = |id| {
        call(
            id,
            "mcp__testkit__barrier",
            json!({"key": "dup", "parties": 2}),
        )
    };
    let first = {
        let (url, session, body) = (url.clone(), session.clone(), barrier(7));
        tokio::spawn(async move { post(&url, Some(&session), &body).await })
    };
    kit.until("request 7 at the barrier", PATIENCE, |s| {
        s.arrivals("dup") == 1
    })
    .await;
    // The same id again, while 7 is in flight: refused at once.
    let again = post(
        &url,
        Some(&session),
        &call(7, "mcp__testkit__echo", json!({"message": "x"})),
    )
    .await;
    assert_eq!(again.status, 400, "{}", again.message);
    assert_eq!(again.message["id"], 7);
    assert_eq!(again.message["error"]["code"], -32600);
    assert!(
        again.message["error"]["message"]
            .as_str()
            .unwrap()
            .contains("request id 7 is already in use by a request in flight on this session"),
        "{}",
        again.message
    );
    // Another id is the second party: both finish, each with its own answer.
    let second = post(&url, Some(&session), &barrier(8)).await;
    assert_eq!(second.message["id"], 8, "{}", second.message);
    assert!(second.message.get("result").is_some(), "{}", second.message);
    let first = within(first).await.unwrap();
    assert_eq!(first.message["id"], 7, "{}", first.message);
    assert!(first.message.get("result").is_some(), "{}", first.message);
    // And 7 is free again.
    let reused = post(
        &url,
        Some(&session),
        &call(7, "mcp__testkit__echo", json!({"message": "7 again"})),
    )
    .await;
    assert_eq!(
        reused.message["result"]["content"][0]["text"], "7 again",
        "{}",
        reused.message
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_get_json_rpc_errors_and_the_session_goes_on() {
    let kit = StateDir::new();
    let (served, _db) = served(&kit, GatewayOptions::default()).await;
    let url = &served.url;
    let session = initialize(url).await.session.unwrap();
    for (session, body, code, says) in [
        (None, "{bad", -32700, "not JSON"),
        (None, "", -32700, "empty"),
        (
            Some(&session),
            "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\"",
            -32700,
            "not JSON",
        ),
        (
            Some(&session),
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            -32600,
            "batch",
        ),
        (Some(&session), "[]", -32600, "batch"),
        (Some(&session), r#""ping""#, -32600, "an object"),
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":5}}"#,
            -32602,
            "invalid params for tools/call",
        ),
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}"#,
            -32602,
            "missing field `name`",
        ),
        // What rmcp cannot read as a client's message: a JSON-RPC error
        // too, not HTTP 415 and plain text.
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            -32600,
            "not null",
        ),
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
            -32600,
            "at most 9223372036854775807",
        ),
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","id":7,"method":5}"#,
            -32600,
            "\"method\" is a string, not 5",
        ),
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","id":8,"method":"ping","params":[1]}"#,
            -32602,
            "invalid params for ping: params are an object, not an array",
        ),
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":5}"#,
            -32602,
            "invalid params for notifications/initialized",
        ),
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","id":10}"#,
            -32600,
            "not a JSON-RPC request",
        ),
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","id":11,"result":{},"error":{"code":1,"message":"x"}}"#,
            -32600,
            "not a JSON-RPC request",
        ),
        (
            Some(&session),
            r#"{"jsonrpc":"2.0","id":12,"id":13,"method":"ping"}"#,
            -32600,
            "not a JSON-RPC request",
        ),
    ] {
        let answer = post(url, session.map(String::as_str), body).await;
        assert_eq!(answer.status, 400, "{body}: {}", answer.message);
        assert_eq!(
            answer.message["error"]["code"], code,
            "{body}: {}",
            answer.message
        );
        let message = answer.message["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    // An unknown method is still the handler's to answer.
    let unknown = post(
        url,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":6,"method":"vendor/x","params":{}}"#,
    )
    .await;
    assert_eq!(
        unknown.message["error"]["code"], -32601,
        "{}",
        unknown.message
    );
    let echo = post(
        url,
        Some(&session),
        &call(9, "mcp__testkit__echo", json!({"message": "fine"})),
    )
    .await;
    assert_eq!(
        echo.message["result"]["content"][0]["text"], "fine",
        "{}",
        echo.message
    );
    // A session id nobody gave is unknown (404), not a server error.
    let stranger = post(
        url,
        Some("no-such-session"),
        &call(1, "mcp__testkit__echo", json!({"message": "?"})),
    )
    .await;
    assert_eq!(stranger.status, 404, "{}", stranger.message);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_refuses_a_request_id_in_flight_as_a_fresh_one_does() {
    let kit = StateDir::new();
    let (served, _db) = served(
        &kit,
        GatewayOptions {
            max_sessions: 2,
            session_idle_timeout: Duration::from_secs(1),
            ..GatewayOptions::default()
        },
    )
    .await;
    let url = served.url.clone();
    let session = initialize(&url).await.session.unwrap();
    let barrier = |id, key: &str| {
        call(
            id,
            "mcp__testkit__barrier",
            json!({"key": key, "parties": 2}),
        )
    };
    let send = |body: String| {
        let (url, session) = (url.clone(), session.clone());
        tokio::spawn(async move { post(&url, Some(&session), &body).await })
    };
    let refused_as_in_use = |answer: &Answer, id: u64| {
        assert_eq!(answer.status, 400, "{}", answer.message);
        assert_eq!(answer.message["id"], id, "{}", answer.message);
        assert_eq!(
            answer.message["error"]["code"], -32600,
            "{}",
            answer.message
        );
        let says =
            format!("request id {id} is already in use by a request in flight on this session");
        assert!(
            answer.message["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&says),
            "{}",
            answer.message
        );
    };
    let answered = |answer: &Answer, id: u64| {
        assert_eq!(answer.status, 200, "{}", answer.message);
        assert_eq!(answer.message["id"], id, "{}", answer.message);
        assert!(answer.message.get("result").is_some(), "{}", answer.message);
    };

    // Its slot expires: the next request resumes it from the store.
    expired(&served, 1).await;
    // Request 42 resumes it and waits at a barrier for a second party.
    let first = send(barrier(42, "resumed"));
    kit.until("request 42 at the barrier", PATIENCE, |s| {
        s.arrivals("resumed") == 1
    })
    .await;
    // The same id while 42 is in flight: refused at once, as on a session
    // that never left memory.
    let again = post(
        &url,
        Some(&session),
        &call(42, "mcp__testkit__echo", json!({"message": "x"})),
    )
    .await;
    refused_as_in_use(&again, 42);
    // Another id is the second party: each gets its own answer.
    answered(&within(send(barrier(43, "resumed"))).await.unwrap(), 43);
    answered(&within(first).await.unwrap(), 42);

    // Resumed again by two requests with the same id at once: one resume,
    // one of them refused at once, the other answered.
    expired(&served, 2).await;
    let both = vec![send(barrier(7, "twice")), send(barrier(7, "twice"))];
    let (one, _, other) = within(futures::future::select_all(both)).await;
    refused_as_in_use(&one.unwrap(), 7);
    kit.until("request 7 at the barrier", PATIENCE, |s| {
        s.arrivals("twice") == 1
    })
    .await;
    answered(&within(send(barrier(8, "twice"))).await.unwrap(), 8);
    let mut other = other;
    answered(&within(other.pop().unwrap()).await.unwrap(), 7);
    // And 42 is free again.
    let reused = post(
        &url,
        Some(&session),
        &call(42, "mcp__testkit__echo", json!({"message": "42 again"})),
    )
    .await;
    assert_eq!(
        reused.message["result"]["content"][0]["text"], "42 again",
        "{}",
        reused.message
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_resumed_on_another_replica_refuses_a_request_id_in_flight() {
    let kit = StateDir::new();
    let (first_replica, db) = served(&kit, GatewayOptions::default()).await;
    // Another replica on the same store.
    let store = extpool_state::StateStore::open_url(&format!(
        "sqlite:{}",
        db.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let other = Served::start(
        project,
        GatewayOptions {
            state: Some(store),
            ..GatewayOptions::default()
        },
    )
    .await;
    let session = initialize(&first_replica.url).await.session.unwrap();
    // Its next requests go to the other replica, which resumes it: 42
    // first, waiting at a barrier for a second party.
    let url = other.url.clone();
    let barrier = |id| {
        call(
            id,
            "mcp__testkit__barrier",
            json!({"key": "elsewhere", "parties": 2}),
        )
    };
    let first = {
        let (url, session, body) = (url.clone(), session.clone(), barrier(42));
        tokio::spawn(async move { post(&url, Some(&session), &body).await })
    };
    kit.until("request 42 at the barrier", PATIENCE, |s| {
        s.arrivals("elsewhere") == 1
    })
    .await;
    let again = post(
        &url,
        Some(&session),
        &call(42, "mcp__testkit__echo", json!({"message": "x"})),
    )
    .await;
    assert_eq!(again.status, 400, "{}", again.message);
    assert_eq!(again.message["error"]["code"], -32600, "{}", again.message);
    assert!(
        again.message["error"]["message"]
            .as_str()
            .unwrap()
            .contains("request id 42 is already in use by a request in flight on this session"),
        "{}",
        again.message
    );
    let second = post(&url, Some(&session), &barrier(43)).await;
    assert_eq!(second.message["id"], 43, "{}", second.message);
    assert!(second.message.get("result").is_some(), "{}", second.message);
    let first = within(first).await.unwrap();
    assert_eq!(first.message["id"], 42, "{}", first.message);
    assert!(first.message.get("result").is_some(), "{}", first.message);
    other.stop().await;
    first_replica.stop().await;
}

/// The status and body of `method` on `url` with session header `session`.
async fn with_session(method: reqwest::Method, url: &str, session: &str) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .request(method.clone(), url)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", VERSION)
        .header("accept", "application/json, text/event-stream");
    if method == reqwest::Method::POST {
        request = request
            .header("content-type", "application/json")
            .body(call(1, "mcp__testkit__echo", json!({"message": "?"})));
    }
    let response = within(request.send()).await.unwrap();
    let status = response.status().as_u16();
    (status, within(response.text()).await.unwrap())
}

/// Session ids nobody issued, on `url`: unknown (HTTP 404), for every method.
async fn unknown_sessions_are_not_found(url: &str) {
    for session in ["no-such-session", "8f14e45f-ceea-467a-9b4e-5a7a1f0c2d3e"] {
        for method in [
            reqwest::Method::POST,
            reqwest::Method::GET,
            reqwest::Method::DELETE,
        ] {
            let (status, body) = with_session(method.clone(), url, session).await;
            assert_eq!(status, 404, "{method} {url} {session}: {body}");
            assert_eq!(body, "Not Found: Session not found", "{method} {url}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_session_is_not_found_whatever_the_slots() {
    let kit = StateDir::new();
    let (served, _db) = served(
        &kit,
        GatewayOptions {
            max_sessions: 1,
            session_idle_timeout: Duration::from_secs(1),
            ..GatewayOptions::default()
        },
    )
    .await;
    let url = &served.url;
    // A session that left memory: the store keeps it, to resume.
    let known = initialize(url).await.session.unwrap();
    expired(&served, 1).await;
    // The only slot, taken by a session with a stream open (never idle).
    let held = initialize(url).await.session.unwrap();
    let stream = within(
        reqwest::Client::new()
            .get(url)
            .header("mcp-session-id", &held)
            .header("mcp-protocol-version", VERSION)
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let full = post(url, None, &initialize_body()).await;
    assert_eq!(full.status, 503, "every slot is taken: {}", full.message);

    // A session nobody issued is unknown, not a session waiting for a slot.
    unknown_sessions_are_not_found(url).await;
    // On a durable session's endpoint too.
    let (status, made) = {
        let response = within(
            reqwest::Client::new()
                .post(format!("{}/v1/sessions", served.base))
                .header("content-type", "application/json")
                .body(json!({"id": "d1"}).to_string())
                .send(),
        )
        .await
        .unwrap();
        let status = response.status().as_u16();
        (status, within(response.text()).await.unwrap())
    };
    assert_eq!(status, 201, "{made}");
    unknown_sessions_are_not_found(&format!("{}/sessions/d1/mcp", served.base)).await;
    // A session the store keeps waits for a slot as a new one does.
    let waits = post(
        url,
        Some(&known),
        &call(1, "mcp__testkit__echo", json!({"message": "back"})),
    )
    .await;
    assert_eq!(waits.status, 503, "{}", waits.message);
    let message = waits.message["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("holds at most 1 MCP sessions at once"),
        "{message}"
    );
    // None of that took the slot: the session holding it goes on.
    let echo = post(
        url,
        Some(&held),
        &call(2, "mcp__testkit__echo", json!({"message": "still here"})),
    )
    .await;
    assert_eq!(
        echo.message["result"]["content"][0]["text"], "still here",
        "{}",
        echo.message
    );
    drop(stream);
    served.stop().await;

    // Without a store no session is resumed: one not held is unknown.
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let served = Served::start(
        project,
        GatewayOptions {
            max_sessions: 1,
            ..GatewayOptions::default()
        },
    )
    .await;
    let url = &served.url;
    let held = initialize(url).await;
    assert_eq!(held.status, 200, "{}", held.message);
    let full = post(url, None, &initialize_body()).await;
    assert_eq!(full.status, 503, "every slot is taken: {}", full.message);
    unknown_sessions_are_not_found(url).await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_that_ends_a_session_is_answered_as_the_sdks_expect() {
    let kit = StateDir::new();
    let (served, _db) = served(&kit, GatewayOptions::default()).await;
    let made = initialize(&served.url).await;
    let id = made.session.expect("a session id");
    // The Python SDK accepts 200, 204 and 405 and warns on anything else.
    let (status, body) = with_session(reqwest::Method::DELETE, &served.url, &id).await;
    assert_eq!(status, 204, "{body}");
    assert!(body.is_empty(), "{body}");
    let (status, _) = with_session(reqwest::Method::POST, &served.url, &id).await;
    assert_eq!(status, 404, "the session ended");
    served.stop().await;
}
