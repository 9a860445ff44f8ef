//! Which requests' headers ask nothing of rmcp's transport, so that a
//! request answered in the HTTP task ([`super`]) skips no check rmcp would
//! make.

use axum::http::{HeaderMap, header};

/// Whether `headers` ask nothing of rmcp's transport a request answered
/// here would skip: `Accept` naming JSON and SSE (no weights), a JSON
/// `Content-Type`, no protocol version whose headers rmcp checks against
/// the body, and no such header.
pub(super) fn plain_headers(headers: &HeaderMap) -> bool {
    let accepts = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    let accepts_all = ["application/json", "text/event-stream"]
        .iter()
        .all(|want| accepts.iter().any(|a| a.eq_ignore_ascii_case(want)));
    let json_body = json_body(headers);
    let legacy_version =
        match headers.get(rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION) {
            None => true,
            Some(v) => v.to_str().is_ok_and(|v| {
                crate::methods::Era::of(Some(v)) == crate::methods::Era::Session
                    && extpool_host::mcp::versions::speaks(v)
            }),
        };
    let no_standard_headers = !headers.keys().any(|k| {
        k.as_str().starts_with("mcp-")
            && k.as_str() != "mcp-session-id"
            && k.as_str() != "mcp-protocol-version"
    });
    accepts_all && json_body && legacy_version && no_standard_headers
}

/// Whether `headers`' `Accept` names JSON and SSE (by their essence, any
/// parameters): `(json, sse)`, as rmcp's transport reads it.
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
/// `application/json`, any parameters): the one rule of both front ends'
/// checks.
pub(crate) fn json_body(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

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

    #[test]
    fn only_plain_headers_are_answered_here() {
        let base = [
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("mcp-session-id", "s"),
        ];
        assert!(plain_headers(&headers(&base)));
        let with = |extra: (&'static str, &'static str)| {
            let mut pairs = base.to_vec();
            pairs.push(extra);
            plain_headers(&headers(&pairs))
        };
        assert!(with(("mcp-protocol-version", "2025-11-25")));
        assert!(with(("mcp-protocol-version", "2025-03-26")));
        assert!(
            !with(("mcp-protocol-version", "2026-07-28")),
            "rmcp checks its headers"
        );
        assert!(
            !with(("mcp-protocol-version", "1999-01-01")),
            "rmcp refuses it"
        );
        assert!(!with(("mcp-method", "tools/call")));
        assert!(!with(("mcp-name", "echo")));
        assert!(!plain_headers(&headers(&[
            ("accept", "application/json"),
            ("content-type", "application/json"),
        ])));
        assert!(!plain_headers(&headers(&[
            ("accept", "application/json;q=0, text/event-stream"),
            ("content-type", "application/json"),
        ])));
        assert!(!plain_headers(&headers(&[
            ("accept", "application/json, text/event-stream"),
            ("content-type", "text/plain"),
        ])));
    }
}
