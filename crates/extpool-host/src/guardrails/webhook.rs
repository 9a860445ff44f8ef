//! The guardrail webhook: an external policy asked over HTTP before each
//! call and about each result.
//!
//! A question is a `POST` of JSON to the configured URL (`https://`, or
//! `http://` on loopback; redirects are never followed), with the
//! configured headers; the answer is `{"decision": "allow"}`,
//! `{"decision": "deny", "reason": "…"}` or, about a result,
//! `{"decision": "redact", "result": {…}}`. Anything else — no answer
//! within the timeout, a status other than 2xx, a body that is not JSON or
//! larger than [`MAX_ANSWER_BYTES`], an unknown decision — is a failure,
//! which the webhook's `fail` turns into a block or a pass.

use std::time::Duration;

use extpool_config::guardrails::{MAX_WEBHOOK_TIMEOUT_MS, check_webhook_url};
use extpool_config::{FailMode, WebhookConfig};
use extpool_core::ToolResult;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::GuardrailError;

/// The largest answer read, in bytes (1 MiB).
pub const MAX_ANSWER_BYTES: usize = 1 << 20;
/// The most characters of a denial's reason passed on.
const MAX_REASON_CHARS: usize = 500;

/// What the webhook decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// Go on.
    Allow,
    /// Stop, for this reason (cleaned of control characters, bounded).
    Deny(String),
    /// The result the model gets instead.
    Redact(Box<ToolResult>),
}

/// Where and how questions are sent.
struct Target {
    url: reqwest::Url,
    headers: HeaderMap,
    http: reqwest::Client,
}

/// The configured webhook, its `${VAR}`s resolved.
pub(crate) struct Webhook {
    /// Why it cannot be asked (a variable unset, a URL refused), if so:
    /// every question then fails, as `fail` says.
    target: Result<Target, String>,
    timeout: Duration,
    fail: FailMode,
}

impl std::fmt::Debug for Webhook {
    // Header values and the URL's query may carry credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Webhook");
        match &self.target {
            Ok(t) => d
                .field("url", &extpool_mcp::http::redacted_url(&t.url))
                .field("headers", &t.headers.keys().collect::<Vec<_>>()),
            Err(why) => d.field("unusable", why),
        };
        d.field("timeout", &self.timeout)
            .field("fail", &self.fail)
            .finish()
    }
}

/// The URL and headers of `config`, their `${VAR}`s resolved with
/// `lookup`, checked as `config check` checks them. An error names the
/// field, never a value.
fn resolve(
    config: &WebhookConfig,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(reqwest::Url, HeaderMap), String> {
    let expand = |field: &str, value: &str| {
        extpool_config::expand::expand(value, lookup).map_err(|e| format!("{field}: {e}"))
    };
    let url = expand("url", &config.url)?;
    let url = check_webhook_url(&url).map_err(|e| format!("url {e}"))?;
    let mut headers = HeaderMap::new();
    for (name, value) in &config.headers {
        let field = format!("headers.{name}");
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{field}: not an HTTP header name"))?;
        let mut value = HeaderValue::from_str(&expand(&field, value)?)
            .map_err(|_| format!("{field}: the value is not one HTTP allows"))?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    Ok((url, headers))
}

impl Webhook {
    /// The webhook of `config`, its `${VAR}`s resolved with `lookup`.
    pub(crate) fn new(
        config: &WebhookConfig,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, GuardrailError> {
        let timeout = Duration::from_millis(config.timeout_ms.clamp(1, MAX_WEBHOOK_TIMEOUT_MS));
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| GuardrailError::Client(extpool_core::Causes(&e).to_string()))?;
        let target = resolve(config, lookup).map(|(url, headers)| Target { url, headers, http });
        if let Err(why) = &target {
            tracing::warn!(
                "guardrails.webhook cannot be asked ({why}): every call and result it would be asked about is {}",
                match config.fail {
                    FailMode::Closed => "blocked (fail: closed)",
                    FailMode::Open => "let through (fail: open)",
                }
            );
        }
        Ok(Self {
            target,
            timeout,
            fail: config.fail,
        })
    }

    /// What a failure means.
    pub(crate) fn fail(&self) -> FailMode {
        self.fail
    }

    /// Asks `question`; the answer, or the failure in words that follow
    /// "the guardrail webhook" (`did not answer within 2000 ms`).
    pub(crate) async fn ask(&self, question: Value) -> Result<Answer, String> {
        let target = self
            .target
            .as_ref()
            .map_err(|why| format!("cannot be asked: {why}"))?;
        match tokio::time::timeout(self.timeout, target.exchange(&question)).await {
            Ok(answer) => answer,
            Err(_) => Err(format!(
                "did not answer within {} ms",
                self.timeout.as_millis()
            )),
        }
    }
}

impl Target {
    async fn exchange(&self, question: &Value) -> Result<Answer, String> {
        let body = serde_json::to_vec(question)
            .map_err(|e| format!("could not be asked: the question is not JSON: {e}"))?;
        let mut response = self
            .http
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "could not be reached: {}",
                    extpool_core::Causes(&e.without_url())
                )
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("answered HTTP {}", status.as_u16()));
        }
        let too_large = || format!("answered more than {MAX_ANSWER_BYTES} bytes");
        if response
            .content_length()
            .is_some_and(|n| n > MAX_ANSWER_BYTES as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            format!(
                "broke off its answer: {}",
                extpool_core::Causes(&e.without_url())
            )
        })? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        parse_answer(&body)
    }
}

/// An answer's body as the webhook's decision, or why it is none.
pub(crate) fn parse_answer(body: &[u8]) -> Result<Answer, String> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| format!("answered something that is not JSON ({e})"))?;
    let Some(decision) = value.get("decision").and_then(Value::as_str) else {
        return Err("answered JSON without a \"decision\" string".into());
    };
    match decision {
        "allow" => Ok(Answer::Allow),
        "deny" => Ok(Answer::Deny(reason(value.get("reason")))),
        "redact" => {
            let Some(result) = value.get("result") else {
                return Err("answered \"redact\" without a \"result\"".into());
            };
            let result: rmcp::model::CallToolResult = serde_json::from_value(result.clone())
                .map_err(|e| {
                    format!("answered \"redact\" with a \"result\" that is not a tool result ({e})")
                })?;
            Ok(Answer::Redact(Box::new(extpool_mcp::convert::tool_result(
                result,
            ))))
        }
        other => Err(format!(
            "answered an unknown decision {:?}",
            shortened(other, 64)
        )),
    }
}

/// A denial's reason as passed on: control characters made spaces, at
/// most [`MAX_REASON_CHARS`] characters.
fn reason(value: Option<&Value>) -> String {
    match value.and_then(Value::as_str).map(str::trim) {
        Some(text) if !text.is_empty() => shortened(text, MAX_REASON_CHARS),
        _ => "no reason given".into(),
    }
}

fn shortened(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}
