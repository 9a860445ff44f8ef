//! The MCP operations of [`McpClient`]: each one a request run through
//! [`McpClient::run`] (timeout, reconnect-once, retry-once), with the
//! server's capabilities checked first where MCP makes them optional.

use std::time::Duration;

use std::sync::Arc;

use extpool_core::{CallContext, InputRound};
#[allow(deprecated)] // resources/subscribe and logging are the session era's
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, CompleteRequestParams, CompleteResult,
    ContentBlock, GetPromptRequestParams, GetPromptResult, GetSkillRequestParams, JsonObject,
    ListResourcesResult, LoggingLevel, PingRequest, Prompt, ReadResourceDirectoryRequestParams,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate, ServerCapabilities,
    ServerResult, SetLevelRequestParams, Skill, SubscribeRequestParams, Tool,
    UnsubscribeRequestParams,
};
use rmcp::{ErrorData, ServiceError};
use tokio::sync::mpsc::Sender;

use super::{McpClient, Repeat};
use crate::error::ClientError;
use crate::listing;
use crate::name::ServerName;
use crate::progress::{Progress, ProgressTo};

/// The input round of the call running on this task, if its client takes
/// `input_required` rounds.
fn input_round() -> Option<Arc<InputRound>> {
    CallContext::current().and_then(|ctx| ctx.input().cloned())
}

/// `tools/call` of `name` with `arguments`, and with the client's answers
/// to the server's questions and its request state when `round` has them.
fn tool_params(
    name: &str,
    arguments: Option<JsonObject>,
    round: Option<&InputRound>,
) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = arguments;
    if let Some(round) = round {
        params.input_responses = round
            .responses
            .as_ref()
            .map(|r| r.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        params.request_state = round.request_state.clone();
    }
    params
}

/// A call's answer as a result: an `input_required` answer goes to the
/// call's input round (the caller passes it on) and leaves an empty result
/// in its place; without a round, it becomes a tool error saying why the
/// call cannot go on (the model can read it; nothing was done yet).
fn settle(
    result: ServerResult,
    round: Option<&InputRound>,
    server: &ServerName,
) -> Result<CallToolResult, ServiceError> {
    match result {
        ServerResult::CallToolResult(result) => Ok(result),
        ServerResult::InputRequiredResult(asked) => match round {
            Some(round) => {
                let asked = serde_json::to_value(&asked).map_err(|e| {
                    ServiceError::McpError(ErrorData::internal_error(e.to_string(), None))
                })?;
                round.ask(asked);
                Ok(CallToolResult::success(Vec::new()))
            }
            None => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "MCP server \"{server}\" needs input from the client to go on (an \
                 input_required result, MCP 2026-07-28), and the client behind this call \
                 cannot be asked: only a 2026-07-28 client takes such rounds"
            ))])),
        },
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

