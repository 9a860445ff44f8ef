//! The fixture resources, template, prompts and completions.

use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, GetPromptResult,
    JsonObject, Prompt, PromptArgument, PromptMessage, Reference, Resource, ResourceContents,
    ResourceTemplate, Role,
};
use serde_json::json;

use super::{
    STATIC_BINARY_URI, STATIC_TEXT_URI, TEMPLATE, TEMPLATE_PREFIX, TEMPLATE_SUFFIX, WATCHED_URI,
    arg,
};
use crate::server::TestServer;
use crate::server::content::{PNG_1X1, PNG_MIME, base64};

impl TestServer {
    /// The fixture resources.
    pub(crate) fn conformance_resources(&self) -> Vec<Resource> {
        vec![
            Resource::new(STATIC_TEXT_URI, "static-text")
                .with_description("A static text resource")
                .with_mime_type("text/plain"),
            Resource::new(STATIC_BINARY_URI, "static-binary")
                .with_description("A static PNG image")
                .with_mime_type(PNG_MIME),
            Resource::new(WATCHED_URI, "watched-resource")
                .with_description("A text resource that update_watched_resource changes")
                .with_mime_type("text/plain"),
        ]
    }

    /// The fixture template.
    pub(crate) fn conformance_templates(&self) -> Vec<ResourceTemplate> {
        vec![
            ResourceTemplate::new(TEMPLATE, "template-data")
                .with_description("JSON data for any id")
                .with_mime_type("application/json"),
        ]
    }

    /// Reads a fixture resource; `None` for other URIs.
    pub(crate) fn conformance_read(&self, uri: &str) -> Option<ResourceContents> {
        match uri {
            STATIC_TEXT_URI => Some(
                ResourceContents::text("This is the content of the static text resource.", uri)
                    .with_mime_type("text/plain"),
            ),
            STATIC_BINARY_URI => {
                Some(ResourceContents::blob(base64(PNG_1X1), uri).with_mime_type(PNG_MIME))
            }
            WATCHED_URI => {
                let version = self
                    .fixtures()
                    .version
                    .load(std::sync::atomic::Ordering::Acquire);
                Some(
                    ResourceContents::text(format!("Watched resource, version {version}"), uri)
                        .with_mime_type("text/plain"),
                )
            }
            _ => {
                let id = uri
                    .strip_prefix(TEMPLATE_PREFIX)?
                    .strip_suffix(TEMPLATE_SUFFIX)?;
                if id.is_empty() || id.contains('/') {
                    return None;
                }
                let body =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Some(
                    ResourceContents::text(body.to_string(), uri)
                        .with_mime_type("application/json"),
                )
            }
        }
    }

    /// The fixture prompts.
    pub(crate) fn conformance_prompts(&self) -> Vec<Prompt> {
        let required = |name: &str, description: &str| {
            PromptArgument::new(name)
                .with_description(description)
                .with_required(true)
        };
        vec![
            Prompt::new(
                "test_simple_prompt",
                Some("A prompt without arguments"),
                None,
            ),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with two arguments"),
                Some(vec![
                    required("arg1", "First test argument"),
                    required("arg2", "Second test argument"),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt embedding a resource"),
                Some(vec![required(
                    "resourceUri",
                    "URI of the resource to embed",
                )]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt with an image"),
                None,
            ),
        ]
    }

    /// Renders a fixture prompt; `None` for other names.
    pub(crate) fn conformance_prompt(
        &self,
        name: &str,
        args: Option<&JsonObject>,
    ) -> Option<Result<GetPromptResult, ErrorData>> {
        let result = match name {
            "test_simple_prompt" => Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                Role::User,
                "This is a simple prompt for testing.",
            )])),
            "test_prompt_with_arguments" => (|| {
                let (a, b) = (arg(args, "arg1")?, arg(args, "arg2")?);
                Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                    Role::User,
                    format!("Prompt with arguments: arg1='{a}', arg2='{b}'"),
                )]))
            })(),
            "test_prompt_with_embedded_resource" => arg(args, "resourceUri").map(|uri| {
                GetPromptResult::new(vec![
                    PromptMessage::new(
                        Role::User,
                        ContentBlock::resource(
                            ResourceContents::text("Embedded resource content for testing.", uri)
                                .with_mime_type("text/plain"),
                        ),
                    ),
                    PromptMessage::new_text(
                        Role::User,
                        "Please process the embedded resource above.",
                    ),
                ])
            }),
            "test_prompt_with_image" => Ok(GetPromptResult::new(vec![
                PromptMessage::new(Role::User, ContentBlock::image(base64(PNG_1X1), PNG_MIME)),
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ])),
            _ => return None,
        };
        Some(result)
    }

    /// `completion/complete`: candidates starting with what was typed.
    pub(crate) fn conformance_complete(
        &self,
        request: &CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let candidates: &[&str] = match &request.r#ref {
            Reference::Prompt(p) if p.name == "test_prompt_with_arguments" => {
                match request.argument.name.as_str() {
                    "arg1" => &["paris", "park", "party", "test", "testing"],
                    "arg2" => &["red", "green", "blue"],
                    _ => &[],
                }
            }
            Reference::Resource(r) if r.uri == TEMPLATE && request.argument.name == "id" => {
                &["1", "2", "3", "123"]
            }
            _ => &[],
        };
        let typed = request.argument.value.as_str();
        let values: Vec<String> = candidates
            .iter()
            .filter(|c| c.starts_with(typed))
            .map(|c| (*c).to_owned())
            .collect();
        let info = CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }
}
