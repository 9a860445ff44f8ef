//! Degraded servers through the host's views: a server that stays down
//! after the client's reconnect is marked degraded (with an event), and
//! recovers once a catalog lists it again.

use std::time::Duration;

use extpool_host::{HostError, HostEvent, ToolCall};
use extpool_testkit::StateDir;
use futures::StreamExt;
use serde_json::json;

use extpool_testkit::procs::{ServerLink, kill_one};

use crate::support::{Project, args, linked_yaml};

#[tokio::test]
async fn a_server_down_after_reconnect_is_degraded_until_listed_again() {
    let project = Project::new();
    let (state, other) = (StateDir::new(), StateDir::new());
    let link = ServerLink::new(project.path(), "kit-server");
    project.config(&format!(
        "mcp_servers:\n  kit:\n{}  other:\n{}skills:\n  default_roots: false\n",
        linked_yaml(&link, &state, 4),
        crate::support::testkit_yaml(&other, 4),
    ));
    let host = project.start().await;
    let session = host.session("s").unwrap();
    let mut changes = Box::pin(session.changes());
    let echo = |text: &str| args(json!({"message": text}));
    assert_eq!(
        session
            .call(ToolCall::new("mcp__kit__echo", echo("up")))
            .await
            .outcome
            .unwrap()
            .joined_text(),
        "up"
    );
    assert!(session.degraded().is_empty());

    link.break_it();
    kill_one(&state.path().display().to_string()).await;
    let err = session
        .call(ToolCall::new("mcp__kit__echo", echo("x")))
        .await
        .outcome
        .unwrap_err();
    assert!(matches!(err, HostError::Call(_)), "{err}");
    assert!(
        err.to_string()
            .contains("MCP server \"kit\" unavailable after reconnect"),
        "{err}"
    );
    let degraded = session.degraded();
    assert_eq!(degraded.len(), 1, "{degraded:?}");
    assert_eq!(degraded[0].capability, "kit");
    let event = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(HostEvent::Degraded { capability, reason }) = changes.next().await {
                return (capability, reason);
            }
        }
    })
    .await
    .expect("a degraded event");
    assert_eq!(event.0, "kit");
    assert!(
        event.1.contains("unavailable after reconnect"),
        "{}",
        event.1
    );
    // The rest keeps working.
    assert_eq!(
        session
            .call(ToolCall::new("mcp__other__echo", echo("fine")))
            .await
            .outcome
            .unwrap()
            .joined_text(),
        "fine"
    );
    // A listing that still fails keeps it degraded.
    host.catalog().reconcile_now().await;
    assert_eq!(session.degraded().len(), 1);

    link.restore();
    host.catalog().reconcile_now().await;
    assert!(session.degraded().is_empty(), "{:?}", session.degraded());
    assert_eq!(
        session
            .call(ToolCall::new("mcp__kit__echo", echo("back")))
            .await
            .outcome
            .unwrap()
            .joined_text(),
        "back"
    );
    assert_eq!(state.starts(), 2);
    host.shutdown().await;
}
