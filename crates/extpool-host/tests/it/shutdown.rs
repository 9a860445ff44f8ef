//! One shutdown in the RFC's order leaves no server process behind: the
//! pool's servers, skill-embedded ones, and those a session registered.

use extpool_host::McpServerConfig;
use extpool_testkit::{StateDir, stdio_command};

use crate::support::{Project, pids_with, testkit_yaml, wait_until_gone};

fn marker(state: &StateDir) -> String {
    state.path().display().to_string()
}

#[tokio::test]
async fn shutdown_leaves_no_child_process_behind() {
    let project = Project::new();
    let pooled = StateDir::new();
    let embedded = StateDir::new();
    let per_session = StateDir::new();
    project.skill(
        "helper",
        &format!(
            "description: Brings a server\nmcp_servers:\n  kit:\n{}",
            testkit_yaml(&embedded, 4)
        ),
        "Body.",
    );
    project.config(&format!(
        "mcp_servers:\n  testkit:\n{}skills:\n  paths: [./skills]\n  default_roots: false\n",
        testkit_yaml(&pooled, 4)
    ));
    let host = project.start().await;
    let session = host.session("s").unwrap();
    let (program, args) = stdio_command(per_session.args()).into_parts();
    let config = McpServerConfig::stdio(program.display().to_string(), args);
    let mine = host.mcp_server("mine", config).unwrap();
    session.register(mine).await.unwrap();
    assert!(session.tools().iter().any(|t| t.name == "mcp__mine__echo"));
    for state in [&pooled, &embedded, &per_session] {
        assert_eq!(pids_with(&marker(state)).len(), 1, "{}", marker(state));
    }

    let report = host.shutdown().await;
    let order = report.order();
    // Session first, then the pool: the servers, then the skill manager
    // (registered first) and its embedded server with it.
    assert_eq!(order.first(), Some(&"mine"), "{order:?}");
    assert_eq!(order.last(), Some(&"skills"), "{order:?}");
    for state in [&pooled, &embedded, &per_session] {
        wait_until_gone(&marker(state)).await;
    }
    // Idempotent.
    assert!(host.shutdown().await.order().is_empty());
}
