//! The one place the configuration's [`crate::guardrails`] are applied to
//! what leaves the host for a model, whichever way it leaves: a tool
//! call (before dispatch, and its result), `CallMcpWithQuery`'s tool
//! result before its filter and the filter's output after, a task's
//! result, a resource read (`resources/read`, `extpool read`, a skill a
//! turn activates), a prompt (whole, or rendered as a command), and the
//! text a server wrote in an error or a failed task's message. Every path
//! builds a [`Guard`] for what it returns and passes it through; none
//! applies a rule itself.
//!
//! What is not a tool result is checked as the tool result it would be:
//! a resource read as its twin `ReadMcpResource` call, a prompt as a
//! result whose content is its messages' (the prompt's catalog name is
//! the tool the webhook is told), a rendered command as one text.

use std::sync::Arc;

use extpool_core::{CallContext, ContentPart, ResourceBody, ResourceContent, ToolResult};
use serde_json::{Map, Value};

use super::View;
use crate::error::HostError;
use crate::guardrails::{Blocked, Guardrails, Subject, Verdict};

/// The guardrails of one thing a view returns: what it is and whose.
pub(crate) struct Guard {
    guardrails: Arc<Guardrails>,
    subject: Subject,
    /// Its arguments, kept when the webhook is told them with the result.
    args: Option<Map<String, Value>>,
}

/// The blocked call as the host reports it.
pub(crate) fn blocked(subject: &Subject, b: Blocked) -> HostError {
    HostError::Blocked {
        tool: subject.tool.clone(),
        phase: b.phase,
        guardrail: b.guardrail,
        reason: b.reason,
    }
}

/// Who is calling, as the front end put it in the call's context.
pub(crate) fn principal() -> Option<String> {
    CallContext::current().and_then(|c| c.caller().map(str::to_owned))
}

impl View {
    /// The guard of what `subject` names, asked with `args`, returns;
    /// `None` when no guardrails are configured (and then the subject is
    /// never made: a call without guardrails pays nothing for it).
    pub(crate) fn guard(
        &self,
        subject: impl FnOnce() -> Subject,
        args: &Map<String, Value>,
    ) -> Option<Guard> {
        let guardrails = self.inner.host.guardrails.clone()?;
        let args = guardrails.wants_arguments().then(|| args.clone());
        Some(Guard {
            guardrails,
            subject: subject(),
            args,
        })
    }

    /// The guard of a resource read of `uri` (from `server`, when known),
    /// as its twin `ReadMcpResource` call is guarded.
    pub(crate) fn read_guard(&self, server: Option<&str>, uri: &str) -> Option<Guard> {
        self.inner.host.guardrails.as_ref()?;
        let mut args = Map::new();
        if let Some(server) = server {
            args.insert("server".into(), Value::String(server.to_owned()));
        }
        args.insert("uri".into(), Value::String(uri.to_owned()));
        let subject = Subject {
            tool: extpool_catalog::BuiltinTool::ReadMcpResource
                .name()
                .to_owned(),
            server: crate::BUILTIN.to_owned(),
            via: None,
            principal: principal(),
        };
        self.guard(|| subject, &args)
    }

    /// `text`, a message a server wrote that reaches a model by no result
    /// (a failed task's status message), as the `redact` rules leave it.
    pub fn redacted_message(&self, text: &str) -> String {
        let mut text = text.to_owned();
        if let Some(g) = &self.inner.host.guardrails {
            g.redact_message(&mut text, &mut Vec::new());
        }
        text
    }
}

impl Guard {
    /// Checks the call before dispatch, with `args` as given.
    pub(crate) async fn call(
        &self,
        args: &Map<String, Value>,
        verdicts: &mut Vec<Verdict>,
    ) -> Result<(), HostError> {
        self.guardrails
            .check_call(&self.subject, args, verdicts)
            .await
            .map_err(|b| blocked(&self.subject, b))
    }

