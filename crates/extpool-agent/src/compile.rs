//! Compiling (the RFC's `AgentFactory.compile()`): the toolset and the
//! instructions an agent gets at a scope.
//!
//! The toolset is the view's table under the factory's policy (the host's
//! [`extpool_host::policy`]): the revision published now, permissions
//! applied, degraded capabilities' tools left out, the factory's catalog
//! filters applied, schemas deferred above the budget behind the search
//! tool. This module only says which of the table's rows this agent is
//! offered with their schemas (those it loaded stay loaded) and writes the
//! listing of the others into the instructions; it decides no rule itself.
//! The compiled agent pins its table, and with it its revision: calls made
//! with it dispatch there.
//!
//! A table is compiled once per revision and shared; an agent keeps the
//! toolset it built last, so compiling again with nothing changed costs a
//! lookup and the instructions.

use std::sync::Arc;

use extpool_host::catalog::BuiltinTool;
use extpool_host::search::{self, SEARCH_TOOL};
use extpool_host::{
    CatalogRevision, Degraded, InstructionInfo, ModelTool, Pin, Scope, ToolTable, View, ViewPolicy,
};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;

/// A tool definition as a model provider takes it: the name the model
/// calls (the provider-safe alias), the description and the parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The name the model calls.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: Arc<Value>,
}

impl ToolDefinition {
    /// The OpenAI-style function definition (`{"type":"function","function":{…}}`).
    pub fn to_openai(&self) -> Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters.as_ref(),
            }
        })
    }
}

/// What one agent is offered of one table: the rows with their schemas
/// and the deferred ones (shared by every compile that finds nothing
/// changed).
pub(crate) struct Toolset {
    pub(crate) table: Arc<ToolTable>,
    loaded_epoch: u64,
    /// Rows offered with their schemas, in order (the search tool's row
    /// last, when some are deferred).
    offered: Vec<usize>,
    /// Rows deferred (named in the listing).
    deferred: Vec<usize>,
    pub(crate) listing: Option<String>,
    pub(crate) excluded: Arc<Vec<Degraded>>,
}

impl Toolset {
    /// The toolset of `table` for an agent that loaded `loaded`.
    fn of(table: Arc<ToolTable>, loaded: &Loaded, excluded: Vec<Degraded>) -> Self {
        let names = loaded.names.lock();
        let is_loaded = |name: &str| names.contains(name);
        let deferred = table.deferred(is_loaded);
        let offered = table
            .listed(is_loaded)
            .filter(|(_, row)| row.builtin != Some(BuiltinTool::ToolSearch) || !deferred.is_empty())
            .map(|(i, _)| i)
            .collect();
        let listing =
            (!deferred.is_empty()).then(|| search::deferred_listing(table.rows(), &deferred));
        Self {
            loaded_epoch: loaded.epoch(),
            offered,
            deferred,
            listing,
            excluded: Arc::new(excluded),
            table,
        }
    }
}

/// What the agent has loaded of its deferred tools (by catalog name): they
/// stay loaded across turns and catalog revisions.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    names: Mutex<std::collections::HashSet<String>>,
    epoch: std::sync::atomic::AtomicU64,
}

impl Loaded {
    /// Adds `names`; true when one was new.
    pub(crate) fn add<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let mut set = self.names.lock();
        let mut added = false;
        for name in names {
            added |= set.insert(name.to_owned());
        }
        if added {
            self.epoch.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
        added
    }

    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(crate) fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = self.names.lock().iter().cloned().collect();
        out.sort();
        out
    }
}

/// The toolset an agent built last.
#[derive(Default)]
pub(crate) struct ToolsetCache {
    last: Mutex<Option<Arc<Toolset>>>,
}

/// Everything a compile reads.
pub(crate) struct Inputs<'a> {
    pub view: &'a View,
    /// The factory's policy.
    pub policy: &'a Arc<ViewPolicy>,
    /// The scope its filters are given (the agent's, for its turns too).
    pub filter_scope: &'a Scope,
    /// The subagent definition the agent was spawned from: its system
    /// prompt comes first in the instructions.
    pub definition: Option<&'a extpool_host::plugins::AgentInfo>,
    pub loaded: &'a Loaded,
    pub cache: Option<&'a ToolsetCache>,
    /// A revision pinned earlier (a turn re-planning after a search);
    /// `None` reads the one the view publishes now.
    pub revision: Option<Arc<CatalogRevision>>,
}

/// The toolset of `inputs.view` now: the last one when nothing changed.
pub(crate) fn toolset(inputs: &Inputs<'_>) -> Arc<Toolset> {
    let revision = match &inputs.revision {
        Some(pinned) => pinned.clone(),
        None => inputs.view.revision(),
    };
    let table = inputs.view.table(
        Pin::now()
            .policy(inputs.policy)
            .revision(&revision)
            .scope(inputs.filter_scope),
    );
    let cached = inputs.cache.and_then(|c| c.last.lock().clone());
    if let Some(last) = cached
        && Arc::ptr_eq(&last.table, &table)
        && last.loaded_epoch == inputs.loaded.epoch()
    {
        return last;
    }
    let excluded = match inputs.policy.excludes_degraded() {
        true => inputs.view.degraded(),
        false => Vec::new(),
    };
    let built = Arc::new(Toolset::of(table, inputs.loaded, excluded));
    if let Some(cache) = inputs.cache {
        *cache.last.lock() = Some(built.clone());
    }
    built
}

