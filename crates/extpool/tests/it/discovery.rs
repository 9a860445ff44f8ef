//! `extpool serve` discovering servers while it runs, as a user runs it:
//! ToolHive's workloads (a stand-in speaking its API's wire format, since
//! ToolHive cannot run here) found through `--toolhive-url` and
//! `--toolhive-group`, and edits of `extpool.yaml`; sessions' name
//! authority throughout (a discovered name reaches an existing session only
//! through a refresh, unless it was created with `auto_grant`), seen by
//! the Python MCP SDK client.

use std::time::{Duration, Instant};

use extpool_testkit::toolhive::{Answer, FakeToolHive, Workload};
use extpool_testkit::{HttpServer, StateDir, stdio_command};
use serde_json::{Value, json};

use crate::serve::{Served, python, sigterm};
use crate::support::Sandbox;

/// Upper bound of anything a test waits for; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(60);

/// Fast discovery, no skills.
const TIMING: &str = "discovery:\n  interval_ms: 100\n  backoff_initial_ms: 100\n  backoff_max_ms: 200\nskills:\n  default_roots: false\n  watch: false\n";

fn testkit_entry(name: &str, state: &StateDir, extra: &[&str]) -> String {
    let mut all = state.args();
    all.extend(extra.iter().map(|s| (*s).to_owned()));
    let (program, args) = stdio_command(all).into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "  {name}:\n    command: {:?}\n    args: [{}]\n",
        program.display().to_string(),
        args.join(", ")
    )
}

/// A GET or POST of the gateway's `/v1` API, as JSON.
pub fn api(method: &str, url: &str) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let request = match method {
            "POST" => client.post(url),
            "DELETE" => client.delete(url),
            _ => client.get(url),
        };
        let response = request.send().await.unwrap();
        let status = response.status();
        let value: Value = response.json().await.unwrap();
        assert!(status.is_success(), "{method} {url}: {status} {value}");
        value
    })
}

/// Reads `/v1/sources` until `check` holds, each read after the first
/// waiting in the daemon for discovery's next change (`?after=`), failing
/// after [`PATIENCE`].
pub fn sources_until(base: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + PATIENCE;
    let mut url = format!("{base}/v1/sources");
    loop {
        let sources = api("GET", &url);
        if check(&sources) {
            return sources;
        }
        assert!(
            Instant::now() < deadline,
            "never happened: {what}: {sources:#}"
        );
        let updates = sources["updates"].as_u64().unwrap();
        url = format!("{base}/v1/sources?after={updates}&wait_ms=5000");
    }
}

fn discovery<'a>(sources: &'a Value, id: &str) -> &'a Value {
    sources["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["source"] == id)
        .unwrap_or_else(|| panic!("no discovery source {id}: {sources:#}"))
}

