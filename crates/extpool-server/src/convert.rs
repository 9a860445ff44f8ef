//! What a host view lists, as the MCP wire types a client receives: tools,
//! resources, prompts and skills. Results of calls and reads use the one
//! mapping of `extpool_mcp::convert::wire`.

use std::sync::Arc;

use extpool_host::{CommandInfo, ResourceInfo, SkillInfo, ToolInfo};
use rmcp::model::{
    JsonObject, Prompt, PromptArgument, Resource, Skill, SkillFrontmatter, SkillResource,
    SkillResources, Tool, ToolAnnotations,
};
use serde_json::Value;

/// Longest tool name MCP clients accept (the specification's 128).
pub const MAX_TOOL_NAME: usize = 128;

/// The name a client sees for a tool: its catalog name when MCP clients
/// accept it (`[A-Za-z0-9_.-]`, at most [`MAX_TOOL_NAME`]), else its
/// provider-safe alias. Calls accept either.
pub fn tool_name(info: &ToolInfo) -> &str {
    let valid = info.name.len() <= MAX_TOOL_NAME
        && info
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if valid { &info.name } else { &info.alias }
}

fn object(value: &Value) -> JsonObject {
    match value {
        Value::Object(map) => map.clone(),
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".into(), Value::String("object".into()));
            map
        }
    }
}

/// A tool as `tools/list` shows it: name, description, schemas, title and
/// annotations as its server sent them.
pub fn tool(info: &ToolInfo) -> Tool {
    let mut tool = Tool::new(
        tool_name(info).to_owned(),
        info.description.clone(),
        Arc::new(object(&info.input_schema)),
    );
    tool.title = info.details.title.clone();
    tool.output_schema = info
        .details
        .output_schema
        .as_ref()
        .map(|s| Arc::new(object(s)));
    tool.annotations = info
        .details
        .annotations
        .clone()
        .and_then(|a| serde_json::from_value::<ToolAnnotations>(a).ok());
    tool
}

/// A resource as `resources/list` shows it.
pub fn resource(info: &ResourceInfo) -> Resource {
    let mut r = Resource::new(info.uri.clone(), info.name.clone());
    r.mime_type = info.mime_type.clone();
    if !info.description.is_empty() {
        r.description = Some(info.description.clone());
    }
    r
}

/// A skill's `SKILL.md` as a plain resource, for clients without the
/// skills extension.
pub fn skill_resource(info: &SkillInfo) -> Resource {
    let mut r = Resource::new(info.uri.clone(), info.name.clone());
    r.mime_type = Some("text/markdown".into());
    r.description = Some(info.description.clone());
    r
}

/// The argument a skill command's text goes in (its `$ARGUMENTS`).
pub const SKILL_ARGUMENTS: &str = "arguments";

/// A command as `prompts/list` shows it: an MCP prompt with its arguments,
/// or a skill's slash command with one optional `arguments` argument.
pub fn prompt(info: &CommandInfo) -> Prompt {
    let name = info.name.trim_start_matches('/').to_owned();
    let arguments: Vec<PromptArgument> = if info.source == "skill" {
        let mut a = PromptArgument::new(SKILL_ARGUMENTS);
        a.description = Some("The text after the command ($ARGUMENTS)".into());
        a.required = Some(false);
        vec![a]
    } else {
        info.arguments
            .iter()
            .map(|arg| {
                let mut a = PromptArgument::new(arg.name.clone());
                a.required = Some(arg.required);
                a
            })
            .collect()
    };
    let description = (!info.description.is_empty()).then(|| info.description.clone());
    Prompt::new(name, description, Some(arguments))
}

/// A skill as `skills/list` shows it, with the digests of `files` (URI and
/// bytes, `SKILL.md` first); `Dynamic` when its files are not known.
pub fn skill(info: &SkillInfo, files: Option<&[(String, Vec<u8>)]>) -> Skill {
    let frontmatter = SkillFrontmatter::new(info.name.clone(), info.description.clone());
    let resources = match files {
        Some(files) => SkillResources::Files(
            files
                .iter()
                .map(|(uri, bytes)| SkillResource::from_bytes(uri.clone(), bytes))
                .collect(),
        ),
        None => SkillResources::Dynamic,
    };
    Skill::new(info.uri.clone(), frontmatter, resources)
}

#[cfg(test)]
mod tests {
    use super::*;
    use extpool_host::ToolDetails;

    fn info(name: &str, alias: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            alias: alias.into(),
            server: "s".into(),
            tool: "t".into(),
            description: "d".into(),
            input_schema: serde_json::json!({"type": "object"}),
            builtin: false,
            details: ToolDetails::default(),
        }
    }

    #[test]
    fn a_name_clients_would_refuse_is_replaced_by_its_alias() {
        assert_eq!(tool_name(&info("mcp__s__t", "mcp__s__t")), "mcp__s__t");
        let long = format!("mcp__s__{}", "x".repeat(200));
        assert_eq!(tool_name(&info(&long, "mcp__s__x_1a2b")), "mcp__s__x_1a2b");
        assert_eq!(
            tool_name(&info("mcp__s__a/b", "mcp__s__a_b")),
            "mcp__s__a_b"
        );
    }
}
