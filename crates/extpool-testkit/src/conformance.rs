//! Running the official MCP conformance suite (`@modelcontextprotocol/
//! conformance`, on Node 22 from the peers) and reading its verdicts.
//!
//! The suite writes one `checks.json` per scenario under `-o DIR`
//! (`DIR/<scenario>-<ISO timestamp>/`, servers `DIR/server-<scenario>-…`;
//! a `/` in a scenario name makes subdirectories). [`results`] tallies
//! them per scenario.

use std::collections::BTreeMap;
use std::path::Path;

use crate::peers;

/// The checks of one scenario.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// `SUCCESS` checks.
    pub passed: u32,
    /// `FAILURE` checks.
    pub failed: u32,
    /// `WARNING` checks.
    pub warnings: u32,
    /// Checks the suite records as not applicable because the server
    /// answered with JSON instead of an SSE stream (its `INFO` records
    /// `server-sse-content-type`, and `server-sse-streams-functional` with
    /// no SSE stream): the spec lets a server answer either way.
    pub json_answers: u32,
}

impl Tally {
    /// How the suite judges a server scenario: no failure (warnings allowed).
    pub fn server_passes(&self) -> bool {
        self.failed == 0
    }

    /// How the suite judges a client scenario: checks passed, no failure,
    /// no warning.
    pub fn client_passes(&self) -> bool {
        self.passed > 0 && self.failed == 0 && self.warnings == 0
    }
}

/// Length of the `-<ISO timestamp>` suffix of a result directory.
const TIMESTAMP_SUFFIX: usize = 25;

/// Runs `conformance <args…> -o <out>` to its end and returns what it
/// printed (stdout, then stderr). Its exit code is not a verdict (it is 1
/// on any failure): read [`results`].
///
/// # Panics
///
/// When Node 22 or the suite is not installed, or cannot be started.
pub fn run(args: &[&str], out: &Path) -> String {
    run_script(&peers::conformance_script(), args, out)
}

/// [`run`] with the suite's draft release (`conformance-draft`, 0.2.0-alpha):
/// the one that has the 2026-07-28 era's scenarios.
///
/// # Panics
///
/// When Node 22 or the draft suite is not installed, or cannot be started.
pub fn run_draft(args: &[&str], out: &Path) -> String {
    run_script(&peers::conformance_draft_script(), args, out)
}

fn run_script(script: &Path, args: &[&str], out: &Path) -> String {
    let output = std::process::Command::new(peers::node22())
        .arg(script)
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run the conformance suite");
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// Whether an `INFO` check is the suite saying an SSE check does not apply
/// because the server answered with JSON.
fn answered_with_json(check: &serde_json::Value) -> bool {
    match check["id"].as_str() {
        Some("server-sse-content-type") => true,
        Some("server-sse-streams-functional") => check["details"]["numSseStreams"] == 0,
        _ => false,
    }
}

/// The tally of every scenario with a `checks.json` under `dir`, by
/// scenario name (`server-` prefixes kept as the suite wrote them).
pub fn results(dir: &Path) -> BTreeMap<String, Tally> {
    let mut found = BTreeMap::<String, Tally>::new();
    walk(dir, "", &mut |scenario, checks| {
        let tally = found.entry(scenario).or_default();
        for check in checks {
            match check["status"].as_str() {
                Some("SUCCESS") => tally.passed += 1,
                Some("FAILURE") => tally.failed += 1,
                Some("WARNING") => tally.warnings += 1,
                Some("INFO") if answered_with_json(check) => tally.json_answers += 1,
                _ => {}
            }
        }
    });
    found
}

/// The checks each scenario under `dir` passed: by scenario, how many
/// times each check (its `id` and `name`) came out `SUCCESS`. Comparing
/// two runs check by check shows what one passes and the other does not,
/// even in a scenario neither passes whole.
pub fn passed_checks(dir: &Path) -> BTreeMap<String, BTreeMap<String, u32>> {
    let mut found = BTreeMap::<String, BTreeMap<String, u32>>::new();
    walk(dir, "", &mut |scenario, checks| {
        let passed = found.entry(scenario).or_default();
        for check in checks.iter().filter(|c| c["status"] == "SUCCESS") {
            let name = format!(
                "{} {}",
                check["id"].as_str().unwrap_or_default(),
                check["name"].as_str().unwrap_or_default()
            );
            *passed.entry(name).or_default() += 1;
        }
    });
    found
}

/// Calls `each` with the scenario name and the checks of every
/// `checks.json` under `dir`.
fn walk(dir: &Path, prefix: &str, each: &mut dyn FnMut(String, &[serde_json::Value])) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        let checks = path.join("checks.json");
        if checks.is_file() {
            let scenario = name[..name.len().saturating_sub(TIMESTAMP_SUFFIX)].to_owned();
            let text = std::fs::read(&checks).unwrap_or_default();
            let checks: serde_json::Value = serde_json::from_slice(&text).unwrap_or_default();
            each(scenario, checks.as_array().map_or(&[], Vec::as_slice));
        } else if path.is_dir() {
            walk(&path, &format!("{name}/"), each);
        }
    }
}

