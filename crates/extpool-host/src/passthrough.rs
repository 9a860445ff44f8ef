//! What a front end relays to MCP servers whole, beyond tools and reads:
//! prompts with every message, resource templates, completions, resource
//! subscriptions and updates, and log levels. Each goes to the server the
//! pinned catalog revision routes it to, under the server's own names.

use std::sync::Arc;

use extpool_catalog::CatalogRevision;
use extpool_core::{Capability, CapabilityKind, ExtensionError, ResolveError};
use futures::{Stream, StreamExt};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::HostError;
use crate::view::View;

/// One resource template of an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TemplateInfo {
    /// The URI template (RFC 6570).
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// The server.
    pub server: String,
    /// The MIME type of what it names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// What it is.
    pub description: String,
    /// Its icons, as its server sent them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
}

/// A resource a server reported updated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceUpdate {
    /// The server.
    pub server: String,
    /// The resource's URI.
    pub uri: String,
}

/// The MCP logging levels, most verbose first.
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Where `level` stands among [`LOG_LEVELS`] (lower is more verbose);
/// `None` for a word that is not a level.
pub fn log_level_rank(level: &str) -> Option<usize> {
    LOG_LEVELS.iter().position(|l| *l == level)
}

/// Every MCP server the revision dispatches to (its own and its
/// parents'), skill-embedded ones included (they are sources themselves;
/// the skill manager that aggregates them is not asked again).
pub(crate) fn sources(rev: &CatalogRevision) -> Vec<(String, Arc<dyn Capability>)> {
    let mut out: Vec<(String, Arc<dyn Capability>)> = Vec::new();
    for r in rev.chain() {
        for s in r.sources() {
            let server = s.capability.kind() == CapabilityKind::McpServer;
            if server && !out.iter().any(|(id, _)| **id == *s.id) {
                out.push((s.id.to_string(), s.capability.clone()));
            }
        }
    }
    out
}

/// `error` of `server` relayed for `operation`.
pub(crate) fn relay(operation: &'static str, server: &str, error: ExtensionError) -> HostError {
    HostError::Relay {
        operation,
        server: server.to_owned(),
        error,
    }
}

impl View {
    /// The settings protocol extension `id` has at the first visible MCP
    /// server that declared it (`capabilities.extensions`), for a front end
    /// that passes the extension through and declares it only when some
    /// server does; `None` when none of the connected ones did.
    pub fn upstream_extension(&self, id: &str) -> Option<Value> {
        let rev = self.revision();
        sources(&rev)
            .into_iter()
            .find_map(|(_, cap)| cap.mcp()?.extensions().remove(id))
    }

    /// Gets MCP prompt `name` (its catalog name, without `/`) whole, as
    /// MCP's `GetPromptResult` JSON: every message as the server sent it
    /// (images and embedded resources included), through the guardrails.
    /// `Ok(None)` for a command that is not an MCP prompt (render it with
    /// [`View::run`]).
    pub async fn prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Option<Value>, HostError> {
        self.check_open()?;
        let name = name.trim_start_matches('/');
        let rev = self.revision();
        let guard = self.prompt_guard(&rev, name, &arguments);
        let whole = rev
            .get_prompt(name, arguments)
            .await
            .map_err(|e| self.command_error(&rev, name, e));
        match (whole, guard) {
            (Ok(Some(whole)), Some(guard)) => guard.prompt(whole).await.map(Some),
            (Err(e), Some(guard)) => Err(guard.error(e, &mut Vec::new())),
            (whole, _) => whole,
        }
    }

    /// Every resource template of the servers visible here, by server then
    /// template. A server whose templates cannot be listed is skipped (and
    /// logged).
    pub async fn resource_templates(&self) -> Vec<TemplateInfo> {
        let rev = self.revision();
        let mut rows = Vec::new();
        for (server, cap) in sources(&rev) {
            let Some(mcp) = cap.mcp() else { continue };
            match mcp.list_resource_templates().await {
                Ok(templates) => rows.extend(templates.into_iter().map(|t| TemplateInfo {
                    uri_template: t.uri_template,
                    name: t.name,
                    server: server.clone(),
                    mime_type: t.mime_type,
                    description: t.description,
                    icons: t.icons,
                })),
                Err(e) => tracing::warn!(server, "resource templates not listed: {e}"),
            }
        }
        rows.sort_by(|a, b| (&a.server, &a.uri_template).cmp(&(&b.server, &b.uri_template)));
        rows
    }

