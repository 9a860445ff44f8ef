//! Tool definitions: names, descriptions and JSON input (and output) schemas.
//! What each tool does is in [`super::tool_calls`].

use std::sync::{Arc, LazyLock};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use super::TestServer;

/// Prefix of the dummy tools made by `--extra-tools N`: `tool_0000`, …
pub(crate) const EXTRA_PREFIX: &str = "tool_";

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// An object schema with the given properties and required names.
fn schema(properties: Value, required: &[&str]) -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": properties,
        "required": required,
    }))
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn count_schema() -> Arc<JsonObject> {
    schema(
        json!({"count": {"type": "integer", "minimum": 0, "description": "Number of items"}}),
        &["count"],
    )
}

/// The output schema of `structured`.
fn items_output_schema() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                    "required": ["id", "name"],
                },
            },
        },
        "required": ["items"],
    }))
}

/// The schema of echo-like tools (dummy and dynamic ones).
pub(crate) fn echo_like(name: String, description: String) -> Tool {
    Tool::new(
        name,
        description,
        schema(
            json!({"message": string("Text to return; the tool's name when absent")}),
            &[],
        ),
    )
}

/// The built-in tools, in the order tools/list returns them; built once,
/// since the HTTP layer looks a tool up on every call.
pub(crate) fn builtin() -> &'static [Tool] {
    static BUILTIN: LazyLock<Vec<Tool>> = LazyLock::new(build_builtin);
    &BUILTIN
}

/// Tools with no effect a client could observe twice: marked
/// `readOnlyHint`, so clients may send them again after a dropped connection.
/// Everything else (counters, crash, notifications, added items) is a
/// mutation as far as a client knows.
const READ_ONLY: &[&str] = &[
    "echo",
    "add",
    "count",
    "tool_error",
    "sleep",
    "barrier",
    "large_text",
    "structured",
    "nested",
    "json_block",
    "mixed_content",
    "env",
];

fn build_builtin() -> Vec<Tool> {
    let mut tools = unannotated_builtin();
    for tool in &mut tools {
        if READ_ONLY.contains(&tool.name.as_ref()) {
            tool.annotations = Some(ToolAnnotations::new().read_only(true));
        }
    }
    tools
}

