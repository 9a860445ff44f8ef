//! The [`Capability`] trait: the adapter agents compile against (the RFC's
//! `AbstractCapability`), plus the per-turn context its hook receives.

use std::sync::Arc;

use async_trait::async_trait;

use crate::{
    ChangeObservable, CommandResource, ExtensionError, McpResource, Scope, SkillResource, ToolEntry,
};

/// What one model request looks like to a capability's `before_model_request` hook.
#[derive(Debug, Clone, Default)]
pub struct TurnContext {
    /// The scope of the run.
    pub scope: Scope,
    /// The user's prompt for this turn.
    pub user_prompt: String,
    injected: Vec<String>,
}

impl TurnContext {
    /// A context for one request.
    pub fn new(scope: Scope, user_prompt: impl Into<String>) -> Self {
        Self {
            scope,
            user_prompt: user_prompt.into(),
            injected: Vec::new(),
        }
    }

    /// Adds system content to this request (e.g. a matched skill's instructions).
    pub fn inject_system(&mut self, content: impl Into<String>) {
        self.injected.push(content.into());
    }

    /// System content injected so far, in order.
    pub fn injected(&self) -> &[String] {
        &self.injected
    }
}

/// What a capability is, for consumers that treat kinds differently.
///
/// The catalog namespaces an MCP server's tools, resources and prompts
/// under its id; it takes a skill manager's commands (its skills) as named
/// and lists the manager's tools through its children, each under its own
/// namespace; anything else (an embedding program's own tools) is treated
/// like an MCP server. Stating the kind lets one scope hold all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CapabilityKind {
    /// An MCP server (or anything that behaves like one).
    McpServer,
    /// A skill manager: skills, their slash commands, and children
    /// (skill-embedded servers) whose tools it aggregates.
    SkillManager,
    /// Commands only, taken as named (no tools).
    Commands,
}

impl CapabilityKind {
    /// The kind as one word (`mcp_server`, `skill_manager`, `commands`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::McpServer => "mcp_server",
            Self::SkillManager => "skill_manager",
            Self::Commands => "commands",
        }
    }
}

/// An extension as an agent sees it: an id, a toolset, instructions, a hook,
/// a lifecycle, and accessors saying which resource protocols it implements.
///
/// Every method has a default so small capabilities stay small.
#[async_trait]
pub trait Capability: Send + Sync + 'static {
    /// Stable identity (a server name, `skills:<agent>`, …); unique per scope.
    fn id(&self) -> &str;

    /// What this capability is. Defaults to [`CapabilityKind::McpServer`]
    /// when it implements [`McpResource`], else [`CapabilityKind::Commands`].
    fn kind(&self) -> CapabilityKind {
        if self.mcp().is_some() {
            CapabilityKind::McpServer
        } else {
            CapabilityKind::Commands
        }
    }

    /// The tools this capability contributes. Defaults to its MCP tools.
    async fn toolset(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        match self.mcp() {
            Some(mcp) => mcp.list_tools().await,
            None => Ok(Vec::new()),
        }
    }

    /// Text for the system prompt, if any.
    async fn instructions(&self) -> Result<Option<String>, ExtensionError> {
        Ok(None)
    }

    /// Called before each model request; may inject system content.
    async fn before_model_request(&self, _ctx: &mut TurnContext) -> Result<(), ExtensionError> {
        Ok(())
    }

    /// Starts the capability (connect, watch). Idempotent.
    async fn start(&self) -> Result<(), ExtensionError> {
        Ok(())
    }

    /// Releases what the capability holds. The registry bounds it with a timeout.
    async fn shutdown(&self) -> Result<(), ExtensionError> {
        Ok(())
    }

    /// Child capabilities this one is composed of (a skill's MCP servers).
    fn children(&self) -> Vec<Arc<dyn Capability>> {
        Vec::new()
    }

    /// `Some` when this capability implements [`SkillResource`].
    fn skills(&self) -> Option<&dyn SkillResource> {
        None
    }

    /// `Some` when this capability implements [`McpResource`].
    fn mcp(&self) -> Option<&dyn McpResource> {
        None
    }

    /// `Some` when this capability implements [`CommandResource`].
    fn commands(&self) -> Option<&dyn CommandResource> {
        None
    }

    /// `Some` when this capability implements [`ChangeObservable`].
    fn observable(&self) -> Option<&dyn ChangeObservable> {
        None
    }
}

impl std::fmt::Debug for dyn Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capability")
            .field("id", &self.id())
            .finish()
    }
}
