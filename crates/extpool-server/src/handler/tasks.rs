//! The 2025-11-25 task requests of a session, answered through the
//! gateway's task map ([`crate::tasks`]): a task-augmented `tools/call`
//! started at the tool's server, and `tasks/get`, `tasks/result`,
//! `tasks/list` and `tasks/cancel` sent to the server that holds the task
//! under its own id, the answer carrying the gateway's. The server's
//! `notifications/tasks/status` about a task go to the session that holds
//! it, renamed likewise.
//!
//! These come as `CustomRequest`s (rmcp has no variants for them; the
//! answers made in the HTTP task turn a `tools/call` with `task` into one,
//! [`crate::front`]), and their answers are the JSON the server sent.

use std::sync::Arc;

use futures::StreamExt;
use rmcp::ErrorData;
use rmcp::model::{CustomNotification, CustomRequest, CustomResult, ServerNotification};
use serde_json::{Map, Value};

use super::GatewayHandler;
use super::exchange::Exchange;
use crate::handler::passthrough::host_error;
use crate::tasks::{self, Asker, Found, Tasks};

/// The methods answered here.
pub(crate) const METHODS: [&str; 6] = [
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
];

/// The method of a task status notification.
const STATUS: &str = "notifications/tasks/status";

impl GatewayHandler {
    /// The `tasks` capability this connection's gateway declares: when a
    /// server visible here takes task-augmented `tools/call`.
    pub(crate) fn declared_tasks(&self) -> Option<Value> {
        tasks::declared(&self.view().upstream_capability("tasks")?)
    }

    /// A handle that dies with this connection's session (its durable
    /// session, its implicit one, else the connection): what outlives its
    /// session is told by it ([`crate::tasks`]).
    fn liveness(&self) -> std::sync::Weak<dyn std::any::Any + Send + Sync> {
        type Alive = std::sync::Weak<dyn std::any::Any + Send + Sync>;
        if let Some(open) = &self.state.durable {
            return Arc::downgrade(open) as Alive;
        }
        if let Some(session) = self.state.session.get() {
            return Arc::downgrade(session) as Alive;
        }
        Arc::downgrade(&self.state) as Alive
    }

    /// Who asks, for the task map: the session (its peer takes the
    /// task's notifications), or, for a request without one, its
    /// principal.
    pub(super) fn asker(&self, ex: &Exchange) -> Asker {
        let principal = ex.caller.principal.clone();
        let owner = crate::identity::owner_of(&principal);
        if self.has_session() {
            return Asker {
                session: self.session_id().to_owned(),
                alive: self.liveness(),
                owner,
                peer: self.client_peer(ex),
            };
        }
        // No session id has a space.
        let session = format!("principal {}", owner.as_deref().unwrap_or("local"));
        let alive: std::sync::Weak<dyn std::any::Any + Send + Sync> = std::sync::Weak::<()>::new();
        Asker {
            session,
            alive,
            owner,
            peer: None,
        }
    }

