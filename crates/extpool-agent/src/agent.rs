//! [`Agent`]: one agent in a session — its own capabilities, its compiled
//! toolset, its turns, its subagents, its runs.
//!
//! Subagents (RFC lifecycle diagrams 5 and 9): spawning opens an agent-scope
//! view in the same session, so the subagent sees the pool's and the
//! session's capabilities and registers its own next to them; its runs are
//! children of its parent's, so interrupting the parent interrupts it.
//! Completing it shuts down only what it registered. Connections belong to
//! the pool: a server the parent also uses keeps its one connection, and
//! concurrent subagents share it, their calls in flight together.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use extpool_host::core::registry::ShutdownReport;
use extpool_host::plugins::AgentInfo;
use extpool_host::{Capability, McpServerConfig, Scope, View, describe};
use parking_lot::Mutex;

use crate::compile::{self, CompiledAgent, Inputs, Loaded, ToolsetCache};
use crate::error::AgentError;
use crate::factory::{AgentEvent, AgentFactory};
use crate::run::{RunHandle, RunState};
use crate::turn::Turn;

/// What a subagent brings of its own: servers and capabilities registered
/// at its agent scope, visible to it alone, shut down when it completes.
#[derive(Default)]
pub struct SubagentSpec {
    servers: Vec<(String, McpServerConfig)>,
    capabilities: Vec<Arc<dyn Capability>>,
    definition: Option<AgentInfo>,
}

