//! Tasks (MCP 2025-11-25) from a turn: a tool started as a task at its
//! server ([`Turn::start_task`]), through the turn's table like any call,
//! and a [`ToolTask`] to ask its state, await its result, or cancel it.
//! Awaiting polls the task at the interval its server suggests (within
//! [`MIN_POLL`] and [`MAX_POLL`]) and gives up with the run: an
//! interrupted run cancels the task at its server.

use std::time::Duration;

use extpool_host::{HostError, ToolResult, View};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{Turn, describe};
use crate::error::AgentError;

/// The shortest wait between two polls of a task.
pub const MIN_POLL: Duration = Duration::from_millis(50);
/// The longest wait between two polls of a task.
pub const MAX_POLL: Duration = Duration::from_secs(5);

/// Where a task stands, as its server says (`tasks/get`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskState {
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// What the server says of it, if anything.
    pub message: Option<String>,
}

impl TaskState {
    /// Whether the task has ended (completed, failed or cancelled).
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }
}

/// A task a turn started at a tool's server.
#[derive(Debug, Clone)]
pub struct ToolTask {
    view: View,
    token: CancellationToken,
    scope: String,
    tool: String,
    /// The tool's catalog name (what the guardrails know it by).
    catalog_name: String,
    server: String,
    id: String,
    poll: Duration,
}

impl Turn {
    /// Starts tool `name` (as the model names it) with `args` as a task at
    /// its server, kept there for `ttl` (the server's default when none):
    /// the rules and guardrails of a call apply. A server that does not
    /// take the tool as a task answers with an error.
    pub async fn start_task(
        &self,
        name: &str,
        args: Map<String, Value>,
        ttl: Option<Duration>,
    ) -> Result<ToolTask, AgentError> {
        self.check_open()?;
        let compiled = self.compiled();
        let mut task = Map::new();
        if let Some(ttl) = ttl {
            let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
            task.insert("ttl".into(), json!(ms));
        }
        let params = json!({"name": name, "arguments": args, "task": task});
        let Value::Object(params) = params else {
            unreachable!("a JSON object literal");
        };
        let view = &self.inner.view;
        let catalog_name = compiled
            .table()
            .row(name)
            .map_or_else(|| name.to_owned(), |row| row.tool.name.clone());
        let (server, answer) = view.start_task(compiled.table(), name, params).await?;
        let Some(id) = answer.pointer("/task/taskId").and_then(Value::as_str) else {
            return Err(AgentError::Host(HostError::Unsupported {
                what: format!("{name} as a task (it answered {answer})"),
                server,
            }));
        };
        let poll = answer
            .pointer("/task/pollInterval")
            .and_then(Value::as_u64)
            .map_or(MIN_POLL * 4, Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL);
        tracing::debug!(task = id, %server, tool = name, "a turn started a task");
        Ok(ToolTask {
            view: view.clone(),
            token: self.inner.token.clone(),
            scope: describe(view.scope()),
            tool: name.to_owned(),
            catalog_name,
            server,
            id: id.to_owned(),
            poll,
        })
    }
}

impl ToolTask {
    /// The server's id of the task.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool it runs, as the turn named it.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The server that runs it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Where the task stands now (`tasks/get`).
    pub async fn state(&self) -> Result<TaskState, AgentError> {
        self.ask("tasks/get").await
    }

    /// Cancels the task at its server (`tasks/cancel`); where it stands then.
    pub async fn cancel(&self) -> Result<TaskState, AgentError> {
        self.ask("tasks/cancel").await
    }

    /// Waits for the task to end and answers its result: what it returned
    /// (through the guardrails, as a call's result), or a tool error
    /// saying why it failed or that it was cancelled. An
    /// interrupted run cancels the task and answers
    /// [`AgentError::Interrupted`].
    pub async fn result(&self) -> Result<ToolResult, AgentError> {
        let awaited = async {
            loop {
                let state = self.state().await?;
                match state.status.as_str() {
                    "completed" => break,
                    "failed" | "cancelled" => {
                        let why = self
                            .view
                            .redacted_message(&state.message.unwrap_or_default());
                        return Ok(ToolResult::error(format!(
                            "task {} of {} {}: {why}",
                            self.id, self.tool, state.status
                        )));
                    }
                    // tasks/result waits for it, taking what it asks on the way.
                    "input_required" => break,
                    _ => tokio::time::sleep(self.poll).await,
                }
            }
            Ok(self
                .view
                .task_result(&self.catalog_name, &self.server, &self.id)
                .await?)
        };
        tokio::select! {
            biased;
            () = self.token.cancelled() => {
                if let Err(e) = self.cancel().await {
                    tracing::debug!(task = %self.id, error = %e, "an interrupted run's task could not be cancelled");
                }
                Err(AgentError::Interrupted { scope: self.scope.clone() })
            }
            result = awaited => result,
        }
    }

    async fn ask(&self, method: &str) -> Result<TaskState, AgentError> {
        let answer = self
            .view
            .request_server(&self.server, method, json!({"taskId": self.id}))
            .await?;
        let text = |key: &str| answer.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(TaskState {
            status: text("status").unwrap_or_default(),
            message: text("statusMessage"),
        })
    }
}
