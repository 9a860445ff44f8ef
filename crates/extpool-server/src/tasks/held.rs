//! Tasks the gateway answers itself: a task-augmented call that never
//! reached its server (a guardrail blocked it) is a task all the same —
//! completed at once, its result the tool result a plain call gets — so a
//! client that asked for a task gets one.

use rmcp::ErrorData;
use serde_json::{Value, json};

use super::RELATED_TASK;

/// A task the gateway answered itself, at once: the call got a tool
/// result without reaching its server (a guardrail blocked it). A client
/// that asked for a task gets one, completed, and its result is the tool
/// result a plain call gets.
#[derive(Clone)]
pub(crate) struct Held {
    /// The result, as MCP's `CallToolResult` JSON.
    pub result: Value,
    /// When it was made (RFC 3339).
    pub created: String,
    /// How long it is kept, in milliseconds.
    pub ttl_ms: u64,
}

impl Held {
    /// The task as `tasks/get` answers it, under gateway id `id`.
    pub(crate) fn task(&self, id: &str) -> Value {
        json!({
            "taskId": id,
            "status": "completed",
            "createdAt": self.created,
            "lastUpdatedAt": self.created,
            "ttl": self.ttl_ms,
        })
    }

    /// Its result as `tasks/result` answers it, naming task `id`.
    pub(crate) fn result(&self, id: &str) -> Value {
        let mut result = self.result.clone();
        if let Value::Object(fields) = &mut result {
            fields.insert("_meta".into(), json!({ RELATED_TASK: {"taskId": id} }));
        }
        result
    }
}

/// The error `tasks/cancel` answers for a task the gateway answered itself
/// (completed already).
pub(crate) fn completed_already(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("task {id:?} already completed: it cannot be cancelled"),
        None,
    )
}
