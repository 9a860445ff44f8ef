//! What each tool does when called. Argument errors are JSON-RPC
//! `invalid_params` errors; the only deliberate failures are `fail` (a
//! JSON-RPC error), `tool_error` (a tool result with `isError`) and `crash`
//! (the process exits).

use std::{io::Write, time::Duration};

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, Prompt, Resource},
    service::RequestContext,
};
use serde_json::{Value, json};

use super::{
    TestServer,
    content::{PNG_1X1, PNG_MIME, WAV_MIME, base64, wav},
    notify::ListKind,
    resources::{INFO_TEXT, INFO_URI},
    tools,
};
use crate::state::{CRASH_MARKER, StateError};

/// Exit code of the `crash` tool.
pub const CRASH_EXIT_CODE: i32 = 3;
/// Largest `large_text` answer: big enough to exceed any transport limit
/// (stdio drops lines over 16 MiB), small enough not to exhaust memory.
const MAX_LARGE_TEXT: u64 = 256 * 1024 * 1024;
/// Largest `structured` / `json_block` item count.
const MAX_ITEMS: u64 = 1_000_000;
/// Deepest `nested` document: far beyond any parser's limit, shallow enough
/// for the server to write it.
const MAX_NESTING: u64 = 20_000;
/// Most notifications one `notify` call sends.
const MAX_NOTIFICATIONS: u64 = 100_000;
/// Longest `sleep`.
const MAX_SLEEP_MS: u64 = 24 * 60 * 60 * 1000;

/// Typed access to a call's arguments.
struct Args<'a>(Option<&'a JsonObject>);

impl<'a> Args<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.and_then(|a| a.get(key)).filter(|v| !v.is_null())
    }

    fn missing(key: &str) -> ErrorData {
        ErrorData::invalid_params(format!("missing required argument {key:?}"), None)
    }

    fn wrong(key: &str, expected: &str) -> ErrorData {
        ErrorData::invalid_params(format!("argument {key:?} must be {expected}"), None)
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ErrorData> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(Self::wrong(key, "a string")),
        }
    }

    fn str(&self, key: &str) -> Result<&'a str, ErrorData> {
        self.opt_str(key)?.ok_or_else(|| Self::missing(key))
    }

    fn number(&self, key: &str) -> Result<&'a serde_json::Number, ErrorData> {
        match self.get(key) {
            None => Err(Self::missing(key)),
            Some(Value::Number(n)) => Ok(n),
            Some(_) => Err(Self::wrong(key, "a number")),
        }
    }

    fn u64_at_most(&self, key: &str, max: u64) -> Result<u64, ErrorData> {
        let value = self
            .number(key)?
            .as_u64()
            .ok_or_else(|| Self::wrong(key, "a non-negative integer"))?;
        if value > max {
            return Err(Self::wrong(key, &format!("at most {max}")));
        }
        Ok(value)
    }

    fn opt_bool(&self, key: &str) -> Result<Option<bool>, ErrorData> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(Self::wrong(key, "a boolean")),
        }
    }
}

