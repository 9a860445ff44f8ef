//! What a view lists, as plain serializable rows: the model-facing tools
//! (canonical name, provider-safe alias, schema; built-ins included),
//! skills, commands, resources and instructions. Front ends render these;
//! they never reach into a revision or a capability themselves.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

/// The `server` of the catalog's built-in tools.
pub const BUILTIN: &str = "builtin";

/// One tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// Catalog name, `mcp__<server>__<tool>` (or a built-in's name).
    pub name: String,
    /// Provider-safe alias (`[A-Za-z0-9_-]`, at most 64): the name itself
    /// when it already is one.
    pub alias: String,
    /// The server (or [`BUILTIN`]).
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
    /// True for the catalog's own tools (`ListMcpResources`, `CallMcpWithQuery`, …).
    pub builtin: bool,
    /// The plugin whose server provides it, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The tool's title, output schema and annotations as its server sent
    /// them, for front ends that pass tools on whole (the gateway).
    #[serde(skip)]
    pub details: ToolDetails,
}

/// What a server said about a tool beyond its name, description and arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolDetails {
    /// Human-readable title.
    pub title: Option<String>,
    /// JSON Schema of `structuredContent`.
    pub output_schema: Option<Value>,
    /// Annotations (read-only hint, …).
    pub annotations: Option<Value>,
    /// Icons, as the server sent them.
    pub icons: Option<Value>,
    /// `_meta`, as the server sent it (MCP Apps' `ui` among its keys).
    pub meta: Option<Value>,
}

impl ToolDetails {
    /// The details of `entry`.
    pub fn of(entry: &extpool_core::ToolEntry) -> Self {
        Self {
            title: entry.title.clone(),
            output_schema: entry.output_schema.as_deref().cloned(),
            annotations: entry.annotations.clone(),
            icons: entry.icons.clone(),
            meta: entry.meta.clone(),
        }
    }

    /// True for a tool its server offers only to its MCP App (SEP-1865):
    /// `_meta.ui.visibility` lists where it is visible, and `"model"` is
    /// not among them. Such a tool is callable by name but never shown to
    /// a model. Without a list the tool is visible to both, as the
    /// extension says.
    pub fn is_app_only(&self) -> bool {
        let visibility = self
            .meta
            .as_ref()
            .and_then(|m| m.get("ui"))
            .and_then(|ui| ui.get("visibility"))
            .and_then(Value::as_array);
        visibility.is_some_and(|v| !v.iter().any(|place| place.as_str() == Some("model")))
    }

    /// The `ui://` view of MCP Apps this tool names, if any.
    pub fn view_uri(&self) -> Option<&str> {
        view_uri(self.meta.as_ref())
    }
}

/// The view a tool whose `_meta` is `meta` names (SEP-1865:
/// `_meta.ui.resourceUri`, or the draft's `_meta["ui/resourceUri"]`).
pub(crate) fn view_uri(meta: Option<&Value>) -> Option<&str> {
    let meta = meta?;
    meta.get("ui")
        .and_then(|ui| ui.get("resourceUri"))
        .or_else(|| meta.get("ui/resourceUri"))
        .and_then(Value::as_str)
}

/// One tool as the model sees it, sharing its schema with the catalog
/// revision (cheap to build for thousands of tools: nothing is copied but
/// names). Agent runtimes compile these; [`ToolInfo`] is the same row with
/// an owned schema, for front ends that serialize it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelTool {
    /// Catalog name, `mcp__<server>__<tool>` (or a built-in's name).
    pub name: String,
    /// Provider-safe alias: the name the model calls it by.
    pub alias: String,
    /// The server (or [`BUILTIN`]).
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments, shared with the revision.
    pub input_schema: Arc<Value>,
    /// True for the catalog's own tools.
    pub builtin: bool,
    /// Title, output schema and annotations as the server sent them.
    #[serde(skip)]
    pub details: ToolDetails,
}

impl ModelTool {
    /// The row of built-in `b`, from its one definition (the catalog's):
    /// listed under its own name, served by [`BUILTIN`].
    pub fn builtin(b: extpool_catalog::BuiltinTool) -> Self {
        let entry = b.entry();
        Self {
            name: b.name().to_owned(),
            alias: b.name().to_owned(),
            server: BUILTIN.to_owned(),
            tool: b.name().to_owned(),
            description: entry.description.clone(),
            input_schema: entry.input_schema.clone(),
            builtin: true,
            details: ToolDetails::of(entry),
        }
    }
}

