//! Tasks (MCP 2025-11-25): a task-augmented `tools/call` started at the
//! server that owns the tool, through the same name resolution, rules and
//! guardrails as any call; the task methods (`tasks/get`, `tasks/result`,
//! `tasks/list`, `tasks/cancel`) sent to a named server whole; and the
//! servers' task status notifications. Which task belongs to whom is the
//! front end's to keep: the host only reaches the servers.

use extpool_core::ToolResult;

/// The `_meta` key of a task's result that names its task (MCP
/// 2025-11-25).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
use futures::{Stream, StreamExt};
use serde_json::{Map, Value, json};

use super::subject_of;
use crate::error::HostError;
use crate::passthrough::{relay, sources};
use crate::policy::{Resolved, ToolTable};
use crate::view::View;
use extpool_catalog::ToolRef;

impl View {
    /// Capability `name` as the first visible MCP server that declared it
    /// sent it, for capabilities the typed protocol model has no field for
    /// (MCP 2025-11-25 `tasks`): a front end declares them only when some
    /// server does. `None` when no connected server did.
    pub fn upstream_capability(&self, name: &str) -> Option<Value> {
        sources(&self.revision())
            .into_iter()
            .find_map(|(_, cap)| cap.mcp()?.declared_capability(name))
    }

    /// Whether tool `name` (as `table` names it) takes task-augmented
    /// calls at its server (`optional` or `required`, as the server listed
    /// it); `None` when it does not, or is not known to.
    pub fn task_support(&self, table: &ToolTable, name: &str) -> Option<String> {
        let Resolved::Tool(row) = table.resolve(name) else {
            return None;
        };
        let rev = table.revision();
        let Some(ToolRef::Remote(tool)) = rev.tool(&row.tool.name) else {
            return None;
        };
        let cap = rev
            .chain()
            .find_map(|r| r.source(&tool.server))
            .map(|s| s.capability.clone())?;
        cap.mcp()?.tool_task_support(tool.original())
    }

    /// Starts tool `name` (as `table` names it) as a task: `params` are
    /// the client's `tools/call` params whole (`task` among them), sent to
    /// the tool's server under the tool's own name after the rules and
    /// guardrails passed the call. Answers the server that holds the task
    /// and its answer whole (MCP's `CreateTaskResult`, the task under
    /// `task`). A built-in tool is no task.
    pub async fn start_task(
        &self,
        table: &ToolTable,
        name: &str,
        mut params: Map<String, Value>,
    ) -> Result<(String, Value), HostError> {
        let (rev, row) = self.callable(table, name)?;
        let Some(ToolRef::Remote(tool)) = rev.tool(&row.tool.name) else {
            return Err(HostError::Unsupported {
                what: format!("{name} as a task"),
                server: row.tool.server.clone(),
            });
        };
        let args = match params.get("arguments") {
            Some(Value::Object(args)) => args.clone(),
            _ => Map::new(),
        };
        if let Some(guard) = self.guard(|| subject_of(table, row, &args), &args) {
            guard.call(&args, &mut Vec::new()).await?;
        }
        let server = tool.server.to_string();
        params.insert("name".into(), Value::String(tool.original().to_owned()));
        let answer = self
            .request_server(&server, "tools/call", Value::Object(params))
            .await?;
        Ok((server, answer))
    }

    /// Sends request `method` with `params` whole to visible MCP server
    /// `server` and answers its result whole (the task methods).
    pub async fn request_server(
        &self,
        server: &str,
        method: &str,
        params: Value,
    ) -> Result<Value, HostError> {
        self.check_open()?;
        let cap = sources(&self.revision())
            .into_iter()
            .find(|(id, _)| id == server)
            .and_then(|(_, cap)| cap.mcp().is_some().then_some(cap));
        let unsupported = || HostError::Unsupported {
            what: method.to_owned(),
            server: server.to_owned(),
        };
        let Some(mcp) = cap.as_ref().and_then(|cap| cap.mcp()) else {
            return Err(unsupported());
        };
        match mcp.request_whole(method, params).await {
            Ok(Some(answer)) => Ok(answer),
            Ok(None) => Err(unsupported()),
            Err(e) => Err(relay("a task request", server, e)),
        }
    }

