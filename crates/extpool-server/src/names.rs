//! The prompt names a client sees, and the tool schemas its HTTP layer
//! checks headers against.
//!
//! Tools are listed as the session's table says (the host's policy: the
//! catalog name where MCP clients accept it, else its alias; the servers
//! of [`GatewayOptions::unprefixed`](crate::GatewayOptions) under their own
//! names where nothing collides), and a call resolves any of those names
//! there. Prompts follow the same rule among commands, here: an
//! unprefixed server's prompt is listed under its own name when no other
//! command has it. Permission rules, session grants, audit and metrics
//! always speak catalog names.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use extpool_host::CatalogRevision;
use extpool_host::catalog::{CommandKind, names};

/// The listed prompt names of one catalog revision, both ways.
#[derive(Debug, Default)]
pub struct Names {
    /// Catalog prompt name → listed name, where they differ.
    prompt_listed: HashMap<String, String>,
    /// Listed prompt name → catalog name, where they differ.
    prompt_catalog: HashMap<String, String>,
}

impl Names {
    /// The prompt names of `rev`'s commands, with the servers in
    /// `unprefixed` listed under their own names where nothing collides.
    pub fn of(rev: &CatalogRevision, unprefixed: &HashSet<String>) -> Self {
        let mut names = Names::default();
        if unprefixed.is_empty() {
            return names;
        }
        let commands: Vec<_> = rev.all_commands().collect();
        let taken: HashSet<&str> = commands.iter().map(|c| c.name.as_str()).collect();
        let bare = names::unprefixed(
            commands
                .iter()
                .filter(|c| c.kind == CommandKind::McpPrompt && unprefixed.contains(&*c.server))
                .map(|c| (c.original.as_str(), c.name.as_str())),
            |own| !own.is_empty() && !taken.contains(own),
        );
        for (own, catalog) in bare {
            names
                .prompt_listed
                .insert(catalog.to_owned(), own.to_owned());
            names
                .prompt_catalog
                .insert(own.to_owned(), catalog.to_owned());
        }
        names
    }

    /// The name `prompts/list` shows for catalog command `catalog` (without `/`).
    pub fn listed_prompt<'a>(&'a self, catalog: &'a str) -> &'a str {
        self.prompt_listed
            .get(catalog)
            .map_or(catalog, String::as_str)
    }

    /// The catalog command a `prompts/get` of `name` means.
    pub fn catalog_prompt<'a>(&'a self, name: &'a str) -> &'a str {
        self.prompt_catalog.get(name).map_or(name, String::as_str)
    }
}

/// `schema` as the object the HTTP layer checks a 2026-07-28 `tools/call`'s
/// `Mcp-Param-*` headers against, when it promotes arguments to headers
/// (an `x-mcp-header` annotation anywhere); `None` otherwise.
pub fn header_schema(schema: &serde_json::Value) -> Option<rmcp::model::JsonObject> {
    match schema {
        serde_json::Value::Object(map) if has_header_annotation(schema) => Some(map.clone()),
        _ => None,
    }
}

/// Whether `schema` has an `x-mcp-header` annotation anywhere.
fn has_header_annotation(schema: &serde_json::Value) -> bool {
    match schema {
        serde_json::Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == "x-mcp-header" || has_header_annotation(v)),
        serde_json::Value::Array(items) => items.iter().any(has_header_annotation),
        _ => false,
    }
}

/// The prompt names of the revision a view last published, kept while
/// that revision is current.
#[derive(Default)]
pub struct NamesCache {
    slot: parking_lot::Mutex<Option<(Arc<CatalogRevision>, Arc<Names>)>>,
}

impl NamesCache {
    /// The names of `rev` (computed on a miss).
    pub fn get(&self, rev: &Arc<CatalogRevision>, unprefixed: &HashSet<String>) -> Arc<Names> {
        if let Some((cached, names)) = &*self.slot.lock()
            && Arc::ptr_eq(cached, rev)
        {
            return names.clone();
        }
        let names = Arc::new(Names::of(rev, unprefixed));
        *self.slot.lock() = Some((rev.clone(), names.clone()));
        names
    }
}
