//! URL-mode elicitation through the gateway (MCP 2025-11-25): an
//! upstream's `elicitation/create` in URL mode reaches the client whose
//! call caused it when that client declared URL mode (and is refused with
//! a clear error when it did not), a `URLElicitationRequiredError` (-32042)
//! passes to the client unchanged, and the upstream's later
//! `notifications/elicitation/complete` reaches the session that got the
//! elicitation and no other — with several TypeScript SDK clients, each a
//! session of its own, sharing one upstream connection.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{Project, Served, client_lines, server_yaml};

/// Both modes, as a client that takes URL-mode elicitation declares them.
fn url_mode() -> Value {
    json!({"form": {}, "url": {}})
}

/// The testkit with its URL-mode elicitation tools.
fn url_testkit_yaml(state: &StateDir) -> String {
    let mut args = state.args();
    args.push("--url-elicitation".into());
    server_yaml("testkit", extpool_testkit::stdio_command(args))
}

/// Runs `steps` with the TypeScript clients of `url_elicitation.mjs`; its
/// lines, one per step.
async fn clients(url: &str, steps: Value) -> Vec<Value> {
    let mut command = extpool_testkit::peers::typescript_url_elicitation_clients();
    command.args(["--url", url]).arg(steps.to_string());
    client_lines(command, "TypeScript URL elicitation clients").await
}

/// The line of step `op` of client `client`, the `nth` such (from 0).
fn line<'a>(out: &'a [Value], client: &str, op: &str, nth: usize) -> &'a Value {
    out.iter()
        .filter(|l| l["as"] == client && l["op"] == op)
        .nth(nth)
        .unwrap_or_else(|| panic!("no {op} #{nth} of {client} in {out:#?}"))
}

fn call(client: &str, tool: &str, args: Value) -> Value {
    json!({"op": "call", "as": client, "name": format!("mcp__testkit__{tool}"), "args": args})
}

