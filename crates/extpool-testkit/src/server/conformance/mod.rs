//! `--conformance`: the fixtures the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server scenarios) expects of the
//! server under test, served beside the testkit's own tools, resources and
//! prompts.
//!
//! - tools `test_simple_text`, `test_image_content`, `test_audio_content`,
//!   `test_embedded_resource`, `test_multiple_content_types`,
//!   `test_tool_with_logging`, `test_tool_with_progress`,
//!   `test_error_handling`, `test_sampling`, `test_elicitation`,
//!   `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`,
//!   `json_schema_2020_12_tool` (the draft suite's schema),
//!   `test_custom_headers` (an `x-mcp-header` parameter, SEP-2243),
//!   `test_reconnection`, `test_missing_capability` (asks the client to
//!   sample) and `test_streaming_elicitation` (asks the user), the draft
//!   suite's, which a 2026-07-28 request meets as [`stateless`] says, and
//!   `update_watched_resource` (not the suite's: it changes
//!   `test://watched-resource` and tells its subscribers);
//! - resources `test://static-text`, `test://static-binary`,
//!   `test://watched-resource`, and the template `test://template/{id}/data`;
//! - prompts `test_simple_prompt`, `test_prompt_with_arguments {arg1, arg2}`,
//!   `test_prompt_with_embedded_resource {resourceUri}`,
//!   `test_prompt_with_image`;
//! - `completion/complete` on prompt arguments and the template's `id`,
//!   `logging/setLevel` (log messages below the level are not sent), and
//!   `resources/subscribe` / `unsubscribe` per session.
//!
//! The texts follow the scenarios' descriptions in the suite.

#![allow(deprecated)] // logging, sampling and resources/subscribe (SEP-2577) are deprecated but the suite tests them

use std::sync::PoisonError;
use std::time::Duration;

use rmcp::model::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, JsonObject, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ResourceContents, SamplingMessage,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use super::TestServer;
use super::asking;
use super::content::{PNG_1X1, PNG_MIME, WAV_MIME, base64, wav};

/// The text resource.
pub(crate) const STATIC_TEXT_URI: &str = "test://static-text";
/// The binary resource.
pub(crate) const STATIC_BINARY_URI: &str = "test://static-binary";
/// The resource `update_watched_resource` changes.
pub(crate) const WATCHED_URI: &str = "test://watched-resource";
/// The resource template.
pub(crate) const TEMPLATE: &str = "test://template/{id}/data";
const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";
/// Most subscriptions kept (a session subscribing without end is refused).
const MAX_SUBSCRIPTIONS: usize = 10_000;
/// Pause between the log messages and progress steps of the tools that
/// send them (the suite's "~50ms"), so that a client sees them arrive
/// during the call.
const STEP: Duration = Duration::from_millis(50);

/// Per-process state of the fixtures.
#[derive(Debug)]
pub(crate) struct State {
    /// The level `logging/setLevel` asked for (default: debug, everything).
    level: std::sync::Mutex<LoggingLevel>,
    /// Subscriptions: URI, session number, the session's peer.
    subscriptions: std::sync::Mutex<Vec<(String, u64, Peer<RoleServer>)>>,
    /// How many times the watched resource was updated.
    version: std::sync::atomic::AtomicU64,
}

impl Default for State {
    fn default() -> Self {
        Self {
            level: std::sync::Mutex::new(LoggingLevel::Debug),
            subscriptions: std::sync::Mutex::new(Vec::new()),
            version: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

mod catalog;
mod fixtures;
mod stateless;

pub(crate) use fixtures::{is_tool, tools};
pub(crate) use stateless::call as stateless_call;

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

fn arg<'a>(args: Option<&'a JsonObject>, key: &str) -> Result<&'a str, ErrorData> {
    args.and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params(format!("missing string argument {key:?}"), None))
}