    /// Answers a `CustomRequest`: a task request, else method not found.
    pub(super) async fn custom_request(
        &self,
        request: CustomRequest,
        ex: &Exchange,
    ) -> Result<CustomResult, ErrorData> {
        if !METHODS.contains(&request.method.as_str())
            || !self.has_session()
            || self.declared_tasks().is_none()
        {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                request.method,
                None,
            ));
        }
        let params = match request.params {
            Some(Value::Object(params)) => params,
            None | Some(Value::Null) => Map::new(),
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    format!("{}: params must be an object", request.method),
                    None,
                ));
            }
        };
        let asker = self.asker(ex);
        let answer = match request.method.as_str() {
            "tools/list" => {
                return self.list_with_execution(params, ex).await.map(CustomResult);
            }
            "tools/call" => {
                let ttl = params
                    .get("task")
                    .and_then(|t| t.get("ttl"))
                    .and_then(Value::as_u64);
                match self.start_task(params, &asker, ex).await? {
                    Started::Task(answer) => Ok(answer),
                    // A task asked for is a task: one of the gateway's own,
                    // completed, its result the tool result.
                    Started::Answered { tool, result } => self
                        .shared
                        .tasks
                        .hold(&asker, &tool, legacy_json(result), ttl)
                        .map(|(id, held)| serde_json::json!({ "task": held.task(&id) })),
                }
            }
            "tasks/list" => self.list_tasks(&asker).await,
            method => self.task_request(method, params, &asker).await,
        };
        answer.map(CustomResult)
    }

    /// `tools/list` as the typed handler answers it, each tool whose server
    /// takes it as a task saying so (`execution.taskSupport`).
    async fn list_with_execution(
        &self,
        params: Map<String, Value>,
        ex: &Exchange,
    ) -> Result<Value, ErrorData> {
        // Read as its params are (a cursor): refused when they are not.
        let _page: Option<rmcp::model::PaginatedRequestParams> = (!params.is_empty())
            .then(|| serde_json::from_value(Value::Object(params)))
            .transpose()
            .map_err(|e| ErrorData::invalid_params(format!("tools/list: {e}"), None))?;
        let listed = self.list_tools(ex).await;
        let table = ex.caller.table(self);
        // As rmcp answers a session-era client.
        let mut result = rmcp::model::ServerResult::ListToolsResult(listed);
        result.strip_result_type_for_legacy_peer();
        result.strip_non_object_output_for_legacy_peer();
        let mut value = serde_json::to_value(result)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if let Some(Value::Array(tools)) = value.get_mut("tools") {
            for tool in tools {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                if let Some(support) = self.view().task_support(&table, name) {
                    tool["execution"] = serde_json::json!({ "taskSupport": support });
                }
            }
        }
        Ok(value)
    }

    /// A task-augmented `tools/call`: started at the tool's server under
    /// the name the session's table resolves, its task kept for `asker`;
    /// or answered at once, as a plain call of the tool would be, when it
    /// never reached the server (a guardrail blocked it).
    pub(super) async fn start_task(
        &self,
        params: Map<String, Value>,
        asker: &Asker,
        ex: &Exchange,
    ) -> Result<Started, ErrorData> {
        let Some(name) = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(ErrorData::invalid_params("tools/call: no tool name", None));
        };
        let table = ex.caller.table(self);
        if self.view().task_support(&table, &name).is_none() {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "{name} takes no task-augmented calls: its server does not list it with execution.taskSupport"
                ),
                None,
            ));
        }
        self.within_rate(ex, &[&name]).await?;
        let tool = table
            .row(&name)
            .map_or_else(|| name.clone(), |row| row.tool.name.clone());
        // Listening before the start: the server's first status may come
        // before its answer.
        let status = self.view().task_status();
        let started = self.view().start_task(&table, &name, params).await;
        let (server, mut answer) = match started {
            Ok(started) => started,
            // As a plain call's: a refusal is the client's error, a block
            // or a server's failure a tool error the model reads.
            Err(e) => {
                let result = super::calls::call_error(e, self.session_id())?;
                return Ok(Started::Answered { tool, result });
            }
        };
        let Some(upstream) = answer
            .pointer("/task/taskId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            // Not a task after all (a server may answer at once).
            return Ok(Started::Task(answer));
        };
        let ttl = answer.pointer("/task/ttl").and_then(Value::as_u64);
        let id = self
            .shared
            .tasks
            .insert(asker, (&server, &tool), &upstream, ttl)?;
        tasks::rename(&mut answer, &id);
        tracing::info!(task = %id, server = %server, tool = %name, session = %asker.session, "task started");
        relay_status(
            self.shared.tasks.clone(),
            self.view().clone(),
            (id, server, upstream),
            status.boxed(),
        );
        Ok(Started::Task(answer))
    }

    /// `tasks/get`, `tasks/result` or `tasks/cancel` of the task `params`
    /// name, at its server.
    async fn task_request(
        &self,
        method: &str,
        mut params: Map<String, Value>,
        asker: &Asker,
    ) -> Result<Value, ErrorData> {
        let Some(id) = params
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(ErrorData::invalid_params(
                format!("{method}: no taskId"),
                None,
            ));
        };
        let (server, upstream, tool) = match self.shared.tasks.find(&id, asker) {
            Found::Task {
                server,
                upstream,
                tool,
            } => (server, upstream, tool),
            Found::Held(held) => {
                return match method {
                    "tasks/get" => Ok(held.task(&id)),
                    "tasks/result" => Ok(held.result(&id)),
                    _ => Err(tasks::completed_already(&id)),
                };
            }
            Found::Lost if method == "tasks/get" => return Ok(tasks::lost(&id)),
            Found::Lost if method == "tasks/result" => return Err(tasks::lost_result(&id)),
            Found::Lost => {
                return Err(ErrorData::invalid_params(
                    format!("task {id:?} already failed: the gateway restarted while it ran"),
                    None,
                ));
            }
            Found::Unknown => return Err(tasks::unknown(&id)),
        };
        params.insert("taskId".into(), Value::String(upstream));
        let answer = self
            .view()
            .request_server(&server, method, Value::Object(params))
            .await;
        let mut answer = match (answer, method) {
            (Ok(answer), "tasks/result") => self
                .view()
                .checked_task_answer(&tool, &server, answer)
                .await
                .map_err(|e| host_error(&e))?,
            (Ok(mut answer), _) => {
                redact_status(self.view(), &mut answer);
                answer
            }
            (Err(e), _) => return Err(host_error(&e)),
        };
        tasks::rename(&mut answer, &id);
        Ok(answer)
    }

    /// `tasks/list`: the asker's tasks, each as its server answers
    /// `tasks/get` now (those it no longer knows are forgotten).
    async fn list_tasks(&self, asker: &Asker) -> Result<Value, ErrorData> {
        let held = self.shared.tasks.list(asker);
        let view = self.view();
        let asked = held.iter().map(|(id, entry)| async move {
            if let Some(held) = &entry.held {
                return Some(held.task(id));
            }
            let params = serde_json::json!({"taskId": entry.upstream});
            match view.request_server(&entry.server, "tasks/get", params).await {
                Ok(mut task) => {
                    redact_status(view, &mut task);
                    tasks::rename(&mut task, id);
                    if let Value::Object(task) = &mut task {
                        task.remove("_meta");
                    }
                    Some(task)
                }
                Err(e) => {
                    tracing::debug!(task = %id, error = %e, "a task is no longer known to its server");
                    self.shared.tasks.forget(id);
                    None
                }
            }
        });
        let listed: Vec<Value> = futures::future::join_all(asked)
            .await
            .into_iter()
            .flatten()
            .collect();
        Ok(serde_json::json!({ "tasks": listed }))
    }
}

