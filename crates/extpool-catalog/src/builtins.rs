//! The built-in tools, the one list of them: the catalog's own
//! (`ListMcpResources`, `ReadMcpResource`, `FetchMcpResource`,
//! `CallMcpWithQuery`: their definitions and what they do on a pinned
//! revision), the gateway's (`ListMcpSources`, `RefreshMcpSources`, and
//! `CloseSession` on a durable session's endpoint) and tool search's
//! (`ToolSearch`). Every definition a model is given comes
//! from here; [`BuiltinTool::runner`] says who answers a call.
//! `CallMcpWithQuery` also comes in its two halves ([`Query`]), for a host
//! that checks the tool's result before the filter reads it.

use std::sync::{Arc, OnceLock};

use extpool_core::{ContentPart, ResourceBody, ResourceContent, ToolEntry, ToolResult};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::dispatch::CallError;
use crate::revision::{CatalogRevision, CatalogTool};
use crate::{jq, names, shaping};

/// A tool the catalog itself provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum BuiltinTool {
    /// Lists the resources of every (or one) server, from the pinned revision.
    ListMcpResources,
    /// Reads one resource from the server that owns it.
    ReadMcpResource,
    /// Fetches an `https` resource link under the address policy.
    FetchMcpResource,
    /// Calls a remote tool and filters its JSON result with jq.
    CallMcpWithQuery,
    /// The cached state of every source and of reconciliation (gateway).
    ListMcpSources,
    /// A reconciliation cycle, then the names active now granted (gateway).
    RefreshMcpSources,
    /// Closes the durable session whose endpoint it is called on (gateway).
    CloseSession,
    /// Searches the deferred tools and loads the best matches (tool search).
    ToolSearch,
}

/// Most results one `ToolSearch` call returns.
pub const MAX_SEARCH_RESULTS: usize = 20;

/// Who answers a call of a built-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Runner {
    /// The catalog, on the pinned revision ([`CatalogRevision::call`]).
    Catalog,
    /// The gateway (its sources, refresh and sessions).
    Gateway,
    /// Tool search, in whichever front end defers tools.
    Search,
}

impl BuiltinTool {
    /// Every built-in, in advertising order.
    pub const ALL: [BuiltinTool; 8] = [
        Self::ListMcpResources,
        Self::ReadMcpResource,
        Self::FetchMcpResource,
        Self::CallMcpWithQuery,
        Self::ListMcpSources,
        Self::RefreshMcpSources,
        Self::CloseSession,
        Self::ToolSearch,
    ];

    /// The built-ins a revision advertises and runs itself.
    pub const CATALOG: [BuiltinTool; 4] = [
        Self::ListMcpResources,
        Self::ReadMcpResource,
        Self::FetchMcpResource,
        Self::CallMcpWithQuery,
    ];

    /// Who answers a call of it.
    pub fn runner(self) -> Runner {
        match self {
            Self::ListMcpSources | Self::RefreshMcpSources | Self::CloseSession => Runner::Gateway,
            Self::ToolSearch => Runner::Search,
            _ => Runner::Catalog,
        }
    }

    /// Its catalog name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ListMcpResources => "ListMcpResources",
            Self::ReadMcpResource => "ReadMcpResource",
            Self::FetchMcpResource => "FetchMcpResource",
            Self::CallMcpWithQuery => "CallMcpWithQuery",
            Self::ListMcpSources => "ListMcpSources",
            Self::RefreshMcpSources => "RefreshMcpSources",
            Self::CloseSession => "CloseSession",
            Self::ToolSearch => "ToolSearch",
        }
    }

    /// The built-in whose catalog name is `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The servers a call with `arguments` works on, by its `server`
    /// argument: so that a front end starts only that one.
    pub fn servers<'a>(self, arguments: &'a Map<String, Value>) -> BuiltinServers<'a> {
        let named = arguments.get("server").and_then(Value::as_str);
        match (self, named) {
            (Self::ReadMcpResource | Self::CallMcpWithQuery, None) => BuiltinServers::Unnamed,
            (Self::ListMcpResources | Self::ReadMcpResource | Self::CallMcpWithQuery, Some(s)) => {
                BuiltinServers::One(s)
            }
            _ => BuiltinServers::Every,
        }
    }

    /// Its definition (description and input schema), shared.
    pub fn entry(self) -> &'static ToolEntry {
        static ENTRIES: OnceLock<[ToolEntry; BuiltinTool::ALL.len()]> = OnceLock::new();
        let entries = ENTRIES.get_or_init(|| BuiltinTool::ALL.map(definition));
        &entries[self as usize]
    }
}

