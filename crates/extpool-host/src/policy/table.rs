//! [`ToolTable`]: one view's policy compiled over one catalog revision —
//! every tool its model sees, in list order, under the name it is listed
//! by, and an O(1) map from every accepted name to its row or to why it is
//! refused. The rows are shared by every view of the same front end and
//! revision; a view's own refusals (a session's grants) sit beside them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use extpool_catalog::{BuiltinTool, CatalogRevision};
use serde_json::Value;

use super::Refusal;
use crate::info::ModelTool;
use crate::search::{SearchableTool, ToolIndex};

/// One tool a view's model sees.
#[derive(Debug, Clone)]
pub struct Row {
    /// The tool (catalog name, alias, server, schema).
    pub tool: ModelTool,
    /// The name it is listed by (the catalog name, its alias, or its own
    /// name for an unprefixed server).
    pub listed: String,
    /// Deferred when its table defers ([`ToolTable::is_deferred`]):
    /// callable, but listed only once a search loaded it.
    pub deferrable: bool,
    /// Which built-in it is, for one.
    pub builtin: Option<BuiltinTool>,
}

impl SearchableTool for Row {
    fn name(&self) -> &str {
        &self.tool.name
    }
    fn model_name(&self) -> &str {
        &self.listed
    }
    fn description(&self) -> &str {
        &self.tool.description
    }
    fn input_schema(&self) -> &Value {
        &self.tool.input_schema
    }
    fn is_builtin(&self) -> bool {
        self.tool.builtin
    }
}

/// What a name resolves to in a table.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Resolved<'a> {
    /// A tool the model may call.
    Tool(&'a Row),
    /// A name the table knows and refuses, and why.
    Refused(Refusal),
    /// A name nothing here has.
    Unknown,
}

/// An accepted name's entry.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    Row(u32),
    Refused(Refusal),
}

/// The rows of a front end's policy over one revision, shared by every
/// view that refines it.
pub(crate) struct Rows {
    pub rows: Vec<Row>,
    pub names: HashMap<Box<str>, Entry>,
    /// What each row costs in the context, when the policy defers.
    pub costs: Vec<usize>,
    /// The deferral budget, when the policy defers.
    pub budget: Option<usize>,
    pub index: OnceLock<ToolIndex>,
}

/// A policy compiled over one revision; immutable, shared as `Arc`.
pub struct ToolTable {
    pub(crate) revision: Arc<CatalogRevision>,
    pub(crate) rows: Arc<Rows>,
    /// This view's own refusals, by every name of the tools they take out.
    pub(crate) refused: HashMap<Box<str>, Refusal>,
    /// The MCP prompts (by catalog name) a caller's rules refuse here.
    pub(crate) refused_commands: HashMap<Box<str>, Refusal>,
    /// The rows this view's refusals take out.
    pub(crate) hidden: HashSet<u32>,
    pub(crate) deferring: bool,
}

impl std::fmt::Debug for ToolTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolTable")
            .field("revision", &self.revision.number())
            .field("rows", &self.rows.rows.len())
            .field("hidden", &self.hidden.len())
            .field("deferring", &self.deferring)
            .finish()
    }
}

impl ToolTable {
    /// The revision it was compiled from (pinned with it).
    pub fn revision(&self) -> &Arc<CatalogRevision> {
        &self.revision
    }

    /// The rows by index, shared with the views of the same front end:
    /// those [`ToolTable::visible`] skips are refused here. Indices from
    /// this table's iterators index it.
    pub fn rows(&self) -> &[Row] {
        &self.rows.rows
    }