impl McpClient {
    /// Every tool (all pages).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let epoch = self.tools_epoch();
        let tools = self.list_every::<Tool>().await?;
        self.inner.hints.record(epoch, &tools);
        self.inner.params.record(&tools);
        Ok(tools)
    }

    /// Every entry of `T`'s list method, page after page within the
    /// listing's bounds (see [`crate::listing`]); the entries it leaves out
    /// are recorded for [`McpClient::skipped_entries`].
    async fn list_every<T: listing::Item>(&self) -> Result<Vec<T>, ClientError> {
        let bounds = listing::Bounds::new(self.inner.max_message_bytes);
        let listed = self
            .run(T::METHOD, Repeat::Always, None, |p| async move {
                listing::list_all::<T>(&p, bounds).await
            })
            .await?
            .map_err(|problem| ClientError::Listing {
                server: self.inner.name.clone(),
                operation: T::METHOD,
                problem,
            })?;
        let server = &self.inner.name;
        self.inner
            .skipped
            .record(server, T::METHOD, listed.skipped, listed.skipped_count);
        Ok(listed.items)
    }

    /// The entries the latest listings left out because they could not be
    /// read (a tool `{"name": 5}`), one line each naming the list, the
    /// entry's place and name and the field at fault.
    pub fn skipped_entries(&self) -> Vec<String> {
        self.inner.skipped.lines()
    }

    /// Calls a tool with the default timeout.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with_timeout(name, arguments, None).await
    }

    /// Calls a tool; `timeout` overrides the server's request timeout.
    pub async fn call_tool_with_timeout(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        timeout: Option<Duration>,
    ) -> Result<CallToolResult, ClientError> {
        let round = input_round();
        let params = tool_params(name, arguments, round.as_deref());
        self.run("tools/call", Repeat::Tool(name), timeout, |p| {
            let params = params.clone();
            let round = round.clone();
            let server = self.inner.name.clone();
            async move {
                let mut params = params;
                crate::trace::inject_meta(&mut params.meta);
                let response = p.call_tool(params).await?;
                settle(response, round.as_deref(), &server)
            }
        })
        .await
    }

    /// Calls a tool and forwards its `notifications/progress` to `progress`
    /// while it runs (dropping the future cancels the call on the server).
    /// An update that does not fit in `progress` is dropped: its capacity
    /// bounds what a slow reader queues.
    pub async fn call_tool_with_progress(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        timeout: Option<Duration>,
        progress: Sender<Progress>,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_to(name, arguments, timeout, ProgressTo::Channel(progress))
            .await
    }

    /// Calls a tool, its progress going `to` while it runs.
    async fn call_tool_to(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        timeout: Option<Duration>,
        progress: ProgressTo,
    ) -> Result<CallToolResult, ClientError> {
        let round = input_round();
        let params = tool_params(name, arguments, round.as_deref());
        let routes = self.inner.progress.clone();
        self.run("tools/call", Repeat::Tool(name), timeout, |link| {
            let mut params = params.clone();
            crate::trace::inject_meta(&mut params.meta);
            let routes = routes.clone();
            let progress = progress.clone();
            let round = round.clone();
            let server = self.inner.name.clone();
            async move {
                let response = link
                    .call_tool_with_progress(params, &routes, progress)
                    .await?;
                settle(response, round.as_deref(), &server)
            }
        })
        .await
    }

    /// Calls a tool on behalf of the call running on this task: its
    /// [`CallContext`](extpool_core::CallContext) gets the call's progress,
    /// and its client answers what the server asks while the call runs.
    /// Without a context, the same as [`McpClient::call_tool`].
    pub async fn call_tool_in_context(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, ClientError> {
        let Some(ctx) = extpool_core::CallContext::current() else {
            return self.call_tool(name, arguments).await;
        };
        let result = self.call_tool_for(&ctx, name, arguments).await;
        // The URL elicitations a `URLElicitationRequiredError` names went
        // to this call's client: their completion goes there too.
        if let (Err(e), Some(session)) = (&result, ctx.client().and_then(|c| c.session()))
            && let Some(error) = e.rpc_error()
        {
            for id in crate::url_elicitation::required_ids(error) {
                self.inner
                    .callers
                    .elicitations
                    .remember(id, session.clone());
            }
        }
        result
    }

    /// [`McpClient::call_tool_in_context`] in context `ctx`.
    async fn call_tool_for(
        &self,
        ctx: &extpool_core::CallContext,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, ClientError> {
        let _caller = ctx
            .client()
            .map(|client| self.inner.callers.enter(client.clone()));
        if !ctx.wants_progress() {
            return self.call_tool(name, arguments).await;
        }
        let to = ProgressTo::Context(ctx.clone());
        self.call_tool_to(name, arguments, None, to).await
    }

    /// Every resource (all pages); empty when the server has no resources.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        if !self.has(|c| c.resources.is_some()).await? {
            return Ok(Vec::new());
        }
        self.list_every().await
    }

    /// Every resource template (all pages); empty when the server has no resources.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        if !self.has(|c| c.resources.is_some()).await? {
            return Ok(Vec::new());
        }
        self.list_every().await
    }

    /// Reads a resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        let params = ReadResourceRequestParams::new(uri.to_owned());
        self.run("resources/read", Repeat::Always, None, |p| {
            let params = params.clone();
            async move { p.read_resource(params).await }
        })
        .await
    }

    /// Every prompt (all pages); empty when the server has no prompts.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        if !self.has(|c| c.prompts.is_some()).await? {
            return Ok(Vec::new());
        }
        self.list_every().await
    }

    /// Renders a prompt.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, ClientError> {
        let mut params = GetPromptRequestParams::new(name.to_owned());
        params.arguments = arguments;
        self.run("prompts/get", Repeat::Always, None, |p| {
            let params = params.clone();
            async move { p.get_prompt(params).await }
        })
        .await
    }

    /// True when the server declared the SEP-2640 skills extension.
    pub async fn supports_skills(&self) -> Result<bool, ClientError> {
        self.has(ServerCapabilities::supports_skills).await
    }

    /// SEP-2640 `skills/list` (all pages); empty without the extension.
    pub async fn list_skills(&self) -> Result<Vec<Skill>, ClientError> {
        if !self.supports_skills().await? {
            return Ok(Vec::new());
        }
        self.list_every().await
    }

    /// SEP-2640 `skills/get` for a SKILL.md URI.
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, ClientError> {
        let params = GetSkillRequestParams::new(uri.to_owned());
        self.run("skills/get", Repeat::Always, None, |p| {
            let params = params.clone();
            async move { p.get_skill(params).await.map(|r| r.skill) }
        })
        .await
    }

    /// True when the server declared `directoryRead` in the skills
    /// extension: only then may `resources/directory/read` be sent.
    pub async fn supports_directory_read(&self) -> Result<bool, ClientError> {
        self.has(ServerCapabilities::supports_directory_read).await
    }

    /// SEP-2640 `resources/directory/read`: the page after `cursor` of the
    /// direct children of directory `uri` (rmcp sends nothing, and answers
    /// `-32601`, when the server did not declare `directoryRead`).
    pub async fn read_resource_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, ClientError> {
        let mut params = ReadResourceDirectoryRequestParams::new(uri.to_owned());
        if let Some(cursor) = cursor {
            params = params.with_cursor(cursor.to_owned());
        }
        self.run("resources/directory/read", Repeat::Always, None, |p| {
            let params = params.clone();
            async move { p.read_resource_directory(params).await }
        })
        .await
    }

    /// `completion/complete`; an empty completion when the server did
    /// not declare completions.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ClientError> {
        if !self.has(|c| c.completions.is_some()).await? {
            return Ok(CompleteResult::default());
        }
        self.run("completion/complete", Repeat::Always, None, |p| {
            let params = params.clone();
            async move { p.complete(params).await }
        })
        .await
    }

    /// True when the server declared resource subscriptions.
    pub async fn supports_subscriptions(&self) -> Result<bool, ClientError> {
        self.has(|c| {
            c.resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true))
        })
        .await
    }

    /// `resources/subscribe` (`on`) or `resources/unsubscribe` of `uri`.
    #[allow(deprecated)] // resources/subscribe is the session era's; 2026-07-28 servers use subscriptions/listen
    pub async fn subscribe(&self, uri: &str, on: bool) -> Result<(), ClientError> {
        let operation = if on {
            "resources/subscribe"
        } else {
            "resources/unsubscribe"
        };
        self.run(operation, Repeat::Always, None, |p| {
            let uri = uri.to_owned();
            async move {
                if on {
                    p.subscribe(SubscribeRequestParams::new(uri)).await
                } else {
                    p.unsubscribe(UnsubscribeRequestParams::new(uri)).await
                }
            }
        })
        .await
    }

    /// True when the server declared logging.
    pub async fn supports_logging(&self) -> Result<bool, ClientError> {
        self.has(|c| c.logging.is_some()).await
    }

    /// `logging/setLevel`.
    #[allow(deprecated)] // logging (SEP-2577) is deprecated but servers still offer it
    pub async fn set_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        let params = SetLevelRequestParams::new(level);
        self.run("logging/setLevel", Repeat::Always, None, |p| {
            let params = params.clone();
            async move { p.set_level(params).await }
        })
        .await
    }

    /// `ping`.
    pub async fn ping(&self) -> Result<(), ClientError> {
        self.run("ping", Repeat::Always, None, |p| async move {
            p.send_request(ClientRequest::PingRequest(PingRequest::default()))
                .await
                .map(drop)
        })
        .await
    }

    async fn has(&self, check: impl Fn(&ServerCapabilities) -> bool) -> Result<bool, ClientError> {
        let conn = self.live().await?;
        Ok(conn
            .peer
            .peer_info()
            .is_some_and(|info| check(&info.capabilities)))
    }
}

#[cfg(test)]
mod future_sizes {
    use super::*;
    use crate::client::link::Link;

    /// The size of the future `f` returns.
    fn future_size<A, F: Future>(_: fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A tool call's future is boxed whole where it is type-erased (the
    /// catalog's `call_tool`), which copies all of it: rmcp's request
    /// future (some 3.4 KiB) is boxed apart, since a stdio call goes past
    /// it. Measured in a debug build when set: a call in context 3,288
    /// bytes (9,392 with rmcp's future inside), a link's `call_tool` 496
    /// (3,624).
    #[test]
    fn a_tool_calls_future_does_not_carry_rmcps_request_future() {
        let rmcp = future_size(|p: &'static rmcp::Peer<rmcp::RoleClient>| {
            p.call_tool_once(CallToolRequestParams::new("echo"))
        });
        let link = future_size(|l: &'static Link| l.call_tool(CallToolRequestParams::new("echo")));
        let call = future_size(|c: &'static McpClient| c.call_tool_in_context("echo", None));
        assert!(rmcp > 2 * 1024, "rmcp's request future is {rmcp} bytes");
        assert!(link < 1024, "a link's call_tool future is {link} bytes");
        assert!(call < 6 * 1024, "a tool call's future is {call} bytes");
    }
}
