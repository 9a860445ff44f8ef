//! Resources: `testkit://info` (text), `testkit://blob` (a PNG), the skill
//! files under `skill://testkit-skill/`, and whatever `add_resource` added.

use rmcp::{
    ErrorData,
    model::{ReadResourceResult, Resource, ResourceContents},
};

use super::{
    TestServer,
    content::{PNG_1X1, PNG_MIME, base64},
    skills,
};

/// URI of the text resource.
pub(crate) const INFO_URI: &str = "testkit://info";
/// URI of the binary resource.
pub(crate) const BLOB_URI: &str = "testkit://blob";
/// Content of `testkit://info`.
pub(crate) const INFO_TEXT: &str = "extpool testkit server: a resource for tests";

fn builtin() -> Vec<Resource> {
    vec![
        Resource::new(INFO_URI, "info")
            .with_description("A short text resource")
            .with_mime_type("text/plain")
            .with_size(INFO_TEXT.len() as u64),
        Resource::new(BLOB_URI, "blob")
            .with_description("A 1x1 PNG image")
            .with_mime_type(PNG_MIME)
            .with_size(PNG_1X1.len() as u64),
        Resource::new(skills::SKILL_MD_URI, skills::SKILL_NAME)
            .with_description(skills::DESCRIPTION)
            .with_mime_type(skills::MARKDOWN_MIME)
            .with_size(skills::SKILL_MD.len() as u64),
        Resource::new(skills::GUIDE_URI, "guide.md")
            .with_description("Reference file of testkit-skill")
            .with_mime_type(skills::MARKDOWN_MIME)
            .with_size(skills::GUIDE_MD.len() as u64),
    ]
}

impl TestServer {
    /// Every resource, built-in first, then the dynamic ones by URI, then
    /// those of `--lists-file`.
    pub(crate) fn all_resources(&self) -> Vec<Resource> {
        let mut all = builtin();
        if self.shared.options.conformance {
            all.extend(self.conformance_resources());
        }
        all.extend(
            self.read_dynamic()
                .resources
                .values()
                .map(|(r, _)| r.clone()),
        );
        all.extend(self.shared.options.lists.resources.iter().cloned());
        all
    }

    /// `resources/read` of `uri`.
    pub(crate) fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let contents =
            match uri {
                INFO_URI => ResourceContents::text(INFO_TEXT, uri),
                BLOB_URI => ResourceContents::blob(base64(PNG_1X1), uri).with_mime_type(PNG_MIME),
                skills::SKILL_MD_URI => ResourceContents::text(skills::SKILL_MD, uri)
                    .with_mime_type(skills::MARKDOWN_MIME),
                skills::GUIDE_URI => ResourceContents::text(skills::GUIDE_MD, uri)
                    .with_mime_type(skills::MARKDOWN_MIME),
                _ => {
                    if self.shared.options.conformance
                        && let Some(contents) = self.conformance_read(uri)
                    {
                        return Ok(ReadResourceResult::new(vec![contents]));
                    }
                    if let Some(contents) = self.shared.options.lists.content(uri) {
                        return Ok(ReadResourceResult::new(vec![contents.clone()]));
                    }
                    let dynamic = self.read_dynamic();
                    let Some((_, text)) = dynamic.resources.get(uri) else {
                        return Err(ErrorData::resource_not_found(
                            format!("no resource {uri}"),
                            Some(serde_json::json!({ "uri": uri })),
                        ));
                    };
                    ResourceContents::text(text.clone(), uri)
                }
            };
        Ok(ReadResourceResult::new(vec![contents]))
    }
}
