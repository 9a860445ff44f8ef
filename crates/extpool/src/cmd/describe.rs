//! `extpool describe TOOL`: one tool as a person needs it before calling
//! it — what it does, each argument (type, required, description), its
//! annotations, and a call to try built from its required arguments.

use std::process::ExitCode;

use anyhow::Result;
use extpool_host::ToolInfo;
use serde::Serialize;
use serde_json::Value;

use super::{Need, open_host, suggest};
use crate::cli::DescribeArgs;
use crate::context::Ctx;
use crate::output::shown;

#[derive(Serialize)]
struct DescribeJson<'a> {
    #[serde(flatten)]
    tool: &'a ToolInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a Value>,
    /// A call to try, for a tool marked read-only ([`suggest::call_to_try`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    example: Option<String>,
    /// How to call it: each required argument a placeholder to fill in.
    usage: String,
}

/// The tool's arguments and their schemas (`properties`).
pub(super) fn properties(tool: &ToolInfo) -> Vec<(&str, &Value)> {
    tool.input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

/// The names its schema marks `required`.
pub(super) fn required(tool: &ToolInfo) -> Vec<&str> {
    tool.input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A property's type as one word (`string`, `number|null`, `enum`, `any`).
pub(super) fn type_of(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if schema.get("enum").is_some() => "enum".into(),
        _ => "any".into(),
    }
}

/// The annotations a person cares about, as words.
fn hints(annotations: Option<&Value>) -> Vec<&'static str> {
    let Some(a) = annotations else {
        return Vec::new();
    };
    let on = |key: &str| a.get(key).and_then(Value::as_bool);
    let mut words = Vec::new();
    if on("readOnlyHint") == Some(true) {
        words.push("read-only");
    }
    if on("destructiveHint") == Some(true) {
        words.push("destructive");
    }
    if on("idempotentHint") == Some(true) {
        words.push("idempotent");
    }
    if on("openWorldHint") == Some(true) {
        words.push("open world");
    }
    words
}

/// Prints one tool.
pub async fn run(ctx: &mut Ctx, args: DescribeArgs) -> Result<ExitCode> {
    super::check_tool_name(&args.tool)?;
    let opened = open_host(ctx, Need::Named(args.tool.clone())).await?;
    let tool = opened.view.tool(&args.tool);
    opened.shutdown().await;
    let tool = tool?;
    let example = suggest::call_to_try(&tool).map(|c| c.command);
    let usage = suggest::call_line(&tool, false).command;
    if ctx.global.json {
        ctx.out.json_value(&DescribeJson {
            tool: &tool,
            title: tool.details.title.as_deref(),
            output_schema: tool.details.output_schema.as_ref(),
            annotations: tool.details.annotations.as_ref(),
            example,
            usage,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let style = ctx.out.style;
    let origin = if tool.builtin {
        "built into extpool".to_owned()
    } else {
        format!("tool {} of server {}", tool.tool, tool.server)
    };
    ctx.out.line(format!(
        "{}  {}",
        style.bold(&shown(&tool.name)),
        style.dim(&shown(&origin))
    ))?;
    if let Some(title) = &tool.details.title {
        ctx.out.line(shown(title))?;
    }
    let hints = hints(tool.details.annotations.as_ref());
    if !hints.is_empty() {
        ctx.out.line(style.dim(&hints.join(", ")))?;
    }
    if !tool.description.is_empty() {
        ctx.out.line("")?;
        ctx.out.line(shown(tool.description.trim_end()))?;
    }
    ctx.out.line("")?;
    let required = required(&tool);
    let rows: Vec<Vec<String>> = properties(&tool)
        .into_iter()
        .map(|(name, schema)| {
            let description = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            vec![
                format!("  {name}"),
                type_of(schema),
                if required.contains(&name) {
                    "yes"
                } else {
                    "no"
                }
                .to_owned(),
                description.to_owned(),
            ]
        })
        .collect();
    if rows.is_empty() {
        ctx.out.line(style.bold("Arguments: none"))?;
    } else {
        ctx.out.line(style.bold("Arguments"))?;
        ctx.out
            .table(&["  NAME", "TYPE", "REQUIRED", "DESCRIPTION"], &rows)?;
    }
    if tool.details.output_schema.is_some() {
        ctx.out
            .line(style.dim("Returns structured content (see --json for its schema)"))?;
    }
    ctx.out.line("")?;
    // A call to try only for a tool that changes nothing; else the form.
    match example {
        Some(example) => {
            ctx.out.line(style.bold("Try"))?;
            ctx.out.line(format!("  {}", shown(&example)))?;
        }
        None => {
            ctx.out.line(style.bold("Call"))?;
            ctx.out.line(format!("  {}", shown(&usage)))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_hints_read_as_words() {
        assert_eq!(type_of(&serde_json::json!({"type": "string"})), "string");
        assert_eq!(
            type_of(&serde_json::json!({"type": ["number", "null"]})),
            "number|null"
        );
        assert_eq!(type_of(&serde_json::json!({"enum": ["a"]})), "enum");
        assert_eq!(type_of(&serde_json::json!({})), "any");
        let a = serde_json::json!({"readOnlyHint": true, "destructiveHint": false});
        assert_eq!(hints(Some(&a)), ["read-only"]);
    }
}
