//! [`Turn`]: one turn of an agent — the `before_model_request` hooks before
//! each model request, capabilities activated for this turn alone, and tool
//! calls dispatched on the revision the turn pinned.
//!
//! A call is raced against the run's cancellation: an interrupted call is
//! dropped (its server receives MCP's `notifications/cancelled`), returns
//! [`AgentError::Interrupted`] and records nothing — no transcript entry, no
//! loaded tool. Everything a call changes is written after it finished.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use extpool_host::catalog::BuiltinTool;
use extpool_host::core::TurnContext;
use extpool_host::core::registry::ShutdownReport;
use extpool_host::policy::Resolved;
use extpool_host::search::{self, SEARCH_TOOL, SearchQuery};
use extpool_host::{
    Capability, HostError, McpServerConfig, ResourceBody, ToolCall, ToolResult, View,
};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::activation::SkillActivation;
use crate::agent::Agent;
use crate::compile::{self, CompiledAgent};
use crate::error::AgentError;
use crate::factory::{AgentEvent, CallOutcome, CallRecord};
use extpool_host::describe;

mod task;

pub use task::{MAX_POLL, MIN_POLL, TaskState, ToolTask};

struct TurnInner {
    agent: Agent,
    view: View,
    token: CancellationToken,
    prompt: String,
    compiled: Mutex<CompiledAgent>,
    calls: Mutex<Vec<CallRecord>>,
    ended: AtomicBool,
}

impl Drop for TurnInner {
    fn drop(&mut self) {
        if !self.ended.load(Ordering::Acquire) {
            self.agent
                .inner
                .turns
                .lock()
                .remove(&self.view.scope().turn_id);
        }
    }
}

/// One turn of an agent. Cheap to clone; clones are the same turn. End
/// every turn you start ([`Turn::end`]).
#[derive(Clone)]
pub struct Turn {
    inner: Arc<TurnInner>,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("scope", self.inner.view.scope())
            .finish()
    }
}

/// What one call produced, before it is recorded.
struct Dispatched {
    result: ToolResult,
    tool: String,
    server: String,
    /// Deferred tools this call loaded.
    loaded: Vec<String>,
}

impl Dispatched {
    /// A name the turn's table does not let the model call: a tool error
    /// saying why, dispatched nowhere.
    fn refused(name: &str, why: String) -> Self {
        Self {
            result: ToolResult::error(why),
            tool: name.to_owned(),
            server: String::new(),
            loaded: Vec::new(),
        }
    }
}

impl Turn {
    pub(crate) fn new(
        agent: Agent,
        view: View,
        token: CancellationToken,
        prompt: &str,
        compiled: CompiledAgent,
    ) -> Self {
        Self {
            inner: Arc::new(TurnInner {
                agent,
                view,
                token,
                prompt: prompt.to_owned(),
                compiled: Mutex::new(compiled),
                calls: Mutex::new(Vec::new()),
                ended: AtomicBool::new(false),
            }),
        }
    }

    /// The turn's id.
    pub fn id(&self) -> &str {
        &self.inner.view.scope().turn_id
    }

    /// The user's prompt.
    pub fn prompt(&self) -> &str {
        &self.inner.prompt
    }

    /// The agent.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The turn's view of the host.
    pub fn view(&self) -> &View {
        &self.inner.view
    }

    /// The toolset and instructions compiled for this turn, pinned to its
    /// revision (recompiled when the turn activates something, or loads
    /// deferred tools).
    pub fn compiled(&self) -> CompiledAgent {
        self.inner.compiled.lock().clone()
    }

    /// Runs every visible capability's `before_model_request` hook for the
    /// next model request (dynamic skill injection) and returns the
    /// context: the system content to add to that request.
    pub async fn before_model_request(&self) -> Result<TurnContext, AgentError> {
        self.check_open()?;
        let mut ctx = TurnContext::new(self.inner.view.scope().clone(), &self.inner.prompt);
        self.inner.view.before_model_request(&mut ctx).await?;
        Ok(ctx)
    }

    /// Activates skill `name` (local or MCP-hosted) for this turn: its
    /// full instructions are injected before every model request of this
    /// turn, and of no other.
    pub async fn activate_skill(&self, name: &str) -> Result<(), AgentError> {
        self.check_open()?;
        let uri = format!("skill://{name}/SKILL.md");
        let content = self.inner.view.read(&uri).await?;
        let bytes: &[u8] = match &content.body {
            ResourceBody::Text(t) => t.as_bytes(),
            ResourceBody::Blob(b) => b,
        };
        let body = extpool_host::skills::skill::body_from_bytes(std::path::Path::new(&uri), bytes)
            .map_err(|e| AgentError::Scope(format!("skill {name:?} cannot be activated: {e}")))?;
        self.register(Arc::new(SkillActivation::new(name, &uri, &body)))
            .await
    }

    /// Activates MCP server `name` for this turn: its tools join this
    /// turn's toolset now, and it is shut down when the turn ends.
    pub async fn activate_server(
        &self,
        name: &str,
        config: McpServerConfig,
    ) -> Result<(), AgentError> {
        let cap = self.inner.agent.factory().host().mcp_server(name, config)?;
        self.register(cap).await
    }

    /// Registers `cap` for this turn alone, then recompiles the turn.
    pub async fn register(&self, cap: Arc<dyn Capability>) -> Result<(), AgentError> {
        self.check_open()?;
        self.inner.view.register(cap).await?;
        let compiled = compile::compile(&self.inner.agent.inputs(&self.inner.view)).await;
        *self.inner.compiled.lock() = compiled;
        Ok(())
    }

