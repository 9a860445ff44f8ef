//! extpool-agent: the library a Rust agent runtime embeds to give its
//! agents extpool's MCP servers, skills and commands.
//!
//! An agent runtime compiles a toolset and instructions for an agent at a
//! scope, runs turns, spawns subagents, and is interrupted by its user. The
//! RFC's lifecycle diagrams 5–9 are what this crate does: subagents spawned
//! and completed on shared pool connections, a server dying mid-call
//! (reconnect, or a tool error the model can read and the server's tools
//! left out until it recovers), a skill whose embedded server fails,
//! interruption that really cancels the call on the server, concurrent
//! subagents sharing one connection.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use extpool_agent::AgentFactory;
//! use extpool_host::{Host, HostOptions};
//!
//! let host = Host::start(HostOptions::files(["extpool.yaml"])).await?;
//! let factory = AgentFactory::new(host.clone());
//! let session = host.session("s1")?;
//! let agent = factory.open_agent(&session, "main")?;
//! let turn = agent.turn("t1", "What is 2 + 3?").await?;
//! let compiled = turn.compiled();
//! let system = compiled.system_prompt(); // skills, server instructions
//! let tools = compiled.definitions(); // hand these to the model
//! let injected = turn.before_model_request().await?; // before each model request
//! // … the model asks for a tool call:
//! let args = serde_json::json!({"a": 2, "b": 3});
//! let result = turn
//!     .call("mcp__testkit__add", args.as_object().cloned().unwrap_or_default())
//!     .await?;
//! println!("{system} {} {} {}", tools.len(), injected.injected().len(), result.joined_text());
//! turn.end().await;
//! agent.complete().await;
//! host.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Modules
//! - [`factory`]: [`AgentFactory`] (compile, open agents, events for the audit trail);
//! - [`agent`]: [`Agent`] (its capabilities, compile, turns, subagents, completion);
//! - [`turn`]: [`Turn`] (hooks, turn-level activation, calls on the pinned revision);
//! - [`compile`]: [`CompiledAgent`] (tools, deferral, instructions);
//! - [`run`]: [`RunHandle`] (interruption);
//! - [`filter`]: [`CatalogFilter`] (the embedding program's say over the catalog);
//! - [`function`]: [`FunctionTools`] (the embedding program's own tools);
//! - `rig` (feature `rig`): an adapter for rig's tool traits.
//!
//! Tool search (schemas deferred above a budget, a BM25 search tool) follows
//! the rules of [`extpool_host::search`], shared with the gateway.
//!
//! This crate never reaches past the host's view into a capability or an
//! MCP client, and never re-checks a catalog rule (permissions, a session's
//! grants): what an agent is offered and may call is its view's answer,
//! narrowed only by the embedding program's own filters.

mod activation;
pub mod agent;
pub mod compile;
pub mod error;
pub mod factory;
pub mod filter;
pub mod function;
#[cfg(feature = "rig")]
pub mod rig;
pub mod run;
pub mod turn;

pub use agent::{Agent, SubagentSpec};
pub use compile::{CompiledAgent, ToolDefinition};
pub use error::AgentError;
pub use extpool_host::search::{DeferralConfig, SEARCH_TOOL};
pub use factory::{AgentEvent, AgentFactory, AgentOptions, CallOutcome, CallRecord};
pub use filter::CatalogFilter;
pub use function::{FunctionTools, ToolHandler};
pub use run::RunHandle;
pub use turn::{TaskState, ToolTask, Turn};