/// The servers one call of a built-in works on ([`BuiltinTool::servers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinServers<'a> {
    /// Every server (`ListMcpResources` without `server`; the fetch, which
    /// names none).
    Every,
    /// The server its `server` argument names.
    One(&'a str),
    /// None: its `server` argument, which it needs, is missing.
    Unnamed,
}

fn definition(b: BuiltinTool) -> ToolEntry {
    let (description, schema) = match b {
        BuiltinTool::ListMcpResources => (
            "List the resources MCP servers expose (URI, name, description, MIME type). \
             Optionally only those of one server.",
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "Only this server's resources."}
                },
                "additionalProperties": false
            }),
        ),
        BuiltinTool::ReadMcpResource => (
            "Read one resource from the MCP server that owns it.",
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The server that owns the resource."},
                    "uri": {"type": "string", "description": "The resource URI."}
                },
                "required": ["server", "uri"],
                "additionalProperties": false
            }),
        ),
        BuiltinTool::FetchMcpResource => (
            "Fetch an https resource link returned by a tool. Private, loopback, link-local and \
             cloud-metadata addresses are refused. For other URI schemes use ReadMcpResource.",
            json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "An https URL."}
                },
                "required": ["url"],
                "additionalProperties": false
            }),
        ),
        BuiltinTool::CallMcpWithQuery => (
            "Call an MCP tool and apply a jq filter to its JSON result before it enters context. \
             Use it when a tool's structured result is too large.",
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The server of the tool."},
                    "tool": {"type": "string", "description": "The tool's name on that server."},
                    "args": {"type": "object", "description": "The tool's arguments."},
                    "jq_filter": {"type": "string", "description": "A jq expression selecting the fields needed."}
                },
                "required": ["server", "tool", "jq_filter"],
                "additionalProperties": false
            }),
        ),
        BuiltinTool::ListMcpSources => (
            "Lists every MCP source (configured, per-session and discovered servers, skill roots, \
             discovery sources such as ToolHive with their last success, last error and staleness) \
             with its cached state, the catalog revision and reconciliation status. Never contacts \
             a server.",
            json!({"type": "object", "properties": {}}),
        ),
        BuiltinTool::RefreshMcpSources => (
            "Reconciles MCP sources now and grants this session the tool names active after it \
             (a union: nothing is taken away). Reports the revision it pinned and what changed.",
            json!({"type": "object", "properties": {}}),
        ),
        BuiltinTool::CloseSession => (
            "Closes this session when you no longer need it: its own MCP servers stop and \
             the session is forgotten, as DELETE /v1/sessions/{id} does. Nothing of it can be \
             called afterwards.",
            json!({"type": "object", "properties": {}}),
        ),
        BuiltinTool::ToolSearch => (
            "Searches the deferred tools by keywords (tool names, descriptions and argument \
             names) and loads the best matches: their full schemas come back and they become \
             callable.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords describing the tool you need"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS, "description": "Most results"},
                },
                "required": ["query"],
            }),
        ),
    };
    ToolEntry::new(b.name(), description, schema)
}

/// `args` as built-in `tool`'s arguments, or the error naming what is wrong.
pub(crate) fn parse_args<T: for<'de> Deserialize<'de>>(
    tool: BuiltinTool,
    args: Map<String, Value>,
) -> Result<T, CallError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| CallError::InvalidArguments {
        tool: tool.name().to_owned(),
        message: e.to_string(),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    server: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    server: String,
    uri: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    url: String,
}

/// Runs a built-in on `revision`.
pub(crate) async fn call(
    revision: &CatalogRevision,
    tool: BuiltinTool,
    args: Map<String, Value>,
) -> Result<ToolResult, CallError> {
    let limits = &revision.services.limits;
    let result = match tool {
        BuiltinTool::ListMcpResources => list(revision, parse_args(tool, args)?)?,
        BuiltinTool::ReadMcpResource => read(revision, parse_args(tool, args)?).await?,
        BuiltinTool::FetchMcpResource => fetch(revision, parse_args(tool, args)?).await?,
        BuiltinTool::CallMcpWithQuery => return query(revision, args).await,
        // Answered by the front end that lists them, never by a revision.
        _ => {
            return Err(CallError::UnknownTool {
                name: tool.name().to_owned(),
            });
        }
    };
    Ok(shaping::shape(tool.name(), result, false, limits)?)
}

