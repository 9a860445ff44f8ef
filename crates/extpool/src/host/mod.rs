//! The extension host of one CLI invocation: the configured MCP servers
//! (connected in parallel with a live status) and the skills, behind the
//! operations the commands need — list, call, read, run, watch.
//!
//! Commands never talk to a client or a file directly; they go through
//! [`Host`], which is the one place that knows how the library crates fit
//! together.

mod catalog;
mod lazy;
mod servers;
mod skills;

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use std::sync::Arc;

use extpool_catalog::{CommandKind, ReconcileState};
use extpool_config::diagnostics::display_path;
use extpool_config::{Loaded, Places};
use extpool_core::{
    CommandEntry, CommandResource, ResolveError, Scope, ScopeLevel, SkillEntry, SkillResource,
};
use extpool_core::{ResourceContent, ToolResult};
use extpool_skills::SkillManagerCap;
use serde::Serialize;
use serde_json::{Map, Value};

pub use catalog::CliCatalog;
pub use servers::{ConnectOptions, Servers, transport};
pub use skills::LocalSkills;

use crate::progress::Progress;

/// Id of the skill manager in the registry.
const SKILLS_ID: &str = "skills";

/// The `server` of the catalog's built-in tools in listings.
const BUILTIN: &str = "builtin";

/// The loop state as one word.
fn reconcile_state(state: &ReconcileState) -> String {
    match state {
        ReconcileState::NotStarted => "not started".into(),
        ReconcileState::Idle => "idle".into(),
        ReconcileState::Pending => "pending".into(),
        ReconcileState::Reconciling => "reconciling".into(),
        ReconcileState::RetryScheduled { in_ms } => format!("retry in {in_ms} ms"),
        ReconcileState::Stopped => "stopped".into(),
        _ => "unknown".into(),
    }
}

/// A tool as listed.
#[derive(Debug, Clone, Serialize)]
pub struct ToolRow {
    /// Catalog name, `mcp__<server>__<tool>`.
    pub name: String,
    /// The server.
    pub server: String,
    /// The tool's own name.
    pub tool: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
}

/// A skill as listed.
#[derive(Debug, Clone, Serialize)]
pub struct SkillRow {
    /// Skill name.
    pub name: String,
    /// Description.
    pub description: String,
    /// `skill://<name>/SKILL.md`.
    pub uri: String,
    /// `local` or the MCP server hosting it.
    pub source: String,
    /// The skill directory (local skills), as shown to the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A command as listed.
#[derive(Debug, Clone, Serialize)]
pub struct CommandRow {
    /// Name with the leading `/`.
    pub name: String,
    /// Description.
    pub description: String,
    /// Argument names (required ones first as declared).
    pub arguments: Vec<ArgRow>,
    /// `skill` or `prompt:<server>`.
    pub source: String,
}

/// One argument of a command.
#[derive(Debug, Clone, Serialize)]
pub struct ArgRow {
    /// Name.
    pub name: String,
    /// Required.
    pub required: bool,
}

/// A resource as listed.
#[derive(Debug, Clone, Serialize)]
pub struct ResourceRow {
    /// URI.
    pub uri: String,
    /// Name.
    pub name: String,
    /// The server.
    pub server: String,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Description.
    pub description: String,
}

/// A configured source and its state.
#[derive(Debug, Clone, Serialize)]
pub struct SourceRow {
    /// `server` or `skills`.
    pub kind: &'static str,
    /// Server name, or the skill root.
    pub name: String,
    /// `ready`, `failed`, `disabled`, `lazy`, `configured`, `found`, `missing`.
    pub state: String,
    /// Tools, skill count, or the failure reason.
    pub detail: String,
    /// Where it is configured.
    pub origin: String,
    /// The catalog revision built from this source's last good listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// True when the last listing failed and the catalog keeps the previous one.
    pub stale: bool,
    /// The error of the last failed listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The host.
pub struct Host {
    /// The configuration.
    pub loaded: Loaded,
    /// Where configs and skills are looked for.
    pub places: Places,
    /// MCP servers.
    pub servers: Servers,
    /// Local skills.
    pub skills: LocalSkills,
    /// The registry and catalog over the started servers.
    pub catalog: CliCatalog,
    /// The skill manager (local skills + MCP-hosted ones of its child
    /// servers), registered in the registry under its own scope.
    pub manager: Arc<SkillManagerCap>,
    /// The scope that sees the skill manager, which answers every skill
    /// read and skill command (local skills first, then its children's).
    pub skills_scope: Scope,
    /// Skills as the manager lists them.
    skill_list: Vec<SkillEntry>,
    /// The manager's commands (local user-invocable skills).
    skill_commands: Vec<CommandEntry>,
}

impl Host {
    /// Discovers skills and, with `connect`, connects every enabled server
    /// (reporting to `progress`).
    pub async fn open(
        loaded: Loaded,
        places: Places,
        connect: Option<&mut Progress>,
        options: ConnectOptions,
    ) -> Result<Self> {
        let skills = LocalSkills::discover(&loaded, &places);
        let mut servers = Servers::new(&loaded, options);
        if let Some(progress) = connect {
            servers.connect_all(progress).await;
        }
        let catalog = CliCatalog::open(&loaded, servers.started_caps()).await?;
        let mut builder = SkillManagerCap::builder(SKILLS_ID)
            .discovered(skills.discovery.clone())
            .watch(false);
        for child in servers.skill_children() {
            builder = builder.child(child);
        }
        let manager = Arc::new(builder.build()?);
        // Its own pool scope: the catalog does not list it (the servers'
        // tools and prompts are already there, namespaced), and skill
        // URIs resolve through it alone, so local skills win name clashes.
        let skills_scope = Scope::pool("cli-skills");
        catalog
            .registry
            .register(manager.clone(), ScopeLevel::Pool, &skills_scope, None)?;
        let skill_list = manager.list_skills().await.unwrap_or_default();
        let skill_commands = manager
            .list_commands()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|c| manager.local_skill(&c.name).is_some())
            .collect();
        Ok(Self {
            loaded,
            places,
            servers,
            skills,
            catalog,
            manager,
            skills_scope,
            skill_list,
            skill_commands,
        })
    }

