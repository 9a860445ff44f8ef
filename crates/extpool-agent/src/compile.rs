//! Compiling (the RFC's `AgentFactory.compile()`): the toolset and the
//! instructions an agent gets at a scope.
//!
//! The toolset comes from the catalog revision the view publishes now (its
//! names and provider-safe aliases, permissions already applied), minus the
//! tools of degraded capabilities, through the factory's catalog filters,
//! then split by the deferral plan: within the schema budget every tool is
//! offered with its schema; above it the model gets the tools it already
//! loaded, the built-ins, a search tool and a listing of the others. The
//! instructions are every visible capability's (the skill list, servers'
//! instructions) plus that listing. The compiled agent pins its revision:
//! calls made with it dispatch there.
//!
//! Building a toolset copies names, never schemas (they stay shared with
//! the revision), and an agent keeps the last few it built: compiling
//! again with nothing changed costs a lookup and the instructions.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use extpool_host::search::{self, DeferralConfig, Plan, SEARCH_TOOL};
use extpool_host::{
    CatalogRevision, Degraded, Health, InstructionInfo, ModelTool, Scope, ToolIndex, View,
    model_tools,
};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;

use crate::filter::CatalogFilter;

/// How many toolsets an agent keeps (its own, and its turns' when they
/// registered capabilities of their own).
const CACHED_TOOLSETS: usize = 4;

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

/// What a toolset was built from; equal keys mean an equal toolset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    revision: usize,
    number: u64,
    health: u64,
    loaded: u64,
}

/// The compiled tools of one revision (shared by every compile that finds
/// nothing changed).
pub(crate) struct Toolset {
    key: Key,
    pub(crate) revision: Arc<CatalogRevision>,
    /// Every tool offered to this agent, loaded or deferred, in order.
    pub(crate) tools: Arc<Vec<ModelTool>>,
    costs: Arc<Vec<usize>>,
    pub(crate) plan: Plan,
    pub(crate) listing: Option<String>,
    by_name: HashMap<String, usize>,
    pub(crate) excluded: Arc<Vec<Degraded>>,
    /// The search index over every tool but the built-ins, built on first
    /// search and shared by the toolsets re-planned from the same tools.
    index: Arc<OnceLock<ToolIndex>>,
}

impl Toolset {
    /// The tool called `name` (catalog name or alias), loaded or deferred.
    pub(crate) fn find(&self, name: &str) -> Option<(usize, &ModelTool)> {
        let &i = self.by_name.get(name)?;
        Some((i, &self.tools[i]))
    }

    /// Whether tool `i` is deferred.
    pub(crate) fn is_deferred(&self, i: usize) -> bool {
        self.plan.deferred.binary_search(&i).is_ok()
    }

    /// The search index over every tool but the built-ins (deferred or
    /// already loaded: a search answers which tool fits, whatever its
    /// state), built on first search.
    pub(crate) fn index(&self) -> &ToolIndex {
        self.index.get_or_init(|| {
            let searchable: Vec<usize> = (0..self.tools.len())
                .filter(|&i| !self.tools[i].builtin)
                .collect();
            ToolIndex::build(&self.tools, &searchable)
        })
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
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.lock().contains(name)
    }

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

/// The last toolsets an agent built.
#[derive(Default)]
pub(crate) struct ToolsetCache {
    entries: Mutex<Vec<Arc<Toolset>>>,
}

/// Everything a compile reads.
pub(crate) struct Inputs<'a> {
    pub view: &'a View,
    pub health: &'a Health,
    pub filter_scope: &'a Scope,
    pub filters: &'a [Arc<dyn CatalogFilter>],
    pub deferral: &'a DeferralConfig,
    pub loaded: &'a Loaded,
    pub cache: Option<&'a ToolsetCache>,
    /// A revision pinned earlier (a turn re-planning after a search);
    /// `None` reads the one the view publishes now.
    pub revision: Option<Arc<CatalogRevision>>,
}

