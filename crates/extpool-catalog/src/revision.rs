//! [`CatalogRevision`]: one immutable, numbered catalog, and how it is built.
//!
//! A revision is built whole from the listings of every source
//! ([`build`]), then published behind one `Arc`. Everything a caller needs
//! for an operation is inside it — names, schemas, the capabilities to
//! dispatch to — so an operation that pinned revision N keeps calling N's
//! targets with N's schemas even after N+1 is published. Lookups go through
//! maps (canonical name and alias → tool); nothing ever parses a name.

use std::collections::HashMap;
use std::sync::Arc;

use extpool_core::{Capability, CommandEntry, ResourceEntry, SkillEntry, ToolEntry};
use serde::Serialize;

use crate::builtins::BuiltinTool;
use crate::index::NameIndex;
use crate::names::{self, NameError};
use crate::permissions::Decision;
use crate::services::Services;

/// A remote tool as the catalog publishes it.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogTool {
    /// Canonical catalog name, `mcp__<namespace>__<tool>`.
    pub name: String,
    /// Provider-safe alias (equal to `name` when that is already safe).
    pub alias: String,
    /// Id of the capability (server) that serves it.
    pub server: Arc<str>,
    /// The namespace used in the name (the server name or its configured prefix).
    pub namespace: Arc<str>,
    /// The tool's description and schemas, as listed.
    pub entry: ToolEntry,
    /// The dispatch target pinned with this tool.
    #[serde(skip)]
    pub(crate) capability: Arc<dyn Capability>,
}

impl CatalogTool {
    /// The tool's name on its server, used for the real call.
    pub fn original(&self) -> &str {
        &self.entry.name
    }
}

/// A resource listed by a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogResource {
    /// Id of the server that owns it.
    pub server: Arc<str>,
    /// The resource as listed.
    pub entry: ResourceEntry,
}

/// A skill a source serves, as the catalog publishes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogSkill {
    /// Id of the source that serves it (the skill manager for local skills).
    pub server: Arc<str>,
    /// The skill as listed.
    pub entry: SkillEntry,
}

/// Where a command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CommandKind {
    /// An MCP prompt, named `mcp__<namespace>__<prompt>`.
    McpPrompt,
    /// A command of a non-MCP source (a skill's slash command), under its own name.
    Command,
}

/// A user-triggered command as the catalog publishes it.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogCommand {
    /// The name typed after `/`.
    pub name: String,
    /// Id of the capability that renders it.
    pub server: Arc<str>,
    /// Its name in its source, used for the real call.
    pub original: String,
    /// Prompt or plain command.
    pub kind: CommandKind,
    /// The command as listed.
    pub entry: CommandEntry,
    /// The capability that renders it, pinned with it.
    #[serde(skip)]
    pub(crate) capability: Arc<dyn Capability>,
}

/// A source (capability) a revision dispatches to.
#[derive(Clone)]
pub struct RevisionSource {
    /// Capability id.
    pub id: Arc<str>,
    /// Namespace used in its names.
    pub namespace: Arc<str>,
    /// The capability itself: the dispatch target pinned by this revision.
    pub capability: Arc<dyn Capability>,
}

impl std::fmt::Debug for RevisionSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RevisionSource")
            .field("id", &self.id)
            .field("namespace", &self.namespace)
            .finish()
    }
}

/// Something in the sources that the catalog refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Capability id the problem belongs to.
    pub source: String,
    /// The refused name, when it is about one name.
    pub subject: Option<String>,
    /// What is wrong.
    #[serde(serialize_with = "crate::services::display")]
    pub problem: Problem,
}

