//! [`AgentFactory`] (the RFC's name): compiles agents on a host's scoped
//! views, opens agents in sessions, and reports what their calls did.

use std::collections::HashSet;
use std::sync::Arc;

use extpool_host::plugins::AgentInfo;
use extpool_host::search::DeferralConfig;
use extpool_host::{Host, Scope, ScopeLevel, View, ViewPolicy};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::broadcast;

use crate::agent::Agent;
use crate::compile::{self, CompiledAgent, Inputs, Loaded};
use crate::error::AgentError;
use crate::filter::CatalogFilter;
use crate::run::RunState;

/// Events kept per subscriber (a slow one loses the oldest).
const EVENT_BUFFER: usize = 1024;

/// How a factory compiles agents.
#[derive(Clone, Default)]
pub struct AgentOptions {
    /// When tool schemas are deferred behind the search tool.
    pub deferral: DeferralConfig,
    /// Filters applied to every agent's tools, in order.
    pub filters: Vec<Arc<dyn CatalogFilter>>,
}

impl std::fmt::Debug for AgentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOptions")
            .field("deferral", &self.deferral)
            .field("filters", &self.filters.len())
            .finish()
    }
}

impl AgentOptions {
    /// These options with `filter` added after the others.
    pub fn filter(mut self, filter: impl CatalogFilter + 'static) -> Self {
        self.filters.push(Arc::new(filter));
        self
    }
}

/// How one tool call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallOutcome {
    /// A result.
    Ok,
    /// A result the tool marked as an error, or a failure the model reads
    /// as one (unknown tool, denied, server down).
    ToolError,
    /// The run was interrupted while the call was in flight.
    Interrupted,
}

/// One tool call, as the audit trail records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallRecord {
    /// Where it was called (session, agent, turn).
    pub scope: Scope,
    /// The catalog name called (or the search tool's name).
    pub tool: String,
    /// The capability that served it (empty for the search tool and for
    /// unknown names).
    pub server: String,
    /// The catalog revision it dispatched on.
    pub revision: u64,
    /// How it ended.
    pub outcome: CallOutcome,
    /// For a tool error: its text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What agents did, for audit logs and live displays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A tool call finished (or was interrupted).
    Call(CallRecord),
    /// A subagent was spawned: its agent-scoped capabilities are registered.
    Spawned {
        /// The subagent's scope.
        scope: Scope,
    },
    /// An agent completed: these agent-scoped capabilities were shut down
    /// (pool and session ones stay, with their connections).
    Completed {
        /// The agent's scope.
        scope: Scope,
        /// Ids of what was shut down, in order.
        shut_down: Vec<String>,
    },
}

pub(crate) struct FactoryInner {
    pub host: Host,
    pub options: AgentOptions,
    /// The options as a view policy: degraded servers' tools left out,
    /// the filters, the deferral, provider-safe names.
    pub policy: Arc<ViewPolicy>,
    pub events: broadcast::Sender<AgentEvent>,
    /// Open agents, by (session, name).
    pub open: Mutex<HashSet<(String, String)>>,
}

impl FactoryInner {
    /// The policy of an agent spawned from `definition`: this factory's,
    /// and when the definition lists tools, only those (by catalog name or
    /// alias) offered and callable. A policy of its own, so its compiled
    /// tables are its own.
    pub(crate) fn policy_for(&self, definition: Option<&AgentInfo>) -> Arc<ViewPolicy> {
        let Some(list) = definition.and_then(|d| d.tools.clone()) else {
            return self.policy.clone();
        };
        let allowlist = move |_: &Scope, tools: &mut Vec<extpool_host::ModelTool>| {
            tools.retain(|t| list.iter().any(|n| *n == t.name || *n == t.alias));
        };
        self.policy.to_builder().filter(Arc::new(allowlist)).build()
    }
}

impl FactoryInner {
    pub(crate) fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Call(record) = &event {
            tracing::info!(
                target: "extpool::audit",
                session = %record.scope.session_id,
                agent = %record.scope.agent_name,
                turn = %record.scope.turn_id,
                tool = %record.tool,
                server = %record.server,
                revision = record.revision,
                outcome = ?record.outcome,
                "tool call"
            );
        }
        let _ = self.events.send(event);
    }
}

/// Compiles agents on a [`Host`]'s views and opens agents in its sessions.
/// Cheap to clone.
#[derive(Clone)]
pub struct AgentFactory {
    pub(crate) inner: Arc<FactoryInner>,
}

impl std::fmt::Debug for AgentFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentFactory")
            .field("options", &self.inner.options)
            .finish()
    }
}

impl AgentFactory {
    /// A factory with the default options (deferral above 40,000 bytes of
    /// tool definitions, no filters).
    pub fn new(host: Host) -> Self {
        Self::with_options(host, AgentOptions::default())
    }

    /// A factory with `options`.
    pub fn with_options(host: Host, options: AgentOptions) -> Self {
        let mut policy = ViewPolicy::builder()
            .exclude_degraded(true)
            .deferral(Some(options.deferral.clone()));
        for filter in &options.filters {
            policy = policy.filter(filter.clone());
        }
        Self {
            inner: Arc::new(FactoryInner {
                host,
                policy: policy.build(),
                options,
                events: broadcast::channel(EVENT_BUFFER).0,
                open: Mutex::new(HashSet::new()),
            }),
        }
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.inner.host
    }

    /// The options.
    pub fn options(&self) -> &AgentOptions {
        &self.inner.options
    }

    /// The subagent definitions of the host's enabled plugins (`plugin:agent`:
    /// system prompt, tool allowlist, model hint), to spawn with
    /// [`crate::SubagentSpec::defined`].
    pub fn definitions(&self) -> Vec<extpool_host::plugins::AgentInfo> {
        self.inner.host.agents()
    }

    /// The subagent definition named `name` (`plugin:agent`).
    pub fn definition(&self, name: &str) -> Option<extpool_host::plugins::AgentInfo> {
        self.definitions().into_iter().find(|d| d.name == name)
    }

    /// Compiles what `view` offers (RFC `AgentFactory.compile()`): the
    /// toolset from the revision published now (permissions applied,
    /// degraded servers left out, filters applied, deferred above the
    /// budget) and the instructions. Without an agent nothing is loaded
    /// yet; an [`Agent`] compiles with what it loaded and caches.
    pub async fn compile(&self, view: &View) -> Result<CompiledAgent, AgentError> {
        let loaded = Loaded::default();
        Ok(compile::compile(&Inputs {
            view,
            policy: &self.inner.policy,
            filter_scope: view.scope(),
            definition: None,
            loaded: &loaded,
            cache: None,
            revision: None,
        })
        .await)
    }

    /// Opens agent `name` in the session `session` (a session view).
    /// Capabilities it registers are visible to it alone and are shut down
    /// when it completes. One agent per name per session at a time.
    pub fn open_agent(&self, session: &View, name: &str) -> Result<Agent, AgentError> {
        if session.level() != ScopeLevel::Session {
            return Err(AgentError::Scope(format!(
                "agents open inside a session view, not a {} view",
                session.level()
            )));
        }
        let view = session.agent(name)?;
        Agent::open(self.clone(), view, RunState::root(), None)
    }

    /// Every agent event from now on (tool calls for the audit trail,
    /// spawns, completions).
    pub fn events(&self) -> broadcast::Receiver<AgentEvent> {
        self.inner.events.subscribe()
    }
}
