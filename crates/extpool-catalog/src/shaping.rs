//! Result shaping: what a tool result looks like when it enters context.
//!
//! - Typed parts are kept (images, audio, embedded resources, links).
//! - Oversized plain text is truncated, with a visible marker saying how
//!   many bytes were cut.
//! - An oversized *structured* result is an error, never truncated JSON: a
//!   result is structured when the tool declares an `outputSchema`, returns
//!   `structuredContent`, or returns a JSON content block. The error tells
//!   the caller to paginate, filter, or use `CallMcpWithQuery`.
//! - A remote tool error becomes plain text under the same bounded
//!   truncation.

use extpool_core::{ContentPart, ResourceBody, ToolResult};
use serde::{Deserialize, Serialize};

/// Size limits of results that enter context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ResultLimits {
    /// Most bytes of plain text kept (across all text parts); the rest is cut.
    pub max_text_bytes: usize,
    /// Largest structured result returned; above it the call is an error.
    pub max_structured_bytes: usize,
    /// Largest binary part (image, audio, embedded blob, as sent); a larger
    /// one is replaced by a text marker saying what was omitted.
    pub max_binary_bytes: usize,
}

impl Default for ResultLimits {
    /// 100 000 bytes each, about Claude Code's 25 000-token default for MCP output.
    fn default() -> Self {
        Self {
            max_text_bytes: 100_000,
            max_structured_bytes: 100_000,
            max_binary_bytes: 5 << 20,
        }
    }
}

/// A structured result larger than the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the result of {tool} is structured JSON of {bytes} bytes, more than the limit of {limit} bytes; \
     it is not truncated because truncated JSON is invalid. Use the tool's pagination or filtering \
     arguments, or call it through CallMcpWithQuery with a jq_filter that selects the fields you need"
)]
pub struct StructuredTooLarge {
    /// Catalog name of the tool.
    pub tool: String,
    /// Size of the structured result in bytes.
    pub bytes: usize,
    /// The configured limit.
    pub limit: usize,
}

/// The marker appended to truncated text.
pub fn truncation_marker(cut: usize, total: usize) -> String {
    format!("\n\n[truncated: {cut} of {total} bytes omitted]")
}

