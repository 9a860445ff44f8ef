//! The configured MCP servers of one invocation: one `McpServerCap` per
//! enabled server, clients from one `SessionConnectionPool`, started in
//! parallel with a live status, listed once, and addressed by catalog name
//! (`mcp__<prefix-or-server>__<tool>`) through a lookup map — never by
//! taking a name apart.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use extpool_catalog::names::canonical_name;
use extpool_catalog::permissions::Permissions;
use extpool_catalog::shaping::{ResultLimits, shape};
use extpool_config::{Loaded, McpServerConfig, process_env};
use extpool_core::{
    Capability, ChangeStream, CommandEntry, CommandResource, McpResource, ResourceContent,
    ResourceEntry, SkillEntry, ToolEntry, ToolResult,
};
use extpool_mcp::McpServerCap;
use extpool_mcp::pool::{PoolConfig, SessionConnectionPool};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::{Map, Value};

use super::{ArgRow, CommandRow, ResourceRow, SkillRow, SourceRow, ToolRow};
use crate::progress::{Progress, Status};

/// How servers are started.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectOptions {}

/// What a server offered when it was listed.
#[derive(Default)]
struct Listing {
    tools: Vec<ToolEntry>,
    resources: Vec<ResourceEntry>,
    prompts: Vec<CommandEntry>,
    skills: Vec<SkillEntry>,
}

enum State {
    /// Configured, not started (listing commands that do not connect).
    Configured,
    /// `enabled: false`.
    Disabled,
    /// Connected and listed.
    Ready { listing: Listing, elapsed: Duration },
    /// Lazy: the declared tools only.
    Lazy { listing: Listing },
    /// Could not resolve, connect or list.
    Failed(String),
}

struct Entry {
    name: String,
    namespace: String,
    origin: String,
    config: McpServerConfig,
    cap: Option<Arc<McpServerCap>>,
    state: State,
}

/// The servers.
pub struct Servers {
    pool: SessionConnectionPool,
    entries: Vec<Entry>,
    permissions: Permissions,
    limits: ResultLimits,
    /// Catalog name → (entry index, tool index).
    tool_index: HashMap<String, (usize, usize)>,
    /// Catalog command name → (entry index, prompt index).
    prompt_index: HashMap<String, (usize, usize)>,
}

impl Servers {
    /// The configured servers, not yet connected.
    pub fn new(loaded: &Loaded, _options: ConnectOptions) -> Self {
        let pool = SessionConnectionPool::new(PoolConfig {
            max_clients: loaded.config.extensions.max_clients,
            ..PoolConfig::default()
        });
        let entries = loaded
            .config
            .mcp_servers
            .iter()
            .map(|(name, config)| {
                let origin = loaded
                    .server_sources
                    .get(name)
                    .map(|s| format!("{}:{}", s.file, s.pos.line))
                    .unwrap_or_default();
                Entry {
                    name: name.clone(),
                    namespace: config.prefix.clone().unwrap_or_else(|| name.clone()),
                    origin,
                    config: config.clone(),
                    cap: None,
                    state: if config.enabled {
                        State::Configured
                    } else {
                        State::Disabled
                    },
                }
            })
            .collect();
        let permissions = Permissions::new(loaded.config.permissions.clone())
            .unwrap_or_else(|_| Permissions::allow_all());
        Self {
            pool,
            entries,
            permissions,
            limits: loaded.config.extensions.result_limits,
            tool_index: HashMap::new(),
            prompt_index: HashMap::new(),
        }
        .with_resolved(loaded)
    }

    /// Resolves `${VAR}` and relative paths; a server that cannot be
    /// resolved is marked failed (the others are unaffected).
    fn with_resolved(mut self, loaded: &Loaded) -> Self {
        for entry in &mut self.entries {
            if !matches!(entry.state, State::Configured) {
                continue;
            }
            match loaded.resolve_server(&entry.name, &process_env) {
                Some(Ok(config)) => match McpServerCap::new(&entry.name, config, self.pool.clone())
                {
                    Ok(cap) => entry.cap = Some(Arc::new(cap)),
                    Err(e) => entry.state = State::Failed(e.to_string()),
                },
                Some(Err(e)) => entry.state = State::Failed(e.to_string()),
                None => entry.state = State::Failed("not configured".into()),
            }
        }
        self
    }

