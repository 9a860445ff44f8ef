//! `Mcp-Param-*` headers (SEP-2243) of a 2026-07-28 `tools/call`, from the
//! tool schemas this client listed.
//!
//! A tool may promote arguments to HTTP headers (`x-mcp-header` on a
//! property), and a 2026-07-28 server refuses a call whose headers do not
//! match (HTTP 400, `-32020`). rmcp 3.11's HTTP client adds them from the
//! schemas it saw pass in `tools/list` answers on the same transport, so it
//! sends the call without them (1) after a reconnect, until the tools are
//! listed again on the new transport, and (2) when a `tools/list` answer
//! arrived on an SSE stream ending at the same moment (its
//! `drain_queued_stream_messages` hands such a message on without looking at
//! it). The client here keeps the schemas of the tools it listed, across
//! connections, and adds any such header rmcp left out, by the same rules (a
//! primitive at a `properties` path, Base64-wrapped when it cannot travel as
//! a bare header value); a header rmcp set is left alone.
//!
//! What a server controls is bounded: a tool promoting more than
//! [`MAX_PROMOTED`] arguments, or one deeper than [`MAX_DEPTH`] properties,
//! is not recorded (its calls go as rmcp sends them), and an argument longer
//! than [`MAX_VALUE_BYTES`] once encoded is not promoted.

use std::collections::{HashMap, HashSet};

use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonObject, Tool};
use serde_json::Value;

/// The first protocol version with standard headers.
const STANDARD_HEADERS: &str = "2026-07-28";

/// The most arguments one tool may promote to headers.
pub const MAX_PROMOTED: usize = 32;

/// The deepest `properties` path an annotation may sit at.
pub const MAX_DEPTH: usize = 8;

/// The longest header value (after Base64 wrapping) promoted from an argument.
pub const MAX_VALUE_BYTES: usize = 8 * 1024;

/// One promoted argument: its path of property names and its header.
#[derive(Debug, Clone)]
struct Promoted {
    path: Vec<String>,
    header: HeaderName,
}

/// The promoted arguments, by tool name, of the listed tools that have any.
/// Shared by a client and the HTTP transports of all its connections.
#[derive(Debug, Default)]
pub struct ParamHeaders {
    tools: parking_lot::RwLock<HashMap<String, Vec<Promoted>>>,
}

/// RFC 9110 token character (what a header name may hold).
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Every `x-mcp-header` annotation on a `properties` chain of `schema`,
/// checked by rmcp's rules (a non-empty token, unique ignoring case, on a
/// string, integer or boolean property) and the bounds above.
fn promoted(schema: &JsonObject) -> Result<Vec<Promoted>, String> {
    fn walk(
        properties: Option<&Value>,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, Value, Option<Value>)>,
    ) -> Result<(), String> {
        let Some(Value::Object(properties)) = properties else {
            return Ok(());
        };
        if path.len() >= MAX_DEPTH {
            return Err(format!("properties nested deeper than {MAX_DEPTH}"));
        }
        for (name, property) in properties {
            path.push(name.clone());
            if let Some(header) = property.get("x-mcp-header") {
                if out.len() == MAX_PROMOTED {
                    return Err(format!("more than {MAX_PROMOTED} x-mcp-header annotations"));
                }
                out.push((path.clone(), header.clone(), property.get("type").cloned()));
            }
            walk(property.get("properties"), path, out)?;
            path.pop();
        }
        Ok(())
    }
    let mut found = Vec::new();
    walk(schema.get("properties"), &mut Vec::new(), &mut found)?;
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(found.len());
    for (path, header, kind) in found {
        let prop = path.join(".");
        let Value::String(header) = header else {
            return Err(format!("property `{prop}`: x-mcp-header must be a string"));
        };
        if header.is_empty() || !header.chars().all(is_tchar) {
            return Err(format!(
                "property `{prop}`: x-mcp-header `{header}` is not an HTTP token"
            ));
        }
        if !seen.insert(header.to_ascii_lowercase()) {
            return Err(format!(
                "property `{prop}`: duplicate x-mcp-header `{header}` (case-insensitive)"
            ));
        }
        if !matches!(
            kind.as_ref().and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        ) {
            return Err(format!(
                "property `{prop}`: x-mcp-header needs a string, integer or boolean property"
            ));
        }
        let header = HeaderName::from_bytes(format!("mcp-param-{header}").as_bytes())
            .map_err(|e| format!("property `{prop}`: {e}"))?;
        out.push(Promoted { path, header });
    }
    Ok(out)
}

