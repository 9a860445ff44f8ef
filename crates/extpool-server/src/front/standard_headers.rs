//! SEP-2243's standard headers, checked against the body of a 2026-07-28
//! request: `Mcp-Method`, `Mcp-Name` and the called tool's `Mcp-Param-*`
//! headers must say what the body says, so that a proxy or a load
//! balancer that routes on the headers routes the request the gateway
//! answers. A header that is missing, sent twice, malformed or different
//! from the body is refused: HTTP 400 with JSON-RPC `-32020`
//! (HeaderMismatch). The rules and their words are rmcp's (its validators
//! are private to its transport, which checks the same after this); the
//! conformance suite's `http-header-validation` and
//! `http-custom-header-server-validation` scenarios test them through the
//! gateway.

use std::borrow::Cow;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::Engine;
use serde_json::Value;
use serde_json::value::RawValue;

/// The JSON-RPC error code of a header that does not match the body.
pub(crate) const HEADER_MISMATCH: i64 = -32020;

const METHOD: &str = "mcp-method";
const NAME: &str = "mcp-name";
const PARAM_PREFIX: &str = "Mcp-Param-";
const BASE64_PREFIX: &str = "=?base64?";
const BASE64_SUFFIX: &str = "?=";

/// The answer to a 2026-07-28 request or notification without a session
/// whose standard headers do not say what its body says (`said`); `None`
/// when they do. For a `tools/call` the called tool's schema is looked up
/// in the table `caller` calls in (through `handler`, the request's), for
/// its `Mcp-Param-*` headers: a tool the caller does not see has none.
pub(crate) async fn refusal(
    headers: &HeaderMap,
    said: Option<Said<'_>>,
    id: Option<&Value>,
    handler: Option<&crate::handler::GatewayHandler>,
    caller: &crate::handler::caller::Caller,
) -> Option<Response> {
    let Said { method, params } = said?;
    let tool = params
        .as_ref()
        .and_then(Params::name)
        .filter(|_| method == "tools/call");
    let schema = match (tool, handler) {
        (Some(name), Some(handler)) => handler.header_schema(name, caller).await,
        _ => None,
    };
    let params = params.map(|p| p.into_value(name_member(&method), schema.is_some()));
    let why = check(headers, &method, params.as_ref(), schema.as_ref()).err()?;
    Some(crate::front::rpc_error(
        StatusCode::BAD_REQUEST,
        id,
        HEADER_MISMATCH,
        &why,
    ))
}

/// What a request or notification says that its standard headers must
/// say too: its method and its params.
pub(crate) struct Said<'a> {
    method: Cow<'a, str>,
    params: Option<Params<'a>>,
}

impl<'a> Said<'a> {
    /// What the body of a message (already checked) says; `None` when it
    /// names no method.
    pub(crate) fn of_body(body: &'a [u8]) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Message<'a> {
            #[serde(borrow, default)]
            method: Option<Cow<'a, str>>,
            #[serde(borrow, default)]
            params: Option<&'a RawValue>,
        }
        let message: Message = serde_json::from_slice(body).ok()?;
        Some(Said {
            method: message.method?,
            params: message.params.map(Params::read),
        })
    }

    /// What a `tools/call` read from its body says (its body is not read
    /// again).
    pub(crate) fn of_call(params: &'a rmcp::model::CallToolRequestParams) -> Self {
        Said {
            method: Cow::Borrowed("tools/call"),
            params: Some(Params::Call(params)),
        }
    }
}

/// What a request's params say that its headers speak of: the members an
/// `Mcp-Name` header names, and a call's arguments, read from the body
/// without building the rest (`_meta`, arguments no header speaks of).
/// Params that do not read so (a member sent twice, not an object) are
/// read whole, as JSON reads them.
enum Params<'a> {
    /// Read member by member from the body: the text members, the
    /// arguments as they lie in it.
    Members {
        name: Option<Cow<'a, str>>,
        uri: Option<Cow<'a, str>>,
        task_id: Option<Cow<'a, str>>,
        arguments: Option<&'a RawValue>,
    },
    /// Read whole from the body.
    Whole(Value),
    /// A `tools/call`'s, as its body was read.
    Call(&'a rmcp::model::CallToolRequestParams),
}

