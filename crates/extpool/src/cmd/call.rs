//! `extpool call TOOL [--args JSON] [key=value …]`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use extpool_host::ToolCall;
use extpool_host::core::{ContentPart, ResourceBody, ToolResult};
use serde_json::{Map, Value};

use super::{Need, open_host};
use crate::UsageError;
use crate::cli::CallArgs;
use crate::context::Ctx;
use crate::output::shown;

/// Builds the argument object from `--args` and `key=value` pairs.
pub fn parse_arguments(
    json: Option<&str>,
    pairs: &[String],
) -> Result<Map<String, Value>, UsageError> {
    let mut args = match json {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(UsageError(format!(
                    "--args must be a JSON object like '{{\"key\": \"value\"}}', not {}",
                    kind(&other)
                )));
            }
            Err(e) => {
                return Err(UsageError(format!(
                    "--args is not valid JSON (line {}, column {}): {e}",
                    e.line(),
                    e.column()
                )));
            }
        },
    };
    for pair in pairs {
        let Some((key, value)) = split_pair(pair) else {
            return Err(UsageError(format!(
                "argument {pair:?} is not key=value (use --args for JSON)"
            )));
        };
        if key.is_empty() {
            return Err(UsageError(format!("argument {pair:?} has an empty key")));
        }
        let value = serde_json::from_str::<Value>(value)
            .unwrap_or_else(|_| Value::String(value.to_owned()));
        args.insert(key.to_owned(), value);
    }
    Ok(args)
}

/// `key=value` as its key and its text.
fn split_pair(pair: &str) -> Option<(&str, &str)> {
    pair.split_once('=')
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A result as text for people: text parts as they are, other parts described.
pub fn render_result(result: &ToolResult) -> String {
    let mut out = Vec::new();
    for part in &result.parts {
        out.push(match part {
            ContentPart::Text { text } => text.clone(),
            ContentPart::Image { data, mime_type } => {
                format!("[image {mime_type}, {} bytes base64]", data.len())
            }
            ContentPart::Audio { data, mime_type } => {
                format!("[audio {mime_type}, {} bytes base64]", data.len())
            }
            ContentPart::Resource { resource } => match &resource.body {
                ResourceBody::Text(t) => format!("[resource {}]\n{t}", resource.uri),
                ResourceBody::Blob(b) => format!("[resource {}, {} bytes]", resource.uri, b.len()),
            },
            ContentPart::ResourceLink { uri, name, .. } => format!("[link {name}: {uri}]"),
        });
    }
    if let Some(structured) = &result.structured
        && !result
            .parts
            .iter()
            .any(|p| matches!(p, ContentPart::Text { .. }))
    {
        out.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    out.join("\n")
}

/// Calls the tool and prints its result; a tool error exits 1.
pub async fn run(ctx: &mut Ctx, args: CallArgs) -> Result<ExitCode> {
    super::check_tool_name(&args.tool)?;
    let mut arguments = parse_arguments(args.args.as_deref(), &args.pairs)?;
    let opened = open_host(ctx, Need::Call(args.tool.clone(), arguments.clone())).await?;
    // A name the view does not know is left to the call, which says why.
    if let Ok(tool) = opened.view.tool(&args.tool) {
        let pairs: Vec<_> = args.pairs.iter().filter_map(|p| split_pair(p)).collect();
        super::arguments::strings_as_typed(&tool, &mut arguments, &pairs);
        if let Some(problem) = super::arguments::problems(&tool, &arguments) {
            opened.shutdown().await;
            anyhow::bail!(problem);
        }
    }
    let result = opened
        .until_signal(opened.view.call(ToolCall::new(&args.tool, arguments)))
        .await;
    let skipped = super::skipped_note(&opened);
    opened.shutdown().await;
    let result = result?
        .outcome
        .map_err(|e| super::noting_skipped(e, skipped.as_deref()))?;
    if ctx.global.json {
        ctx.out.json_value(&result)?;
    } else if result.is_error {
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}: {} reported an error:\n{}",
            ctx.err_style.red("error"),
            shown(&args.tool),
            shown(&render_result(&result))
        );
    } else {
        ctx.out.payload(&(render_result(&result) + "\n"))?;
    }
    Ok(if result.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_from_json_and_pairs() {
        let pairs = vec![
            "a=2".to_owned(),
            "text=hello world".to_owned(),
            "flag=true".to_owned(),
            "list=[1,2]".to_owned(),
        ];
        let args = parse_arguments(Some(r#"{"a": 1, "b": "x"}"#), &pairs).unwrap();
        assert_eq!(
            Value::Object(args),
            serde_json::json!({"a": 2, "b": "x", "text": "hello world", "flag": true, "list": [1, 2]})
        );
        assert!(
            parse_arguments(Some("[1]"), &[])
                .unwrap_err()
                .0
                .contains("JSON object")
        );
        assert!(
            parse_arguments(Some("{"), &[])
                .unwrap_err()
                .0
                .contains("not valid JSON")
        );
        assert!(
            parse_arguments(None, &["novalue".into()])
                .unwrap_err()
                .0
                .contains("key=value")
        );
    }
}
