//! Embedding extpool in a Rust program: load the example configuration
//! (the repository's `extpool.yaml`; run this from the repository root),
//! start it, open a session, list the model-facing tools, call one, read a
//! skill and an MCP resource, and shut down.
//!
//!     cargo run -p extpool-host --example embed
#![allow(clippy::print_stdout)]

use extpool_host::{Host, HostOptions, ToolCall};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(HostOptions::files(["extpool.yaml"])).await
}

/// The example itself (the tests run it too).
pub async fn run(options: HostOptions) -> Result<(), Box<dyn std::error::Error>> {
    let host = Host::start(options).await?;
    let session = host.session("example")?;
    for tool in session.tools() {
        println!("{:<36} {}", tool.name, tool.description);
    }
    let args = serde_json::json!({"a": 2, "b": 3});
    let sum = session.call(ToolCall::new(
        "mcp__testkit__add",
        args.as_object().cloned().unwrap_or_default(),
    ));
    println!("2 + 3 = {}", sum.await.outcome?.joined_text());
    let skill = session.read("skill://release-notes/SKILL.md").await?;
    println!("{}", skill.as_text().unwrap_or_default());
    let resource = session.read("testkit://info").await?;
    println!("{}", resource.as_text().unwrap_or_default());
    host.shutdown().await;
    Ok(())
}