impl<'a> Params<'a> {
    fn read(raw: &'a RawValue) -> Self {
        #[derive(serde::Deserialize)]
        struct Members<'a> {
            #[serde(borrow, default)]
            name: Option<&'a RawValue>,
            #[serde(borrow, default)]
            uri: Option<&'a RawValue>,
            #[serde(borrow, default, rename = "taskId")]
            task_id: Option<&'a RawValue>,
            #[serde(borrow, default)]
            arguments: Option<&'a RawValue>,
        }
        // A member that is not text says nothing a header could say.
        let text = |raw: Option<&'a RawValue>| -> Option<Cow<'a, str>> {
            serde_json::from_str(raw?.get()).ok()
        };
        let members = match raw.get().trim_start().starts_with('{') {
            true => serde_json::from_str::<Members>(raw.get()).ok(),
            false => None,
        };
        match members {
            Some(m) => Params::Members {
                name: text(m.name),
                uri: text(m.uri),
                task_id: text(m.task_id),
                arguments: m.arguments,
            },
            None => Params::Whole(serde_json::from_str(raw.get()).unwrap_or(Value::Null)),
        }
    }

    /// The call's name, as a `tools/call` or `prompts/get` names it.
    fn name(&self) -> Option<&str> {
        match self {
            Params::Members { name, .. } => name.as_deref(),
            Params::Whole(v) => v.get("name").and_then(Value::as_str),
            Params::Call(call) => Some(&call.name),
        }
    }

    /// The params as [`check`] reads them: `member` (what `Mcp-Name`
    /// names for the method) and, when `with_arguments`, the arguments.
    fn into_value(self, member: Option<&str>, with_arguments: bool) -> Value {
        let (name, uri, task_id, arguments) = match self {
            Params::Whole(value) => return value,
            Params::Call(call) => return call_value(call, member, with_arguments),
            Params::Members {
                name,
                uri,
                task_id,
                arguments,
            } => (name, uri, task_id, arguments),
        };
        let mut out = serde_json::Map::new();
        let named = match member {
            Some("name") => name,
            Some("uri") => uri,
            Some("taskId") => task_id,
            _ => None,
        };
        if let (Some(member), Some(value)) = (member, named) {
            out.insert(member.to_owned(), Value::String(value.into_owned()));
        }
        if with_arguments
            && let Some(arguments) = arguments.and_then(|a| serde_json::from_str(a.get()).ok())
        {
            out.insert("arguments".to_owned(), arguments);
        }
        Value::Object(out)
    }
}

/// A `tools/call`'s params as [`check`] reads them: its name as `member`
/// and, when `with_arguments`, its arguments.
fn call_value(
    call: &rmcp::model::CallToolRequestParams,
    member: Option<&str>,
    with_arguments: bool,
) -> Value {
    let mut out = serde_json::Map::new();
    if member == Some("name") {
        out.insert("name".to_owned(), Value::String(call.name.to_string()));
    }
    if with_arguments && let Some(arguments) = &call.arguments {
        out.insert("arguments".to_owned(), Value::Object(arguments.clone()));
    }
    Value::Object(out)
}

/// The member of a request's params that its `Mcp-Name` header says, for
/// the methods that have one.
fn name_member(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// Checks `headers` against a request or notification of `method` with
/// `params`. `schema` is the called tool's input schema, for a
/// `tools/call` (its `x-mcp-header` annotations name the `Mcp-Param-*`
/// headers). `Err` says what does not match, for the `-32020` error.
pub(crate) fn check(
    headers: &HeaderMap,
    method: &str,
    params: Option<&Value>,
    schema: Option<&Value>,
) -> Result<(), String> {
    match single(headers, METHOD)? {
        // `initialize` may leave it out; a value it sends must agree.
        None if method == "initialize" => {}
        None => {
            return Err(format!(
                "missing required Mcp-Method header: a 2026-07-28 request names its method (`{method}`) in it"
            ));
        }
        Some(said) if said != method => {
            return Err(format!(
                "Mcp-Method header `{said}` does not match body method `{method}`"
            ));
        }
        Some(_) => {}
    }
    if let Some(member) = name_member(method)
        && let Some(expected) = params.and_then(|p| p.get(member)).and_then(Value::as_str)
    {
        let Some(raw) = single(headers, NAME)? else {
            return Err(format!(
                "missing required Mcp-Name header for `{method}`: it names the request's {member} (`{expected}`)"
            ));
        };
        let said = decoded(raw).ok_or("Mcp-Name header is not valid Base64")?;
        if said != expected {
            return Err(format!(
                "Mcp-Name header `{said}` does not match body value `{expected}`"
            ));
        }
    }
    if method == "tools/call"
        && let Some(schema) = schema
    {
        let arguments = params.and_then(|p| p.get("arguments"));
        for (path, header) in annotations(schema) {
            check_param(headers, arguments, &path, header)?;
        }
    }
    Ok(())
}

/// Checks the `Mcp-Param-<header>` header of the argument at `path`: sent
/// exactly when the argument is (and is not null), with its value.
fn check_param(
    headers: &HeaderMap,
    arguments: Option<&Value>,
    path: &[&str],
    header: &str,
) -> Result<(), String> {
    let full = format!("{PARAM_PREFIX}{header}");
    let argument = path.join(".");
    let body = arguments
        .and_then(|a| path.iter().try_fold(a, |v, key| v.get(key)))
        .and_then(primitive_text);
    match (single(headers, &full)?, body) {
        (None, None) => Ok(()),
        (Some(_), None) => Err(format!(
            "unexpected {full} header for absent or null `{argument}`"
        )),
        (None, Some(_)) => Err(format!("missing {full} header for `{argument}`")),
        (Some(raw), Some(expected)) => {
            let said = decoded(raw).ok_or_else(|| format!("{full} header is not valid Base64"))?;
            if said == expected {
                Ok(())
            } else {
                Err(format!(
                    "{full} header `{said}` does not match body value `{expected}`"
                ))
            }
        }
    }
}

/// A primitive argument as its header text; `None` for null, an object
/// or an array.
fn primitive_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The one value of header `name`, without the whitespace around it
/// (RFC 9110 §5.5); `Err` when it is sent more than once (two values a
/// proxy and the gateway could each take differently) or is not text.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("duplicate {name} header"));
    }
    value
        .to_str()
        .map(|v| Some(v.trim_matches([' ', '\t'])))
        .map_err(|_| format!("{name} header contains invalid characters"))
}