/// Cuts `text` to at most `keep` bytes on a character boundary.
fn cut_at(text: &str, keep: usize) -> &str {
    if text.len() <= keep {
        return text;
    }
    let mut end = keep;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Truncates one string to `limit` bytes plus a marker; returns it unchanged when it fits.
pub fn truncate_text(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let kept = cut_at(text, limit);
    let mut out = String::with_capacity(kept.len() + 48);
    out.push_str(kept);
    out.push_str(&truncation_marker(text.len() - kept.len(), text.len()));
    out
}

/// True when a text block is a JSON document (object or array).
fn is_json_block(text: &str) -> bool {
    let t = text.trim_start();
    (t.starts_with('{') || t.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// True when the result counts as structured (see the module docs).
pub fn is_structured(result: &ToolResult, declares_output_schema: bool) -> bool {
    declares_output_schema
        || result.structured.is_some()
        || result.parts.iter().any(|p| match p {
            ContentPart::Text { text } => is_json_block(text),
            ContentPart::Resource { resource } => {
                resource.mime_type.as_deref() == Some("application/json")
            }
            _ => false,
        })
}

/// Bytes a structured result puts into context: its JSON plus its text.
fn structured_size(result: &ToolResult) -> usize {
    let json = result
        .structured
        .as_ref()
        .and_then(|v| serde_json::to_vec(v).ok())
        .map_or(0, |v| v.len());
    let parts: usize = result
        .parts
        .iter()
        .map(|p| match p {
            ContentPart::Text { text } => text.len(),
            ContentPart::Resource { resource } => match &resource.body {
                ResourceBody::Text(t) => t.len(),
                ResourceBody::Blob(_) => 0,
            },
            _ => 0,
        })
        .sum();
    json.max(parts)
}

/// Shapes a successful or failed result of tool `tool` for context.
pub fn shape(
    tool: &str,
    result: ToolResult,
    declares_output_schema: bool,
    limits: &ResultLimits,
) -> Result<ToolResult, StructuredTooLarge> {
    if result.is_error {
        return Ok(shape_error(result, limits));
    }
    let result = limit_binary(result, limits.max_binary_bytes);
    if is_structured(&result, declares_output_schema) {
        let bytes = structured_size(&result);
        if bytes > limits.max_structured_bytes {
            return Err(StructuredTooLarge {
                tool: tool.to_owned(),
                bytes,
                limit: limits.max_structured_bytes,
            });
        }
        return Ok(result);
    }
    Ok(truncate_parts(result, limits.max_text_bytes))
}

/// Replaces binary parts larger than `max` bytes with a text marker.
pub fn limit_binary(mut result: ToolResult, max: usize) -> ToolResult {
    for part in &mut result.parts {
        let (kind, bytes) = match part {
            ContentPart::Image { data, .. } => ("image", data.len()),
            ContentPart::Audio { data, .. } => ("audio", data.len()),
            ContentPart::Resource { resource } => match &resource.body {
                ResourceBody::Blob(b) => ("embedded resource", b.len()),
                ResourceBody::Text(_) => continue,
            },
            _ => continue,
        };
        if bytes > max {
            result.as_sent = None;
            *part = ContentPart::Text {
                text: format!(
                    "[{kind} of {bytes} bytes omitted: more than the limit of {max} bytes]"
                ),
            };
        }
    }
    result
}

/// A remote tool error as plain text, bounded like any text.
pub fn shape_error(result: ToolResult, limits: &ResultLimits) -> ToolResult {
    let mut text = result.joined_text();
    if text.is_empty()
        && let Some(v) = &result.structured
    {
        text = v.to_string();
    }
    ToolResult::error(truncate_text(&text, limits.max_text_bytes))
}

/// Truncates the text parts so that together they fit in `budget` bytes.
/// The first part that does not fit is cut and marked; later text parts are
/// dropped (and counted in the marker). Other parts are kept in place.
pub fn truncate_parts(mut result: ToolResult, budget: usize) -> ToolResult {
    let total: usize = result
        .parts
        .iter()
        .map(|p| match p {
            ContentPart::Text { text } => text.len(),
            _ => 0,
        })
        .sum();
    if total <= budget {
        return result;
    }
    result.as_sent = None;
    let mut left = budget;
    let mut marked = false;
    let mut parts = Vec::with_capacity(result.parts.len());
    for part in result.parts.drain(..) {
        match part {
            ContentPart::Text { text } if !marked => {
                if text.len() <= left {
                    left -= text.len();
                    parts.push(ContentPart::Text { text });
                } else {
                    let kept = cut_at(&text, left);
                    let mut out = String::with_capacity(kept.len() + 48);
                    out.push_str(kept);
                    let kept_total = budget - left + kept.len();
                    out.push_str(&truncation_marker(total - kept_total, total));
                    parts.push(ContentPart::Text { text: out });
                    marked = true;
                }
            }
            ContentPart::Text { .. } => {}
            other => parts.push(other),
        }
    }
    result.parts = parts;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use extpool_core::ResourceContent;
    use serde_json::json;

    fn limits(text: usize, structured: usize) -> ResultLimits {
        ResultLimits {
            max_text_bytes: text,
            max_structured_bytes: structured,
            ..ResultLimits::default()
        }
    }

    /// A result as its source sent it, of no type in particular.
    fn kept(parts: Vec<ContentPart>) -> ToolResult {
        ToolResult {
            parts,
            structured: None,
            is_error: false,
            as_sent: Some(extpool_core::AsSent::new("as sent")),
        }
    }

    #[test]
    fn what_shaping_changes_is_no_longer_passed_on_as_sent() {
        let text = |t: &str| ContentPart::Text { text: t.into() };
        let image = |n: usize| ContentPart::Image {
            data: "A".repeat(n),
            mime_type: "image/png".into(),
        };
        let fits = shape(
            "t",
            kept(vec![text("hi"), image(4)]),
            false,
            &limits(10, 10),
        )
        .unwrap();
        assert!(fits.as_sent.is_some());
        let cut = shape(
            "t",
            kept(vec![text(&"x".repeat(20))]),
            false,
            &limits(10, 10),
        )
        .unwrap();
        assert!(cut.as_sent.is_none());
        let mut small = limits(100, 100);
        small.max_binary_bytes = 2;
        let omitted = shape("t", kept(vec![image(4)]), false, &small).unwrap();
        assert!(omitted.as_sent.is_none());
        let mut error = kept(vec![text("no")]);
        error.is_error = true;
        assert!(shape("t", error, false, &small).unwrap().as_sent.is_none());
    }

    #[test]
    fn oversized_binary_parts_become_a_marker() {
        let r = ToolResult {
            parts: vec![
                ContentPart::Image {
                    data: "A".repeat(100),
                    mime_type: "image/png".into(),
                },
                ContentPart::Audio {
                    data: "B".repeat(10),
                    mime_type: "audio/wav".into(),
                },
            ],
            structured: None,
            is_error: false,
            as_sent: None,
        };
        let l = ResultLimits {
            max_binary_bytes: 50,
            ..ResultLimits::default()
        };
        let shaped = shape("t", r, false, &l).unwrap();
        assert_eq!(
            shaped.parts[0],
            ContentPart::Text {
                text: "[image of 100 bytes omitted: more than the limit of 50 bytes]".into()
            }
        );
        assert!(matches!(shaped.parts[1], ContentPart::Audio { .. }));
    }

    #[test]
    fn small_text_is_untouched() {
        let r = ToolResult::text("hello");
        assert_eq!(shape("t", r.clone(), false, &limits(10, 10)).unwrap(), r);
    }

    #[test]
    fn oversized_text_is_truncated_with_a_marker() {
        let r = ToolResult::text("a".repeat(1000));
        let shaped = shape("t", r, false, &limits(100, 10)).unwrap();
        let text = shaped.joined_text();
        assert!(text.starts_with(&"a".repeat(100)));
        assert!(
            text.ends_with("[truncated: 900 of 1000 bytes omitted]"),
            "{text}"
        );
        assert!(!shaped.is_error);
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        let r = ToolResult::text("é".repeat(100)); // 200 bytes
        let shaped = shape("t", r, false, &limits(51, 10)).unwrap();
        let text = shaped.joined_text();
        assert!(text.starts_with(&"é".repeat(25)));
        assert!(
            text.contains("[truncated: 150 of 200 bytes omitted]"),
            "{text}"
        );
    }

    #[test]
    fn truncation_spans_parts_and_keeps_typed_parts() {
        let r = ToolResult {
            parts: vec![
                ContentPart::Text {
                    text: "x".repeat(60),
                },
                ContentPart::Image {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                },
                ContentPart::Text {
                    text: "y".repeat(60),
                },
                ContentPart::Text {
                    text: "z".repeat(30),
                },
            ],
            structured: None,
            is_error: false,
            as_sent: None,
        };
        let shaped = shape("t", r, false, &limits(100, 10)).unwrap();
        assert_eq!(shaped.parts.len(), 3, "{shaped:?}");
        assert!(matches!(shaped.parts[1], ContentPart::Image { .. }));
        let ContentPart::Text { text } = &shaped.parts[2] else {
            panic!("{shaped:?}")
        };
        assert!(text.starts_with(&"y".repeat(40)));
        assert!(
            text.ends_with("[truncated: 50 of 150 bytes omitted]"),
            "{text}"
        );
    }

    #[test]
    fn oversized_structured_results_are_errors() {
        let big = json!({"items": vec!["0123456789"; 50]});
        // structuredContent
        let r = ToolResult {
            parts: vec![ContentPart::Text {
                text: big.to_string(),
            }],
            structured: Some(big.clone()),
            is_error: false,
            as_sent: None,
        };
        let err = shape("mcp__s__list", r, false, &limits(10_000, 100)).unwrap_err();
        assert_eq!(err.tool, "mcp__s__list");
        assert!(err.bytes > 100);
        let msg = err.to_string();
        assert!(
            msg.contains("CallMcpWithQuery") && msg.contains("paginat"),
            "{msg}"
        );

        // a JSON block without structuredContent
        let r = ToolResult::text(big.to_string());
        assert!(shape("t", r, false, &limits(10_000, 100)).is_err());

        // a declared outputSchema makes even plain text structured
        let r = ToolResult::text("z".repeat(500));
        assert!(shape("t", r.clone(), true, &limits(10_000, 100)).is_err());
        assert!(shape("t", r, false, &limits(10_000, 100)).is_ok());

        // an embedded JSON resource
        let r = ToolResult {
            parts: vec![ContentPart::Resource {
                resource: ResourceContent::text(
                    "file:///x.json",
                    Some("application/json".into()),
                    "1".repeat(500),
                ),
            }],
            structured: None,
            is_error: false,
            as_sent: None,
        };
        assert!(shape("t", r, false, &limits(10_000, 100)).is_err());
    }

    #[test]
    fn small_structured_results_pass_whole() {
        let r = ToolResult {
            parts: vec![ContentPart::Text {
                text: "{\"a\":1}".into(),
            }],
            structured: Some(json!({"a": 1})),
            is_error: false,
            as_sent: None,
        };
        assert_eq!(shape("t", r.clone(), true, &limits(3, 100)).unwrap(), r);
    }

    #[test]
    fn text_that_only_looks_like_json_is_plain() {
        assert!(!is_json_block("[not json"));
        assert!(!is_json_block("42"));
        assert!(is_json_block(" [1, 2]"));
    }

    #[test]
    fn remote_errors_are_bounded_plain_text() {
        let r = ToolResult {
            parts: vec![ContentPart::Text {
                text: "e".repeat(500),
            }],
            structured: Some(json!({"big": "x".repeat(500)})),
            is_error: true,
            as_sent: None,
        };
        // Not the structured error, even with an output schema: plain text, truncated.
        let shaped = shape("t", r, true, &limits(100, 10)).unwrap();
        assert!(shaped.is_error);
        assert!(shaped.structured.is_none());
        assert!(
            shaped
                .joined_text()
                .contains("[truncated: 400 of 500 bytes omitted]")
        );
    }
}