/// What the catalog refused while building a revision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// A tool, prompt or command name is malformed (the error is shown in
    /// the message, so not a `source()`).
    #[error("invalid name: {0}")]
    InvalidName(NameError),
    /// The server name (or configured prefix) cannot be a namespace (the
    /// error is shown in the message, so not a `source()`).
    #[error("invalid namespace: {0}")]
    InvalidNamespace(NameError),
    /// Two entries produced the same catalog name; the first one kept it.
    #[error("name {name:?} is already taken by {taken_by:?}; this entry is not published")]
    DuplicateName {
        /// The contested name.
        name: String,
        /// The server that keeps it ("builtin" for a built-in).
        taken_by: String,
    },
    /// Two visible sources share a namespace (case-insensitively); the outer one kept it.
    #[error(
        "namespace {namespace:?} is already used by {taken_by:?}; this source is not published"
    )]
    DuplicateNamespace {
        /// The namespace.
        namespace: String,
        /// The source that keeps it.
        taken_by: String,
    },
}

impl Problem {
    /// True for a malformed name.
    pub fn is_invalid_name(&self) -> bool {
        matches!(self, Self::InvalidName(_))
    }

    /// True for a name or namespace collision.
    pub fn is_collision(&self) -> bool {
        matches!(
            self,
            Self::DuplicateName { .. } | Self::DuplicateNamespace { .. }
        )
    }
}

/// What one source listed, as the reconciliation loop collected it.
#[derive(Clone)]
pub struct SourceListing {
    /// The capability.
    pub capability: Arc<dyn Capability>,
    /// Its tools (MCP sources).
    pub tools: Vec<ToolEntry>,
    /// Its resources (MCP sources, when resource tools are on).
    pub resources: Vec<ResourceEntry>,
    /// Its commands (prompts of MCP sources when prompts are on; other sources' commands).
    pub commands: Vec<CommandEntry>,
    /// The skills it serves itself ([`extpool_core::SkillResource::list_own_skills`]).
    pub skills: Vec<SkillEntry>,
}

impl SourceListing {
    /// The skills `cap` serves itself; a source whose skills cannot be
    /// listed now has none in this revision (its tools are still listed):
    /// the failure is logged, and the next cycle asks again.
    pub async fn own_skills(cap: &Arc<dyn Capability>) -> Vec<SkillEntry> {
        let Some(skills) = cap.skills() else {
            return Vec::new();
        };
        match skills.list_own_skills().await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(source = cap.id(), "skills not listed: {e}");
                Vec::new()
            }
        }
    }

    /// True when the source is an MCP server: its tools, resources and
    /// prompts are namespaced by its id (other kinds contribute commands,
    /// taken as named).
    pub fn is_mcp(&self) -> bool {
        self.capability.kind() == extpool_core::CapabilityKind::McpServer
    }
}

/// A name in a revision: a remote tool's name or alias, or a built-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Name(u32),
    Alias(u32),
    Builtin(BuiltinTool),
}

/// The name a slot stands for (the index stores no names of its own).
fn slot_name(tools: &[CatalogTool], slot: Slot) -> &str {
    match slot {
        Slot::Name(i) => tools.get(i as usize).map_or("", |t| t.name.as_str()),
        Slot::Alias(i) => tools.get(i as usize).map_or("", |t| t.alias.as_str()),
        Slot::Builtin(b) => b.name(),
    }
}

/// What a name resolves to.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ToolRef<'a> {
    /// A remote tool.
    Remote(&'a CatalogTool),
    /// A built-in tool.
    Builtin(BuiltinTool),
}

/// One immutable, numbered catalog. Shared as `Arc<CatalogRevision>`.
pub struct CatalogRevision {
    pub(crate) number: u64,
    pub(crate) tools: Vec<CatalogTool>,
    index: NameIndex<Slot>,
    pub(crate) builtins: Vec<BuiltinTool>,
    denied: HashMap<String, Decision>,
    pub(crate) resources: Vec<CatalogResource>,
    pub(crate) commands: Vec<CatalogCommand>,
    command_index: HashMap<String, u32>,
    skills: Vec<CatalogSkill>,
    pub(crate) sources: Vec<RevisionSource>,
    source_index: HashMap<String, u32>,
    diagnostics: Vec<Diagnostic>,
    pub(crate) services: Arc<Services>,
    /// The permission rules it was built with.
    pub(crate) permissions: Arc<crate::permissions::Permissions>,
    parent: Option<Arc<CatalogRevision>>,
}

