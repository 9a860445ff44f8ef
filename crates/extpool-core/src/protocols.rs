//! The Resource Protocols of RFC-0051: *what* a capability provides.
//!
//! A capability implements any combination and announces each through an
//! accessor on [`crate::Capability`] (the Rust form of `isinstance`). The
//! `*_exists` methods must be cheap (a cached listing or a filesystem check):
//! the registry calls them to route a URI before the expensive read.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::{
    ChangeStream, CommandEntry, DirectoryPage, ExtensionError, ResourceContent, ResourceEntry,
    ResourceTemplateEntry, SkillEntry, ToolEntry, ToolResult,
};

/// Provides skills: SKILL.md bodies and their supporting files.
#[async_trait]
pub trait SkillResource: Send + Sync {
    /// Metadata of every skill (no bodies are read).
    async fn list_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError>;

    /// The skills this source serves itself, without those it lists on
    /// behalf of its children or of the servers it hosts skills of (each a
    /// catalog source of its own): what a catalog revision lists for it,
    /// so every skill is listed once, under the source that has it.
    async fn list_own_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError> {
        self.list_skills().await
    }

    /// Reads `skill://<name>/<path>`; `Ok(None)` when this source has no such file.
    async fn read_skill(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError>;

    /// Cheap check whether `uri` belongs to this source.
    async fn skill_exists(&self, uri: &str) -> Result<bool, ExtensionError>;

    /// The direct children of the skill directory `uri` (a skill's root
    /// `skill://<skill-path>` or a folder in it), the page after `cursor`
    /// (SEP-2640 `resources/directory/read`). `Ok(None)` when no skill of
    /// this source has `uri`; an error when it is a skill's file, not a
    /// directory. None by default.
    async fn read_skill_directory(
        &self,
        _uri: &str,
        _cursor: Option<&str>,
    ) -> Result<Option<DirectoryPage>, ExtensionError> {
        Ok(None)
    }
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

    /// Every resource template (MCP `resources/templates/list`); none by default.
    async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplateEntry>, ExtensionError> {
        Ok(Vec::new())
    }

    /// Asks for completions: `request` is MCP's `completion/complete`
    /// params (its `ref` names a prompt by its source-local name, or a
    /// template), the answer MCP's result. `Ok(None)` when this source
    /// does not complete. MCP's own JSON, so this crate stays free of any
    /// protocol library.
    async fn complete(&self, _request: Value) -> Result<Option<Value>, ExtensionError> {
        Ok(None)
    }

    /// Subscribes to (`on`) or unsubscribes from updates of resource
    /// `uri`; `Ok(false)` when this source offers no subscriptions.
    async fn subscribe(&self, _uri: &str, _on: bool) -> Result<bool, ExtensionError> {
        Ok(false)
    }

    /// URIs of resources this source reports updated (MCP
    /// `notifications/resources/updated`), from now on; `None` when it
    /// never reports any.
    fn resource_updates(&self) -> Option<futures::stream::BoxStream<'static, String>> {
        None
    }

    /// Asks the source to send log messages of `level` (an MCP logging
    /// level: `debug` … `emergency`) and above; `Ok(false)` when it does
    /// not log.
    async fn set_log_level(&self, _level: &str) -> Result<bool, ExtensionError> {
        Ok(false)
    }

    /// The protocol extensions this source declared at connection
    /// (MCP `capabilities.extensions`, SEP-1724), by identifier with their
    /// settings, so a front end can declare those it passes through (MCP
    /// Apps' `io.modelcontextprotocol/ui`). Empty when it declared none or
    /// is not connected: never a reason to connect.
    fn extensions(&self) -> Map<String, Value> {
        Map::new()
    }

    /// Capability `name` as this source declared it at connection, for
    /// capabilities the typed protocol model has no field for (MCP
    /// 2025-11-25 `tasks`); `None` when it declared none or is not
    /// connected: never a reason to connect.
    fn declared_capability(&self, _name: &str) -> Option<Value> {
        None
    }

    /// Whether this source's tool `tool` (its own name) takes
    /// task-augmented calls, as it listed it (MCP 2025-11-25
    /// `execution.taskSupport`: `optional` or `required`); `None` when it
    /// does not, or is not known to.
    fn tool_task_support(&self, _tool: &str) -> Option<String> {
        None
    }

    /// Sends request `method` with `params` as given (the 2025-11-25 task
    /// methods, a task-augmented `tools/call`) and answers its result
    /// whole; `Ok(None)` when this source takes no such requests.
    async fn request_whole(
        &self,
        _method: &str,
        _params: Value,
    ) -> Result<Option<Value>, ExtensionError> {
        Ok(None)
    }

    /// The params of this source's task status notifications (MCP
    /// 2025-11-25 `notifications/tasks/status`), from now on; `None` when
    /// it never sends any.
    fn task_status(&self) -> Option<futures::stream::BoxStream<'static, Value>> {
        None
    }
}

/// Provides user-triggered commands (slash commands, MCP prompts).
#[async_trait]
pub trait CommandResource: Send + Sync {
    /// Every command.
    async fn list_commands(&self) -> Result<Vec<CommandEntry>, ExtensionError>;

    /// Renders a command with the user's arguments into prompt content.
    /// An unknown name is [`ExtensionError::NotFound`].
    async fn get_command(&self, name: &str, args: &[String]) -> Result<String, ExtensionError>;

    /// Gets an MCP prompt whole: `arguments` by name, the answer MCP's
    /// `GetPromptResult` JSON (every message, with images and embedded
    /// resources). `Ok(None)` when this source has no such form (then
    /// [`CommandResource::get_command`] renders it as text).
    async fn get_prompt(
        &self,
        _name: &str,
        _arguments: Map<String, Value>,
    ) -> Result<Option<Value>, ExtensionError> {
        Ok(None)
    }
}

/// Provides change notifications for hot reload.
pub trait ChangeObservable: Send + Sync {
    /// A fresh stream of changes, or `None` when this capability never changes.
    /// Each call returns an independent subscription.
    fn on_change(&self) -> Option<ChangeStream>;
}