/// A header value as the text it carries: `=?base64?<Base64>?=` decoded
/// (`None` when that is not Base64 of UTF-8 text), anything else as it is.
fn decoded(raw: &str) -> Option<String> {
    match raw
        .strip_prefix(BASE64_PREFIX)
        .and_then(|inner| inner.strip_suffix(BASE64_SUFFIX))
    {
        Some(inner) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(inner)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(raw.to_owned()),
    }
}

/// The `x-mcp-header` annotations of `schema` that name a header: the
/// property path from the root (through `properties` alone) and the name.
fn annotations(schema: &Value) -> Vec<(Vec<&str>, &str)> {
    let mut found = Vec::new();
    collect(schema.get("properties"), &mut Vec::new(), &mut found);
    found
}

fn collect<'a>(
    properties: Option<&'a Value>,
    path: &mut Vec<&'a str>,
    found: &mut Vec<(Vec<&'a str>, &'a str)>,
) {
    let Some(Value::Object(properties)) = properties else {
        return;
    };
    for (name, property) in properties {
        path.push(name);
        if let Some(Value::String(header)) = property.get("x-mcp-header")
            && !header.is_empty()
        {
            found.push((path.clone(), header.as_str()));
        }
        collect(property.get("properties"), path, found);
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderName, HeaderValue};
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        map
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {
                "flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
            "query": {"type": "string"}}})
    }

    fn call(arguments: Value) -> Value {
        json!({"name": "lookup", "arguments": arguments})
    }

    #[test]
    fn the_method_header_must_be_the_bodys_method_and_initialize_may_leave_it_out() {
        let list = |pairs: &[(&str, &str)]| check(&headers(pairs), "tools/list", None, None);
        assert_eq!(list(&[("Mcp-Method", "tools/list")]), Ok(()));
        assert_eq!(list(&[("MCP-METHOD", "  tools/list\t")]), Ok(()));
        for wrong in [
            list(&[]),
            list(&[("mcp-method", "TOOLS/LIST")]),
            list(&[("mcp-method", "prompts/list")]),
            list(&[("mcp-method", "tools/list"), ("mcp-method", "tools/list")]),
        ] {
            assert!(wrong.is_err(), "{wrong:?}");
        }
        let init = |pairs: &[(&str, &str)]| check(&headers(pairs), "initialize", None, None);
        assert_eq!(init(&[]), Ok(()));
        assert!(init(&[("mcp-method", "tools/list")]).is_err());
    }

    #[test]
    fn the_name_header_must_be_the_bodys_name_uri_or_task_plain_or_base64() {
        let read = json!({"uri": "test://a b"});
        let with = |name: &str| {
            check(
                &headers(&[("mcp-method", "resources/read"), ("mcp-name", name)]),
                "resources/read",
                Some(&read),
                None,
            )
        };
        assert_eq!(with("test://a b"), Ok(()));
        assert_eq!(with("=?base64?dGVzdDovL2EgYg==?="), Ok(()));
        let wrong = with("test://other").expect_err("another URI");
        assert!(wrong.contains("test://other"), "{wrong}");
        assert!(with("=?base64?dGVzdDovL2EgYg?=").is_err(), "bad padding");
        let missing = check(
            &headers(&[("mcp-method", "resources/read")]),
            "resources/read",
            Some(&read),
            None,
        )
        .expect_err("no Mcp-Name");
        assert!(missing.contains("missing required Mcp-Name"), "{missing}");
        let task = json!({"taskId": "t-1"});
        assert!(
            check(
                &headers(&[("mcp-method", "tasks/get"), ("mcp-name", "t-1")]),
                "tasks/get",
                Some(&task),
                None
            )
            .is_ok()
        );
    }

    #[test]
    fn a_tools_annotated_arguments_travel_in_param_headers_and_nothing_else_does() {
        let schema = schema();
        let run = |extra: &[(&str, &str)], arguments: Value| {
            let mut pairs = vec![("mcp-method", "tools/call"), ("mcp-name", "lookup")];
            pairs.extend_from_slice(extra);
            check(
                &headers(&pairs),
                "tools/call",
                Some(&call(arguments)),
                Some(&schema),
            )
        };
        let both = [("mcp-param-region", "eu"), ("Mcp-Param-Flag", "true")];
        let args = json!({"region": "eu", "nested": {"flag": true}, "query": "q"});
        assert_eq!(run(&both, args.clone()), Ok(()));
        let encoded = [
            ("mcp-param-region", "=?base64?ZXU=?="),
            ("mcp-param-flag", "true"),
        ];
        assert_eq!(run(&encoded, args.clone()), Ok(()));
        // A value without the whole wrapper is taken as it is.
        let literal = json!({"region": "=?base64?ZXU=", "nested": {"flag": true}});
        let sent = [
            ("mcp-param-region", "=?base64?ZXU="),
            ("mcp-param-flag", "true"),
        ];
        assert_eq!(run(&sent, literal), Ok(()));
        assert!(run(&both[..1], args.clone()).is_err(), "Flag missing");
        assert!(run(&[("mcp-param-region", "us"), both[1]], args.clone()).is_err());
        assert!(run(&[("mcp-param-region", "=?base64?ZX!=?="), both[1]], args).is_err());
        // Absent or null arguments send no header, and a header without
        // its argument is refused.
        assert_eq!(run(&[], json!({"region": null})), Ok(()));
        assert!(run(&both[..1], json!({})).is_err());
        // Without a schema (a tool with no annotations) nothing is checked.
        let plain = check(
            &headers(&[("mcp-method", "tools/call"), ("mcp-name", "lookup")]),
            "tools/call",
            Some(&call(json!({"region": "eu"}))),
            None,
        );
        assert_eq!(plain, Ok(()));
    }

    /// The params the check reads from a body's text say, for every
    /// header the check compares, what the params read whole say: the
    /// member `Mcp-Name` names (or none where it is not text), and the
    /// arguments when the tool has annotated ones; params that do not read
    /// member by member (a member twice, not an object) are read whole.
    #[test]
    fn params_read_member_by_member_say_what_the_whole_params_say() {
        let cases = [
            (
                "tools/call",
                r#"{"name":"lookup","arguments":{"region":"eu","nested":{"flag":true}},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}"#,
            ),
            ("tools/call", r#"{"name":"look\u0075p","arguments":{}}"#),
            ("tools/call", r#"{"name":"first","name":"second"}"#),
            ("tools/call", r#"{"name":7,"arguments":{"region":"eu"}}"#),
            ("tools/call", r#"["lookup",{"region":"eu"}]"#),
            ("resources/read", r#"{"uri":"file:///a","name":"not this"}"#),
            ("tasks/get", r#"{"taskId":"t-1"}"#),
            ("prompts/get", r#"{"name":"p","arguments":{"a":"b"}}"#),
        ];
        for (method, params) in cases {
            let raw: Box<RawValue> = serde_json::from_str(params).expect("params");
            let whole: Value = serde_json::from_str(params).expect("params");
            let member = name_member(method);
            for with_arguments in [false, true] {
                let read = Params::read(&raw).into_value(member, with_arguments);
                let said = |v: &Value| {
                    (
                        member
                            .and_then(|m| v.get(m))
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        v.get("arguments").cloned().filter(|_| with_arguments),
                    )
                };
                assert_eq!(
                    said(&read),
                    said(&whole),
                    "{method} {params} {with_arguments}"
                );
                // A call read as its type says the same.
                if method == "tools/call"
                    && let Ok(call) =
                        serde_json::from_str::<rmcp::model::CallToolRequestParams>(params)
                {
                    let typed = Params::Call(&call).into_value(member, with_arguments);
                    assert_eq!(said(&typed), said(&whole), "{params} as a call");
                }
            }
            assert_eq!(
                Params::read(&raw).name(),
                whole.get("name").and_then(Value::as_str),
                "{params}"
            );
        }
    }
}