impl std::fmt::Debug for CatalogRevision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogRevision")
            .field("number", &self.number)
            .field("tools", &self.tools.len())
            .field("names", &self.index.len())
            .field("resources", &self.resources.len())
            .field("commands", &self.commands.len())
            .field("diagnostics", &self.diagnostics.len())
            .finish()
    }
}

impl CatalogRevision {
    /// The revision number (0 is the empty revision before the first publication).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The permission rules of this revision (with the callers' rules of
    /// `permissions.principals`).
    pub fn permissions(&self) -> &crate::permissions::Permissions {
        &self.permissions
    }

    /// What the permission rules of this revision say about `name`, and
    /// which rule decided (for audit logs).
    pub fn permission(&self, name: &str) -> crate::permissions::Decision {
        self.permissions.decide(name)
    }

    /// Remote tools of this revision, in visibility order, then each
    /// server's listing order.
    pub fn tools(&self) -> &[CatalogTool] {
        &self.tools
    }

    /// Built-in tools advertised by this revision.
    pub fn builtins(&self) -> &[BuiltinTool] {
        &self.builtins
    }

    /// Resources of every source, in source order.
    pub fn resources(&self) -> &[CatalogResource] {
        &self.resources
    }

    /// Commands, sorted by name.
    pub fn commands(&self) -> &[CatalogCommand] {
        &self.commands
    }

    /// Skills of this revision's sources, in visibility order, each name
    /// once (the first source that has it keeps it).
    pub fn skills(&self) -> &[CatalogSkill] {
        &self.skills
    }

    /// The sources this revision dispatches to, in visibility order.
    pub fn sources(&self) -> &[RevisionSource] {
        &self.sources
    }

    /// What was refused while building this revision.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The revision this one overlays (a session's view over the pool's
    /// revision), pinned together with it.
    pub fn parent(&self) -> Option<&Arc<CatalogRevision>> {
        self.parent.as_ref()
    }

    /// This revision, then its parent, grandparent, … (lookup order).
    pub fn chain(&self) -> impl Iterator<Item = &CatalogRevision> {
        std::iter::successors(Some(self), |r| r.parent.as_deref())
    }

    /// Remote tools of this revision and the ones it overlays.
    pub fn all_tools(&self) -> impl Iterator<Item = &CatalogTool> {
        self.chain().flat_map(|r| r.tools.iter())
    }

    /// Resources of this revision and the ones it overlays.
    pub fn all_resources(&self) -> impl Iterator<Item = &CatalogResource> {
        self.chain().flat_map(|r| r.resources.iter())
    }

    /// Commands of this revision and the ones it overlays.
    pub fn all_commands(&self) -> impl Iterator<Item = &CatalogCommand> {
        self.chain().flat_map(|r| r.commands.iter())
    }

    /// Skills of this revision and the ones it overlays, each name once:
    /// the outermost revision's first (the pool's local skills win over a
    /// session's own servers'), each in visibility order.
    pub fn all_skills(&self) -> Vec<&CatalogSkill> {
        let chain: Vec<&CatalogRevision> = self.chain().collect();
        let mut seen = std::collections::HashSet::new();
        chain
            .into_iter()
            .rev()
            .flat_map(|r| r.skills.iter())
            .filter(|s| seen.insert(s.entry.name.as_str()))
            .collect()
    }

    /// Built-ins advertised by this revision or the ones it overlays, once each.
    pub fn all_builtins(&self) -> Vec<BuiltinTool> {
        BuiltinTool::ALL
            .into_iter()
            .filter(|b| self.chain().any(|r| r.builtins.contains(b)))
            .collect()
    }

