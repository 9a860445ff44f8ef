//! Tool search: deferred loading of tool schemas.
//!
//! The most common complaint about MCP is schemas eating the context
//! window. Above a configurable schema budget, tools are *deferred*: the
//! model is given their names and one-line descriptions and a search tool
//! ([`SEARCH_TOOL`]); a deferred tool's schema is loaded when a search
//! returns it or when the model calls it by name. This is how Claude Code,
//! ToolHive and Docker's MCP gateway answer it. Ranking is BM25 over tool
//! names, descriptions and argument names: no model is needed, and the same
//! query always ranks the same way.
//!
//! The rules live here once, so that agent runtimes and gateway sessions
//! defer alike: [`schema_cost`] (what one tool costs in the context),
//! [`plan`] (which tools are deferred), [`ToolIndex`] (the ranking),
//! [`deferred_listing`] and [`search_result`] (what the model reads), and
//! [`SearchQuery`] (the search tool's arguments, bounded).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::info::{ModelTool, ToolInfo};

mod index;

pub use index::{ToolIndex, terms};

/// The name of the search tool the model is given when tools are deferred.
pub const SEARCH_TOOL: &str = extpool_catalog::BuiltinTool::ToolSearch.name();
/// Longest query accepted, in bytes (longer ones are cut at a char boundary).
pub const MAX_QUERY_BYTES: usize = 1024;
/// Most query terms used (the rest are ignored).
pub const MAX_QUERY_TERMS: usize = 32;
/// Most results one search returns.
pub const MAX_RESULTS: usize = extpool_catalog::builtins::MAX_SEARCH_RESULTS;
/// Longest one-line description in a deferred listing, in characters.
pub const ONE_LINE_CHARS: usize = 80;

/// A tool as tool search sees it.
pub trait SearchableTool {
    /// Its canonical catalog name (`mcp__<server>__<tool>`).
    fn name(&self) -> &str;
    /// The name the model calls it by (the provider-safe alias).
    fn model_name(&self) -> &str;
    /// What it does.
    fn description(&self) -> &str;
    /// JSON Schema of its arguments.
    fn input_schema(&self) -> &Value;
    /// True for the catalog's built-ins (never deferred: small and general).
    fn is_builtin(&self) -> bool;
}

/// Both row types front ends and agents hold are searchable.
macro_rules! searchable {
    ($($row:ty),+) => {$(
        impl SearchableTool for $row {
            fn name(&self) -> &str {
                &self.name
            }
            fn model_name(&self) -> &str {
                &self.alias
            }
            fn description(&self) -> &str {
                &self.description
            }
            fn input_schema(&self) -> &Value {
                &self.input_schema
            }
            fn is_builtin(&self) -> bool {
                self.builtin
            }
        }
    )+};
}

searchable!(ToolInfo, ModelTool);

/// When and how tools are deferred.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeferralConfig {
    /// Above this many bytes of tool definitions (as a provider receives
    /// them), tools are deferred. `usize::MAX` never defers.
    pub budget_bytes: usize,
    /// Tools never deferred: catalog names, or prefixes ending in `*`
    /// (`mcp__github__*`).
    pub keep: Vec<String>,
    /// Results per search when the model does not ask for fewer (at most
    /// [`MAX_RESULTS`]).
    pub max_results: usize,
}

impl Default for DeferralConfig {
    /// 40,000 bytes (about 10,000 tokens at 4 bytes per token), 5 results.
    fn default() -> Self {
        Self {
            budget_bytes: 40_000,
            keep: Vec::new(),
            max_results: 5,
        }
    }
}

impl DeferralConfig {
    /// A configuration that never defers.
    pub fn never() -> Self {
        Self {
            budget_bytes: usize::MAX,
            ..Self::default()
        }
    }

    /// Whether `name` is one of the tools never deferred.
    pub fn keeps(&self, name: &str) -> bool {
        self.keep.iter().any(|k| match k.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => k == name,
        })
    }
}

/// The definition of `tool` as a provider receives it (OpenAI-style
/// function: name, description, parameters).
pub fn definition(tool: &impl SearchableTool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.model_name(),
            "description": tool.description(),
            "parameters": tool.input_schema(),
        }
    })
}

/// [`definition`], borrowed: serialized without copying the schema.
#[derive(Serialize)]
struct Definition<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// Counts the bytes written to it.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `tool` costs in the context: the bytes of its [`definition`]
/// (counted while serializing; nothing is copied).
pub fn schema_cost(tool: &impl SearchableTool) -> usize {
    let definition = Definition {
        kind: "function",
        function: Function {
            name: tool.model_name(),
            description: tool.description(),
            parameters: tool.input_schema(),
        },
    };
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, &definition) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// Which tools are offered with their schemas and which are deferred.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Indices of the tools offered with their schemas, in the given order.
    pub loaded: Vec<usize>,
    /// Indices of the deferred tools, in the given order.
    pub deferred: Vec<usize>,
    /// Bytes of every tool's definition.
    pub total_bytes: usize,
}

