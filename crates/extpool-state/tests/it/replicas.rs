//! The part of the suite about replicas sharing one store: heartbeats and
//! holds, resumable MCP sessions, events, the replica a revision belongs
//! to, and an older store migrated forward. Every function runs on both
//! backends (see `main.rs`).

use std::time::Duration;

use extpool_state::{
    NewSession, ReplicaId, SCHEMA_VERSION, SessionId, StateError, StateStore, StoreEvent,
};
use tokio::sync::broadcast::Receiver;

use crate::support::Fixture;

fn sid(s: &str) -> SessionId {
    SessionId::new(s).expect("session id")
}

fn rid(s: &str) -> ReplicaId {
    ReplicaId::new(s).expect("replica id")
}

/// The next event, failing after a minute.
pub async fn next_event(events: &mut Receiver<StoreEvent>) -> StoreEvent {
    tokio::time::timeout(Duration::from_secs(60), events.recv())
        .await
        .expect("an event within a minute")
        .expect("the event channel is open")
}

pub async fn replicas_hold_sessions_and_the_silent_ones_are_swept(f: &Fixture) {
    let s = f.open().await;
    let (live, dead) = (rid("live-1"), rid("dead-1"));
    assert!(!s.heartbeat(&live).await.expect("first beat"), "new");
    assert!(s.heartbeat(&live).await.expect("second beat"), "renewed");
    for id in ["a", "b"] {
        s.create(&NewSession::new(sid(id))).await.expect("create");
    }
    // A hold registers its replica too.
    s.hold(&sid("a"), &dead).await.expect("hold a on dead");
    s.hold(&sid("b"), &dead).await.expect("hold b on dead");
    s.hold(&sid("a"), &live).await.expect("hold a on live");
    s.hold(&sid("a"), &live)
        .await
        .expect("holding twice is one hold");
    assert_eq!(
        s.holders(&sid("a")).await.expect("holders"),
        [dead.clone(), live.clone()]
    );
    let e = s
        .hold(&sid("nobody"), &live)
        .await
        .expect_err("no such session");
    assert!(matches!(e, StateError::NotFound { .. }), "{e:?}");
    let listed = s.replicas().await.expect("replicas");
    let counts: Vec<(String, u64)> = listed
        .iter()
        .map(|r| (r.id.to_string(), r.sessions))
        .collect();
    assert_eq!(counts, [("dead-1".to_owned(), 2), ("live-1".to_owned(), 1)]);
    // The dead one stops beating: its last heartbeat is long ago.
    f.exec("UPDATE replicas SET heartbeat_ms = 0 WHERE id = 'dead-1'")
        .await;
    let gone = f
        .open()
        .await
        .sweep_replicas(Duration::from_secs(60))
        .await
        .expect("sweep");
    assert_eq!(gone, [(dead.clone(), vec![sid("a"), sid("b")])]);
    assert_eq!(
        s.holders(&sid("a")).await.expect("holders"),
        [rid("live-1")]
    );
    assert!(s.holders(&sid("b")).await.expect("holders").is_empty());
    assert!(
        s.sweep_replicas(Duration::from_secs(60))
            .await
            .expect("sweep again")
            .is_empty()
    );
    // It comes back: registered anew, told so.
    assert!(!s.heartbeat(&dead).await.expect("beat after sweep"));
    s.release(&sid("a"), &live).await.expect("release");
    assert!(s.holders(&sid("a")).await.expect("holders").is_empty());
    s.hold(&sid("b"), &live).await.expect("hold b");
    s.unregister_replica(&live).await.expect("unregister");
    assert!(s.holders(&sid("b")).await.expect("holders").is_empty());
    let ids: Vec<String> = s
        .replicas()
        .await
        .expect("replicas")
        .into_iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(ids, ["dead-1"]);
    // Deleting a session removes its holds.
    s.hold(&sid("b"), &dead).await.expect("hold");
    s.delete(&sid("b")).await.expect("delete");
    assert_eq!(
        f.scalar("SELECT COUNT(*) FROM session_holders").await,
        0,
        "no hold outlives its session"
    );
}

pub async fn an_mcp_session_resumes_through_another_handle_on_its_endpoint_only(f: &Fixture) {
    let a = f.open().await;
    let b = f.open().await;
    a.create(&NewSession::new(sid("s1"))).await.expect("create");
    let init = r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}"#;
    a.put_mcp_session("", "m-plain", init).await.expect("put");
    a.put_mcp_session("s1", "m-durable", init)
        .await
        .expect("put durable");
    assert_eq!(
        b.mcp_session("", "m-plain").await.expect("load").as_deref(),
        Some(init)
    );
    assert_eq!(
        b.mcp_session("s1", "m-durable")
            .await
            .expect("load")
            .as_deref(),
        Some(init)
    );
    for (endpoint, id) in [("s1", "m-plain"), ("", "m-durable"), ("s2", "m-durable")] {
        assert_eq!(
            b.mcp_session(endpoint, id).await.expect("load"),
            None,
            "{id} is not resumable on {endpoint:?}"
        );
    }
    assert_eq!(b.mcp_session("", "bad id").await.expect("load"), None);
    let e = a
        .put_mcp_session("", "m-big", &"x".repeat(64 * 1024 + 1))
        .await
        .expect_err("too large");
    assert!(e.to_string().contains("over the limit of 65536"), "{e}");
    // Ended by its client on one replica: gone for all.
    assert!(b.delete_mcp_session("", "m-plain").await.expect("delete"));
    assert!(!b.delete_mcp_session("", "m-plain").await.expect("again"));
    assert_eq!(a.mcp_session("", "m-plain").await.expect("load"), None);
    // Deleting the durable session ends its MCP sessions.
    a.delete(&sid("s1")).await.expect("delete session");
    assert_eq!(b.mcp_session("s1", "m-durable").await.expect("load"), None);
}

