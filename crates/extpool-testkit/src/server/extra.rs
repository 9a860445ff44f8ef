//! Tools, prompts, resources and resource templates a test defines whole
//! (`--lists-file`): listed after the others, exactly as written, so a test
//! can give a client any field MCP defines (icons, titles, annotations,
//! `_meta`) and see what reaches it. Prompts and resources are only
//! listed: a get or read of one answers as for a name the server does not
//! have, but for the resource contents the file gives, which a read
//! answers as written. A call of a written tool answers its written result.

use rmcp::model::{CallToolResult, Prompt, Resource, ResourceContents, ResourceTemplate, Tool};
use serde::Deserialize;

/// What `--lists-file` adds to the server's lists (a JSON object; every
/// key may be left out).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct ExtraLists {
    /// Added to `tools/list`, each with what a call of it answers.
    #[serde(default)]
    pub tools: Vec<WrittenTool>,
    /// Added to `prompts/list`.
    #[serde(default)]
    pub prompts: Vec<Prompt>,
    /// Added to `resources/list`.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Added to `resources/templates/list`.
    #[serde(default)]
    pub resource_templates: Vec<ResourceTemplate>,
    /// What `resources/read` of each one's URI answers, as written.
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
}

/// A tool of `--lists-file` and the result every call of it answers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct WrittenTool {
    /// The tool as listed.
    pub tool: Tool,
    /// What a call answers, as written.
    pub result: CallToolResult,
}

impl ExtraLists {
    /// The written tool named `name`, if any.
    pub(crate) fn tool(&self, name: &str) -> Option<&WrittenTool> {
        self.tools.iter().find(|t| t.tool.name == name)
    }

    /// The contents written for `uri`, if any.
    pub(crate) fn content(&self, uri: &str) -> Option<&ResourceContents> {
        self.contents.iter().find(|c| match c {
            ResourceContents::TextResourceContents { uri: u, .. }
            | ResourceContents::BlobResourceContents { uri: u, .. } => u == uri,
            _ => false,
        })
    }
}
