//! The Agent Plugins 1.0 conformance corpus: every case read through
//! `validate`, its outcome, rejection reason, name, skills, MCP outcome,
//! servers and diagnostic kinds compared with `expected.json`.

use extpool_plugins::{Outcome, validate};
use serde_json::Value;

use crate::support::fixture;

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_corpus_case_gets_the_expected_verdict() {
    let dir = fixture("agent-plugins-corpus/cases");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("the corpus is vendored")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 17, "the corpus has 17 cases");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let expected: Value =
            serde_json::from_slice(&std::fs::read(case.join("expected.json")).unwrap()).unwrap();
        let report = validate(&case.join("plugin"));
        let got = serde_json::to_value(&report).unwrap();
        let mut problems = Vec::new();
        match expected["outcome"].as_str().unwrap() {
            "rejected" => {
                if report.outcome != Outcome::Rejected {
                    problems.push(format!("expected rejected, got {got}"));
                } else if got["reason"] != expected["reason"] {
                    problems.push(format!(
                        "reason: expected {}, got {}",
                        expected["reason"], got["reason"]
                    ));
                }
                if report.diagnostics.is_empty() {
                    problems.push("a rejection says why".into());
                }
            }
            "loaded" => {
                if report.outcome != Outcome::Loaded {
                    problems.push(format!("expected loaded, got {got}"));
                } else {
                    for key in ["name", "mcp"] {
                        if got[key] != expected[key] {
                            problems.push(format!(
                                "{key}: expected {}, got {}",
                                expected[key], got[key]
                            ));
                        }
                    }
                    if strings(&got["skills"]) != strings(&expected["skills"]) {
                        problems.push(format!(
                            "skills: expected {}, got {}",
                            expected["skills"], got["skills"]
                        ));
                    }
                    if expected.get("servers").is_some()
                        && strings(&got["servers"]) != strings(&expected["servers"])
                    {
                        problems.push(format!(
                            "servers: expected {}, got {}",
                            expected["servers"], got["servers"]
                        ));
                    }
                    let mut want = strings(&expected["diagnostics"]);
                    let mut have: Vec<String> = got["diagnostics"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d["kind"].as_str().unwrap().to_owned())
                        .collect();
                    want.sort();
                    have.sort();
                    if want != have {
                        problems.push(format!(
                            "diagnostics: expected {want:?}, got {have:?}: {}",
                            got["diagnostics"]
                        ));
                    }
                }
            }
            other => panic!("unknown outcome {other}"),
        }
        if !problems.is_empty() {
            failures.push(format!("{name}: {}", problems.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_skipped_server_of_the_bad_entries_case_says_which_and_where() {
    let report = validate(&fixture(
        "agent-plugins-corpus/cases/mcp-bad-entries/plugin",
    ));
    assert_eq!(report.servers, ["good"]);
    assert_eq!(report.diagnostics.len(), 13);
    for d in &report.diagnostics {
        assert!(d.line.is_some(), "located: {d}");
        assert!(d.to_string().contains("mcp.json:"), "{d}");
    }
    let text: Vec<String> = report.diagnostics.iter().map(ToString::to_string).collect();
    let joined = text.join("\n");
    for needle in [
        "\"unknown-type\" skipped: unknown transport type \"websocket\"",
        "\"reserved-env\" skipped: `env` must not set the reserved variable PLUGIN_ROOT",
        "\"http-not-loopback\" skipped: invalid endpoint URL: plain http",
        "\"duplicate-headers\" skipped: header \"x-tenant\" appears more than once",
        "\"escaping-command\" skipped",
        "\"mixed-variant-fields\" skipped: field `command` does not belong",
    ] {
        assert!(joined.contains(needle), "{needle} in\n{joined}");
    }
}
