//! Guardrails: the checks every tool call passes before it is dispatched
//! and every result passes before it reaches the model. The host applies
//! them in one place (`view::guard`) that every path out of it calls — a
//! call ([`crate::View::call`]), `CallMcpWithQuery` (the tool's result
//! before its jq filter reads it, and the filter's output after), a task's
//! result, a resource read, a prompt, and what a server wrote in an error
//! — so the gateway, the agent library and the command line all pass
//! through them, remote tools as built-in ones ("remote tools use the same
//! permission, dispatch, guardrail, and audit paths as built-in tools").
//!
//! They come after the view's policy has allowed the call, and run in the
//! configuration's order (`guardrails:` in extpool.yaml):
//!
//! 1. before dispatch: the arguments' size (`max_argument_bytes`), the
//!    `block` rules, then the webhook's `call` question;
//! 2. after dispatch: the result's size (`max_result_bytes`), the `redact`
//!    rules, then the webhook's `result` question.
//!
//! A call blocked is not dispatched; a result blocked never reaches the
//! model. Either ends as [`crate::HostError::Blocked`], whose message names
//! the guardrail and never quotes the arguments. Every decision (a block,
//! a redaction, a webhook failure let through) is a [`Verdict`], returned
//! with the call's outcome by [`crate::View::call`], for a front
//! end's audit log.
//!
//! Everything an outside party controls is bounded before a pattern runs
//! over it: arguments larger than `max_argument_bytes` and results larger
//! than `max_result_bytes` are blocked first, patterns are compiled once
//! per configuration within [`extpool_config::guardrails`]'s bounds, and
//! every search is linear in the pattern times the text. The webhook is
//! asked within its timeout, and its answer is read up to 1 MiB.

mod redact;
mod webhook;

use std::sync::Arc;

use extpool_catalog::permissions::Glob;
use extpool_config::guardrails::{PatternError, Regex, compile_pattern};
use extpool_config::{FailMode, GuardrailsConfig};
use extpool_core::{ContentPart, ExtensionError, ResourceBody, ToolResult};
use serde::Serialize;
use serde_json::{Map, Value};

use redact::{RedactRule, redact_result};
pub use webhook::MAX_ANSWER_BYTES;
use webhook::{Answer, Webhook};

/// Why a configuration's guardrails cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GuardrailError {
    /// A pattern is not one a guardrail takes.
    #[error("guardrails.{rule}.pattern: {error}")]
    Pattern {
        /// The rule (`block[0]`, `redact[1]`).
        rule: String,
        /// Why.
        error: PatternError,
    },
    /// The webhook's HTTP client could not be built.
    #[error("guardrails.webhook: {0}")]
    Client(String),
}

/// When a guardrail decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Before the call was dispatched.
    Call,
    /// On its result, before the model.
    Result,
}

/// What a guardrail decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The call (or its result) was blocked.
    Block,
    /// Parts of the result were replaced.
    Redact,
    /// The webhook failed and `fail: open` let the call (or result) through.
    FailOpen,
}

/// One guardrail decision of a call, as an audit log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Before dispatch or on the result.
    pub phase: Phase,
    /// What was decided.
    pub decision: Decision,
    /// The rule that decided: `max_argument_bytes (65536)`,
    /// `block[0] ("rm\\s+-rf") for mcp__shell__*`, `redact[0] (openai-key)`,
    /// `webhook`.
    pub guardrail: String,
    /// The decision in words (for a block, the message the model gets;
    /// never the arguments).
    pub reason: String,
}

/// The call a guardrail looks at: the tool it reaches, and who asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The catalog name of the tool reached (through a built-in such as
    /// `CallMcpWithQuery`, the tool it calls).
    pub tool: String,
    /// Its server ([`crate::BUILTIN`] for a built-in).
    pub server: String,
    /// The built-in called to reach `tool`, if any.
    pub via: Option<String>,
    /// Who is calling, when the front end said
    /// ([`extpool_core::CallContext::caller`]).
    pub principal: Option<String>,
}

impl Subject {
    /// Whether `glob` names this call (the tool reached, or the built-in
    /// called to reach it).
    fn named_by(&self, glob: &Glob) -> bool {
        glob.matches(&self.tool) || self.via.as_deref().is_some_and(|v| glob.matches(v))
    }
}

