//! What an MCP endpoint refuses before any handler sees a request, by
//! the transport's rules of streamable HTTP, in the words MCP's SDKs use
//! (rmcp's, so a client sees no difference from an rmcp server):
//!
//! - a POST must accept JSON and SSE (406) and send JSON (415);
//! - an `MCP-Protocol-Version` header must name a version extpool speaks
//!   (400), and inside a session one of the session's era (400);
//! - a 2026-07-28 request's `_meta` must say the version its header says
//!   (`-32020`), and carry `_meta` at all (`-32602`);
//! - an `initialize` with a 2026-07-28 header must say that version in
//!   its params too (`-32600`), and an `Mcp-Method` it sends must be
//!   `initialize` (`-32020`);
//! - without a session, a session-era request other than `initialize`
//!   (or `server/discover`), a `GET` and a `DELETE` need one (400), or
//!   (2026-07-28, which has no sessions) are not allowed (405); a
//!   2026-07-28 client sends no answers (400: there was no question).

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientRequest, GetMeta, ProtocolVersion, RequestId};
use rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION;

use crate::methods::Era;

/// A plain-text refusal.
pub(crate) fn plain(status: StatusCode, text: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.to_owned(),
    )
        .into_response()
}

/// A JSON-RPC error answer with HTTP `status`.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<&RequestId>,
    code: i64,
    message: &str,
) -> Response {
    let id = id.and_then(|id| serde_json::to_value(id).ok());
    super::rpc_error(status, id.as_ref(), code, message)
}

/// Whether `headers`' `Accept` names JSON and SSE (by their essence, any
/// parameters): `(json, sse)`.
pub(crate) fn accepted(headers: &HeaderMap) -> (bool, bool) {
    let (mut json, mut sse) = (false, false);
    for essence in headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.split_once(';').map_or(v, |(essence, _)| essence).trim())
    {
        json |= essence.eq_ignore_ascii_case("application/json");
        sse |= essence.eq_ignore_ascii_case("text/event-stream");
    }
    (json, sse)
}

/// Whether `headers` say the body is JSON (`Content-Type` of essence
/// `application/json`, any parameters).
pub(crate) fn json_body(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// A POST's `Accept` and `Content-Type`: the refusal, or `None`.
pub(crate) fn post_media(headers: &HeaderMap) -> Option<Response> {
    let (json, sse) = accepted(headers);
    if !json || !sse {
        return Some(plain(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        ));
    }
    if !json_body(headers) {
        return Some(plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: Content-Type must be application/json",
        ));
    }
    None
}

/// The `MCP-Protocol-Version` header, when it is one a request may carry
/// (`unknown`: a version extpool does not speak is let through, for a
/// request whose `_meta` names its own); `Err` is the refusal.
pub(crate) fn version_header(
    headers: &HeaderMap,
    unknown: bool,
) -> Result<Option<&str>, Box<Response>> {
    let Some(version) = headers.get(HEADER_MCP_PROTOCOL_VERSION) else {
        return Ok(None);
    };
    let Ok(version) = version.to_str() else {
        return Err(Box::new(plain(
            StatusCode::BAD_REQUEST,
            "Bad Request: Invalid MCP-Protocol-Version header encoding",
        )));
    };
    if !unknown && !extpool_host::mcp::versions::speaks(version) {
        return Err(Box::new(plain(
            StatusCode::BAD_REQUEST,
            &format!("Bad Request: Unsupported MCP-Protocol-Version: {version}"),
        )));
    }
    Ok(Some(version))
}

/// What is wrong with the headers of a request of an own session which
/// negotiated `negotiated` at `initialize`: the refusal, or `None`.
pub(crate) fn in_session(
    method: &Method,
    headers: &HeaderMap,
    negotiated: Option<&str>,
) -> Option<Response> {
    if method == Method::POST
        && let Some(refused) = post_media(headers)
    {
        return Some(refused);
    }
    let version = match version_header(headers, false) {
        Ok(version) => version?,
        Err(refused) => return Some(*refused),
    };
    if Era::of(Some(version)) == Era::Stateless {
        let negotiated = negotiated.unwrap_or("no version");
        return Some(plain(
            StatusCode::BAD_REQUEST,
            &format!(
                "Bad Request: this session negotiated MCP {negotiated} at initialize; a request of MCP {version} belongs to no session (send it without Mcp-Session-Id)"
            ),
        ));
    }
    None
}

