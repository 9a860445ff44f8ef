//! Skills, resources and instructions: the skills a view sees, `skill://`
//! and MCP resource URIs read, what visible capabilities add to the
//! system prompt, and their `before_model_request` hooks.

use std::sync::Arc;

use extpool_catalog::CatalogRevision;
use extpool_core::{Capability, ExtUri, ResolveError, ResourceContent, TurnContext};

use super::View;
use crate::error::HostError;
use crate::info::{InstructionInfo, SkillInfo};

impl View {
    /// Every skill visible here, from the revision published now: local
    /// skills first, then those servers host, each by name; a name is
    /// listed once (the revision's rule: local skills win).
    pub fn skills(&self) -> Vec<SkillInfo> {
        let manager = &self.inner.host.manager;
        let plugins = self.inner.host.plugins.as_ref();
        let mut rows: Vec<SkillInfo> = self
            .revision()
            .all_skills()
            .into_iter()
            .map(|s| {
                let local = (s.server.as_ref() == crate::shared::SKILLS_ID)
                    .then(|| manager.local_skill(&s.entry.name))
                    .flatten();
                let plugin = (s.server.as_ref() == crate::plugins::PLUGIN_SKILLS_ID)
                    .then(|| plugins.and_then(|p| p.skills.get(&s.entry.name)))
                    .flatten();
                let source = match (&local, &plugin) {
                    (Some(_), _) => "local".to_owned(),
                    (_, Some(_)) => "plugin".to_owned(),
                    _ => s.server.to_string(),
                };
                SkillInfo {
                    name: s.entry.name.clone(),
                    description: s.entry.description.clone(),
                    uri: s.entry.uri.clone(),
                    source,
                    path: local
                        .map(|skill| skill.dir.clone())
                        .or_else(|| plugin.as_ref().map(|p| p.dir.clone())),
                    plugin: plugin.map(|p| p.plugin),
                }
            })
            .collect();
        rows.sort_by(|a, b| (a.path.is_none(), &a.name).cmp(&(b.path.is_none(), &b.name)));
        rows
    }

    /// Reads a `skill://` URI (local skills first, then MCP-hosted ones) or
    /// any MCP resource URI (from the server that lists it in the pinned
    /// revision, else from whichever visible server has it), through the
    /// guardrails as its twin `ReadMcpResource` call (a local skill's
    /// files, the user's own, are read as they are). A `ui://` view of MCP
    /// Apps is read from the server whose tool names it.
    pub async fn read(&self, uri: &str) -> Result<ResourceContent, HostError> {
        self.check_open()?;
        let rev = self.revision();
        let owner = match uri.starts_with("skill://") {
            true => Owner::Any,
            false => reading_owner(&rev, uri)?,
        };
        let guard = match self.is_local_skill(uri) {
            true => None,
            false => self.read_guard(owner.capability().map(|c| c.id()), uri),
        };
        let read = self.read_unguarded(owner, uri).await;
        match (read, guard) {
            (Ok(content), Some(guard)) => guard.content(content).await,
            (Err(e), Some(guard)) => Err(guard.error(e, &mut Vec::new())),
            (read, None) => read,
        }
    }

    /// Whether `uri` is a file of a local skill (not one a server hosts).
    fn is_local_skill(&self, uri: &str) -> bool {
        let Some(name) = uri
            .strip_prefix("skill://")
            .and_then(|rest| rest.split('/').next())
        else {
            return false;
        };
        let manager = &self.inner.host.manager;
        self.revision().all_skills().into_iter().any(|s| {
            s.entry.name == name
                && s.server.as_ref() == crate::shared::SKILLS_ID
                && manager.local_skill(name).is_some()
        })
    }

    /// Reads `uri` from `owner`, else (unless only the owner may serve it)
    /// from whichever visible capability has it.
    async fn read_unguarded(&self, owner: Owner, uri: &str) -> Result<ResourceContent, HostError> {
        let only = matches!(owner, Owner::Only(_));
        if let Some(cap) = owner.capability()
            && let Some(mcp) = cap.mcp()
        {
            match mcp.read_resource(uri).await {
                Ok(Some(content)) => return Ok(content),
                Ok(None) if only => {
                    return Err(HostError::Read(ResolveError::NotFound {
                        uri: uri.to_owned(),
                    }));
                }
                Ok(None) => {}
                Err(error) => {
                    return Err(HostError::Read(ResolveError::Capability {
                        capability: cap.id().to_owned(),
                        uri: uri.to_owned(),
                        error,
                    }));
                }
            }
        }
        let registry = &self.inner.host.registry;
        match registry.resolve_uri(uri, &self.inner.scope).await {
            Ok(content) => Ok(content),
            Err(ResolveError::NotFound { .. }) if uri.starts_with("skill://") => {
                Err(self.missing_skill(uri))
            }
            Err(e) => Err(e.into()),
        }
    }

