//! SessionConnectionPool: one client per distinct (name, config), shared by
//! every capability and scope; single-flight creation; the bound and its
//! waiting queue; idle eviction; shutdown.

use std::sync::Arc;
use std::time::Duration;

use extpool_core::{Capability, McpResource};
use extpool_mcp::{McpServerCap, PoolConfig, SessionConnectionPool};
use extpool_testkit::StateDir;
use serde_json::json;

use crate::support::*;

fn bounded(max_clients: usize, wait: Duration) -> SessionConnectionPool {
    SessionConnectionPool::new(PoolConfig {
        max_clients,
        acquire_timeout: wait,
        client: options(),
    })
}

#[tokio::test]
async fn pool_and_session_caps_share_one_process() {
    let pool = pool();
    let state = StateDir::new();
    let cfg = stdio_cfg(&state.args());
    let pool_level = McpServerCap::new("kit", cfg.clone(), pool.clone()).unwrap();
    let session_level = McpServerCap::new("kit", cfg.clone(), pool.clone()).unwrap();
    pool_level.start().await.unwrap();
    session_level.start().await.unwrap();
    pool_level
        .call_tool("counter", json!({"key": "k"}).as_object().unwrap().clone())
        .await
        .unwrap();
    session_level
        .call_tool("counter", json!({"key": "k"}).as_object().unwrap().clone())
        .await
        .unwrap();
    assert_eq!(state.starts(), 1);
    assert_eq!(state.counter("k"), 2);
    assert_eq!(pool.live_clients(), 1);
    let snapshot = pool.snapshot();
    assert_eq!(snapshot.len(), 1);
    assert_eq!(snapshot[0].leases, 2);
    pool.shutdown().await;
}

#[tokio::test]
async fn configs_differing_only_in_catalog_fields_share_one_connection() {
    // The prefix, laziness and declared tools shape how tools are
    // published, not how the server is reached.
    let pool = pool();
    let state = StateDir::new();
    let plain = stdio_cfg(&state.args());
    let mut prefixed = plain.clone();
    prefixed.prefix = Some("kit2".into());
    let a = McpServerCap::new("kit", plain.clone(), pool.clone()).unwrap();
    let b = McpServerCap::new("kit", prefixed, pool.clone()).unwrap();
    a.start().await.unwrap();
    b.start().await.unwrap();
    assert_eq!(a.client().unwrap().pid(), b.client().unwrap().pid());
    assert_eq!(state.starts(), 1);
    assert_eq!(pool.live_clients(), 1);
    // A config that reaches the server differently is another connection.
    let mut other = plain.clone();
    other.env.insert("EXTRA".into(), "1".into());
    let c = McpServerCap::new("kit", other, pool.clone()).unwrap();
    c.start().await.unwrap();
    assert_eq!(pool.live_clients(), 2);
    assert_eq!(state.starts(), 2);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_requests_create_one_connection() {
    let pool = pool();
    let state = StateDir::new();
    let cfg = stdio_cfg(&state.args());
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let pool = pool.clone();
        let cfg = cfg.clone();
        tasks.push(tokio::spawn(async move {
            pool.get_client(&name("kit"), &cfg).await.map(|c| c.pid())
        }));
    }
    let mut pids = Vec::new();
    for t in tasks {
        pids.push(t.await.unwrap().unwrap());
    }
    pids.dedup();
    assert_eq!(pids.len(), 1, "one process for 32 concurrent requests");
    assert_eq!(state.starts(), 1);
    pool.shutdown().await;
}