/// How a task-augmented call went.
pub(super) enum Started {
    /// Started at its server: the server's answer, under the gateway's id.
    Task(Value),
    /// Answered at once, with the tool result a plain call gets, without
    /// reaching its server (a guardrail blocked it).
    Answered {
        /// The tool's catalog name.
        tool: String,
        /// The result.
        result: rmcp::model::CallToolResult,
    },
}

/// A call's `result` as the JSON a 2025-11-25 client reads.
fn legacy_json(result: rmcp::model::CallToolResult) -> Value {
    let mut value = serde_json::to_value(result).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut value {
        fields.remove("resultType");
    }
    value
}

/// A task's `statusMessage` (`tasks/get`, a status notification), a
/// server's words that may reach a model, as the `redact` rules leave it.
pub(super) fn redact_status(view: &extpool_host::View, task: &mut Value) {
    if let Some(Value::String(message)) = task.get_mut("statusMessage") {
        *message = view.redacted_message(message);
    }
}

/// Relays the server's status notifications about task `upstream` of
/// `server` to whichever session holds gateway task `id`, renamed (their
/// messages as the `redact` rules of `view` leave them), until the task
/// ends, is forgotten, or the server's notifications end.
fn relay_status(
    tasks: Arc<Tasks>,
    view: extpool_host::View,
    (id, server, upstream): (String, String, String),
    mut status: futures::stream::BoxStream<'static, (String, Value)>,
) {
    let relay = async move {
        while let Some((from, mut params)) = status.next().await {
            if from != server
                || params.get("taskId").and_then(Value::as_str) != Some(upstream.as_str())
            {
                continue;
            }
            let Some(peer) = tasks.peer_of(&id) else {
                return;
            };
            tasks::rename(&mut params, &id);
            redact_status(&view, &mut params);
            let terminal = matches!(
                params.get("status").and_then(Value::as_str),
                Some("completed" | "failed" | "cancelled")
            );
            let notification = ServerNotification::CustomNotification(CustomNotification::new(
                STATUS,
                Some(params),
            ));
            if let Err(e) = peer.notify(notification).await {
                tracing::debug!(task = %id, error = %e, "a task status could not be sent to its session");
            }
            if terminal {
                return;
            }
        }
    };
    // A task is kept no longer than this, and neither is its relay.
    tokio::spawn(async move {
        let _ = tokio::time::timeout(tasks::MAX_TTL, relay).await;
    });
}
