//! `extpool serve -vvv` with its log (stderr redirected to a file) in the
//! directory of its configuration, which is watched for edits and is a
//! skill root too: each line written is a filesystem event there, so a
//! line logged per event would feed the log without end (+70 MB in 3 s).
//! The watchers drop an event for a file they do not watch before anything
//! is logged, and a skills batch that changed nothing logs nothing.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Child, ChildStdout, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::discovery::{api, sources_until};
use crate::support::{Sandbox, testkit};

/// The most lines the log may gain from one configuration edit applied
/// to the one it follows, the edit's own lines included (at trace level,
/// removing a stdio server writes about a dozen).
const LINES_PER_EDIT: usize = 30;

/// Upper bound of the gateway's start; reached only when broken (a log
/// that fed itself kept it from ever serving).
const PATIENCE: Duration = Duration::from_secs(60);

/// Kills the gateway whatever happened (a log that feeds itself keeps it
/// too busy to end on SIGTERM).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The endpoint `extpool serve` prints on `stdout`, within [`PATIENCE`]
/// (the rest of its output is read on, as a terminal would).
fn endpoint(stdout: ChildStdout) -> Option<String> {
    let (found, endpoint) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref().map_while(Result::ok) {
            if let Some(at) = line.find("http://") {
                let _ = found.send(line[at..].trim().to_owned());
                break;
            }
        }
        lines.for_each(drop);
    });
    endpoint.recv_timeout(PATIENCE).ok()
}

/// Whether the configuration source serves `server`.
fn serves(sources: &Value, server: &str) -> bool {
    sources["discovery"]
        .as_array()
        .and_then(|all| all.iter().find(|d| d["source"] == "config"))
        .and_then(|config| config["servers"].as_array())
        .is_some_and(|servers| servers.iter().any(|s| s == server))
}

/// The log's size in bytes.
fn size(log: &Path) -> u64 {
    std::fs::metadata(log).unwrap().len()
}

/// What the log gained from byte `from` to byte `to`, read up to 1 MiB.
fn gained(log: &Path, from: u64, to: u64) -> String {
    let mut file = std::fs::File::open(log).unwrap();
    file.seek(SeekFrom::Start(from)).unwrap();
    let mut text = String::new();
    file.take((to - from).min(1 << 20))
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[test]
fn a_log_in_the_watched_directory_does_not_feed_itself() {
    let sb = Sandbox::new();
    let work = sb.work();
    let config = |extra: bool| {
        let kit = testkit().display().to_string();
        let extra = if extra {
            format!("  extra:\n    command: {kit:?}\n")
        } else {
            String::new()
        };
        sb.write(
            "extpool.yaml",
            &format!(
                "mcp_servers:\n  base:\n    command: {kit:?}\n{extra}skills:\n  default_roots: false\n  paths: [{:?}]\n",
                work.display().to_string()
            ),
        );
    };
    config(false);
    sb.write(
        "demo/SKILL.md",
        "---\nname: demo\ndescription: D\n---\nBody.\n",
    );
    let log = work.join("extpool.log");
    let mut child = sb
        .command()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--toolhive=false",
            "-vvv",
        ])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let served = Killed(child);
    let url = endpoint(stdout).unwrap_or_else(|| {
        panic!(
            "no endpoint within {PATIENCE:?}; the log had grown to {} bytes",
            size(&log)
        )
    });
    let base = url.trim_end_matches("/mcp").to_owned();
    api("GET", &format!("{base}/v1/sources"));
    // An edit applied: every watcher has seen the log's lines so far.
    config(true);
    sources_until(&base, "the added server", |s| serves(s, "extra"));
    let before = size(&log);
    // Nothing else is written; a second edit, once applied, shows that the
    // watchers ran past whatever the log's own writes made them see.
    config(false);
    sources_until(&base, "the removed server", |s| !serves(s, "extra"));
    let after = size(&log);
    let text = gained(&log, before, after);
    let count = text.lines().count();
    assert!(
        count <= LINES_PER_EDIT && after - before < 1 << 20,
        "the log gained {} bytes, {count} lines, for one edit:\n{}",
        after - before,
        text.chars().take(4000).collect::<String>()
    );
    drop(served);
}