impl Plan {
    /// True when some tools are deferred (the search tool is then offered).
    pub fn is_deferring(&self) -> bool {
        !self.deferred.is_empty()
    }
}

/// Decides which of `tools` are deferred: none while their definitions
/// (`costs`, one per tool, from [`schema_cost`]) fit in the budget;
/// otherwise every tool except built-ins, those the configuration keeps,
/// and those already loaded (`is_loaded`, by catalog name).
pub fn plan<T: SearchableTool>(
    tools: &[T],
    costs: &[usize],
    config: &DeferralConfig,
    is_loaded: impl Fn(&str) -> bool,
) -> Plan {
    let total_bytes: usize = costs.iter().sum();
    if total_bytes <= config.budget_bytes {
        return Plan {
            loaded: (0..tools.len()).collect(),
            deferred: Vec::new(),
            total_bytes,
        };
    }
    let (loaded, deferred) = (0..tools.len()).partition(|&i| {
        let t = &tools[i];
        t.is_builtin() || config.keeps(t.name()) || is_loaded(t.name())
    });
    Plan {
        loaded,
        deferred,
        total_bytes,
    }
}

/// The first sentence (or line) of `description`, at most
/// [`ONE_LINE_CHARS`] characters.
pub fn one_line(description: &str) -> String {
    let line = description.trim().lines().next().unwrap_or("").trim();
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    if sentence.chars().count() <= ONE_LINE_CHARS {
        return sentence.to_owned();
    }
    let mut out: String = sentence.chars().take(ONE_LINE_CHARS - 1).collect();
    out.push('…');
    out
}

/// What the model is told about deferred tools: their names and one-line
/// descriptions, and how to load them.
pub fn deferred_listing<T: SearchableTool>(tools: &[T], deferred: &[usize]) -> String {
    let mut out = format!(
        "<deferred-tools>\nThese tools are available, but their schemas are not loaded. \
         Call {SEARCH_TOOL} with keywords to load the ones you need (their schemas come back and \
         they become callable), or call one by name.\n"
    );
    for &i in deferred {
        let t = &tools[i];
        out.push_str("- ");
        out.push_str(t.model_name());
        let line = one_line(t.description());
        if !line.is_empty() {
            out.push_str(": ");
            out.push_str(&line);
        }
        out.push('\n');
    }
    out.push_str("</deferred-tools>");
    out
}

/// The search tool: its name, description and argument schema (its
/// definition is the catalog's, with the other built-ins).
pub fn search_tool() -> (&'static str, &'static str, Value) {
    let entry = extpool_catalog::BuiltinTool::ToolSearch.entry();
    (
        SEARCH_TOOL,
        entry.description.as_str(),
        (*entry.input_schema).clone(),
    )
}

/// The search tool's arguments, bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The keywords (at most [`MAX_QUERY_BYTES`]).
    pub query: String,
    /// Most results (1 to [`MAX_RESULTS`]).
    pub limit: usize,
}

impl SearchQuery {
    /// Reads the search tool's arguments; `default_limit` applies when the
    /// model gives none. The error says what is wrong, for the model.
    pub fn parse(args: &Map<String, Value>, default_limit: usize) -> Result<Self, String> {
        let query = match args.get("query") {
            Some(Value::String(q)) if !q.trim().is_empty() => q,
            Some(Value::String(_)) | None => {
                return Err(format!("{SEARCH_TOOL} needs a non-empty \"query\""));
            }
            Some(_) => return Err(format!("{SEARCH_TOOL}: \"query\" must be a string")),
        };
        let limit = match args.get("limit") {
            None | Some(Value::Null) => default_limit,
            Some(v) => match v.as_u64() {
                Some(n) => usize::try_from(n).unwrap_or(MAX_RESULTS),
                None => {
                    return Err(format!(
                        "{SEARCH_TOOL}: \"limit\" must be a positive integer"
                    ));
                }
            },
        };
        let mut end = query.len().min(MAX_QUERY_BYTES);
        while !query.is_char_boundary(end) {
            end -= 1;
        }
        Ok(Self {
            query: query[..end].to_owned(),
            limit: limit.clamp(1, MAX_RESULTS),
        })
    }
}

