//! A stdio connection made on a multi-thread runtime runs on a thread of
//! its own (named by `driver_thread_name`): calls work, many at once; the thread
//! lives exactly as long as the connection (close, drop, crash and
//! reconnect, a hung start) and takes no process with it; the switch turns
//! it off, and a current-thread runtime does without it.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use extpool_core::{Capability, McpResource};
use extpool_mcp::{ClientError, SessionConnectionPool};
use extpool_mcp::{McpClient, McpServerCap, McpServerConfig, PoolConfig, driver_thread_name};
use extpool_testkit::StateDir;
use extpool_testkit::procs::{kill_one, thread_ended, threads_named, wait_until_gone};
use serde_json::json;

use crate::support::*;

/// Threads of this process that are server `server`'s driver. Each test
/// uses a server name of its own, so tests running beside it in this
/// process (with drivers of their own) do not count.
fn driver_threads(server: &str) -> usize {
    threads_named(&driver_thread_name(server)).len()
}

/// Waits until every driver thread of `server` has ended, on the kernel's
/// word for each; then none is left.
async fn driver_threads_end(server: &str) {
    for tid in threads_named(&driver_thread_name(server)) {
        thread_ended(tid).await;
    }
    assert_eq!(driver_threads(server), 0);
}

/// An npx-style launcher: the testkit server (`args` appended) next to a
/// grandchild that ignores stdin, whose pid it writes to `grandchild.pid`.
fn launcher(state: &StateDir) -> McpServerConfig {
    let script = state.path().join("launcher.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nsleep 300 &\necho $! > \"$KIT_STATE/grandchild.pid\"\nexec \"$KIT_BIN\" --transport stdio --state-dir \"$KIT_STATE\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cfg = McpServerConfig::stdio(script.to_string_lossy(), Vec::<String>::new());
    cfg.env
        .insert("KIT_STATE".into(), state.path().to_string_lossy().into());
    cfg.env.insert(
        "KIT_BIN".into(),
        extpool_testkit::server_binary().to_string_lossy().into(),
    );
    cfg
}

fn grandchild(state: &StateDir) -> u32 {
    std::fs::read_to_string(state.path().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_stdio_connection_runs_on_its_own_thread_until_shutdown() {
    assert_eq!(driver_threads("drv_pooled"), 0);
    let pool = pool();
    let state = StateDir::new();
    let cap = Arc::new(McpServerCap::new("drv_pooled", launcher(&state), pool.clone()).unwrap());
    cap.start().await.unwrap();
    assert_eq!(
        driver_threads("drv_pooled"),
        1,
        "one thread for the connection"
    );
    let calls = (0..64).map(|_| {
        let cap = cap.clone();
        tokio::spawn(async move {
            cap.call_tool("counter", json!({"key": "k"}).as_object().unwrap().clone())
                .await
        })
    });
    for call in futures::future::join_all(calls).await {
        call.unwrap().unwrap();
    }
    assert_eq!(state.counter("k"), 64);
    let leader = cap.client().unwrap().pid().unwrap();
    let grandchild = grandchild(&state);
    assert!(!process_gone(grandchild));
    pool.shutdown().await;
    gone(leader).await;
    gone(grandchild).await;
    driver_threads_end("drv_pooled").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_connection_and_a_dropped_one_leave_no_thread_behind() {
    let state = StateDir::new();
    let marker = state.path().to_string_lossy().into_owned();
    let client = connect("drv_crash", stdio_cfg(&state.args())).await;
    client.ping().await.unwrap();
    let first = threads_named(&driver_thread_name("drv_crash"));
    assert_eq!(first.len(), 1);
    kill_one(&marker).await;
    // The next call reconnects: a new connection, a new thread; the old one ends.
    client.ping().await.unwrap();
    assert_eq!(client.connection_count(), 2);
    thread_ended(first[0]).await;
    assert_eq!(driver_threads("drv_crash"), 1, "only the new connection's");
    let pid = client.pid().unwrap();
    drop(client);
    gone(pid).await;
    driver_threads_end("drv_crash").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_start_times_out_and_leaves_no_thread_or_process() {
    let state = StateDir::new();
    let marker = state.path().to_string_lossy().into_owned();
    let mut args = state.args();
    args.push("--hang-on-initialize".into());
    let mut cfg = stdio_cfg(&args);
    cfg.startup_timeout_ms = Some(500);
    let err = McpClient::connect(name("drv_hang"), cfg, Arc::new(options()))
        .await
        .unwrap_err();
    assert!(err.is_connect() && err.is_timeout(), "{err:?}");
    wait_until_gone(&marker).await;
    driver_threads_end("drv_hang").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_can_be_turned_off() {
    let pool = SessionConnectionPool::new(PoolConfig {
        client: extpool_mcp::ClientOptions {
            stdio_driver: false,
            ..options()
        },
        ..PoolConfig::default()
    });
    let config = stdio_cfg::<&str>(&[]);
    let client = pool.get_client(&name("drv_off"), &config).await.unwrap();
    let r = client
        .call_tool("echo", args(json!({"message": "here"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "here");
    assert_eq!(
        driver_threads("drv_off"),
        0,
        "no thread with the driver off"
    );
    drop(client);
    pool.shutdown().await;
    let closed = pool
        .get_client(&name("drv_off"), &config)
        .await
        .unwrap_err();
    assert!(matches!(closed, ClientError::Closed { .. }), "{closed:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_current_thread_runtime_does_without_a_driver() {
    let client = connect("drv_current", stdio_cfg::<&str>(&[])).await;
    client.ping().await.unwrap();
    assert_eq!(
        driver_threads("drv_current"),
        0,
        "the connection is on this thread already"
    );
    client.close().await;
}
