//! Decoding one line into a JSON-RPC message, straight into the concrete
//! type where that is certain, and exactly as rmcp would everywhere else.
//!
//! rmcp decodes every message through untagged enums: the whole line is
//! buffered into serde's `Content`, then each variant is tried in turn
//! (a `tools/call` request is the 14th request variant, a tool result the
//! 16th result variant), every failed attempt formatting an error message.
//! Here one cheap pass peeks at the envelope (`jsonrpc`, `id`, `method`,
//! `result`, `error`, values left as raw slices), and the hot messages are
//! then decoded directly into their variant:
//!
//! - requests and notifications by `method`: the typed variants of rmcp's
//!   unions are told apart by a constant method string, so the variant the
//!   method names is the one the untagged enum would pick, whenever it
//!   decodes;
//! - tool results (`content`, `structuredContent`, `isError`, `_meta`,
//!   `resultType` and nothing else): no earlier result variant accepts such
//!   an object, which the tests check against rmcp's own decoder;
//! - error responses (a single variant).
//!
//! Anything else, and anything the fast path cannot decode, goes through
//! rmcp's own decoder, so the result — message, ignored line, or a reply
//! of `Invalid Request` — is the one rmcp gives today.

use rmcp::model::{
    CallToolRequest, CallToolResult, CancelledNotification, ClientNotification, ClientRequest,
    GetPromptRequest, InitializedNotification, JsonRpcError, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResponse, JsonRpcVersion2_0, ListPromptsRequest, ListResourcesRequest,
    ListToolsRequest, PingRequest, ProgressNotification, PromptListChangedNotification,
    ReadResourceRequest, RequestId, ResourceListChangedNotification, ResourceUpdatedNotification,
    ServerNotification, ServerResult, ToolListChangedNotification,
};
use rmcp::service::{RoleClient, RoleServer, RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use serde::de::{Deserialize, DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

/// What one line turned out to be.
#[derive(Debug)]
pub(crate) enum Decoded<T> {
    /// A message for the service.
    Message(T),
    /// Not JSON, or a notification outside MCP: ignored, as the other
    /// official SDKs do (answering could start an error storm).
    Skip,
    /// Well-formed JSON that is no valid message: answered with
    /// `Invalid Request`, and the connection goes on.
    Invalid,
}

/// The roles whose incoming messages have a fast path.
pub trait FastDecode: ServiceRole {
    /// The request variant `method` names, decoded from the whole line.
    fn request(method: &str, line: &[u8]) -> Option<Self::PeerReq>;
    /// The notification variant `method` names, decoded from the whole line.
    fn notification(method: &str, line: &[u8]) -> Option<Self::PeerNot>;
    /// The result, when its variant is certain without trying the others.
    fn result(result: &RawValue) -> Option<Self::PeerResp>;
    /// Whether a message this side cannot read (too long, nested too deep)
    /// fails the request it answers, so its caller hears at once: true on
    /// the client side, where callers wait on responses.
    const FAILS_REQUESTS_ON_LIMITS: bool = false;
    /// What outgoing request `item` wants kept of its answer (see
    /// [`super::whole`]), with its id; `None` for everything else.
    fn keeps(_item: &TxJsonRpcMessage<Self>) -> Option<(super::whole::Keep, &RequestId)> {
        None
    }
    /// The answer of `id` carrying `result` as JSON, unread.
    fn whole_result(_id: RequestId, _result: serde_json::Value) -> Option<RxJsonRpcMessage<Self>> {
        None
    }
}

/// A UTF-8 byte order mark, taken off a line before it is read.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Decodes `line` (without its newline) as rmcp would.
pub(crate) fn decode<R: FastDecode>(line: &[u8]) -> Decoded<RxJsonRpcMessage<R>> {
    let line = line.strip_prefix(BOM).unwrap_or(line);
    match fast::<R>(line) {
        Some(message) => Decoded::Message(message),
        None => slow::<R>(line),
    }
}

/// Reads one message a client sends a server (a POSTed body, say) as
/// rmcp's own decoder reads it, straight into the variant its method names
/// where that is certain (see the module's documentation): the hot
/// requests skip rmcp's untagged decoding, and everything else gets it.
pub fn client_message(body: &[u8]) -> Result<RxJsonRpcMessage<RoleServer>, serde_json::Error> {
    match fast::<RoleServer>(body) {
        Some(message) => Ok(message),
        None => serde_json::from_slice(body),
    }
}

fn typed<T: DeserializeOwned>(line: &[u8]) -> Option<T> {
    serde_json::from_slice(line).ok()
}

impl FastDecode for RoleServer {
    fn request(method: &str, line: &[u8]) -> Option<ClientRequest> {
        Some(match method {
            "tools/call" => typed::<CallToolRequest>(line)?.into(),
            "tools/list" => typed::<ListToolsRequest>(line)?.into(),
            "resources/read" => typed::<ReadResourceRequest>(line)?.into(),
            "resources/list" => typed::<ListResourcesRequest>(line)?.into(),
            "prompts/get" => typed::<GetPromptRequest>(line)?.into(),
            "prompts/list" => typed::<ListPromptsRequest>(line)?.into(),
            "ping" => typed::<PingRequest>(line)?.into(),
            _ => return None,
        })
    }

    fn notification(method: &str, line: &[u8]) -> Option<ClientNotification> {
        Some(match method {
            "notifications/cancelled" => typed::<CancelledNotification>(line)?.into(),
            "notifications/progress" => typed::<ProgressNotification>(line)?.into(),
            "notifications/initialized" => typed::<InitializedNotification>(line)?.into(),
            _ => return None,
        })
    }

    fn result(_: &RawValue) -> Option<rmcp::model::ClientResult> {
        None
    }
}

impl FastDecode for RoleClient {
    const FAILS_REQUESTS_ON_LIMITS: bool = true;

    fn keeps(item: &TxJsonRpcMessage<Self>) -> Option<(super::whole::Keep, &RequestId)> {
        super::whole::keeps(item)
    }

    fn whole_result(id: RequestId, result: serde_json::Value) -> Option<RxJsonRpcMessage<Self>> {
        Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id,
            result: ServerResult::CustomResult(rmcp::model::CustomResult(result)),
        }))
    }

    fn request(_: &str, _: &[u8]) -> Option<rmcp::model::ServerRequest> {
        None
    }

    fn notification(method: &str, line: &[u8]) -> Option<ServerNotification> {
        Some(match method {
            "notifications/cancelled" => typed::<CancelledNotification>(line)?.into(),
            "notifications/progress" => typed::<ProgressNotification>(line)?.into(),
            "notifications/tools/list_changed" => {
                typed::<ToolListChangedNotification>(line)?.into()
            }
            "notifications/resources/list_changed" => {
                typed::<ResourceListChangedNotification>(line)?.into()
            }
            "notifications/prompts/list_changed" => {
                typed::<PromptListChangedNotification>(line)?.into()
            }
            "notifications/resources/updated" => typed::<ResourceUpdatedNotification>(line)?.into(),
            _ => return None,
        })
    }

    fn result(result: &RawValue) -> Option<ServerResult> {
        const TOOL_RESULT_KEYS: &[&str] = &[
            "content",
            "structuredContent",
            "isError",
            "_meta",
            "resultType",
        ];
        if !object_keys_within(result.get(), TOOL_RESULT_KEYS) {
            return None;
        }
        let result: CallToolResult = serde_json::from_str(result.get()).ok()?;
        Some(ServerResult::CallToolResult(result))
    }
}

