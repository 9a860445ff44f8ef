//! A client's request to the handler method that answers it, with the
//! rules MCP puts around every answer — one place for both front ends
//! (HTTP and stdio):
//!
//! - a request that names its protocol version in its `_meta` names one
//!   extpool speaks (else `-32022`, the versions listed), and one that
//!   stands alone (2026-07-28) carries every `_meta` field that era
//!   requires (else `-32602` naming them);
//! - the session era's own methods (`ping`, `resources/subscribe`,
//!   `resources/unsubscribe`) are unknown to a 2026-07-28 request, and
//!   `subscriptions/listen` (a stream, which each front end serves
//!   itself) is unknown here;
//! - a task handle goes only to a client that declared tasks; `tasks/*`
//!   only where the gateway declares them and the client does;
//! - the result is shaped for the client's era: a session-era client gets
//!   no `resultType` and no non-object tool output, a 2026-07-28 one gets
//!   the caching hints that era requires, and its resource-not-found is
//!   invalid params.
//!
//! These are the rules rmcp's service applies around a handler's answer
//! (its `handle_request`), kept word for word so a client sees no
//! difference between the gateway and rmcp's own servers.

use rmcp::ErrorData;
#[allow(deprecated)] // logging and resources/subscribe are the session era's
use rmcp::model::{
    CallToolResponse, ClientCapabilities, ClientRequest, ErrorCode, InitializeResultMethod,
    PingRequestMethod, ProtocolVersion, RequestMetaObject, ServerResult, SubscribeRequestMethod,
    SubscriptionsListenRequestMethod, UnsubscribeRequestMethod, UpdateTaskMethod,
};

use super::GatewayHandler;
use super::exchange::Exchange;

/// The protocol versions the gateway speaks to its clients.
pub(crate) fn supported() -> &'static [ProtocolVersion] {
    extpool_host::mcp::versions::spoken()
}

/// Whether a request of `version` (none: a session's, from before
/// versions were said) has the session era's lifecycle, unless it stands
/// alone.
fn legacy(version: Option<&ProtocolVersion>, standalone: bool) -> bool {
    !standalone && version.is_none_or(ProtocolVersion::has_initialize)
}

/// The version an `initialize` naming `requested` agrees on: it, when
/// extpool speaks it over `initialize`; else the newest it speaks so.
pub(crate) fn negotiate(requested: &ProtocolVersion) -> Result<ProtocolVersion, ErrorData> {
    if requested.has_initialize() && supported().contains(requested) {
        return Ok(requested.clone());
    }
    supported()
        .iter()
        .filter(|v| v.has_initialize())
        .max_by(|a, b| a.as_str().cmp(b.as_str()))
        .cloned()
        .ok_or_else(|| ErrorData::unsupported_protocol_version(requested.clone(), supported()))
}

/// Whether a request with `meta` may be answered, by the version it
/// names and the `_meta` its era requires (`standalone`: it stands alone
/// whatever it names); `Ok` says whether it stands alone.
pub(crate) fn admitted(meta: &RequestMetaObject, standalone: bool) -> Result<bool, ErrorData> {
    let requested = meta.protocol_version();
    if let Some(requested) = &requested
        && !supported().contains(requested)
    {
        return Err(ErrorData::unsupported_protocol_version(
            requested.clone(),
            supported(),
        ));
    }
    let standalone = standalone
        || requested
            .as_ref()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    if standalone {
        let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
        if !missing.is_empty() {
            return Err(ErrorData::invalid_params(
                format!(
                    "request _meta is missing or has malformed required fields: {}",
                    missing.join(", ")
                ),
                None,
            ));
        }
    }
    Ok(standalone)
}

impl GatewayHandler {
    /// Answers `request` (anything but `initialize`, which begins a
    /// session and is each front end's; see the module's documentation).
    pub(crate) async fn dispatch(
        &self,
        request: ClientRequest,
        ex: &Exchange,
    ) -> Result<ServerResult, ErrorData> {
        let version = ex.protocol_version();
        let modern = version
            .as_ref()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let discover = matches!(request, ClientRequest::DiscoverRequest(_));
        let standalone = admitted(&ex.meta, discover || ex.standalone)?;
        let legacy = legacy(version.as_ref(), standalone);
        let result = self.answer(request, ex, legacy).await;
        let result = result.and_then(|mut result| {
            if matches!(result, ServerResult::InputRequiredResult(_)) && !modern {
                return Err(ErrorData::invalid_request(
                    "InputRequiredResult requires negotiated protocol version 2026-07-28 or newer",
                    None,
                ));
            }
            if modern {
                result.fill_missing_cache_hints();
            } else {
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
            }
            Ok(result)
        });
        result.map_err(|mut error| {
            if modern && error.code == ErrorCode::RESOURCE_NOT_FOUND {
                error.code = ErrorCode::INVALID_PARAMS;
            }
            error
        })
    }

