//! Building a revision from complete listings: namespaces, names,
//! permissions, aliases, resources, built-ins and commands, all at once.
//! What cannot be published becomes a diagnostic; building never fails.
//!
//! Each step is one function over a [`Build`], in the order names are
//! claimed: sources (namespaces), tools, aliases, resources, built-ins,
//! commands.

use std::collections::HashMap;
use std::sync::Arc;

use super::{
    CatalogCommand, CatalogResource, CatalogRevision, CatalogSkill, CatalogTool, CommandKind,
    Diagnostic, Problem, RevisionSource, Slot, SourceListing, slot_name,
};
use crate::builtins::BuiltinTool;
use crate::index::NameIndex;
use crate::names;
use crate::permissions::Decision;
use crate::services::Services;

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

/// What the steps share while a revision is built.
struct Build {
    services: Arc<Services>,
    /// The rules this revision is built with.
    permissions: Arc<crate::permissions::Permissions>,
    parent: Option<Arc<CatalogRevision>>,
    diagnostics: Vec<Diagnostic>,
    denied: HashMap<String, Decision>,
    index: NameIndex<Slot>,
    tools: Vec<CatalogTool>,
}

impl Build {
    fn diag(&mut self, source: &str, subject: Option<&str>, problem: Problem) {
        tracing::warn!(source, subject, "catalog: {problem}");
        self.diagnostics.push(Diagnostic {
            source: source.to_owned(),
            subject: subject.map(str::to_owned),
            problem,
        });
    }

    fn parent(&self) -> Option<&CatalogRevision> {
        self.parent.as_deref()
    }

    fn taken(&self, name: &str) -> bool {
        self.index
            .get(name, |s| slot_name(&self.tools, s))
            .is_some()
    }

    /// Sources with valid namespaces, unique ignoring case (outer scope
    /// first); returns them with their listings, in the same order.
    fn sources(
        &mut self,
        listings: Vec<SourceListing>,
    ) -> (Vec<RevisionSource>, Vec<SourceListing>) {
        let mut sources: Vec<RevisionSource> = Vec::with_capacity(listings.len());
        let mut kept = Vec::with_capacity(listings.len());
        let mut namespaces = extpool_core::ServerNames::new();
        for listing in listings {
            let id: Arc<str> = Arc::from(listing.capability.id());
            let namespace = self.services.namespace_of(&id);
            if listing.is_mcp()
                && let Err(e) = names::validate_namespace(&namespace)
            {
                self.diag(&id, None, Problem::InvalidNamespace(e));
                continue;
            }
            let inherited = self.parent().and_then(|p| {
                p.chain()
                    .flat_map(|r| r.sources.iter())
                    .find(|s| extpool_core::same_server_name(&s.namespace, &namespace))
                    .map(|s| s.id.clone())
            });
            if let Some(taken_by) = namespaces.get(&namespace).cloned().or(inherited) {
                let taken_by = taken_by.to_string();
                self.diag(
                    &id,
                    None,
                    Problem::DuplicateNamespace {
                        namespace,
                        taken_by,
                    },
                );
                continue;
            }
            namespaces.entry(&namespace, || id.clone());
            sources.push(RevisionSource {
                id,
                namespace: Arc::from(namespace),
                capability: listing.capability.clone(),
            });
            kept.push(listing);
        }
        (sources, kept)
    }

    /// Tool names, in visibility order then listing order; the first claim
    /// of a name keeps it; denied names are remembered, not published.
    fn tools(&mut self, sources: &[RevisionSource], kept: &mut [SourceListing]) {
        let mut owners: HashMap<String, Arc<str>> = HashMap::new();
        for (source, listing) in sources.iter().zip(kept.iter_mut()) {
            for entry in std::mem::take(&mut listing.tools) {
                let name = match names::join(&source.namespace, &entry.name) {
                    Ok(name) => name,
                    Err(e) => {
                        self.diag(&source.id, Some(&entry.name), Problem::InvalidName(e));
                        continue;
                    }
                };
                if self.taken(&name) || owners.contains_key(&name) {
                    let taken_by = owners
                        .get(&name)
                        .map_or_else(|| source.id.to_string(), |o| o.to_string());
                    self.diag(
                        &source.id,
                        Some(&entry.name),
                        Problem::DuplicateName { name, taken_by },
                    );
                    continue;
                }
                let decision = self.permissions.decide(&name);
                if !decision.is_allowed() {
                    owners.insert(name.clone(), source.id.clone());
                    self.denied.insert(name, decision);
                    continue;
                }
                let slot = Slot::Name(self.tools.len() as u32);
                self.tools.push(CatalogTool {
                    alias: String::new(),
                    server: source.id.clone(),
                    namespace: source.namespace.clone(),
                    entry,
                    capability: source.capability.clone(),
                    name,
                });
                let tools = &self.tools;
                self.index
                    .insert(&tools[tools.len() - 1].name, slot, |s| slot_name(tools, s));
            }
        }
    }