/// The toolset of `inputs.view` now: from the cache when nothing changed.
pub(crate) fn toolset(inputs: &Inputs<'_>) -> Arc<Toolset> {
    let revision = match &inputs.revision {
        Some(pinned) => pinned.clone(),
        None => inputs.view.revision(),
    };
    // Asking for the degraded set first lets recoveries change the epoch.
    let degraded = inputs.view.degraded();
    let key = Key {
        revision: Arc::as_ptr(&revision) as usize,
        number: revision.number(),
        health: inputs.health.epoch(),
        loaded: inputs.loaded.epoch(),
    };
    let previous = inputs.cache.and_then(|c| {
        let entries = c.entries.lock();
        entries
            .iter()
            .find(|t| {
                t.key.revision == key.revision
                    && t.key.number == key.number
                    && t.key.health == key.health
            })
            .cloned()
    });
    if let Some(hit) = previous.as_ref().filter(|t| t.key == key) {
        return hit.clone();
    }
    let base = match previous {
        // Only the loaded set changed: keep the tools and their index, re-plan.
        Some(base) => Base {
            tools: base.tools.clone(),
            costs: base.costs.clone(),
            excluded: base.excluded.clone(),
            index: base.index.clone(),
        },
        None => {
            let (tools, excluded) = offered(&revision, degraded, inputs);
            let costs: Vec<usize> = tools.iter().map(search::schema_cost).collect();
            Base {
                tools: Arc::new(tools),
                costs: Arc::new(costs),
                excluded: Arc::new(excluded),
                index: Arc::new(OnceLock::new()),
            }
        }
    };
    let built = Arc::new(plan(key, revision, base, inputs));
    if let Some(cache) = inputs.cache {
        let mut entries = cache.entries.lock();
        entries.retain(|t| t.key.revision != key.revision || t.key.number != key.number);
        entries.insert(0, built.clone());
        entries.truncate(CACHED_TOOLSETS);
    }
    built
}

/// The tools of `revision` this agent is offered: those of degraded
/// capabilities left out, then the filters applied.
fn offered(
    revision: &CatalogRevision,
    degraded: Vec<Degraded>,
    inputs: &Inputs<'_>,
) -> (Vec<ModelTool>, Vec<Degraded>) {
    let mut tools = model_tools(revision);
    if !degraded.is_empty() {
        tools.retain(|t| t.builtin || !degraded.iter().any(|d| d.capability == t.server));
    }
    for filter in inputs.filters {
        filter.apply(inputs.filter_scope, &mut tools);
    }
    (tools, degraded)
}

/// What a re-plan keeps from an earlier toolset of the same revision.
struct Base {
    tools: Arc<Vec<ModelTool>>,
    costs: Arc<Vec<usize>>,
    excluded: Arc<Vec<Degraded>>,
    index: Arc<OnceLock<ToolIndex>>,
}

fn plan(key: Key, revision: Arc<CatalogRevision>, base: Base, inputs: &Inputs<'_>) -> Toolset {
    let Base {
        tools,
        costs,
        excluded,
        index,
    } = base;
    let plan = search::plan(&tools, &costs, inputs.deferral, |name| {
        inputs.loaded.contains(name)
    });
    let listing = plan
        .is_deferring()
        .then(|| search::deferred_listing(&tools, &plan.deferred));
    let mut by_name = HashMap::with_capacity(tools.len() * 2);
    for (i, t) in tools.iter().enumerate() {
        by_name.entry(t.name.clone()).or_insert(i);
        by_name.entry(t.alias.clone()).or_insert(i);
    }
    Toolset {
        key,
        revision,
        tools,
        costs,
        plan,
        listing,
        by_name,
        excluded,
        index,
    }
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
            .field("tools", &self.toolset.plan.loaded.len())
            .field("deferred", &self.toolset.plan.deferred.len())
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
        &self.toolset.revision
    }

    /// The tools offered with their schemas, in the order the model sees
    /// them (the search tool is not among them; see [`Self::definitions`]).
    pub fn tools(&self) -> impl Iterator<Item = &ModelTool> {
        self.toolset
            .plan
            .loaded
            .iter()
            .map(|&i| &self.toolset.tools[i])
    }

    /// The deferred tools: the model sees their names and one-line
    /// descriptions, and loads them through the search tool.
    pub fn deferred(&self) -> impl Iterator<Item = &ModelTool> {
        self.toolset
            .plan
            .deferred
            .iter()
            .map(|&i| &self.toolset.tools[i])
    }

    /// True when some tools are deferred (the search tool is offered).
    pub fn is_deferring(&self) -> bool {
        self.toolset.plan.is_deferring()
    }

    /// The tool called `name` (catalog name or alias), offered or deferred.
    pub fn tool(&self, name: &str) -> Option<&ModelTool> {
        self.toolset.find(name).map(|(_, t)| t)
    }

    /// What the model is given as tools: the offered tools, then the search
    /// tool when tools are deferred.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let mut out: Vec<ToolDefinition> = self
            .tools()
            .map(|t| ToolDefinition {
                name: t.alias.clone(),
                description: t.description.clone(),
                parameters: t.input_schema.clone(),
            })
            .collect();
        if self.is_deferring() {
            let (name, description, schema) = search::search_tool();
            out.push(ToolDefinition {
                name: name.to_owned(),
                description: description.to_owned(),
                parameters: Arc::new(schema),
            });
        }
        out
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
    let mut instructions = inputs.view.instructions().await;
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
