//! Building a revision from complete listings: namespaces, names,
//! permissions, aliases, resources, built-ins and commands, all at once.
//! What cannot be published becomes a diagnostic; building never fails.

use std::collections::HashMap;
use std::sync::Arc;

use super::{
    CatalogCommand, CatalogResource, CatalogRevision, CatalogTool, CommandKind, Diagnostic,
    Problem, RevisionSource, Slot, SourceListing, slot_name,
};
use crate::builtins::BuiltinTool;
use crate::index::NameIndex;
use crate::names;
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
