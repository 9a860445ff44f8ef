//! Floods from a server (the testkit's `notify`): log messages and progress
//! cut to their rate with one warning, a slow caller's progress queue
//! bounded by its channel, `list_changed` bursts merged (the last always
//! delivered), server requests beyond the limit refused at once.
//!
//! Bounds are checked against counts, and rates against the time the flood
//! really took (never a fixed duration).

use std::sync::Arc;
use std::time::{Duration, Instant};

use extpool_core::ChangeKind;
use extpool_mcp::{ClientOptions, Elicitation, McpClient, NotificationLimits};
use extpool_testkit::StateDir;
use serde_json::json;

use crate::support::{
    Held, PATIENCE, args, capture_logs, counted, name, on_each, options, stdio_cfg, text,
};

async fn client_with(options: ClientOptions) -> McpClient {
    McpClient::connect(name("flood"), stdio_cfg::<&str>(&[]), Arc::new(options))
        .await
        .unwrap()
}

/// The most a bucket of `rate` a second lets through in `elapsed`.
fn most(rate: u32, elapsed: Duration) -> u64 {
    (f64::from(rate) * (elapsed.as_secs_f64() + 1.0)).ceil() as u64
}

#[tokio::test(flavor = "current_thread")]
async fn a_log_flood_is_cut_to_the_rate_with_one_warning() {
    let (logs, _guard) = capture_logs();
    let client = client_with(options()).await;
    let count = 10_000;
    let started = Instant::now();
    let result = client
        .call_tool("notify", args(json!({"kind": "log", "count": count})))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(text(&result), format!("sent {count}"));
    let stats = client.flood_stats();
    let rate = NotificationLimits::default().log_per_second;
    println!("log flood: {count} sent in {elapsed:?}, {stats:?}");
    // Every message sent before the result was judged before it.
    assert_eq!(stats.log_passed + stats.log_dropped, count);
    assert!(stats.log_passed <= most(rate, elapsed), "{stats:?}");
    assert!(stats.log_dropped > 0, "{stats:?}");
    let warning = format!("MCP server \"flood\" sends more than {rate} log messages a second");
    assert_eq!(logs.text().matches(&warning).count(), 1, "{}", logs.text());
    client.close().await;
}

#[tokio::test]
async fn a_progress_flood_is_sampled_to_the_rate() {
    let client = client_with(options()).await;
    let count = 10_000;
    let (tx, mut rx) = tokio::sync::mpsc::channel(count as usize);
    let started = Instant::now();
    let result = client
        .call_tool_with_progress(
            "notify",
            args(json!({"kind": "progress", "count": count})),
            None,
            tx,
        )
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(text(&result), format!("sent {count}"));
    let stats = client.flood_stats();
    let rate = NotificationLimits::default().progress_per_second;
    println!("progress flood: {count} sent in {elapsed:?}, {stats:?}");
    assert_eq!(stats.progress_passed + stats.progress_dropped, count);
    assert!(stats.progress_passed <= most(rate, elapsed), "{stats:?}");
    assert!(stats.progress_dropped > 0, "{stats:?}");
    let mut received = 0;
    while rx.try_recv().is_ok() {
        received += 1;
    }
    assert!(received <= stats.progress_passed, "{received} > {stats:?}");
    client.close().await;
}

#[tokio::test]
async fn a_caller_that_does_not_read_progress_queues_at_most_its_channel() {
    // A gate wide open: only the caller's channel bounds what queues.
    let mut options = options();
    options.notifications.progress_per_second = u32::MAX;
    let client = client_with(options).await;
    let capacity = 8;
    let (tx, mut rx) = tokio::sync::mpsc::channel(capacity);
    let count = 5_000;
    let result = client
        .call_tool_with_progress(
            "notify",
            args(json!({"kind": "progress", "count": count})),
            None,
            tx,
        )
        .await
        .unwrap();
    assert_eq!(text(&result), format!("sent {count}"));
    assert_eq!(client.flood_stats().progress_passed, count);
    let mut queued = Vec::new();
    while let Ok(p) = rx.try_recv() {
        queued.push(p.progress);
    }
    println!(
        "progress queued for a caller that never read: {}",
        queued.len()
    );
    assert!(!queued.is_empty() && queued.len() <= capacity, "{queued:?}");
    client.close().await;
}

#[tokio::test]
async fn a_list_changed_burst_is_merged_and_its_last_delivered() {
    let client = client_with(options()).await;
    let before = client.signals().epoch(ChangeKind::ToolsChanged);
    // Each list_changed let through is a change: the stats are looked at
    // again at each (they count a notification before it passes).
    let mut changes = client.signals().subscribe();
    let count = 5_000;
    let started = Instant::now();
    let result = client
        .call_tool("notify", args(json!({"kind": "tools", "count": count})))
        .await
        .unwrap();
    assert_eq!(text(&result), format!("sent {count}"));
    // The last of the burst is held for the interval, then delivered.
    on_each("every list_changed passed or merged", &mut changes, || {
        let s = client.flood_stats();
        s.list_changed_passed + s.list_changed_merged == count
    })
    .await;
    let elapsed = started.elapsed();
    let stats = client.flood_stats();
    println!("list_changed burst: {count} sent in {elapsed:?}, {stats:?}");
    let interval = NotificationLimits::default().list_changed_ms as u128;
    assert!(
        u128::from(stats.list_changed_passed) <= elapsed.as_millis() / interval + 2,
        "{stats:?} in {elapsed:?}"
    );
    on_each(
        "the passed notifications reached the change counter",
        &mut changes,
        || client.signals().epoch(ChangeKind::ToolsChanged) - before == stats.list_changed_passed,
    )
    .await;
    client.close().await;
}

#[tokio::test]
async fn server_requests_beyond_the_limit_are_refused_at_once() {
    let held = Arc::new(Held::default());
    let mut options = options();
    options.elicitation = Some(Elicitation(held.clone()));
    let limit = options.notifications.requests_in_flight as u64;
    let state = StateDir::new();
    let client = McpClient::connect(name("flood"), stdio_cfg(&state.args()), Arc::new(options))
        .await
        .unwrap();
    let count = 50;
    let call = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .call_tool("notify", args(json!({"kind": "elicit", "count": count})))
                .await
        })
    };
    // The server counts each refusal it gets; the handler each it holds.
    counted(&state, "elicit_failed", count - limit).await;
    tokio::time::timeout(
        PATIENCE,
        held.waiting.subscribe().wait_for(|n| *n as u64 == limit),
    )
    .await
    .expect("the rest never reached the handler")
    .unwrap();
    assert_eq!(client.flood_stats().requests_refused, count - limit);
    held.release.notify_waiters();
    let result = call.await.unwrap().unwrap();
    assert_eq!(
        text(&result),
        format!(
            "accepted {limit}, declined 0, cancelled 0, failed {}",
            count - limit
        )
    );
    client.close().await;
}
