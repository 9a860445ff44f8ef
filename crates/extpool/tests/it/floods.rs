//! A server that floods extpool with notifications (the testkit's
//! `notify`): log messages cut to their rate with one warning naming the
//! server, the rate set in extpool.yaml, and a `list_changed` flood shown
//! by `watch` as a few merged events that still end with the last change.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Instant;

use extpool_testkit::HttpServer;

use crate::support::Sandbox;

const WARNING: &str = "MCP server \"testkit\" sends more than 100 log messages a second";

#[test]
fn a_log_flood_is_cut_with_one_warning_naming_the_server() {
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let r = sb.run(&[
        "-v",
        "call",
        "mcp__testkit__notify",
        "kind=log",
        "count=5000",
    ]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "sent 5000\n"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.matches(WARNING).count(), 1, "{}", r.stderr);
}

#[test]
fn the_log_rate_is_set_in_the_configuration() {
    let sb = Sandbox::new();
    sb.testkit_config(
        "skills:\n  default_roots: false\nextensions:\n  notifications:\n    log_per_second: 1000000\n",
    );
    let r = sb.run(&[
        "-v",
        "call",
        "mcp__testkit__notify",
        "kind=log",
        "count=2000",
    ]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "sent 2000\n"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("log messages a second"), "{}", r.stderr);
}

/// Lines of `watch --json` until one satisfies `done`.
fn read_until(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    seen: &mut Vec<serde_json::Value>,
    done: impl Fn(&serde_json::Value) -> bool,
) {
    for line in lines {
        let event: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        let finished = done(&event);
        seen.push(event);
        if finished {
            return;
        }
    }
    panic!("watch ended before the awaited event; saw {seen:?}");
}

#[test]
fn watch_shows_a_list_changed_flood_as_a_few_events_ending_with_the_last() {
    let server = HttpServer::start();
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  h:\n    url: {}\nskills:\n  default_roots: false\n",
            server.url()
        ),
    );
    let listed = sb.run(&["list", "tools", "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let tools: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    let before = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["server"] == "h")
        .count();

    let mut watch = sb
        .command()
        .args(["watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err_lines = BufReader::new(watch.stderr.take().unwrap()).lines();
    loop {
        let line = err_lines.next().expect("watch ended early").unwrap();
        if line.starts_with("watching ") {
            break;
        }
    }
    let started = Instant::now();
    let count = 5000;
    let r = sb.run(&["call", "mcp__h__notify", &format!("count={count}")]);
    assert_eq!(r.stdout, format!("sent {count}\n"), "{}", r.stderr);
    // The last change after the flood: a new tool. watch must get to it.
    let r = sb.run(&["call", "mcp__h__add_tool", "name=sentinel"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    read_until(&mut lines, &mut seen, |e| {
        e["type"] == "revision" && e["tools"].as_u64() == Some(before as u64 + 1)
    });
    let elapsed = started.elapsed();
    let changes = seen.iter().filter(|e| e["kind"] == "tools_changed").count();
    println!("{count} list_changed in {elapsed:?}: watch showed {changes} tools_changed events");
    // At most one a list_changed interval (100 ms) passes the gate, plus
    // the held last one and the sentinel's.
    let bound = 3 + (elapsed.as_millis() / 100) as usize;
    assert!(
        (1..=bound).contains(&changes),
        "{changes} events for {count} notifications in {elapsed:?}"
    );
    let status = std::process::Command::new("kill")
        .args(["-INT", &watch.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(watch.wait().unwrap().code(), Some(0));
}
