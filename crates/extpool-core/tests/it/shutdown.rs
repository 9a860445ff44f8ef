//! Shutdown order turn → agent → session → pool, reverse registration order
//! within a slot, a hung capability cancelled after its timeout.

use std::sync::Arc;
use std::time::Duration;

use extpool_core::{
    ExtensionRegistry, RegistryConfig, Scope, ScopeLevel, registry::ShutdownOutcome,
};
use parking_lot::Mutex;

use crate::support::{OnShutdown, TestCap, cap};

#[tokio::test]
async fn innermost_first_newest_first() {
    let reg = ExtensionRegistry::default();
    let log = Arc::new(Mutex::new(Vec::new()));
    let s = Scope::pool("p").session("A").agent("coder").turn("t1");
    for (id, level) in [
        ("pool-1", ScopeLevel::Pool),
        ("session-1", ScopeLevel::Session),
        ("pool-2", ScopeLevel::Pool),
        ("agent-1", ScopeLevel::Agent),
        ("turn-1", ScopeLevel::Turn),
        ("session-2", ScopeLevel::Session),
        ("turn-2", ScopeLevel::Turn),
    ] {
        reg.register(cap(TestCap::new(id).with_log(&log).arc()), level, &s, None)
            .unwrap();
    }
    let report = reg.shutdown().await;
    let expected = [
        "turn-2",
        "turn-1",
        "agent-1",
        "session-2",
        "session-1",
        "pool-2",
        "pool-1",
    ];
    assert_eq!(report.order(), expected);
    assert_eq!(*log.lock(), expected);
    assert!(
        report
            .entries
            .iter()
            .all(|e| e.outcome == ShutdownOutcome::Clean)
    );
    assert!(reg.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_hung_capability_is_cancelled_and_the_rest_still_stop() {
    let reg = ExtensionRegistry::new(RegistryConfig {
        shutdown_timeout: Duration::from_secs(5),
        ..RegistryConfig::default()
    });
    let log = Arc::new(Mutex::new(Vec::new()));
    let s = Scope::pool("p").session("A");
    reg.register(
        cap(TestCap::new("pool").with_log(&log).arc()),
        ScopeLevel::Pool,
        &s,
        None,
    )
    .unwrap();
    reg.register(
        cap(TestCap::new("hung")
            .with_log(&log)
            .shutting_down(OnShutdown::Hang)
            .arc()),
        ScopeLevel::Session,
        &s,
        None,
    )
    .unwrap();
    reg.register(
        cap(TestCap::new("failing")
            .with_log(&log)
            .shutting_down(OnShutdown::Fail)
            .arc()),
        ScopeLevel::Session,
        &s,
        None,
    )
    .unwrap();
    let started = tokio::time::Instant::now();
    let report = reg.shutdown().await;
    let outcomes: Vec<_> = report
        .entries
        .iter()
        .map(|e| (e.id.as_str(), e.outcome.clone()))
        .collect();
    assert_eq!(outcomes[0].0, "failing");
    assert!(matches!(outcomes[0].1, ShutdownOutcome::Failed(_)));
    assert_eq!(outcomes[1], ("hung", ShutdownOutcome::TimedOut));
    assert_eq!(outcomes[2], ("pool", ShutdownOutcome::Clean));
    // The hung capability's future was dropped: it never logged.
    assert_eq!(*log.lock(), ["failing", "pool"]);
    // Paused clock: exactly one timeout elapsed, not the hung capability's hour.
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

#[tokio::test]
async fn shutting_down_a_session_leaves_the_pool_and_other_sessions() {
    let reg = ExtensionRegistry::default();
    let a = Scope::pool("p").session("A").agent("coder");
    let b = Scope::pool("p").session("B");
    reg.register(cap(TestCap::new("pool").arc()), ScopeLevel::Pool, &a, None)
        .unwrap();
    reg.register(
        cap(TestCap::new("a-session").arc()),
        ScopeLevel::Session,
        &a,
        None,
    )
    .unwrap();
    reg.register(
        cap(TestCap::new("a-agent").arc()),
        ScopeLevel::Agent,
        &a,
        None,
    )
    .unwrap();
    reg.register(
        cap(TestCap::new("b-session").arc()),
        ScopeLevel::Session,
        &b,
        None,
    )
    .unwrap();
    let report = reg.shutdown_session("p", "A").await;
    assert_eq!(report.order(), ["a-agent", "a-session"]);
    assert_eq!(
        reg.get_visible_capabilities(&b).ids(),
        ["pool", "b-session"]
    );
    assert_eq!(reg.get_visible_capabilities(&a).ids(), ["pool"]);
}

#[tokio::test]
async fn unregister_and_shutdown_stops_one_capability() {
    let reg = ExtensionRegistry::default();
    let log = Arc::new(Mutex::new(Vec::new()));
    let s = Scope::pool("p").session("A").agent("sub");
    reg.register(
        cap(TestCap::new("pool").with_log(&log).arc()),
        ScopeLevel::Pool,
        &s,
        None,
    )
    .unwrap();
    reg.register(
        cap(TestCap::new("sub-tools").with_log(&log).arc()),
        ScopeLevel::Agent,
        &s,
        None,
    )
    .unwrap();
    let entry = reg
        .unregister_and_shutdown("sub-tools", ScopeLevel::Agent, &s)
        .await
        .unwrap();
    assert_eq!(entry.outcome, ShutdownOutcome::Clean);
    assert_eq!(*log.lock(), ["sub-tools"]);
    assert_eq!(reg.get_visible_capabilities(&s).ids(), ["pool"]);
}

#[tokio::test]
async fn shutdown_within_an_agent_leaves_its_session_and_siblings() {
    let reg = ExtensionRegistry::default();
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = Scope::pool("p").session("A");
    let coder = a.clone().agent("coder");
    let reviewer = a.clone().agent("reviewer");
    let regs = [
        ("pool", ScopeLevel::Pool, a.clone()),
        ("session", ScopeLevel::Session, a.clone()),
        ("coder", ScopeLevel::Agent, coder.clone()),
        ("coder-turn", ScopeLevel::Turn, coder.clone().turn("t1")),
        ("reviewer", ScopeLevel::Agent, reviewer.clone()),
        (
            "other-session",
            ScopeLevel::Agent,
            Scope::pool("p").session("B").agent("coder"),
        ),
    ];
    for (id, level, scope) in regs {
        reg.register(
            cap(TestCap::new(id).with_log(&log).arc()),
            level,
            &scope,
            None,
        )
        .unwrap();
    }
    let report = reg.shutdown_within(&coder).await;
    assert_eq!(report.order(), ["coder-turn", "coder"]);
    let left = reg.get_visible_capabilities(&reviewer).ids();
    assert_eq!(left, ["pool", "session", "reviewer"]);
    assert_eq!(reg.len(), 4);
    // A session's: its agents' and turns' slots too, never the pool's.
    let report = reg.shutdown_within(&a).await;
    assert_eq!(report.order(), ["reviewer", "session"]);
    assert_eq!(reg.len(), 2);
}
