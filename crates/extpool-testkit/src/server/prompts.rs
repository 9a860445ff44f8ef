//! Prompts: `greet {name, style?}`, `summarize {topic}`, and whatever
//! `add_prompt` added (argument-less).

use rmcp::{
    ErrorData,
    model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role},
};

use super::TestServer;

fn builtin() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "greet",
            Some("Greets someone by name"),
            Some(vec![
                PromptArgument::new("name")
                    .with_description("Who to greet")
                    .with_required(true),
                PromptArgument::new("style")
                    .with_description("How to greet (for example: formal)")
                    .with_required(false),
            ]),
        ),
        Prompt::new(
            "summarize",
            Some("Asks for a summary of a topic"),
            Some(vec![
                PromptArgument::new("topic")
                    .with_description("What to summarize")
                    .with_required(true),
            ]),
        ),
    ]
}

/// A string argument, or `None` when absent; a non-string value is an error.
fn optional<'a>(args: Option<&'a JsonObject>, key: &str) -> Result<Option<&'a str>, ErrorData> {
    match args.and_then(|a| a.get(key)) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ErrorData::invalid_params(
            format!("prompt argument {key:?} must be a string"),
            None,
        )),
    }
}

fn required<'a>(args: Option<&'a JsonObject>, key: &str) -> Result<&'a str, ErrorData> {
    optional(args, key)?.ok_or_else(|| {
        ErrorData::invalid_params(format!("missing required prompt argument {key:?}"), None)
    })
}

fn one_message(text: String) -> GetPromptResult {
    GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
}

impl TestServer {
    /// Every prompt, built-in first, then the dynamic ones by name, then
    /// those of `--lists-file`.
    pub(crate) fn all_prompts(&self) -> Vec<Prompt> {
        let mut all = builtin();
        if self.shared.options.conformance {
            all.extend(self.conformance_prompts());
        }
        all.extend(self.read_dynamic().prompts.values().cloned());
        all.extend(self.shared.options.lists.prompts.iter().cloned());
        all
    }

    /// `prompts/get` of `name` with `args`.
    pub(crate) fn prompt(
        &self,
        name: &str,
        args: Option<&JsonObject>,
    ) -> Result<GetPromptResult, ErrorData> {
        if self.shared.options.conformance
            && let Some(result) = self.conformance_prompt(name, args)
        {
            return result;
        }
        match name {
            "greet" => {
                let who = required(args, "name")?;
                let text = match optional(args, "style")? {
                    Some(style) => format!("Hello, {who}! (style: {style})"),
                    None => format!("Hello, {who}!"),
                };
                Ok(one_message(text))
            }
            "summarize" => {
                let topic = required(args, "topic")?;
                Ok(one_message(format!("Please summarize {topic}.")))
            }
            _ if self.read_dynamic().prompts.contains_key(name) => {
                Ok(one_message(format!("Prompt {name}")))
            }
            _ => Err(ErrorData::invalid_params(
                format!("no prompt named {name:?}"),
                None,
            )),
        }
    }
}