/// True when `json` is an object whose keys are all in `allowed`.
fn object_keys_within(json: &str, allowed: &[&str]) -> bool {
    struct Keys<'s>(&'s [&'s str]);
    impl<'de> Visitor<'de> for Keys<'_> {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut within = true;
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                within &= self.0.contains(&key.as_ref());
                map.next_value::<IgnoredAny>()?;
            }
            Ok(within)
        }
    }
    let mut de = serde_json::Deserializer::from_str(json);
    serde::Deserializer::deserialize_map(&mut de, Keys(allowed)).unwrap_or(false)
}

/// The envelope of a message: which members it has, their values unparsed.
#[derive(Default)]
struct Envelope<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Envelope<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON-RPC message")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'a>, A::Error> {
                use serde::de::Error;
                let mut env = Envelope::default();
                // A key with escapes does not borrow: that message takes the slow path.
                while let Some(key) = map.next_key::<&'de str>()? {
                    let slot = match key {
                        "jsonrpc" => &mut env.jsonrpc,
                        "id" => &mut env.id,
                        "method" => &mut env.method,
                        "result" => &mut env.result,
                        "error" => {
                            if std::mem::replace(&mut env.error, true) {
                                return Err(A::Error::custom("duplicate error"));
                            }
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if slot.replace(map.next_value()?).is_some() {
                        return Err(A::Error::custom("duplicate member"));
                    }
                }
                Ok(env)
            }
        }
        de.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A JSON string without escapes, as a `&str`.
