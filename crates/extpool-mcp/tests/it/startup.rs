//! Starting many servers at once: parallel, per-server status events,
//! partial failure.

use std::time::Duration;

use extpool_mcp::{McpServerConfig, ServerStatus, StatusEvent, start_servers};
use tokio::sync::mpsc;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_start_in_parallel_and_fail_alone() {
    let pool = pool();
    let mut hang = stdio_cfg(&["--hang-on-initialize"]);
    hang.startup_timeout_ms = Some(3_000);
    let mut disabled = stdio_cfg::<&str>(&[]);
    disabled.enabled = false;
    let mut lazy = stdio_cfg::<&str>(&[]);
    lazy.lazy = true;
    lazy.tools = vec![extpool_mcp::StaticTool {
        name: "echo".into(),
        description: String::new(),
        input_schema: None,
    }];
    let servers: Vec<(String, McpServerConfig)> = vec![
        ("hang".into(), hang),
        ("good".into(), stdio_cfg::<&str>(&[])),
        ("dies".into(), stdio_cfg(&["--die-on-start"])),
        ("bad-name".into(), stdio_cfg::<&str>(&[])),
        ("off".into(), disabled),
        ("lazy".into(), lazy),
        ("web".into(), http_cfg("http://127.0.0.1:9/mcp")),
    ];
    let (tx, mut rx) = mpsc::unbounded_channel::<StatusEvent>();
    let started = start_servers(&pool, servers, Some(tx)).await;

    let names: Vec<&str> = started.iter().map(|s| s.server.as_str()).collect();
    assert_eq!(
        names,
        ["hang", "good", "dies", "bad-name", "off", "lazy", "web"]
    );
    let status = |n: &str| &started.iter().find(|s| s.server == n).unwrap().status;
    assert!(
        matches!(status("good"), ServerStatus::Ready { tools, .. } if *tools > 10),
        "{:?}",
        status("good")
    );
    assert!(matches!(status("hang"), ServerStatus::Failed { .. }));
    assert!(matches!(status("dies"), ServerStatus::Failed { .. }));
    assert!(matches!(status("bad-name"), ServerStatus::Failed { .. }));
    assert!(matches!(status("off"), ServerStatus::Disabled));
    assert!(matches!(status("lazy"), ServerStatus::Lazy { tools: 1 }));
    assert!(matches!(status("web"), ServerStatus::Failed { .. }));
    assert!(started.iter().find(|s| s.server == "good").unwrap().is_ok());

    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    let position = |n: &str, final_only: bool| {
        events
            .iter()
            .position(|e| {
                e.server == n
                    && (!final_only
                        || !matches!(
                            e.status,
                            ServerStatus::Connecting | ServerStatus::Starting { .. }
                        ))
            })
            .unwrap()
    };
    // The slow server began first and was still connecting when the good one was ready.
    assert!(matches!(
        events[position("hang", false)].status,
        ServerStatus::Connecting
    ));
    assert!(position("good", true) < position("hang", true));
    if let ServerStatus::Failed { error, elapsed } = status("hang") {
        assert!(
            error.to_string().contains("no initialize response"),
            "{error}"
        );
        assert!(*elapsed >= Duration::from_secs(3));
    }
    // The good server is usable through its capability.
    let good = started.iter().find(|s| s.server == "good").unwrap();
    let cap = good.cap.as_ref().unwrap();
    assert!(cap.client().unwrap().ping().await.is_ok());
    pool.shutdown().await;
}
