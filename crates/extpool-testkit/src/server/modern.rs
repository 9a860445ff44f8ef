//! Tools of the 2026-07-28 era (`--modern`): `confirm`, which asks the
//! client for input the stateless way (an `input_required` result, SEP-2322
//! MRTR) and completes when the client retries with its answer and the
//! request state it was given; and `regional`, whose `region` argument is
//! promoted to the `Mcp-Param-Region` HTTP header (`x-mcp-header`,
//! SEP-2243), which rmcp's HTTP layer checks against the body.

use std::sync::{Arc, LazyLock};

use rmcp::{
    ErrorData,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
        ElicitRequestParams, ElicitationSchema, InputRequest, InputRequests, InputRequiredResult,
        JsonObject, Tool,
    },
};
use serde_json::{Value, json};

use super::TestServer;

/// The MRTR tool.
pub const CONFIRM: &str = "confirm";
/// The tool with a header-promoted argument.
pub const REGIONAL: &str = "regional";
/// The key of `confirm`'s one input request.
pub const ANSWER_KEY: &str = "answer";
/// The request state `confirm` hands out with its question.
pub const CONFIRM_STATE: &str = "confirm-round-1";

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The two tools, in the order tools/list returns them.
pub(crate) fn tools() -> &'static [Tool] {
    static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
        vec![
            Tool::new(
                CONFIRM,
                "Asks the client (an input_required result with one elicitation, key \
                 \"answer\", and request state) to confirm `question`; on the retry with the \
                 answer and the same request state, returns `confirmed: <answer>`. Counts \
                 each round in counter \"confirm-rounds\"",
                object(json!({
                    "type": "object",
                    "properties": {"question": {"type": "string", "description": "What to ask"}},
                    "required": ["question"],
                })),
            ),
            Tool::new(
                REGIONAL,
                "Returns `region=<region>`; `region` travels in the Mcp-Param-Region header too",
                object(json!({
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region", "description": "A region"},
                    },
                    "required": ["region"],
                })),
            ),
        ]
    });
    &TOOLS
}

/// The form `confirm` asks the client to fill in.
fn answer_form() -> Result<ElicitationSchema, ErrorData> {
    serde_json::from_value(json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }))
    .map_err(|e| ErrorData::internal_error(format!("invalid form: {e}"), None))
}

impl TestServer {
    /// Runs a `--modern` tool; `None` when `request` names none.
    pub(crate) fn call_modern(
        &self,
        request: &CallToolRequestParams,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        if !self.shared.options.modern {
            return None;
        }
        let args = request.arguments.as_ref();
        let arg = |key: &str| {
            args.and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!("missing string argument {key:?}"), None)
                })
        };
        match request.name.as_ref() {
            REGIONAL => Some(arg("region").map(|region| {
                CallToolResult::success(vec![ContentBlock::text(format!("region={region}"))]).into()
            })),
            CONFIRM => Some(arg("question").and_then(|question| self.confirm(&question, request))),
            _ => None,
        }
    }

    fn confirm(
        &self,
        question: &str,
        request: &CallToolRequestParams,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Err(e) = self.counters().increment("confirm-rounds") {
            tracing::warn!("counting confirm-rounds: {e}");
        }
        let answer = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(ANSWER_KEY))
            .and_then(|r| r.get("content"))
            .and_then(|c| c.get("answer"))
            .and_then(Value::as_str);
        match (answer, request.request_state.as_deref()) {
            (Some(answer), Some(CONFIRM_STATE)) => {
                Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                    "confirmed: {answer}"
                ))])
                .into())
            }
            (Some(_), state) => Err(ErrorData::invalid_params(
                format!("confirm: request state {state:?} is not the one handed out"),
                None,
            )),
            (None, _) => {
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: question.to_owned(),
                    requested_schema: answer_form()?,
                };
                let mut requests = InputRequests::new();
                requests.insert(
                    ANSWER_KEY.to_owned(),
                    InputRequest::Elicitation(ElicitRequest::new(params)),
                );
                Ok(InputRequiredResult::new(Some(requests), Some(CONFIRM_STATE.to_owned())).into())
            }
        }
    }
}