    /// Every tool the model sees, listed or deferred, in list order: not
    /// the tools their servers offer only to their MCP Apps
    /// ([`crate::ToolDetails::is_app_only`]), which stay callable by name
    /// ([`ToolTable::resolve`]).
    pub fn visible(&self) -> impl Iterator<Item = (usize, &Row)> + '_ {
        self.rows.rows.iter().enumerate().filter(|(i, r)| {
            !self.hidden.contains(&(*i as u32))
                && !r.tool.details.is_app_only()
                && (self.deferring || r.builtin != Some(BuiltinTool::ToolSearch))
        })
    }

    /// True when some tools are deferred (then `ToolSearch` is callable).
    pub fn is_deferring(&self) -> bool {
        self.deferring
    }

    /// Whether `row` is deferred here.
    pub fn is_deferred(&self, row: &Row) -> bool {
        self.deferring && row.deferrable
    }

    /// What `name` (a catalog name, an alias, a listed or built-in name)
    /// is here: O(1), never a listing.
    pub fn resolve(&self, name: &str) -> Resolved<'_> {
        if let Some(refusal) = self.refused.get(name) {
            return Resolved::Refused(refusal.clone());
        }
        match self.rows.names.get(name) {
            Some(Entry::Row(i)) => match self.rows.rows.get(*i as usize) {
                Some(row) if row.builtin != Some(BuiltinTool::ToolSearch) || self.deferring => {
                    Resolved::Tool(row)
                }
                _ => Resolved::Unknown,
            },
            Some(Entry::Refused(refusal)) => Resolved::Refused(refusal.clone()),
            // Denied names stay in the revision, which says by which rule.
            None => match self.revision.denied(name) {
                Some(decision) => Resolved::Refused(Refusal::Denied {
                    name: name.to_owned(),
                    rule: decision.reason(),
                }),
                None => Resolved::Unknown,
            },
        }
    }

    /// The row `name` resolves to, if it may be called.
    pub fn row(&self, name: &str) -> Option<&Row> {
        match self.resolve(name) {
            Resolved::Tool(row) => Some(row),
            _ => None,
        }
    }

    /// Why MCP prompt `name` (its catalog name, with or without `/`) may
    /// not be listed, got or completed here, when a caller's rules refuse
    /// it (the gateway's own rules leave what they deny out of the
    /// revision).
    pub fn prompt_refusal(&self, name: &str) -> Option<&Refusal> {
        self.refused_commands.get(name.trim_start_matches('/'))
    }

    /// Why a call of a built-in that reaches tool `tool` of server `server`
    /// by its server's names (`CallMcpWithQuery`) may not reach it, when it
    /// may not: a built-in reaches no further than a call by name would.
    /// `None` also when the revision has no such tool (the built-in says so
    /// itself).
    pub fn refusal_through(&self, server: &str, tool: &str) -> Option<Refusal> {
        let target = self.revision.remote_tool(server, tool)?;
        match self.resolve(&target.name) {
            Resolved::Refused(refusal) => Some(refusal),
            _ => None,
        }
    }

    /// The remote tool a call of `row` with `args` reaches through it,
    /// when `row` is a built-in that calls another tool by its server's
    /// names (`CallMcpWithQuery`): what the guardrails and the rate limits
    /// count the call as, besides the built-in itself.
    pub fn reached_through(
        &self,
        row: &Row,
        args: &serde_json::Map<String, Value>,
    ) -> Option<&extpool_catalog::CatalogTool> {
        if row.builtin != Some(BuiltinTool::CallMcpWithQuery) {
            return None;
        }
        let arg = |key: &str| args.get(key).and_then(Value::as_str);
        self.revision.remote_tool(arg("server")?, arg("tool")?)
    }

    /// The rows listed for a consumer whose searches loaded the tools
    /// `is_loaded` says (by catalog name): every visible row but the
    /// deferred ones not loaded, and `ToolSearch` while some are, in list
    /// order.
    pub fn listed<'a>(
        &'a self,
        is_loaded: impl Fn(&str) -> bool + 'a,
    ) -> impl Iterator<Item = (usize, &'a Row)> + 'a {
        let some_deferred = self.deferring
            && self
                .visible()
                .any(|(_, r)| r.deferrable && !is_loaded(&r.tool.name));
        self.visible().filter(move |(_, r)| match r.builtin {
            Some(BuiltinTool::ToolSearch) => some_deferred,
            _ => !self.is_deferred(r) || is_loaded(&r.tool.name),
        })
    }

    /// Indices of the deferred rows a consumer has not loaded.
    pub fn deferred(&self, is_loaded: impl Fn(&str) -> bool) -> Vec<usize> {
        self.visible()
            .filter(|(_, r)| self.is_deferred(r) && !is_loaded(&r.tool.name))
            .map(|(i, _)| i)
            .collect()
    }

    /// The best `limit` matches of `query` among every tool but the
    /// built-ins and app-only tools (deferred or loaded: a search answers
    /// which tool fits), by row index; the index is built on first search
    /// and shared by every view of these rows.
    pub fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        let rows = &self.rows;
        let index = rows.index.get_or_init(|| {
            let searchable: Vec<usize> = (0..rows.rows.len())
                .filter(|&i| {
                    let tool = &rows.rows[i].tool;
                    !tool.builtin && !tool.details.is_app_only()
                })
                .collect();
            ToolIndex::build(&rows.rows, &searchable)
        });
        let mut hits = index.search(query, limit.saturating_add(self.hidden.len()));
        hits.retain(|i| !self.hidden.contains(&(*i as u32)));
        hits.truncate(limit);
        hits
    }
}
