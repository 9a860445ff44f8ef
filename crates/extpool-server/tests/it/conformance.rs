//! The official MCP conformance suite's server scenarios (`--suite all`,
//! Node 22 from the peers) against the testkit server's fixtures
//! (`--conformance`): once directly over streamable HTTP, once through the
//! gateway, with the testkit behind it over stdio and listed without its
//! `mcp__conf__` prefix. The gateway must pass every scenario the direct
//! run passes, and every check of it, unless the suite says the check does
//! not apply to a JSON answer; both tallies are printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use extpool_server::GatewayOptions;
use extpool_testkit::conformance::{self, Tally};
use extpool_testkit::{HttpServer, StateDir};

use crate::support::{Project, Served, conformance_testkit_yaml};

/// The server scenarios of the suite (0.1.16): `--suite all` runs them all.
const SCENARIOS: usize = 32;

/// Runs the server suite against `url` (off the runtime's threads: the
/// gateway under test serves on them), tallied by scenario.
async fn suite(url: &str, out: &Path) -> (BTreeMap<String, Tally>, String) {
    let (url, out) = (url.to_owned(), out.to_owned());
    tokio::task::spawn_blocking(move || {
        let log = conformance::run(&["server", "--url", &url, "--suite", "all"], &out);
        let tallies = conformance::results(&out)
            .into_iter()
            .map(|(name, t)| {
                // The suite names each result directory `server-<scenario>-…`.
                let scenario = name.strip_prefix("server-").unwrap_or(&name).to_owned();
                (scenario, t)
            })
            .collect();
        (tallies, log)
    })
    .await
    .unwrap()
}

