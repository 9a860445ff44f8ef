//! rmcp's wire types → extpool-core's entry types, losing nothing a caller
//! may need: every content kind of a tool result keeps its own part (text,
//! image, audio, embedded resource, resource link) and `structuredContent`
//! stays JSON. A content kind added by a later protocol version is kept as
//! its JSON text rather than dropped.

use base64::Engine as _;
use extpool_core::{
    AsSent, CommandArgument, CommandEntry, ContentPart, ResourceBody, ResourceContent,
    ResourceEntry, ResourceTemplateEntry, ToolEntry, ToolResult,
};
use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, Icon, JsonObject, MetaObject, Prompt, Resource,
    ResourceContents, ResourceTemplate, Tool,
};
use std::sync::Arc;

use serde_json::Value;

/// A resource body that is not valid base64.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resource {uri}: blob is not valid base64")]
pub struct InvalidBlob {
    /// The resource URI.
    pub uri: String,
}

/// Icons of a tool, resource, template or prompt as JSON, kept whole.
fn icons(icons: Option<&[Icon]>) -> Option<Value> {
    icons.and_then(|i| serde_json::to_value(i).ok())
}

/// A tool as listed by `tools/list`, its schemas moved, not copied: a
/// parsed schema takes several times its text, and a server may list tens
/// of thousands of tools, so holding a second copy while converting would
/// double the listing's peak.
pub fn tool_entry(tool: Tool) -> ToolEntry {
    let title = tool
        .title
        .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
    ToolEntry {
        name: tool.name.into_owned(),
        title,
        description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
        input_schema: Arc::new(Value::Object(Arc::unwrap_or_clone(tool.input_schema))),
        output_schema: tool
            .output_schema
            .map(|s| Arc::new(Value::Object(Arc::unwrap_or_clone(s)))),
        annotations: tool
            .annotations
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok()),
        icons: icons(tool.icons.as_deref()),
        meta: tool.meta.map(|m| Value::Object(m.0)),
    }
}

/// A `_meta` object as JSON, kept whole.
fn meta(meta: Option<&MetaObject>) -> Option<Value> {
    meta.map(|m| Value::Object(m.0.clone()))
}

/// A resource's contents (text or decoded bytes), its `_meta` kept.
pub fn resource_content(contents: ResourceContents) -> Result<ResourceContent, InvalidBlob> {
    match contents {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            meta: m,
        } => Ok(ResourceContent {
            uri,
            mime_type,
            body: ResourceBody::Text(text),
            meta: meta(m.as_ref()),
        }),
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            meta: m,
        } => match base64::engine::general_purpose::STANDARD.decode(blob.as_bytes()) {
            Ok(bytes) => Ok(ResourceContent {
                uri,
                mime_type,
                body: ResourceBody::Blob(bytes),
                meta: meta(m.as_ref()),
            }),
            Err(_) => Err(InvalidBlob { uri }),
        },
        other => Ok(ResourceContent {
            uri: String::new(),
            mime_type: None,
            body: ResourceBody::Text(serde_json::to_string(&other).unwrap_or_default()),
            meta: None,
        }),
    }
}

/// One content block of a tool result or prompt message.
pub fn content_part(block: ContentBlock) -> ContentPart {
    read_block(block).0
}

/// One content block, and whether it reads as it is: false when it
/// became a text notice (an embedded blob with invalid base64, a kind of
/// block the parts do not have).
fn read_block(block: ContentBlock) -> (ContentPart, bool) {
    let part = match block {
        ContentBlock::Text(t) => ContentPart::Text { text: t.text },
        ContentBlock::Image(i) => ContentPart::Image {
            data: i.data,
            mime_type: i.mime_type,
        },
        ContentBlock::Audio(a) => ContentPart::Audio {
            data: a.data,
            mime_type: a.mime_type,
        },
        ContentBlock::Resource(r) => {
            // A kind of contents the parts do not have is written out as text.
            let known = matches!(
                r.resource,
                ResourceContents::TextResourceContents { .. }
                    | ResourceContents::BlobResourceContents { .. }
            );
            match resource_content(r.resource) {
                Ok(resource) => return (ContentPart::Resource { resource }, known),
                Err(e) => {
                    tracing::warn!(uri = %e.uri, "embedded resource with invalid base64 kept as text notice");
                    let notice = ContentPart::Text {
                        text: e.to_string(),
                    };
                    return (notice, false);
                }
            }
        }
        ContentBlock::ResourceLink(link) => ContentPart::ResourceLink {
            uri: link.uri,
            name: link.name,
            description: link.description,
            mime_type: link.mime_type,
        },
        other => {
            let notice = ContentPart::Text {
                text: serde_json::to_string(&other).unwrap_or_default(),
            };
            return (notice, false);
        }
    };
    (part, true)
}

