//! The MCP requests the gateway passes to the server that owns what they
//! name, through the host: prompts whole (every message, images and
//! embedded resources included), resource templates, completions, resource
//! subscriptions, and log levels.
//!
//! Log levels: upstream servers are shared, so each session's level is
//! applied by the gateway to the log messages it relays to that session;
//! upstream servers are told the most verbose level any client asked for
//! (never less verbose afterwards), so that every client can get what it
//! asked for.

use std::sync::atomic::Ordering;

use extpool_host::passthrough::log_level_rank;
use extpool_host::{HostError, View};
use rmcp::ErrorData;
#[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still set it
use rmcp::model::LoggingLevel;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptResult, JsonObject, PromptMessage, Reference,
    ResourceTemplate, ResultType, Role,
};

use crate::convert;
use crate::handler::GatewayHandler;
use crate::names::Names;

/// A host error as a JSON-RPC error: what was not found, or what the
/// client got wrong, is theirs; the rest is the gateway's.
pub fn host_error(e: &HostError) -> ErrorData {
    match e {
        HostError::Read(_) if e.is_not_found() => {
            ErrorData::resource_not_found(e.to_string(), None)
        }
        _ if e.is_not_found() => ErrorData::invalid_params(e.to_string(), None),
        HostError::Unsupported { .. } | HostError::Scope(_) => {
            ErrorData::invalid_request(e.to_string(), None)
        }
        HostError::Command(c) if c.is_invalid_arguments() => {
            ErrorData::invalid_params(e.to_string(), None)
        }
        _ => ErrorData::internal_error(e.to_string(), None),
    }
}

/// `prompts/get` of catalog command `name`: an MCP prompt whole; a skill's
/// command rendered (its text in one user message, its `arguments`
/// argument as `$ARGUMENTS`); a command file rendered the same way, its
/// `arguments` split into words as a shell would (its `$1`, `$2`…).
pub async fn get_prompt(
    view: &View,
    name: &str,
    arguments: JsonObject,
) -> Result<GetPromptResult, ErrorData> {
    let slash = format!("/{name}");
    let local = view
        .commands()
        .into_iter()
        .find(|c| c.name == slash && convert::rendered_locally(c));
    let is_skill = local.is_some();
    let split = local.is_some_and(|c| c.source == "file");
    if !is_skill {
        match view.prompt(name, arguments.clone()).await {
            Ok(Some(whole)) => {
                let mut result: GetPromptResult = serde_json::from_value(whole).map_err(|e| {
                    ErrorData::internal_error(format!("prompt {name}: invalid result: {e}"), None)
                })?;
                complete_when_absent(&mut result.result_type);
                return Ok(result);
            }
            Ok(None) => {}
            Err(e) => return Err(host_error(&e)),
        }
    }
    let words: Vec<String> = if is_skill {
        let text = arguments
            .get(convert::SKILL_ARGUMENTS)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        match text {
            Some(text) if split => extpool_host::skills::args::split_args(&text),
            other => other.into_iter().collect(),
        }
    } else {
        arguments
            .iter()
            .map(|(k, v)| {
                format!(
                    "{k}={}",
                    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                )
            })
            .collect()
    };
    match view.run(name, &words).await {
        Ok(text) => Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            text,
        )])),
        Err(e) => Err(host_error(&e)),
    }
}

/// `resources/templates/list`: every visible server's templates.
pub async fn templates(view: &View) -> Vec<ResourceTemplate> {
    view.resource_templates()
        .await
        .iter()
        .map(convert::template)
        .collect()
}

/// `completion/complete`: a prompt reference names a prompt as the client
/// sees it; the server that owns it is asked.
pub async fn complete(
    view: &View,
    names: &Names,
    mut request: CompleteRequestParams,
) -> Result<CompleteResult, ErrorData> {
    if let Reference::Prompt(prompt) = &mut request.r#ref {
        prompt.name = names.catalog_prompt(&prompt.name).to_owned();
    }
    let request = serde_json::to_value(&request)
        .map_err(|e| ErrorData::internal_error(format!("completion request: {e}"), None))?;
    let answer = view.complete(request).await.map_err(|e| host_error(&e))?;
    let mut result: CompleteResult = serde_json::from_value(answer).map_err(|e| {
        ErrorData::internal_error(format!("invalid completion from the server: {e}"), None)
    })?;
    complete_when_absent(&mut result.result_type);
    Ok(result)
}

/// The `resultType` of a result an upstream server sent without one:
/// `complete`, as the spec says a client must read an absent one. The
/// gateway says so to a 2026-07-28 client, which requires the member
/// (rmcp's handler drops it again for a client of an older version).
fn complete_when_absent(result_type: &mut Option<ResultType>) {
    result_type.get_or_insert(ResultType::COMPLETE);
}

/// `level` as MCP spells it (`"info"`), the word
/// [`extpool_host::passthrough::log_level_rank`] ranks.
#[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still set it
pub(crate) fn level_word(level: LoggingLevel) -> String {
    serde_json::to_value(level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `logging/setLevel`: the session's level for the log messages relayed
/// to it; upstream servers are told when it is more verbose than anything
/// asked before.
#[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still set it
pub async fn set_level(handler: &GatewayHandler, level: LoggingLevel) -> Result<(), ErrorData> {
    let word = level_word(level);
    let Some(rank) = log_level_rank(&word) else {
        return Err(ErrorData::invalid_params(
            format!("{word:?} is not a logging level"),
            None,
        ));
    };
    let Some((_, view, session_level)) = handler.session_parts() else {
        return Err(ErrorData::invalid_request(
            "logging/setLevel needs a session (initialize first)",
            None,
        ));
    };
    session_level.store(rank, Ordering::Relaxed);
    let shared = handler.shared();
    if shared.upstream_log_level.fetch_min(rank, Ordering::AcqRel) > rank {
        let told = view
            .set_log_level(&word)
            .await
            .map_err(|e| host_error(&e))?;
        tracing::debug!(level = word, servers = ?told, "log level relayed upstream");
    }
    Ok(())
}

/// `resources/subscribe` (with the client's `peer`) or
/// `resources/unsubscribe` (without) of `uri` for this session.
pub(crate) async fn subscribe(
    handler: &GatewayHandler,
    uri: &str,
    peer: Option<crate::client_peer::ClientPeer>,
) -> Result<(), ErrorData> {
    let Some((session, view, _)) = handler.session_parts() else {
        return Err(ErrorData::invalid_request(
            "resources/subscribe needs a session (initialize first); 2026-07-28 clients use subscriptions/listen",
            None,
        ));
    };
    let subscriptions = &handler.shared().subscriptions;
    match peer {
        Some(peer) => {
            handler.note_subscription();
            subscriptions
                .subscribe(view, session, peer, uri)
                .await
                .map_err(|e| match e {
                    crate::subscriptions::SubscribeError::Host(e) => host_error(&e),
                    other => ErrorData::invalid_request(other.to_string(), None),
                })
        }
        None => subscriptions
            .unsubscribe(session, uri)
            .await
            .map_err(|e| host_error(&e)),
    }
}
