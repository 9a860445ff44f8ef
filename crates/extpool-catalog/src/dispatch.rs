//! Calling a tool on a pinned revision, and the errors a caller can get.

use std::sync::Arc;

use extpool_core::{ExtensionError, ToolResult};
use serde_json::{Map, Value};

use crate::builtins;
use crate::fetch::FetchError;
use crate::jq::JqError;
use crate::revision::{CatalogRevision, CatalogTool, ToolRef};
use crate::shaping::{self, StructuredTooLarge};

/// Why a call through the catalog failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool has this name (or alias) in the pinned revision.
    #[error("unknown tool {name:?}")]
    UnknownTool {
        /// The name as called.
        name: String,
    },
    /// The tool exists but permission rules deny it.
    #[error("tool {name:?} is denied by {reason}")]
    Denied {
        /// The catalog name.
        name: String,
        /// The rule (or default policy) that denied it.
        reason: String,
    },
    /// The arguments do not fit the tool.
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong.
        message: String,
    },
    /// No such server in the pinned revision.
    #[error("unknown MCP server {server:?}")]
    UnknownServer {
        /// The server as named.
        server: String,
    },
    /// The server has no such resource.
    #[error("server {server:?} has no resource {uri:?}")]
    ResourceNotFound {
        /// The server.
        server: String,
        /// The URI.
        uri: String,
    },
    /// The source failed (transport, protocol, timeout, unavailable). The
    /// message is the tool's name and the source's error, which names its
    /// server (the tool's name does too), so the server is said once.
    #[error("{tool}: {error}")]
    Source {
        /// The tool (catalog name) or built-in.
        tool: String,
        /// The server id.
        server: String,
        /// The source's error (shown in this message, so not a `source()`:
        /// each cause once).
        error: ExtensionError,
    },
    /// The structured result is larger than the limit (never truncated).
    #[error(transparent)]
    StructuredTooLarge(#[from] StructuredTooLarge),
    /// The jq filter of `CallMcpWithQuery` failed.
    #[error("CallMcpWithQuery on {tool}: {error}")]
    Query {
        /// The queried tool.
        tool: String,
        /// The filter's error (with its position for syntax errors; shown in
        /// the message, so not a `source()`: each cause once).
        error: JqError,
    },
    /// `FetchMcpResource` refused or failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
}

impl CallError {
    /// True when the name is unknown in the pinned revision.
    pub fn is_unknown_tool(&self) -> bool {
        matches!(self, Self::UnknownTool { .. })
    }

    /// True when permission rules denied the call.
    pub fn is_denied(&self) -> bool {
        matches!(self, Self::Denied { .. })
    }

    /// True when the result was structured and too large.
    pub fn is_structured_too_large(&self) -> bool {
        matches!(self, Self::StructuredTooLarge(_))
    }

    /// True when the source (server) failed.
    pub fn is_source_error(&self) -> bool {
        matches!(self, Self::Source { .. })
    }

    /// The jq error, for a failed `CallMcpWithQuery` filter.
    pub fn query_error(&self) -> Option<&JqError> {
        match self {
            Self::Query { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The fetch error, for a refused or failed `FetchMcpResource`.
    pub fn fetch_error(&self) -> Option<&FetchError> {
        match self {
            Self::Fetch(e) => Some(e),
            _ => None,
        }
    }

    /// The error as a tool-error result, for front ends that hand it to a model.
    pub fn to_tool_result(&self) -> ToolResult {
        ToolResult::error(self.to_string())
    }
}

/// Calls a remote tool of `revision` and returns its result unshaped
/// (`CallMcpWithQuery` filters the whole result before shaping).
pub(crate) async fn call_remote_raw(
    revision: &CatalogRevision,
    tool: &CatalogTool,
    args: Map<String, Value>,
) -> Result<ToolResult, CallError> {
    let capability = Arc::clone(&tool.capability);
    let mcp = capability.mcp().ok_or_else(|| CallError::UnknownServer {
        server: tool.server.to_string(),
    })?;
    tracing::debug!(tool = %tool.name, server = %tool.server, revision = revision.number(), "call");
    mcp.call_tool(tool.original(), args)
        .await
        .map_err(|error| CallError::Source {
            tool: tool.name.clone(),
            server: tool.server.to_string(),
            error,
        })
}

/// Calls a remote tool of `revision` and shapes its result.
pub(crate) async fn call_remote(
    revision: &CatalogRevision,
    tool: &CatalogTool,
    args: Map<String, Value>,
) -> Result<ToolResult, CallError> {
    let result = call_remote_raw(revision, tool, args).await?;
    Ok(shaping::shape(
        &tool.name,
        result,
        tool.entry.output_schema.is_some(),
        &revision.services.limits,
    )?)
}

impl CatalogRevision {
    /// Calls the tool `name` (canonical name or alias) with `args`, on this
    /// revision: its schemas, its dispatch targets, its permissions.
    pub async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, CallError> {
        match self.tool(name) {
            Some(ToolRef::Remote(tool)) => call_remote(self, tool, args).await,
            Some(ToolRef::Builtin(b)) => builtins::call(self, b, args).await,
            None => match self.denied(name) {
                Some(decision) => Err(CallError::Denied {
                    name: name.to_owned(),
                    reason: decision.reason(),
                }),
                None => Err(CallError::UnknownTool {
                    name: name.to_owned(),
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error and its `source()` chain, joined as a renderer that walks
    /// the chain shows them (anyhow's `{:#}`, a log's `error.sources`).
    fn walked(e: &(dyn std::error::Error + 'static)) -> String {
        std::iter::successors(Some(e), |e| e.source())
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(": ")
    }

    #[test]
    fn a_jq_error_is_shown_once_by_any_renderer() {
        let e = CallError::Query {
            tool: "mcp__s__t".into(),
            error: JqError::OutputTooLarge { limit: 100_000 },
        };
        let text =
            "CallMcpWithQuery on mcp__s__t: jq output exceeds 100000 bytes; select fewer fields";
        assert_eq!(e.to_string(), text);
        assert_eq!(walked(&e), text);
        let listing = crate::status::SourceError::Listing {
            operation: "list_tools",
            error: ExtensionError::InvalidArgument("bad".into()),
        };
        assert_eq!(walked(&listing), listing.to_string());
    }
}