/// A `tools/call` result, its parts read from a copy of its content: the
/// result itself is kept as sent ([`ToolResult::as_sent`], for
/// [`wire::into_call_tool_result`]) when every block reads as it is, that
/// is, none is of a kind the parts do not have and no embedded blob has
/// invalid base64 (those become text notices, so the parts say more).
pub fn tool_result(result: CallToolResult) -> ToolResult {
    let mut faithful = true;
    let parts = (result.content.iter().cloned())
        .map(|block| {
            let (part, as_it_is) = read_block(block);
            faithful &= as_it_is;
            part
        })
        .collect();
    ToolResult {
        parts,
        structured: result.structured_content.clone(),
        is_error: result.is_error.unwrap_or(false),
        as_sent: faithful.then(|| AsSent::new(result)),
    }
}

/// A resource as listed by `resources/list`.
pub fn resource_entry(resource: &Resource) -> ResourceEntry {
    ResourceEntry {
        uri: resource.uri.clone(),
        name: resource.name.clone(),
        description: resource.description.clone().unwrap_or_default(),
        mime_type: resource.mime_type.clone(),
        icons: icons(resource.icons.as_deref()),
        meta: meta(resource.meta.as_ref()),
    }
}

/// A resource template as listed by `resources/templates/list`.
pub fn template_entry(template: &ResourceTemplate) -> ResourceTemplateEntry {
    ResourceTemplateEntry {
        uri_template: template.uri_template.clone(),
        name: template.name.clone(),
        description: template.description.clone().unwrap_or_default(),
        mime_type: template.mime_type.clone(),
        icons: icons(template.icons.as_deref()),
    }
}

/// A prompt as a command.
pub fn command_entry(prompt: &Prompt) -> CommandEntry {
    CommandEntry {
        name: prompt.name.clone(),
        description: prompt
            .description
            .clone()
            .or_else(|| prompt.title.clone())
            .unwrap_or_default(),
        arguments: prompt
            .arguments
            .iter()
            .flatten()
            .map(|a| CommandArgument {
                name: a.name.clone(),
                description: a.description.clone(),
                required: a.required.unwrap_or(false),
            })
            .collect(),
        argument_hint: None,
        icons: icons(prompt.icons.as_deref()),
    }
}

/// A command line's arguments that do not fit the prompt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptArgsError {
    /// More positional values than declared arguments.
    #[error("too many arguments: the command takes {declared}")]
    TooMany {
        /// Declared argument count.
        declared: usize,
    },
    /// A required argument is missing.
    #[error("missing required argument {0:?}")]
    Missing(String),
}

