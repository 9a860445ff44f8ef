//! Tool search for gateway sessions (`extpool serve --tool-search`): the
//! agent library's deferral, offered to MCP clients.
//!
//! Which tools are deferred is the session's table's (the host's policy,
//! under the rules of [`extpool_host::search`], so that agents and gateway
//! sessions defer alike). Above the schema budget, `tools/list` shows the
//! tools that stay loaded (built-ins, those the configuration keeps, those
//! a search loaded on this connection) and `ToolSearch`, whose description
//! lists the deferred tools by name with one line each. A search returns
//! the best matches with their schemas, loads them for the connection and
//! tells its client the list changed; a deferred tool called by name works
//! at once (the table resolves it).

use std::collections::HashSet;

use extpool_host::ToolTable;
use extpool_host::catalog::BuiltinTool;
use extpool_host::search::{self, DeferralConfig, SearchQuery};
use parking_lot::Mutex;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, Tool};

use crate::convert;

/// The search tool's name; no server's tool is listed under it.
pub const SEARCH_TOOL: &str = search::SEARCH_TOOL;

/// Most tools one connection loads by searching (a bound on what a client
/// can make the gateway keep).
const MAX_LOADED: usize = 4096;

/// The catalog names a connection's searches loaded.
#[derive(Debug, Default)]
pub(crate) struct Loaded(Mutex<HashSet<String>>);

impl Loaded {
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

/// What `tools/list` shows of `table` on a connection that loaded
/// `loaded`: every listed row in order; `ToolSearch`, with the deferred
/// tools' listing in its description, only while some are not loaded.
pub(crate) fn listed(table: &ToolTable, loaded: &Loaded) -> Vec<Tool> {
    let set = loaded.0.lock();
    let is_loaded = |name: &str| set.contains(name);
    let deferred = match table.is_deferring() {
        true => table.deferred(is_loaded),
        false => Vec::new(),
    };
    table
        .listed(is_loaded)
        .filter_map(|(_, row)| {
            let mut tool = convert::tool(&row.tool, &row.listed);
            if row.builtin == Some(BuiltinTool::ToolSearch) {
                if deferred.is_empty() {
                    return None;
                }
                let listing = search::deferred_listing(table.rows(), &deferred);
                tool.description = Some(format!("{}\n\n{listing}", row.tool.description).into());
            }
            Some(tool)
        })
        .collect()
}

/// Answers a call of the search tool: the best deferred matches with their
/// schemas. Returns whether it loaded a tool the connection had not loaded
/// (its client is then told the list changed).
pub(crate) fn search(
    config: &DeferralConfig,
    table: &ToolTable,
    loaded: &Loaded,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<(CallToolResult, bool), ErrorData> {
    let query = SearchQuery::parse(args, config.max_results)
        .map_err(|message| ErrorData::invalid_params(message, None))?;
    let rows = table.rows();
    let hits: Vec<usize> = {
        let set = loaded.0.lock();
        let deferred = table.deferred(|name| set.contains(name));
        search::ToolIndex::build(rows, &deferred).search(&query.query, query.limit)
    };
    let changed = loaded.add(hits.iter().map(|&i| rows[i].tool.name.as_str()));
    let text = search::search_result(rows, &hits);
    Ok((
        CallToolResult::success(vec![ContentBlock::text(text)]),
        changed,
    ))
}
