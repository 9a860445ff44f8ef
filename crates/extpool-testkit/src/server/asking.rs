//! Asking the client things while a tool runs: form elicitation.

use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema,
    ServerRequest,
};
use rmcp::service::RequestContext;
use serde_json::Value;

/// Asks the client to fill in the form `schema` (`elicitation/create`,
/// form mode) with `message`; answers `"<action>, content=<JSON>"`
/// (`null` content when the user gave none), or why it failed.
pub(crate) async fn elicit(
    message: &str,
    schema: Value,
    context: &RequestContext<RoleServer>,
) -> Result<String, String> {
    let requested_schema: ElicitationSchema =
        serde_json::from_value(schema).map_err(|e| format!("invalid form: {e}"))?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_owned(),
        requested_schema,
    };
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    match context.peer.send_request(request).await {
        Ok(ClientResult::ElicitResult(answer)) => {
            let action = match answer.action {
                ElicitationAction::Accept => "accept",
                ElicitationAction::Decline => "decline",
                ElicitationAction::Cancel => "cancel",
                _ => "unknown",
            };
            let content = answer
                .content
                .map_or_else(|| "null".to_owned(), |c| c.to_string());
            Ok(format!("action={action}, content={content}"))
        }
        Ok(other) => Err(format!("unexpected answer {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}
