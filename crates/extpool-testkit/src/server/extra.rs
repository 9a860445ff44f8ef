//! Prompts, resources and resource templates a test defines whole
//! (`--lists-file`): listed after the others, exactly as written, so a test
//! can give a client any field MCP defines (icons, titles, annotations)
//! and see what reaches it. They are only listed: a get or read of one
//! answers as for a name the server does not have.

use rmcp::model::{Prompt, Resource, ResourceTemplate};
use serde::Deserialize;

/// What `--lists-file` adds to the server's lists (a JSON object; every
/// key may be left out).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct ExtraLists {
    /// Added to `prompts/list`.
    #[serde(default)]
    pub prompts: Vec<Prompt>,
    /// Added to `resources/list`.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Added to `resources/templates/list`.
    #[serde(default)]
    pub resource_templates: Vec<ResourceTemplate>,
}
