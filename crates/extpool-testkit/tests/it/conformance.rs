//! The official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! against `extpool-conformance-client`, which is extpool's MCP client and
//! OAuth: every `core` and every `auth` scenario must pass (no FAILURE, no
//! WARNING check).
//!
//! The 14 `auth` scenarios run as one suite (in parallel, as the runner
//! does); the other four `core` scenarios run one at a time, because
//! `sse-retry` measures the reconnect delay and a machine loaded by 18
//! parallel scenarios can stretch it past the suite's tolerance.

use extpool_testkit::conformance;

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

#[test]
fn the_official_suite_passes_every_core_and_auth_scenario() {
    let client = env!("CARGO_BIN_EXE_extpool-conformance-client");
    assert!(
        !client.contains(char::is_whitespace),
        "the suite splits --command on spaces; the client path has one: {client}"
    );
    let out = tempfile::tempdir().unwrap();
    let suite = |selection: &[&str], dir: &std::path::Path| {
        let mut args = vec!["client", "--command", client];
        args.extend_from_slice(selection);
        conformance::run(&args, dir)
    };
    let mut log = suite(&["--suite", "auth"], &out.path().join("auth-suite"));
    for scenario in CORE_WITHOUT_AUTH {
        let dir = out.path().join(scenario);
        log += &suite(&["--scenario", scenario], &dir);
    }
    // One `-o` directory per run: their scenarios, merged.
    let mut found = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(out.path()).unwrap().flatten() {
        found.extend(conformance::results(&entry.path()));
    }
    let report = conformance::report(&found);
    println!("{report}");
    for scenario in AUTH.iter().chain(&CORE_WITHOUT_AUTH) {
        let Some(tally) = found.get(*scenario) else {
            panic!("scenario {scenario} did not run\n{report}\n{log}");
        };
        assert!(
            tally.client_passes(),
            "scenario {scenario} did not pass\n{report}\n{log}"
        );
    }
    let total: u32 = found.values().map(|c| c.passed).sum();
    println!("{} scenarios, {total} checks passed", found.len());
}