/// A guardrail that blocked: its rule and the message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// When it blocked.
    pub phase: Phase,
    /// The rule ([`Verdict::guardrail`]).
    pub guardrail: String,
    /// Why, in words (`blocked by guardrail …`).
    pub reason: String,
}

struct BlockRule {
    shown: String,
    regex: Regex,
    tools: Option<Glob>,
}

/// A configuration's guardrails, compiled once.
pub struct Guardrails {
    max_argument_bytes: u64,
    max_result_bytes: u64,
    block: Vec<BlockRule>,
    redact: Vec<RedactRule>,
    webhook: Option<Webhook>,
}

impl std::fmt::Debug for Guardrails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guardrails")
            .field("max_argument_bytes", &self.max_argument_bytes)
            .field("max_result_bytes", &self.max_result_bytes)
            .field("block", &self.block.len())
            .field("redact", &self.redact.len())
            .field("webhook", &self.webhook)
            .finish()
    }
}

impl Guardrails {
    /// Compiles `config`: each pattern once; the webhook's `${VAR}`s
    /// resolved with `lookup` (a webhook that cannot be resolved or whose
    /// URL is refused fails each question, as its `fail` says, and is
    /// logged now).
    pub fn compile(
        config: &GuardrailsConfig,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, GuardrailError> {
        let pattern = |rule: String, pattern: &str| {
            compile_pattern(pattern).map_err(|error| GuardrailError::Pattern { rule, error })
        };
        let mut block = Vec::with_capacity(config.block.len());
        for (i, rule) in config.block.iter().enumerate() {
            let regex = pattern(format!("block[{i}]"), &rule.pattern)?;
            let mut shown = format!("block[{i}] ({:?})", rule.pattern);
            if let Some(tools) = &rule.tools {
                shown.push_str(&format!(" for {tools}"));
            }
            block.push(BlockRule {
                shown,
                regex,
                tools: rule.tools.as_deref().map(Glob::new),
            });
        }
        let mut redact = Vec::with_capacity(config.redact.len());
        for (i, rule) in config.redact.iter().enumerate() {
            redact.push(RedactRule {
                shown: format!("redact[{i}] ({})", rule.name),
                regex: pattern(format!("redact[{i}]"), &rule.pattern)?,
                replacement: format!("[REDACTED:{}]", rule.name),
            });
        }
        let webhook = config
            .webhook
            .as_ref()
            .map(|w| Webhook::new(w, lookup))
            .transpose()?;
        Ok(Self {
            max_argument_bytes: config.max_argument_bytes,
            max_result_bytes: config.max_result_bytes,
            block,
            redact,
            webhook,
        })
    }

    /// Whether a result's check needs the call's arguments (the webhook
    /// is told them with the result).
    pub fn wants_arguments(&self) -> bool {
        self.webhook.is_some()
    }

    /// Checks a call before dispatch: its size, the `block` rules, the
    /// webhook. `args` are the call's arguments as given (for a built-in,
    /// its own); each decision is appended to `verdicts`.
    pub async fn check_call(
        &self,
        subject: &Subject,
        args: &Map<String, Value>,
        verdicts: &mut Vec<Verdict>,
    ) -> Result<(), Blocked> {
        let size = json_len(args);
        if size > self.max_argument_bytes {
            let guardrail = format!("max_argument_bytes ({})", self.max_argument_bytes);
            let reason =
                format!("blocked by guardrail {guardrail}: its arguments are {size} bytes of JSON");
            return Err(block(verdicts, Phase::Call, guardrail, reason));
        }
        if self
            .block
            .iter()
            .any(|r| r.tools.as_ref().is_none_or(|g| subject.named_by(g)))
        {
            let json = serde_json::to_string(args).unwrap_or_default();
            let mut strings = Vec::new();
            strings_of_map(args, &mut strings);
            for rule in &self.block {
                if rule.tools.as_ref().is_some_and(|g| !subject.named_by(g)) {
                    continue;
                }
                if rule.regex.is_match(&json) || strings.iter().any(|s| rule.regex.is_match(s)) {
                    let reason = format!("blocked by guardrail {}", rule.shown);
                    return Err(block(verdicts, Phase::Call, rule.shown.clone(), reason));
                }
            }
        }
        if let Some(webhook) = &self.webhook {
            let arguments = match &subject.via {
                // A built-in's own arguments hold the reached tool's.
                Some(_) => args
                    .get("args")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
                None => Value::Object(args.clone()),
            };
            let question = question(Phase::Call, subject, arguments);
            match webhook.ask(question).await {
                Ok(Answer::Allow) => {}
                Ok(Answer::Deny(why)) => {
                    let reason = format!("blocked by the guardrail webhook: {why}");
                    return Err(block(verdicts, Phase::Call, "webhook".into(), reason));
                }
                Ok(Answer::Redact(_)) => {
                    let failure = "answered \"redact\" to a call (a call is allowed or denied)";
                    self.failed(webhook, Phase::Call, failure, verdicts)?;
                }
                Err(failure) => self.failed(webhook, Phase::Call, &failure, verdicts)?,
            }
        }
        Ok(())
    }

    /// Checks a result before it reaches the model: its size, the
    /// `redact` rules, the webhook (told `args`, the call's arguments, when
    /// given). Returns the result the model gets; each decision is
    /// appended to `verdicts`.
    pub async fn check_result(
        &self,
        subject: &Subject,
        args: Option<&Map<String, Value>>,
        mut result: ToolResult,
        verdicts: &mut Vec<Verdict>,
    ) -> Result<ToolResult, Blocked> {
        let size = result_len(&result);
        if size > self.max_result_bytes {
            let guardrail = format!("max_result_bytes ({})", self.max_result_bytes);
            let reason = format!(
                "blocked by guardrail {guardrail}: its text and structured content are {size} bytes"
            );
            return Err(block(verdicts, Phase::Result, guardrail, reason));
        }
        if !self.redact.is_empty() {
            // Redaction reads the parts only: what they do not hold
            // (`_meta`, annotations) is not passed on unread.
            result.as_sent = None;
        }
        for rule in &self.redact {
            let replaced = redact_result(&mut result, rule);
            redacted(verdicts, rule, replaced);
        }
        if let Some(webhook) = &self.webhook {
            let arguments = args.map_or(Value::Null, |a| match &subject.via {
                Some(_) => a
                    .get("args")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
                None => Value::Object(a.clone()),
            });
            let mut question = question(Phase::Result, subject, arguments);
            let mut wire =
                serde_json::to_value(extpool_mcp::convert::wire::call_tool_result(&result))
                    .unwrap_or(Value::Null);
            // The protocol era's envelope is not the result's.
            if let Some(fields) = wire.as_object_mut() {
                fields.remove("resultType");
            }
            question["result"] = wire;
            match webhook.ask(question).await {
                Ok(Answer::Allow) => {}
                Ok(Answer::Deny(why)) => {
                    let reason = format!("blocked by the guardrail webhook: {why}");
                    return Err(block(verdicts, Phase::Result, "webhook".into(), reason));
                }
                Ok(Answer::Redact(replacement)) => {
                    verdicts.push(Verdict {
                        phase: Phase::Result,
                        decision: Decision::Redact,
                        guardrail: "webhook".into(),
                        reason: "the guardrail webhook replaced the result".into(),
                    });
                    result = *replacement;
                }
                Err(failure) => self.failed(webhook, Phase::Result, &failure, verdicts)?,
            }
        }
        Ok(result)
    }

    /// Redacts, by the `redact` rules, what a server wrote in `error` (a
    /// JSON-RPC error's message and data, its stderr lines) before the
    /// error reaches a model; each rule that matched is a verdict.
    pub fn redact_error(&self, error: &mut ExtensionError, verdicts: &mut Vec<Verdict>) {
        if self.redact.is_empty() {
            return;
        }
        let Some(client) = error.downcast_source_mut::<extpool_mcp::ClientError>() else {
            return;
        };
        let counts = std::cell::RefCell::new(vec![0usize; self.redact.len()]);
        client.rewrite_server_text(
            &mut |text| {
                self.bound(text);
                for (rule, count) in self.redact.iter().zip(counts.borrow_mut().iter_mut()) {
                    *count += redact::redact_text(text, rule);
                }
            },
            &mut |json| {
                if json_len(json) > self.max_result_bytes {
                    // Larger than any result the rules read: not passed on.
                    *json = Value::Null;
                }
                for (rule, count) in self.redact.iter().zip(counts.borrow_mut().iter_mut()) {
                    *count += redact::redact_value(json, rule);
                }
            },
        );
        for (rule, count) in self.redact.iter().zip(counts.into_inner()) {
            redacted(verdicts, rule, count);
        }
    }

    /// `text`, a server's message that reaches a model by no result (a
    /// failed task's status message), redacted by the `redact` rules.
    pub fn redact_message(&self, text: &mut String, verdicts: &mut Vec<Verdict>) {
        if self.redact.is_empty() {
            return;
        }
        self.bound(text);
        for rule in &self.redact {
            let count = redact::redact_text(text, rule);
            redacted(verdicts, rule, count);
        }
    }

    /// Cuts `text`, a server's message, to `max_result_bytes` (the most
    /// text a pattern reads), saying so.
    fn bound(&self, text: &mut String) {
        let max = usize::try_from(self.max_result_bytes).unwrap_or(usize::MAX);
        if text.len() <= max {
            return;
        }
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = text.len();
        text.truncate(cut);
        text.push_str(&format!(" [cut: {total} bytes, over max_result_bytes]"));
    }

    /// A webhook that failed, as its `fail` says: blocked (closed), or
    /// let through and logged (open).
    fn failed(
        &self,
        webhook: &Webhook,
        phase: Phase,
        failure: &str,
        verdicts: &mut Vec<Verdict>,
    ) -> Result<(), Blocked> {
        match webhook.fail() {
            FailMode::Closed => {
                let reason = format!("blocked: the guardrail webhook {failure} (fail: closed)");
                Err(block(verdicts, phase, "webhook".into(), reason))
            }
            FailMode::Open => {
                let reason = format!("the guardrail webhook {failure}; let through (fail: open)");
                tracing::warn!(guardrail = "webhook", "{reason}");
                verdicts.push(Verdict {
                    phase,
                    decision: Decision::FailOpen,
                    guardrail: "webhook".into(),
                    reason,
                });
                Ok(())
            }
        }
    }
}

/// Records in `verdicts` that `rule` replaced `count` matches, if any.
fn redacted(verdicts: &mut Vec<Verdict>, rule: &RedactRule, count: usize) {
    if count == 0 {
        return;
    }
    verdicts.push(Verdict {
        phase: Phase::Result,
        decision: Decision::Redact,
        guardrail: rule.shown.clone(),
        reason: format!(
            "{count} match{} replaced by {}",
            if count == 1 { "" } else { "es" },
            rule.replacement
        ),
    });
}

/// Records a block in `verdicts` and returns it.
fn block(verdicts: &mut Vec<Verdict>, phase: Phase, guardrail: String, reason: String) -> Blocked {
    verdicts.push(Verdict {
        phase,
        decision: Decision::Block,
        guardrail: guardrail.clone(),
        reason: reason.clone(),
    });
    Blocked {
        phase,
        guardrail,
        reason,
    }
}

/// The webhook's question about `subject` (its wire format; the README's
/// "Guardrails" says it).
fn question(phase: Phase, subject: &Subject, arguments: Value) -> Value {
    let mut q = serde_json::json!({
        "phase": phase,
        "tool": subject.tool,
        "server": subject.server,
        "principal": subject.principal,
        "arguments": arguments,
    });
    if let Some(via) = &subject.via {
        q["via"] = Value::String(via.clone());
    }
    q
}

/// Counts what is written to it.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len() as u64);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The length of `value`'s JSON, without writing it anywhere.
fn json_len<T: Serialize + ?Sized>(value: &T) -> u64 {
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The bytes of a result the model reads as text: its text parts, its
/// embedded text resources, and its structured content's JSON.
fn result_len(result: &ToolResult) -> u64 {
    let mut total = result.structured.as_ref().map_or(0, json_len);
    for part in &result.parts {
        let len = match part {
            ContentPart::Text { text } => text.len(),
            ContentPart::Resource { resource } => match &resource.body {
                ResourceBody::Text(text) => text.len(),
                ResourceBody::Blob(_) => 0,
            },
            _ => 0,
        };
        total = total.saturating_add(len as u64);
    }
    total
}

/// Every key and string value in `map`, as the tool receives them.
fn strings_of_map<'a>(map: &'a Map<String, Value>, out: &mut Vec<&'a str>) {
    for (key, value) in map {
        out.push(key);
        strings_of(value, out);
    }
}

fn strings_of<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        Value::Object(map) => strings_of_map(map, out),
        _ => {}
    }
}

/// Guardrails shared by every view of a host (`None`: none configured).
pub(crate) type Shared = Option<Arc<Guardrails>>;

#[cfg(test)]
mod tests;