/// What a search returns to the model: each match with its full schema,
/// as JSON text.
pub fn search_result<T: SearchableTool>(tools: &[T], hits: &[usize]) -> String {
    let found: Vec<Value> = hits
        .iter()
        .map(|&i| {
            let t = &tools[i];
            json!({
                "name": t.model_name(),
                "description": t.description(),
                "input_schema": t.input_schema(),
            })
        })
        .collect();
    if found.is_empty() {
        return "No deferred tool matches; try other keywords.".to_owned();
    }
    serde_json::to_string_pretty(&json!({ "tools": found })).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str, args: &[(&str, &str)]) -> ToolInfo {
        let props: Map<String, Value> = args
            .iter()
            .map(|(n, d)| ((*n).to_owned(), json!({"type": "string", "description": d})))
            .collect();
        ToolInfo {
            name: name.into(),
            alias: name.into(),
            server: "s".into(),
            tool: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": props}),
            builtin: false,
            plugin: None,
            details: crate::info::ToolDetails::default(),
        }
    }

    #[test]
    fn terms_split_case_and_separators_and_share_stems() {
        assert_eq!(
            terms("ListMcpResources mcp__github__create_issue"),
            ["list", "mcp", "resourc", "mcp", "github", "creat", "issu"]
        );
        assert_eq!(terms("Creating issues"), terms("create issue"));
        assert_eq!(terms("the files of a repository"), ["file", "repository"]);
        assert!(terms("to the of").is_empty());
    }

    #[test]
    fn names_outrank_descriptions_and_unknown_words_match_nothing() {
        let tools = vec![
            tool("mcp__git__log", "Shows commits; mentions an issue", &[]),
            tool(
                "mcp__github__create_issue",
                "Opens a ticket",
                &[("title", "Issue title")],
            ),
            tool(
                "mcp__github__list_repos",
                "Lists repositories",
                &[("owner", "Account")],
            ),
        ];
        let all: Vec<usize> = (0..tools.len()).collect();
        let index = ToolIndex::build(&tools, &all);
        assert_eq!(index.search("create an issue", 5)[0], 1);
        assert_eq!(index.search("repositories of an owner", 5)[0], 2);
        assert!(index.search("weather forecast", 5).is_empty());
        assert_eq!(index.search("issue", 1).len(), 1);
        // Bounded: an enormous query is cut, never refused.
        let long = "issue ".repeat(10_000);
        assert_eq!(index.search(&long, 50).len(), 2);
    }

    #[test]
    fn nothing_is_deferred_within_the_budget_and_everything_but_kept_and_loaded_above() {
        let mut tools = vec![
            tool("mcp__a__one", "One", &[]),
            tool("mcp__a__two", "Two", &[]),
            tool("mcp__b__three", "Three", &[]),
        ];
        tools.push(ToolInfo {
            builtin: true,
            ..tool("CallMcpWithQuery", "Query", &[])
        });
        let costs: Vec<usize> = tools.iter().map(schema_cost).collect();
        assert_eq!(
            costs[0],
            serde_json::to_vec(&definition(&tools[0])).unwrap().len()
        );
        let total: usize = costs.iter().sum();
        let roomy = DeferralConfig {
            budget_bytes: total,
            ..DeferralConfig::default()
        };
        let p = plan(&tools, &costs, &roomy, |_| false);
        assert!(!p.is_deferring());
        assert_eq!(p.loaded, [0, 1, 2, 3]);
        let tight = DeferralConfig {
            budget_bytes: total - 1,
            keep: vec!["mcp__b__*".into()],
            ..DeferralConfig::default()
        };
        let p = plan(&tools, &costs, &tight, |name| name == "mcp__a__two");
        assert_eq!(p.loaded, [1, 2, 3]);
        assert_eq!(p.deferred, [0]);
        let listing = deferred_listing(&tools, &p.deferred);
        assert!(listing.contains("- mcp__a__one: One\n"), "{listing}");
        assert!(!listing.contains("properties"));
    }

    #[test]
    fn one_line_keeps_the_first_sentence_within_bounds() {
        assert_eq!(
            one_line("Creates an issue. Needs a repo."),
            "Creates an issue."
        );
        assert_eq!(one_line("First line\nsecond"), "First line");
        let long = "x".repeat(500);
        assert_eq!(one_line(&long).chars().count(), ONE_LINE_CHARS);
    }

    #[test]
    fn queries_are_checked_and_bounded() {
        let args = |v: Value| v.as_object().cloned().unwrap();
        assert!(SearchQuery::parse(&args(json!({})), 5).is_err());
        assert!(SearchQuery::parse(&args(json!({"query": " "})), 5).is_err());
        assert!(SearchQuery::parse(&args(json!({"query": 3})), 5).is_err());
        assert!(SearchQuery::parse(&args(json!({"query": "x", "limit": "a"})), 5).is_err());
        let q =
            SearchQuery::parse(&args(json!({"query": "é".repeat(2000), "limit": 900})), 5).unwrap();
        assert!(q.query.len() <= MAX_QUERY_BYTES);
        assert_eq!(q.limit, MAX_RESULTS);
        let q = SearchQuery::parse(&args(json!({"query": "issue"})), 5).unwrap();
        assert_eq!(q.limit, 5);
    }
}