fn state_error(e: StateError) -> ErrorData {
    match e {
        StateError::InvalidKey(_) => ErrorData::invalid_params(e.to_string(), None),
        _ => ErrorData::internal_error(e.to_string(), None),
    }
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

/// The sum of two JSON numbers, exact for integers.
fn sum(a: &serde_json::Number, b: &serde_json::Number) -> String {
    let int = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    if let (Some(x), Some(y)) = (int(a), int(b)) {
        return (x + y).to_string();
    }
    let x = a.as_f64().unwrap_or(f64::NAN);
    let y = b.as_f64().unwrap_or(f64::NAN);
    (x + y).to_string()
}

/// `{"items":[{"id":0,"name":"item-0"},…]}`.
fn items(count: u64) -> Value {
    let items: Vec<Value> = (0..count)
        .map(|i| json!({"id": i, "name": format!("item-{i}")}))
        .collect();
    json!({ "items": items })
}

/// `{"a":{"a":…{}…}}`, `depth` objects deep, built without recursion.
fn nested(depth: u64) -> Value {
    let mut value = Value::Object(serde_json::Map::new());
    for _ in 0..depth {
        // Not `json!`, which would copy `value` through serialization.
        let mut outer = serde_json::Map::new();
        outer.insert("a".to_owned(), value);
        value = Value::Object(outer);
    }
    value
}

fn crash_now() -> ! {
    tracing::warn!("crash tool: exiting with code {CRASH_EXIT_CODE} before answering");
    let _ = std::io::stderr().flush();
    std::process::exit(CRASH_EXIT_CODE)
}

impl TestServer {
    /// Runs the tool a `tools/call` names.
    pub(crate) async fn dispatch_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = Args(request.arguments.as_ref());
        let counters = &self.shared.counters;
        let name = request.name.as_ref();
        tracing::debug!(tool = name, "call");
        if let Some(tools) = &self.shared.options.tools {
            if !tools.iter().any(|t| t.name == name) {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool {name:?}"),
                    None,
                ));
            }
            let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
            return Ok(text(format!("called {name} with {arguments}")));
        }
        if self.shared.options.conformance && super::conformance::is_tool(name) {
            return self
                .conformance_call(name, request.arguments.as_ref(), &context)
                .await;
        }
        if self.shared.options.url_elicitation && super::url_elicitation::is_tool(name) {
            return self.url_elicitation_call(&request, &context).await;
        }
        if self.shared.options.probe && super::probe::is_tool(name) {
            return super::probe::call(&request).await;
        }
        match name {
            "echo" => Ok(text(args.str("message")?)),
            "add" => Ok(text(sum(args.number("a")?, args.number("b")?))),
            "counter" => {
                let key = args.opt_str("key")?.unwrap_or("default");
                let value = counters.increment(key).map_err(state_error)?;
                Ok(text(value.to_string()))
            }
            "count" => {
                let value = counters.get(args.str("key")?).map_err(state_error)?;
                Ok(text(value.to_string()))
            }
            "fail" => {
                counters.increment("fail").map_err(state_error)?;
                let message = args.opt_str("message")?.unwrap_or("requested failure");
                Err(ErrorData::internal_error(message.to_owned(), None))
            }
            "tool_error" => {
                let message = args.opt_str("message")?.unwrap_or("requested tool error");
                Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
            }
            "sleep" => {
                let ms = args.u64_at_most("ms", MAX_SLEEP_MS)?;
                counters.increment("sleep").map_err(state_error)?;
                if let Some(token) = context.meta.get_progress_token() {
                    let started = rmcp::model::ProgressNotificationParam::new(token, 0.0);
                    let _ = context.peer.notify_progress(started).await;
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {
                        Ok(text(format!("slept {ms} ms")))
                    }
                    () = context.ct.cancelled() => {
                        counters.increment("cancelled").map_err(state_error)?;
                        tracing::info!("sleep cancelled after a cancellation from the client");
                        Err(ErrorData::internal_error("cancelled", None))
                    }
                }
            }
            "barrier" | "barrier_write"
                if name == "barrier" || self.shared.options.write_barrier =>
            {
                let parties = args
                    .u64_at_most("parties", super::barrier::MAX_PARTIES)?
                    .max(1);
                let released = self
                    .shared
                    .barriers
                    .wait(counters, args.str("key")?, parties, &context.ct)
                    .await?;
                Ok(text(format!("released {released}")))
            }
            "crash" => self.crash(args.opt_bool("once")?.unwrap_or(false)),
            "add_tool" => self.add_tool(args.str("name")?).await,
            "add_resource" => self.add_resource(args.str("uri")?, args.str("text")?).await,
            "add_prompt" => self.add_prompt(args.str("name")?).await,
            "notify" => {
                let count = match args.get("count") {
                    None => 1,
                    Some(_) => args.u64_at_most("count", MAX_NOTIFICATIONS)?,
                };
                let kind = match args.opt_str("kind")?.unwrap_or("tools") {
                    "tools" => ListKind::Tools,
                    "resources" => ListKind::Resources,
                    "prompts" => ListKind::Prompts,
                    "log" => return self.flood_log(count, &context).await,
                    "progress" => return self.flood_progress(count, &context).await,
                    "mixed" => return self.flood_mixed(count, &context).await,
                    "elicit" => return self.flood_elicitation(count, &context).await,
                    _ => {
                        return Err(Args::wrong(
                            "kind",
                            "tools, resources, prompts, log, progress, mixed or elicit",
                        ));
                    }
                };
                for _ in 0..count {
                    self.broadcast(kind).await;
                }
                Ok(text(format!("sent {count}")))
            }
            "http_status" => {
                // Over HTTP the request never gets here: the HTTP layer
                // answers it (see `http::inject_status`).
                args.u64_at_most("code", 599)?;
                Ok(CallToolResult::error(vec![ContentBlock::text(
                    "http_status only works over streamable HTTP",
                )]))
            }
            "large_text" => {
                let bytes = args.u64_at_most("bytes", MAX_LARGE_TEXT)?;
                let size = usize::try_from(bytes).map_err(|_| Args::wrong("bytes", "smaller"))?;
                Ok(text("x".repeat(size)))
            }
            "nested" => {
                let depth = args.u64_at_most("depth", MAX_NESTING)?;
                Ok(CallToolResult::structured(nested(depth)))
            }
            "structured" => {
                let count = args.u64_at_most("count", MAX_ITEMS)?;
                Ok(CallToolResult::structured(items(count)))
            }
            "json_block" => {
                let count = args.u64_at_most("count", MAX_ITEMS)?;
                let doc = serde_json::to_string_pretty(&items(count))
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(text(doc))
            }
            "mixed_content" => Ok(CallToolResult::success(vec![
                ContentBlock::text("mixed content"),
                ContentBlock::image(base64(PNG_1X1), PNG_MIME),
                ContentBlock::audio(base64(&wav()), WAV_MIME),
                ContentBlock::embedded_text(INFO_URI, INFO_TEXT),
                ContentBlock::resource_link(
                    Resource::new(INFO_URI, "info").with_mime_type("text/plain"),
                ),
            ])),
            "env" => {
                let value = std::env::var_os(args.str("name")?)
                    .map(|v| v.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "<unset>".to_owned());
                Ok(text(value))
            }
            "sample" => self.sample(args.str("prompt")?, &context).await,
            "elicit" => {
                counters.increment("elicit").map_err(state_error)?;
                let form = json!({
                    "type": "object",
                    "properties": {"answer": {"type": "string", "description": "Your answer"}},
                    "required": ["answer"],
                });
                match super::asking::elicit(args.str("message")?, form, &context).await {
                    Ok(said) => {
                        super::notify::answered(&said, &context).await;
                        Ok(text(said))
                    }
                    Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "elicitation failed: {e}"
                    ))])),
                }
            }
            "stderr" => {
                let message = args.str("message")?;
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{message}");
                let _ = err.flush();
                Ok(text("ok"))
            }
            _ if let Some(written) = self.shared.options.lists.tool(name) => {
                Ok(written.result.clone())
            }
            _ if self.extra_index(name).is_some()
                || self.read_dynamic().tools.contains_key(name) =>
            {
                Ok(text(args.opt_str("message")?.unwrap_or(name)))
            }
            _ => Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}"),
                None,
            )),
        }
    }

    fn crash(&self, once: bool) -> Result<CallToolResult, ErrorData> {
        if !once {
            crash_now();
        }
        let Some(dir) = self.shared.counters.dir() else {
            return Err(ErrorData::invalid_params(
                "crash {once: true} needs the server to run with --state-dir",
                None,
            ));
        };
        let marker = dir.join(CRASH_MARKER);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
        {
            Ok(_) => crash_now(),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                self.shared
                    .counters
                    .increment("crash")
                    .map_err(state_error)?;
                Ok(text("survived"))
            }
            Err(e) => Err(ErrorData::internal_error(
                format!("cannot create {}: {e}", marker.display()),
                None,
            )),
        }
    }

    fn ensure_new_tool_name(&self, name: &str) -> Result<(), ErrorData> {
        if name.is_empty() {
            return Err(ErrorData::invalid_params("tool name is empty", None));
        }
        if self.find_tool(name).is_some() {
            return Err(ErrorData::invalid_params(
                format!("tool {name:?} already exists"),
                None,
            ));
        }
        Ok(())
    }

    async fn add_tool(&self, name: &str) -> Result<CallToolResult, ErrorData> {
        self.ensure_new_tool_name(name)?;
        let tool = tools::echo_like(
            name.to_owned(),
            format!("Dynamic tool {name}; returns its name or `message`"),
        );
        self.write_dynamic().tools.insert(name.to_owned(), tool);
        self.broadcast(ListKind::Tools).await;
        Ok(text(format!("added tool {name}")))
    }

    async fn add_resource(&self, uri: &str, content: &str) -> Result<CallToolResult, ErrorData> {
        if uri.is_empty() || self.all_resources().iter().any(|r| r.uri == uri) {
            return Err(ErrorData::invalid_params(
                format!("resource {uri:?} is empty or exists already"),
                None,
            ));
        }
        let resource = Resource::new(uri, uri)
            .with_mime_type("text/plain")
            .with_size(content.len() as u64);
        self.write_dynamic()
            .resources
            .insert(uri.to_owned(), (resource, content.to_owned()));
        self.broadcast(ListKind::Resources).await;
        Ok(text(format!("added resource {uri}")))
    }

    async fn add_prompt(&self, name: &str) -> Result<CallToolResult, ErrorData> {
        if name.is_empty() || self.all_prompts().iter().any(|p| p.name == name) {
            return Err(ErrorData::invalid_params(
                format!("prompt {name:?} is empty or exists already"),
                None,
            ));
        }
        let prompt = Prompt::new(name, Some(format!("Dynamic prompt {name}")), None);
        self.write_dynamic().prompts.insert(name.to_owned(), prompt);
        self.broadcast(ListKind::Prompts).await;
        Ok(text(format!("added prompt {name}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_exact_for_integers() {
        let n = |v: Value| match v {
            Value::Number(n) => n,
            _ => unreachable!(),
        };
        assert_eq!(sum(&n(json!(2)), &n(json!(40))), "42");
        assert_eq!(sum(&n(json!(1.5)), &n(json!(2))), "3.5");
        assert_eq!(
            sum(&n(json!(i64::MAX)), &n(json!(1))),
            "9223372036854775808"
        );
    }

    #[test]
    fn items_have_ids_and_names() {
        assert_eq!(
            items(2),
            json!({"items":[{"id":0,"name":"item-0"},{"id":1,"name":"item-1"}]})
        );
    }
}
