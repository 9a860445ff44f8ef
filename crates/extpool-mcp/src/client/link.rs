//! What one attempt's request is sent on: the connection's rmcp peer and,
//! on a stdio connection, its direct tool calls ([`crate::direct`]).

use std::ops::Deref;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, NumberOrString,
    ProgressToken, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RoleClient};
use rmcp::{Peer, ServiceError};

use crate::connection::Connection;
use crate::direct::Direct;
use crate::progress::{CancelOnDrop, ProgressRoutes, ProgressTo};

/// A connection's way to send requests; derefs to its rmcp peer for every
/// request but `tools/call`.
#[derive(Clone)]
pub(crate) struct Link {
    peer: Peer<RoleClient>,
    direct: Option<Arc<Direct>>,
}

impl Deref for Link {
    type Target = Peer<RoleClient>;

    fn deref(&self) -> &Peer<RoleClient> {
        &self.peer
    }
}

impl Link {
    /// The link of `conn`.
    pub(crate) fn of(conn: &Connection) -> Self {
        Self {
            peer: conn.peer.clone(),
            direct: conn.direct.clone(),
        }
    }

    /// One `tools/call` (no `input_required` rounds driven here).
    pub(crate) async fn call_tool(
        &self,
        params: CallToolRequestParams,
    ) -> Result<ServerResult, ServiceError> {
        match &self.direct {
            Some(direct) => direct
                .call_tool(direct.next_id(), params, false)
                .await
                .map(contentless),
            // Boxed: rmcp's request future (some 3.4 KiB) would otherwise
            // be part of every call's future, direct ones included, and be
            // copied whole with it wherever it is moved or boxed.
            None => Box::pin(self.peer.call_tool_once(params))
                .await
                .map(ServerResult::from),
        }
    }

    /// One `tools/call` whose `notifications/progress` go to `progress`
    /// while it runs.
    pub(crate) async fn call_tool_with_progress(
        &self,
        params: CallToolRequestParams,
        routes: &Arc<ProgressRoutes>,
        progress: ProgressTo,
    ) -> Result<ServerResult, ServiceError> {
        if let Some(direct) = &self.direct {
            let id = direct.next_id();
            let _route = routes.register(ProgressToken(NumberOrString::Number(id)), progress);
            return direct.call_tool(id, params, true).await.map(contentless);
        }
        // Boxed, as in `call_tool`.
        Box::pin(self.rmcp_call_tool_with_progress(params, routes, progress)).await
    }

    /// [`Link::call_tool_with_progress`] through rmcp's service.
    async fn rmcp_call_tool_with_progress(
        &self,
        params: CallToolRequestParams,
        routes: &Arc<ProgressRoutes>,
        progress: ProgressTo,
    ) -> Result<ServerResult, ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        let _route = routes.register(handle.progress_token.clone(), progress);
        let mut cancel = CancelOnDrop::new(self.peer.clone(), handle.id.clone());
        let response = handle.await_response().await;
        cancel.disarm();
        response
    }
}

/// A `tools/call` answer as rmcp's `call_tool_once` reads it: an answer
/// with no content of its own (`{}`, a task's acknowledgment, or only
/// `_meta`) is an empty result (rmcp's rule, which it keeps private).
fn contentless(result: ServerResult) -> ServerResult {
    match result {
        ServerResult::EmptyResult(_) => ServerResult::CallToolResult(CallToolResult::default()),
        ServerResult::TaskAckResult(ack) => {
            let mut result = CallToolResult::default();
            result.result_type = Some(ack.result_type);
            result.meta = ack.meta;
            ServerResult::CallToolResult(result)
        }
        ServerResult::CustomResult(custom) => match meta_only(&custom.0) {
            Some(meta) => {
                let mut result = CallToolResult::default();
                result.meta = Some(meta);
                ServerResult::CallToolResult(result)
            }
            None => ServerResult::CustomResult(custom),
        },
        other => other,
    }
}

/// The `_meta` of a result that holds nothing else.
fn meta_only(result: &serde_json::Value) -> Option<rmcp::model::MetaObject> {
    let object = result.as_object()?;
    if object.len() != 1 {
        return None;
    }
    serde_json::from_value(object.get("_meta")?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage};
    use serde_json::{Value, json};

    use super::*;

    /// `result` as the transport reads it off the wire, then as a direct
    /// call hands it on.
    fn answered(result: Value) -> ServerResult {
        let message: ServerJsonRpcMessage =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 1, "result": result})).unwrap();
        let JsonRpcMessage::Response(response) = message else {
            panic!("not a response: {message:?}");
        };
        contentless(response.result)
    }

    fn tool_result(result: ServerResult) -> CallToolResult {
        match result {
            ServerResult::CallToolResult(result) => result,
            other => panic!("not a tool result: {other:?}"),
        }
    }

    #[test]
    fn an_answer_without_content_reads_as_an_empty_tool_result() {
        let empty = tool_result(answered(json!({})));
        assert!(empty.content.is_empty() && empty.meta.is_none());
        let meta = tool_result(answered(json!({"_meta": {"note": "kept"}})));
        assert!(meta.content.is_empty());
        assert_eq!(meta.meta.unwrap().0["note"], "kept");
        // A result with content is passed on as it came.
        let full = tool_result(answered(
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false}),
        ));
        assert_eq!(full.content[0].as_text().unwrap().text, "hi");
    }
}