#[tokio::test]
async fn distinct_configs_get_distinct_clients() {
    let pool = pool();
    let a = pool
        .get_client(&name("kit"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap();
    let b = pool
        .get_client(&name("kit"), &stdio_cfg(&["--extra-tools", "1"]))
        .await
        .unwrap();
    let c = pool
        .get_client(&name("other"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap();
    assert_ne!(a.pid(), b.pid());
    assert_ne!(a.pid(), c.pid());
    assert_eq!(pool.live_clients(), 3);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_pool_waits_then_fails_clearly() {
    // Long enough that the waiter below is still queued when the lease
    // comes back, however slow the machine.
    let pool = bounded(2, Duration::from_secs(3));
    let a = pool
        .get_client(&name("a"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap();
    let _b = pool
        .get_client(&name("b"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap();
    let err = pool
        .get_client(&name("c"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap_err();
    assert!(err.is_pool_exhausted(), "{err:?}");
    assert!(
        err.to_string().contains("pool is full (2 live clients)"),
        "{err}"
    );

    // A waiter gets the slot as soon as a lease is returned (the idle client is evicted).
    let (c_name, c_config) = (name("c"), stdio_cfg::<&str>(&[]));
    let waiter = pool.get_client(&c_name, &c_config);
    tokio::pin!(waiter);
    // Its first poll finds the pool full and queues it.
    assert!(futures::poll!(&mut waiter).is_pending());
    let a_pid = a.pid().unwrap();
    drop(a);
    let c_pid = waiter.await.map(|c| c.pid()).unwrap();
    assert!(c_pid.is_some());
    assert_eq!(pool.live_clients(), 2);
    gone(a_pid).await;
    pool.shutdown().await;
}

#[tokio::test]
async fn idle_clients_stay_connected_for_reuse() {
    let pool = pool();
    let state = StateDir::new();
    let cfg = stdio_cfg(&state.args());
    let first = pool.get_client(&name("kit"), &cfg).await.unwrap();
    let pid = first.pid();
    drop(first);
    let again = pool.get_client(&name("kit"), &cfg).await.unwrap();
    assert_eq!(again.pid(), pid);
    assert_eq!(state.starts(), 1);
    pool.shutdown().await;
}

#[tokio::test]
async fn failed_connect_frees_its_slot() {
    let pool = bounded(1, Duration::from_millis(200));
    let err = pool
        .get_client(&name("dead"), &stdio_cfg(&["--die-on-start"]))
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    assert_eq!(pool.live_clients(), 0);
    let ok = pool
        .get_client(&name("kit"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap();
    ok.ping().await.unwrap();
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_calls_multiplex_on_one_connection() {
    let pool = pool();
    let state = StateDir::new();
    let cap = Arc::new(McpServerCap::new("kit", stdio_cfg(&state.args()), pool.clone()).unwrap());
    cap.start().await.unwrap();
    let queued = Arc::new(tokio::sync::watch::Sender::new(0_usize));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let cap = cap.clone();
        let queued = queued.clone();
        tasks.push(tokio::spawn(async move {
            let call = cap.call_tool("sleep", json!({"ms": 120_000}).as_object().unwrap().clone());
            tokio::pin!(call);
            // The first poll hands the request to the connection.
            if let std::task::Poll::Ready(r) = futures::poll!(&mut call) {
                return r;
            }
            queued.send_modify(|n| *n += 1);
            call.await
        }));
    }
    tokio::time::timeout(PATIENCE, queued.subscribe().wait_for(|n| *n == 64))
        .await
        .expect("64 requests handed to the connection")
        .unwrap();
    // With 64 calls pending, another caller still gets through at once…
    let echo = cap
        .call_tool(
            "echo",
            json!({"message": "through"}).as_object().unwrap().clone(),
        )
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "through");
    // …and all 64 are at the server together: cancelling them cancels 64 server-side calls.
    for t in &tasks {
        t.abort();
    }
    counted(&state, "cancelled", 64).await;
    assert_eq!(pool.live_clients(), 1);
    assert_eq!(state.starts(), 1);
    pool.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_every_process() {
    let pool = pool();
    let a = pool
        .get_client(&name("a"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap();
    let b = pool
        .get_client(&name("b"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap();
    let pids = [a.pid().unwrap(), b.pid().unwrap()];
    pool.shutdown().await;
    for pid in pids {
        gone(pid).await;
    }
    assert!(a.ping().await.is_err());
    let err = pool
        .get_client(&name("c"), &stdio_cfg::<&str>(&[]))
        .await
        .unwrap_err();
    assert!(matches!(err, extpool_mcp::ClientError::Closed { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retired_connection_drains_its_calls_and_closes_once_nobody_holds_it() {
    let pool = pool();
    let state = StateDir::new();
    let cfg = stdio_cfg(&state.args());
    let retired = Arc::new(McpServerCap::new("kit", cfg.clone(), pool.clone()).unwrap());
    let sharer = McpServerCap::new("kit", cfg.clone(), pool.clone()).unwrap();
    retired.start().await.unwrap();
    sharer.start().await.unwrap();
    let client = retired.client().unwrap();
    let pid = client.pid().unwrap();
    assert_eq!(client.in_flight(), 0);
    client.drained().await;
    let call = {
        let cap = retired.clone();
        tokio::spawn(async move {
            cap.call_tool("sleep", json!({"ms": 300}).as_object().unwrap().clone())
                .await
        })
    };
    counted(&state, "sleep", 1).await;
    assert_eq!(client.in_flight(), 1);
    retired.shutdown().await.unwrap();
    // Another capability still holds the connection: it stays.
    assert!(!pool.close_if_idle(&name("kit"), &cfg).await);
    sharer.shutdown().await.unwrap();
    // The call in flight finishes on it before it closes.
    client.drained().await;
    assert_eq!(client.in_flight(), 0);
    let result = call.await.unwrap().unwrap();
    assert!(!result.is_error, "{result:?}");
    assert!(pool.close_if_idle(&name("kit"), &cfg).await);
    gone(pid).await;
    assert_eq!(pool.live_clients(), 0);
    assert!(!pool.close_if_idle(&name("kit"), &cfg).await);
}

#[tokio::test]
async fn an_owned_capability_closes_its_connection_unless_another_still_uses_it() {
    let pool = pool();
    let state = StateDir::new();
    let cfg = stdio_cfg(&state.args());
    let shared = McpServerCap::new("kit", cfg.clone(), pool.clone()).unwrap();
    let owned = McpServerCap::new("kit", cfg.clone(), pool.clone())
        .unwrap()
        .closing_when_released();
    shared.start().await.unwrap();
    owned.start().await.unwrap();
    assert_eq!(pool.snapshot()[0].leases, 2);
    // Another capability still leases the connection: it stays.
    owned.shutdown().await.unwrap();
    assert_eq!(pool.live_clients(), 1);
    shared
        .call_tool("counter", json!({"key": "k"}).as_object().unwrap().clone())
        .await
        .unwrap();
    // The last user owns it: shutting down closes it and its process.
    let owned = McpServerCap::new("kit", cfg, pool.clone())
        .unwrap()
        .closing_when_released();
    owned.start().await.unwrap();
    shared.shutdown().await.unwrap();
    assert_eq!(
        pool.live_clients(),
        1,
        "a plain capability leaves it pooled"
    );
    owned.shutdown().await.unwrap();
    assert_eq!(pool.live_clients(), 0);
    assert_eq!(state.starts(), 1);
    let pid = state.pids()[0];
    gone(pid).await;
    pool.shutdown().await;
}
