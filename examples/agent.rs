//! Embedding extpool in an agent runtime: open an agent, compile it, run a
//! turn, spawn a subagent, interrupt the run, complete.
//!
//!     cargo run -p extpool-agent --example agent
//!
//! The book (docs/src/library.md) shows the body of `run` (the tests
//! check that it is this code, and run it).
#![allow(clippy::print_stdout)]

use extpool_agent::{AgentFactory, SubagentSpec};
use extpool_host::{Host, HostOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(HostOptions::files(["extpool.yaml"])).await
}

/// The example itself.
pub async fn run(options: HostOptions) -> Result<(), Box<dyn std::error::Error>> {
    // BOOK:start
    let host = Host::start(options).await?;
    let factory = AgentFactory::new(host.clone());
    let session = host.session("s1")?;
    let agent = factory.open_agent(&session, "main")?;

    let turn = agent.turn("t1", "Add 2 and 3").await?; // pins the catalog revision
    let compiled = turn.compiled(); // the RFC's AgentFactory.compile()
    println!("{}", compiled.system_prompt()); // skills, servers' instructions, deferred tools
    for tool in compiled.definitions() {
        println!("{}", tool.name); // what the model is given: provider-safe names, schemas
    }
    let context = turn.before_model_request().await?; // before each model request
    let args = serde_json::json!({"a": 2, "b": 3});
    let args = args.as_object().cloned().unwrap_or_default();
    let sum = turn.call("mcp__testkit__add", args).await?; // failures come back as tool errors
    println!(
        "2 + 3 = {} ({} injected)",
        sum.joined_text(),
        context.injected().len()
    );
    turn.end().await; // what the turn activated goes

    let coder = agent.spawn_subagent("coder", SubagentSpec::new()).await?;
    let sub_turn = coder.turn("t1", "edit the file").await?;
    agent.run_handle().cancel(); // the user interrupts: calls in flight are cancelled
    let interrupted = sub_turn
        .call("mcp__testkit__echo", Default::default())
        .await;
    assert!(interrupted.is_err_and(|e| e.is_interrupted()));
    sub_turn.end().await;
    coder.complete().await; // its own capabilities shut down; pooled connections stay
    agent.complete().await;
    host.shutdown().await;
    // BOOK:end
    Ok(())
}
