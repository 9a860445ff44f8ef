//! The draft suite's diagnostic tools that need a client capability, as a
//! 2026-07-28 request calls them (SEP-2575, SEP-2322):
//! `test_missing_capability` needs sampling and `test_streaming_elicitation`
//! elicitation. A request whose `_meta` does not declare the capability is
//! refused with `-32021` naming it; one that does gets an `input_required`
//! result asking it (key [`KEY`]), and its retry with the answer completes.
//! In a session both ask the client by request instead
//! ([`super::TestServer::conformance_call`]).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    InputRequest, InputRequests, InputRequiredResult, ProtocolVersion, SamplingMessage,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::json;

/// The tool that needs sampling.
pub(super) const MISSING_CAPABILITY: &str = "test_missing_capability";
/// The tool that needs elicitation.
pub(super) const STREAMING_ELICITATION: &str = "test_streaming_elicitation";
/// What `test_missing_capability` asks the model.
pub(super) const SAMPLING_PROMPT: &str = "What is 2+2?";
/// What `test_streaming_elicitation` asks the user.
pub(super) const ELICITATION_MESSAGE: &str = "What is your name?";
/// The key of the one input request of either tool.
const KEY: &str = "ask";

/// Answers a 2026-07-28 request of one of these tools; `None` for any
/// other tool or a request of a session.
pub(crate) fn call(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let name = request.name.as_ref();
    if name != MISSING_CAPABILITY && name != STREAMING_ELICITATION {
        return None;
    }
    if !context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
    {
        return None;
    }
    let sampling = name == MISSING_CAPABILITY;
    let capabilities = context.client_capabilities().unwrap_or_default();
    let declared = if sampling {
        capabilities.sampling.is_some()
    } else {
        capabilities.elicitation.is_some()
    };
    if !declared {
        let needed = if sampling { "sampling" } else { "elicitation" };
        return Some(
            serde_json::from_value::<ClientCapabilities>(json!({ needed: {} }))
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))
                .and_then(|c| Err(ErrorData::missing_required_client_capability(c))),
        );
    }
    if let Some(answer) = request.input_responses.as_ref().and_then(|r| r.get(KEY)) {
        return Some(Ok(CallToolResult::success(vec![ContentBlock::text(
            format!("answered: {answer}"),
        )])
        .into()));
    }
    Some(ask(sampling).map(Into::into))
}

/// The `input_required` result asking the client to sample or to fill in
/// the username form.
fn ask(sampling: bool) -> Result<InputRequiredResult, ErrorData> {
    let request = if sampling {
        let params =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text(SAMPLING_PROMPT)], 100);
        InputRequest::CreateMessage(CreateMessageRequest::new(params))
    } else {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: ELICITATION_MESSAGE.to_owned(),
            requested_schema: serde_json::from_value(super::fixtures::username_schema())
                .map_err(|e| ErrorData::internal_error(format!("invalid form: {e}"), None))?,
        };
        InputRequest::Elicitation(ElicitRequest::new(params))
    };
    let mut requests = InputRequests::new();
    requests.insert(KEY.to_owned(), request);
    Ok(InputRequiredResult::new(Some(requests), None))
}