fn unannotated_builtin() -> Vec<Tool> {
    vec![
        Tool::new(
            "echo",
            "Returns `message` unchanged",
            schema(json!({"message": string("Text to echo")}), &["message"]),
        ),
        Tool::new(
            "add",
            "Returns the sum of `a` and `b` as text",
            schema(
                json!({"a": {"type": "number"}, "b": {"type": "number"}}),
                &["a", "b"],
            ),
        ),
        Tool::new(
            "counter",
            "Increments the persistent counter `key` (default \"default\") and returns its new value",
            schema(json!({"key": string("Counter name (default: \"default\")")}), &[]),
        ),
        Tool::new(
            "count",
            "Returns the value of counter `key` without incrementing it",
            schema(json!({"key": string("Counter name")}), &["key"]),
        ),
        Tool::new(
            "fail",
            "Increments counter \"fail\", then answers with a JSON-RPC error (-32603) carrying `message`",
            schema(json!({"message": string("Error message")}), &[]),
        ),
        Tool::new(
            "tool_error",
            "Returns a tool result with isError: true and `message` as text",
            schema(json!({"message": string("Error message")}), &[]),
        ),
        Tool::new(
            "sleep",
            "Sleeps `ms` milliseconds (reporting progress 0 first, given a progress token); \
             when cancelled, increments counter \"cancelled\" and stops",
            schema(
                json!({"ms": {"type": "integer", "minimum": 0, "description": "Milliseconds"}}),
                &["ms"],
            ),
        ),
        Tool::new(
            "barrier",
            "Records an arrival at barrier `key` (counter \"barrier-<key>\"), then waits until \
             `parties` calls with that key have arrived in this process; when cancelled, \
             increments counter \"cancelled\" and stops",
            schema(
                json!({
                    "key": string("Barrier name"),
                    "parties": {"type": "integer", "minimum": 1, "maximum": super::barrier::MAX_PARTIES, "description": "Calls to wait for"},
                }),
                &["key", "parties"],
            ),
        ),
        Tool::new(
            "crash",
            "Exits the server process (code 3) before answering. With once: true, only when the \
             state directory has no `crashed` marker (it creates it); otherwise increments counter \
             \"crash\" and returns \"survived\"",
            schema(
                json!({"once": {"type": "boolean", "description": "Crash only the first time"}}),
                &[],
            ),
        ),
        Tool::new(
            "add_tool",
            "Adds an echo-like tool called `name`, then sends notifications/tools/list_changed",
            schema(json!({"name": string("Name of the new tool")}), &["name"]),
        ),
        Tool::new(
            "add_resource",
            "Adds a text resource, then sends notifications/resources/list_changed",
            schema(
                json!({"uri": string("URI of the new resource"), "text": string("Its content")}),
                &["uri", "text"],
            ),
        ),
        Tool::new(
            "add_prompt",
            "Adds an argument-less prompt called `name`, then sends notifications/prompts/list_changed",
            schema(json!({"name": string("Name of the new prompt")}), &["name"]),
        ),
        Tool::new(
            "notify",
            "Sends `count` (default 1) notifications/<kind>/list_changed without changing \
             anything; kind is tools (default), resources or prompts. Kind log sends \
             notifications/message, kind progress progress notifications for this call, \
             kind mixed that many pairs of a notifications/message `step i` and progress i \
             for this call, kind elicit that many elicitation requests at once (answers counted)",
            schema(
                json!({
                    "kind": {"type": "string", "enum": ["tools", "resources", "prompts", "log", "progress", "mixed", "elicit"]},
                    "count": {"type": "integer", "minimum": 0, "description": "How many (default 1)"},
                }),
                &[],
            ),
        ),
        Tool::new(
            "http_status",
            "Over HTTP: increments counter \"http_status\", then the HTTP request is answered \
             with status `code` instead of a JSON-RPC response. Over stdio: a tool error",
            schema(
                json!({"code": {"type": "integer", "minimum": 100, "maximum": 599}}),
                &["code"],
            ),
        ),
        Tool::new(
            "large_text",
            "Returns one text block of exactly `bytes` bytes",
            schema(
                json!({"bytes": {"type": "integer", "minimum": 0, "description": "Size in bytes"}}),
                &["bytes"],
            ),
        ),
        Tool::new(
            "structured",
            "Returns structuredContent {\"items\":[{\"id\":0,\"name\":\"item-0\"},…]} and the same JSON as text",
            count_schema(),
        )
        .with_raw_output_schema(items_output_schema()),
        Tool::new(
            "nested",
            "Returns structuredContent {\"a\":{\"a\":…}} nested `depth` objects deep",
            schema(
                json!({"depth": {"type": "integer", "minimum": 0, "description": "Nesting depth"}}),
                &["depth"],
            ),
        ),
        Tool::new(
            "json_block",
            "Returns a text block holding a JSON document {\"items\":[…]} (no output schema)",
            count_schema(),
        ),
        Tool::new(
            "mixed_content",
            "Returns text, image, audio, an embedded resource and a resource link, in that order",
            schema(json!({}), &[]),
        ),
        Tool::new(
            "env",
            "Returns the value of environment variable `name`, or <unset>",
            schema(json!({"name": string("Variable name")}), &["name"]),
        ),
        Tool::new(
            "stderr",
            "Writes `message` to the server's stderr, then returns \"ok\"",
            schema(json!({"message": string("Line to write")}), &["message"]),
        ),
        Tool::new(
            "sample",
            "Asks the client to sample (`sampling/createMessage` with `prompt` as the user \
             message) and returns the text of its answer",
            schema(json!({"prompt": string("What to ask the model")}), &["prompt"]),
        ),
        Tool::new(
            "elicit",
            "Asks the user (`elicitation/create`, a form with one string field `answer`) \
             with `message`, and returns `action=<accept|decline|cancel>, content=<JSON>`; \
             after the answer, logs `answered: <it>` (info) and, given a progress token, \
             reports progress 1 of 1 (`answered`). Counts each call in counter \"elicit\"",
            schema(json!({"message": string("What to ask the user")}), &["message"]),
        ),
    ]
}

const WRITE_BARRIER: &str = "barrier_write";