/// Where `level` stands: lower is more verbose.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl TestServer {
    fn fixtures(&self) -> &State {
        &self.shared.conformance
    }

    /// Runs fixture tool `name`.
    pub(crate) async fn conformance_call(
        &self,
        name: &str,
        args: Option<&JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        match name {
            "test_simple_text" => Ok(text("This is a simple text response for testing.")),
            "test_image_content" => Ok(CallToolResult::success(vec![ContentBlock::image(
                base64(PNG_1X1),
                PNG_MIME,
            )])),
            "test_audio_content" => Ok(CallToolResult::success(vec![ContentBlock::audio(
                base64(&wav()),
                WAV_MIME,
            )])),
            "test_embedded_resource" => Ok(CallToolResult::success(vec![ContentBlock::resource(
                ResourceContents::text(
                    "This is an embedded resource content.",
                    "test://embedded-resource",
                )
                .with_mime_type("text/plain"),
            )])),
            "test_multiple_content_types" => Ok(CallToolResult::success(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(base64(PNG_1X1), PNG_MIME),
                ContentBlock::resource(
                    ResourceContents::text(
                        r#"{"test":"data","value":123}"#,
                        "test://mixed-content-resource",
                    )
                    .with_mime_type("application/json"),
                ),
            ])),
            "test_tool_with_logging" | "test_logging_tool" => self.logging_steps(context).await,
            "test_tool_with_progress" => progress_steps(context).await,
            "test_error_handling" => Ok(CallToolResult::error(vec![ContentBlock::text(
                "This tool intentionally returns an error for testing",
            )])),
            "test_sampling" => sampling(arg(args, "prompt")?, context).await,
            stateless::MISSING_CAPABILITY => sampling(stateless::SAMPLING_PROMPT, context).await,
            stateless::STREAMING_ELICITATION => {
                let schema = fixtures::username_schema();
                elicit(
                    stateless::ELICITATION_MESSAGE,
                    schema,
                    "User response",
                    context,
                )
                .await
            }
            "test_elicitation" => {
                let schema = fixtures::username_schema();
                elicit(arg(args, "message")?, schema, "User response", context).await
            }
            "test_elicitation_sep1034_defaults" => {
                let schema = fixtures::defaults_schema();
                elicit(
                    "Please review these values (each has a default)",
                    schema,
                    "Elicitation completed",
                    context,
                )
                .await
            }
            "test_elicitation_sep1330_enums" => {
                let schema = fixtures::enums_schema();
                elicit(
                    "Please pick from these lists",
                    schema,
                    "Elicitation completed",
                    context,
                )
                .await
            }
            "json_schema_2020_12_tool" => {
                let who = args
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("world");
                Ok(text(format!("Hello, {who}!")))
            }
            "test_custom_headers" => Ok(text(format!("region {}", arg(args, "region")?))),
            "test_reconnection" => {
                tokio::time::sleep(STEP).await;
                Ok(text("Reconnection test completed"))
            }
            "update_watched_resource" => Ok(text(format!(
                "updated; {} subscriber(s) told",
                self.update_watched().await
            ))),
            _ => Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}"),
                None,
            )),
        }
    }

    async fn logging_steps(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let messages = [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ];
        for (i, message) in messages.into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            self.log(context, LoggingLevel::Info, message).await;
        }
        Ok(text("Logging test completed"))
    }

    /// Sends a log message to the caller, unless below the level set: by
    /// `logging/setLevel` in a session, by the request's `_meta` logLevel
    /// in the 2026-07-28 era (none there: no log message, SEP-2575).
    async fn log(&self, context: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let set = if stateless {
            let Some(asked) = context.meta.log_level() else {
                return;
            };
            asked
        } else {
            *self
                .fixtures()
                .level
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if rank(level) < rank(set) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(level, Value::String(message.into()))
            .with_logger("extpool-testkit");
        let _ = context.peer.notify_logging_message(param).await;
    }

    /// `logging/setLevel`.
    pub(crate) fn set_level_to(&self, level: LoggingLevel) {
        *self
            .fixtures()
            .level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = level;
    }

    /// `resources/subscribe` of `uri` by this session (whose peer is `peer`).
    pub(crate) fn subscribe_to(&self, uri: &str, peer: Peer<RoleServer>) -> Result<(), ErrorData> {
        if self.read(uri).is_err() {
            return Err(ErrorData::resource_not_found(
                format!("no resource {uri} to subscribe to"),
                Some(json!({ "uri": uri })),
            ));
        }
        let mut subs = self
            .fixtures()
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        subs.retain(|(_, _, p)| !p.is_transport_closed());
        if subs.len() >= MAX_SUBSCRIPTIONS {
            return Err(ErrorData::invalid_request(
                format!("at most {MAX_SUBSCRIPTIONS} subscriptions"),
                None,
            ));
        }
        if !subs.iter().any(|(u, s, _)| u == uri && *s == self.session) {
            subs.push((uri.to_owned(), self.session, peer));
        }
        Ok(())
    }

    /// `resources/unsubscribe` of `uri` by this session.
    pub(crate) fn unsubscribe_from(&self, uri: &str) {
        self.fixtures()
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(u, s, _)| !(u == uri && *s == self.session));
    }

    /// Bumps the watched resource and notifies its subscribers; how many.
    async fn update_watched(&self) -> usize {
        self.fixtures()
            .version
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let peers: Vec<Peer<RoleServer>> = self
            .fixtures()
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(u, _, _)| u == WATCHED_URI)
            .map(|(_, _, p)| p.clone())
            .collect();
        let mut told = 0;
        for peer in peers {
            let param = rmcp::model::ResourceUpdatedNotificationParam::new(WATCHED_URI);
            if peer.notify_resource_updated(param).await.is_ok() {
                told += 1;
            }
        }
        told
    }
}

async fn progress_steps(context: &RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
    let token = context.meta.get_progress_token();
    for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(STEP).await;
        }
        if let Some(token) = &token {
            let mut param = ProgressNotificationParam::new(token.clone(), progress);
            param.total = Some(100.0);
            let _ = context.peer.notify_progress(param).await;
        }
    }
    Ok(text("Progress test completed"))
}

async fn sampling(
    prompt: &str,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
    match context.peer.create_message(params).await {
        Ok(answer) => {
            let said = answer
                .message
                .content
                .iter()
                .find_map(|c| c.as_text().map(|t| t.text.clone()))
                .unwrap_or_default();
            Ok(text(format!("LLM response: {said}")))
        }
        Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
            "sampling failed: {e}"
        ))])),
    }
}

/// Runs a form elicitation; the tool's text is `<label>: action=…, content=…`.
async fn elicit(
    message: &str,
    schema: Value,
    label: &str,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    match asking::elicit(message, schema, context).await {
        Ok(said) => Ok(text(format!("{label}: {said}"))),
        Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
            "elicitation failed: {e}"
        ))])),
    }
}
