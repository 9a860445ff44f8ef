//! The 2026-07-28 tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`)
//! for the gateway's clients, over the upstream servers' 2025-11-25 tasks.
//!
//! A client that declared the extension and calls a tool its server takes
//! only as a task (`execution.taskSupport: required`) gets a
//! `CreateTaskResult` with an id of the gateway's task map
//! ([`crate::tasks`]): the gateway started the task at the server. Its
//! `tasks/get` answers the task's state whole, with its result (asked of
//! the server with `tasks/result` once it completed) or its error;
//! `tasks/cancel` cancels it there. A request without a session keeps its
//! tasks for its principal. Not bridged: `tasks/update` (a 2025-11-25 task
//! asks its input on the `tasks/result` stream, which this era has not),
//! and status notifications (2026-07-28 clients listen for them on
//! `subscriptions/listen`).

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask,
    GetTaskParams, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use serde_json::{Map, Value, json};

use super::GatewayHandler;
use super::exchange::Exchange;
use crate::handler::passthrough::host_error;
use crate::tasks::{self, Found};

/// A 2025-11-25 task (`tasks/get`'s answer) as the extension's `Task`,
/// under gateway id `id`.
fn task_of(id: &str, answer: &Value) -> Task {
    let text = |key: &str| answer.get(key).and_then(Value::as_str).map(str::to_owned);
    let status = text("status")
        .and_then(|s| serde_json::from_value::<TaskStatus>(Value::String(s)).ok())
        .unwrap_or_default();
    let mut task = Task::new(
        id,
        status,
        text("createdAt").unwrap_or_default(),
        text("lastUpdatedAt").unwrap_or_default(),
    );
    task.status_message = text("statusMessage");
    task.ttl_ms = answer.get("ttl").and_then(Value::as_u64);
    task.poll_interval_ms = answer.get("pollInterval").and_then(Value::as_u64);
    task
}

/// A JSON-RPC error as the extension's task carries it.
fn error_object(error: &ErrorData) -> JsonObject {
    let mut out = JsonObject::new();
    out.insert("code".into(), json!(error.code.0));
    out.insert("message".into(), json!(error.message));
    out
}

impl GatewayHandler {
    /// Declares the extension in `capabilities` when the gateway declares
    /// tasks (a connected server takes task-augmented calls).
    pub(super) fn declare_tasks_extension(
        &self,
        capabilities: &mut rmcp::model::ServerCapabilities,
    ) {
        if self.declared_tasks().is_some() {
            capabilities.extensions.get_or_insert_default().insert(
                rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                JsonObject::new(),
            );
        }
    }

    /// Whether the `tools/call` of `name` in `ex` is made a task: its
    /// client declared the extension and speaks 2026-07-28, and the tool's
    /// server takes the tool only as a task.
    pub(super) fn call_makes_task(&self, name: &str, ex: &Exchange) -> bool {
        let modern = ex.is_modern();
        let declared = ex.declares_tasks();
        if !(modern && declared) {
            return false;
        }
        let table = ex.caller.table(self);
        self.view().task_support(&table, name).as_deref() == Some("required")
    }

    /// Starts `request` as a task at its tool's server; the extension's
    /// `CreateTaskResult` under the gateway's id.
    pub(super) async fn call_as_task(
        &self,
        request: CallToolRequestParams,
        ex: &Exchange,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut params = Map::new();
        params.insert("name".into(), json!(request.name));
        params.insert(
            "arguments".into(),
            Value::Object(request.arguments.unwrap_or_default()),
        );
        params.insert("task".into(), json!({}));
        let asker = self.asker(ex);
        let answer = match self.start_task(params, &asker, ex).await? {
            super::tasks::Started::Task(answer) => answer,
            // Answered at once (a guardrail blocked the call): its tool
            // result, as a plain call's.
            super::tasks::Started::Answered { result, .. } => {
                return Ok(CallToolResponse::Complete(result));
            }
        };
        let Some(created) = answer.get("task") else {
            return Err(ErrorData::internal_error(
                format!("{}: its server answered no task: {answer}", request.name),
                None,
            ));
        };
        let id = created
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Ok(CallToolResponse::Task(CreateTaskResult::new(task_of(
            id, created,
        ))))
    }

