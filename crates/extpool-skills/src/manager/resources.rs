//! The resource protocols of [`SkillManagerCap`]: skills (local first, then
//! the children's and the hosted skill sources'), commands (the
//! user-invocable local skills — a child's prompts are its own commands,
//! published under its name), and the children's tools and resources
//! behind one facade.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use extpool_core::directory::{DIRECTORY_PAGE_SIZE, MAX_DIRECTORY_ENTRIES, child_entry};
use extpool_core::{
    Capability, CommandEntry, CommandResource, DirectoryPage, ExtUri, ExtensionError, McpResource,
    ResourceBody, ResourceContent, ResourceEntry, SkillEntry, SkillResource, ToolEntry, ToolResult,
    UriError,
};
use futures::future::join_all;
use serde_json::{Map, Value};

use super::{Inner, SkillManagerCap};
use crate::args;
use crate::files::{FileContent, FileError, list_confined, read_confined};
use crate::skill::Skill;

/// Decodes `%XX` escapes of a URI path (confinement checks run afterwards).
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn uri_error(e: UriError) -> ExtensionError {
    match e {
        UriError::Traversal { .. } => ExtensionError::Denied(e.to_string()),
        other => ExtensionError::InvalidArgument(other.to_string()),
    }
}

/// Reads `rel` (empty = SKILL.md) from a local skill.
pub(crate) fn read_local(
    inner: &Inner,
    skill: &Skill,
    uri: &str,
    rel: &str,
) -> Result<Option<ResourceContent>, ExtensionError> {
    let rel = if rel.is_empty() { "SKILL.md" } else { rel };
    let file = match read_confined(&skill.canonical_dir, rel, inner.max_file_bytes) {
        Ok(f) => f,
        Err(FileError::NotFound { .. }) => return Ok(None),
        Err(e) if e.is_confinement() => {
            tracing::warn!(skill = %skill.meta.name, uri, error = %e, "skill read refused");
            return Err(ExtensionError::Denied(e.to_string()));
        }
        Err(e @ (FileError::NotAFile { .. } | FileError::TooLarge { .. })) => {
            return Err(ExtensionError::InvalidArgument(e.to_string()));
        }
        Err(e) => return Err(ExtensionError::source(&inner.id, e)),
    };
    if file.path == "SKILL.md" {
        inner.count_body_read();
    }
    let body = match file.content {
        FileContent::Text(t) => ResourceBody::Text(t),
        FileContent::Binary(b) => ResourceBody::Blob(b),
    };
    Ok(Some(ResourceContent {
        uri: uri.to_owned(),
        mime_type: Some(file.mime_type),
        body,
        meta: None,
    }))
}

/// The page after `cursor` of the direct children of folder `rel` (empty
/// = the skill's own) of a local skill, confined as its file reads are;
/// `None` when the skill has no such folder.
pub(crate) fn list_local(
    inner: &Inner,
    skill: &Skill,
    rel: &str,
    cursor: Option<&str>,
) -> Result<Option<DirectoryPage>, ExtensionError> {
    let rel = rel.trim_end_matches('/');
    let children = match list_confined(&skill.canonical_dir, rel, MAX_DIRECTORY_ENTRIES) {
        Ok(children) => children,
        Err(FileError::NotFound { .. }) => return Ok(None),
        Err(e) if e.is_confinement() => {
            tracing::warn!(skill = %skill.meta.name, rel, error = %e, "skill directory read refused");
            return Err(ExtensionError::Denied(e.to_string()));
        }
        Err(
            e @ (FileError::NotADirectory { .. }
            | FileError::TooManyEntries { .. }
            | FileError::Loop { .. }),
        ) => {
            return Err(ExtensionError::InvalidArgument(e.to_string()));
        }
        Err(e) => return Err(ExtensionError::source(&inner.id, e)),
    };
    let name = &skill.meta.name;
    let entries = children
        .into_iter()
        .map(|c| child_entry(format!("skill://{name}/{}", c.path), c.mime_type()))
        .collect();
    Ok(Some(DirectoryPage::of(
        entries,
        cursor,
        DIRECTORY_PAGE_SIZE,
    )))
}