fn plain_str(raw: &RawValue) -> Option<&str> {
    let inner = raw.get().strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

fn fast<R: FastDecode>(line: &[u8]) -> Option<RxJsonRpcMessage<R>> {
    let env: Envelope = serde_json::from_slice(line).ok()?;
    if env.jsonrpc?.get() != "\"2.0\"" {
        return None;
    }
    let id = |raw: &RawValue| serde_json::from_str::<RequestId>(raw.get()).ok();
    // The same shapes as rmcp's classification of members present.
    match (env.method, env.id, env.result, env.error) {
        (Some(method), Some(raw_id), None, false) => {
            let request = R::request(plain_str(method)?, line)?;
            Some(JsonRpcMessage::Request(JsonRpcRequest {
                jsonrpc: JsonRpcVersion2_0,
                id: id(raw_id)?,
                request,
            }))
        }
        (Some(method), None, None, false) => {
            let notification = R::notification(plain_str(method)?, line)?;
            Some(JsonRpcMessage::Notification(JsonRpcNotification {
                jsonrpc: JsonRpcVersion2_0,
                notification,
            }))
        }
        (None, Some(raw_id), Some(result), false) => {
            let result = R::result(result)?;
            Some(JsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: JsonRpcVersion2_0,
                id: id(raw_id)?,
                result,
            }))
        }
        (None, _, None, true) => typed::<JsonRpcError>(line).map(JsonRpcMessage::Error),
        _ => None,
    }
}

/// rmcp's own decoding and its handling of lines that are no message.
fn slow<R: ServiceRole>(line: &[u8]) -> Decoded<RxJsonRpcMessage<R>> {
    let error = match serde_json::from_slice::<RxJsonRpcMessage<R>>(line) {
        Ok(message) => return Decoded::Message(message),
        Err(error) => error,
    };
    if std::str::from_utf8(line).is_ok()
        && let Ok(value) = serde_json::from_slice::<serde_json::Value>(line)
        && let Some(method) = value.get("method").and_then(serde_json::Value::as_str)
        && ignored_notification(value.get("id").is_none(), method)
    {
        tracing::trace!(method, "ignoring a notification outside MCP");
        return Decoded::Skip;
    }
    match error.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            tracing::debug!("ignoring a line that is not JSON: {error}");
            Decoded::Skip
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            tracing::debug!("invalid JSON-RPC message: {error}");
            Decoded::Invalid
        }
    }
}

/// MCP's notifications.
const MCP_NOTIFICATIONS: &[&str] = &[
    "notifications/cancelled",
    "notifications/initialized",
    "notifications/message",
    "notifications/progress",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/subscriptions/acknowledged",
    "notifications/tools/list_changed",
];

/// MCP's request methods.
const MCP_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "completion/complete",
    "elicitation/create",
    "logging/setLevel",
    "roots/list",
    "sampling/createMessage",
];

/// rmcp's rule for undecodable messages that are still let pass: a
/// notification (no `id`) of a method outside MCP (an LSP message, say),
/// or any `notifications/…` method MCP does not define.
fn ignored_notification(is_notification: bool, method: &str) -> bool {
    let standard_notification = MCP_NOTIFICATIONS.contains(&method);
    let standard = standard_notification || MCP_REQUESTS.contains(&method);
    (is_notification && !standard)
        || (method.starts_with("notifications/") && !standard_notification)
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