/// What is wrong with the headers of `initialize` request `id`, which
/// asks for MCP `asked`: the refusal, or `None`. Its `Accept` and
/// `Content-Type` as any POST's, a version header extpool speaks; one of
/// the 2026-07-28 era (which has no `initialize` of its own) the version
/// its params ask for, and a sent `Mcp-Method` the method it is.
pub(crate) fn initialize(headers: &HeaderMap, asked: &str, id: &RequestId) -> Option<Response> {
    if let Some(refused) = post_media(headers) {
        return Some(refused);
    }
    let version = match version_header(headers, false) {
        Ok(version) => version?,
        Err(refused) => return Some(*refused),
    };
    if Era::of(Some(version)) == Era::Session {
        return None;
    }
    if version != asked {
        return Some(rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id),
            -32600,
            &format!(
                "Invalid Request: MCP-Protocol-Version header ({version}) does not match initialize params.protocolVersion ({asked})"
            ),
        ));
    }
    let mut methods = headers.get_all("mcp-method").iter();
    let first = methods.next()?;
    let why = if methods.next().is_some() {
        "multiple Mcp-Method header values supplied; initialize requires exactly one".to_owned()
    } else if first != HeaderValue::from_static("initialize") {
        format!(
            "Mcp-Method header `{}` does not match body method `initialize`",
            String::from_utf8_lossy(first.as_bytes())
        )
    } else {
        return None;
    };
    Some(rpc_error(
        StatusCode::BAD_REQUEST,
        Some(id),
        crate::front::standard_headers::HEADER_MISMATCH,
        &why,
    ))
}

/// A request's `_meta` against its `MCP-Protocol-Version` header: a
/// version in `_meta` needs the header, and the same one; a 2026-07-28
/// header (or `server/discover`) needs the `_meta` of that era. The
/// refusal, or `None`.
pub(crate) fn meta_against_header(
    headers: &HeaderMap,
    id: &RequestId,
    request: &ClientRequest,
) -> Option<Response> {
    let meta = request.get_meta();
    let header = headers
        .get(HEADER_MCP_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok());
    let mismatch = |why: String| {
        rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id),
            crate::front::standard_headers::HEADER_MISMATCH,
            &why,
        )
    };
    let Some(said) = meta.protocol_version() else {
        let discover = matches!(request, ClientRequest::DiscoverRequest(_));
        let modern = header.is_some_and(|v| v >= ProtocolVersion::V_2026_07_28.as_str());
        if !discover && !modern {
            return None;
        }
        let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
        return Some(rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id),
            -32602,
            &format!(
                "Invalid params: request _meta is missing or has malformed required fields: {}",
                missing.join(", ")
            ),
        ));
    };
    let Some(header) = header else {
        return Some(mismatch(
            "request _meta protocolVersion requires MCP-Protocol-Version header".into(),
        ));
    };
    (header != said.as_str()).then(|| {
        mismatch(format!(
            "MCP-Protocol-Version header ({header}) does not match request _meta protocolVersion ({said})"
        ))
    })
}

/// A session-era message without a session that is not `initialize`.
pub(crate) fn session_required() -> Response {
    plain(
        StatusCode::BAD_REQUEST,
        "Bad Request: Session ID is required",
    )
}

/// A method the endpoint does not take (`allow`: those it takes).
pub(crate) fn method_not_allowed(allow: &'static str) -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, allow)],
        "Method Not Allowed",
    )
        .into_response()
}

/// An answer of a 2026-07-28 client, which the gateway asked nothing.
pub(crate) fn no_question() -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        None,
        -32600,
        "stateless server does not accept JSON-RPC responses",
    )
}