fn serves(sources: &Value, id: &str, server: &str) -> bool {
    discovery(sources, id)["servers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s == server)
}

/// The tools the MCP endpoint `endpoint` lists (the Python SDK's client).
pub fn tools(endpoint: &str) -> Vec<String> {
    let out = python(&["--url", endpoint], json!([{"op": "list_tools"}]));
    out[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect()
}

/// `extpool serve ARGS`; sessions' own servers here are on loopback,
/// which these gateways' operator allows.
fn serve(sb: &Sandbox, args: &[&str]) -> Served {
    let mut command = sb.command();
    command
        .arg("serve")
        .args(args)
        .arg("--private-session-servers");
    Served::spawn(command)
}

#[test]
fn toolhive_servers_reach_existing_sessions_only_through_a_refresh() {
    let upstream = HttpServer::start();
    let toolhive = FakeToolHive::start();
    toolhive.add_group("team");
    let sb = Sandbox::new();
    let kit = StateDir::new();
    sb.write(
        "extpool.yaml",
        &format!("mcp_servers:\n{}{TIMING}", testkit_entry("base", &kit, &[])),
    );
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let mut served = serve(
        &sb,
        &[
            "--listen",
            "127.0.0.1:0",
            "--state",
            &db,
            "--toolhive-url",
            &toolhive.url(),
            "--toolhive-group",
            "team",
        ],
    );
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let first = sources_until(&base, "ToolHive consulted", |s| {
        discovery(s, "toolhive")["state"] == "ok"
    });
    assert!(
        toolhive
            .queries()
            .iter()
            .all(|q| q.as_deref() == Some("team"))
    );
    assert!(!discovery(&first, "toolhive")["stale"].as_bool().unwrap());
    for create in [&["--id", "s1"][..], &["--id", "auto", "--auto-grant"][..]] {
        let mut args = vec!["sessions", "--gateway", base.as_str(), "create"];
        args.extend_from_slice(create);
        let r = sb.run(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let s1 = format!("{base}/sessions/s1/mcp");
    let auto = format!("{base}/sessions/auto/mcp");

    // A workload of another group is not discovered; one of the group is.
    toolhive.set_workloads(vec![
        Workload::running("elsewhere", upstream.url()),
        Workload::running("found-it", upstream.url()).in_group("team"),
    ]);
    sources_until(&base, "the workload discovered", |s| {
        serves(s, "toolhive", "found_it")
    });
    // Available (the gateway's plain endpoint sees it) …
    assert!(tools(&served.url).contains(&"mcp__found_it__echo".to_owned()));
    assert!(!tools(&served.url).iter().any(|t| t.contains("elsewhere")));
    // … granted at once to the auto_grant session only.
    assert!(tools(&auto).contains(&"mcp__found_it__echo".to_owned()));
    assert!(!tools(&s1).contains(&"mcp__found_it__echo".to_owned()));
    let denied = python(
        &["--url", &s1],
        json!([{"op": "call", "name": "mcp__found_it__echo", "args": {"message": "x"}, "expect_error": true}]),
    );
    assert!(
        denied[1].get("error").is_some() || denied[1]["is_error"] == true,
        "{denied:?}"
    );
    // The refresh grants it.
    let refreshed = api("POST", &format!("{base}/v1/sessions/s1/mcp-refresh"));
    assert!(
        refreshed["added"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__found_it__echo")),
        "{refreshed}"
    );
    let called = python(
        &["--url", &s1],
        json!([{"op": "call", "name": "mcp__found_it__echo", "args": {"message": "granted"}}]),
    );
    assert_eq!(called[1]["text"], json!(["granted"]), "{called:?}");

    // ToolHive fails: stale, the server stays and answers.
    toolhive.answer(Answer::Status(500));
    let stale = sources_until(&base, "ToolHive stale", |s| {
        discovery(s, "toolhive")["stale"] == true
    });
    let error = discovery(&stale, "toolhive")["last_error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(error.contains("HTTP 500"), "{error}");
    assert!(serves(&stale, "toolhive", "found_it"));
    let called = python(
        &["--url", &s1],
        json!([{"op": "call", "name": "mcp__found_it__echo", "args": {"message": "still"}}]),
    );
    assert_eq!(called[1]["text"], json!(["still"]), "{called:?}");
    toolhive.answer(Answer::Workloads);

    // The workload goes: unavailable, but still in the session's authority;
    // when it returns, the grant applies again without a refresh.
    toolhive.set_workloads(Vec::new());
    sources_until(&base, "the workload gone", |s| {
        discovery(s, "toolhive")["stale"] == false && !serves(s, "toolhive", "found_it")
    });
    assert!(!tools(&s1).contains(&"mcp__found_it__echo".to_owned()));
    let session = api("GET", &format!("{base}/v1/sessions/s1"));
    assert!(
        session["granted"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__found_it__echo")),
        "{session}"
    );
    toolhive.set_workloads(vec![
        Workload::running("found-it", upstream.url()).in_group("team"),
    ]);
    sources_until(&base, "the workload back", |s| {
        serves(s, "toolhive", "found_it")
    });
    assert!(tools(&s1).contains(&"mcp__found_it__echo".to_owned()));
    assert_eq!(sigterm(&mut served), 143);
}

#[test]
fn config_edits_apply_while_serving_and_an_invalid_one_is_refused() {
    let sb = Sandbox::new();
    let kit = StateDir::new();
    let extra = StateDir::new();
    let config =
        |servers: &str| sb.write("extpool.yaml", &format!("mcp_servers:\n{servers}{TIMING}"));
    config(&testkit_entry("base", &kit, &[]));
    let mut served = serve(&sb, &["--listen", "127.0.0.1:0", "--toolhive=false"]);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let sources = api("GET", &format!("{base}/v1/sources"));
    let ids: Vec<&str> = sources["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["source"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["config"], "--toolhive=false: no ToolHive source");
    // A watch of the sources (the longest wait) answers at the edit's change.
    let watch = {
        let after = sources["updates"].as_u64().unwrap();
        let url = format!("{base}/v1/sources?after={after}&wait_ms=600000");
        std::thread::spawn(move || (after, api("GET", &url)))
    };
    // An added server starts and is served.
    config(&format!(
        "{}{}",
        testkit_entry("base", &kit, &[]),
        testkit_entry("extra", &extra, &[])
    ));
    let (after, watched) = watch.join().unwrap();
    assert_eq!(watched["changed"], true, "{watched:#}");
    assert!(watched["updates"].as_u64().unwrap() > after, "{watched:#}");
    sources_until(&base, "the added server", |s| serves(s, "config", "extra"));
    let called = python(
        &["--url", &served.url],
        json!([{"op": "call", "name": "mcp__extra__echo", "args": {"message": "added"}}]),
    );
    assert_eq!(called[1]["text"], json!(["added"]), "{called:?}");
    assert_eq!(extra.starts(), 1);
    // An invalid edit: refused with its place, nothing changes.
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n{}  broken:\n    command: [not, a, string]\n{TIMING}",
            testkit_entry("base", &kit, &[])
        ),
    );
    let refused = sources_until(&base, "the edit refused", |s| {
        discovery(s, "config")["stale"] == true
    });
    let error = discovery(&refused, "config")["last_error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.contains("extpool.yaml:6:14: error: mcp_servers.broken.command"),
        "{error}"
    );
    assert!(
        serves(&refused, "config", "extra"),
        "nothing changed: {refused:#}"
    );
    assert!(tools(&served.url).contains(&"mcp__extra__echo".to_owned()));
    assert_eq!(sigterm(&mut served), 143);
}

#[test]
fn watch_config_false_serves_the_configuration_as_started() {
    let sb = Sandbox::new();
    let kit = StateDir::new();
    sb.write(
        "extpool.yaml",
        &format!("mcp_servers:\n{}{TIMING}", testkit_entry("base", &kit, &[])),
    );
    let mut served = serve(
        &sb,
        &[
            "--listen",
            "127.0.0.1:0",
            "--toolhive=false",
            "--watch-config=false",
        ],
    );
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let sources = api("GET", &format!("{base}/v1/sources"));
    assert_eq!(sources["discovery"], json!([]), "{sources:#}");
    assert_eq!(sigterm(&mut served), 143);
}

/// `ListMcpSources` as the Python SDK client gets it from `endpoint`.
fn list_mcp_sources(endpoint: &str) -> Value {
    let out = python(
        &["--url", endpoint],
        json!([{"op": "call", "name": "ListMcpSources", "args": {}}]),
    );
    let text = out[1]["text"][0]
        .as_str()
        .unwrap_or_else(|| panic!("{out:?}"));
    serde_json::from_str(text).unwrap()
}

fn server_row<'a>(sources: &'a Value, name: &str) -> Option<&'a Value> {
    sources["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "server" && r["name"] == name)
}

#[test]
fn each_server_shows_where_it_was_discovered_and_a_failed_one_its_reason() {
    let upstream = HttpServer::start();
    let toolhive = FakeToolHive::start();
    // A running workload whose URL answers 404 to MCP: it cannot start.
    let broken_url = format!("{}/mcp", toolhive.url());
    toolhive.set_workloads(vec![
        Workload::running("good", upstream.url()),
        Workload::running("broken", &broken_url),
    ]);
    let sb = Sandbox::new();
    let kit = StateDir::new();
    sb.write(
        "extpool.yaml",
        &format!("mcp_servers:\n{}{TIMING}", testkit_entry("base", &kit, &[])),
    );
    let mut served = serve(
        &sb,
        &["--listen", "127.0.0.1:0", "--toolhive-url", &toolhive.url()],
    );
    let base = served.url.trim_end_matches("/mcp").to_owned();

    // The candidate with the broken workload is not published: ToolHive is
    // stale, the failed server is named with its reason, the good one waits.
    let failing = sources_until(&base, "the broken workload failed", |s| {
        discovery(s, "toolhive")["failed"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    });
    let listed = list_mcp_sources(&served.url);
    for sources in [&failing, &listed] {
        let status = discovery(sources, "toolhive");
        assert_eq!(status["stale"], true, "{status:#}");
        assert_eq!(status["failed"][0]["name"], "broken", "{status:#}");
        assert_eq!(
            status["failed"][0]["origin"], "toolhive workload broken (group default)",
            "{status:#}"
        );
        let reason = status["failed"][0]["reason"].as_str().unwrap();
        assert!(reason.contains("404"), "{reason}");
        let error = status["last_error"].as_str().unwrap();
        assert!(
            error.contains("server \"broken\" did not start") && error.contains(reason),
            "{error}"
        );
        let row = server_row(sources, "broken").unwrap_or_else(|| panic!("{sources:#}"));
        assert_eq!(row["state"], "failed", "{row:#}");
        assert_eq!(row["discovered_by"], "toolhive", "{row:#}");
        assert_eq!(row["detail"], reason, "{row:#}");
        assert!(server_row(sources, "good").is_none(), "{sources:#}");
        // The configured server: from the configuration, connected.
        let row = server_row(sources, "base").unwrap();
        assert_eq!(row["state"], "ready", "{row:#}");
        assert!(row.get("discovered_by").is_none(), "{row:#}");
        assert!(
            row["origin"].as_str().unwrap().starts_with("extpool.yaml:"),
            "{row:#}"
        );
    }

    // The broken workload goes: the good one is published, connected.
    toolhive.set_workloads(vec![Workload::running("good", upstream.url())]);
    let settled = sources_until(&base, "the good workload published", |s| {
        serves(s, "toolhive", "good")
    });
    let listed = list_mcp_sources(&served.url);
    for sources in [&settled, &listed] {
        let status = discovery(sources, "toolhive");
        assert_eq!(status["stale"], false, "{status:#}");
        assert_eq!(status["state"], "ok", "{status:#}");
        assert_eq!(status["failed"], json!([]), "{status:#}");
        assert!(
            status["last_error"]
                .as_str()
                .unwrap()
                .contains("\"broken\""),
            "the last error is kept: {status:#}"
        );
        assert!(status["last_success_ms"].as_u64().is_some(), "{status:#}");
        assert!(server_row(sources, "broken").is_none(), "{sources:#}");
        let row = server_row(sources, "good").unwrap_or_else(|| panic!("{sources:#}"));
        assert_eq!(row["state"], "ready", "{row:#}");
        assert_eq!(row["discovered_by"], "toolhive", "{row:#}");
        assert_eq!(
            row["origin"], "toolhive workload good (group default)",
            "{row:#}"
        );
        assert!(row["detail"].as_str().unwrap().contains("tool"), "{row:#}");
    }
    let called = python(
        &["--url", &served.url],
        json!([{"op": "call", "name": "mcp__good__echo", "args": {"message": "found"}}]),
    );
    assert_eq!(called[1]["text"], json!(["found"]), "{called:?}");
    assert_eq!(sigterm(&mut served), 143);
}

/// A POST of `body` to the gateway's `/v1` API, as JSON.
fn post(url: &str, body: &Value) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(url)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let value: Value = response.json().await.unwrap();
        assert!(status.is_success(), "POST {url}: {status} {value}");
        value
    })
}

/// Calls `counter` (key `who`) as `name` through `endpoint`: the upstream
/// that answers counts it in its own state directory.
fn count_at(endpoint: &str, name: &str) {
    let out = python(
        &["--url", endpoint],
        json!([{"op": "call", "name": name, "args": {"key": "who"}}]),
    );
    assert_eq!(out[1]["is_error"], false, "{name}: {out:?}");
}

#[test]
fn discovery_never_takes_a_name_a_session_resolves_nor_grants_without_a_refresh() {
    let toolhive = FakeToolHive::start();
    let intruder_state = StateDir::new();
    let intruder = HttpServer::spawn(intruder_state.args());
    let own_state = StateDir::new();
    let own = HttpServer::spawn(own_state.args());
    let sb = Sandbox::new();
    let (kit, prefixed, late) = (StateDir::new(), StateDir::new(), StateDir::new());
    let configured = format!(
        "{}{}    prefix: pfx\n",
        testkit_entry("base", &kit, &[]),
        testkit_entry("other", &prefixed, &[])
    );
    let config =
        |servers: &str| sb.write("extpool.yaml", &format!("mcp_servers:\n{servers}{TIMING}"));
    config(&configured);
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let mut served = serve(
        &sb,
        &[
            "--listen",
            "127.0.0.1:0",
            "--state",
            &db,
            "--toolhive-url",
            &toolhive.url(),
        ],
    );
    let base = served.url.trim_end_matches("/mcp").to_owned();
    sources_until(&base, "ToolHive consulted", |s| {
        discovery(s, "toolhive")["state"] == "ok"
    });
    post(
        &format!("{base}/v1/sessions"),
        &json!({"id": "s1", "mcp_servers": {"mine": {"url": own.url()}}}),
    );
    let s1 = format!("{base}/sessions/s1/mcp");
    let before = tools(&s1);
    for name in [
        "mcp__base__counter",
        "mcp__pfx__counter",
        "mcp__mine__counter",
    ] {
        assert!(before.contains(&name.to_owned()), "{name}: {before:?}");
    }

    // ToolHive now runs servers named like the configured server (another
    // case), like the other one's prefix, like s1's own server, and one
    // new name: all reached at the intruder.
    toolhive.set_workloads(vec![
        Workload::running("BASE", intruder.url()),
        Workload::running("pfx", intruder.url()),
        Workload::running("mine", intruder.url()),
        Workload::running("newcomer", intruder.url()),
    ]);
    let found = sources_until(&base, "the newcomer discovered", |s| {
        serves(s, "toolhive", "newcomer")
    });
    let status = discovery(&found, "toolhive");
    let notes = status["notes"].to_string();
    assert!(
        notes.contains("server \\\"BASE\\\" left out: the name is taken by extpool.yaml:"),
        "{status:#}"
    );
    assert!(
        notes.contains("server \\\"mine\\\" left out: the name is taken by a session's own server"),
        "{status:#}"
    );
    assert!(!notes.contains("s1"), "no session id is shown: {notes}");
    // `pfx` runs, but its namespace is the configured server's: refused.
    let pfx = server_row(&found, "pfx").unwrap_or_else(|| panic!("{found:#}"));
    assert!(
        pfx["dropped"].to_string().contains("pfx"),
        "the namespace stays the configured server's: {pfx:#}"
    );

    // The session's names resolve as before, to the same servers; it
    // gained nothing.
    assert_eq!(tools(&s1), before);
    for name in [
        "mcp__base__counter",
        "mcp__pfx__counter",
        "mcp__mine__counter",
    ] {
        count_at(&s1, name);
    }
    // The gateway's plain endpoint sees the newcomer, and the same owners.
    assert!(tools(&served.url).contains(&"mcp__newcomer__echo".to_owned()));
    count_at(&served.url, "mcp__base__counter");
    count_at(&served.url, "mcp__pfx__counter");
    // A configuration edit adds a server: available, not granted.
    config(&format!(
        "{configured}{}",
        testkit_entry("late", &late, &[])
    ));
    sources_until(&base, "the edit applied", |s| serves(s, "config", "late"));
    assert!(tools(&served.url).contains(&"mcp__late__echo".to_owned()));
    assert_eq!(tools(&s1), before, "nothing reaches s1 without a refresh");
    let denied = python(
        &["--url", &s1],
        json!([
            {"op": "call", "name": "mcp__newcomer__echo", "args": {"message": "x"}, "expect_error": true},
            {"op": "call", "name": "CallMcpWithQuery", "args": {"server": "newcomer", "tool": "counter", "args": {"key": "who"}, "jq_filter": "."}, "expect_error": true}
        ]),
    );
    for step in &denied[1..] {
        assert!(
            step.get("error").is_some() || step["is_error"] == true,
            "{denied:?}"
        );
    }

    // The refresh grants the new names only; the old ones keep their owners.
    let refreshed = api("POST", &format!("{base}/v1/sessions/s1/mcp-refresh"));
    let added = refreshed["added"].to_string();
    assert!(
        added.contains("mcp__newcomer__echo") && added.contains("mcp__late__echo"),
        "{refreshed}"
    );
    assert!(
        !added.contains("mcp__base__")
            && !added.contains("mcp__pfx__")
            && !added.contains("mcp__mine__"),
        "{refreshed}"
    );
    for name in [
        "mcp__base__counter",
        "mcp__pfx__counter",
        "mcp__mine__counter",
    ] {
        count_at(&s1, name);
    }
    count_at(&s1, "mcp__newcomer__counter");
    // Granted now, the built-in reaches it too.
    let queried = python(
        &["--url", &s1],
        json!([{"op": "call", "name": "CallMcpWithQuery", "args": {"server": "newcomer", "tool": "echo", "args": {"message": "queried"}, "jq_filter": "."}}]),
    );
    assert_eq!(queried[1]["is_error"], false, "{queried:?}");
    assert!(
        queried[1]["text"].to_string().contains("queried"),
        "{queried:?}"
    );
    assert_eq!(kit.counter("who"), 3, "base: s1 twice, /mcp once");
    assert_eq!(prefixed.counter("who"), 3, "pfx: s1 twice, /mcp once");
    assert_eq!(own_state.counter("who"), 2, "mine: s1 twice");
    assert_eq!(intruder_state.counter("who"), 1, "only the newcomer's call");
    // Once s1 is gone, its server's name is free: the workload takes it.
    api("DELETE", &format!("{base}/v1/sessions/s1"));
    sources_until(&base, "the freed name discovered", |s| {
        serves(s, "toolhive", "mine")
    });
    assert_eq!(sigterm(&mut served), 143);
}

#[test]
fn toolhive_is_found_at_toolhive_api_url_and_without_it_is_stale_not_fatal() {
    let upstream = HttpServer::start();
    let toolhive = FakeToolHive::start();
    toolhive.set_workloads(vec![Workload::running("via-env", upstream.url())]);
    let sb = Sandbox::new();
    sb.write("extpool.yaml", &format!("mcp_servers: {{}}\n{TIMING}"));
    let mut command = sb.command();
    command
        .env("TOOLHIVE_API_URL", toolhive.url())
        .args(["serve", "--listen", "127.0.0.1:0"]);
    let mut served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let found = sources_until(&base, "the workload found", |s| {
        serves(s, "toolhive", "via_env")
    });
    let endpoint = discovery(&found, "toolhive")["endpoint"].as_str().unwrap();
    assert_eq!(endpoint, format!("{}/api/v1beta/workloads", toolhive.url()));
    assert_eq!(sigterm(&mut served), 143);

    // Nothing at the URL: the source is stale with the reason, the gateway serves.
    let gone = found_nothing_url();
    let mut command = sb.command();
    command
        .env("TOOLHIVE_API_URL", &gone)
        .args(["serve", "--listen", "127.0.0.1:0"]);
    let mut served = Served::spawn(command);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let stale = sources_until(&base, "ToolHive stale", |s| {
        discovery(s, "toolhive")["stale"] == true
    });
    let error = discovery(&stale, "toolhive")["last_error"]
        .as_str()
        .unwrap()
        .to_owned();
    // (`cannot reach` unless another test's listener took the port since.)
    assert!(
        error.contains(&format!("{gone}/api/v1beta/workloads")),
        "{error}"
    );
    assert!(tools(&served.url).contains(&"ListMcpSources".to_owned()));
    assert_eq!(sigterm(&mut served), 143);
}

/// The URL of a ToolHive that has stopped (its port no longer answers).
fn found_nothing_url() -> String {
    let stopped = FakeToolHive::start();
    stopped.url()
}

#[test]
fn a_server_discovered_while_a_session_was_closed_does_not_take_its_servers_names() {
    let toolhive = FakeToolHive::start();
    let intruder_state = StateDir::new();
    let intruder = HttpServer::spawn(intruder_state.args());
    let own_state = StateDir::new();
    let own = HttpServer::spawn(own_state.args());
    let sb = Sandbox::new();
    sb.write("extpool.yaml", &format!("mcp_servers: {{}}\n{TIMING}"));
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--state",
        &db,
        "--toolhive-url",
        &toolhive.url(),
    ];
    let mut served = serve(&sb, &args);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    post(
        &format!("{base}/v1/sessions"),
        &json!({"id": "s1", "mcp_servers": {"mine": {"url": own.url()}}}),
    );
    count_at(&format!("{base}/sessions/s1/mcp"), "mcp__mine__counter");
    assert_eq!(sigterm(&mut served), 143);

    // While no gateway holds s1 open, ToolHive starts a server of that name.
    toolhive.set_workloads(vec![Workload::running("mine", intruder.url())]);
    let mut served = serve(&sb, &args);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    sources_until(&base, "the workload discovered", |s| {
        serves(s, "toolhive", "mine")
    });
    // s1 opens again: its names are not the discovered server's.
    let s1 = format!("{base}/sessions/s1/mcp");
    let listed = tools(&s1);
    assert!(
        !listed.iter().any(|t| t.starts_with("mcp__mine__")),
        "{listed:?}"
    );
    let denied = python(
        &["--url", &s1],
        json!([{"op": "call", "name": "mcp__mine__counter", "args": {"key": "who"}, "expect_error": true}]),
    );
    assert!(
        denied[1].get("error").is_some() || denied[1]["is_error"] == true,
        "{denied:?}"
    );
    assert_eq!(
        intruder_state.counter("who"),
        0,
        "the discovered server got no call of s1"
    );
    assert_eq!(own_state.counter("who"), 1);
    // The discovered server serves everyone else.
    count_at(&served.url, "mcp__mine__counter");
    assert_eq!(intruder_state.counter("who"), 1);
    assert_eq!(sigterm(&mut served), 143);
}
