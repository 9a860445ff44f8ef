//! Tool search for gateway sessions (`extpool serve --tool-search`): the
//! agent library's deferral, offered to MCP clients.
//!
//! Above the schema budget, `tools/list` shows only the tools that stay
//! loaded (built-ins, those the configuration keeps, those a search loaded
//! on this connection) and the search tool, whose description lists the
//! deferred tools by name with one line each. A search returns the best
//! matches with their schemas, loads them for the connection and tells its
//! client the list changed; a deferred tool called by name works at once.
//! The rules (budget, costs, ranking, what the model reads) are
//! [`extpool_host::search`]'s, so that agents and gateway sessions defer
//! alike.

use std::collections::HashSet;
use std::sync::Arc;

use extpool_host::ToolInfo;
use extpool_host::search::{self, DeferralConfig, SearchQuery, SearchableTool, ToolIndex};
use parking_lot::Mutex;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::Value;

use crate::names::Names;

/// The search tool's name; no server's tool is listed under it.
pub const SEARCH_TOOL: &str = search::SEARCH_TOOL;

/// Most tools one connection loads by searching (a bound on what a client
/// can make the gateway keep).
const MAX_LOADED: usize = 4096;

/// The catalog names a connection's searches loaded.
#[derive(Debug, Default)]
pub(crate) struct Loaded(Mutex<HashSet<String>>);

impl Loaded {
    fn contains(&self, name: &str) -> bool {
        self.0.lock().contains(name)
    }

    /// Adds `names`; true when one was new.
    fn add<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let mut set = self.0.lock();
        let mut added = false;
        for name in names {
            if set.len() >= MAX_LOADED {
                break;
            }
            added |= set.insert(name.to_owned());
        }
        added
    }
}

/// A tool under the name this connection's client sees.
struct Listed<'a> {
    info: &'a ToolInfo,
    listed: &'a str,
}

impl SearchableTool for Listed<'_> {
    fn name(&self) -> &str {
        &self.info.name
    }
    fn model_name(&self) -> &str {
        self.listed
    }
    fn description(&self) -> &str {
        &self.info.description
    }
    fn input_schema(&self) -> &Value {
        &self.info.input_schema
    }
    fn is_builtin(&self) -> bool {
        self.info.builtin
    }
}

fn listed<'a>(tools: &'a [ToolInfo], names: &'a Names) -> Vec<Listed<'a>> {
    tools
        .iter()
        .map(|info| Listed {
            info,
            listed: names.listed_tool(&info.name),
        })
        .collect()
}

/// What `tools/list` shows of `tools` (the session's visible tools).
pub(crate) struct Shown {
    /// Indices of the tools listed with their schemas.
    pub loaded: Vec<usize>,
    /// The search tool, when some tools are deferred.
    pub search_tool: Option<Tool>,
}

/// Decides what `tools/list` shows: everything without tool search or
/// within the budget; otherwise the loaded tools and the search tool.
pub(crate) fn shown(
    config: Option<&DeferralConfig>,
    tools: &[ToolInfo],
    names: &Names,
    loaded: &Loaded,
) -> Shown {
    let all = || Shown {
        loaded: (0..tools.len()).collect(),
        search_tool: None,
    };
    let Some(config) = config else {
        return all();
    };
    let rows = listed(tools, names);
    let costs: Vec<usize> = rows.iter().map(search::schema_cost).collect();
    let plan = search::plan(&rows, &costs, config, |name| loaded.contains(name));
    if !plan.is_deferring() {
        return all();
    }
    let (name, description, schema) = search::search_tool();
    let description = format!(
        "{description}\n\n{}",
        search::deferred_listing(&rows, &plan.deferred)
    );
    let schema = match schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    Shown {
        loaded: plan.loaded,
        search_tool: Some(Tool::new(name, description, Arc::new(schema))),
    }
}

/// Answers a call of the search tool: the best deferred matches with their
/// schemas. Returns whether it loaded a tool the connection had not
/// loaded (its client is then told the list changed).
pub(crate) fn search(
    config: &DeferralConfig,
    tools: &[ToolInfo],
    names: &Names,
    loaded: &Loaded,
    args: &serde_json::Map<String, Value>,
) -> Result<(CallToolResult, bool), ErrorData> {
    let query = SearchQuery::parse(args, config.max_results)
        .map_err(|message| ErrorData::invalid_params(message, None))?;
    let rows = listed(tools, names);
    let costs: Vec<usize> = rows.iter().map(search::schema_cost).collect();
    let plan = search::plan(&rows, &costs, config, |name| loaded.contains(name));
    let hits = ToolIndex::build(&rows, &plan.deferred).search(&query.query, query.limit);
    let changed = loaded.add(hits.iter().map(|&i| rows[i].info.name.as_str()));
    let text = search::search_result(&rows, &hits);
    Ok((
        CallToolResult::success(vec![ContentBlock::text(text)]),
        changed,
    ))
}
