//! Requests rmcp has no typed variant for, sent and answered whole: the
//! 2025-11-25 task methods (`tasks/get`, `tasks/result`, `tasks/list`,
//! `tasks/cancel`) and a task-augmented `tools/call`, whose `task` member
//! rmcp's `CallToolRequestParams` would drop. The answer comes back as the
//! server sent it ([`crate::transport::whole`]): over stdio, and over HTTP
//! whether it came as an SSE event or as plain JSON ([`crate::sse_guard`]).

use rmcp::model::{ClientRequest, CustomRequest, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde_json::Value;

use super::{McpClient, Repeat};
use crate::error::ClientError;

impl McpClient {
    /// Capability `name` as the server declared it in its `initialize`
    /// answer on the current connection, when rmcp has no field for it
    /// (the 2025-11-25 `tasks`); `None` when it declared none, or before it
    /// connected.
    pub fn declared_capability(&self, name: &str) -> Option<Value> {
        self.inner
            .conn
            .load()
            .as_ref()?
            .declared
            .capability(name)
            .cloned()
    }

    /// The `execution.taskSupport` of tool `name` (`optional` or
    /// `required`) in the server's latest listing on the current connection;
    /// `None` when it takes no task-augmented calls.
    pub fn task_support(&self, name: &str) -> Option<String> {
        self.inner.conn.load().as_ref()?.declared.task_support(name)
    }

    /// Sends request `method` with `params` as given and answers its
    /// result whole. A `tools/call` is not sent again after a lost
    /// connection (the server may have acted on it); anything else is.
    pub async fn request_whole(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let params = match params {
            Value::Null => None,
            params => Some(params),
        };
        let request = CustomRequest::new(method.to_owned(), params);
        let tool = (method == "tools/call")
            .then(|| {
                request
                    .params
                    .as_ref()?
                    .get("name")?
                    .as_str()
                    .map(str::to_owned)
            })
            .flatten();
        let repeat = match &tool {
            Some(name) => Repeat::Tool(name),
            None => Repeat::Always,
        };
        self.run("request", repeat, None, |peer| {
            let request = ClientRequest::CustomRequest(request.clone());
            // Where the transport keeps the answer whole when it cannot hand
            // it over so (HTTP).
            let declared = self.inner.conn.load().as_ref().map(|c| c.declared.clone());
            async move {
                let handle = peer
                    .send_request_with_option(request, PeerRequestOptions::no_options())
                    .await?;
                let id = handle.id.clone();
                let answer = handle.await_response().await?;
                let kept = declared.and_then(|d| d.take_answer(&id));
                match (answer, kept) {
                    (ServerResult::CustomResult(result), _) => Ok(result.0),
                    (_, Some(whole)) => Ok(whole),
                    (other, None) => serde_json::to_value(other).map_err(|e| {
                        rmcp::ServiceError::McpError(rmcp::ErrorData::internal_error(
                            e.to_string(),
                            None,
                        ))
                    }),
                }
            }
        })
        .await
    }
}