    /// A path as shown to the user.
    pub fn show_path(&self, path: &std::path::Path) -> String {
        display_path(path, Some(&self.places.cwd), self.places.home.as_deref())
    }

    /// Every tool of the current catalog revision: remote tools sorted by
    /// catalog name, then the catalog's built-in tools.
    pub fn tools(&self) -> Vec<ToolRow> {
        let rev = self.catalog.catalog.current();
        let mut rows: Vec<ToolRow> = rev
            .all_tools()
            .map(|t| ToolRow {
                name: t.name.clone(),
                server: t.server.to_string(),
                tool: t.original().to_owned(),
                description: t.entry.description.clone(),
                input_schema: t.entry.input_schema.as_ref().clone(),
            })
            .collect();
        rows.sort_by(|a, b| a.name.cmp(&b.name));
        rows.extend(rev.all_builtins().into_iter().map(|b| {
            let entry = b.entry();
            ToolRow {
                name: b.name().to_owned(),
                server: BUILTIN.to_owned(),
                tool: b.name().to_owned(),
                description: entry.description.clone(),
                input_schema: entry.input_schema.as_ref().clone(),
            }
        }));
        rows
    }

    /// Calls a tool by catalog name (or alias, or built-in name) on the
    /// current revision, pinned for the call.
    pub async fn call(&self, name: &str, args: Map<String, Value>) -> Result<ToolResult> {
        let rev = self.catalog.catalog.current();
        match rev.call(name, args).await {
            Ok(result) => Ok(result),
            Err(e) if e.is_unknown_tool() => {
                let known: Vec<String> = self.tools().into_iter().map(|t| t.name).collect();
                let hint = extpool_config::diagnostics::did_you_mean(
                    name,
                    known.iter().map(String::as_str),
                )
                .map(|s| format!("; did you mean {s}?"))
                .unwrap_or_default();
                let failed = self.servers.failed();
                let note = if failed.is_empty() {
                    String::new()
                } else {
                    format!(" (servers that failed to start: {})", failed.join(", "))
                };
                bail!("unknown tool {name}{hint}{note}; see `extpool list tools`")
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Every skill as the skill manager merges them: local first, then
    /// MCP-hosted ones whose names are not taken, sorted by name within each.
    pub fn skill_rows(&self) -> Vec<SkillRow> {
        let hosted = self.servers.skills();
        let mut local: Vec<SkillRow> = Vec::new();
        let mut remote: Vec<SkillRow> = Vec::new();
        for entry in &self.skill_list {
            if local.iter().chain(&remote).any(|r| r.name == entry.name) {
                continue;
            }
            if let Some(skill) = self.manager.local_skill(&entry.name) {
                local.push(SkillRow {
                    name: entry.name.clone(),
                    description: entry.description.clone(),
                    uri: entry.uri.clone(),
                    source: "local".into(),
                    path: Some(self.show_path(&skill.dir)),
                });
            } else {
                let source = hosted
                    .iter()
                    .find(|h| h.uri == entry.uri)
                    .map_or_else(|| "mcp".to_owned(), |h| h.source.clone());
                remote.push(SkillRow {
                    name: entry.name.clone(),
                    description: entry.description.clone(),
                    uri: entry.uri.clone(),
                    source,
                    path: None,
                });
            }
        }
        local.sort_by(|a, b| a.name.cmp(&b.name));
        remote.sort_by(|a, b| a.name.cmp(&b.name));
        local.extend(remote);
        local
    }

    /// Every command: skills first, then MCP prompts.
    pub fn commands(&self) -> Vec<CommandRow> {
        let mut rows: Vec<CommandRow> = self
            .skill_commands
            .iter()
            .map(|c| CommandRow {
                name: format!("/{}", c.name),
                description: c.description.clone(),
                arguments: c
                    .arguments
                    .iter()
                    .map(|a| ArgRow {
                        name: a.name.clone(),
                        required: a.required,
                    })
                    .collect(),
                source: "skill".into(),
            })
            .collect();
        rows.sort_by(|a, b| a.name.cmp(&b.name));
        let rev = self.catalog.catalog.current();
        rows.extend(rev.all_commands().map(|c| {
            CommandRow {
                name: format!("/{}", c.name),
                description: c.entry.description.clone(),
                arguments: c
                    .entry
                    .arguments
                    .iter()
                    .map(|a| ArgRow {
                        name: a.name.clone(),
                        required: a.required,
                    })
                    .collect(),
                source: match c.kind {
                    CommandKind::McpPrompt => format!("prompt:{}", c.server),
                    _ => "skill".to_owned(),
                },
            }
        }));
        rows
    }

    /// Every resource of every ready server.
    pub fn resources(&self) -> Vec<ResourceRow> {
        let rev = self.catalog.catalog.current();
        let mut rows: Vec<ResourceRow> = rev
            .all_resources()
            .map(|r| ResourceRow {
                uri: r.entry.uri.clone(),
                name: r.entry.name.clone(),
                server: r.server.to_string(),
                mime_type: r.entry.mime_type.clone(),
                description: r.entry.description.clone(),
            })
            .collect();
        rows.sort_by(|a, b| (&a.server, &a.uri).cmp(&(&b.server, &b.uri)));
        rows
    }

    /// Reads a `skill://` URI (local skills first, then MCP-hosted) or an
    /// MCP resource URI.
    pub async fn read(&self, uri: &str) -> Result<ResourceContent> {
        if uri.starts_with("skill://") {
            match self
                .catalog
                .registry
                .resolve_uri(uri, &self.skills_scope)
                .await
            {
                Ok(content) => return Ok(content),
                Err(ResolveError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(content) = self.servers.read(uri).await? {
            return Ok(content);
        }
        if uri.starts_with("skill://") {
            let known: Vec<String> = self.skill_rows().into_iter().map(|s| s.name).collect();
            bail!(
                "no skill for {uri}; known skills: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            );
        }
        bail!("no server has a resource {uri} (see `extpool list resources`)")
    }

    /// Renders command `name` (without `/`) with `args`.
    pub async fn run(&self, name: &str, args: &[String]) -> Result<String> {
        if let Some(skill) = self.manager.local_skill(name) {
            if !skill.meta.user_invocable {
                bail!("skill {name:?} is not user-invocable (user-invocable: false)");
            }
            let commands = self
                .catalog
                .registry
                .get_command_resources(&self.skills_scope)
                .into_iter()
                .find(|c| std::ptr::addr_eq(Arc::as_ptr(c), Arc::as_ptr(&self.manager)));
            if let Some(cap) = commands
                && let Some(commands) = cap.commands()
            {
                return Ok(commands.get_command(name, args).await?);
            }
        }
        let rev = self.catalog.catalog.current();
        match rev.render_command(name, args).await {
            Ok(text) => return Ok(text),
            Err(e) if e.is_unknown() => {}
            Err(e) => return Err(e.into()),
        }
        let known: Vec<String> = self.commands().into_iter().map(|c| c.name).collect();
        let hint = extpool_config::diagnostics::did_you_mean(
            &format!("/{name}"),
            known.iter().map(String::as_str),
        )
        .map(|s| format!("; did you mean {s}?"))
        .unwrap_or_default();
        bail!("unknown command /{name}{hint} (see `extpool list commands`)")
    }

    /// Servers and skill roots with their state.
    pub fn sources(&self) -> Vec<SourceRow> {
        let status = self.catalog.status();
        let mut rows = self.servers.source_rows(&status);
        let mut per_root: BTreeMap<std::path::PathBuf, usize> = BTreeMap::new();
        for s in self.skills.skills() {
            *per_root.entry(s.root.clone()).or_default() += 1;
        }
        for root in self.skills.roots() {
            let count = per_root.get(&root).copied().unwrap_or(0);
            let exists = root.is_dir();
            if !exists && !self.loaded.skill_paths.contains(&root) {
                continue;
            }
            rows.push(SourceRow {
                kind: "skills",
                name: self.show_path(&root),
                state: if exists { "found" } else { "missing" }.into(),
                detail: format!("{count} skill{}", if count == 1 { "" } else { "s" }),
                origin: if self.loaded.skill_paths.contains(&root) {
                    "skills.paths".into()
                } else {
                    "default root".into()
                },
                revision: None,
                stale: false,
                last_error: None,
            });
        }
        rows.push(SourceRow {
            kind: "catalog",
            name: "catalog".into(),
            state: reconcile_state(&status.state),
            detail: format!(
                "revision {}, {} reconciliation{}, {} failed",
                status.revision,
                status.reconciliations,
                if status.reconciliations == 1 { "" } else { "s" },
                status.failures
            ),
            origin: String::new(),
            revision: Some(status.revision),
            stale: status.any_stale(),
            last_error: None,
        });
        rows
    }

    /// Stops the catalog and closes every connection.
    pub async fn shutdown(self) {
        self.catalog.shutdown().await;
        self.servers.shutdown().await;
    }
}