/// `barrier` as a mutation (no `readOnlyHint`): a call held in the server
/// that a client must never send twice (`--write-barrier`).
fn write_barrier() -> Tool {
    let mut tool = unannotated_builtin()
        .into_iter()
        .find(|t| t.name == "barrier")
        .unwrap_or_else(|| unreachable!("barrier is built in"));
    tool.name = WRITE_BARRIER.into();
    tool.description = Some(
        "As barrier, but a mutation (not read-only): records an arrival at barrier `key` \
         (counter \"barrier-<key>\"), then waits until `parties` calls with that key have arrived"
            .into(),
    );
    tool
}

/// Tools whose names no catalog may publish: an ESC byte, 300 bytes, and
/// a second `echo`.
fn bad_names() -> [Tool; 3] {
    let tool = |name: String| echo_like(name, "A tool with a name to refuse".into());
    [
        tool("bad\u{1b}[31mname".into()),
        tool(format!("long_{}", "x".repeat(295))),
        tool("echo".into()),
    ]
}

/// Dummy tool number `index`.
fn extra(index: usize) -> Tool {
    let name = extra_name(index);
    let description = format!("Dummy tool number {index}; returns its name or `message`");
    echo_like(name, description)
}

impl TestServer {
    /// Every tool: built-in, then `tool_0000`…, then the dynamic ones by name.
    pub(crate) fn all_tools(&self) -> Vec<Tool> {
        if let Some(tools) = &self.shared.options.tools {
            return tools.clone();
        }
        let mut all = builtin().to_vec();
        if self.shared.options.conformance {
            all.extend_from_slice(super::conformance::tools());
        }
        if self.shared.options.modern {
            all.extend_from_slice(super::modern::tools());
        }
        if self.shared.options.url_elicitation {
            all.extend_from_slice(super::url_elicitation::tools());
        }
        if self.shared.options.probe {
            all.extend_from_slice(super::probe::tools());
        }
        all.extend((0..self.shared.options.extra_tools).map(extra));
        all.extend(self.read_dynamic().tools.values().cloned());
        all.extend(
            self.shared
                .options
                .lists
                .tools
                .iter()
                .map(|t| t.tool.clone()),
        );
        if self.shared.options.bad_tool_names {
            all.extend(bad_names());
        }
        if self.shared.options.write_barrier {
            all.push(write_barrier());
        }
        all
    }

    /// The index of `name` if it is one of this server's dummy tools.
    pub(crate) fn extra_index(&self, name: &str) -> Option<usize> {
        let digits = name.strip_prefix(EXTRA_PREFIX)?;
        if digits.len() < 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let index: usize = digits.parse().ok()?;
        (index < self.shared.options.extra_tools && extra_name(index) == name).then_some(index)
    }

    /// Looks one tool up without building the whole list.
    pub(crate) fn find_tool(&self, name: &str) -> Option<Tool> {
        if let Some(tools) = &self.shared.options.tools {
            return tools.iter().find(|t| t.name == name).cloned();
        }
        if let Some(tool) = builtin().iter().find(|t| t.name == name) {
            return Some(tool.clone());
        }
        if self.shared.options.conformance
            && let Some(tool) = super::conformance::tools().iter().find(|t| t.name == name)
        {
            return Some(tool.clone());
        }
        if self.shared.options.modern
            && let Some(tool) = super::modern::tools().iter().find(|t| t.name == name)
        {
            return Some(tool.clone());
        }
        if self.shared.options.url_elicitation
            && let Some(tool) = super::url_elicitation::tools()
                .iter()
                .find(|t| t.name == name)
        {
            return Some(tool.clone());
        }
        if self.shared.options.probe
            && let Some(tool) = super::probe::tools().iter().find(|t| t.name == name)
        {
            return Some(tool.clone());
        }
        if let Some(index) = self.extra_index(name) {
            return Some(extra(index));
        }
        if self.shared.options.write_barrier && name == WRITE_BARRIER {
            return Some(write_barrier());
        }
        if let Some(written) = self.shared.options.lists.tool(name) {
            return Some(written.tool.clone());
        }
        self.read_dynamic().tools.get(name).cloned()
    }
}

fn extra_name(index: usize) -> String {
    format!("{EXTRA_PREFIX}{index:04}")
}
