//! Child capabilities of the skill manager: skill-embedded MCP servers
//! built through an injected factory, and the `allowed-tools` filter.
//!
//! The manager never creates MCP clients itself: the binary passes an
//! [`EmbeddedServerFactory`] that builds an `McpServerCap` (its client comes
//! from the shared connection pool, lazily). A factory failure, or a child
//! that fails later, costs the skill only that server's tools: the skill's
//! instructions, files and command keep working, and the failure is reported.

use std::sync::Arc;

use async_trait::async_trait;
use extpool_core::{
    BoxError, Capability, ChangeObservable, CircularCompositionError, CommandResource,
    ExtensionError, McpResource, ParentChain, ResourceContent, ResourceEntry,
    ResourceTemplateEntry, SkillResource, ToolEntry, ToolResult, TurnContext,
};
use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, DiagnosticCode};
use crate::skill::Skill;

/// Builds the capability of one MCP server a skill declares in `mcp_servers`.
///
/// Building must not connect (RFC: creation does no I/O); the capability
/// connects when its tools are first listed. The factory chooses the
/// child's id, which must be unique among the manager's children.
pub trait EmbeddedServerFactory: Send + Sync {
    /// The capability for server `server` of `skill`, configured by
    /// `config` (the frontmatter's value; `null` when the skill only names
    /// it). The skill gives its name and its directory (relative paths in
    /// `config` are the skill's own).
    fn build(
        &self,
        skill: &Skill,
        server: &str,
        config: &Value,
    ) -> Result<Arc<dyn Capability>, BoxError>;

    /// Whether `error`, returned by a call to a child, means the child's
    /// server is down (its tools are then hidden for a while) rather than
    /// a failure of that one call. The binary knows the MCP client's error
    /// types and can tell; the default trusts the generic variants.
    fn is_server_down(&self, error: &ExtensionError) -> bool {
        is_server_down_default(error)
    }
}

/// The default down-classification: [`ExtensionError::Unavailable`] and
/// [`ExtensionError::Timeout`].
pub fn is_server_down_default(error: &ExtensionError) -> bool {
    matches!(
        error,
        ExtensionError::Unavailable { .. } | ExtensionError::Timeout { .. }
    )
}

/// A skill's `allowed-tools`, applied to the tools of its embedded servers.
///
/// A tool of server `s` passes when an entry is `*`, the tool's name, its
/// namespaced name `mcp__s__tool`, the whole server (`mcp__s` or
/// `mcp__s__*`), or a prefix ending in `*` of either name. Entries for host
/// tools (`Read`, `Bash(git:*)`) match no MCP tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedTools {
    patterns: Vec<String>,
}

impl AllowedTools {
    /// The filter of these entries.
    pub fn new(patterns: Vec<String>) -> Self {
        Self { patterns }
    }

    /// Whether tool `tool` of server `server` passes.
    pub fn allows(&self, server: &str, tool: &str) -> bool {
        let full = format!("mcp__{server}__{tool}");
        let whole = format!("mcp__{server}");
        self.patterns.iter().any(|p| {
            let p = p.as_str();
            p == "*"
                || p == tool
                || p == full
                || p == whole
                || p.strip_suffix('*')
                    .is_some_and(|prefix| tool.starts_with(prefix) || full.starts_with(prefix))
        })
    }
}

/// A child whose tools pass through a skill's `allowed-tools`.
pub(crate) struct FilteredCap {
    inner: Arc<dyn Capability>,
    server: String,
    allowed: AllowedTools,
}

impl FilteredCap {
    fn filter(&self, tools: Vec<ToolEntry>) -> Vec<ToolEntry> {
        tools
            .into_iter()
            .filter(|t| self.allowed.allows(&self.server, &t.name))
            .collect()
    }
}

#[async_trait]
impl Capability for FilteredCap {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn toolset(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        Ok(self.filter(self.inner.toolset().await?))
    }

    async fn instructions(&self) -> Result<Option<String>, ExtensionError> {
        self.inner.instructions().await
    }