fn list(revision: &CatalogRevision, args: ListArgs) -> Result<ToolResult, CallError> {
    if let Some(server) = &args.server
        && revision.source(server).is_none()
    {
        return Err(CallError::UnknownServer {
            server: server.clone(),
        });
    }
    let resources: Vec<Value> = revision
        .all_resources()
        .filter(|r| args.server.as_deref().is_none_or(|s| s == &*r.server))
        .map(|r| {
            json!({
                "server": r.server,
                "uri": r.entry.uri,
                "name": r.entry.name,
                "description": r.entry.description,
                "mimeType": r.entry.mime_type,
            })
        })
        .collect();
    Ok(json_result(json!({ "resources": resources })))
}

/// `value` as a result: its JSON as text and as structured content.
fn json_result(value: Value) -> ToolResult {
    ToolResult {
        parts: vec![ContentPart::Text {
            text: value.to_string(),
        }],
        structured: Some(value),
        is_error: false,
        as_sent: None,
    }
}

async fn read(revision: &CatalogRevision, args: ReadArgs) -> Result<ToolResult, CallError> {
    let source = revision
        .source(&args.server)
        .ok_or_else(|| CallError::UnknownServer {
            server: args.server.clone(),
        })?;
    let capability = Arc::clone(&source.capability);
    let mcp = capability.mcp().ok_or_else(|| CallError::UnknownServer {
        server: args.server.clone(),
    })?;
    let content = mcp
        .read_resource(&args.uri)
        .await
        .map_err(|error| CallError::Source {
            tool: BuiltinTool::ReadMcpResource.name().to_owned(),
            server: args.server.clone(),
            error,
        })?
        .ok_or_else(|| CallError::ResourceNotFound {
            server: args.server.clone(),
            uri: args.uri.clone(),
        })?;
    Ok(resource_result(content))
}

/// Text content becomes a text part (so it is bounded like text); bytes stay a resource.
fn resource_result(content: ResourceContent) -> ToolResult {
    let part = match content.body {
        ResourceBody::Text(text) => ContentPart::Text { text },
        ResourceBody::Blob(_) => ContentPart::Resource { resource: content },
    };
    ToolResult {
        parts: vec![part],
        structured: None,
        is_error: false,
        as_sent: None,
    }
}

fn is_textual(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else {
        return false;
    };
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime.starts_with("text/")
        || matches!(
            mime.as_str(),
            "application/json" | "application/xml" | "application/javascript" | "application/yaml"
        )
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
}

async fn fetch(revision: &CatalogRevision, args: FetchArgs) -> Result<ToolResult, CallError> {
    let fetched = revision.services.fetcher.fetch(&args.url).await?;
    let mime = fetched
        .content_type
        .as_deref()
        .map(|c| c.split(';').next().unwrap_or(c).trim().to_owned());
    let content = if is_textual(fetched.content_type.as_deref()) {
        let mut text = String::from_utf8_lossy(&fetched.body).into_owned();
        if let Some(cut) = fetched.truncated_bytes {
            let total = fetched.body.len() as u64 + cut;
            text.push_str(&format!(
                "\n\n[truncated: at least {cut} of {total}+ bytes omitted]"
            ));
        }
        ResourceContent::text(fetched.url, mime, text)
    } else {
        ResourceContent {
            uri: fetched.url,
            mime_type: mime,
            body: ResourceBody::Blob(fetched.body),
            meta: None,
        }
    };
    Ok(resource_result(content))
}

// `CallMcpWithQuery` in its two halves: the remote tool it names called
// ([`Query::call`]), then its jq filter run over the tool's result
// ([`Query::filter`]). A host that checks results (guardrails) checks the
// tool's result between the halves, so that the filter only ever reads
// what the checks left (a filter can encode, slice or test what a rule
// would have redacted), and the filter's output after them.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryArgs {
    server: String,
    tool: String,
    #[serde(default)]
    args: Map<String, Value>,
    jq_filter: String,
}

/// One `CallMcpWithQuery` call on a pinned revision: the tool it reaches
/// (the permission rules applied as to a call by name), its arguments and
/// its filter.
pub struct Query<'r> {
    revision: &'r CatalogRevision,
    tool: &'r CatalogTool,
    args: Map<String, Value>,
    filter: String,
}

impl std::fmt::Debug for Query<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("tool", &self.tool.name)
            .field("filter", &self.filter)
            .finish()
    }
}