/// Maps command-line words to prompt arguments: `key=value` by name, bare
/// words fill the declared arguments in order (the behaviour doc's
/// `/mcp__<server>__<prompt> key=value`).
pub fn prompt_arguments(
    command: &CommandEntry,
    words: &[String],
) -> Result<JsonObject, PromptArgsError> {
    let mut out = JsonObject::new();
    let mut positional = Vec::new();
    for word in words {
        match word.split_once('=') {
            Some((key, value))
                if !key.is_empty()
                    && (command.arguments.is_empty()
                        || command.arguments.iter().any(|a| a.name == key)) =>
            {
                out.insert(key.to_owned(), Value::String(value.to_owned()));
            }
            _ => positional.push(word),
        }
    }
    let named: Vec<&str> = command
        .arguments
        .iter()
        .filter(|a| !out.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    let mut free = named.into_iter();
    for word in positional {
        match free.next() {
            Some(arg) => {
                out.insert(arg.to_owned(), Value::String(word.clone()));
            }
            None => {
                return Err(PromptArgsError::TooMany {
                    declared: command.arguments.len(),
                });
            }
        }
    }
    if let Some(missing) = command
        .arguments
        .iter()
        .find(|a| a.required && !out.contains_key(&a.name))
    {
        return Err(PromptArgsError::Missing(missing.name.clone()));
    }
    Ok(out)
}

/// A rendered prompt as prompt text: each message's text, in order,
/// separated by blank lines (embedded text resources included; other media
/// noted by type).
pub fn prompt_text(result: &GetPromptResult) -> String {
    let mut out = String::new();
    for message in &result.messages {
        let piece = match &message.content {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                ResourceContents::BlobResourceContents { uri, .. } => format!("[resource {uri}]"),
                _ => String::new(),
            },
            ContentBlock::ResourceLink(l) => format!("[resource link {}]", l.uri),
            ContentBlock::Image(i) => format!("[image {}]", i.mime_type),
            ContentBlock::Audio(a) => format!("[audio {}]", a.mime_type),
            _ => String::new(),
        };
        if piece.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{PromptArgument, PromptMessage, Role};
    use serde_json::json;

    #[test]
    fn every_content_kind_is_kept() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "x://t", "mimeType": "text/plain", "text": "body"}},
                {"type": "resource", "resource": {"uri": "x://b", "blob": "AAEC"}},
                {"type": "resource_link", "uri": "x://l", "name": "l", "description": "d"}
            ],
            "structuredContent": {"k": 1},
            "isError": false
        }))
        .unwrap();
        let r = tool_result(result);
        assert_eq!(r.parts.len(), 6);
        assert!(matches!(&r.parts[0], ContentPart::Text { text } if text == "hi"));
        assert!(
            matches!(&r.parts[1], ContentPart::Image { mime_type, .. } if mime_type == "image/png")
        );
        assert!(matches!(&r.parts[2], ContentPart::Audio { .. }));
        assert!(
            matches!(&r.parts[3], ContentPart::Resource { resource } if resource.as_text() == Some("body"))
        );
        assert!(
            matches!(&r.parts[4], ContentPart::Resource { resource } if resource.body == ResourceBody::Blob(vec![0,1,2]))
        );
        assert!(
            matches!(&r.parts[5], ContentPart::ResourceLink { uri, description: Some(d), .. } if uri == "x://l" && d == "d")
        );
        assert_eq!(r.structured, Some(json!({"k": 1})));
        assert!(!r.is_error);
    }

    #[test]
    fn a_result_is_kept_as_sent_unless_a_block_became_a_notice() {
        let sent: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "t", "annotations": {"priority": 1.0}}],
            "_meta": {"k": 1}
        }))
        .unwrap();
        let r = tool_result(sent.clone());
        assert_eq!(r.joined_text(), "t");
        let back = wire::into_call_tool_result(r);
        assert_eq!(back.meta, sent.meta);
        assert_eq!(back.content, sent.content);
        // Said either way, as a result built from parts says it.
        assert_eq!(back.is_error, Some(false));
        assert_eq!(back.result_type, Some(rmcp::model::ResultType::COMPLETE));

        let bad: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "resource", "resource": {"uri": "x://b", "blob": "!!!"}}],
            "_meta": {"k": 1}
        }))
        .unwrap();
        let r = tool_result(bad);
        assert!(r.as_sent.is_none());
        assert!(r.joined_text().contains("x://b"), "{r:?}");
        assert_eq!(wire::into_call_tool_result(r).meta, None);
    }

    #[test]
    fn invalid_blob_is_reported() {
        let c = ResourceContents::blob("!!!", "x://b");
        assert_eq!(resource_content(c).unwrap_err().uri, "x://b");
    }

    #[test]
    fn tool_schemas_are_kept() {
        let tool: Tool = serde_json::from_value(json!({
            "name": "add", "description": "adds",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"title": "Add", "readOnlyHint": true}
        }))
        .unwrap();
        let e = tool_entry(tool);
        assert_eq!(e.name, "add");
        assert_eq!(e.title.as_deref(), Some("Add"));
        assert_eq!(e.input_schema["properties"]["a"]["type"], "number");
        assert!(e.output_schema.is_some());
        assert_eq!(e.annotations.unwrap()["readOnlyHint"], true);
    }

    fn greet() -> CommandEntry {
        command_entry(&Prompt::new(
            "greet",
            Some("Greets"),
            Some(vec![
                PromptArgument::new("name").with_required(true),
                PromptArgument::new("style"),
            ]),
        ))
    }

    #[test]
    fn prompt_arguments_by_name_and_position() {
        let c = greet();
        assert_eq!(c.arguments.len(), 2);
        let a = prompt_arguments(&c, &["Ada".into(), "style=loud".into()]).unwrap();
        assert_eq!(a["name"], "Ada");
        assert_eq!(a["style"], "loud");
        let a = prompt_arguments(&c, &["style=x".into(), "Bob".into()]).unwrap();
        assert_eq!(a["name"], "Bob");
        assert_eq!(
            prompt_arguments(&c, &["style=x".into()]).unwrap_err(),
            PromptArgsError::Missing("name".into())
        );
        assert!(matches!(
            prompt_arguments(&c, &["a".into(), "b".into(), "c".into()]),
            Err(PromptArgsError::TooMany { declared: 2 })
        ));
    }

    #[test]
    fn prompt_text_joins_messages() {
        let r = GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, "one"),
            PromptMessage::new_text(Role::Assistant, "two"),
        ]);
        assert_eq!(prompt_text(&r), "one\n\ntwo");
    }
}

