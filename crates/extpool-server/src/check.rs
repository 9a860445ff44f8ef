//! The one rule for what a client's JSON-RPC message must be, over HTTP
//! (a POSTed body, read by the HTTP front end) and over stdio (a line,
//! [`stdio_reply`]) alike: JSON (else `-32700`), one JSON-RPC message, not
//! a batch (else `-32600`), and the params of a method MCP defines of the
//! shape it defines (else `-32602`, naming the method and what is wrong).
//! A refusal carries the request's id whenever one can be read, so no
//! client waits for an answer that never comes.

use rmcp::model::{ClientRequest, RequestId};
use serde_json::Value;
use serde_json::value::RawValue;

/// Why a message is refused: the JSON-RPC error it is answered with.
#[derive(Debug)]
pub(crate) struct Refused {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The request's id, when it can be read (else the answer's is null).
    pub id: Option<Value>,
    /// What is wrong.
    pub message: String,
}

/// A JSON-RPC error answer to request `id` (null when unknown).
pub(crate) fn error_answer(id: Option<&Value>, code: i64, message: &str) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    })
}

/// The answer over stdio to one line the client wrote (without its
/// newline), when [`check_message`] refuses it: the JSON-RPC error HTTP
/// answers the same message with, as the text of one line. A blank line
/// separates nothing and is passed over, as an empty one is.
pub(crate) fn stdio_reply(line: &[u8]) -> Option<Vec<u8>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let refused = check_message(line, crate::methods::Era::Session).err()?;
    let answer = error_answer(refused.id.as_ref(), refused.code, &refused.message);
    Some(answer.to_string().into_bytes())
}

/// What the gateway needs of a checked message.
#[derive(Debug, Default)]
pub(crate) struct Message {
    /// The request's id, if it is a request.
    pub id: Option<Value>,
    /// Whether it is `subscriptions/listen` (a stream that stays open).
    pub listen: bool,
    /// The request id a `notifications/cancelled` names.
    pub cancels: Option<Value>,
    /// What its span says of a request, when requests' spans are recorded.
    pub traced: Option<Box<crate::trace::Traced>>,
    /// The request read as its type, when the check read it so ([`plain`]):
    /// whoever answers it need not read it again.
    pub typed: Option<Typed>,
}

/// A request the check read as its type: its id and the request.
#[derive(Debug, Clone)]
pub(crate) struct Typed(pub RequestId, pub ClientRequest);

/// The four members of a plain request, as they lie in the body; any
/// other member, or one twice, and it is not plain.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Members<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a RawValue,
    method: &'a str,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

/// The hot path of [`check_message`]: a plain request (the four members,
/// `"jsonrpc": "2.0"`, a string or integer id, object or null params) of
/// a method read straight into its type (`tools/call` among them), which
/// the whole check would pass as it is. `None` sends the message through
/// the whole check, which says what is wrong if anything is.
fn plain(bytes: &[u8]) -> Option<Message> {
    use extpool_host::mcp::transport::FastDecode;
    let members: Members = serde_json::from_slice(bytes).ok()?;
    let params_ok = members
        .params
        .is_none_or(|p| p.get().starts_with('{') || p.get() == "null");
    if members.jsonrpc != "2.0" || !params_ok || crate::trace::wanted() {
        return None;
    }
    let raw_id = members.id.get();
    let (id, value) = if raw_id.starts_with('"') {
        let text: String = serde_json::from_str(raw_id).ok()?;
        (RequestId::String(text.as_str().into()), Value::String(text))
    } else {
        let number: i64 = raw_id.parse().ok()?;
        (RequestId::Number(number), Value::from(number))
    };
    let request = <rmcp::RoleServer as FastDecode>::request(members.method, bytes)?;
    Some(Message {
        id: Some(value),
        typed: Some(Typed(id, request)),
        ..Message::default()
    })
}

impl Message {
    /// The id as JSON text (the key of requests in flight).
    pub(crate) fn id_text(&self) -> Option<String> {
        self.id.as_ref().map(Value::to_string)
    }
}

