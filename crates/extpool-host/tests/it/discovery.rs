//! Discovery through the public Host API: ToolHive's workloads (served by
//! a stand-in speaking its real wire format) and edits of the
//! configuration files join and leave the catalog on its one
//! reconciliation loop; failures keep the last usable runtime; a changed
//! server is replaced without failing a call in flight.

use std::sync::Arc;
use std::time::Duration;

use extpool_host::{
    ConfigReload, DiscoveryOptions, DiscoveryStatus, Host, HostOptions, ToolCall, ToolHiveOptions,
};
use extpool_testkit::toolhive::{Answer, FakeToolHive, Workload};
use extpool_testkit::{HttpServer, StateDir};
use rmcp::model::CallToolRequestParams;

use crate::support::{Project, args, testkit_yaml};

/// Upper bound of anything a test waits for; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(60);

/// Fast discovery timing, no skills.
const TIMING: &str = "discovery:\n  interval_ms: 100\n  backoff_initial_ms: 100\n  backoff_max_ms: 200\n  timeout_ms: 20000\nskills:\n  default_roots: false\n  watch: false\n";

/// `extpool.yaml` with `servers` (YAML lines under `mcp_servers:`).
fn config(project: &Project, servers: &str) {
    project.config(&format!("mcp_servers:\n{servers}{TIMING}"));
}

fn http_entry(name: &str, url: &str) -> String {
    format!("  {name}:\n    url: {url}\n")
}

/// A host on `project` discovering from `toolhive` (group `group`) and
/// reloading its `extpool.yaml`.
async fn start(project: &Project, toolhive: Option<(&FakeToolHive, Option<&str>)>) -> Host {
    let options = HostOptions {
        discovery: DiscoveryOptions {
            reload: Some(ConfigReload {
                files: vec![project.path().join("extpool.yaml")],
                ..ConfigReload::default()
            }),
            toolhive: toolhive.map(|(t, group)| ToolHiveOptions {
                url: t.url(),
                group: group.map(str::to_owned),
            }),
        },
        ..project.options()
    };
    Host::start(options).await.unwrap()
}

fn tool_names(host: &Host) -> Vec<String> {
    host.pool()
        .tools()
        .into_iter()
        .filter(|t| !t.builtin)
        .map(|t| t.name)
        .collect()
}

fn has_tool(host: &Host, name: &str) -> bool {
    tool_names(host).iter().any(|t| t == name)
}