impl std::fmt::Debug for SubagentSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubagentSpec")
            .field(
                "servers",
                &self.servers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field(
                "capabilities",
                &self.capabilities.iter().map(|c| c.id()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl SubagentSpec {
    /// Nothing of its own: the subagent sees the pool and the session.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds MCP server `name`; its connection comes from the host's pool
    /// (one per distinct server, whoever asks).
    pub fn server(mut self, name: &str, config: McpServerConfig) -> Self {
        self.servers.push((name.to_owned(), config));
        self
    }

    /// Adds a capability of the embedding program's (its own tools, …).
    pub fn capability(mut self, cap: Arc<dyn Capability>) -> Self {
        self.capabilities.push(cap);
        self
    }

    /// A subagent as plugin definition `def` describes it (see
    /// [`crate::AgentFactory::definitions`]): its system prompt first in
    /// its instructions, its model hint in [`Agent::definition`], and,
    /// when it lists tools, only the listed ones offered and callable
    /// (catalog names or aliases; the host's own tools it may name, such
    /// as Claude Code's `Read`, are not extpool's to offer).
    pub fn defined(def: AgentInfo) -> Self {
        Self {
            definition: Some(def),
            ..Self::default()
        }
    }
}

pub(crate) struct AgentInner {
    pub factory: AgentFactory,
    pub view: View,
    pub run: Arc<RunState>,
    pub loaded: Loaded,
    pub cache: ToolsetCache,
    pub turns: Mutex<HashSet<String>>,
    /// The definition it was spawned from.
    pub definition: Option<AgentInfo>,
    /// Its view policy: the factory's, narrowed by its definition's tools.
    pub policy: Arc<extpool_host::ViewPolicy>,
    completed: AtomicBool,
    key: (String, String),
}

impl Drop for AgentInner {
    fn drop(&mut self) {
        self.factory.inner.open.lock().remove(&self.key);
    }
}

/// One agent in a session. Cheap to clone; clones are the same agent.
/// Complete every agent you open ([`Agent::complete`]).
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentInner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("scope", self.scope())
            .finish()
    }
}

impl Agent {
    pub(crate) fn open(
        factory: AgentFactory,
        view: View,
        run: Arc<RunState>,
        definition: Option<AgentInfo>,
    ) -> Result<Self, AgentError> {
        let scope = view.scope();
        let key = (scope.session_id.clone(), scope.agent_name.clone());
        if !factory.inner.open.lock().insert(key.clone()) {
            return Err(AgentError::AgentOpen {
                name: key.1,
                session: key.0,
            });
        }
        let policy = factory.inner.policy_for(definition.as_ref());
        Ok(Self {
            inner: Arc::new(AgentInner {
                factory,
                view,
                run,
                loaded: Loaded::default(),
                cache: ToolsetCache::default(),
                turns: Mutex::new(HashSet::new()),
                definition,
                policy,
                completed: AtomicBool::new(false),
                key,
            }),
        })
    }

    /// The subagent definition it was spawned from (its system prompt,
    /// tool allowlist and model hint), when it was.
    pub fn definition(&self) -> Option<&AgentInfo> {
        self.inner.definition.as_ref()
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.inner.view.scope().agent_name
    }

    /// Its scope (pool, session, agent).
    pub fn scope(&self) -> &Scope {
        self.inner.view.scope()
    }

    /// Its view of the host.
    pub fn view(&self) -> &View {
        &self.inner.view
    }

    /// The factory it was opened from.
    pub fn factory(&self) -> &AgentFactory {
        &self.inner.factory
    }

    /// Registers `cap` at this agent's scope: visible to it (and its
    /// turns) alone, listed before this returns (a server connects now),
    /// shut down when the agent completes.
    pub async fn register(&self, cap: Arc<dyn Capability>) -> Result<(), AgentError> {
        self.inner.view.register(cap).await?;
        Ok(())
    }

    /// Registers MCP server `name` at this agent's scope; its connection
    /// comes from the host's pool.
    pub async fn add_server(&self, name: &str, config: McpServerConfig) -> Result<(), AgentError> {
        let cap = self.inner.factory.host().mcp_server(name, config)?;
        self.register(cap).await
    }

    pub(crate) fn inputs<'a>(&'a self, view: &'a View) -> Inputs<'a> {
        Inputs {
            view,
            policy: &self.inner.policy,
            filter_scope: self.inner.view.scope(),
            definition: self.inner.definition.as_ref(),
            loaded: &self.inner.loaded,
            cache: Some(&self.inner.cache),
            revision: None,
        }
    }

    /// Compiles this agent now (RFC `AgentFactory.compile()`): its toolset
    /// from the revision published now, with the tools it has loaded, and
    /// its instructions. Nothing changed since the last compile costs a
    /// cache lookup and the instructions.
    pub async fn compile(&self) -> Result<CompiledAgent, AgentError> {
        self.check_open()?;
        Ok(compile::compile(&self.inputs(&self.inner.view)).await)
    }

    /// Interrupts this agent's current run (and its subagents' calls).
    pub fn run_handle(&self) -> RunHandle {
        RunHandle {
            state: self.inner.run.clone(),
            scope: describe(self.scope()),
        }
    }

    /// Starts turn `id` for `prompt`: a turn-scope view (capabilities
    /// activated for this turn alone), the toolset compiled and pinned for
    /// it, in the agent's current run (a new run after an interruption).
    pub async fn turn(&self, id: &str, prompt: &str) -> Result<Turn, AgentError> {
        self.check_open()?;
        if !self.inner.turns.lock().insert(id.to_owned()) {
            return Err(AgentError::Scope(format!(
                "turn {id:?} of agent {:?} is already running",
                self.name()
            )));
        }
        let opened = async {
            let view = self.inner.view.turn(id)?;
            let compiled = compile::compile(&self.inputs(&view)).await;
            Ok::<_, AgentError>((view, compiled))
        }
        .await;
        match opened {
            Ok((view, compiled)) => Ok(Turn::new(
                self.clone(),
                view,
                self.inner.run.for_turn(),
                prompt,
                compiled,
            )),
            Err(e) => {
                self.inner.turns.lock().remove(id);
                Err(e)
            }
        }
    }

    /// Spawns subagent `name` in this agent's session (RFC
    /// `spawn_subagent`): registers what `spec` brings at its agent scope
    /// (inheriting the pool's and the session's capabilities; servers
    /// connect now), in a run that is a child of this agent's current run.
    pub async fn spawn_subagent(
        &self,
        name: &str,
        spec: SubagentSpec,
    ) -> Result<Agent, AgentError> {
        self.check_open()?;
        let host = self.inner.factory.host();
        let session = host.session(&self.scope().session_id)?;
        let view = session.agent(name)?;
        let sub = Agent::open(
            self.inner.factory.clone(),
            view,
            RunState::child_of(&self.inner.run),
            spec.definition,
        )?;
        let registered = async {
            for (server, config) in spec.servers {
                sub.add_server(&server, config).await?;
            }
            for cap in spec.capabilities {
                sub.register(cap).await?;
            }
            Ok::<_, AgentError>(())
        }
        .await;
        if let Err(e) = registered {
            sub.complete().await;
            return Err(e);
        }
        tracing::info!(parent = %describe(self.scope()), subagent = %describe(sub.scope()), "subagent spawned");
        self.inner.factory.inner.emit(AgentEvent::Spawned {
            scope: sub.scope().clone(),
        });
        Ok(sub)
    }

    /// Completes this agent: its run ends (calls still in flight are
    /// cancelled), and what it and its turns registered is unregistered and
    /// shut down (innermost first); the pool's and the session's
    /// capabilities and every pooled connection stay. Idempotent.
    pub async fn complete(&self) -> ShutdownReport {
        if self.inner.completed.swap(true, Ordering::AcqRel) {
            return ShutdownReport::default();
        }
        self.inner.run.current().cancel();
        let report = self.inner.view.close_with_report().await;
        self.inner.factory.inner.open.lock().remove(&self.inner.key);
        self.inner.factory.inner.emit(AgentEvent::Completed {
            scope: self.scope().clone(),
            shut_down: report.order().into_iter().map(str::to_owned).collect(),
        });
        report
    }

    /// The deferred tools this agent has loaded (catalog names).
    pub fn loaded_tools(&self) -> Vec<String> {
        self.inner.loaded.names()
    }

    fn check_open(&self) -> Result<(), AgentError> {
        if self.inner.completed.load(Ordering::Acquire) {
            return Err(AgentError::Scope(format!(
                "agent {:?} has completed",
                self.name()
            )));
        }
        Ok(())
    }
}
