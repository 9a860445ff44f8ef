//! Handing extpool's compiled toolset to a rig agent (feature `rig`): rig
//! drives the model (any OpenAI-compatible chat completions endpoint) and
//! the tool loop; every tool call goes through extpool.
//!
//!     OPENAI_API_KEY=… cargo run -p extpool-agent --features rig --example rig_agent -- "What is 2 + 3?"
//!
//! Environment as for the `agent_loop` example: `OPENAI_BASE_URL`,
//! `OPENAI_API_KEY`, `OPENAI_MODEL`, `EXTPOOL_CONFIG`.
#![allow(clippy::print_stdout)]

use extpool_agent::AgentFactory;
use extpool_host::{Host, HostOptions};
use rig_agent::AgentBuilder;
use rig_core::providers::openai::OpenAIConfig;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let config = var("EXTPOOL_CONFIG").unwrap_or_else(|| "extpool.yaml".into());
    let answer = run(
        HostOptions::files([config]),
        &var("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into()),
        &var("OPENAI_API_KEY").unwrap_or_default(),
        &var("OPENAI_MODEL").unwrap_or_else(|| "gpt-4o-mini".into()),
        if prompt.is_empty() {
            "What is 2 + 3? Use a tool."
        } else {
            &prompt
        },
    )
    .await?;
    println!("{answer}");
    Ok(())
}

/// Runs one prompt through a rig agent whose tools are extpool's (the
/// tests run it against a scripted model).
pub async fn run(
    options: HostOptions,
    base_url: &str,
    api_key: &str,
    model: &str,
    prompt: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let host = Host::start(options).await?;
    let factory = AgentFactory::new(host.clone());
    let session = host.session("rig")?;
    let agent = factory.open_agent(&session, "assistant")?;
    let turn = agent.turn("1", prompt).await?;
    let model = OpenAIConfig::new(api_key.to_owned())
        .with_base_url(base_url)
        .client()
        .chat(model);
    let rig = AgentBuilder::new(model)
        .preamble(turn.compiled().system_prompt())
        .dynamic_tools(extpool_agent::rig::dynamic_tools(&turn))
        .build();
    let answer = rig.prompt(prompt).max_turns(4).await.map(|r| r.output());
    turn.end().await;
    agent.complete().await;
    host.shutdown().await;
    Ok(answer?)
}