/// Waits until `check` holds, re-checking at each published revision.
async fn until_revision(host: &Host, what: &str, check: impl Fn(&Host) -> bool) {
    let mut revisions = host.catalog().subscribe();
    let wait = async {
        while !check(host) {
            revisions.changed().await.unwrap();
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("never happened: {what}"));
}

/// Waits until `check` holds for a discovery source's status, re-checking
/// each time discovery reports a change.
async fn until_source(
    host: &Host,
    source: &str,
    what: &str,
    check: impl Fn(&DiscoveryStatus) -> bool,
) -> DiscoveryStatus {
    let mut updates = host.discovery_updates();
    let wait = async {
        loop {
            let status = host
                .discovery()
                .into_iter()
                .find(|d| d.source == source)
                .unwrap_or_else(|| panic!("no discovery source {source}"));
            if check(&status) {
                return status;
            }
            updates.changed().await.unwrap();
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("never happened: {what}: {:#?}", host.discovery()))
}

async fn echo(host: &Host, tool: &str) -> String {
    let result = host
        .pool()
        .call(ToolCall::new(
            tool,
            args(serde_json::json!({"message": "hi"})),
        ))
        .await
        .outcome
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    result.joined_text()
}

/// Waits until `check` holds for what the servers recorded in `state`
/// (looking again at each change there), failing after [`PATIENCE`].
async fn until_recorded(
    state: &extpool_testkit::StateDir,
    what: &str,
    check: impl FnMut(&extpool_testkit::StateDir) -> bool,
) {
    state.until(what, PATIENCE, check).await;
}

/// True once process `pid` has exited (gone, or a zombie).
fn exited(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.contains(") Z "))
        .unwrap_or(true)
}

/// Releases a `barrier` call waiting on `server` by arriving as the second party.
async fn release_barrier(server: &HttpServer, key: &str) {
    let client = extpool_testkit::client::connect_http(server.url())
        .await
        .unwrap();
    let mut params = CallToolRequestParams::new("barrier");
    params.arguments = Some(args(serde_json::json!({"key": key, "parties": 2})));
    let result = client.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovered_server_appears_namespaced_and_callable_then_disappears() {
    let upstream = HttpServer::start();
    let toolhive = FakeToolHive::start();
    toolhive.set_workloads(vec![Workload::running("kit-one", upstream.url())]);
    let project = Project::new();
    config(&project, "");
    let host = start(&project, Some((&toolhive, None))).await;
    // The first cycle, during start, consulted ToolHive.
    assert!(
        has_tool(&host, "mcp__kit_one__echo"),
        "{:?}",
        tool_names(&host)
    );
    assert_eq!(echo(&host, "mcp__kit_one__echo").await, "hi");
    let server = host
        .servers()
        .into_iter()
        .find(|s| s.name == "kit_one")
        .unwrap();
    assert_eq!(server.origin, "toolhive workload kit-one (group default)");
    assert_eq!(server.transport, format!("http: {}", upstream.url()));
    let status = until_source(&host, "toolhive", "ToolHive consulted", |d| d.state == "ok").await;
    assert_eq!(status.servers, ["kit_one"]);
    assert!(status.last_success_ms.is_some() && !status.stale);
    // Polls that find the same workload change nothing: same name, same revision.
    let revision = host.catalog().current().number();
    let asked = toolhive.requests();
    let toolhive = Arc::new(toolhive);
    toolhive.wait_past_async(asked + 2, PATIENCE).await;
    assert_eq!(host.catalog().current().number(), revision);
    assert!(has_tool(&host, "mcp__kit_one__echo"));
    // The workload goes away: so do its tools.
    toolhive.set_workloads(Vec::new());
    until_revision(&host, "the tools of a removed workload leave", |h| {
        !has_tool(h, "mcp__kit_one__echo")
    })
    .await;
    assert!(!host.servers().iter().any(|s| s.name == "kit_one"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_source_is_stale_and_keeps_the_last_runtime() {
    let upstream = HttpServer::start();
    let toolhive = FakeToolHive::start();
    toolhive.set_workloads(vec![Workload::running("kit", upstream.url())]);
    let project = Project::new();
    config(&project, "");
    let host = start(&project, Some((&toolhive, None))).await;
    assert!(has_tool(&host, "mcp__kit__echo"));
    let good = until_source(&host, "toolhive", "consulted", |d| d.state == "ok").await;
    let revision = host.catalog().current().number();

    toolhive.answer(Answer::Status(500));
    let stale = until_source(&host, "toolhive", "stale after a 500", |d| d.stale).await;
    let error = stale.last_error.clone().unwrap();
    assert!(
        error.contains("answered HTTP 500: Internal Server Error"),
        "{error}"
    );
    assert_eq!(stale.servers, ["kit"], "the last runtime stays");
    assert_eq!(stale.last_success_ms, good.last_success_ms);
    assert_eq!(echo(&host, "mcp__kit__echo").await, "hi");
    let row = host
        .sources()
        .into_iter()
        .find(|r| r.kind == "discovery" && r.name == "toolhive")
        .unwrap();
    assert!(row.stale && row.state == "stale", "{row:?}");

    toolhive.answer(Answer::Garbage);
    let garbage = until_source(&host, "toolhive", "stale after garbage", |d| {
        d.last_error
            .as_deref()
            .is_some_and(|e| e.contains("not a workload list"))
    })
    .await;
    assert!(garbage.stale);
    assert_eq!(echo(&host, "mcp__kit__echo").await, "hi");
    assert_eq!(host.catalog().current().number(), revision);

    toolhive.answer(Answer::Workloads);
    let healed = until_source(&host, "toolhive", "healthy again", |d| !d.stale).await;
    assert!(healed.last_success_ms > good.last_success_ms);
    // The last error stays on record after the recovery.
    assert!(healed.last_error.is_some());
    assert_eq!(healed.servers, ["kit"]);
    host.shutdown().await;
}

/// Whether `report` is whole: a server discovery says it serves is a
/// ready row with its tools, and the failure it replaced is gone from the
/// discovery status and from the rows alike.
fn assert_whole(report: &extpool_host::SourcesReport, server: &str, gone: &str) {
    let toolhive = report
        .discovery
        .iter()
        .find(|d| d.source == "toolhive")
        .unwrap();
    if !toolhive.servers.iter().any(|s| s == server) {
        return;
    }
    assert!(!toolhive.stale && toolhive.failed.is_empty(), "{report:#?}");
    assert_eq!(toolhive.state, "ok", "{report:#?}");
    let row = report.sources.iter().find(|r| r.name == server);
    assert!(
        row.is_some_and(|r| r.state == "ready" && r.detail.contains("tool")),
        "{report:#?}"
    );
    assert!(
        !report.sources.iter().any(|r| r.name == gone),
        "{report:#?}"
    );
    assert!(
        report.status.servers.iter().any(|s| s.name == server),
        "{report:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_change_is_reported_whole_from_its_first_revision() {
    let upstream = HttpServer::start();
    let toolhive = FakeToolHive::start();
    // A running workload whose URL answers 404 to MCP: it cannot start,
    // so neither server is published.
    let broken = format!("{}/mcp", toolhive.url());
    toolhive.set_workloads(vec![
        Workload::running("good", upstream.url()),
        Workload::running("broken", &broken),
    ]);
    let project = Project::new();
    config(&project, "");
    let host = start(&project, Some((&toolhive, None))).await;
    let failing = until_source(&host, "toolhive", "the broken workload failed", |d| {
        !d.failed.is_empty()
    })
    .await;
    assert!(failing.stale && failing.servers.is_empty(), "{failing:#?}");
    let report = host.sources_report();
    let row = report.sources.iter().find(|r| r.name == "broken").unwrap();
    assert_eq!(row.state, "failed", "{row:?}");
    assert!(row.detail.contains("404"), "{row:?}");
    assert!(!report.sources.iter().any(|r| r.name == "good"));

    // The broken workload goes: the good one is published. Read at the
    // moment each revision is published, the report is whole.
    let mut revisions = host.catalog().subscribe();
    revisions.borrow_and_update();
    toolhive.set_workloads(vec![Workload::running("good", upstream.url())]);
    let wait = async {
        loop {
            revisions.changed().await.unwrap();
            let report = host.sources_report();
            assert_whole(&report, "good", "broken");
            if has_tool(&host, "mcp__good__echo") {
                return report;
            }
        }
    };
    let report = tokio::time::timeout(PATIENCE, wait)
        .await
        .expect("the good workload was never published");
    let toolhive_status = report.discovery.iter().find(|d| d.source == "toolhive");
    assert_eq!(toolhive_status.unwrap().servers, ["good"], "{report:#?}");
    assert_eq!(echo(&host, "mcp__good__echo").await, "hi");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_answer_keeps_the_usable_workloads_and_notes_the_rest() {
    let upstream = HttpServer::start();
    let toolhive = FakeToolHive::start();
    toolhive.set_workloads(vec![
        Workload::running("good", upstream.url()),
        Workload::running("booting", "").with_status("starting", "pulling the image"),
        Workload::running("old-style", "http://127.0.0.1:9/sse#old-style").over_sse(),
        Workload::running("unauth", upstream.url()).with_status("unauthenticated", ""),
    ]);
    let project = Project::new();
    config(&project, "");
    let host = start(&project, Some((&toolhive, None))).await;
    let status = until_source(&host, "toolhive", "consulted", |d| d.state == "ok").await;
    assert_eq!(status.servers, ["good"]);
    assert_eq!(status.notes.len(), 3, "{:?}", status.notes);
    assert!(
        status
            .notes
            .iter()
            .any(|n| n.contains("starting (pulling the image)"))
    );
    assert!(status.notes.iter().any(|n| n.contains("SSE")));
    assert!(status.notes.iter().any(|n| n.contains("unauthenticated")));
    assert!(has_tool(&host, "mcp__good__echo"));
    assert!(
        !tool_names(&host)
            .iter()
            .any(|t| t.contains("booting") || t.contains("old_style"))
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_selects_its_workloads_and_an_unknown_group_is_stale() {
    let (a, b) = (HttpServer::start(), HttpServer::start());
    let toolhive = FakeToolHive::start();
    toolhive.set_workloads(vec![
        Workload::running("in-default", a.url()),
        Workload::running("in-dev", b.url()).in_group("dev"),
    ]);
    let project = Project::new();
    config(&project, "");
    let host = start(&project, Some((&toolhive, Some("dev")))).await;
    assert!(has_tool(&host, "mcp__in_dev__echo"));
    assert!(!has_tool(&host, "mcp__in_default__echo"));
    assert!(
        toolhive
            .queries()
            .iter()
            .all(|q| q.as_deref() == Some("dev"))
    );
    host.shutdown().await;

    let project = Project::new();
    config(&project, &http_entry("mine", a.url()));
    let host = start(&project, Some((&toolhive, Some("nope")))).await;
    let status = until_source(&host, "toolhive", "stale", |d| d.stale).await;
    let error = status.last_error.unwrap();
    assert!(error.contains("HTTP 404: group not found: nope"), "{error}");
    // The configured server is unaffected.
    assert_eq!(echo(&host, "mcp__mine__echo").await, "hi");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_toolhive_leaves_the_host_working() {
    // A port nothing listens on (for as long as `closed` lives).
    let closed = extpool_testkit::ClosedPort::new();
    let url = format!("http://{}", closed.addr());
    let upstream = HttpServer::start();
    let project = Project::new();
    config(&project, &http_entry("mine", upstream.url()));
    let options = HostOptions {
        discovery: DiscoveryOptions {
            reload: None,
            toolhive: Some(ToolHiveOptions { url, group: None }),
        },
        ..project.options()
    };
    let host = Host::start(options).await.unwrap();
    let status = until_source(&host, "toolhive", "stale", |d| d.stale).await;
    assert!(status.last_error.unwrap().contains("cannot reach"));
    assert_eq!(echo(&host, "mcp__mine__echo").await, "hi");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_url_swaps_connections_without_failing_a_call_in_flight() {
    let (state_a, state_b) = (StateDir::new(), StateDir::new());
    let (a, b) = (
        HttpServer::spawn(state_a.args()),
        HttpServer::spawn(state_b.args()),
    );
    let toolhive = FakeToolHive::start();
    toolhive.set_workloads(vec![Workload::running("kit", a.url())]);
    let project = Project::new();
    config(&project, "");
    let host = start(&project, Some((&toolhive, None))).await;
    // A call that can only finish when a second party arrives at A.
    let in_flight = {
        let view = host.pool();
        tokio::spawn(async move {
            view.call(ToolCall::new(
                "mcp__kit__barrier",
                args(serde_json::json!({"key": "swap", "parties": 2})),
            ))
            .await
            .outcome
        })
    };
    until_recorded(&state_a, "the call reached A", |s| s.arrivals("swap") == 1).await;
    let revision = host.catalog().current().number();
    toolhive.set_workloads(vec![Workload::running("kit", b.url())]);
    until_revision(&host, "the new URL is published", |h| {
        h.servers()
            .iter()
            .any(|s| s.name == "kit" && s.transport == format!("http: {}", b.url()))
    })
    .await;
    assert!(host.catalog().current().number() > revision);
    // New calls reach B, under the same name.
    host.pool()
        .call(ToolCall::new(
            "mcp__kit__counter",
            args(serde_json::json!({"key": "after"})),
        ))
        .await
        .outcome
        .unwrap();
    assert_eq!(state_b.counter("after"), 1);
    assert_eq!(state_a.counter("after"), 0);
    // The call in flight on A's connection is still running, and succeeds.
    assert!(!in_flight.is_finished());
    release_barrier(&a, "swap").await;
    let result = tokio::time::timeout(PATIENCE, in_flight)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_edit_adds_a_server_while_a_call_is_in_flight() {
    let state_a = StateDir::new();
    let (a, b) = (HttpServer::spawn(state_a.args()), HttpServer::start());
    let project = Project::new();
    config(&project, &http_entry("a", a.url()));
    let host = start(&project, None).await;
    let in_flight = {
        let view = host.pool();
        tokio::spawn(async move {
            view.call(ToolCall::new(
                "mcp__a__barrier",
                args(serde_json::json!({"key": "edit", "parties": 2})),
            ))
            .await
            .outcome
        })
    };
    until_recorded(&state_a, "the call reached A", |s| s.arrivals("edit") == 1).await;
    config(
        &project,
        &format!("{}{}", http_entry("a", a.url()), http_entry("b", b.url())),
    );
    until_revision(&host, "the added server's tools", |h| {
        has_tool(h, "mcp__b__echo")
    })
    .await;
    assert_eq!(echo(&host, "mcp__b__echo").await, "hi");
    // A was not touched: the call on it is still in flight, then succeeds.
    assert!(!in_flight.is_finished());
    release_barrier(&a, "edit").await;
    let result = tokio::time::timeout(PATIENCE, in_flight)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    let status = until_source(&host, "config", "reloaded", |d| d.servers.len() == 2).await;
    assert!(!status.stale);
    // Removing it from the file removes it.
    config(&project, &http_entry("a", a.url()));
    until_revision(&host, "the removed server's tools leave", |h| {
        !has_tool(h, "mcp__b__echo")
    })
    .await;
    assert!(has_tool(&host, "mcp__a__echo"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_edit_is_refused_with_its_location_and_changes_nothing() {
    let (a, b) = (HttpServer::start(), HttpServer::start());
    let project = Project::new();
    config(&project, &http_entry("a", a.url()));
    let host = start(&project, None).await;
    let revision = host.catalog().current().number();
    let before = tool_names(&host);
    // b is added, but the entry of a is broken: nothing of it applies.
    project.config(&format!(
        "mcp_servers:\n  a:\n    url: {}\n    timeout_ms: soon\n{}{TIMING}",
        a.url(),
        http_entry("b", b.url())
    ));
    let refused = until_source(&host, "config", "the edit refused", |d| d.stale).await;
    let error = refused.last_error.unwrap();
    assert!(error.contains("extpool.yaml:4:"), "{error}");
    assert_eq!(host.catalog().current().number(), revision);
    assert_eq!(tool_names(&host), before);
    assert_eq!(echo(&host, "mcp__a__echo").await, "hi");
    // Fixed: it applies.
    config(
        &project,
        &format!("{}{}", http_entry("a", a.url()), http_entry("b", b.url())),
    );
    until_revision(&host, "the fixed edit applies", |h| {
        has_tool(h, "mcp__b__echo")
    })
    .await;
    until_source(&host, "config", "no longer stale", |d| !d.stale).await;
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_edit_of_a_discovered_mcp_json_is_refused_too() {
    let (a, b) = (HttpServer::start(), HttpServer::start());
    let project = Project::new();
    project.config(TIMING);
    let mcp_json = project.path().join(".mcp.json");
    let write = |servers: &str| {
        std::fs::write(
            &mcp_json,
            format!("{{\"mcpServers\": {{\n{servers}\n}}}}\n"),
        )
        .unwrap()
    };
    let entry =
        |name: &str, url: &str| format!("  \"{name}\": {{\"type\": \"http\", \"url\": \"{url}\"}}");
    write(&entry("a", a.url()));
    let options = HostOptions {
        discovery: DiscoveryOptions {
            reload: Some(ConfigReload::default()),
            toolhive: None,
        },
        ..HostOptions {
            places: project.places(),
            watch_skills: Some(false),
            ..HostOptions::files(Vec::<std::path::PathBuf>::new())
        }
    };
    let host = Host::start(options).await.unwrap();
    assert!(has_tool(&host, "mcp__a__echo"));
    write(&format!(
        "{},\n  \"b\": \"just a string\"",
        entry("a", a.url())
    ));
    let refused = until_source(&host, "config", "the edit refused", |d| d.stale).await;
    let error = refused.last_error.unwrap();
    assert!(error.contains(".mcp.json:3:"), "{error}");
    assert!(has_tool(&host, "mcp__a__echo"));
    write(&format!(
        "{},\n{}",
        entry("a", a.url()),
        entry("b", b.url())
    ));
    until_revision(&host, "the fixed edit applies", |h| {
        has_tool(h, "mcp__b__echo")
    })
    .await;
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_command_replaces_the_process() {
    let state = StateDir::new();
    let project = Project::new();
    let entry = |extra: &str| format!("  kit:\n{}{extra}", testkit_yaml(&state, 4));
    config(&project, &entry(""));
    let host = start(&project, None).await;
    let first = state.pids();
    assert_eq!(first.len(), 1);
    // The same server with one more argument: another process.
    let (_, args_now) = extpool_testkit::stdio_command(state.args()).into_parts();
    let mut more: Vec<String> = args_now.iter().map(|a| format!("{a:?}")).collect();
    more.extend(["\"--extra-tools\"".into(), "\"1\"".into()]);
    let program = extpool_testkit::stdio_command(state.args()).into_parts().0;
    config(
        &project,
        &format!(
            "  kit:\n    command: {:?}\n    args: [{}]\n",
            program.display().to_string(),
            more.join(", ")
        ),
    );
    until_revision(&host, "the replaced server's tools", |h| {
        has_tool(h, "mcp__kit__tool_0000")
    })
    .await;
    assert_eq!(echo(&host, "mcp__kit__echo").await, "hi");
    assert_eq!(state.pids().len(), 2);
    let second = state.pids()[1];
    // The old process is closed once nothing runs on it; the new one runs.
    extpool_testkit::procs::exited(first[0]).await;
    assert!(!exited(second));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_of_the_vs_code_and_codex_files_apply_too() {
    let servers: Vec<HttpServer> = (0..4).map(|_| HttpServer::start()).collect();
    let project = Project::new();
    project.config(TIMING);
    let vscode = project.path().join(".vscode/mcp.json");
    let codex = project.path().join(".codex/config.toml");
    std::fs::create_dir_all(vscode.parent().unwrap()).unwrap();
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    let write_vscode = |names: &[(&str, &str)]| {
        let entries: Vec<String> = names
            .iter()
            .map(|(n, u)| format!("\"{n}\": {{\"type\": \"http\", \"url\": \"{u}\"}}"))
            .collect();
        let text = format!("{{\"servers\": {{{}}}}}\n", entries.join(", "));
        std::fs::write(&vscode, text).unwrap();
    };
    let write_codex = |names: &[(&str, &str)]| {
        let text: String = names
            .iter()
            .map(|(n, u)| format!("[mcp_servers.{n}]\nurl = \"{u}\"\n\n"))
            .collect();
        std::fs::write(&codex, text).unwrap();
    };
    write_vscode(&[("v1", servers[0].url())]);
    write_codex(&[("c1", servers[1].url())]);
    let options = HostOptions {
        discovery: DiscoveryOptions {
            reload: Some(ConfigReload::default()),
            toolhive: None,
        },
        ..HostOptions {
            places: project.places(),
            watch_skills: Some(false),
            ..HostOptions::files(Vec::<std::path::PathBuf>::new())
        }
    };
    let host = Host::start(options).await.unwrap();
    assert!(has_tool(&host, "mcp__v1__echo") && has_tool(&host, "mcp__c1__echo"));

    // An edit of the VS Code file adds its server; of the Codex file
    // replaces one server with another.
    write_vscode(&[("v1", servers[0].url()), ("v2", servers[2].url())]);
    until_revision(&host, "the VS Code edit applies", |h| {
        has_tool(h, "mcp__v2__echo")
    })
    .await;
    assert_eq!(echo(&host, "mcp__v2__echo").await, "hi");
    write_codex(&[("c2", servers[3].url())]);
    until_revision(&host, "the Codex edit applies", |h| {
        has_tool(h, "mcp__c2__echo") && !has_tool(h, "mcp__c1__echo")
    })
    .await;
    assert_eq!(echo(&host, "mcp__c2__echo").await, "hi");
    let config = host
        .discovery()
        .into_iter()
        .find(|d| d.source == "config")
        .unwrap();
    assert!(!config.stale, "{config:?}");
    for name in ["v1", "v2", "c2"] {
        assert!(config.servers.iter().any(|s| s == name), "{config:?}");
    }
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediscover_alone_wakes_the_loop_to_consult_the_sources_now() {
    let upstream = HttpServer::start();
    let toolhive = FakeToolHive::start();
    let project = Project::new();
    // ToolHive is polled once an hour: only a refresh asks it sooner.
    project.config(
        "discovery:\n  interval_ms: 3600000\n  timeout_ms: 20000\nskills:\n  default_roots: false\n  watch: false\n",
    );
    let host = start(&project, Some((&toolhive, None))).await;
    until_source(&host, "toolhive", "ToolHive consulted", |d| d.state == "ok").await;
    assert!(!has_tool(&host, "mcp__kit_one__echo"));
    toolhive.set_workloads(vec![Workload::running("kit-one", upstream.url())]);
    // Nobody asks the catalog for a cycle: marking the sources due wakes
    // its loop, which consults them at once.
    host.rediscover();
    until_revision(&host, "the workload found by the refresh", |h| {
        has_tool(h, "mcp__kit_one__echo")
    })
    .await;
    assert_eq!(echo(&host, "mcp__kit_one__echo").await, "hi");
    host.shutdown().await;
}
