//! The fixture tools and the elicitation forms they send.

use std::sync::{Arc, LazyLock};

use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

fn empty_schema() -> Arc<JsonObject> {
    object(json!({"type": "object", "properties": {}}))
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn string_arg(name: &str, description: &str) -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    }))
}

/// The fixture tools, in the order `tools/list` gives them.
pub(crate) fn tools() -> &'static [Tool] {
    static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
        let plain = |name: &'static str, description: &'static str| {
            Tool::new(name, description, empty_schema())
        };
        vec![
            plain("test_simple_text", "Returns one text block"),
            plain("test_image_content", "Returns a PNG image"),
            plain("test_audio_content", "Returns a WAV sound"),
            plain(
                "test_embedded_resource",
                "Returns an embedded text resource",
            ),
            plain(
                "test_multiple_content_types",
                "Returns text, an image and an embedded resource",
            ),
            plain(
                "test_tool_with_logging",
                "Sends three info log messages while it runs",
            ),
            plain(
                "test_logging_tool",
                "Sends three info log messages while it runs (the draft suite's name)",
            ),
            plain(
                "test_tool_with_progress",
                "Reports progress 0, 50 and 100 of 100 while it runs",
            ),
            plain("test_error_handling", "Always returns a tool error"),
            Tool::new(
                "test_sampling",
                "Asks the client to sample `prompt` and returns the answer",
                string_arg("prompt", "What to ask the model"),
            ),
            Tool::new(
                "test_elicitation",
                "Asks the user (elicitation) for a username and an email",
                string_arg("message", "What to tell the user"),
            ),
            plain(
                "test_elicitation_sep1034_defaults",
                "Asks the user with a form whose fields all have defaults (SEP-1034)",
            ),
            plain(
                "test_elicitation_sep1330_enums",
                "Asks the user with the five kinds of enum fields (SEP-1330)",
            ),
            Tool::new(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                object(json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {
                        "address": {
                            "$anchor": "addressDef",
                            "type": "object",
                            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                        },
                    },
                    "properties": {
                        "name": {"type": "string"},
                        "address": {"$ref": "#/$defs/address"},
                        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                        "phone": {"type": "string"},
                        "email": {"type": "string"},
                    },
                    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                    "if": {
                        "properties": {"contactMethod": {"const": "phone"}},
                        "required": ["contactMethod"],
                    },
                    "then": {"required": ["phone"]},
                    "else": {"required": ["email"]},
                    "additionalProperties": false,
                })),
            ),
            Tool::new(
                "test_custom_headers",
                "Echoes its region, which a 2026-07-28 client also sends as the Mcp-Param-Region header (SEP-2243)",
                object(json!({
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "query": {"type": "string"},
                    },
                    "required": ["region"],
                })),
            ),
            plain(
                "test_missing_capability",
                "Asks the client to sample \"What is 2+2?\" (a 2026-07-28 request must declare sampling)",
            ),
            plain(
                "test_streaming_elicitation",
                "Asks the user for a username and an email (a 2026-07-28 request must declare elicitation)",
            ),
            plain(
                "test_reconnection",
                "Answers after a short pause (SSE reconnection tests)",
            ),
            plain(
                "update_watched_resource",
                "Changes test://watched-resource and sends notifications/resources/updated to its subscribers",
            ),
        ]
    });
    &TOOLS
}

/// Whether `name` is a fixture tool.
pub(crate) fn is_tool(name: &str) -> bool {
    tools().iter().any(|t| t.name == name)
}

/// The form of `test_elicitation`.
pub(super) fn username_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    })
}

/// The form of `test_elicitation_sep1034_defaults`: every field has a default.
pub(super) fn defaults_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Name", "default": "John Doe"},
            "age": {"type": "integer", "description": "Age", "default": 30},
            "score": {"type": "number", "description": "Score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "Status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verified", "default": true},
        },
    })
}

/// The form of `test_elicitation_sep1330_enums`: the five kinds of enum.
pub(super) fn enums_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ],
                },
            },
        },
    })
}