/// An agent compiled at a scope: the tools the model is offered, the
/// instructions, and the catalog revision it pins. Calls made for it
/// dispatch on that revision.
#[derive(Clone)]
pub struct CompiledAgent {
    pub(crate) scope: Scope,
    pub(crate) toolset: Arc<Toolset>,
    pub(crate) instructions: Vec<InstructionInfo>,
}

impl std::fmt::Debug for CompiledAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledAgent")
            .field("scope", &self.scope)
            .field("revision", &self.revision().number())
            .field("tools", &self.toolset.offered.len())
            .field("deferred", &self.toolset.deferred.len())
            .finish()
    }
}

impl CompiledAgent {
    /// The scope it was compiled at.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The catalog revision it pins.
    pub fn revision(&self) -> &Arc<CatalogRevision> {
        self.toolset.table.revision()
    }

    /// The table it pins: every name the model may call, and why another
    /// is refused.
    pub fn table(&self) -> &Arc<ToolTable> {
        &self.toolset.table
    }

    /// The tools offered with their schemas, in the order the model sees
    /// them (the search tool is not among them; see [`Self::definitions`]).
    pub fn tools(&self) -> impl Iterator<Item = &ModelTool> {
        let rows = self.toolset.table.rows();
        self.toolset
            .offered
            .iter()
            .map(|&i| &rows[i])
            .filter(|row| row.builtin != Some(BuiltinTool::ToolSearch))
            .map(|row| &row.tool)
    }

    /// The deferred tools: the model sees their names and one-line
    /// descriptions, and loads them through the search tool.
    pub fn deferred(&self) -> impl Iterator<Item = &ModelTool> {
        let rows = self.toolset.table.rows();
        self.toolset.deferred.iter().map(|&i| &rows[i].tool)
    }

    /// True when some tools are deferred (the search tool is offered).
    pub fn is_deferring(&self) -> bool {
        !self.toolset.deferred.is_empty()
    }

    /// The tool called `name` (catalog name or alias), offered or deferred.
    pub fn tool(&self, name: &str) -> Option<&ModelTool> {
        self.toolset
            .table
            .row(name)
            .filter(|row| row.builtin != Some(BuiltinTool::ToolSearch))
            .map(|row| &row.tool)
    }

    /// What the model is given as tools: the offered tools, then the search
    /// tool when tools are deferred.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let rows = self.toolset.table.rows();
        self.toolset
            .offered
            .iter()
            .map(|&i| ToolDefinition {
                name: rows[i].listed.clone(),
                description: rows[i].tool.description.clone(),
                parameters: rows[i].tool.input_schema.clone(),
            })
            .collect()
    }

    /// What the visible capabilities contribute to the system prompt (the
    /// skill list, servers' instructions), then the deferred-tool listing.
    pub fn instructions(&self) -> &[InstructionInfo] {
        &self.instructions
    }

    /// The instructions joined into one system prompt.
    pub fn system_prompt(&self) -> String {
        self.instructions
            .iter()
            .map(|i| i.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The degraded capabilities whose tools were left out.
    pub fn excluded(&self) -> &[Degraded] {
        &self.toolset.excluded
    }

    /// Bytes of what tool use puts in the model's context: the tool
    /// definitions (as [`ToolDefinition::to_openai`]) and the
    /// deferred-tool listing. At about 4 bytes per token.
    pub fn tool_payload_bytes(&self) -> usize {
        let definitions: usize = self
            .definitions()
            .iter()
            .map(|d| serde_json::to_vec(&d.to_openai()).map_or(0, |v| v.len()))
            .sum();
        definitions + self.toolset.listing.as_ref().map_or(0, String::len)
    }
}

/// Compiles `inputs.view`: its toolset and its instructions.
pub(crate) async fn compile(inputs: &Inputs<'_>) -> CompiledAgent {
    let toolset = toolset(inputs);
    let mut instructions = Vec::new();
    if let Some(def) = inputs.definition {
        instructions.push(InstructionInfo {
            source: format!("agent:{}", def.name),
            text: def.system_prompt.clone(),
        });
    }
    instructions.extend(inputs.view.instructions().await);
    if let Some(listing) = &toolset.listing {
        instructions.push(InstructionInfo {
            source: SEARCH_TOOL.to_owned(),
            text: listing.clone(),
        });
    }
    CompiledAgent {
        scope: inputs.view.scope().clone(),
        toolset,
        instructions,
    }
}