/// A primitive argument as SEP-2243 writes it in a header, Base64-wrapped
/// (`=?base64?…?=`) when it cannot travel bare.
fn header_value(value: &Value) -> Option<String> {
    use base64::Engine;
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let bytes = text.as_bytes();
    let wrap = matches!(bytes.first(), Some(b' ' | b'\t'))
        || matches!(bytes.last(), Some(b' ' | b'\t'))
        || text.chars().any(|c| (c as u32) < 0x20 || (c as u32) > 0x7E)
        || (text.starts_with("=?base64?") && text.ends_with("?="));
    Some(if wrap {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        )
    } else {
        text
    })
}

impl ParamHeaders {
    /// Keeps the promoted arguments of `tools` (a whole list, replacing the
    /// last); a tool whose annotations break the rules is left out, logged.
    pub fn record(&self, tools: &[Tool]) {
        let mut by_tool = HashMap::new();
        for tool in tools {
            match promoted(&tool.input_schema) {
                Ok(promoted) if promoted.is_empty() => {}
                Ok(promoted) => {
                    by_tool.insert(tool.name.to_string(), promoted);
                }
                Err(reason) => tracing::warn!(
                    tool = %tool.name,
                    "x-mcp-header annotations not used: {reason}"
                ),
            }
        }
        *self.tools.write() = by_tool;
    }

