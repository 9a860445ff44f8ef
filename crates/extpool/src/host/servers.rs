//! The configured MCP servers of one invocation: one `McpServerCap` per
//! enabled server, clients from one `SessionConnectionPool`, started in
//! parallel with a live status, listed once, and addressed by catalog name
//! (`mcp__<prefix-or-server>__<tool>`) through a lookup map — never by
//! taking a name apart.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use extpool_catalog::CatalogStatus;
use extpool_config::{Loaded, McpServerConfig, process_env};
use extpool_core::{
    Capability, McpResource, ResourceContent, ResourceEntry, SkillEntry, ToolEntry,
};
use extpool_mcp::McpServerCap;
use extpool_mcp::pool::{PoolConfig, SessionConnectionPool};
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::lazy::LazyServer;
use super::{SkillRow, SourceRow};
use crate::progress::{Progress, Status};

/// How servers are started.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectOptions {}

/// What a server offered when it was listed.
#[derive(Default)]
struct Listing {
    tools: Vec<ToolEntry>,
    resources: Vec<ResourceEntry>,
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
    origin: String,
    config: McpServerConfig,
    cap: Option<Arc<McpServerCap>>,
    state: State,
}

/// The servers.
pub struct Servers {
    pool: SessionConnectionPool,
    entries: Vec<Entry>,
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
        Self { pool, entries }.with_resolved(loaded)
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

    /// The capabilities of the servers that started (or are lazy), for the
    /// catalog's registry.
    pub fn started_caps(&self) -> Vec<Arc<dyn Capability>> {
        self.entries
            .iter()
            .filter(|e| matches!(e.state, State::Ready { .. } | State::Lazy { .. }))
            .filter_map(|e| {
                let cap = e.cap.clone()?;
                Some(if e.config.lazy && !e.config.tools.is_empty() {
                    Arc::new(LazyServer(cap)) as Arc<dyn Capability>
                } else {
                    cap
                })
            })
            .collect()
    }

    /// The started, non-lazy servers: children of the skill manager, which
    /// lists and reads their hosted skills after the local ones.
    pub fn skill_children(&self) -> Vec<Arc<dyn Capability>> {
        self.entries
            .iter()
            .filter(|e| matches!(e.state, State::Ready { .. }))
            .filter_map(|e| e.cap.clone())
            .map(|c| c as Arc<dyn Capability>)
            .collect()
    }

    /// Names of the servers that failed to start.
    pub fn failed(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| matches!(e.state, State::Failed(_)))
            .map(|e| e.name.clone())
            .collect()
    }

    /// Source rows: the CLI's own start state for servers the catalog never
    /// saw (disabled, failed to start), the catalog's cached status for the others.
    pub fn source_rows(&self, status: &CatalogStatus) -> Vec<SourceRow> {
        self.entries
            .iter()
            .map(|e| {
                let mut revision = None;
                let mut stale = false;
                let mut last_error = None;
                let (state, detail) = match &e.state {
                    State::Configured => ("configured".to_owned(), transport(&e.config)),
                    State::Disabled => ("disabled".to_owned(), transport(&e.config)),
                    State::Failed(reason) => ("failed".to_owned(), reason.clone()),
                    State::Ready { .. } | State::Lazy { .. } => {
                        let lazy = matches!(e.state, State::Lazy { .. });
                        match status.source(&e.name) {
                            Some(s) => {
                                revision = s.revision;
                                stale = s.stale;
                                last_error = s.last_error.as_ref().map(|e| e.to_string());
                                if s.stale {
                                    ("stale".to_owned(), last_error.clone().unwrap_or_default())
                                } else if lazy {
                                    ("lazy".to_owned(), format!("{} declared tools", s.tools))
                                } else {
                                    let ms = match &e.state {
                                        State::Ready { elapsed, .. } => elapsed.as_millis(),
                                        _ => 0,
                                    };
                                    (
                                        "ready".to_owned(),
                                        format!(
                                            "{} tools, {} resources, {} prompts ({ms} ms)",
                                            s.tools, s.resources, s.commands
                                        ),
                                    )
                                }
                            }
                            None => ("pending".to_owned(), "not yet reconciled".to_owned()),
                        }
                    }
                };
                SourceRow {
                    kind: "server",
                    name: e.name.clone(),
                    state,
                    detail,
                    origin: e.origin.clone(),
                    revision,
                    stale,
                    last_error,
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
    let skills = match cap.skills() {
        Some(s) => s.list_skills().await.unwrap_or_default(),
        None => Vec::new(),
    };
    Ok(Listing {
        tools,
        resources,
        skills,
    })
}
