//! The Resource Protocols of RFC-0051: *what* a capability provides.
//!
//! A capability implements any combination and announces each through an
//! accessor on [`crate::Capability`] (the Rust form of `isinstance`). The
//! `*_exists` methods must be cheap (a cached listing or a filesystem check):
//! the registry calls them to route a URI before the expensive read.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::{
    ChangeStream, CommandEntry, ExtensionError, ResourceContent, ResourceEntry, SkillEntry,
    ToolEntry, ToolResult,
};

/// Provides skills: SKILL.md bodies and their supporting files.
#[async_trait]
pub trait SkillResource: Send + Sync {
    /// Metadata of every skill (no bodies are read).
    async fn list_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError>;

    /// Reads `skill://<name>/<path>`; `Ok(None)` when this source has no such file.
    async fn read_skill(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError>;

    /// Cheap check whether `uri` belongs to this source.
    async fn skill_exists(&self, uri: &str) -> Result<bool, ExtensionError>;
}

/// Provides MCP-style tools and resources.
#[async_trait]
pub trait McpResource: Send + Sync {
    /// Every tool with its schemas.
    async fn list_tools(&self) -> Result<Vec<ToolEntry>, ExtensionError>;

    /// Calls a tool by its source-local name.
    async fn call_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, ExtensionError>;

    /// Every resource (MCP `resources/list`).
    async fn list_resources(&self) -> Result<Vec<ResourceEntry>, ExtensionError>;

    /// Reads a resource; `Ok(None)` when this source has no such resource.
    async fn read_resource(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError>;

    /// Cheap check whether `uri` belongs to this source.
    async fn resource_exists(&self, uri: &str) -> Result<bool, ExtensionError>;
}

/// Provides user-triggered commands (slash commands, MCP prompts).
#[async_trait]
pub trait CommandResource: Send + Sync {
    /// Every command.
    async fn list_commands(&self) -> Result<Vec<CommandEntry>, ExtensionError>;

    /// Renders a command with the user's arguments into prompt content.
    /// An unknown name is [`ExtensionError::NotFound`].
    async fn get_command(&self, name: &str, args: &[String]) -> Result<String, ExtensionError>;
}

/// Provides change notifications for hot reload.
pub trait ChangeObservable: Send + Sync {
    /// A fresh stream of changes, or `None` when this capability never changes.
    /// Each call returns an independent subscription.
    fn on_change(&self) -> Option<ChangeStream>;
}
