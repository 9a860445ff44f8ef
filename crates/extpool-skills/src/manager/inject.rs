//! Instructions: what the model is told about skills.
//!
//! The system prompt carries metadata only — an `<available-skills>` block
//! with one line per skill the model may invoke (about 100 tokens each).
//! Full instructions are injected per request by `before_model_request`:
//! always for skills marked `always_active`, and for the skills a matcher
//! picks from the prompt; without a matcher nothing more is injected.

use std::collections::HashSet;

use extpool_core::{ExtensionError, SkillEntry, TurnContext};

use super::Inner;
use crate::skill::{Skill, body_from_bytes};

/// Picks the skills whose full instructions suit a prompt.
pub trait SkillMatcher: Send + Sync {
    /// Names of the chosen skills, from `skills` (those the model may invoke).
    fn select(&self, prompt: &str, skills: &[SkillEntry]) -> Vec<String>;
}

impl<F> SkillMatcher for F
where
    F: Fn(&str, &[SkillEntry]) -> Vec<String> + Send + Sync,
{
    fn select(&self, prompt: &str, skills: &[SkillEntry]) -> Vec<String> {
        self(prompt, skills)
    }
}

/// Skills the model may see: local ones not marked
/// `disable-model-invocation`, then the children's.
async fn model_visible(inner: &Inner) -> Vec<SkillEntry> {
    let mut entries: Vec<SkillEntry> = {
        let state = inner.state.load();
        state
            .discovery
            .skills
            .iter()
            .filter(|s| !s.meta.disable_model_invocation)
            .map(|s| s.entry())
            .collect()
    };
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for child in inner.skill_sources() {
        let Some(skills) = child.skills() else {
            continue;
        };
        match skills.list_skills().await {
            Ok(more) => entries.extend(more),
            Err(e) => inner.record_failure(child.id(), &e),
        }
    }
    entries
}

/// The `<available-skills>` block, or `None` when there is no skill.
pub(crate) async fn instructions(inner: &Inner) -> Result<Option<String>, ExtensionError> {
    let entries = model_visible(inner).await;
    if entries.is_empty() {
        return Ok(None);
    }
    let mut out = String::from("<available-skills>\n");
    for e in &entries {
        out.push_str("  - ");
        out.push_str(&e.name);
        out.push_str(": ");
        out.push_str(&e.description);
        out.push('\n');
    }
    out.push_str("</available-skills>");
    Ok(Some(out))
}

/// A skill's full instructions as injected into a request: its body in a
/// `<skill_content>` block that says how its files are read. Every
/// injection of a skill's instructions (matched, always active, activated
/// for one turn) uses this one form.
pub fn skill_content(name: &str, uri: &str, body: &str) -> String {
    let root = uri.strip_suffix("SKILL.md").unwrap_or(uri);
    format!(
        "<skill_content name=\"{name}\">\n{body}\n\nThis skill's files are read as {root}<path>.\n</skill_content>"
    )
}

fn inject_local(inner: &Inner, skill: &Skill, ctx: &mut TurnContext) {
    inner.count_body_read();
    match skill.read_body() {
        Ok(body) => ctx.inject_system(skill_content(skill.name(), &skill.uri(), &body)),
        Err(e) => {
            tracing::warn!(skill = %skill.name(), error = %e, "skill instructions not injected")
        }
    }
}

async fn inject_remote(inner: &Inner, entry: &SkillEntry, ctx: &mut TurnContext) {
    for child in inner.skill_sources() {
        let Some(skills) = child.skills() else {
            continue;
        };
        if !skills.skill_exists(&entry.uri).await.unwrap_or(false) {
            continue;
        }
        match skills.read_skill(&entry.uri).await {
            Ok(Some(content)) => {
                let bytes: &[u8] = match &content.body {
                    extpool_core::ResourceBody::Text(t) => t.as_bytes(),
                    extpool_core::ResourceBody::Blob(b) => b,
                };
                match body_from_bytes(std::path::Path::new(&entry.uri), bytes) {
                    Ok(body) => ctx.inject_system(skill_content(&entry.name, &entry.uri, &body)),
                    Err(e) => {
                        tracing::warn!(uri = %entry.uri, error = %e, "skill instructions not injected")
                    }
                }
            }
            Ok(None) => {}
            Err(e) => inner.record_failure(child.id(), &e),
        }
        return;
    }
}

pub(crate) async fn before_model_request(
    inner: &Inner,
    ctx: &mut TurnContext,
) -> Result<(), ExtensionError> {
    let state = inner.state.load_full();
    let mut done: HashSet<String> = HashSet::new();
    for skill in state
        .discovery
        .skills
        .iter()
        .filter(|s| s.meta.always_active)
    {
        done.insert(skill.meta.name.clone());
        inject_local(inner, skill, ctx);
    }
    let Some(matcher) = &inner.matcher else {
        return Ok(());
    };
    let entries = model_visible(inner).await;
    for name in matcher.select(&ctx.user_prompt, &entries) {
        if !done.insert(name.clone()) {
            continue;
        }
        let Some(entry) = entries.iter().find(|e| e.name == name) else {
            tracing::debug!(skill = %name, "matcher chose a skill that is not offered; ignored");
            continue;
        };
        match state.skill(&name) {
            Some(skill) => inject_local(inner, skill, ctx),
            None => inject_remote(inner, entry, ctx).await,
        }
    }
    Ok(())
}