/// The children's tools merged (first child wins a name), remembering which
/// child owns each name. Children are asked concurrently; a failing child
/// is recorded and skipped.
pub(crate) async fn merged_tools(inner: &Inner) -> Vec<ToolEntry> {
    let children: Vec<Arc<dyn Capability>> = inner
        .all_children()
        .into_iter()
        .filter(|c| !inner.is_hidden(c.id()))
        .collect();
    let results = join_all(children.iter().map(|c| c.toolset())).await;
    let mut out = Vec::new();
    let mut routes: HashMap<String, Arc<dyn Capability>> = HashMap::new();
    for (child, result) in children.iter().zip(results) {
        match result {
            Ok(tools) => {
                inner.record_ok(child.id());
                for tool in tools {
                    if routes.contains_key(&tool.name) {
                        tracing::warn!(tool = %tool.name, child = %child.id(), "tool name already provided by another child; skipped");
                        continue;
                    }
                    routes.insert(tool.name.clone(), child.clone());
                    out.push(tool);
                }
            }
            Err(e) => inner.record_failure(child.id(), &e),
        }
    }
    *inner.routes.write() = routes;
    out
}

fn local_entries(inner: &Inner) -> Vec<SkillEntry> {
    let state = inner.state.load();
    let mut entries: Vec<SkillEntry> = state.discovery.skills.iter().map(|s| s.entry()).collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

#[async_trait]
impl SkillResource for SkillManagerCap {
    /// Local skills (by name), then each child's.
    async fn list_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError> {
        let mut entries = local_entries(&self.inner);
        for child in self.inner.skill_sources() {
            let Some(skills) = child.skills() else {
                continue;
            };
            match skills.list_skills().await {
                Ok(more) => entries.extend(more),
                Err(e) => self.inner.record_failure(child.id(), &e),
            }
        }
        Ok(entries)
    }

    /// Local skills only: the children and hosting servers list theirs.
    async fn list_own_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError> {
        Ok(local_entries(&self.inner))
    }

    async fn read_skill(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        let parsed = ExtUri::parse(uri).map_err(uri_error)?;
        if parsed.scheme != "skill" {
            return Ok(None);
        }
        let skill = self.inner.state.load().skill(parsed.authority).cloned();
        if let Some(skill) = skill
            && let Some(content) =
                read_local(&self.inner, &skill, uri, &percent_decode(parsed.path))?
        {
            return Ok(Some(content));
        }
        // Not a local file: a child may serve a skill under the same first
        // segment (`skill://acme/billing/refunds/SKILL.md`).
        for child in self.inner.skill_sources() {
            let Some(skills) = child.skills() else {
                continue;
            };
            match skills.skill_exists(uri).await {
                Ok(true) => return skills.read_skill(uri).await,
                Ok(false) => {}
                Err(e) => self.inner.record_failure(child.id(), &e),
            }
        }
        Ok(None)
    }

    /// A local skill's folder from disk, else the first child or hosting
    /// server that has the directory.
    async fn read_skill_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<Option<DirectoryPage>, ExtensionError> {
        let parsed = ExtUri::parse(uri).map_err(uri_error)?;
        if parsed.scheme != "skill" {
            return Ok(None);
        }
        let skill = self.inner.state.load().skill(parsed.authority).cloned();
        if let Some(skill) = skill
            && let Some(page) =
                list_local(&self.inner, &skill, &percent_decode(parsed.path), cursor)?
        {
            return Ok(Some(page));
        }
        for child in self.inner.skill_sources() {
            let Some(skills) = child.skills() else {
                continue;
            };
            match skills.read_skill_directory(uri, cursor).await {
                Ok(None) => {}
                Err(e) if self.inner.is_down_error(&e) => self.inner.record_failure(child.id(), &e),
                answer => return answer,
            }
        }
        Ok(None)
    }

    async fn skill_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        let Ok(parsed) = ExtUri::parse(uri) else {
            return Ok(false);
        };
        if parsed.scheme != "skill" {
            return Ok(false);
        }
        if self.inner.state.load().skill(parsed.authority).is_some() {
            return Ok(true);
        }
        for child in self.inner.skill_sources() {
            if let Some(skills) = child.skills()
                && skills.skill_exists(uri).await.unwrap_or(false)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Renders a local skill as a command: the base directory line, then the
/// body with the arguments substituted (Claude Code's rendering, without
/// ever running shell blocks).
pub(crate) fn render_command(skill: &Skill, body: &str, args: &[String]) -> String {
    let dir = skill.dir.display().to_string();
    let rendered = args::substitute(body, args, &skill.meta.arguments, Some(&dir));
    format!("Base directory for this skill: {dir}\n\n{rendered}")
}

#[async_trait]
impl CommandResource for SkillManagerCap {
    /// Every user-invocable local skill, by name.
    async fn list_commands(&self) -> Result<Vec<CommandEntry>, ExtensionError> {
        let mut out: Vec<CommandEntry> = {
            let state = self.inner.state.load();
            state
                .discovery
                .skills
                .iter()
                .filter(|s| s.meta.user_invocable)
                .map(|s| s.meta.command_entry(&s.meta.name))
                .collect()
        };
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    async fn get_command(&self, name: &str, args: &[String]) -> Result<String, ExtensionError> {
        let local = self.inner.state.load().skill(name).cloned();
        if let Some(skill) = local {
            if !skill.meta.user_invocable {
                return Err(ExtensionError::not_found("command", name));
            }
            self.inner.count_body_read();
            let body = skill
                .read_body()
                .map_err(|e| ExtensionError::source(&self.inner.id, e))?;
            return Ok(render_command(&skill, &body, args));
        }
        Err(ExtensionError::not_found("command", name))
    }
}

#[async_trait]
impl McpResource for SkillManagerCap {
    async fn list_tools(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        Ok(merged_tools(&self.inner).await)
    }

    async fn call_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, ExtensionError> {
        let route = |inner: &Inner| inner.routes.read().get(name).cloned();
        let child = match route(&self.inner) {
            Some(c) => c,
            None => {
                merged_tools(&self.inner).await;
                route(&self.inner).ok_or_else(|| ExtensionError::not_found("tool", name))?
            }
        };
        let Some(mcp) = child.mcp() else {
            return Err(ExtensionError::not_found("tool", name));
        };
        let result = mcp.call_tool(name, args).await;
        if let Err(e) = &result
            && self.inner.is_down_error(e)
        {
            self.inner.mark_down(child.id(), e);
        }
        result
    }

    async fn list_resources(&self) -> Result<Vec<ResourceEntry>, ExtensionError> {
        let mut out = Vec::new();
        for child in self.inner.all_children() {
            let Some(mcp) = child.mcp() else { continue };
            match mcp.list_resources().await {
                Ok(more) => out.extend(more),
                Err(e) => self.inner.record_failure(child.id(), &e),
            }
        }
        Ok(out)
    }

    async fn read_resource(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        for child in self.inner.all_children() {
            let Some(mcp) = child.mcp() else { continue };
            if mcp.resource_exists(uri).await.unwrap_or(false) {
                return mcp.read_resource(uri).await;
            }
        }
        Ok(None)
    }

    async fn resource_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        for child in self.inner.all_children() {
            if let Some(mcp) = child.mcp()
                && mcp.resource_exists(uri).await.unwrap_or(false)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(
            percent_decode("references/my%20file.md"),
            "references/my file.md"
        );
        assert_eq!(percent_decode("a%2F..%2Fb"), "a/../b");
        assert_eq!(percent_decode("bad%zz%4"), "bad%zz%4");
    }
}
