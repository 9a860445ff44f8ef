//! Durable sessions through the HTTP API and real MCP clients: what a
//! session is granted, refresh (by the model-facing tool and by the API),
//! per-session servers isolated per session, the limit on them, a restart
//! that restores every session and its grants, a session closed by its own
//! client (`CloseSession`) as `DELETE` closes it.

use extpool_server::GatewayOptions;
use extpool_state::StateStore;
use extpool_testkit::{HttpServer, StateDir};
use serde_json::{Value, json};

use crate::support::{
    PATIENCE, Project, Sdk, Served, SessionEra, sdk_client, testkit_yaml, within,
};

async fn store(dir: &std::path::Path) -> StateStore {
    StateStore::open_url(&format!("sqlite:{}", dir.join("state.db").display()))
        .await
        .unwrap()
}

async fn api(method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

async fn served_with_store(project: Project, options: GatewayOptions) -> Served {
    let state = store(project.path()).await;
    Served::start(
        project,
        GatewayOptions {
            state: Some(state),
            ..options
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_its_grants_until_a_refresh_adds_what_arrived() {
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let served = served_with_store(project, GatewayOptions::default()).await;
    let (status, created) = api(
        reqwest::Method::POST,
        &format!("{}/v1/sessions", served.base),
        Some(json!({"id": "s1"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert!(names(&created["granted"]).contains(&"mcp__testkit__echo".to_owned()));
    let endpoint = format!("{}/sessions/s1/mcp", served.base);
    let out = sdk_client(
        Sdk::Python,
        &endpoint,
        json!([{"op": "call", "name": "mcp__testkit__add_tool", "args": {"name": "later"}}]),
    )
    .await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    // Reconciliation makes it available (the pool sees it) ...
    let pool = served.gateway.host().pool();
    let mut revisions = served.gateway.host().catalog().subscribe();
    let available = async {
        while !pool.tools().iter().any(|t| t.name == "mcp__testkit__later") {
            revisions.changed().await.unwrap();
        }
    };
    tokio::time::timeout(PATIENCE, available)
        .await
        .expect("the new tool is available after reconciliation");
    let out = sdk_client(
        Sdk::Python,
        &endpoint,
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "mcp__testkit__later", "expect_error": true},
            {"op": "call", "name": "RefreshMcpSources"},
            {"op": "wait_tools_changed"},
            {"op": "list_tools"},
            {"op": "call", "name": "mcp__testkit__later"},
        ]),
    )
    .await;
    // ... but not granted: not listed, not callable.
    let before = names(&out[1]["tools"]);
    assert!(
        before.contains(&"RefreshMcpSources".to_owned()),
        "{before:?}"
    );
    assert!(before.contains(&"ListMcpSources".to_owned()), "{before:?}");
    assert!(
        !before.contains(&"mcp__testkit__later".to_owned()),
        "{before:?}"
    );
    let refused = out[2]["error"].as_str().unwrap();
    assert!(refused.contains("not granted to this session"), "{refused}");
    // The model refreshes: the name is granted, the client told.
    let refresh: Value = serde_json::from_str(out[3]["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(refresh["authority_changed"], true, "{refresh}");
    assert_eq!(
        refresh["added"],
        json!(["mcp__testkit__later"]),
        "{refresh}"
    );
    assert!(refresh["revision"].as_u64().unwrap() >= 1);
    assert_eq!(out[4]["op"], "wait_tools_changed");
    assert!(names(&out[5]["tools"]).contains(&"mcp__testkit__later".to_owned()));
    assert_eq!(out[6]["is_error"], false, "{out:?}");
    // A retry through the API confirms: nothing added, nothing removed.
    let (status, again) = api(
        reqwest::Method::POST,
        &format!("{}/v1/sessions/s1/mcp-refresh", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["authority_changed"], false, "{again}");
    assert_eq!(again["granted"], refresh["granted"]);
    let (_, got) = api(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/s1", served.base),
        None,
    )
    .await;
    assert!(names(&got["granted"]).contains(&"mcp__testkit__later".to_owned()));
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_with_their_own_servers_are_isolated_and_delete_closes_them() {
    let project = Project::new();
    project.config("");
    let options = GatewayOptions {
        private_session_servers: true,
        ..GatewayOptions::default()
    };
    let served = served_with_store(project, options).await;
    let a = HttpServer::start();
    let b = HttpServer::start();
    for (id, name, url) in [("sa", "alpha", a.url()), ("sb", "beta", b.url())] {
        let (status, created) = api(
            reqwest::Method::POST,
            &format!("{}/v1/sessions", served.base),
            Some(json!({"id": id, "mcp_servers": {name: {"url": url}}})),
        )
        .await;
        assert_eq!(status, 201, "{created}");
        assert_eq!(created["servers"], json!([name]));
    }
    let out = sdk_client(
        Sdk::TypeScript,
        &format!("{}/sessions/sa/mcp", served.base),
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "mcp__alpha__echo", "args": {"message": "mine"}},
            {"op": "call", "name": "mcp__beta__echo", "args": {"message": "theirs"}, "expect_error": true},
        ]),
    )
    .await;
    let tools = names(&out[1]["tools"]);
    assert!(tools.contains(&"mcp__alpha__echo".to_owned()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__beta__")),
        "{tools:?}"
    );
    assert_eq!(out[2]["text"], json!(["mine"]));
    assert!(
        out[3]["error"].as_str().unwrap().contains("unknown tool"),
        "{out:?}"
    );
    let (status, deleted) = api(
        reqwest::Method::DELETE,
        &format!("{}/v1/sessions/sa", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["closed_servers"], json!(["alpha"]));
    let (status, _) = api(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/sa", served.base),
        None,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = api(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/sb", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "the other session is untouched");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_session_servers_are_bounded_and_must_be_remote() {
    let project = Project::new();
    project.config("");
    let options = GatewayOptions {
        max_session_servers: 1,
        private_session_servers: true,
        ..GatewayOptions::default()
    };
    let served = served_with_store(project, options).await;
    let a = HttpServer::start();
    let url = format!("{}/v1/sessions", served.base);
    let create = |id: &str, servers: Value| {
        api(
            reqwest::Method::POST,
            &url,
            Some(json!({"id": id, "mcp_servers": servers})),
        )
    };
    let (status, _) = create("one", json!({"first": {"url": a.url()}})).await;
    assert_eq!(status, 201);
    let (status, body) = create("two", json!({"second": {"url": a.url()}})).await;
    assert_eq!(status, 429, "{body}");
    let message = body["error"].as_str().unwrap();
    assert!(
        message.contains("past this gateway's 1 (1 are open now)")
            && message.contains("DELETE /v1/sessions"),
        "{message}"
    );
    let (status, body) = create("three", json!({"local": {"command": "/bin/sh"}})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("remote"), "{body}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_gateway_restores_every_session_and_its_grants() {
    let kit = StateDir::new();
    let db = tempfile::tempdir().unwrap();
    let first = {
        let project = Project::new();
        project.config(&testkit_yaml("testkit", &kit));
        let served = Served::start(
            project,
            GatewayOptions {
                state: Some(store(db.path()).await),
                ..GatewayOptions::default()
            },
        )
        .await;
        let (status, created) = api(
            reqwest::Method::POST,
            &format!("{}/v1/sessions", served.base),
            Some(json!({"id": "kept"})),
        )
        .await;
        assert_eq!(status, 201);
        served.stop().await;
        names(&created["granted"])
    };
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let served = Served::start(
        project,
        GatewayOptions {
            state: Some(store(db.path()).await),
            ..GatewayOptions::default()
        },
    )
    .await;
    let (status, got) = api(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/kept", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(names(&got["granted"]), first);
    let out = sdk_client(
        Sdk::Python,
        &format!("{}/sessions/kept/mcp", served.base),
        json!([{"op": "call", "name": "mcp__testkit__echo", "args": {"message": "back"}}]),
    )
    .await;
    assert_eq!(out[1]["text"], json!(["back"]));
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_grant_session_sees_what_arrives_without_a_refresh() {
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let served = served_with_store(project, GatewayOptions::default()).await;
    let (status, created) = api(
        reqwest::Method::POST,
        &format!("{}/v1/sessions", served.base),
        Some(json!({"id": "auto", "auto_grant": true})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let endpoint = format!("{}/sessions/auto/mcp", served.base);
    let out = sdk_client(
        Sdk::TypeScript,
        &endpoint,
        json!([
            {"op": "call", "name": "mcp__testkit__add_tool", "args": {"name": "arrived"}},
            {"op": "wait_tools_changed"},
            {"op": "list_tools"},
            {"op": "call", "name": "mcp__testkit__arrived"},
        ]),
    )
    .await;
    assert!(
        names(&out[3]["tools"]).contains(&"mcp__testkit__arrived".to_owned()),
        "{out:?}"
    );
    assert_eq!(out[4]["is_error"], false, "{out:?}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_mcp_sources_never_contacts_an_upstream() {
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let served = served_with_store(project, GatewayOptions::default()).await;
    let (status, created) = api(
        reqwest::Method::POST,
        &format!("{}/v1/sessions", served.base),
        Some(json!({"id": "quiet"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let before = kit.counter("lists");
    assert!(before > 0, "the gateway listed the upstream at start");
    let endpoint = format!("{}/sessions/quiet/mcp", served.base);
    let out = sdk_client(
        Sdk::Python,
        &endpoint,
        json!([
            {"op": "call", "name": "ListMcpSources"},
            {"op": "call", "name": "ListMcpSources"},
            {"op": "call", "name": "ListMcpSources"},
        ]),
    )
    .await;
    let sources: Value = serde_json::from_str(out[1]["text"][0].as_str().unwrap()).unwrap();
    assert!(sources.to_string().contains("testkit"), "{sources}");
    let (status, body) = api(
        reqwest::Method::GET,
        &format!("{}/v1/sources", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        kit.counter("lists"),
        before,
        "ListMcpSources and /v1/sources answered from the cache"
    );
    // The count does move when the gateway asks the upstream: a tool added
    // there makes it list again.
    let out = sdk_client(
        Sdk::Python,
        &endpoint,
        json!([{"op": "call", "name": "mcp__testkit__add_tool", "args": {"name": "probe"}}]),
    )
    .await;
    assert_eq!(out[1]["is_error"], false, "{out:?}");
    kit.until(
        "the upstream is listed again after its list changed",
        PATIENCE,
        |k| k.counter("lists") > before,
    )
    .await;
    served.stop().await;
}

/// A gateway that takes local commands as session servers, and session
/// `id` made through the API with one: the testkit server `mine`,
/// recording in the state returned. The session's record is returned too.
async fn session_with_a_command_server(id: &str) -> (Served, StateDir, Value) {
    let project = Project::new();
    project.config("");
    let options = GatewayOptions {
        session_commands: true,
        ..GatewayOptions::default()
    };
    let served = served_with_store(project, options).await;
    let kit = StateDir::new();
    let (program, args) = extpool_testkit::stdio_command(kit.args()).into_parts();
    let (status, created) = api(
        reqwest::Method::POST,
        &format!("{}/v1/sessions", served.base),
        Some(json!({"id": id, "mcp_servers": {"mine": {
            "command": program.display().to_string(),
            "args": args,
        }}})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    (served, kit, created)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_stops_a_session_command_server_checked_by_pid() {
    let (served, kit, created) = session_with_a_command_server("local").await;
    assert!(
        names(&created["granted"]).contains(&"mcp__mine__echo".to_owned()),
        "{created}"
    );
    let marker = kit.path().display().to_string();
    let pids = crate::support::pids_with(&marker);
    assert_eq!(pids.len(), 1, "one process for the session's server");
    assert_eq!(
        kit.pids(),
        pids,
        "the process that started is the one alive"
    );
    let out = sdk_client(
        Sdk::Python,
        &format!("{}/sessions/local/mcp", served.base),
        json!([{"op": "call", "name": "mcp__mine__echo", "args": {"message": "here"}}]),
    )
    .await;
    assert_eq!(out[1]["text"], json!(["here"]), "{out:?}");
    let (status, deleted) = api(
        reqwest::Method::DELETE,
        &format!("{}/v1/sessions/local", served.base),
        None,
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["closed_servers"], json!(["mine"]));
    // The session's server process is gone after DELETE.
    extpool_testkit::procs::wait_until_gone(&marker).await;
    served.stop().await;
}

/// The tool names an rmcp client of `url` (session era) is listed.
async fn listed_tools(url: &str) -> Vec<String> {
    use rmcp::ServiceExt;
    let client = within(SessionEra.serve(
        rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned()),
    ))
    .await
    .unwrap();
    let tools = within(client.list_all_tools()).await.unwrap();
    let _ = client.cancel().await;
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_session_on_its_endpoint_closes_the_session_as_delete_does() {
    use rmcp::ServiceExt;
    let (served, kit, _) = session_with_a_command_server("done").await;
    let marker = kit.path().display().to_string();
    assert_eq!(crate::support::pids_with(&marker).len(), 1);
    // Offered where there is a session to close, and only there.
    let everywhere = listed_tools(&served.url).await;
    assert!(
        !everywhere.contains(&"CloseSession".to_owned()),
        "{everywhere:?}"
    );
    let endpoint = format!("{}/sessions/done/mcp", served.base);
    let tools = listed_tools(&endpoint).await;
    assert!(tools.contains(&"CloseSession".to_owned()), "{tools:?}");

    let client = within(SessionEra.serve(
        rmcp::transport::StreamableHttpClientTransport::from_uri(endpoint.clone()),
    ))
    .await
    .unwrap();
    let closed = within(client.call_tool(rmcp::model::CallToolRequestParams::new("CloseSession")))
        .await
        .unwrap();
    assert_ne!(closed.is_error, Some(true), "{closed:?}");
    let text = closed.content[0].as_text().unwrap().text.clone();
    assert_eq!(text, "session done was closed; its servers stopped: mine");
    // Its endpoint's MCP session ended with it: nothing more is answered.
    let after = within(client.list_all_tools()).await;
    assert!(
        after.is_err(),
        "the closed session still answered tools/list"
    );
    let _ = client.cancel().await;

    let (status, _) = api(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/done", served.base),
        None,
    )
    .await;
    assert_eq!(status, 404, "the session is forgotten");
    // Its server's process is gone, as after DELETE.
    extpool_testkit::procs::wait_until_gone(&marker).await;

    // A 2026-07-28 client closes its session the same way.
    let (status, created) = api(
        reqwest::Method::POST,
        &format!("{}/v1/sessions", served.base),
        Some(json!({"id": "later"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let new = crate::support::modern(&format!("{}/sessions/later/mcp", served.base)).await;
    let closed = within(new.call_tool(rmcp::model::CallToolRequestParams::new("CloseSession")))
        .await
        .unwrap();
    assert_eq!(
        closed.content[0].as_text().unwrap().text,
        "session later was closed",
        "{closed:?}"
    );
    let _ = new.cancel().await;
    let (status, _) = api(
        reqwest::Method::GET,
        &format!("{}/v1/sessions/later", served.base),
        None,
    )
    .await;
    assert_eq!(status, 404, "the session is forgotten");
    served.stop().await;
}

/// What a call in flight was answered: its tool error's text, or the
/// JSON-RPC error it failed with.
fn ended_with(result: Result<rmcp::model::CallToolResult, rmcp::ServiceError>) -> String {
    match result {
        Ok(result) => {
            assert_eq!(result.is_error, Some(true), "{result:?}");
            result.content[0].as_text().unwrap().text.clone()
        }
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calls_in_flight_of_a_closed_session_are_told_it_closed() {
    use rmcp::ServiceExt;
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let served = served_with_store(project, GatewayOptions::default()).await;
    for (id, closer) in [("by-tool", "CloseSession"), ("by-api", "DELETE")] {
        let (status, created) = api(
            reqwest::Method::POST,
            &format!("{}/v1/sessions", served.base),
            Some(json!({"id": id})),
        )
        .await;
        assert_eq!(status, 201, "{created}");
        let endpoint = format!("{}/sessions/{id}/mcp", served.base);
        // A session-era client and a 2026-07-28 one, each with a call that
        // would run for a minute.
        let session_era = within(SessionEra.serve(
            rmcp::transport::StreamableHttpClientTransport::from_uri(endpoint.clone()),
        ))
        .await
        .unwrap();
        let modern = crate::support::modern(&endpoint).await;
        let sleep = || {
            let mut params = rmcp::model::CallToolRequestParams::new("mcp__testkit__sleep");
            params.arguments = json!({"ms": 60_000}).as_object().cloned();
            params
        };
        let before = kit.counter("sleep");
        let calls = [
            tokio::spawn({
                let peer = session_era.peer().clone();
                let params = sleep();
                async move { peer.call_tool(params).await }
            }),
            tokio::spawn({
                let peer = modern.peer().clone();
                let params = sleep();
                async move { peer.call_tool(params).await }
            }),
        ];
        kit.until("both calls running", PATIENCE, |k| {
            k.counter("sleep") == before + 2
        })
        .await;
        if closer == "CloseSession" {
            let closing = crate::support::modern(&endpoint).await;
            let closed =
                within(closing.call_tool(rmcp::model::CallToolRequestParams::new("CloseSession")))
                    .await
                    .unwrap();
            assert_ne!(closed.is_error, Some(true), "{closed:?}");
            let _ = closing.cancel().await;
        } else {
            let (status, deleted) = api(
                reqwest::Method::DELETE,
                &format!("{}/v1/sessions/{id}", served.base),
                None,
            )
            .await;
            assert_eq!(status, 200, "{deleted}");
        }
        for call in calls {
            let told = ended_with(within(call).await.unwrap());
            assert!(
                told.contains(&format!(
                    "session {id} was closed (CloseSession or DELETE /v1/sessions/{id}) while this call was in flight"
                )),
                "{closer}: {told}"
            );
        }
        let _ = session_era.cancel().await;
        let _ = modern.cancel().await;
    }
    served.stop().await;
}