    /// Calls tool `name` (the name the model used: an alias or a catalog
    /// name, or the search tool) with `args`, on the turn's pinned revision.
    ///
    /// What the model should read comes back as a result — a tool error for
    /// an unknown or denied tool, bad arguments, or a server that is down
    /// (`MCP server "<name>" unavailable after reconnect`). An interrupted
    /// run returns [`AgentError::Interrupted`] and records nothing.
    pub async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, AgentError> {
        self.check_open()?;
        let compiled = self.compiled();
        let token = self.inner.token.clone();
        let interrupted = || AgentError::Interrupted {
            scope: describe(self.inner.view.scope()),
        };
        if token.is_cancelled() {
            return Err(interrupted());
        }
        let outcome = tokio::select! {
            biased;
            () = token.cancelled() => None,
            dispatched = self.dispatch(&compiled, name, args) => Some(dispatched),
        };
        let Some(dispatched) = outcome else {
            self.emit(&compiled, name, "", CallOutcome::Interrupted, None);
            return Err(interrupted());
        };
        let dispatched = dispatched?;
        let outcome = if dispatched.result.is_error {
            CallOutcome::ToolError
        } else {
            CallOutcome::Ok
        };
        let error = dispatched
            .result
            .is_error
            .then(|| dispatched.result.joined_text());
        let record = self.emit(
            &compiled,
            &dispatched.tool,
            &dispatched.server,
            outcome,
            error,
        );
        self.inner.calls.lock().push(record);
        let agent = &self.inner.agent.inner;
        if agent
            .loaded
            .add(dispatched.loaded.iter().map(String::as_str))
        {
            // Offer the loaded tools from the next model request on, still
            // on this turn's revision.
            let mut inputs = self.inner.agent.inputs(&self.inner.view);
            inputs.revision = Some(compiled.revision().clone());
            let recompiled = compile::compile(&inputs).await;
            *self.inner.compiled.lock() = recompiled;
        }
        Ok(dispatched.result)
    }

    async fn dispatch(
        &self,
        compiled: &CompiledAgent,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<Dispatched, AgentError> {
        let table = compiled.table();
        if name == SEARCH_TOOL && compiled.is_deferring() {
            let deferral = &self.inner.agent.factory().options().deferral;
            let (result, loaded) = match SearchQuery::parse(&args, deferral.max_results) {
                Ok(query) => {
                    let hits = table.search(&query.query, query.limit);
                    let rows = table.rows();
                    let loaded = hits.iter().map(|&i| rows[i].tool.name.clone()).collect();
                    (ToolResult::text(search::search_result(rows, &hits)), loaded)
                }
                Err(message) => (ToolResult::error(message), Vec::new()),
            };
            return Ok(Dispatched {
                result,
                tool: SEARCH_TOOL.to_owned(),
                server: String::new(),
                loaded,
            });
        }
        let row = match table.resolve(name) {
            Resolved::Tool(row) if row.builtin != Some(BuiltinTool::ToolSearch) => row,
            Resolved::Refused(refusal) => {
                return Ok(Dispatched::refused(name, refusal.to_string()));
            }
            _ => {
                let why = format!("unknown tool {name}: it is not offered to this agent");
                return Ok(Dispatched::refused(name, why));
            }
        };
        let canonical = row.tool.name.clone();
        let server = row.tool.server.clone();
        let result = match self
            .inner
            .view
            .call(ToolCall::new(&canonical, args).in_table(table))
            .await
            .outcome
        {
            Ok(result) => result,
            Err(e @ (HostError::ShutDown | HostError::Scope(_))) => return Err(e.into()),
            Err(e) => ToolResult::error(e.to_string()),
        };
        let loaded = if table.is_deferred(row) && !result.is_error {
            vec![canonical.clone()]
        } else {
            Vec::new()
        };
        Ok(Dispatched {
            result,
            tool: canonical,
            server,
            loaded,
        })
    }

    fn emit(
        &self,
        compiled: &CompiledAgent,
        tool: &str,
        server: &str,
        outcome: CallOutcome,
        error: Option<String>,
    ) -> CallRecord {
        let record = CallRecord {
            scope: self.inner.view.scope().clone(),
            tool: tool.to_owned(),
            server: server.to_owned(),
            revision: compiled.revision().number(),
            outcome,
            error,
        };
        self.inner
            .agent
            .factory()
            .inner
            .emit(AgentEvent::Call(record.clone()));
        record
    }

    /// The calls this turn completed, in order (interrupted calls leave no
    /// entry).
    pub fn calls(&self) -> Vec<CallRecord> {
        self.inner.calls.lock().clone()
    }

    /// Ends the turn: what it activated is unregistered and shut down
    /// (returned in the report); nothing leaks to another turn. Idempotent.
    pub async fn end(&self) -> ShutdownReport {
        if self.inner.ended.swap(true, Ordering::AcqRel) {
            return ShutdownReport::default();
        }
        let report = self.inner.view.close_with_report().await;
        self.inner
            .agent
            .inner
            .turns
            .lock()
            .remove(&self.inner.view.scope().turn_id);
        report
    }

    fn check_open(&self) -> Result<(), AgentError> {
        if self.inner.ended.load(Ordering::Acquire) {
            return Err(AgentError::TurnEnded {
                agent: self.inner.agent.name().to_owned(),
                turn: self.id().to_owned(),
            });
        }
        Ok(())
    }
}