/// One line per scenario: `name: P passed, F failed, W warnings`.
pub fn report(tallies: &BTreeMap<String, Tally>) -> String {
    tallies
        .iter()
        .map(|(scenario, t)| {
            format!(
                "{scenario}: {} passed, {} failed, {} warnings\n",
                t.passed, t.failed, t.warnings
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suites_not_applicable_to_json_records_are_counted_apart() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir
            .path()
            .join("server-sse-multiple-streams-2026-11-30T11-29-52-228Z");
        std::fs::create_dir_all(&path).expect("mkdir");
        let checks = serde_json::json!([
            {"id": "server-accepts-multiple-post-streams", "status": "SUCCESS"},
            {"id": "server-sse-streams-functional", "status": "INFO",
             "details": {"numSseStreams": 0}},
            {"id": "server-sse-streams-functional", "status": "INFO",
             "details": {"numSseStreams": 2}},
            {"id": "incoming-sse-event", "status": "INFO"},
            {"id": "server-sse-content-type", "status": "INFO"},
        ]);
        std::fs::write(path.join("checks.json"), checks.to_string()).expect("write");
        let tally = results(dir.path())["server-sse-multiple-streams"];
        assert_eq!((tally.passed, tally.json_answers), (1, 2));
    }

    #[test]
    fn passed_checks_are_counted_by_id_and_name_per_scenario() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("server-caching-2026-12-02T19-05-44-103Z");
        std::fs::create_dir_all(&path).expect("mkdir");
        let checks = serde_json::json!([
            {"id": "a", "name": "One", "status": "SUCCESS"},
            {"id": "a", "name": "One", "status": "SUCCESS"},
            {"id": "a", "name": "Two", "status": "FAILURE"},
            {"id": "b", "name": "Three", "status": "INFO"},
        ]);
        std::fs::write(path.join("checks.json"), checks.to_string()).expect("write");
        let passed = passed_checks(dir.path());
        let caching = &passed["server-caching"];
        assert_eq!(caching.get("a One"), Some(&2));
        assert_eq!(caching.len(), 1, "{caching:?}");
    }

    #[test]
    fn checks_are_tallied_per_scenario_directory() {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |rel: &str, statuses: &[&str]| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(&path).expect("mkdir");
            let checks: Vec<serde_json::Value> = statuses
                .iter()
                .map(|s| serde_json::json!({"status": s}))
                .collect();
            std::fs::write(
                path.join("checks.json"),
                serde_json::to_vec(&checks).unwrap(),
            )
            .expect("write");
        };
        write("server-ping-2026-11-30T11-29-52-228Z", &["SUCCESS", "INFO"]);
        write(
            "auth/metadata-var1-2026-11-30T11-29-52-228Z",
            &["SUCCESS", "FAILURE", "WARNING"],
        );
        let found = results(dir.path());
        assert_eq!(
            found["server-ping"],
            Tally {
                passed: 1,
                failed: 0,
                warnings: 0,
                json_answers: 0
            }
        );
        let auth = found["auth/metadata-var1"];
        assert_eq!((auth.passed, auth.failed, auth.warnings), (1, 1, 1));
        assert!(!auth.client_passes() && !auth.server_passes());
    }
}
