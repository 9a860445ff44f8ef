//! Change notifications: what a capability tells the registry when its
//! tools, resources, prompts, skills or commands changed.

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::ExtensionError;

/// What changed. Serialized as the RFC's strings (`"tools_changed"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The tool list changed (MCP `notifications/tools/list_changed`).
    ToolsChanged,
    /// The resource list changed (MCP `notifications/resources/list_changed`).
    ResourcesChanged,
    /// The prompt list changed (MCP `notifications/prompts/list_changed`).
    PromptsChanged,
    /// The skill set changed (filesystem watcher, MCP-hosted skills).
    SkillsChanged,
    /// The command set changed.
    CommandsChanged,
}

impl ChangeKind {
    /// The RFC's string form of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolsChanged => "tools_changed",
            Self::ResourcesChanged => "resources_changed",
            Self::PromptsChanged => "prompts_changed",
            Self::SkillsChanged => "skills_changed",
            Self::CommandsChanged => "commands_changed",
        }
    }
}

impl std::fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change notification (RFC `ChangeEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeEvent {
    /// Id of the capability that changed.
    pub capability_name: String,
    /// What changed.
    pub kind: ChangeKind,
    /// Where it changed, for URI-level routing (`mcp://github`, `skill://x`); may be empty.
    #[serde(default)]
    pub source_uri: String,
}

impl ChangeEvent {
    /// Builds an event.
    pub fn new(
        capability_name: impl Into<String>,
        kind: ChangeKind,
        source_uri: impl Into<String>,
    ) -> Self {
        Self {
            capability_name: capability_name.into(),
            kind,
            source_uri: source_uri.into(),
        }
    }
}

/// A capability's stream of changes. An `Err` item ends that stream: the
/// registry logs it and keeps the other streams running.
pub type ChangeStream = BoxStream<'static, Result<ChangeEvent, ExtensionError>>;