/// Runs `suite` (given a URL and a results directory) against the
/// testkit's fixtures directly over streamable HTTP, then through the
/// gateway, with the testkit behind it over stdio and unprefixed: what
/// each run gave.
async fn direct_then_through_gateway<T, Fut>(suite: impl Fn(String, PathBuf) -> Fut) -> (T, T)
where
    Fut: std::future::Future<Output = T>,
{
    let out = tempfile::tempdir().unwrap();
    let direct_server = tokio::task::spawn_blocking(|| HttpServer::spawn(["--conformance"]))
        .await
        .unwrap();
    let direct = suite(direct_server.url().to_owned(), out.path().join("direct")).await;
    drop(direct_server);

    let state = StateDir::new();
    let project = Project::new();
    project.config(&conformance_testkit_yaml("conf", &state));
    let options = GatewayOptions {
        unprefixed: vec!["conf".into()],
        ..GatewayOptions::default()
    };
    let served = Served::start(project, options).await;
    let gateway = suite(served.url.clone(), out.path().join("gateway")).await;
    served.stop().await;
    (direct, gateway)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_passes_every_server_scenario_the_testkit_passes_directly() {
    let ((direct, direct_log), (gateway, gateway_log)) =
        direct_then_through_gateway(|url, out| async move { suite(&url, &out).await }).await;

    let verdict = |t: Option<&Tally>| match t {
        Some(t) if t.server_passes() => "pass",
        Some(_) => "FAIL",
        None => "did not run",
    };
    println!("scenario: direct | gateway");
    for (scenario, tally) in &direct {
        println!(
            "{scenario}: {} ({}/{}/{}) | {} ({})",
            verdict(Some(tally)),
            tally.passed,
            tally.failed,
            tally.warnings,
            verdict(gateway.get(scenario)),
            gateway.get(scenario).map_or_else(
                || "-".to_owned(),
                |g| format!("{}/{}/{}", g.passed, g.failed, g.warnings)
            ),
        );
    }
    let sum = |t: &BTreeMap<String, Tally>| {
        let passing = t.values().filter(|t| t.server_passes()).count();
        let checks: u32 = t.values().map(|t| t.passed).sum();
        let failed: u32 = t.values().map(|t| t.failed).sum();
        format!(
            "{passing}/{} scenarios, {checks} checks passed, {failed} failed",
            t.len()
        )
    };
    println!("direct: {}\ngateway: {}", sum(&direct), sum(&gateway));

    assert_eq!(
        direct.len(),
        SCENARIOS,
        "the direct run did not run every scenario\n{direct_log}"
    );
    // The fixtures are the suite's: the direct run passes every scenario,
    // so the comparison below covers all of them.
    for (scenario, tally) in &direct {
        assert!(
            tally.server_passes() && tally.passed > 0,
            "the testkit fails {scenario} directly\n{}\n{direct_log}",
            conformance::report(&direct)
        );
    }
    // Every check the direct run passes passes through the gateway, or
    // the suite says it does not apply: the gateway answers a result that
    // nothing precedes as JSON (the spec lets a server answer either
    // way), where the testkit answers a stream.
    for (scenario, tally) in &direct {
        if !tally.server_passes() {
            continue;
        }
        let through = gateway.get(scenario);
        assert!(
            through.is_some_and(|g| g.server_passes() && g.passed + g.json_answers >= tally.passed),
            "{scenario} passes directly but not through the gateway: {through:?}\n{}\n{gateway_log}",
            conformance::report(&gateway)
        );
    }
}

/// The draft suite's (0.2.0-alpha) server scenarios of the 2026-07-28
/// era (`--suite all --spec-version 2026-07-28`).
const SCENARIOS_2026: usize = 40;

/// Checks of the 2026-07-28 era each run must pass at least (the suite
/// ran and the fixtures answered): far fewer than either passes.
const LEAST_PASSED_2026: u32 = 100;

/// Runs the draft suite's 2026-07-28 server scenarios against `url`:
/// what each scenario passed, check by check, and the tallies.
async fn suite_2026(
    url: &str,
    out: &Path,
) -> (
    BTreeMap<String, BTreeMap<String, u32>>,
    BTreeMap<String, Tally>,
    String,
) {
    let (url, out) = (url.to_owned(), out.to_owned());
    tokio::task::spawn_blocking(move || {
        let args = [
            "server",
            "--url",
            &url,
            "--suite",
            "all",
            "--spec-version",
            "2026-07-28",
        ];
        let log = conformance::run_draft(&args, &out);
        (
            conformance::passed_checks(&out),
            conformance::results(&out),
            log,
        )
    })
    .await
    .unwrap()
}

/// The 2026-07-28 era (stateless requests, `server/discover`, SEP-2243
/// headers, `resultType`, removed methods): the draft suite against the
/// testkit directly and through the gateway. The testkit does not pass
/// every scenario (it has no input-required tools), so the comparison is
/// check by check: every check the direct run passes, the gateway passes
/// as often, unless the suite says it does not apply to a JSON answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_passes_every_2026_check_the_testkit_passes_directly() {
    let ((direct, direct_tally, direct_log), (gateway, gateway_tally, gateway_log)) =
        direct_then_through_gateway(|url, out| async move { suite_2026(&url, &out).await }).await;

    let total = |t: &BTreeMap<String, Tally>| t.values().map(|t| t.passed).sum::<u32>();
    println!(
        "2026-07-28 checks passed: direct {} | gateway {}",
        total(&direct_tally),
        total(&gateway_tally)
    );
    print!("direct:\n{}", conformance::report(&direct_tally));
    assert_eq!(
        direct.len(),
        SCENARIOS_2026,
        "the direct run did not run every scenario\n{direct_log}"
    );
    assert!(
        total(&direct_tally) >= LEAST_PASSED_2026,
        "the direct run passed too few checks\n{direct_log}"
    );
    let mut missing = Vec::new();
    for (scenario, passed) in &direct {
        let through = gateway.get(scenario);
        let lost: u32 = passed
            .iter()
            .map(|(check, n)| {
                let got = through.and_then(|g| g.get(check)).copied().unwrap_or(0);
                n.saturating_sub(got)
            })
            .sum();
        let excused = gateway_tally.get(scenario).map_or(0, |t| t.json_answers);
        if lost > excused {
            let checks: Vec<&String> = passed
                .iter()
                .filter(|(check, n)| {
                    through.and_then(|g| g.get(*check)).copied().unwrap_or(0) < **n
                })
                .map(|(check, _)| check)
                .collect();
            missing.push(format!("{scenario}: {checks:?}"));
        }
    }
    assert!(
        missing.is_empty(),
        "checks the testkit passes directly but the gateway does not:\n{}\n{}\n{gateway_log}",
        missing.join("\n"),
        conformance::report(&gateway_tally)
    );
}