    /// `tasks/get`: the task's state at its server, with its result or
    /// error once it ended.
    pub(super) async fn get_extension_task(
        &self,
        params: GetTaskParams,
        ex: &Exchange,
    ) -> Result<GetTaskResult, ErrorData> {
        let id = params.task_id;
        let asker = self.asker(ex);
        let (server, upstream, tool) = match self.shared.tasks.find(&id, &asker) {
            Found::Task {
                server,
                upstream,
                tool,
            } => (server, upstream, tool),
            Found::Held(held) => {
                let task = task_of(&id, &held.task(&id));
                let result = match held.result(&id) {
                    Value::Object(mut result) => {
                        result.remove("_meta");
                        result
                    }
                    _ => JsonObject::new(),
                };
                return Ok(GetTaskResult::new(DetailedTask::new(
                    task,
                    TaskPayload::Completed { result },
                )));
            }
            Found::Lost => {
                let task = task_of(&id, &tasks::lost(&id));
                let error = error_object(&tasks::lost_result(&id));
                return Ok(GetTaskResult::new(DetailedTask::new(
                    task,
                    TaskPayload::Failed { error },
                )));
            }
            Found::Unknown => return Err(tasks::unknown(&id)),
        };
        let view = self.view();
        let ask = |method: &'static str| {
            view.request_server(&server, method, json!({ "taskId": upstream }))
        };
        let mut state = ask("tasks/get").await.map_err(|e| host_error(&e))?;
        super::tasks::redact_status(view, &mut state);
        let task = task_of(&id, &state);
        let result = match task.status {
            TaskStatus::Completed => match ask("tasks/result").await {
                Ok(answer) => view
                    .checked_task_answer(&tool, &server, answer)
                    .await
                    .map_err(|e| host_error(&e)),
                Err(e) => Err(host_error(&e)),
            },
            _ => Ok(Value::Null),
        };
        let payload = match task.status {
            TaskStatus::Completed => match result {
                Ok(Value::Object(mut result)) => {
                    result.remove("_meta");
                    TaskPayload::Completed { result }
                }
                Ok(other) => TaskPayload::Failed {
                    error: error_object(&ErrorData::internal_error(
                        format!("the task's result is no object: {other}"),
                        None,
                    )),
                },
                Err(error) => TaskPayload::Failed {
                    error: error_object(&error),
                },
            },
            TaskStatus::Failed => {
                let message = task
                    .status_message
                    .clone()
                    .unwrap_or_else(|| "the task failed".into());
                TaskPayload::Failed {
                    error: error_object(&ErrorData::internal_error(message, None)),
                }
            }
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            // A 2025-11-25 task's questions come on its tasks/result
            // stream, which this era has not: it stays working here.
            _ => TaskPayload::Working,
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/cancel`: the task cancelled at its server.
    pub(super) async fn cancel_extension_task(
        &self,
        params: CancelTaskParams,
        ex: &Exchange,
    ) -> Result<(), ErrorData> {
        let id = params.task_id;
        let asker = self.asker(ex);
        let (server, upstream) = match self.shared.tasks.find(&id, &asker) {
            Found::Task {
                server, upstream, ..
            } => (server, upstream),
            Found::Held(_) => {
                return Err(tasks::completed_already(&id));
            }
            Found::Lost => {
                return Err(ErrorData::invalid_params(
                    format!("task {id:?} already failed: the gateway restarted while it ran"),
                    None,
                ));
            }
            Found::Unknown => return Err(tasks::unknown(&id)),
        };
        self.view()
            .request_server(&server, "tasks/cancel", json!({ "taskId": upstream }))
            .await
            .map(drop)
            .map_err(|e| host_error(&e))
    }
}
