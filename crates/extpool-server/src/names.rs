//! The names a client sees: the one rule from catalog names to the names
//! the gateway lists, and back for calls.
//!
//! A tool is listed by its catalog name (`mcp__<server>__<tool>`), or its
//! provider-safe alias when MCP clients would refuse the catalog name. The
//! servers named in [`GatewayOptions::unprefixed`](crate::GatewayOptions)
//! have their tools and prompts listed under their own names instead, when
//! that collides with nothing: no built-in (the catalog's, or the
//! gateway's own `ListMcpSources` and `RefreshMcpSources`), no catalog
//! name or alias, no tool (or prompt) of another unprefixed server with the
//! same own name (then both keep the prefix, whatever the order). Calls
//! accept the listed name, the catalog name and the alias; permission
//! rules, session grants, audit and metrics always speak catalog names.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use extpool_host::catalog::CommandKind;
use extpool_host::{CatalogRevision, ToolInfo};

/// Longest tool name MCP clients accept (the specification's 128).
pub const MAX_TOOL_NAME: usize = 128;

/// Whether MCP clients accept `name` as a tool name (`[A-Za-z0-9_.-]`, at
/// most [`MAX_TOOL_NAME`]).
pub fn is_client_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The listed names of one catalog revision, both ways.
#[derive(Debug, Default)]
pub struct Names {
    /// Catalog tool name → listed name, where they differ.
    tool_listed: HashMap<String, String>,
    /// Listed tool name → catalog name, where they differ.
    tool_catalog: HashMap<String, String>,
    /// Catalog prompt name → listed name, where they differ.
    prompt_listed: HashMap<String, String>,
    /// Listed prompt name → catalog name, where they differ.
    prompt_catalog: HashMap<String, String>,
    /// Input schemas that promote arguments to `Mcp-Param-*` headers
    /// (`x-mcp-header`), by catalog name and by alias.
    header_schemas: HashMap<String, Arc<rmcp::model::JsonObject>>,
}

impl Names {
    /// The names of `tools` (a view's rows) and `rev`'s commands, with the
    /// servers in `unprefixed` listed under their own names where nothing
    /// collides.
    pub fn of(tools: &[ToolInfo], rev: &CatalogRevision, unprefixed: &HashSet<String>) -> Self {
        let mut names = Names::default();
        for info in tools {
            if let serde_json::Value::Object(schema) = &info.input_schema
                && has_header_annotation(&info.input_schema)
            {
                let schema = Arc::new(schema.clone());
                names
                    .header_schemas
                    .insert(info.alias.clone(), schema.clone());
                names.header_schemas.insert(info.name.clone(), schema);
            }
            let listed = if is_client_safe(&info.name) {
                &info.name
            } else {
                &info.alias
            };
            if *listed != info.name {
                names.insert_tool(&info.name, listed);
            }
        }
        if unprefixed.is_empty() {
            return names;
        }
        // Tools: every name a call resolves already is taken.
        let mut taken: HashSet<&str> = crate::source_tools::NAMES.into_iter().collect();
        taken.insert(crate::tool_search::SEARCH_TOOL);
        for info in tools {
            taken.insert(&info.name);
            taken.insert(&info.alias);
        }
        let bare = unique_bare(
            tools
                .iter()
                .filter(|t| !t.builtin && unprefixed.contains(&t.server))
                .map(|t| (t.tool.as_str(), t.name.as_str())),
            |own| is_client_safe(own) && !taken.contains(own),
        );
        for (own, catalog) in bare {
            names.insert_tool(catalog, own);
        }
        // Prompts: the same rule among commands.
        let commands: Vec<_> = rev.all_commands().collect();
        let taken: HashSet<&str> = commands.iter().map(|c| c.name.as_str()).collect();
        let bare = unique_bare(
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

    fn insert_tool(&mut self, catalog: &str, listed: &str) {
        if let Some(old) = self
            .tool_listed
            .insert(catalog.to_owned(), listed.to_owned())
        {
            self.tool_catalog.remove(&old);
        }
        self.tool_catalog
            .insert(listed.to_owned(), catalog.to_owned());
    }

    /// The name `tools/list` shows for catalog tool `catalog`.
    pub fn listed_tool<'a>(&'a self, catalog: &'a str) -> &'a str {
        self.tool_listed
            .get(catalog)
            .map_or(catalog, String::as_str)
    }

    /// The catalog name (or alias) a call of `name` means.
    pub fn catalog_tool<'a>(&'a self, name: &'a str) -> &'a str {
        self.tool_catalog.get(name).map_or(name, String::as_str)
    }

    /// The input schema of tool `name` (catalog name or alias) when it
    /// promotes arguments to `Mcp-Param-*` headers: what the HTTP layer
    /// checks those headers of a 2026-07-28 `tools/call` against.
    pub fn header_schema(&self, name: &str) -> Option<&Arc<rmcp::model::JsonObject>> {
        self.header_schemas.get(name)
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

/// The `(own, catalog)` pairs of `candidates` whose own name is `free`
/// and no other candidate's: two unprefixed servers with a tool (or
/// prompt) of the same name both keep the prefix for it.
fn unique_bare<'a>(
    candidates: impl Iterator<Item = (&'a str, &'a str)>,
    free: impl Fn(&str) -> bool,
) -> Vec<(&'a str, &'a str)> {
    let candidates: Vec<(&str, &str)> = candidates.collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (own, _) in &candidates {
        *count.entry(own).or_default() += 1;
    }
    candidates
        .into_iter()
        .filter(|(own, _)| count.get(own) == Some(&1) && free(own))
        .collect()
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

/// The names of the revision a view last published, kept while that
/// revision is current (building them walks every tool).
#[derive(Default)]
pub struct NamesCache {
    slot: parking_lot::Mutex<Option<(Arc<CatalogRevision>, Arc<Names>)>>,
}

impl NamesCache {
    /// The names of `rev` (with `tools`, its rows, computed on a miss).
    pub fn get(
        &self,
        rev: &Arc<CatalogRevision>,
        tools: impl FnOnce() -> Vec<ToolInfo>,
        unprefixed: &HashSet<String>,
    ) -> Arc<Names> {
        if let Some((cached, names)) = &*self.slot.lock()
            && Arc::ptr_eq(cached, rev)
        {
            return names.clone();
        }
        let names = Arc::new(Names::of(&tools(), rev, unprefixed));
        *self.slot.lock() = Some((rev.clone(), names.clone()));
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_clients_would_refuse_is_not_safe() {
        assert!(is_client_safe("mcp__s__t"));
        assert!(!is_client_safe(&format!("mcp__s__{}", "x".repeat(200))));
        assert!(!is_client_safe("mcp__s__a/b"));
        assert!(!is_client_safe(""));
    }

    #[test]
    fn a_bare_name_is_kept_only_when_one_candidate_has_it_and_it_is_free() {
        let candidates = [
            ("echo", "mcp__a__echo"),
            ("add", "mcp__a__add"),
            ("add", "mcp__b__add"),
            ("ListMcpResources", "mcp__a__ListMcpResources"),
        ];
        let bare = unique_bare(candidates.into_iter(), |own| own != "ListMcpResources");
        assert_eq!(bare, [("echo", "mcp__a__echo")]);
    }
}
