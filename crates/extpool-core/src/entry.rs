//! The entry types that cross the resource protocols (RFC "Data structures").
//!
//! They are plain data: cheap to clone (schemas sit behind `Arc`) and
//! serializable, because front ends print them and the catalog stores them.

use std::sync::Arc;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A skill as listed by a [`crate::SkillResource`] (metadata only, no body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// URI of the skill's SKILL.md, e.g. `skill://ponytail/SKILL.md`.
    pub uri: String,
    /// The skill name.
    pub name: String,
    /// What the skill does and when to use it.
    pub description: String,
    /// MIME type of the SKILL.md body.
    pub mime_type: String,
}

impl SkillEntry {
    /// A markdown skill entry.
    pub fn new(
        uri: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            description: description.into(),
            mime_type: "text/markdown".into(),
        }
    }
}

/// A resource as listed by a [`crate::McpResource`] (MCP `resources/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceEntry {
    /// The resource URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Its description (may be empty).
    pub description: String,
    /// Its MIME type, when the source said.
    pub mime_type: Option<String>,
    /// Icons (`src`, `mimeType`, `sizes`, `theme`) as the source sent them,
    /// passed on to clients unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// The resource's `_meta` as the source listed it (an MCP App view's
    /// `ui`: `csp`, `permissions`, `domain`, `prefersBorder`), passed on
    /// to clients unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// A resource template (RFC 6570 URI template) listed by a
/// [`crate::McpResource`] (MCP `resources/templates/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceTemplateEntry {
    /// The URI template, e.g. `file:///{path}`.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Its description (may be empty).
    pub description: String,
    /// The MIME type of what it names, when the source said.
    pub mime_type: Option<String>,
    /// Icons (`src`, `mimeType`, `sizes`, `theme`) as the source sent them,
    /// passed on to clients unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
}

/// A tool a capability contributes: name, description and JSON Schemas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolEntry {
    /// The tool's name as its source knows it (not namespaced).
    pub name: String,
    /// Human-readable title, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Arc<Value>,
    /// JSON Schema of `structuredContent`, when the tool declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<Value>>,
    /// Tool annotations (read-only hint, …) as the source sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Icons (`src`, `mimeType`, `sizes`, `theme`) as the source sent them,
    /// passed on to clients unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// The tool's `_meta` as the source sent it (MCP Apps' `ui`, with its
    /// `resourceUri` and `visibility`, among others), passed on to clients
    /// unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl ToolEntry {
    /// A tool with the given schema and no output schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: Arc::new(input_schema),
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }
}

/// The body of a resource: text or bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceBody {
    /// UTF-8 text.
    Text(String),
    /// Binary content; serialized as base64.
    Blob(#[serde(with = "b64")] Vec<u8>),
}

/// Content read from a skill or MCP resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceContent {
    /// The URI that was read.
    pub uri: String,
    /// MIME type, when known.
    pub mime_type: Option<String>,
    /// The content.
    pub body: ResourceBody,
    /// The content's `_meta` as the source sent it (an MCP App view's
    /// `ui`: `csp`, `permissions`, `domain`, `prefersBorder`), passed on
    /// to clients unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl ResourceContent {
    /// Text content.
    pub fn text(
        uri: impl Into<String>,
        mime_type: Option<String>,
        text: impl Into<String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type,
            body: ResourceBody::Text(text.into()),
            meta: None,
        }
    }

    /// The text, when the body is text.
    pub fn as_text(&self) -> Option<&str> {
        match &self.body {
            ResourceBody::Text(t) => Some(t),
            ResourceBody::Blob(_) => None,
        }
    }

    /// Size of the body in bytes.
    pub fn len(&self) -> usize {
        match &self.body {
            ResourceBody::Text(t) => t.len(),
            ResourceBody::Blob(b) => b.len(),
        }
    }

    /// True when the body is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One typed block of a tool result (MCP content blocks, kept as they came).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data as the server sent it.
        data: String,
        /// e.g. `image/png`.
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 data as the server sent it.
        data: String,
        /// e.g. `audio/wav`.
        mime_type: String,
    },
    /// A resource embedded in the result.
    Resource {
        /// The embedded content.
        resource: ResourceContent,
    },
    /// A link to a resource the caller may read later (never followed automatically).
    ResourceLink {
        /// The linked URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its description, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

/// The result of a tool call: typed parts, optional structured JSON, error flag.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ToolResult {
    /// Content blocks in the order the source returned them.
    pub parts: Vec<ContentPart>,
    /// `structuredContent`, when the tool returned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// True when the tool reported a failure (a tool error, not a protocol error).
    #[serde(default)]
    pub is_error: bool,
    /// The result as its source sent it, in the source's own type, while
    /// nothing on the way has changed it: whoever changes `parts`,
    /// `structured` or `is_error` sets this to `None`. A front end speaking
    /// the source's protocol passes it on whole, so what the fields above
    /// do not hold (content annotations, `_meta`, a link's title and
    /// icons) reaches its client, and the result is not built again.
    #[serde(skip)]
    pub as_sent: Option<AsSent>,
}