    /// Answers MCP `completion/complete` (`request` is its params): a
    /// `ref/prompt` names a prompt by catalog name, a `ref/resource` a
    /// template (or resource) URI of a visible server; the server that
    /// owns it is asked under its own names. A command that is not an MCP
    /// prompt, or a server without completions, completes nothing.
    pub async fn complete(&self, mut request: Value) -> Result<Value, HostError> {
        self.check_open()?;
        let rev = self.revision();
        let kind = request["ref"]["type"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let cap = match kind.as_str() {
            "ref/prompt" => {
                let name = request["ref"]["name"].as_str().unwrap_or_default();
                let name = name.trim_start_matches('/').to_owned();
                let Some(command) = rev.command(&name) else {
                    return Err(self.command_error(
                        &rev,
                        &name,
                        extpool_catalog::CommandError::UnknownCommand { name: name.clone() },
                    ));
                };
                if command.kind != extpool_catalog::CommandKind::McpPrompt {
                    return Ok(empty_completion());
                }
                request["ref"]["name"] = Value::String(command.original.clone());
                sources(&rev)
                    .into_iter()
                    .find(|(id, _)| **id == *command.server)
            }
            "ref/resource" => {
                let uri = request["ref"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                self.template_owner(&rev, &uri).await
            }
            other => {
                return Err(HostError::Scope(format!(
                    "completion/complete: unknown reference type {other:?} (ref/prompt or ref/resource)"
                )));
            }
        };
        let Some((server, cap)) = cap else {
            let uri = request["ref"]["uri"].as_str().unwrap_or_default();
            return Err(HostError::Read(ResolveError::NotFound {
                uri: uri.to_owned(),
            }));
        };
        let Some(mcp) = cap.mcp() else {
            return Ok(empty_completion());
        };
        match mcp.complete(request).await {
            Ok(Some(result)) => Ok(result),
            Ok(None) => Ok(empty_completion()),
            Err(e) => Err(relay("completion/complete", &server, e)),
        }
    }

    /// Subscribes to (`on`) or unsubscribes from updates of resource `uri`
    /// at the visible server that has it; returns that server's id. A
    /// server without subscriptions is [`HostError::Unsupported`].
    pub async fn subscribe(&self, uri: &str, on: bool) -> Result<String, HostError> {
        self.check_open()?;
        let rev = self.revision();
        let Some((server, cap)) = self.resource_owner(&rev, uri).await else {
            return Err(HostError::Read(ResolveError::NotFound {
                uri: uri.to_owned(),
            }));
        };
        let operation = if on {
            "resources/subscribe"
        } else {
            "resources/unsubscribe"
        };
        let Some(mcp) = cap.mcp() else {
            return Err(HostError::Unsupported {
                what: "resource subscriptions".into(),
                server,
            });
        };
        match mcp.subscribe(uri, on).await {
            Ok(true) => Ok(server),
            Ok(false) => Err(HostError::Unsupported {
                what: "resource subscriptions".into(),
                server,
            }),
            Err(e) => Err(relay(operation, &server, e)),
        }
    }

    /// Resources the servers visible now report updated, until dropped.
    pub fn resource_updates(&self) -> impl Stream<Item = ResourceUpdate> + Send + 'static {
        let streams: Vec<_> = sources(&self.revision())
            .into_iter()
            .filter_map(|(server, cap)| {
                let updates = cap.mcp()?.resource_updates()?;
                Some(
                    updates
                        .map(move |uri| ResourceUpdate {
                            server: server.clone(),
                            uri,
                        })
                        .boxed(),
                )
            })
            .collect();
        futures::stream::select_all(streams)
    }

    /// Asks every visible server that logs to send messages of `level`
    /// (one of [`LOG_LEVELS`]) and above; returns the servers told. A
    /// server that fails is logged and skipped.
    pub async fn set_log_level(&self, level: &str) -> Result<Vec<String>, HostError> {
        self.check_open()?;
        if log_level_rank(level).is_none() {
            return Err(HostError::Scope(format!(
                "{level:?} is not an MCP logging level ({})",
                LOG_LEVELS.join(", ")
            )));
        }
        let mut told = Vec::new();
        for (server, cap) in sources(&self.revision()) {
            let Some(mcp) = cap.mcp() else { continue };
            match mcp.set_log_level(level).await {
                Ok(true) => told.push(server),
                Ok(false) => {}
                Err(e) => tracing::warn!(server, "logging/setLevel not relayed: {e}"),
            }
        }
        Ok(told)
    }

    /// The visible server with resource `uri`: the one that lists it,
    /// else the first whose listing or templates match it.
    async fn resource_owner(
        &self,
        rev: &CatalogRevision,
        uri: &str,
    ) -> Option<(String, Arc<dyn Capability>)> {
        let all = sources(rev);
        if let Some(listed) = rev.all_resources().find(|r| r.entry.uri == uri)
            && let Some(found) = all.iter().find(|(id, _)| **id == *listed.server)
        {
            return Some(found.clone());
        }
        for (server, cap) in all {
            let Some(mcp) = cap.mcp() else { continue };
            if mcp.resource_exists(uri).await.unwrap_or(false) {
                return Some((server, cap));
            }
        }
        None
    }

    /// The visible server with template `uri_template` (or, failing that,
    /// the owner of `uri_template` read as a plain URI).
    async fn template_owner(
        &self,
        rev: &CatalogRevision,
        uri_template: &str,
    ) -> Option<(String, Arc<dyn Capability>)> {
        for (server, cap) in sources(rev) {
            let Some(mcp) = cap.mcp() else { continue };
            if let Ok(templates) = mcp.list_resource_templates().await
                && templates.iter().any(|t| t.uri_template == uri_template)
            {
                return Some((server, cap));
            }
        }
        self.resource_owner(rev, uri_template).await
    }
}

/// A completion with no values.
fn empty_completion() -> Value {
    json!({"completion": {"values": [], "hasMore": false}})
}