    fn missing_skill(&self, uri: &str) -> HostError {
        let (skill, path) = match ExtUri::parse(uri) {
            Ok(parsed) => (parsed.authority.to_owned(), parsed.path.to_owned()),
            Err(_) => (String::new(), String::new()),
        };
        let skills = self.skills();
        if skills.iter().any(|s| s.name == skill) {
            return HostError::NoSkillFile {
                uri: uri.to_owned(),
                skill,
                path,
            };
        }
        let known: Vec<String> = skills.into_iter().map(|s| s.name).collect();
        HostError::UnknownSkill {
            uri: uri.to_owned(),
            skill,
            known: crate::error::known_skills(&known),
        }
    }

    /// What the visible capabilities contribute to the system prompt (the
    /// skill list, servers' instructions), in visibility order. A
    /// capability whose instructions fail is skipped (and logged).
    pub async fn instructions(&self) -> Vec<InstructionInfo> {
        let visible = self.visible().to_vec();
        let texts = futures::future::join_all(visible.iter().map(|c| c.instructions())).await;
        let mut out = Vec::new();
        for (cap, text) in visible.iter().zip(texts) {
            match text {
                Ok(Some(text)) => out.push(InstructionInfo {
                    source: cap.id().to_owned(),
                    text,
                }),
                Ok(None) => {}
                Err(e) => tracing::warn!(capability = cap.id(), "instructions not collected: {e}"),
            }
        }
        out
    }

    /// Runs every visible capability's `before_model_request` hook (pool →
    /// session → agent → turn) on `ctx`: what a runtime calls before each
    /// model request of a turn (dynamic skill injection: always-active
    /// skills, matched skills). A hook that fails is logged and skipped.
    pub async fn before_model_request(&self, ctx: &mut TurnContext) -> Result<(), HostError> {
        self.check_open()?;
        for cap in self.visible().iter() {
            if let Err(e) = cap.before_model_request(ctx).await {
                tracing::warn!(capability = cap.id(), "before_model_request failed: {e}");
            }
        }
        Ok(())
    }
}

/// Where a URI is read from.
enum Owner {
    /// Only this server (a view of MCP Apps its tool names).
    Only(Arc<dyn Capability>),
    /// This server, which lists it, else any visible capability that has it.
    Listed(Arc<dyn Capability>),
    /// Any visible capability that has it.
    Any,
}

impl Owner {
    fn capability(&self) -> Option<&Arc<dyn Capability>> {
        match self {
            Self::Only(cap) | Self::Listed(cap) => Some(cap),
            Self::Any => None,
        }
    }
}

/// Where `uri` is read from in `rev` (or a parent): a `ui://` view of MCP
/// Apps only from the server whose tool names it (`_meta.ui.resourceUri`),
/// never another that lists the same URI — an error when tools of two
/// servers name it; any other URI (and a view no tool names) from the
/// first server that lists it, else from whichever has it.
fn reading_owner(rev: &CatalogRevision, uri: &str) -> Result<Owner, HostError> {
    let source = |server: &str| {
        rev.chain()
            .find_map(|r| r.source(server))
            .map(|s| s.capability.clone())
    };
    if uri.starts_with("ui://") {
        let mut naming: Vec<&str> = rev
            .all_tools()
            .filter(|t| crate::info::view_uri(t.entry.meta.as_ref()) == Some(uri))
            .map(|t| &*t.server)
            .collect();
        naming.sort_unstable();
        naming.dedup();
        match naming.as_slice() {
            [] => {}
            [server] => {
                return source(server).map(Owner::Only).ok_or_else(|| {
                    HostError::Read(ResolveError::NotFound {
                        uri: uri.to_owned(),
                    })
                });
            }
            servers => {
                return Err(HostError::Read(ResolveError::Capability {
                    capability: servers.join(", "),
                    uri: uri.to_owned(),
                    error: extpool_core::ExtensionError::Denied(format!(
                        "tools of more than one server ({}) name this view, so whose it is cannot be told; it is read from none",
                        servers.join(", ")
                    )),
                }));
            }
        }
    }
    let listed = rev
        .all_resources()
        .find(|r| r.entry.uri == uri)
        .and_then(|r| source(&r.server));
    Ok(listed.map_or(Owner::Any, Owner::Listed))
}