    /// Names of the servers that will be started.
    pub fn startable(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.config.enabled)
            .map(|e| e.name.clone())
            .collect()
    }

    /// Starts and lists every enabled server in parallel; one slow or
    /// failing server never holds up or breaks the others.
    pub async fn connect_all(&mut self, progress: &mut Progress) {
        let mut running = FuturesUnordered::new();
        for (i, entry) in self.entries.iter().enumerate() {
            match (&entry.state, &entry.cap) {
                (State::Failed(reason), _) => {
                    progress.update(
                        &entry.name,
                        Status::Failed {
                            reason: reason.clone(),
                        },
                    );
                }
                (State::Configured, Some(cap)) => {
                    progress.update(&entry.name, Status::Connecting);
                    let cap = cap.clone();
                    let lazy = entry.config.lazy;
                    running.push(async move {
                        let started = Instant::now();
                        let result = start_and_list(&cap, lazy).await;
                        (i, result, started.elapsed())
                    });
                }
                _ => {}
            }
        }
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        while !running.is_empty() {
            tokio::select! {
                Some((i, result, elapsed)) = running.next() => {
                    let entry = &mut self.entries[i];
                    let lazy = entry.config.lazy;
                    let (state, status) = match result {
                        Ok(listing) if lazy => {
                            let tools = listing.tools.len();
                            (State::Lazy { listing }, Status::Lazy { tools })
                        }
                        Ok(listing) => {
                            let tools = listing.tools.len();
                            (State::Ready { listing, elapsed }, Status::Ready { elapsed, tools })
                        }
                        Err(reason) => (State::Failed(reason.clone()), Status::Failed { reason }),
                    };
                    entry.state = state;
                    progress.update(&entry.name, status);
                }
                _ = ticker.tick() => progress.tick(),
            }
        }
        progress.finish();
        self.index();
    }

    fn index(&mut self) {
        self.tool_index.clear();
        self.prompt_index.clear();
        for (i, entry) in self.entries.iter().enumerate() {
            let Some(listing) = entry.listing() else {
                continue;
            };
            for (t, tool) in listing.tools.iter().enumerate() {
                if let Ok(name) = canonical_name(&entry.namespace, &tool.name) {
                    self.tool_index.entry(name).or_insert((i, t));
                }
            }
            for (p, prompt) in listing.prompts.iter().enumerate() {
                if let Ok(name) = canonical_name(&entry.namespace, &prompt.name) {
                    self.prompt_index.entry(name).or_insert((i, p));
                }
            }
        }
    }

    /// Every allowed tool.
    pub fn tools(&self) -> Vec<ToolRow> {
        self.tool_index
            .iter()
            .filter(|(name, _)| self.permissions.decide(name).is_allowed())
            .map(|(name, &(i, t))| {
                let entry = &self.entries[i];
                let tool = &entry.listing_tools()[t];
                ToolRow {
                    name: name.clone(),
                    server: entry.name.clone(),
                    tool: tool.name.clone(),
                    description: tool.description.clone(),
                    input_schema: tool.input_schema.as_ref().clone(),
                }
            })
            .collect()
    }

    /// Calls a tool by catalog name, with permissions and result shaping.
    pub async fn call(&self, name: &str, args: Map<String, Value>) -> Result<ToolResult> {
        let Some(&(i, t)) = self.tool_index.get(name) else {
            let hint = extpool_config::diagnostics::did_you_mean(
                name,
                self.tool_index.keys().map(String::as_str),
            )
            .map(|s| format!("; did you mean {s}?"))
            .unwrap_or_default();
            let failed: Vec<&str> = self
                .entries
                .iter()
                .filter(|e| matches!(e.state, State::Failed(_)))
                .map(|e| e.name.as_str())
                .collect();
            let note = if failed.is_empty() {
                String::new()
            } else {
                format!(" (servers that failed to start: {})", failed.join(", "))
            };
            bail!("unknown tool {name}{hint}{note}; see `extpool list tools`");
        };
        let decision = self.permissions.decide(name);
        if !decision.is_allowed() {
            bail!("tool {name} is denied by {}", decision.reason());
        }
        let entry = &self.entries[i];
        let tool = &entry.listing_tools()[t];
        let cap = entry
            .cap
            .as_ref()
            .ok_or_else(|| anyhow!("server {} is not running", entry.name))?;
        let result = cap.call_tool(&tool.name, args).await?;
        Ok(shape(
            name,
            result,
            tool.output_schema.is_some(),
            &self.limits,
        )?)
    }

    /// Every resource.
    pub fn resources(&self) -> Vec<ResourceRow> {
        let mut rows = Vec::new();
        for entry in &self.entries {
            if let Some(listing) = entry.listing() {
                rows.extend(listing.resources.iter().map(|r| ResourceRow {
                    uri: r.uri.clone(),
                    name: r.name.clone(),
                    server: entry.name.clone(),
                    mime_type: r.mime_type.clone(),
                    description: r.description.clone(),
                }));
            }
        }
        rows
    }

    /// Every MCP-hosted skill.
    pub fn skills(&self) -> Vec<SkillRow> {
        let mut rows = Vec::new();
        for entry in &self.entries {
            if let Some(listing) = entry.listing() {
                rows.extend(listing.skills.iter().map(|s| SkillRow {
                    name: s.name.clone(),
                    description: s.description.clone(),
                    uri: s.uri.clone(),
                    source: entry.name.clone(),
                    path: None,
                }));
            }
        }
        rows
    }

    /// Every prompt as a command `/mcp__<server>__<prompt>`.
    pub fn prompt_commands(&self) -> Vec<CommandRow> {
        self.prompt_index
            .iter()
            .map(|(name, &(i, p))| {
                let entry = &self.entries[i];
                let prompt = &entry.listing().map_or(&[][..], |l| &l.prompts[..])[p];
                CommandRow {
                    name: format!("/{name}"),
                    description: prompt.description.clone(),
                    arguments: prompt
                        .arguments
                        .iter()
                        .map(|a| ArgRow {
                            name: a.name.clone(),
                            required: a.required,
                        })
                        .collect(),
                    source: format!("prompt:{}", entry.name),
                }
            })
            .collect()
    }

    /// Reads a resource (or an MCP-hosted skill) from the server that has it.
    pub async fn read(&self, uri: &str) -> Result<Option<ResourceContent>> {
        let is_skill = uri.starts_with("skill://");
        for entry in &self.entries {
            let (Some(listing), Some(cap)) = (entry.listing(), &entry.cap) else {
                continue;
            };
            let listed = listing.resources.iter().any(|r| r.uri == uri)
                || listing
                    .skills
                    .iter()
                    .any(|s| uri.starts_with(s.uri.trim_end_matches("SKILL.md")));
            if !listed {
                continue;
            }
            let content = if is_skill {
                match cap.skills() {
                    Some(s) => s.read_skill(uri).await?,
                    None => None,
                }
            } else {
                cap.read_resource(uri).await?
            };
            if content.is_some() {
                return Ok(content);
            }
        }
        // Not listed (a templated resource): ask each ready server.
        for entry in &self.entries {
            let (Some(_), Some(cap)) = (entry.listing(), &entry.cap) else {
                continue;
            };
            if !is_skill && cap.resource_exists(uri).await.unwrap_or(false) {
                return Ok(cap.read_resource(uri).await?);
            }
        }
        Ok(None)
    }

    /// Renders prompt command `name` (`mcp__<server>__<prompt>`).
    pub async fn run_prompt(&self, name: &str, args: &[String]) -> Result<Option<String>> {
        let Some(&(i, p)) = self.prompt_index.get(name) else {
            return Ok(None);
        };
        let entry = &self.entries[i];
        let Some(listing) = entry.listing() else {
            return Ok(None);
        };
        let cap = entry
            .cap
            .as_ref()
            .ok_or_else(|| anyhow!("server {} is not running", entry.name))?;
        let prompt = &listing.prompts[p];
        Ok(Some(cap.get_command(&prompt.name, args).await?))
    }

    /// Change streams of every running server.
    pub fn change_streams(&self) -> Vec<ChangeStream> {
        self.entries
            .iter()
            .filter_map(|e| e.cap.as_ref())
            .filter_map(|c| c.observable().and_then(|o| o.on_change()))
            .collect()
    }

    /// Source rows.
    pub fn source_rows(&self) -> Vec<SourceRow> {
        self.entries
            .iter()
            .map(|e| {
                let (state, detail) = match &e.state {
                    State::Configured => ("configured".to_owned(), transport(&e.config)),
                    State::Disabled => ("disabled".to_owned(), transport(&e.config)),
                    State::Ready { listing, elapsed } => (
                        "ready".to_owned(),
                        format!(
                            "{} tools, {} resources, {} prompts ({} ms)",
                            listing.tools.len(),
                            listing.resources.len(),
                            listing.prompts.len(),
                            elapsed.as_millis()
                        ),
                    ),
                    State::Lazy { listing } => (
                        "lazy".to_owned(),
                        format!("{} declared tools", listing.tools.len()),
                    ),
                    State::Failed(reason) => ("failed".to_owned(), reason.clone()),
                };
                SourceRow {
                    kind: "server",
                    name: e.name.clone(),
                    state,
                    detail,
                    origin: e.origin.clone(),
                }
            })
            .collect()
    }

    /// Ends every capability and closes the pool's connections.
    pub async fn shutdown(self) {
        for entry in &self.entries {
            if let Some(cap) = &entry.cap {
                let _ = cap.shutdown().await;
            }
        }
        self.pool.shutdown().await;
    }
}