/// `value` in a refusal: a number, boolean or null as written, anything
/// else by its kind (a client's 4 MiB array is not sent back to it).
fn shown(value: &Value) -> String {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => value.to_string(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// Checks one message (a POSTed body, a line of stdio): JSON, one
/// JSON-RPC message, known methods' params of the right shape. `Err` is
/// the JSON-RPC error it is answered with.
pub(crate) fn check_message(bytes: &[u8], era: crate::methods::Era) -> Result<Message, Refused> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Refused {
            code: -32700,
            id: None,
            message: "the request body is empty; send one JSON-RPC message".into(),
        });
    }
    match plain(bytes) {
        Some(message) => Ok(message),
        None => whole(bytes, era),
    }
}

/// [`check_message`] of a message that is not blank, member by member.
fn whole(bytes: &[u8], era: crate::methods::Era) -> Result<Message, Refused> {
    let bad = |code, id: Option<&Value>, message: String| Refused {
        code,
        id: id.cloned(),
        message,
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        // Its id, if it comes before what cannot be read: the client
        // waiting for that answer gets it.
        let id =
            extpool_host::mcp::top_level_id(bytes).and_then(|id| serde_json::to_value(id).ok());
        bad(
            -32700,
            id.as_ref(),
            format!("the request body is not JSON: {e}"),
        )
    })?;
    let Value::Object(object) = &value else {
        let message = if value.is_array() {
            "a JSON-RPC batch (an array) is not accepted: since MCP 2025-06-18 each request carries one message".to_owned()
        } else {
            "expected one JSON-RPC message (an object)".to_owned()
        };
        return Err(bad(-32600, None, message));
    };
    if object.get("id").is_some_and(Value::is_null) {
        return Err(bad(
            -32600,
            None,
            "a request id is a string or an integer, not null".into(),
        ));
    }
    let id = object.get("id");
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(bad(
            -32600,
            id,
            "not a JSON-RPC 2.0 message: \"jsonrpc\": \"2.0\" is missing".into(),
        ));
    }
    if let Some(id) = id
        && !(id.is_string() || id.is_i64())
    {
        let what = if id.is_u64() {
            format!("an integer of at most {}, not {id}", i64::MAX)
        } else {
            format!("a string or an integer, not {}", shown(id))
        };
        return Err(bad(-32600, None, format!("a request id is {what}")));
    }
    if let Some(method) = object.get("method")
        && !method.is_string()
    {
        return Err(bad(
            -32600,
            id,
            format!("\"method\" is a string, not {}", shown(method)),
        ));
    }
    let method = object.get("method").and_then(Value::as_str);
    let shape = match method {
        Some(method) if id.is_some() => crate::methods::params_shape(method, &value, era),
        _ => crate::methods::Shape::NotDefined,
    };
    if let (Some(method), crate::methods::Shape::Wrong(why)) = (method, &shape) {
        return Err(bad(
            -32602,
            id,
            format!("invalid params for {method}: {why}"),
        ));
    }
    if let Some(method) = method
        && let Some(params) = object.get("params")
        && !(params.is_object() || params.is_null())
    {
        return Err(bad(
            -32602,
            id,
            format!(
                "invalid params for {method}: params are an object, not {}",
                shown(params)
            ),
        ));
    }
    // Anything else rmcp cannot read as a client's message it would
    // answer with HTTP 415 and plain text: say so as JSON-RPC instead. A
    // request of a method MCP defines, its params read as their type and
    // nothing beside the four members of a request, is one rmcp reads:
    // it is not read a second time here (the hot path: `tools/call`).
    let plain_request = matches!(shape, crate::methods::Shape::Right)
        && object
            .keys()
            .all(|k| matches!(k.as_str(), "jsonrpc" | "id" | "method" | "params"));
    if !plain_request
        && let Err(e) = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(bytes)
    {
        return Err(bad(
            -32600,
            id,
            format!("not a JSON-RPC request, notification or response a client sends: {e}"),
        ));
    }
    let is_request = method.is_some() && id.is_some();
    Ok(Message {
        id: is_request.then(|| id.cloned()).flatten(),
        listen: method == Some("subscriptions/listen"),
        cancels: (method == Some("notifications/cancelled"))
            .then(|| object.get("params")?.get("requestId").cloned())
            .flatten(),
        traced: method
            .filter(|_| is_request && crate::trace::wanted())
            .map(|method| crate::trace::traced(method, object.get("params"))),
        typed: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hot_path_passes_only_what_the_whole_check_passes_and_reads_it_as_rmcp() {
        let hot = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
            r#"{"params":{"name":"e","_meta":{"progressToken":"p"}},"method":"tools/call","id":"x","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":-7,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":null}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        ];
        for body in hot {
            let fast = plain(body.as_bytes()).expect(body);
            let slow = whole(body.as_bytes(), crate::methods::Era::Session).expect(body);
            assert_eq!(fast.id, slow.id, "{body}");
            let Typed(id, request) = fast.typed.expect(body);
            let read = rmcp::model::ClientJsonRpcMessage::request(request, id);
            let rmcp: rmcp::model::ClientJsonRpcMessage = serde_json::from_str(body).unwrap();
            assert_eq!(
                serde_json::to_value(&read).unwrap(),
                serde_json::to_value(&rmcp).unwrap(),
                "{body}"
            );
        }
        // Each of these goes through the whole check, which says what is
        // wrong (or passes it by another way).
        let other = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["echo"]}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/list"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","extra":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ];
        for body in other {
            assert!(plain(body.as_bytes()).is_none(), "{body}");
        }
    }

    fn reply(line: &[u8]) -> Option<Value> {
        stdio_reply(line).map(|text| serde_json::from_slice(&text).expect("JSON"))
    }

    #[test]
    fn a_refused_line_is_answered_with_its_id_when_one_can_be_read() {
        for (line, id, code) in [
            (
                &br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7}}"#[..],
                Value::from(3),
                -32602,
            ),
            (
                br#"{"jsonrpc":"2.0","id":"a","method":"x/y","params":[1]}"#,
                Value::from("a"),
                -32602,
            ),
            (b"{nope", Value::Null, -32700),
            (b"\xff", Value::Null, -32700),
            // Read up to its id: a client waiting for it hears.
            (
                br#"{"jsonrpc":"2.0","id":6,"method":"ping","#,
                Value::from(6),
                -32700,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"params\":{\"x\":\"\xff\"}}",
                Value::from("b"),
                -32700,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                Value::Null,
                -32600,
            ),
        ] {
            let shown = String::from_utf8_lossy(line);
            let answer = reply(line).unwrap_or_else(|| panic!("no answer to {shown}"));
            assert_eq!(answer["jsonrpc"], "2.0", "{shown}: {answer}");
            assert_eq!(answer["id"], id, "{shown}: {answer}");
            assert_eq!(answer["error"]["code"], code, "{shown}: {answer}");
        }
    }

    #[test]
    fn a_valid_or_blank_line_is_left_to_the_session() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..],
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":2,"method":"vendor/x","params":{}}"#,
            b"   \t",
        ] {
            assert_eq!(reply(line), None, "{}", String::from_utf8_lossy(line));
        }
    }

    /// What lets `check_message` read a plain request of a method MCP
    /// defines once: rmcp reads every such request whose params have their
    /// method's shape as a client's message.
    #[test]
    fn a_well_shaped_request_of_each_defined_method_is_one_rmcp_reads() {
        let requests = [
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"message": "hi"}, "_meta": {"progressToken": 1}}}),
            serde_json::json!({"jsonrpc": "2.0", "id": "s", "method": "tools/list", "params": {"cursor": "x"}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
            serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "test://a"}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "p"}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 6, "method": "logging/setLevel", "params": {"level": "info"}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "completion/complete", "params": {
                "ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "b"}}}),
        ];
        for request in requests {
            let method = request["method"].as_str().expect("a method");
            assert_eq!(
                crate::methods::params_shape(method, &request, crate::methods::Era::Session),
                crate::methods::Shape::Right,
                "{request}"
            );
            let bytes = serde_json::to_vec(&request).expect("JSON");
            let read = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(&bytes);
            assert!(read.is_ok(), "{request}: {read:?}");
            let checked = check_message(&bytes, crate::methods::Era::Session)
                .expect("a plain request passes");
            assert_eq!(checked.id.as_ref(), request.get("id"), "{request}");
        }
    }
}