    /// Provider-safe aliases, after every canonical name is in the index,
    /// so an alias never takes a canonical name.
    fn aliases(&mut self) {
        for i in 0..self.tools.len() {
            let alias = names::allocate_alias(&self.tools[i].name, |a| {
                self.taken(a)
                    || self.denied.contains_key(a)
                    || self.parent().is_some_and(|p| p.tool(a).is_some())
            });
            self.tools[i].alias = alias;
            if self.tools[i].alias != self.tools[i].name {
                let tools = &self.tools;
                self.index
                    .insert(&tools[i].alias, Slot::Alias(i as u32), |s| {
                        slot_name(tools, s)
                    });
            }
        }
    }

    /// Built-ins, under the same permission rules, unless the parent has them.
    fn builtins(&mut self, resources: &[CatalogResource]) -> Vec<BuiltinTool> {
        let (parent_tools, parent_resources) = self.parent().map_or((false, false), |p| {
            (
                p.all_tools().next().is_some(),
                p.all_resources().next().is_some(),
            )
        });
        let mut builtins = Vec::new();
        for b in BuiltinTool::CATALOG {
            let wanted = self.services.advertises(
                b,
                !self.tools.is_empty() || parent_tools,
                !resources.is_empty() || parent_resources,
            );
            let inherited = self.parent().is_some_and(|p| p.tool(b.name()).is_some());
            if !wanted || inherited {
                continue;
            }
            let decision = self.permissions.decide(b.name());
            if decision.is_allowed() {
                let tools = &self.tools;
                self.index
                    .insert(b.name(), Slot::Builtin(b), |s| slot_name(tools, s));
                builtins.push(b);
            } else {
                self.denied.insert(b.name().to_owned(), decision);
            }
        }
        builtins
    }

    /// Commands: MCP prompts namespaced, other sources' commands as named;
    /// sorted, each name once (and never a parent's).
    fn commands(
        &mut self,
        sources: &[RevisionSource],
        kept: &mut [SourceListing],
    ) -> (Vec<CatalogCommand>, HashMap<String, u32>) {
        let mut commands = Vec::new();
        for (source, listing) in sources.iter().zip(kept.iter_mut()) {
            let prompts = listing.is_mcp();
            if prompts && !self.services.prompts {
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
                        self.diag(&source.id, Some(&entry.name), Problem::InvalidName(e));
                        continue;
                    }
                };
                if prompts {
                    let decision = self.permissions.decide(&name);
                    if !decision.is_allowed() {
                        self.denied.insert(name, decision);
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
        let mut index: HashMap<String, u32> = HashMap::with_capacity(commands.len());
        let mut unique = Vec::with_capacity(commands.len());
        for c in commands {
            let inherited = self.parent().is_some_and(|p| p.command(&c.name).is_some());
            if index.contains_key(&c.name) || inherited {
                self.diag(
                    &c.server,
                    Some(&c.original),
                    Problem::DuplicateName {
                        name: c.name.clone(),
                        taken_by: "another command".into(),
                    },
                );
                continue;
            }
            index.insert(c.name.clone(), unique.len() as u32);
            unique.push(c);
        }
        (unique, index)
    }
}

/// The resources of the MCP sources, when resource tools are on.
fn resources(
    services: &Services,
    sources: &[RevisionSource],
    kept: &mut [SourceListing],
) -> Vec<CatalogResource> {
    let mut out = Vec::new();
    if !services.resource_tools {
        return out;
    }
    for (source, listing) in sources.iter().zip(kept.iter_mut()) {
        if listing.is_mcp() {
            out.extend(
                std::mem::take(&mut listing.resources)
                    .into_iter()
                    .map(|entry| CatalogResource {
                        server: source.id.clone(),
                        entry,
                    }),
            );
        }
    }
    out
}

/// The skills of every source, in visibility order, each name once (the
/// first source that has it keeps it).
fn skills(sources: &[RevisionSource], kept: &mut [SourceListing]) -> Vec<CatalogSkill> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (source, listing) in sources.iter().zip(kept.iter_mut()) {
        for entry in std::mem::take(&mut listing.skills) {
            if seen.insert(entry.name.clone()) {
                out.push(CatalogSkill {
                    server: source.id.clone(),
                    entry,
                });
            }
        }
    }
    out
}

fn build_with(
    number: u64,
    listings: Vec<SourceListing>,
    services: Arc<Services>,
    parent: Option<Arc<CatalogRevision>>,
) -> CatalogRevision {
    let total: usize = listings.iter().map(|l| l.tools.len()).sum();
    let mut b = Build {
        permissions: services.permissions(),
        services: services.clone(),
        parent,
        diagnostics: Vec::new(),
        denied: HashMap::new(),
        index: NameIndex::with_capacity(total * 2 + BuiltinTool::ALL.len()),
        tools: Vec::with_capacity(total),
    };
    let (sources, mut kept) = b.sources(listings);
    b.tools(&sources, &mut kept);
    b.aliases();
    let resources = resources(&services, &sources, &mut kept);
    let builtins = b.builtins(&resources);
    let (commands, command_index) = b.commands(&sources, &mut kept);
    let skills = skills(&sources, &mut kept);
    let source_index = sources
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.to_string(), i as u32))
        .collect();
    CatalogRevision {
        number,
        tools: b.tools,
        index: b.index,
        builtins,
        denied: b.denied,
        resources,
        commands,
        command_index,
        skills,
        sources,
        source_index,
        diagnostics: b.diagnostics,
        services,
        permissions: b.permissions,
        parent: b.parent,
    }
}