/// The way back: extpool-core's entry types → rmcp's wire types, for
/// front ends that serve MCP (the gateway). Each is the inverse of the
/// function of the same subject above.
pub mod wire {
    use base64::Engine as _;
    use extpool_core::{ContentPart, ResourceBody, ResourceContent, ToolResult};
    use rmcp::model::{CallToolResult, ContentBlock, MetaObject, Resource, ResourceContents};

    /// A resource's contents (text as text, bytes as base64 `blob`), its
    /// `_meta` as its server sent it.
    pub fn resource_contents(content: &ResourceContent) -> ResourceContents {
        let meta = match &content.meta {
            Some(serde_json::Value::Object(m)) => Some(MetaObject(m.clone())),
            _ => None,
        };
        match &content.body {
            ResourceBody::Text(text) => ResourceContents::TextResourceContents {
                uri: content.uri.clone(),
                mime_type: content.mime_type.clone(),
                text: text.clone(),
                meta,
            },
            ResourceBody::Blob(bytes) => ResourceContents::BlobResourceContents {
                uri: content.uri.clone(),
                mime_type: content.mime_type.clone(),
                blob: base64::engine::general_purpose::STANDARD.encode(bytes),
                meta,
            },
        }
    }

    /// One content block.
    pub fn content_block(part: &ContentPart) -> ContentBlock {
        match part {
            ContentPart::Text { text } => ContentBlock::text(text.clone()),
            ContentPart::Image { data, mime_type } => {
                ContentBlock::image(data.clone(), mime_type.clone())
            }
            ContentPart::Audio { data, mime_type } => {
                ContentBlock::audio(data.clone(), mime_type.clone())
            }
            ContentPart::Resource { resource } => {
                ContentBlock::resource(resource_contents(resource))
            }
            ContentPart::ResourceLink {
                uri,
                name,
                description,
                mime_type,
            } => {
                let mut link = Resource::new(uri.clone(), name.clone());
                link.description = description.clone();
                link.mime_type = mime_type.clone();
                ContentBlock::resource_link(link)
            }
        }
    }

    /// A `tools/call` result to hand on: the result as its MCP server sent
    /// it while nothing changed it on the way ([`ToolResult::as_sent`]),
    /// else built from the parts. Either way it says `isError`, and
    /// `resultType` is the handler's to keep or drop for the client's era.
    pub fn into_call_tool_result(mut result: ToolResult) -> CallToolResult {
        let Some(mut sent) = result
            .as_sent
            .take()
            .and_then(extpool_core::AsSent::into_inner::<CallToolResult>)
        else {
            return call_tool_result(&result);
        };
        sent.is_error = Some(sent.is_error.unwrap_or(false));
        sent.result_type = Some(rmcp::model::ResultType::COMPLETE);
        sent
    }

    /// A `tools/call` result built from its parts.
    pub fn call_tool_result(result: &ToolResult) -> CallToolResult {
        let content = result.parts.iter().map(content_block).collect();
        let mut out = if result.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        out.structured_content = result.structured.clone();
        out
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_result_survives_the_round_trip() {
            let result = ToolResult {
                parts: vec![
                    ContentPart::Text { text: "t".into() },
                    ContentPart::Image {
                        data: "aGk=".into(),
                        mime_type: "image/png".into(),
                    },
                    ContentPart::Resource {
                        resource: ResourceContent {
                            uri: "x://b".into(),
                            mime_type: None,
                            body: ResourceBody::Blob(vec![0, 1, 2]),
                            meta: None,
                        },
                    },
                    ContentPart::ResourceLink {
                        uri: "x://l".into(),
                        name: "l".into(),
                        description: Some("d".into()),
                        mime_type: None,
                    },
                ],
                structured: Some(serde_json::json!({"a": 1})),
                is_error: true,
                as_sent: None,
            };
            assert_eq!(super::super::tool_result(call_tool_result(&result)), result);
        }
    }
}