    async fn before_model_request(&self, ctx: &mut TurnContext) -> Result<(), ExtensionError> {
        self.inner.before_model_request(ctx).await
    }

    async fn start(&self) -> Result<(), ExtensionError> {
        self.inner.start().await
    }

    async fn shutdown(&self) -> Result<(), ExtensionError> {
        self.inner.shutdown().await
    }

    fn children(&self) -> Vec<Arc<dyn Capability>> {
        self.inner.children()
    }

    fn skills(&self) -> Option<&dyn SkillResource> {
        self.inner.skills()
    }

    fn mcp(&self) -> Option<&dyn McpResource> {
        self.inner.mcp().map(|_| self as &dyn McpResource)
    }

    fn commands(&self) -> Option<&dyn CommandResource> {
        self.inner.commands()
    }

    fn observable(&self) -> Option<&dyn ChangeObservable> {
        self.inner.observable()
    }
}

#[async_trait]
impl McpResource for FilteredCap {
    async fn list_tools(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        match self.inner.mcp() {
            Some(m) => Ok(self.filter(m.list_tools().await?)),
            None => Ok(Vec::new()),
        }
    }

    async fn call_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, ExtensionError> {
        if !self.allowed.allows(&self.server, name) {
            return Err(ExtensionError::Denied(format!(
                "tool {name:?} of server {:?} is not in the skill's allowed-tools",
                self.server
            )));
        }
        match self.inner.mcp() {
            Some(m) => m.call_tool(name, args).await,
            None => Err(ExtensionError::not_found("tool", name)),
        }
    }

    async fn list_resources(&self) -> Result<Vec<ResourceEntry>, ExtensionError> {
        match self.inner.mcp() {
            Some(m) => m.list_resources().await,
            None => Ok(Vec::new()),
        }
    }

    async fn read_resource(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        match self.inner.mcp() {
            Some(m) => m.read_resource(uri).await,
            None => Ok(None),
        }
    }

    async fn resource_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        match self.inner.mcp() {
            Some(m) => m.resource_exists(uri).await,
            None => Ok(false),
        }
    }

    async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplateEntry>, ExtensionError> {
        match self.inner.mcp() {
            Some(m) => m.list_resource_templates().await,
            None => Ok(Vec::new()),
        }
    }

    async fn complete(&self, request: Value) -> Result<Option<Value>, ExtensionError> {
        match self.inner.mcp() {
            Some(m) => m.complete(request).await,
            None => Ok(None),
        }
    }

    async fn subscribe(&self, uri: &str, on: bool) -> Result<bool, ExtensionError> {
        match self.inner.mcp() {
            Some(m) => m.subscribe(uri, on).await,
            None => Ok(false),
        }
    }

    fn resource_updates(&self) -> Option<futures::stream::BoxStream<'static, String>> {
        self.inner.mcp()?.resource_updates()
    }

    fn extensions(&self) -> Map<String, Value> {
        self.inner.mcp().map(|m| m.extensions()).unwrap_or_default()
    }

    async fn set_log_level(&self, level: &str) -> Result<bool, ExtensionError> {
        match self.inner.mcp() {
            Some(m) => m.set_log_level(level).await,
            None => Ok(false),
        }
    }
}

/// One built skill-embedded server.
#[derive(Clone)]
pub(crate) struct Embedded {
    pub skill: String,
    pub server: String,
    pub config: Value,
    pub allowed: Option<Vec<String>>,
    /// The child as the manager exposes it (filtered when the skill has `allowed-tools`).
    pub cap: Arc<dyn Capability>,
}

/// Checks that `cap` and its subtree can sit under `chain`.
pub(crate) fn check_subtree(
    chain: &ParentChain,
    cap: &Arc<dyn Capability>,
) -> Result<usize, CircularCompositionError> {
    let sub = chain.child(cap.id())?;
    let mut deepest = sub.depth();
    for child in cap.children() {
        deepest = deepest.max(check_subtree(&sub, &child)?);
    }
    Ok(deepest)
}

