//! The official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! against `extpool-conformance-client`, which is extpool's MCP client and
//! OAuth: every `core` and every `auth` scenario must pass (no FAILURE, no
//! WARNING check).
//!
//! The 14 `auth` scenarios run as one suite (in parallel, as the runner
//! does); the other four `core` scenarios run one at a time, because
//! `sse-retry` measures the reconnect delay and a machine loaded by 18
//! parallel scenarios can stretch it past the suite's tolerance.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use extpool_testkit::peers;

const AUTH: [&str; 14] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
];

const CORE_WITHOUT_AUTH: [&str; 4] = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
];

fn suite(client: &str, selection: &[&str], out: &Path) -> String {
    let output = Command::new(peers::node22())
        .arg(peers::conformance_script())
        .args(["client", "--command", client])
        .args(selection)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run the conformance suite");
    // Exit 1 on any failure; the verdict comes from checks.json below.
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// `(passed, failed, warnings)` per scenario, from every `checks.json` under `dir`.
fn results(dir: &Path, prefix: &str, into: &mut BTreeMap<String, (u32, u32, u32)>) {
    for entry in std::fs::read_dir(dir).expect("results dir").flatten() {
        let path = entry.path();
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if path.join("checks.json").is_file() {
            // `<scenario>-<ISO timestamp>`: the timestamp is 25 characters with its dash.
            let scenario = name[..name.len().saturating_sub(25)].to_owned();
            let checks: serde_json::Value =
                serde_json::from_slice(&std::fs::read(path.join("checks.json")).unwrap()).unwrap();
            let counts = into.entry(scenario).or_default();
            for check in checks.as_array().unwrap() {
                match check["status"].as_str() {
                    Some("SUCCESS") => counts.0 += 1,
                    Some("FAILURE") => counts.1 += 1,
                    Some("WARNING") => counts.2 += 1,
                    _ => {}
                }
            }
        } else if path.is_dir() {
            results(&path, &format!("{name}/"), into);
        }
    }
}

#[test]
fn the_official_suite_passes_every_core_and_auth_scenario() {
    let client = env!("CARGO_BIN_EXE_extpool-conformance-client");
    assert!(
        !client.contains(char::is_whitespace),
        "the suite splits --command on spaces; the client path has one: {client}"
    );
    let out = tempfile::tempdir().unwrap();
    let mut log = suite(client, &["--suite", "auth"], &out.path().join("auth-suite"));
    for scenario in CORE_WITHOUT_AUTH {
        let dir = out.path().join(scenario);
        log += &suite(client, &["--scenario", scenario], &dir);
    }
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(out.path()).unwrap().flatten() {
        results(&entry.path(), "", &mut found);
    }
    let mut report = String::new();
    for (scenario, (passed, failed, warnings)) in &found {
        report += &format!("{scenario}: {passed} passed, {failed} failed, {warnings} warnings\n");
    }
    println!("{report}");
    for scenario in AUTH.iter().chain(&CORE_WITHOUT_AUTH) {
        let Some(&(passed, failed, warnings)) = found.get(*scenario) else {
            panic!("scenario {scenario} did not run\n{report}\n{log}");
        };
        assert!(
            passed > 0 && failed == 0 && warnings == 0,
            "scenario {scenario} did not pass\n{report}\n{log}"
        );
    }
    let total: u32 = found.values().map(|c| c.0).sum();
    println!("{} scenarios, {total} checks passed", found.len());
}
