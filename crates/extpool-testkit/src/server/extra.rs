//! Prompts, resources and resource templates a test defines whole
//! (`--lists-file`): listed after the others, exactly as written, so a test
//! can give a client any field MCP defines (icons, titles, annotations,
//! `_meta`) and see what reaches it. They are only listed: a get or read
//! of one answers as for a name the server does not have, but for the
//! resource contents the file gives, which a read answers as written.

use rmcp::model::{Prompt, Resource, ResourceContents, ResourceTemplate};
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
    /// What `resources/read` of each one's URI answers, as written.
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
}

impl ExtraLists {
    /// The contents written for `uri`, if any.
    pub(crate) fn content(&self, uri: &str) -> Option<&ResourceContents> {
        self.contents.iter().find(|c| match c {
            ResourceContents::TextResourceContents { uri: u, .. }
            | ResourceContents::BlobResourceContents { uri: u, .. } => u == uri,
            _ => false,
        })
    }
}