    /// The method of `request` answered (`legacy`: the request has the
    /// session era's lifecycle). Every method but `tools/call` is awaited
    /// boxed, so this future is as small as a call's (it is moved on the
    /// way in; a call is the method answered most).
    async fn answer(
        &self,
        request: ClientRequest,
        ex: &Exchange,
        legacy: bool,
    ) -> Result<ServerResult, ErrorData> {
        use ClientRequest as R;
        match request {
            R::InitializeRequest(_) => Err(ErrorData::method_not_found::<InitializeResultMethod>()),
            R::DiscoverRequest(_) => Ok(ServerResult::DiscoverResult(self.discover())),
            R::PingRequest(_) if legacy => Ok(ServerResult::empty(())),
            R::PingRequest(_) => Err(ErrorData::method_not_found::<PingRequestMethod>()),
            R::CompleteRequest(r) => Box::pin(self.complete(r.params, ex))
                .await
                .map(ServerResult::CompleteResult),
            R::SetLevelRequest(r) => Box::pin(self.set_level(r.params))
                .await
                .map(ServerResult::empty),
            R::GetPromptRequest(r) => Box::pin(self.get_prompt(r.params, ex))
                .await
                .map(ServerResult::from),
            R::ListPromptsRequest(_) => Ok(ServerResult::ListPromptsResult(self.list_prompts(ex))),
            R::ListResourcesRequest(_) => {
                Ok(ServerResult::ListResourcesResult(self.list_resources()))
            }
            R::ListResourceTemplatesRequest(_) => Ok(ServerResult::ListResourceTemplatesResult(
                Box::pin(self.list_resource_templates()).await,
            )),
            R::ReadResourceRequest(r) => Box::pin(self.read_resource(r.params, ex))
                .await
                .map(ServerResult::from),
            // A stream: each front end serves it before it comes here.
            R::SubscriptionsListenRequest(_) => Err(ErrorData::method_not_found::<
                SubscriptionsListenRequestMethod,
            >()),
            R::SubscribeRequest(r) if legacy => Box::pin(self.subscribe(&r.params.uri, Some(ex)))
                .await
                .map(ServerResult::empty),
            R::SubscribeRequest(_) => Err(ErrorData::method_not_found::<SubscribeRequestMethod>()),
            R::UnsubscribeRequest(r) if legacy => Box::pin(self.subscribe(&r.params.uri, None))
                .await
                .map(ServerResult::empty),
            R::UnsubscribeRequest(_) => {
                Err(ErrorData::method_not_found::<UnsubscribeRequestMethod>())
            }
            R::CallToolRequest(r) => {
                let response = self.call_tool(r.params, ex).await?;
                if matches!(response, CallToolResponse::Task(_)) && !ex.declares_tasks() {
                    return Err(ErrorData::missing_required_client_capability(
                        ClientCapabilities::builder().enable_tasks().build(),
                    ));
                }
                Ok(ServerResult::from(response))
            }
            R::ListToolsRequest(_) => Ok(ServerResult::ListToolsResult(
                Box::pin(self.list_tools(ex)).await,
            )),
            R::CustomRequest(r) => Box::pin(self.custom_request(r, ex))
                .await
                .map(ServerResult::CustomResult),
            R::GetTaskRequest(r) => {
                self.tasks_allowed::<rmcp::model::GetTaskMethod>(ex)?;
                Box::pin(self.get_extension_task(r.params, ex))
                    .await
                    .map(ServerResult::GetTaskResult)
            }
            R::UpdateTaskRequest(_) => {
                self.tasks_allowed::<UpdateTaskMethod>(ex)?;
                Err(ErrorData::method_not_found::<UpdateTaskMethod>())
            }
            R::CancelTaskRequest(r) => {
                self.tasks_allowed::<rmcp::model::CancelTaskMethod>(ex)?;
                Box::pin(self.cancel_extension_task(r.params, ex))
                    .await
                    .map(ServerResult::task_ack)
            }
            R::ListSkillsRequest(_) => {
                let result = Box::pin(self.list_skills()).await;
                rmcp::model::validate_skills(&result.skills).map_err(invalid_result)?;
                Ok(ServerResult::ListSkillsResult(result))
            }
            R::GetSkillRequest(r) => {
                if rmcp::model::skill_name_from_uri(&r.params.uri).is_none() {
                    return Err(ErrorData::invalid_params(
                        format!("{} is not the uri of a SKILL.md", r.params.uri),
                        None,
                    ));
                }
                let uri = r.params.uri.clone();
                let result = Box::pin(self.get_skill(r.params)).await?;
                if result.skill.uri != uri {
                    return Err(invalid_result(format_args!(
                        "skill uri {} does not match the request {uri}",
                        result.skill.uri
                    )));
                }
                result.skill.validate().map_err(invalid_result)?;
                Ok(ServerResult::GetSkillResult(result))
            }
            R::ReadResourceDirectoryRequest(r) => Box::pin(self.read_resource_directory(r.params))
                .await
                .map(ServerResult::ListResourcesResult),
            // A method rmcp adds later: unknown here until answered.
            _ => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "Method not found",
                None,
            )),
        }
    }

    /// `tasks/*` (SEP-2663): unknown where the gateway declares no tasks;
    /// `-32021` to a client that did not declare them.
    fn tasks_allowed<M: rmcp::model::ConstString>(&self, ex: &Exchange) -> Result<(), ErrorData> {
        if !self.info().capabilities.supports_tasks() {
            return Err(ErrorData::method_not_found::<M>());
        }
        if ex.declares_tasks() {
            Ok(())
        } else {
            Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ))
        }
    }
}

fn invalid_result(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(format!("handler returned an invalid result: {error}"), None)
}
