//! What a host view lists, as the MCP wire types a client receives: tools,
//! resources, prompts and skills. Results of calls and reads use the one
//! mapping of `extpool_mcp::convert::wire`.

use std::sync::Arc;

use extpool_host::{CommandInfo, ModelTool, ResourceInfo, SkillInfo, TemplateInfo};
use rmcp::model::{
    Icon, JsonObject, MetaObject, Prompt, PromptArgument, Resource, ResourceTemplate, Skill,
    SkillFrontmatter, SkillResource, SkillResources, Tool, ToolAnnotations,
};
use serde_json::Value;

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

/// Icons kept as their server sent them, back as MCP's type (`None` when
/// there were none, or they no longer read as icons).
fn icons(icons: Option<&Value>) -> Option<Vec<Icon>> {
    icons.and_then(|i| serde_json::from_value::<Vec<Icon>>(i.clone()).ok())
}

/// A `_meta` kept as its server sent it, back as MCP's type (`None` when
/// there was none, or it was not an object).
fn meta(meta: Option<&Value>) -> Option<MetaObject> {
    match meta {
        Some(Value::Object(m)) => Some(MetaObject(m.clone())),
        _ => None,
    }
}

/// A tool as `tools/list` shows it, under the name the client sees
/// (`listed`, its table's): description, schemas, title, annotations,
/// icons and `_meta` (an MCP App's `ui.resourceUri`, which names a resource
/// read through the gateway under the same URI) as its server sent them.
pub fn tool(info: &ModelTool, listed: &str) -> Tool {
    let mut tool = Tool::new(
        listed.to_owned(),
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
    tool.icons = icons(info.details.icons.as_ref());
    tool.meta = meta(info.details.meta.as_ref());
    tool
}

/// A resource as `resources/list` shows it, icons and `_meta` included.
pub fn resource(info: &ResourceInfo) -> Resource {
    let mut r = Resource::new(info.uri.clone(), info.name.clone());
    r.mime_type = info.mime_type.clone();
    r.icons = icons(info.icons.as_ref());
    r.meta = meta(info.meta.as_ref());
    if !info.description.is_empty() {
        r.description = Some(info.description.clone());
    }
    r
}

/// A resource template as `resources/templates/list` shows it, icons
/// included.
pub fn template(info: &TemplateInfo) -> ResourceTemplate {
    let mut t = ResourceTemplate::new(info.uri_template.clone(), info.name.clone());
    t.mime_type = info.mime_type.clone();
    t.icons = icons(info.icons.as_ref());
    if !info.description.is_empty() {
        t.description = Some(info.description.clone());
    }
    t
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

/// Whether `info` is rendered by the host from its text — a skill's
/// command or a command file — rather than an MCP prompt: such a command
/// takes its text as one `arguments` argument.
pub fn rendered_locally(info: &CommandInfo) -> bool {
    matches!(info.source.as_str(), "skill" | "file")
}

/// A command as `prompts/list` shows it, under the name the client sees
/// (`listed`): an MCP prompt with its arguments, or a skill's slash
/// command with one optional `arguments` argument. A prompt's icons are
/// its server's.
pub fn prompt(info: &CommandInfo, listed: &str) -> Prompt {
    let name = listed.to_owned();
    let arguments: Vec<PromptArgument> = if rendered_locally(info) {
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
    let mut prompt = Prompt::new(name, description, Some(arguments));
    prompt.icons = icons(info.icons.as_ref());
    prompt
}

/// A skill as `skills/list` shows it, with the digests of `files` (URI and
/// bytes, `SKILL.md` first); `Dynamic` when its files are not known. Its
/// frontmatter `name` is the last segment of its skill path, as SEP-2640
/// requires (a plugin's skill `plugin:skill` is `skill://plugin/skill/…`,
/// named `skill`).
pub fn skill(info: &SkillInfo, files: Option<&[(String, Vec<u8>)]>) -> Skill {
    let name = info
        .uri
        .strip_suffix("/SKILL.md")
        .and_then(|path| path.rsplit('/').next())
        .filter(|segment| !segment.is_empty())
        .unwrap_or(&info.name);
    let frontmatter = SkillFrontmatter::new(name.to_owned(), info.description.clone());
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