    /// `result` as the model may get it, or why it may not.
    pub(crate) async fn result(
        &self,
        result: ToolResult,
        verdicts: &mut Vec<Verdict>,
    ) -> Result<ToolResult, HostError> {
        self.guardrails
            .check_result(&self.subject, self.args.as_ref(), result, verdicts)
            .await
            .map_err(|b| blocked(&self.subject, b))
    }

    /// `error` with what its server wrote in it redacted.
    pub(crate) fn error(&self, mut error: HostError, verdicts: &mut Vec<Verdict>) -> HostError {
        if let Some(e) = error.capability_error_mut() {
            self.guardrails.redact_error(e, verdicts);
        }
        error
    }

    /// A resource's `content` as the model may get it: checked as the
    /// result its twin `ReadMcpResource` gives (text as a text part, bytes
    /// embedded), then put back under its URI, type and `_meta`.
    pub(crate) async fn content(
        &self,
        content: ResourceContent,
    ) -> Result<ResourceContent, HostError> {
        let ResourceContent {
            uri,
            mime_type,
            body,
            meta,
        } = content;
        let result = match body {
            ResourceBody::Text(text) => ToolResult::text(text),
            blob @ ResourceBody::Blob(_) => ToolResult {
                parts: vec![ContentPart::Resource {
                    resource: ResourceContent {
                        uri: uri.clone(),
                        mime_type: mime_type.clone(),
                        body: blob,
                        meta: None,
                    },
                }],
                structured: None,
                is_error: false,
                as_sent: None,
            },
        };
        let checked = self.result(result, &mut Vec::new()).await?;
        let body = checked
            .parts
            .iter()
            .find_map(|p| match p {
                ContentPart::Resource { resource } => Some(resource.body.clone()),
                _ => None,
            })
            .filter(|_| {
                !checked
                    .parts
                    .iter()
                    .any(|p| matches!(p, ContentPart::Text { .. }))
            })
            .unwrap_or_else(|| ResourceBody::Text(checked.joined_text()));
        Ok(ResourceContent {
            uri,
            mime_type,
            body,
            meta,
        })
    }

    /// A prompt's `GetPromptResult` JSON as the model may get it: its
    /// messages' content checked as one result's content, each put back in
    /// its message (a webhook's replacement becomes one user message a
    /// block).
    pub(crate) async fn prompt(&self, mut whole: Value) -> Result<Value, HostError> {
        let withheld = |why: String| {
            blocked(
                &self.subject,
                Blocked {
                    phase: crate::guardrails::Phase::Result,
                    guardrail: "guardrails".into(),
                    reason: why,
                },
            )
        };
        let messages = whole
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let content: Vec<Value> = messages
            .iter()
            .map(|m| m.get("content").cloned().unwrap_or(Value::Null))
            .collect();
        let read: rmcp::model::CallToolResult =
            serde_json::from_value(serde_json::json!({ "content": content })).map_err(|e| {
                withheld(format!(
                    "its messages are not content the guardrails can read ({e})"
                ))
            })?;
        let checked = self
            .result(extpool_mcp::convert::tool_result(read), &mut Vec::new())
            .await?;
        let wire = extpool_mcp::convert::wire::into_call_tool_result(checked);
        let blocks = serde_json::to_value(&wire.content)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default();
        let messages: Vec<Value> = if blocks.len() == messages.len() {
            messages
                .into_iter()
                .zip(blocks)
                .map(|(mut message, block)| {
                    message["content"] = block;
                    message
                })
                .collect()
        } else {
            blocks
                .into_iter()
                .map(|block| serde_json::json!({"role": "user", "content": block}))
                .collect()
        };
        whole["messages"] = Value::Array(messages);
        Ok(whole)
    }

    /// A rendered command's `text` as the model may get it.
    pub(crate) async fn text(&self, text: String) -> Result<String, HostError> {
        let checked = self.result(ToolResult::text(text), &mut Vec::new()).await?;
        Ok(checked.joined_text())
    }
}