/// Builds the embedded servers of `skills`, reusing `previous` children whose
/// declaration did not change. Returns the children and the problems.
pub(crate) fn build_embedded(
    factory: Option<&dyn EmbeddedServerFactory>,
    chain: &ParentChain,
    max_depth: usize,
    taken_ids: &[String],
    skills: &[Arc<Skill>],
    previous: &[Embedded],
) -> (Vec<Embedded>, Vec<Diagnostic>) {
    let mut out: Vec<Embedded> = Vec::new();
    let mut diagnostics = Vec::new();
    for skill in skills {
        for spec in &skill.meta.mcp_servers {
            let problem = |message: String| {
                Diagnostic::error(
                    DiagnosticCode::EmbeddedServer,
                    &skill.skill_md,
                    None,
                    message,
                )
            };
            if let Some(prev) = previous.iter().find(|p| {
                p.skill == skill.meta.name
                    && p.server == spec.name
                    && p.config == spec.config
                    && p.allowed == skill.meta.allowed_tools
            }) {
                out.push(prev.clone());
                continue;
            }
            let Some(factory) = factory else {
                diagnostics.push(
                    problem(format!(
                        "MCP server '{}' is declared but no embedded-server factory is configured; its tools are unavailable",
                        spec.name
                    ))
                    .with_severity(crate::Severity::Warning),
                );
                continue;
            };
            let built = match factory.build(skill, &spec.name, &spec.config) {
                Ok(cap) => cap,
                Err(e) => {
                    tracing::warn!(skill = %skill.meta.name, server = %spec.name, error = %e, "embedded MCP server not built");
                    diagnostics.push(problem(format!(
                        "MCP server '{}' could not be set up: {e}; the skill is usable without its tools",
                        spec.name
                    )));
                    continue;
                }
            };
            let id = built.id().to_owned();
            if taken_ids.contains(&id) || out.iter().any(|e| e.cap.id() == id) {
                diagnostics.push(problem(format!(
                    "MCP server '{}' has id '{id}', already used by another child; not added",
                    spec.name
                )));
                continue;
            }
            match check_subtree(chain, &built) {
                Ok(depth) if depth > max_depth => {
                    tracing::warn!(child = %id, depth, max_depth, "composition deeper than allowed");
                    diagnostics.push(
                        problem(format!(
                            "MCP server '{}' nests {depth} levels deep, beyond extensions.max_composition_depth ({max_depth}); it is added, but deep composition can hide what runs",
                            spec.name
                        ))
                        .with_severity(crate::Severity::Warning),
                    );
                }
                Ok(_) => {}
                Err(e) => {
                    diagnostics.push(problem(format!(
                        "MCP server '{}' not added: {e}",
                        spec.name
                    )));
                    continue;
                }
            }
            let cap: Arc<dyn Capability> = match &skill.meta.allowed_tools {
                Some(allowed) => Arc::new(FilteredCap {
                    inner: built,
                    server: spec.name.clone(),
                    allowed: AllowedTools::new(allowed.clone()),
                }),
                None => built,
            };
            out.push(Embedded {
                skill: skill.meta.name.clone(),
                server: spec.name.clone(),
                config: spec.config.clone(),
                allowed: skill.meta.allowed_tools.clone(),
                cap,
            });
        }
    }
    (out, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_tools_patterns() {
        let a = AllowedTools::new(vec![
            "Read".into(),
            "Bash(git:*)".into(),
            "create_issue".into(),
            "mcp__github__list_*".into(),
            "mcp__search".into(),
        ]);
        assert!(a.allows("github", "create_issue"));
        assert!(a.allows("github", "list_repos"));
        assert!(!a.allows("github", "delete_repo"));
        assert!(a.allows("search", "anything"));
        assert!(!a.allows("other", "list_repos"));
        assert!(AllowedTools::new(vec!["*".into()]).allows("x", "y"));
        assert!(!AllowedTools::new(vec!["Read".into()]).allows("x", "Reader"));
    }
}
