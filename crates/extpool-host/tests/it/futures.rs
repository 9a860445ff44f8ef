//! The size of the future a call is: what every tool call on the gateway,
//! the agent library and the command line holds while it runs (issue: the
//! call path as one layer, its futures small). Measured on the public API,
//! then awaited, so the size is that of a call that works.

use extpool_host::{Pin, ToolCall};
use extpool_testkit::StateDir;
use serde_json::json;

use crate::support::{Project, args, testkit_yaml};

/// The bound a call's future is held to: a little over twice what it
/// measured when the bound was set (1,760 bytes, a debug build).
const MAX_CALL_FUTURE_BYTES: usize = 4096;

#[tokio::test]
async fn a_calls_future_is_small_and_the_call_it_makes_works() {
    let project = Project::new();
    let state = StateDir::new();
    project.config(&format!(
        "mcp_servers:\n  kit:\n{}skills:\n  default_roots: false\n",
        testkit_yaml(&state, 4)
    ));
    let host = project.start().await;
    let session = host.session("s").unwrap();
    let table = session.table(Pin::now());
    let call = session
        .call(ToolCall::new("mcp__kit__echo", args(json!({"message": "sized"}))).in_table(&table));
    let bytes = std::mem::size_of_val(&call);
    eprintln!("View::call's future: {bytes} bytes");
    assert!(
        bytes <= MAX_CALL_FUTURE_BYTES,
        "View::call's future is {bytes} bytes, over {MAX_CALL_FUTURE_BYTES}"
    );
    let result = call.await.outcome.unwrap();
    assert_eq!(result.joined_text(), "sized");
    host.shutdown().await;
}