impl From<ModelTool> for ToolInfo {
    fn from(t: ModelTool) -> Self {
        Self {
            name: t.name,
            alias: t.alias,
            server: t.server,
            tool: t.tool,
            description: t.description,
            input_schema: Arc::unwrap_or_clone(t.input_schema),
            builtin: t.builtin,
            plugin: None,
            details: t.details,
        }
    }
}

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillInfo {
    /// Its name.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// `skill://<name>/SKILL.md`.
    pub uri: String,
    /// `local`, `plugin`, or the MCP server that hosts it.
    pub source: String,
    /// Its directory, for local and plugin skills.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<std::path::PathBuf>,
    /// The plugin that provides it, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

/// One argument of a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgInfo {
    /// Its name.
    pub name: String,
    /// Whether it must be given.
    pub required: bool,
}

/// One command (`/name`): a skill's slash command, a command file or an
/// MCP prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandInfo {
    /// The name with its leading `/`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments.
    pub arguments: Vec<ArgInfo>,
    /// `skill`, `file` (a command file), or `prompt:<server>`.
    pub source: String,
    /// Its icons, as its server sent them (an MCP prompt's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// The plugin that provides it, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

/// One resource of an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceInfo {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// The server.
    pub server: String,
    /// Its MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// What it is.
    pub description: String,
    /// Its icons, as its server sent them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// Its `_meta`, as its server listed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// One page of a skill directory's direct children (SEP-2640
/// `resources/directory/read`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirectoryInfo {
    /// The children on this page, by URI; each one's `server` is the
    /// skill's source (`local`, or the server that hosts it), and a folder
    /// has the MIME type `inode/directory`.
    pub resources: Vec<ResourceInfo>,
    /// The cursor of the next page; `None` on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One capability's contribution to the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstructionInfo {
    /// The capability (`skills`, a server's name).
    pub source: String,
    /// The text.
    pub text: String,
}

/// A configured source and its state, for `extpool list sources` and
/// `ListMcpSources`: servers, skill-embedded servers, skill roots, the catalog.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceInfo {
    /// `server`, `embedded`, `skills`, `discovery` or `catalog`.
    pub kind: &'static str,
    /// The server's name, the skill root, or `catalog`.
    pub name: String,
    /// `ready`, `failed`, `stale`, `lazy`, `disabled`, `configured`,
    /// `unavailable`, `found`, `missing`, or the reconciliation state.
    pub state: String,
    /// Counts, the failure reason, or what the loop did.
    pub detail: String,
    /// Where it is configured.
    pub origin: String,
    /// The catalog revision built from its last good listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// True when its last listing failed and the catalog keeps the previous one.
    pub stale: bool,
    /// The error of its last failed listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// What this source offers that is not loaded, and why, one line each:
    /// tools the catalog refused (a malformed or duplicate name), skills
    /// whose SKILL.md has errors, a scan bound that was hit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// When it last succeeded, in milliseconds since the epoch (discovery
    /// sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_success_ms: Option<u64>,
    /// The discovery source that found this server (`toolhive`); absent
    /// for a server of the configuration and for other kinds of rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovered_by: Option<String>,
    /// What a server said it is at its latest connection (`serverInfo`:
    /// name, version, title, icons, website), as it said it; absent
    /// before it connected and for other kinds of rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implementation: Option<rmcp::model::Implementation>,
    /// The permission profile a server runs under; absent when it runs
    /// unconfined and for other kinds of rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<extpool_sandbox::SandboxProfile>,
}

/// The host's status, every source and every discovery source, read at
/// one moment ([`crate::Host::sources_report`]): a server that joins or
/// leaves is in all three or in none.
#[derive(Debug, Clone)]
pub struct SourcesReport {
    /// The servers and the catalog's cached state.
    pub status: crate::HostStatus,
    /// The rows of `extpool list sources`.
    pub sources: Vec<SourceInfo>,
    /// Each discovery source's cached state.
    pub discovery: Vec<crate::DiscoveryStatus>,
}