/// A `GET` or `DELETE` without a session: a session-era one needs a
/// session; a 2026-07-28 one (no sessions, no stream to resume here) is
/// not allowed. A `GET` must accept SSE first.
pub(crate) fn sessionless(method: &Method, headers: &HeaderMap) -> Response {
    if method == Method::GET && !accepted(headers).1 {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    let version = match version_header(headers, false) {
        Ok(version) => version,
        Err(refused) => return *refused,
    };
    match Era::of(version) {
        Era::Session => session_required(),
        Era::Stateless => method_not_allowed("POST"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::extract::Request;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    const BASE: [(&str, &str); 2] = [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];

    fn status(pairs: &[(&str, &str)], negotiated: Option<&str>) -> Option<u16> {
        in_session(&Method::POST, &headers(pairs), negotiated).map(|r| r.status().as_u16())
    }

    #[test]
    fn a_sessions_headers_are_refused_as_the_transport_refuses_them() {
        assert_eq!(status(&BASE, Some("2025-11-25")), None);
        assert_eq!(status(&BASE[1..], None), Some(406));
        assert_eq!(
            status(&[("accept", "application/json"), BASE[1]], None),
            Some(406)
        );
        assert_eq!(status(&BASE[..1], None), Some(415));
        assert_eq!(
            status(&[BASE[0], ("content-type", "text/plain")], None),
            Some(415)
        );
        let versioned = |v: &'static str| [BASE[0], BASE[1], ("mcp-protocol-version", v)];
        assert_eq!(status(&versioned("2025-06-18"), Some("2025-06-18")), None);
        assert_eq!(
            status(&versioned("1999-01-01"), Some("2025-06-18")),
            Some(400)
        );
        assert_eq!(
            status(&versioned("2026-07-28"), Some("2025-11-25")),
            Some(400)
        );
        let get = Request::builder()
            .method(Method::GET)
            .body(Body::empty())
            .expect("get");
        assert!(
            in_session(get.method(), get.headers(), Some("2025-11-25")).is_none(),
            "GET has no body"
        );
    }

    #[test]
    fn an_initialize_of_the_2026_era_says_its_version_twice_and_its_method() {
        let id = RequestId::Number(1);
        let v2026 = [BASE[0], BASE[1], ("mcp-protocol-version", "2026-07-28")];
        assert!(initialize(&headers(&v2026), "2026-07-28", &id).is_none());
        let refused = initialize(&headers(&v2026), "2025-11-25", &id).expect("mismatch");
        assert_eq!(refused.status(), 400);
        let wrong = [
            BASE[0],
            BASE[1],
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ];
        assert_eq!(
            initialize(&headers(&wrong), "2026-07-28", &id).map(|r| r.status().as_u16()),
            Some(400)
        );
        assert!(initialize(&headers(&BASE), "2025-11-25", &id).is_none());
        assert!(
            initialize(
                &headers(&[BASE[0], BASE[1], ("mcp-protocol-version", "2025-06-18")]),
                "2025-11-25",
                &id
            )
            .is_none(),
            "a session-era header is not compared with the params"
        );
        assert_eq!(
            initialize(&headers(&BASE[..1]), "2025-11-25", &id).map(|r| r.status().as_u16()),
            Some(415)
        );
    }

    #[test]
    fn without_a_session_get_and_delete_need_one_or_are_not_allowed() {
        let get = |pairs: &[(&str, &str)]| sessionless(&Method::GET, &headers(pairs)).status();
        assert_eq!(get(&[("accept", "application/json")]), 406);
        assert_eq!(get(&[("accept", "text/event-stream")]), 400);
        assert_eq!(
            get(&[
                ("accept", "text/event-stream"),
                ("mcp-protocol-version", "2026-07-28")
            ]),
            405
        );
        let delete =
            |pairs: &[(&str, &str)]| sessionless(&Method::DELETE, &headers(pairs)).status();
        assert_eq!(delete(&[]), 400);
        assert_eq!(delete(&[("mcp-protocol-version", "2026-07-28")]), 405);
        assert_eq!(delete(&[("mcp-protocol-version", "1999-01-01")]), 400);
    }
}