    /// Resolves a canonical name or an alias (here, then in the parent).
    pub fn tool(&self, name: &str) -> Option<ToolRef<'_>> {
        self.chain().find_map(|r| r.own_tool(name))
    }

    fn own_tool(&self, name: &str) -> Option<ToolRef<'_>> {
        match self.index.get(name, |s| slot_name(&self.tools, s))? {
            Slot::Name(i) | Slot::Alias(i) => self.tools.get(i as usize).map(ToolRef::Remote),
            Slot::Builtin(b) => Some(ToolRef::Builtin(b)),
        }
    }

    /// The remote tool `tool` of server `server` (its original names).
    pub fn remote_tool(&self, server: &str, tool: &str) -> Option<&CatalogTool> {
        let source = self.source(server)?;
        let name = names::join(&source.namespace, tool).ok()?;
        match self.tool(&name)? {
            ToolRef::Remote(t) => Some(t),
            ToolRef::Builtin(_) => None,
        }
    }

    /// The permission decision that hides `name`, when it was denied.
    pub fn denied(&self, name: &str) -> Option<&Decision> {
        self.chain().find_map(|r| r.denied.get(name))
    }

    /// A source by capability id.
    pub fn source(&self, id: &str) -> Option<&RevisionSource> {
        self.chain()
            .find_map(|r| r.sources.get(*r.source_index.get(id)? as usize))
    }

    /// A command by the name typed after `/`.
    pub fn command(&self, name: &str) -> Option<&CatalogCommand> {
        self.chain()
            .find_map(|r| r.commands.get(*r.command_index.get(name)? as usize))
    }

    /// The empty revision 0.
    pub(crate) fn empty(services: Arc<Services>) -> Self {
        build(0, Vec::new(), services)
    }

    /// The empty overlay of `parent`.
    pub(crate) fn empty_overlay(services: Arc<Services>, parent: Arc<CatalogRevision>) -> Self {
        build_overlay(0, Vec::new(), services, parent)
    }

    /// True when `other` publishes the same names, schemas, resources,
    /// commands and dispatch targets (so publishing it would change nothing).
    pub(crate) fn same_content(&self, other: &CatalogRevision) -> bool {
        self.tools.len() == other.tools.len()
            && self
                .tools
                .iter()
                .zip(&other.tools)
                .all(|(a, b)| same_tool(a, b))
            && self.builtins == other.builtins
            && Arc::ptr_eq(&self.permissions, &other.permissions)
            && match (&self.parent, &other.parent) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
            && self.resources == other.resources
            && self.skills == other.skills
            && self.commands.len() == other.commands.len()
            && self.commands.iter().zip(&other.commands).all(|(a, b)| {
                a.name == b.name
                    && a.entry == b.entry
                    && same_capability(&a.capability, &b.capability)
            })
            && self.sources.len() == other.sources.len()
            && self
                .sources
                .iter()
                .zip(&other.sources)
                .all(|(a, b)| a.id == b.id && same_capability(&a.capability, &b.capability))
    }
}

/// Equal names, origin and entry; schemas compare by pointer first (a
/// source that did not change hands out the same `Arc`s).
fn same_tool(a: &CatalogTool, b: &CatalogTool) -> bool {
    let schema =
        |x: &Arc<serde_json::Value>, y: &Arc<serde_json::Value>| Arc::ptr_eq(x, y) || x == y;
    a.name == b.name
        && a.alias == b.alias
        && a.server == b.server
        && same_capability(&a.capability, &b.capability)
        && a.entry.name == b.entry.name
        && a.entry.title == b.entry.title
        && a.entry.description == b.entry.description
        && a.entry.annotations == b.entry.annotations
        && schema(&a.entry.input_schema, &b.entry.input_schema)
        && match (&a.entry.output_schema, &b.entry.output_schema) {
            (None, None) => true,
            (Some(x), Some(y)) => schema(x, y),
            _ => false,
        }
}

/// Identity of a capability instance (a replaced runtime is a different one).
pub(crate) fn same_capability(a: &Arc<dyn Capability>, b: &Arc<dyn Capability>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

mod build;

pub use build::{build, build_overlay};

#[cfg(test)]
mod tests;
