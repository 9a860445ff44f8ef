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

use extpool_core::{Capability, CommandEntry, ResourceEntry, ToolEntry};
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
    /// A tool, prompt or command name is malformed.
    #[error("invalid name: {0}")]
    InvalidName(#[source] NameError),
    /// The server name (or configured prefix) cannot be a namespace.
    #[error("invalid namespace: {0}")]
    InvalidNamespace(#[source] NameError),
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
}

impl SourceListing {
    /// True when the source is an MCP server (its commands are prompts).
    pub fn is_mcp(&self) -> bool {
        self.capability.mcp().is_some()
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
    pub(crate) sources: Vec<RevisionSource>,
    source_index: HashMap<String, u32>,
    diagnostics: Vec<Diagnostic>,
    pub(crate) services: Arc<Services>,
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
            && match (&self.parent, &other.parent) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
            && self.resources == other.resources
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

/// Builds revision `number` from complete listings, in visibility order.
/// Never fails: what cannot be published becomes a [`Diagnostic`].
pub fn build(
    number: u64,
    listings: Vec<SourceListing>,
    services: Arc<Services>,
) -> CatalogRevision {
    build_with(number, listings, services, None)
}

/// Builds an overlay revision: `listings` are the scope's own sources;
/// everything else resolves through `parent`, which is shared, never
/// copied. An own source may not reuse a parent namespace or command name
/// (no shadowing).
pub fn build_overlay(
    number: u64,
    listings: Vec<SourceListing>,
    services: Arc<Services>,
    parent: Arc<CatalogRevision>,
) -> CatalogRevision {
    build_with(number, listings, services, Some(parent))
}

fn build_with(
    number: u64,
    listings: Vec<SourceListing>,
    services: Arc<Services>,
    parent: Option<Arc<CatalogRevision>>,
) -> CatalogRevision {
    let mut diagnostics = Vec::new();
    let mut diag = |source: &str, subject: Option<&str>, problem: Problem| {
        tracing::warn!(source, subject, "catalog: {problem}");
        diagnostics.push(Diagnostic {
            source: source.to_owned(),
            subject: subject.map(str::to_owned),
            problem,
        });
    };

    // Sources: valid, unique namespaces (case-insensitively), outer scope first.
    let mut sources: Vec<RevisionSource> = Vec::with_capacity(listings.len());
    let mut kept = Vec::with_capacity(listings.len());
    let mut source_index = HashMap::with_capacity(listings.len());
    let mut namespaces: HashMap<String, Arc<str>> = HashMap::with_capacity(listings.len());
    for listing in listings {
        let id: Arc<str> = Arc::from(listing.capability.id());
        let namespace = services.namespace_of(&id).to_owned();
        if listing.is_mcp()
            && let Err(e) = names::validate_namespace(&namespace)
        {
            diag(&id, None, Problem::InvalidNamespace(e));
            continue;
        }
        let folded = namespace.to_ascii_lowercase();
        let inherited = parent.as_deref().and_then(|p| {
            p.chain()
                .flat_map(|r| r.sources.iter())
                .find(|s| s.namespace.eq_ignore_ascii_case(&namespace))
                .map(|s| s.id.clone())
        });
        if let Some(taken_by) = namespaces.get(&folded).cloned().or(inherited) {
            let taken_by = taken_by.to_string();
            diag(
                &id,
                None,
                Problem::DuplicateNamespace {
                    namespace,
                    taken_by,
                },
            );
            continue;
        }
        namespaces.insert(folded, id.clone());
        source_index.insert(id.to_string(), sources.len() as u32);
        sources.push(RevisionSource {
            id,
            namespace: Arc::from(namespace),
            capability: listing.capability.clone(),
        });
        kept.push(listing);
    }

    // Tool names, in visibility order then listing order; the first claim
    // of a name keeps it. Aliases come after every canonical name is in the
    // index, so an alias never takes a canonical name.
    let total: usize = kept.iter().map(|l| l.tools.len()).sum();
    let mut denied = HashMap::new();
    let mut tools: Vec<CatalogTool> = Vec::with_capacity(total);
    let mut index = NameIndex::with_capacity(total * 2 + BuiltinTool::ALL.len());
    let mut owners: HashMap<String, Arc<str>> = HashMap::new();
    for (si, listing) in kept.iter_mut().enumerate() {
        let source = &sources[si];
        for entry in std::mem::take(&mut listing.tools) {
            let name = match names::join(&source.namespace, &entry.name) {
                Ok(name) => name,
                Err(e) => {
                    diag(&source.id, Some(&entry.name), Problem::InvalidName(e));
                    continue;
                }
            };
            let taken =
                index.get(&name, |s| slot_name(&tools, s)).is_some() || owners.contains_key(&name);
            if taken {
                let taken_by = owners
                    .get(&name)
                    .map_or_else(|| source.id.to_string(), |o| o.to_string());
                diag(
                    &source.id,
                    Some(&entry.name),
                    Problem::DuplicateName { name, taken_by },
                );
                continue;
            }
            let decision = services.permissions.decide(&name);
            if !decision.is_allowed() {
                owners.insert(name.clone(), source.id.clone());
                denied.insert(name, decision);
                continue;
            }
            let slot = Slot::Name(tools.len() as u32);
            tools.push(CatalogTool {
                alias: String::new(),
                server: source.id.clone(),
                namespace: source.namespace.clone(),
                entry,
                capability: source.capability.clone(),
                name,
            });
            let i = tools.len() - 1;
            index.insert(&tools[i].name, slot, |s| slot_name(&tools, s));
        }
    }
    for i in 0..tools.len() {
        let alias = names::allocate_alias(&tools[i].name, |a| {
            index.get(a, |s| slot_name(&tools, s)).is_some()
                || denied.contains_key(a)
                || parent.as_deref().is_some_and(|p| p.tool(a).is_some())
        });
        tools[i].alias = alias;
        if tools[i].alias != tools[i].name {
            index.insert(&tools[i].alias, Slot::Alias(i as u32), |s| {
                slot_name(&tools, s)
            });
        }
    }

    // Resources.
    let mut resources = Vec::new();
    if services.resource_tools {
        for (si, listing) in kept.iter_mut().enumerate() {
            if listing.is_mcp() {
                let server = sources[si].id.clone();
                resources.extend(
                    std::mem::take(&mut listing.resources)
                        .into_iter()
                        .map(|entry| CatalogResource {
                            server: server.clone(),
                            entry,
                        }),
                );
            }
        }
    }

    // Built-ins, under the same permission rules.
    let mut builtins = Vec::new();
    let (parent_tools, parent_resources) = parent.as_deref().map_or((false, false), |p| {
        (
            p.all_tools().next().is_some(),
            p.all_resources().next().is_some(),
        )
    });
    for b in BuiltinTool::ALL {
        let wanted = services.advertises(
            b,
            !tools.is_empty() || parent_tools,
            !resources.is_empty() || parent_resources,
        );
        let inherited = parent
            .as_deref()
            .is_some_and(|p| p.tool(b.name()).is_some());
        if !wanted || inherited {
            continue;
        }
        let decision = services.permissions.decide(b.name());
        if decision.is_allowed() {
            index.insert(b.name(), Slot::Builtin(b), |s| slot_name(&tools, s));
            builtins.push(b);
        } else {
            denied.insert(b.name().to_owned(), decision);
        }
    }

    // Commands: MCP prompts namespaced, other sources' commands as named.
    let mut commands = Vec::new();
    for (si, listing) in kept.iter_mut().enumerate() {
        let source = &sources[si];
        let prompts = listing.is_mcp();
        if prompts && !services.prompts {
            continue;
        }
        for entry in std::mem::take(&mut listing.commands) {
            let name = if prompts {
                names::join(&source.namespace, &entry.name)
            } else {
                names::validate_name(&entry.name, "command name").map(|()| entry.name.clone())
            };
            let name = match name {
                Ok(name) => name,
                Err(e) => {
                    diag(&source.id, Some(&entry.name), Problem::InvalidName(e));
                    continue;
                }
            };
            if prompts {
                let decision = services.permissions.decide(&name);
                if !decision.is_allowed() {
                    denied.insert(name, decision);
                    continue;
                }
            }
            commands.push(CatalogCommand {
                name,
                server: source.id.clone(),
                original: entry.name.clone(),
                kind: if prompts {
                    CommandKind::McpPrompt
                } else {
                    CommandKind::Command
                },
                entry,
                capability: source.capability.clone(),
            });
        }
    }
    commands.sort_by(|a, b| a.name.cmp(&b.name));
    let mut command_index: HashMap<String, u32> = HashMap::with_capacity(commands.len());
    let mut unique = Vec::with_capacity(commands.len());
    for c in commands {
        let inherited = parent
            .as_deref()
            .is_some_and(|p| p.command(&c.name).is_some());
        if command_index.contains_key(&c.name) || inherited {
            diag(
                &c.server,
                Some(&c.original),
                Problem::DuplicateName {
                    name: c.name.clone(),
                    taken_by: "another command".into(),
                },
            );
            continue;
        }
        command_index.insert(c.name.clone(), unique.len() as u32);
        unique.push(c);
    }

    CatalogRevision {
        number,
        tools,
        index,
        builtins,
        denied,
        resources,
        commands: unique,
        command_index,
        sources,
        source_index,
        diagnostics,
        services,
        parent,
    }
}

#[cfg(test)]
mod tests;
