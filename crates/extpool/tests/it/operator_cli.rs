//! The command line against a running gateway shows what its operator
//! page shows: `extpool list sources --gateway` and `extpool sessions
//! list` read the functions the page's stream (`/v1/page/events`) is
//! built from, as tables with the page's columns and as JSON equal to the
//! page's data.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use crate::serve::Served;
use crate::support::{Run, Sandbox};

/// The longest the page's first snapshot may take; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(60);

/// The first `snapshot` event of the operator page's stream.
async fn page_snapshot(gateway: &str) -> Value {
    let response = reqwest::Client::new()
        .get(format!("{gateway}/v1/page/events"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{response:?}");
    let mut body = response.bytes_stream();
    let mut text = String::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            // Events end with a blank line; find the snapshot's.
            for event in text.split("\n\n") {
                let lines: Vec<&str> = event.lines().collect();
                if lines.contains(&"event: snapshot") && text.contains(&format!("{event}\n\n")) {
                    let data: String = lines
                        .iter()
                        .filter_map(|l| l.strip_prefix("data: ").or(l.strip_prefix("data:")))
                        .collect::<Vec<_>>()
                        .join("\n");
                    return serde_json::from_str::<Value>(&data).unwrap();
                }
            }
        }
        panic!("the page's stream ended without a snapshot: {text}");
    };
    tokio::time::timeout(PATIENCE, read)
        .await
        .expect("a snapshot within the patience")
}

fn cli(sb: &Sandbox, args: &[&str]) -> Run {
    let run = sb.run(args);
    assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_against_a_gateway_shows_what_its_operator_page_shows() {
    let sb = std::sync::Arc::new(Sandbox::new());
    sb.testkit_config("skills:\n  default_roots: false\n");
    let db = format!("sqlite:{}", sb.dir.path().join("gw.db").display());
    let mut command = sb.command();
    command.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--toolhive=false",
        "--state",
        &db,
    ]);
    let served = Served::spawn(command);
    let gateway = served.url.trim_end_matches("/mcp").to_owned();

    let (s, g) = (sb.clone(), gateway.clone());
    let (sources_json, sources_table, sessions_json, sessions_table) =
        tokio::task::spawn_blocking(move || {
            cli(
                &s,
                &["sessions", "--gateway", &g, "create", "--id", "page-1"],
            );
            (
                cli(&s, &["--json", "list", "sources", "--gateway", &g]),
                cli(&s, &["list", "sources", "--gateway", &g]),
                cli(&s, &["--json", "sessions", "--gateway", &g, "list"]),
                cli(&s, &["sessions", "--gateway", &g, "list"]),
            )
        })
        .await
        .unwrap();
    let page = page_snapshot(&gateway).await;

    // Sources: the same rows, whole, and each one in the table.
    let listed: Value = serde_json::from_str(&sources_json.stdout).unwrap();
    assert_eq!(
        listed["sources"], page["sources"]["sources"],
        "{listed}\n{page}"
    );
    let rows = page["sources"]["sources"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["name"] == "testkit" && r["state"] == "ready"),
        "{page}"
    );
    for row in rows.iter().filter(|r| r["kind"] != "catalog") {
        let (kind, name, state) = (
            row["kind"].as_str().unwrap(),
            row["name"].as_str().unwrap(),
            row["state"].as_str().unwrap(),
        );
        assert!(
            sources_table.stdout.lines().any(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                cells.starts_with(&[kind, name, state])
            }),
            "no row {kind} {name} {state} in:\n{}",
            sources_table.stdout
        );
    }
    assert!(
        sources_table.stdout.contains("IMPLEMENTATION"),
        "what the testkit said it is: {}",
        sources_table.stdout
    );

    // Sessions: the page's rows (without the time of the last activity,
    // which the listing itself does not move) and its columns.
    let listed: Value = serde_json::from_str(&sessions_json.stdout).unwrap();
    let strip = |rows: &Value| -> Vec<Value> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.as_object_mut().unwrap().remove("last_seen_ms");
                r
            })
            .collect()
    };
    assert_eq!(
        strip(&listed["sessions"]),
        strip(&page["sessions"]["rows"]),
        "{listed}\n{page}"
    );
    assert_eq!(listed["sessions"][0]["id"], "page-1");
    let header: Vec<&str> = sessions_table
        .stdout
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "SESSION",
            "OWNER",
            "REVISION",
            "GRANTS",
            "IN FLIGHT",
            "LAST ACTIVITY",
            "STATE"
        ],
        "{}",
        sessions_table.stdout
    );
    let row = sessions_table
        .stdout
        .lines()
        .find(|l| l.starts_with("page-1 "))
        .unwrap_or_else(|| panic!("{}", sessions_table.stdout));
    let granted = listed["sessions"][0]["granted_count"].to_string();
    assert!(row.split_whitespace().any(|c| c == granted), "{row}");
}

#[test]
fn list_gateway_takes_sources_only() {
    let sb = Sandbox::new();
    let run = sb.run(&["list", "tools", "--gateway", "http://127.0.0.1:9"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("extpool list sources --gateway URL"),
        "{}",
        run.stderr
    );
}
