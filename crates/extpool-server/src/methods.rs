//! The requests MCP defines that a client sends, each with the shape of
//! its params (rmcp's types): a request of one of these methods whose
//! params do not have that shape is an invalid-params error (`-32602`),
//! not an unknown method — rmcp, failing to read it as its type, would
//! take it for a method of nobody's and answer `-32601`.

#[allow(deprecated)] // logging and resources/subscribe are the session era's
use rmcp::model::{
    CallToolRequest, CancelTaskRequest, CompleteRequest, DiscoverRequest, GetPromptRequest,
    GetSkillRequest, GetTaskRequest, InitializeRequest, ListPromptsRequest,
    ListResourceTemplatesRequest, ListResourcesRequest, ListSkillsRequest, ListToolsRequest,
    ReadResourceDirectoryRequest, ReadResourceRequest, SetLevelRequest, SubscribeRequest,
    UnsubscribeRequest, UpdateTaskRequest,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The protocol era a request belongs to, by the MCP version it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// Through 2025-11-25: `initialize`, then requests in a session.
    Session,
    /// 2026-07-28 and later: each request stands alone (SEP-2575), with
    /// the SEP-2243 headers.
    Stateless,
}

impl Era {
    /// The era of a request that says MCP `version` in its
    /// `MCP-Protocol-Version` header (none: the session era's).
    pub(crate) fn of(version: Option<&str>) -> Self {
        match version {
            Some(v) if v >= rmcp::model::ProtocolVersion::STANDARD_HEADERS.as_str() => {
                Self::Stateless
            }
            _ => Self::Session,
        }
    }
}

/// Whether `method` is one the 2026-07-28 era removed (SEP-2575): the
/// session's own requests. In that era a request of one of them is of a
/// method nobody has (`-32601`, HTTP 404), whatever its params.
pub(crate) fn removed_from_stateless(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
    )
}

/// How a request's params compare with the shape MCP defines for its method.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// The method is one MCP defines for clients, its params of its shape.
    Right,
    /// The method is one MCP defines, its params not of its shape: why.
    Wrong(String),
    /// Not a method MCP defines for clients (its handler decides).
    NotDefined,
}

/// `request` read as a `T`.
fn shape<T: DeserializeOwned>(request: &Value) -> Shape {
    match T::deserialize(request) {
        Ok(_) => Shape::Right,
        Err(e) => Shape::Wrong(e.to_string()),
    }
}

/// Why the params of `request` (a whole JSON-RPC request of `method`) are
/// not those MCP defines for it; `None` when they are, or when `method` is
/// not one MCP defines for clients (its handler decides).
#[cfg(test)]
pub(crate) fn params_error(method: &str, request: &Value) -> Option<String> {
    match params_shape(method, request, Era::Session) {
        Shape::Wrong(why) => Some(why),
        Shape::Right | Shape::NotDefined => None,
    }
}

/// Whether the params of `request` (a whole JSON-RPC request of `method`
/// in `era`) are those MCP defines for it.
pub(crate) fn params_shape(method: &str, request: &Value, era: Era) -> Shape {
    if era == Era::Stateless && removed_from_stateless(method) {
        return Shape::NotDefined;
    }
    #[allow(deprecated)] // logging and resources/subscribe are the session era's
    match method {
        "initialize" => shape::<InitializeRequest>(request),
        "server/discover" => shape::<DiscoverRequest>(request),
        "completion/complete" => shape::<CompleteRequest>(request),
        "logging/setLevel" => shape::<SetLevelRequest>(request),
        "prompts/get" => shape::<GetPromptRequest>(request),
        "prompts/list" => shape::<ListPromptsRequest>(request),
        "resources/list" => shape::<ListResourcesRequest>(request),
        "resources/templates/list" => shape::<ListResourceTemplatesRequest>(request),
        "resources/read" => shape::<ReadResourceRequest>(request),
        "resources/subscribe" => shape::<SubscribeRequest>(request),
        "resources/unsubscribe" => shape::<UnsubscribeRequest>(request),
        "resources/directory/read" => shape::<ReadResourceDirectoryRequest>(request),
        "tools/call" => shape::<CallToolRequest>(request),
        "tools/list" => shape::<ListToolsRequest>(request),
        "tasks/get" => shape::<GetTaskRequest>(request),
        "tasks/update" => shape::<UpdateTaskRequest>(request),
        "tasks/cancel" => shape::<CancelTaskRequest>(request),
        "skills/list" => shape::<ListSkillsRequest>(request),
        "skills/get" => shape::<GetSkillRequest>(request),
        _ => Shape::NotDefined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn well_shaped_requests_pass_and_others_say_what_is_wrong() {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hi"}, "_meta": {"progressToken": 1}}});
        assert_eq!(params_error("tools/call", &call), None);
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert_eq!(params_error("tools/list", &list), None);
        let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}});
        let why = params_error("tools/call", &bad).expect("a number is no name");
        assert!(why.contains("invalid type"), "{why}");
        let missing = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}});
        assert!(
            params_error("tools/call", &missing)
                .expect("no name")
                .contains("name")
        );
        let custom = json!({"jsonrpc": "2.0", "id": 1, "method": "vendor/x", "params": 7});
        assert_eq!(params_error("vendor/x", &custom), None);
    }

    #[test]
    fn the_methods_the_2026_era_removed_are_nobodys_in_it_whatever_their_params() {
        assert_eq!(Era::of(None), Era::Session);
        assert_eq!(Era::of(Some("2025-11-25")), Era::Session);
        assert_eq!(Era::of(Some("2026-07-28")), Era::Stateless);
        for method in ["initialize", "logging/setLevel", "resources/subscribe"] {
            let bare = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}});
            assert!(
                matches!(params_shape(method, &bare, Era::Session), Shape::Wrong(_)),
                "{method}"
            );
            assert_eq!(
                params_shape(method, &bare, Era::Stateless),
                Shape::NotDefined,
                "{method}"
            );
        }
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}});
        assert!(matches!(
            params_shape("tools/call", &call, Era::Stateless),
            Shape::Wrong(_)
        ));
    }
}
