//! Reading a request at the door: its body, within the size limit and
//! the body timeout, and its message checked by the rules of its era
//! ([`crate::check`], as over stdio), read once; a refusal is the answer
//! (HTTP 400 with the JSON-RPC error, 413, 408).

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::ClientJsonRpcMessage;
use serde_json::Value;

use crate::check::Message;
use crate::methods::Era;
use crate::shared::Shared;

use crate::guard::too_large;

/// A JSON-RPC error answer (HTTP `status`), for a request refused before
/// its handler sees it.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<&Value>,
    code: i64,
    message: &str,
) -> Response {
    let body = crate::check::error_answer(id, code, message);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Checks one POSTed body ([`crate::check::check_message`], the rule
/// stdio follows too). `Err` is the answer: HTTP 400 with the JSON-RPC
/// error.
pub(crate) fn check_message(
    bytes: &[u8],
    era: crate::methods::Era,
) -> Result<Message, Box<Response>> {
    crate::check::check_message(bytes, era).map_err(|refused| {
        Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            refused.id.as_ref(),
            refused.code,
            &refused.message,
        ))
    })
}

/// Whether reading a body failed for its size (not for its framing).
pub(super) fn is_length_limit(error: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = e.source();
    }
    false
}

/// Reads a request body within `max` bytes and `timeout`.
pub(super) async fn read_body(
    body: Body,
    max: usize,
    timeout: Duration,
) -> Result<Bytes, Response> {
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, max)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) if is_length_limit(&e) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            too_large(None, max),
        )
            .into_response()),
        Ok(Err(e)) => Err((
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("the request body could not be read: {e}\n"),
        )
            .into_response()),
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!(
                "the request body did not arrive within {} s\n",
                timeout.as_secs()
            ),
        )
            .into_response()),
    }
}

/// A request as the door read it: a POST's body (read and checked by the
/// rules of the request's era, [`check_message`]) and its message, read
/// once.
pub(super) struct Read {
    /// What the check says of it (nothing for a `GET` or a `DELETE`).
    pub(super) message: Message,
    /// Its body (empty for a `GET` or a `DELETE`).
    pub(super) bytes: Bytes,
    /// Its message read as its type (`None` for a `GET` or a `DELETE`).
    pub(super) parsed: Option<ClientJsonRpcMessage>,
}

/// The era of a request with `headers`, by its `MCP-Protocol-Version`.
pub(super) fn era_of(headers: &axum::http::HeaderMap) -> Era {
    Era::of(
        headers
            .get(rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok()),
    )
}

/// Reads `body` of a request with `parts`. `Err` is the answer to a body
/// refused.
pub(super) async fn read(
    shared: &Shared,
    parts: &axum::http::request::Parts,
    body: Body,
) -> Result<Read, Box<Response>> {
    if parts.method != Method::POST {
        return Ok(Read {
            message: Message::default(),
            bytes: Bytes::new(),
            parsed: None,
        });
    }
    let options = &shared.options;
    let bytes = read_body(body, options.max_body_bytes, options.body_read_timeout)
        .await
        .map_err(Box::new)?;
    let mut message = check_message(&bytes, era_of(&parts.headers))?;
    // The check read a plain request already; anything else is read once
    // here (the check passed it, so it reads).
    let parsed = match message.typed.take() {
        Some(crate::check::Typed(id, request)) => Some(ClientJsonRpcMessage::request(request, id)),
        None => extpool_host::mcp::transport::client_message(&bytes).ok(),
    };
    Ok(Read {
        message,
        bytes,
        parsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::Era;

    async fn refusal(body: &str) -> (u16, Value) {
        let answer = check_message(body.as_bytes(), Era::Session).expect_err(body);
        let status = answer.status().as_u16();
        let bytes = axum::body::to_bytes(answer.into_body(), 65536)
            .await
            .unwrap_or_default();
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    #[tokio::test]
    async fn malformed_messages_get_the_json_rpc_error_that_names_them() {
        for (body, code, says) in [
            ("", -32700, "empty"),
            ("  \n", -32700, "empty"),
            ("{bad", -32700, "not JSON"),
            ("[]", -32600, "batch"),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                -32600,
                "batch",
            ),
            ("7", -32600, "an object"),
            (r#"{"id":1,"method":"ping"}"#, -32600, "2.0"),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                -32600,
                "string or an integer",
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#,
                -32602,
                "invalid params for tools/call",
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{}}"#,
                -32602,
                "uri",
            ),
        ] {
            let (status, answer) = refusal(body).await;
            assert_eq!(status, 400, "{body}: {answer}");
            assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(says), "{body}: {message}");
        }
        let (_, answer) =
            refusal(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#).await;
        assert_eq!(answer["id"], 3);
    }

    #[test]
    fn well_formed_messages_pass() {
        let m = check_message(
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{}}}"#,
            Era::Session,
        )
        .expect("call");
        assert_eq!(m.id, Some(Value::from("a")));
        let m = check_message(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Era::Session,
        )
        .expect("notification");
        assert_eq!(m.id, None);
        let m = check_message(
            br#"{"jsonrpc":"2.0","id":1,"method":"vendor/custom","params":{}}"#,
            Era::Session,
        )
        .expect("a method MCP does not define goes to the handler");
        assert_eq!(m.id, Some(Value::from(1)));
        let m = check_message(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Era::Session)
            .expect("response");
        assert_eq!(m.id, None, "a client's response is no request");
    }
}