fn complete(client: &str, id: &str) -> Value {
    call(client, "complete_elicitation", json!({"elicitationId": id}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_elicitation_reaches_its_caller_and_its_completion_that_session_only() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&url_testkit_yaml(&state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let (a_url, b_url) = ("https://auth.example/a", "https://auth.example/b");
    let out = clients(
        &served.url,
        json!([
            {"op": "connect", "as": "a", "elicitation": url_mode()},
            {"op": "connect", "as": "b", "elicitation": url_mode()},
            call("a", "elicit_url", json!({"url": a_url, "elicitationId": "e-a"})),
            // Completed from another session's call: the upstream sends it
            // on the one connection every session shares.
            complete("b", "e-a"),
            {"op": "wait_complete", "as": "a", "id": "e-a"},
            // Told once, and never for an id no client was sent.
            complete("b", "e-a"),
            complete("b", "e-nobody"),
            call("b", "elicit_url", json!({"url": b_url, "elicitationId": "e-b"})),
            complete("a", "e-b"),
            {"op": "wait_complete", "as": "b", "id": "e-b"},
            {"op": "asked", "as": "a"},
            {"op": "asked", "as": "b"},
            {"op": "completes", "as": "a"},
            {"op": "completes", "as": "b"},
        ]),
    )
    .await;
    let accepted = |client: &str| line(&out, client, "call", 0)["text"].clone();
    assert_eq!(accepted("a"), json!(["action=accept"]), "{out:#?}");
    assert_eq!(
        line(&out, "b", "call", 3)["text"],
        json!(["action=accept"]),
        "{out:#?}"
    );
    let asked = |client: &str, url: &str, id: &str| {
        assert_eq!(
            line(&out, client, "asked", 0)["asked"],
            json!([{
                "mode": "url",
                "url": url,
                "elicitationId": id,
                "message": "Open the link to finish signing in.",
            }]),
            "{out:#?}"
        );
    };
    asked("a", a_url, "e-a");
    asked("b", b_url, "e-b");
    // Each session got its own completion, once, and no other: a's came
    // before b's round began, so one sent to b would be among b's.
    assert_eq!(
        line(&out, "a", "completes", 0)["completes"],
        json!(["e-a"]),
        "{out:#?}"
    );
    assert_eq!(
        line(&out, "b", "completes", 0)["completes"],
        json!(["e-b"]),
        "{out:#?}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_elicitation_for_a_client_without_url_mode_is_refused_not_left_waiting() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&url_testkit_yaml(&state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let out = clients(
        &served.url,
        json!([
            {"op": "connect", "as": "form", "elicitation": {"form": {}}},
            call("form", "elicit_url", json!({"url": "https://auth.example/f", "elicitationId": "e-f"})),
            {"op": "asked", "as": "form"},
            // Form mode still reaches it.
            call("form", "elicit", json!({"message": "Proceed?"})),
        ]),
    )
    .await;
    let refused = line(&out, "form", "call", 0);
    assert_eq!(refused["is_error"], true, "{out:#?}");
    let text = refused["text"][0].as_str().unwrap();
    assert!(
        text.contains("does not support URL-mode elicitation"),
        "{out:#?}"
    );
    assert_eq!(
        line(&out, "form", "call", 1)["text"],
        json!([r#"action=accept, content={"answer":"yes"}"#]),
        "{out:#?}"
    );
    assert_eq!(
        line(&out, "form", "asked", 0)["asked"],
        json!([]),
        "{out:#?}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_elicitation_required_error_reaches_the_client_and_its_completion_that_session() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&url_testkit_yaml(&state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let url = "https://auth.example/required";
    let out = clients(
        &served.url,
        json!([
            {"op": "connect", "as": "a", "elicitation": url_mode()},
            {"op": "connect", "as": "b", "elicitation": url_mode()},
            call("a", "url_required", json!({"url": url, "elicitationId": "e-r"})),
            complete("b", "e-r"),
            {"op": "wait_complete", "as": "a", "id": "e-r"},
            {"op": "completes", "as": "b"},
        ]),
    )
    .await;
    let error = &line(&out, "a", "call", 0)["error"];
    assert_eq!(error["code"], -32042, "{out:#?}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("This request requires signing in in the browser."),
        "{out:#?}"
    );
    assert_eq!(
        error["elicitations"],
        json!([{
            "mode": "url",
            "url": url,
            "message": "Open the link to finish signing in.",
            "elicitationId": "e-r",
        }]),
        "{out:#?}"
    );
    assert_eq!(
        line(&out, "b", "completes", 0)["completes"],
        json!([]),
        "{out:#?}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everythings_url_elicitation_passes_both_ways() {
    let project = Project::new();
    project.config(&server_yaml(
        "everything",
        extpool_testkit::peers::server_everything(),
    ));
    let served = Served::start(project, GatewayOptions::default()).await;
    let tool = "mcp__everything__trigger-url-elicitation";
    let url = "https://auth.example/everything";
    let out = clients(
        &served.url,
        json!([
            {"op": "connect", "as": "a", "elicitation": url_mode()},
            {"op": "list_tools", "as": "a"},
            {"op": "call", "as": "a", "name": tool, "args": {"url": url, "errorPath": true}},
            {"op": "call", "as": "a", "name": tool, "args": {"url": url, "elicitationId": "e-x"}},
            {"op": "asked", "as": "a"},
        ]),
    )
    .await;
    // Registered only for a client that declares URL mode: the gateway
    // declared it to its upstream.
    let tools = line(&out, "a", "list_tools", 0)["tools"]
        .as_array()
        .unwrap();
    assert!(tools.iter().any(|t| t == tool), "{out:#?}");
    let error = &line(&out, "a", "call", 0)["error"];
    assert_eq!(error["code"], -32042, "{out:#?}");
    assert_eq!(error["elicitations"][0]["mode"], "url", "{out:#?}");
    assert_eq!(
        error["elicitations"][0]["url"], "https://modelcontextprotocol.io",
        "{out:#?}"
    );
    let done = &line(&out, "a", "call", 1)["text"][0];
    assert!(
        done.as_str()
            .unwrap()
            .contains("User completed the URL elicitation flow"),
        "{out:#?}"
    );
    let asked = &line(&out, "a", "asked", 0)["asked"];
    assert_eq!(asked[0]["mode"], "url", "{out:#?}");
    assert_eq!(asked[0]["url"], url, "{out:#?}");
    assert_eq!(asked[0]["elicitationId"], "e-x", "{out:#?}");
    served.stop().await;
}