    /// The result of task `id` at `server` (`tasks/result`, which waits
    /// for the task to end) of tool `tool` (its catalog name), as a tool
    /// result through the guardrails, as a call's result. A failed task's
    /// error is a tool error the model can read; the host's own failures
    /// are errors.
    pub async fn task_result(
        &self,
        tool: &str,
        server: &str,
        id: &str,
    ) -> Result<ToolResult, HostError> {
        let answer = self
            .request_server(server, "tasks/result", json!({ "taskId": id }))
            .await;
        let answer = match answer {
            Ok(answer) => self.checked_task_answer(tool, server, answer).await?,
            Err(e @ (HostError::ShutDown | HostError::Scope(_))) => return Err(e),
            Err(e) => {
                let e = match self.task_guard(tool, server) {
                    Some(guard) => guard.error(e, &mut Vec::new()),
                    None => e,
                };
                return Ok(ToolResult::error(e.to_string()));
            }
        };
        Ok(
            match serde_json::from_value::<rmcp::model::CallToolResult>(answer) {
                Ok(result) => extpool_mcp::convert::tool_result(result),
                Err(e) => ToolResult::error(format!(
                    "task {id} of {server}: its result is no tool result: {e}"
                )),
            },
        )
    }

    /// `answer`, a server's `tasks/result` answer for a task of tool
    /// `tool` (its catalog name) at `server`, as the model may get it:
    /// whole when no guardrails are configured; else the tool result the
    /// guardrails leave, as a call's (one they withhold a tool error
    /// saying so), with the task it relates to kept in its `_meta`
    /// ([`RELATED_TASK`]).
    pub async fn checked_task_answer(
        &self,
        tool: &str,
        server: &str,
        answer: Value,
    ) -> Result<Value, HostError> {
        let Some(guard) = self.task_guard(tool, server) else {
            return Ok(answer);
        };
        let related = answer
            .get("_meta")
            .and_then(|m| m.get(RELATED_TASK))
            .cloned();
        let result = match serde_json::from_value::<rmcp::model::CallToolResult>(answer) {
            Ok(result) => extpool_mcp::convert::tool_result(result),
            Err(e) => ToolResult::error(format!("the task's result is no tool result: {e}")),
        };
        let checked = match guard.result(result, &mut Vec::new()).await {
            Ok(checked) => checked,
            Err(e @ HostError::Blocked { .. }) => ToolResult::error(e.to_string()),
            Err(e) => return Err(e),
        };
        let wire = extpool_mcp::convert::wire::into_call_tool_result(checked);
        let mut wire = serde_json::to_value(wire).unwrap_or(Value::Null);
        if let Value::Object(fields) = &mut wire {
            // The protocol era's envelope is not the result's.
            fields.remove("resultType");
            if let Some(related) = related {
                let meta = fields
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(RELATED_TASK.to_owned(), related);
                }
            }
        }
        Ok(wire)
    }

    /// The guard of a task's result: the tool's, without its arguments
    /// (the task keeps none).
    fn task_guard(&self, tool: &str, server: &str) -> Option<super::super::guard::Guard> {
        let subject = crate::guardrails::Subject {
            tool: tool.to_owned(),
            server: server.to_owned(),
            via: None,
            principal: super::super::guard::principal(),
        };
        self.guard(|| subject, &Map::new())
    }

    /// The task status notifications of the servers visible now, as
    /// `(server, params)`, until dropped.
    pub fn task_status(&self) -> impl Stream<Item = (String, Value)> + Send + 'static {
        let streams: Vec<_> = sources(&self.revision())
            .into_iter()
            .filter_map(|(server, cap)| {
                let status = cap.mcp()?.task_status()?;
                Some(status.map(move |params| (server.clone(), params)).boxed())
            })
            .collect();
        futures::stream::select_all(streams)
    }
}