/// A tool result as its source sent it, opaque here (the core does not
/// know the source's protocol types): see [`ToolResult::as_sent`].
#[derive(Clone)]
pub struct AsSent(Arc<dyn std::any::Any + Send + Sync>);

impl AsSent {
    /// Keeps `result`, a source's own result type.
    pub fn new<T: std::any::Any + Send + Sync>(result: T) -> Self {
        Self(Arc::new(result))
    }

    /// The result, when it is a `T`: owned without a copy when nothing
    /// else holds it, else cloned.
    pub fn into_inner<T: std::any::Any + Send + Sync + Clone>(self) -> Option<T> {
        let kept = self.0.downcast::<T>().ok()?;
        Some(Arc::try_unwrap(kept).unwrap_or_else(|shared| T::clone(&shared)))
    }
}

impl std::fmt::Debug for AsSent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AsSent(..)")
    }
}

/// Results are equal by what they say: whether the source's own copy was
/// kept does not take part.
impl PartialEq for ToolResult {
    fn eq(&self, other: &Self) -> bool {
        self.parts == other.parts
            && self.structured == other.structured
            && self.is_error == other.is_error
    }
}

impl ToolResult {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            parts: vec![ContentPart::Text { text: text.into() }],
            structured: None,
            is_error: false,
            as_sent: None,
        }
    }

    /// A tool-error text result.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// All text parts joined with newlines.
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if let ContentPart::Text { text } = part {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// One argument a command accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandArgument {
    /// Argument name (`city`, or a positional name from a skill's `arguments`).
    pub name: String,
    /// What it means, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the command needs it.
    #[serde(default)]
    pub required: bool,
}

/// A user-triggered command: a skill's slash command or an MCP prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandEntry {
    /// Command name as typed after `/`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The arguments it takes.
    #[serde(default)]
    pub arguments: Vec<CommandArgument>,
    /// Display-only hint for the argument line, when the source gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// Icons (`src`, `mimeType`, `sizes`, `theme`) as the source sent them (an MCP prompt's),
    /// passed on to clients unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
}

impl CommandEntry {
    /// A command without declared arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            arguments: Vec::new(),
            argument_hint: None,
            icons: None,
        }
    }
}

mod b64 {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_round_trips_as_base64() {
        let c = ResourceContent {
            uri: "skill://x/a.png".into(),
            mime_type: Some("image/png".into()),
            body: ResourceBody::Blob(vec![0, 1, 2, 255]),
            meta: None,
        };
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["body"]["blob"], "AAEC/w==");
        let back: ResourceContent = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn content_parts_are_tagged() {
        let r = ToolResult {
            parts: vec![
                ContentPart::Text { text: "a".into() },
                ContentPart::ResourceLink {
                    uri: "https://x".into(),
                    name: "x".into(),
                    description: None,
                    mime_type: None,
                },
            ],
            structured: Some(serde_json::json!({"k": 1})),
            is_error: false,
            as_sent: None,
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["parts"][0]["type"], "text");
        assert_eq!(json["parts"][1]["type"], "resource_link");
        assert_eq!(r.joined_text(), "a");
    }
}