impl CatalogRevision {
    /// `CallMcpWithQuery` called with `args`, its tool resolved on this
    /// revision: the error its arguments, an unknown server or tool, or a
    /// permission rule gets.
    pub fn query(&self, args: Map<String, Value>) -> Result<Query<'_>, CallError> {
        let args: QueryArgs = parse_args(BuiltinTool::CallMcpWithQuery, args)?;
        let source = self
            .source(&args.server)
            .ok_or_else(|| CallError::UnknownServer {
                server: args.server.clone(),
            })?;
        // Build the catalog name from the original parts (never parse one)
        // and apply the same permission rules as a direct call.
        let name = names::canonical_name(&source.namespace, &args.tool).map_err(|e| {
            CallError::InvalidArguments {
                tool: BuiltinTool::CallMcpWithQuery.name().to_owned(),
                message: e.to_string(),
            }
        })?;
        if let Some(decision) = self.denied(&name) {
            return Err(CallError::Denied {
                name,
                reason: decision.reason(),
            });
        }
        let tool = self
            .remote_tool(&args.server, &args.tool)
            .ok_or(CallError::UnknownTool { name })?;
        Ok(Query {
            revision: self,
            tool,
            args: args.args,
            filter: args.jq_filter,
        })
    }
}

impl<'r> Query<'r> {
    /// The tool it reaches.
    pub fn tool(&self) -> &'r CatalogTool {
        self.tool
    }

    /// Calls the tool with the query's arguments (once: they are taken);
    /// its result whole, unshaped, as the filter reads it.
    pub async fn call(&mut self) -> Result<ToolResult, CallError> {
        let args = std::mem::take(&mut self.args);
        crate::dispatch::call_remote_raw(self.revision, self.tool, args).await
    }

    /// Runs the filter over `result`, the tool's: its output as the
    /// query's result. A tool error is passed on unfiltered (shaped like
    /// any tool error): [`Query::filters`] says which a result is.
    pub async fn filter(&self, result: ToolResult) -> Result<ToolResult, CallError> {
        let limits = &self.revision.services.limits;
        if !Self::filters(&result) {
            return Ok(shaping::shape_error(result, limits));
        }
        let input = jq::input::query_input(&result);
        let outputs = jq::evaluate_async(&self.filter, &input, &self.revision.services.jq)
            .await
            .map_err(|error| CallError::Query {
                tool: self.tool.name.clone(),
                error,
            })?;
        let value = match outputs.len() {
            1 => outputs.into_iter().next().unwrap_or(Value::Null),
            _ => Value::Array(outputs),
        };
        Ok(json_result(value))
    }

    /// Whether the filter runs over `result` (a tool error is passed on as
    /// it is).
    pub fn filters(result: &ToolResult) -> bool {
        !result.is_error
    }
}

/// `CallMcpWithQuery` on `revision` whole: the call, then the filter.
async fn query(
    revision: &CatalogRevision,
    args: Map<String, Value>,
) -> Result<ToolResult, CallError> {
    let mut query = revision.query(args)?;
    let result = query.call().await?;
    query.filter(result).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_valid_and_named() {
        for b in BuiltinTool::ALL {
            let e = b.entry();
            assert_eq!(e.name, b.name());
            assert_eq!(e.input_schema["type"], "object");
            assert!(names::is_provider_safe(b.name()));
            assert!(!b.name().starts_with(names::MCP_PREFIX));
        }
    }

    #[test]
    fn the_servers_a_call_works_on_come_from_its_server_argument() {
        let named = json!({"server": "gh", "tool": "t"});
        let named = named.as_object().unwrap();
        let none = Map::new();
        let b = |name| BuiltinTool::named(name).unwrap();
        assert_eq!(
            b("CallMcpWithQuery").servers(named),
            BuiltinServers::One("gh")
        );
        assert_eq!(b("ReadMcpResource").servers(&none), BuiltinServers::Unnamed);
        assert_eq!(b("ListMcpResources").servers(&none), BuiltinServers::Every);
        assert_eq!(
            b("ListMcpResources").servers(named),
            BuiltinServers::One("gh")
        );
        assert_eq!(b("FetchMcpResource").servers(named), BuiltinServers::Every);
        assert_eq!(BuiltinTool::named("mcp__gh__t"), None);
    }

    #[test]
    fn textual_types() {
        assert!(is_textual(Some("text/plain; charset=utf-8")));
        assert!(is_textual(Some("application/vnd.api+json")));
        assert!(!is_textual(Some("image/png")));
        assert!(!is_textual(None));
    }
}