    /// Adds the `Mcp-Param-*` headers `message` needs and `headers` lacks,
    /// when it is a `tools/call` of a listed tool sent in the 2026-07-28 era.
    pub fn fill(
        &self,
        message: &ClientJsonRpcMessage,
        headers: &mut HashMap<HeaderName, HeaderValue>,
    ) {
        let ClientJsonRpcMessage::Request(request) = message else {
            return;
        };
        let ClientRequest::CallToolRequest(call) = &request.request else {
            return;
        };
        let Some(arguments) = &call.params.arguments else {
            return;
        };
        let modern = headers
            // A `&str` key would hash unlike a `HeaderName`: look up by name.
            .get(&HeaderName::from_static("mcp-protocol-version"))
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v >= STANDARD_HEADERS);
        if !modern {
            return;
        }
        let tools = self.tools.read();
        let Some(promoted) = tools.get(call.params.name.as_ref()) else {
            return;
        };
        for Promoted { path, header } in promoted {
            if headers.contains_key(header) {
                continue;
            }
            let mut value = arguments.get(&path[0]);
            for key in &path[1..] {
                value = value.and_then(|v| v.get(key));
            }
            let Some(text) = value.and_then(header_value) else {
                continue;
            };
            if text.len() > MAX_VALUE_BYTES {
                tracing::warn!(
                    tool = %call.params.name,
                    header = %header,
                    bytes = text.len(),
                    "argument not promoted to a header: longer than {MAX_VALUE_BYTES} bytes"
                );
                continue;
            }
            if let Ok(value) = HeaderValue::from_str(&text) {
                headers.insert(header.clone(), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, RequestId};
    use serde_json::json;
    use std::sync::Arc;

    fn call(arguments: Value) -> ClientJsonRpcMessage {
        let mut params = CallToolRequestParams::new("regional");
        params.arguments = arguments.as_object().cloned();
        ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            RequestId::Number(1),
        )
    }

    fn name(n: &'static str) -> HeaderName {
        HeaderName::from_static(n)
    }

    fn headers(version: &str) -> HashMap<HeaderName, HeaderValue> {
        let mut h = HashMap::new();
        h.insert(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_str(version).unwrap(),
        );
        h
    }

    fn listed(properties: Value) -> ParamHeaders {
        let schema = json!({"type": "object", "properties": properties});
        let tool = Tool::new(
            "regional",
            "",
            Arc::new(schema.as_object().unwrap().clone()),
        );
        let p = ParamHeaders::default();
        p.record(&[tool]);
        p
    }

    fn regional() -> ParamHeaders {
        listed(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
        }))
    }

    #[test]
    fn missing_headers_are_added_in_the_2026_era_only() {
        let p = regional();
        let mut h = headers("2026-07-28");
        p.fill(&call(json!({"region": " eu", "nested": {"n": 3}})), &mut h);
        assert_eq!(h[&name("mcp-param-region")], "=?base64?IGV1?=");
        assert_eq!(h[&name("mcp-param-n")], "3");
        let mut old = headers("2025-11-25");
        p.fill(&call(json!({"region": "eu"})), &mut old);
        assert!(!old.contains_key(&name("mcp-param-region")));
    }

    #[test]
    fn a_header_already_set_is_left_alone() {
        let p = regional();
        let mut h = headers("2026-07-28");
        h.insert(
            HeaderName::from_static("mcp-param-region"),
            HeaderValue::from_static("set"),
        );
        p.fill(&call(json!({"region": "eu"})), &mut h);
        assert_eq!(h[&name("mcp-param-region")], "set");
    }

    #[test]
    fn absent_null_and_structured_arguments_are_not_promoted() {
        let p = regional();
        let mut h = headers("2026-07-28");
        p.fill(&call(json!({"region": null, "nested": {"n": [1]}})), &mut h);
        assert_eq!(h.len(), 1, "{h:?}");
    }

    #[test]
    fn annotations_breaking_the_rules_or_bounds_are_not_used() {
        let bad = [
            json!({"a": {"type": "string", "x-mcp-header": "bad:name"}}),
            json!({"a": {"type": "string", "x-mcp-header": ""}}),
            json!({"a": {"type": "array", "x-mcp-header": "A"}}),
            json!({"a": {"type": "string", "x-mcp-header": "X"},
                   "b": {"type": "string", "x-mcp-header": "x"}}),
            Value::Object(
                (0..=MAX_PROMOTED)
                    .map(|i| {
                        (
                            format!("p{i}"),
                            json!({"type": "string", "x-mcp-header": format!("H{i}")}),
                        )
                    })
                    .collect(),
            ),
        ];
        for properties in bad {
            let p = listed(properties.clone());
            assert!(p.tools.read().is_empty(), "{properties}");
        }
        let mut deep = json!({"type": "string", "x-mcp-header": "Deep"});
        for _ in 0..MAX_DEPTH {
            deep = json!({"type": "object", "properties": {"d": deep}});
        }
        assert_eq!(listed(deep["properties"].clone()).tools.read().len(), 1);
        let deeper = json!({"type": "object", "properties": {"d": deep}});
        assert!(listed(deeper["properties"].clone()).tools.read().is_empty());
    }

    #[test]
    fn an_argument_longer_than_the_bound_is_not_promoted() {
        let p = regional();
        let mut h = headers("2026-07-28");
        let long = "e".repeat(MAX_VALUE_BYTES + 1);
        p.fill(&call(json!({"region": long})), &mut h);
        assert!(!h.contains_key(&name("mcp-param-region")));
        let fits = "e".repeat(MAX_VALUE_BYTES);
        p.fill(&call(json!({"region": fits})), &mut h);
        assert!(h.contains_key(&name("mcp-param-region")));
    }
}
