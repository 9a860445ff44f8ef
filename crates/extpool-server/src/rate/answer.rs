//! How a call refused for a rate limit is answered, in the shape of
//! SEP-3304 (draft, "Standardizing Rate-Limiting Errors"): this module
//! is the one owner of that shape, so it follows the SEP as it changes.
//!
//! - The JSON-RPC error: code `-32023` (`RateLimited`), `data.retryAfterMs`
//!   (milliseconds until a token is there, rounded up), `data.limit`
//!   (calls the rule permits a minute) and `data.remaining` (calls left
//!   under it now: none) — on every transport, stdio too.
//! - Over HTTP, when the answer is a plain JSON response (not an SSE
//!   stream, whose status went out before the refusal was known): status
//!   429, `Retry-After` in whole seconds (rounded up), `RateLimit-Limit`
//!   and `RateLimit-Remaining`, read back from the error's `data`.

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use rmcp::ErrorData;
use rmcp::model::ServerJsonRpcMessage;

use super::Limited;

/// The JSON-RPC error code of a call refused for a rate limit
/// (SEP-3304's `RateLimited`, in the range MCP reserves).
pub(crate) const RATE_LIMITED: i32 = -32023;

/// The `RateLimit-Limit` header.
const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
/// The `RateLimit-Remaining` header.
const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");

impl Limited {
    /// The JSON-RPC error refusing the call: the limit in words in the
    /// message, SEP-3304's fields in `data` (and the rule's words as
    /// `data.rule`).
    pub(crate) fn error(&self) -> ErrorData {
        let retry_ms = self.retry_after.as_nanos().div_ceil(1_000_000);
        ErrorData::new(
            rmcp::model::ErrorCode(RATE_LIMITED),
            self.message(),
            Some(serde_json::json!({
                "retryAfterMs": u64::try_from(retry_ms).unwrap_or(u64::MAX),
                "limit": self.limit,
                "remaining": self.remaining,
                "rule": self.rule,
            })),
        )
    }
}

/// `response`, the plain JSON body of `answer`, with SEP-3304's HTTP
/// status and headers when `answer` refuses a call for a rate limit;
/// else as it is.
pub(crate) fn over_http(mut response: Response, answer: &ServerJsonRpcMessage) -> Response {
    let ServerJsonRpcMessage::Error(error) = answer else {
        return response;
    };
    if error.error.code.0 != RATE_LIMITED {
        return response;
    }
    let data = error.error.data.as_ref();
    let number = |key: &str| data.and_then(|d| d.get(key)).and_then(|v| v.as_u64());
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    if let Some(ms) = number("retryAfterMs") {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(ms.div_ceil(1000)));
    }
    if let Some(limit) = number("limit") {
        headers.insert(RATELIMIT_LIMIT, HeaderValue::from(limit));
    }
    if let Some(remaining) = number("remaining") {
        headers.insert(RATELIMIT_REMAINING, HeaderValue::from(remaining));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limited(retry_after: Duration) -> Limited {
        Limited {
            rule: "6 tool calls a minute per caller (burst 1)".into(),
            limit: 6,
            remaining: 0,
            retry_after,
        }
    }

    #[test]
    fn the_error_has_sep_3304s_code_and_data() {
        let error = limited(Duration::from_micros(1_500_001)).error();
        assert_eq!(error.code.0, -32023);
        let data = error.data.clone().unwrap();
        assert_eq!(data["retryAfterMs"], 1501, "rounded up");
        assert_eq!(data["limit"], 6);
        assert_eq!(data["remaining"], 0);
        assert!(error.message.contains("rate limit reached"), "{error:?}");
    }

    fn plain() -> Response {
        axum::response::IntoResponse::into_response((StatusCode::OK, "{}"))
    }

    #[test]
    fn a_plain_json_refusal_is_429_with_the_headers_and_anything_else_is_left() {
        let answer = ServerJsonRpcMessage::error(
            limited(Duration::from_millis(1001)).error(),
            Some(rmcp::model::RequestId::Number(1)),
        );
        let response = over_http(plain(), &answer);
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        let h = response.headers();
        assert_eq!(h["retry-after"], "2", "seconds, rounded up");
        assert_eq!(h["ratelimit-limit"], "6");
        assert_eq!(h["ratelimit-remaining"], "0");
        let other = ServerJsonRpcMessage::error(
            ErrorData::invalid_params("no", None),
            Some(rmcp::model::RequestId::Number(2)),
        );
        let response = over_http(plain(), &other);
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().get("retry-after").is_none());
    }
}
