//! URL-mode elicitation (MCP 2025-11-25, `--url-elicitation`): three
//! tools that send the user to a URL and tell the client when it is done,
//! both ways a server may ask —
//!
//! - `elicit_url` sends `elicitation/create` in URL mode and answers
//!   `action=<accept|decline|cancel>` (or the client's error, as a tool
//!   error);
//! - `url_required` answers a `URLElicitationRequiredError` (-32042) whose
//!   `data.elicitations` holds the one URL elicitation;
//! - `complete_elicitation` sends `notifications/elicitation/complete` for
//!   an `elicitationId`, as a server does when the user has finished in
//!   the browser — from whichever call, so a test can see who gets it.

use std::sync::{Arc, LazyLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientResult, ContentBlock, CustomNotification,
    ElicitRequest, ElicitRequestParams, ElicitationAction, ErrorCode, JsonObject,
    ServerNotification, ServerRequest, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use super::TestServer;

/// The tool that sends a URL-mode `elicitation/create`.
pub const ELICIT_URL: &str = "elicit_url";
/// The tool that answers `URLElicitationRequiredError`.
pub const URL_REQUIRED: &str = "url_required";
/// The tool that sends `notifications/elicitation/complete`.
pub const COMPLETE: &str = "complete_elicitation";

/// An object schema with `properties`, `required` naming the required ones.
pub(super) fn schema(properties: Value, required: &[&str]) -> Arc<JsonObject> {
    let value = json!({"type": "object", "properties": properties, "required": required});
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn id_and_url() -> Value {
    json!({
        "url": {"type": "string", "description": "The URL to send the user to"},
        "elicitationId": {"type": "string", "description": "The elicitation's id"},
    })
}

/// The three tools, in the order tools/list returns them.
pub(crate) fn tools() -> &'static [Tool] {
    static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
        vec![
            Tool::new(
                ELICIT_URL,
                "Asks the client to send the user to `url` (elicitation/create, mode url, \
                 with `elicitationId`) and returns `action=<accept|decline|cancel>`",
                schema(id_and_url(), &["url", "elicitationId"]),
            ),
            Tool::new(
                URL_REQUIRED,
                "Fails with URLElicitationRequiredError (-32042) naming one URL \
                 elicitation of `url` and `elicitationId`",
                schema(id_and_url(), &["url", "elicitationId"]),
            ),
            Tool::new(
                COMPLETE,
                "Sends notifications/elicitation/complete for `elicitationId`, then \
                 returns `sent`",
                schema(
                    json!({"elicitationId": {"type": "string", "description": "The elicitation's id"}}),
                    &["elicitationId"],
                ),
            ),
        ]
    });
    &TOOLS
}

/// Whether `name` is one of these tools.
pub(crate) fn is_tool(name: &str) -> bool {
    tools().iter().any(|t| t.name == name)
}

/// The string argument `key` of `request`, else an invalid-params error.
pub(super) fn arg<'a>(request: &'a CallToolRequestParams, key: &str) -> Result<&'a str, ErrorData> {
    request
        .arguments
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params(format!("missing string argument {key:?}"), None))
}

/// The message each elicitation shows the user.
const MESSAGE: &str = "Open the link to finish signing in.";

impl TestServer {
    /// Answers a call of one of these tools.
    pub(crate) async fn url_elicitation_call(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        match request.name.as_ref() {
            ELICIT_URL => {
                let params = ElicitRequestParams::UrlElicitationParams {
                    meta: None,
                    message: MESSAGE.to_owned(),
                    url: arg(request, "url")?.to_owned(),
                    elicitation_id: arg(request, "elicitationId")?.to_owned(),
                };
                let asked = ServerRequest::ElicitRequest(ElicitRequest::new(params));
                Ok(match context.peer.send_request(asked).await {
                    Ok(ClientResult::ElicitResult(answer)) => {
                        let action = match answer.action {
                            ElicitationAction::Accept => "accept",
                            ElicitationAction::Decline => "decline",
                            ElicitationAction::Cancel => "cancel",
                            _ => "unknown",
                        };
                        CallToolResult::success(vec![ContentBlock::text(format!(
                            "action={action}"
                        ))])
                    }
                    Ok(other) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "unexpected answer {other:?}"
                    ))]),
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "elicitation failed: {e}"
                    ))]),
                })
            }
            URL_REQUIRED => Err(ErrorData::new(
                ErrorCode(-32042),
                "This request requires signing in in the browser.",
                Some(json!({"elicitations": [{
                    "mode": "url",
                    "url": arg(request, "url")?,
                    "message": MESSAGE,
                    "elicitationId": arg(request, "elicitationId")?,
                }]})),
            )),
            _ => {
                let id = arg(request, "elicitationId")?;
                let notification = ServerNotification::CustomNotification(CustomNotification::new(
                    "notifications/elicitation/complete",
                    Some(json!({"elicitationId": id})),
                ));
                context
                    .peer
                    .send_notification(notification)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(CallToolResult::success(vec![ContentBlock::text("sent")]))
            }
        }
    }
}