pub async fn mcp_sessions_nobody_holds_expire(f: &Fixture) {
    let s = f.open().await;
    for id in ["held", "dropped"] {
        s.put_mcp_session("", id, "{}").await.expect("put");
    }
    f.exec("UPDATE mcp_sessions SET seen_ms = 0").await;
    assert_eq!(
        s.touch_mcp_sessions(&["held".to_owned(), "unknown".to_owned()])
            .await
            .expect("touch"),
        1
    );
    assert_eq!(
        s.expire_mcp_sessions(Duration::from_secs(60))
            .await
            .expect("expire"),
        1
    );
    assert!(s.mcp_session("", "held").await.expect("load").is_some());
    assert!(s.mcp_session("", "dropped").await.expect("load").is_none());
    // Many ids at once (more than one statement).
    let many: Vec<String> = (0..450).map(|i| format!("m{i}")).collect();
    for id in &many {
        s.put_mcp_session("", id, "{}").await.expect("put");
    }
    assert_eq!(s.touch_mcp_sessions(&many).await.expect("touch"), 450);
}

pub async fn a_handle_hears_its_own_writes(f: &Fixture) {
    let s = f.open().await;
    let mut events = s.events();
    let id = sid("heard");
    s.create(&NewSession::new(id.clone()).granting(["mcp__a__x"], 1))
        .await
        .expect("create");
    s.refresh(&id, ["mcp__a__x"], 2).await.expect("confirm");
    s.refresh(&id, ["mcp__a__y"], 3).await.expect("grant");
    s.put_mcp_session("heard", "m1", "{}").await.expect("put");
    s.delete_mcp_session("heard", "m1").await.expect("end");
    s.delete(&id).await.expect("delete");
    let mut got = Vec::new();
    while got.len() < 3 {
        match next_event(&mut events).await {
            // PostgreSQL's listener says so when it (re)connects.
            StoreEvent::Resync => {}
            e => got.push(e),
        }
    }
    assert_eq!(
        got,
        [
            StoreEvent::Granted(id.clone()),
            StoreEvent::McpSessionClosed {
                endpoint: "heard".into(),
                id: "m1".into()
            },
            StoreEvent::Deleted(id),
        ],
        "a confirming refresh changes nothing, so says nothing"
    );
}

pub async fn a_pinned_revision_names_the_replica_that_saw_it(f: &Fixture) {
    let base = f.open().await;
    let a = base.for_replica(rid("replica-a"));
    let b = f.open().await.for_replica(rid("replica-b"));
    let id = sid("pinned");
    let created = a
        .create(&NewSession::new(id.clone()).granting(["mcp__a__x"], 7))
        .await
        .expect("create");
    assert_eq!(created.summary.revision, 7);
    assert_eq!(created.summary.revision_by.as_deref(), Some("replica-a"));
    let out = b.refresh(&id, ["mcp__a__y"], 3).await.expect("refresh");
    assert_eq!(
        (out.revision, out.replica.as_deref()),
        (3, Some("replica-b"))
    );
    let got = a.get(&id).await.expect("get");
    assert_eq!(got.summary.revision, 3);
    assert_eq!(got.summary.revision_by.as_deref(), Some("replica-b"));
    // A handle that names no replica records none.
    let out = base.refresh(&id, ["mcp__a__z"], 4).await.expect("refresh");
    assert_eq!(out.replica, None);
    assert_eq!(base.get(&id).await.expect("get").summary.revision_by, None);
}

pub async fn an_older_store_is_migrated_forward_keeping_its_sessions(f: &Fixture) {
    let s = f.open().await;
    let id = sid("old");
    s.create(&NewSession::new(id.clone()).granting(["mcp__a__x"], 1))
        .await
        .expect("create");
    s.close().await;
    // Back to schema version 1, as an extpool of that version left it.
    f.back_to_schema(1).await;
    let again = StateStore::open_url(&f.url()).await.expect("migrate");
    assert_eq!(
        again.schema_version().await.expect("version"),
        SCHEMA_VERSION
    );
    let got = again.get(&id).await.expect("kept");
    assert_eq!(got.authority.granted.len(), 1);
    assert_eq!(got.summary.revision_by, None);
    again.hold(&id, &rid("r")).await.expect("new tables work");
}