impl Entry {
    fn listing(&self) -> Option<&Listing> {
        match &self.state {
            State::Ready { listing, .. } | State::Lazy { listing } => Some(listing),
            _ => None,
        }
    }

    fn listing_tools(&self) -> &[ToolEntry] {
        self.listing().map_or(&[][..], |l| &l.tools[..])
    }
}

/// How a server is reached, for `list servers` (no secrets: no env, no headers).
pub fn transport(config: &McpServerConfig) -> String {
    match (&config.command, &config.url) {
        (Some(cmd), _) => {
            let mut s = format!("stdio: {cmd}");
            for a in config.args.iter().take(4) {
                s.push(' ');
                s.push_str(a);
            }
            if config.args.len() > 4 {
                s.push_str(" …");
            }
            s
        }
        (None, Some(url)) => format!("http: {url}"),
        (None, None) => "no transport".into(),
    }
}

async fn start_and_list(cap: &McpServerCap, lazy: bool) -> Result<Listing, String> {
    let prefix = format!("{}: ", cap.id());
    let text = |e: extpool_core::ExtensionError| {
        let s = e.to_string();
        s.strip_prefix(&prefix).map(str::to_owned).unwrap_or(s)
    };
    cap.start().await.map_err(text)?;
    let tools = cap.list_tools().await.map_err(text)?;
    if lazy {
        return Ok(Listing {
            tools,
            ..Listing::default()
        });
    }
    // Servers without resources or prompts answer with an error or nothing:
    // that is an empty list, not a failure of the server.
    let resources = cap.list_resources().await.unwrap_or_default();
    let prompts = cap.list_commands().await.unwrap_or_default();
    let skills = match cap.skills() {
        Some(s) => s.list_skills().await.unwrap_or_default(),
        None => Vec::new(),
    };
    Ok(Listing {
        tools,
        resources,
        prompts,
        skills,
    })
}
