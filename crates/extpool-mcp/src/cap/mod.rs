//! [`McpServerCap`]: one MCP server as an extpool capability, implementing
//! `McpResource`, `SkillResource`, `CommandResource`, `ChangeObservable` and
//! `Capability` (RFC-0051 "McpServerCap").
//!
//! - **Client injection.** A client passed in is used as is; otherwise one
//!   is taken from the [`SessionConnectionPool`] on first need (and shared
//!   with every other capability for the same server config).
//! - **Lazy vs non-lazy.** Non-lazy (default): `start`/`toolset` connect, so
//!   the toolset is known when the agent is compiled. Lazy: the tool list
//!   comes from config (`tools:`) and the connection is made on the first
//!   call; a lazy server without declared tools lists from the server.
//! - **Caches.** Tool, resource, prompt and skill lists are cached and
//!   refilled when the server's `list_changed` (or a reconnect) moved the
//!   matching counter; `*_exists` checks only ever consult these caches.
//! - **Change events.** `tools/list_changed` → `tools_changed`;
//!   `resources/list_changed` → `resources_changed` and `skills_changed`
//!   (skills are resources); `prompts/list_changed` → `prompts_changed` and
//!   `commands_changed` (prompts are commands). `source_uri` is
//!   `mcp://<server>`.

mod cache;
mod events;
mod protocols;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwapOption;
use async_trait::async_trait;
use extpool_core::{
    Capability, ChangeKind, ChangeObservable, CommandEntry, CommandResource, ExtensionError,
    McpResource, SkillResource, ToolEntry,
};
use serde_json::Value;
use tokio::sync::watch;

use crate::client::McpClient;
use crate::config::McpServerConfig;
use crate::convert;
use crate::error::{ClientError, ConfigError};
use crate::name::ServerName;
use crate::pool::{PooledClient, SessionConnectionPool};
use crate::skills::{self, HostedSkill};

use cache::{Caches, ResourceIndex, cached, store};

/// A tool declared in config whose schema is not valid JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MCP server {server:?}: tool {tool:?} in `tools:` has an invalid input_schema: {reason}")]
pub struct StaticToolError {
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// Why.
    pub reason: String,
}

/// Why a capability could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CapError {
    /// The server config is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A statically declared tool is malformed.
    #[error(transparent)]
    StaticTool(#[from] StaticToolError),
}

enum Held {
    Pooled(PooledClient),
    Injected(McpClient),
}

impl Held {
    fn client(&self) -> &McpClient {
        match self {
            Held::Pooled(p) => p.client(),
            Held::Injected(c) => c,
        }
    }
}

/// The client a capability uses, published to its change streams.
#[derive(Clone)]
struct Attached {
    client: McpClient,
}

const SIGNALLED: [ChangeKind; 3] = [
    ChangeKind::ToolsChanged,
    ChangeKind::ResourcesChanged,
    ChangeKind::PromptsChanged,
];

impl Attached {
    fn new(client: McpClient) -> Self {
        Self { client }
    }
}

/// An MCP server as a capability (RFC-0051 `McpServerCap`).
pub struct McpServerCap {
    name: ServerName,
    config: Arc<McpServerConfig>,
    pool: Option<SessionConnectionPool>,
    held: ArcSwapOption<Held>,
    connecting: tokio::sync::Mutex<()>,
    attached: watch::Sender<Option<Attached>>,
    static_tools: Option<Arc<Vec<ToolEntry>>>,
    caches: Caches,
    shut: AtomicBool,
    /// Whether shutting down closes the pooled connection when no other
    /// capability leases it ([`McpServerCap::closing_when_released`]).
    close_when_released: bool,
}

impl std::fmt::Debug for McpServerCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerCap")
            .field("name", &self.name)
            .field("lazy", &self.config.lazy)
            .field("connected", &self.held.load().is_some())
            .finish()
    }
}

fn static_tools(
    name: &ServerName,
    config: &McpServerConfig,
) -> Result<Option<Arc<Vec<ToolEntry>>>, StaticToolError> {
    if !config.lazy || config.tools.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(config.tools.len());
    for tool in &config.tools {
        let schema = match &tool.input_schema {
            Some(text) => {
                let value: Value = serde_json::from_str(text).map_err(|e| StaticToolError {
                    server: name.to_string(),
                    tool: tool.name.clone(),
                    reason: e.to_string(),
                })?;
                if !value.is_object() {
                    return Err(StaticToolError {
                        server: name.to_string(),
                        tool: tool.name.clone(),
                        reason: "not a JSON object".into(),
                    });
                }
                value
            }
            None => serde_json::json!({"type": "object"}),
        };
        out.push(ToolEntry::new(&tool.name, &tool.description, schema));
    }
    Ok(Some(Arc::new(out)))
}

impl McpServerCap {
    fn build(
        name: ServerName,
        config: Arc<McpServerConfig>,
        pool: Option<SessionConnectionPool>,
        held: Option<Held>,
    ) -> Result<Self, CapError> {
        if let Err(problem) = config.transport() {
            return Err(ConfigError::Transport {
                server: name.to_string(),
                problem,
            }
            .into());
        }
        let static_tools = static_tools(&name, &config)?;
        let attached = watch::Sender::new(held.as_ref().map(|h| Attached::new(h.client().clone())));
        Ok(Self {
            name,
            config,
            pool,
            held: ArcSwapOption::new(held.map(Arc::new)),
            connecting: tokio::sync::Mutex::new(()),
            attached,
            static_tools,
            caches: Caches::default(),
            shut: AtomicBool::new(false),
            close_when_released: false,
        })
    }

    /// This capability owns its connection: when it shuts down, the pooled
    /// client closes (its process ends) unless another capability of the
    /// same server still leases it. For servers that belong to one session
    /// and must not outlive it; pool-level servers keep the default, where
    /// an idle connection stays open for the next user (RFC diagram 5).
    #[must_use]
    pub fn closing_when_released(mut self) -> Self {
        self.close_when_released = true;
        self
    }

    /// A capability whose client is taken from `pool` on first need.
    pub fn new(
        name: &str,
        config: McpServerConfig,
        pool: SessionConnectionPool,
    ) -> Result<Self, CapError> {
        let name = ServerName::new(name)?;
        Self::build(name, Arc::new(config), Some(pool), None)
    }

    /// A capability over an injected client (RFC "client injection").
    pub fn with_client(client: McpClient) -> Self {
        let name = client.name().clone();
        let config = Arc::new(client.config().clone());
        let static_tools = static_tools(&name, &config).ok().flatten();
        let attached = watch::Sender::new(Some(Attached::new(client.clone())));
        Self {
            name,
            config,
            pool: None,
            held: ArcSwapOption::new(Some(Arc::new(Held::Injected(client)))),
            connecting: tokio::sync::Mutex::new(()),
            attached,
            static_tools,
            caches: Caches::default(),
            shut: AtomicBool::new(false),
            close_when_released: false,
        }
    }

    /// A capability over a client already leased from a pool.
    pub fn with_pooled_client(client: PooledClient) -> Result<Self, CapError> {
        let name = client.name().clone();
        let config = Arc::new(client.config().clone());
        Self::build(name, config, None, Some(Held::Pooled(client)))
    }

    /// The server's name (also this capability's id).
    pub fn name(&self) -> &ServerName {
        &self.name
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The client, once attached (injected, or taken from the pool).
    pub fn client(&self) -> Option<McpClient> {
        self.held.load().as_ref().map(|h| h.client().clone())
    }

    /// What the server said it is at its latest connection (`serverInfo`:
    /// name, version, title, icons, website), as it said it; `None` before
    /// it connected or when it said nothing. Never connects.
    pub fn implementation(&self) -> Option<rmcp::model::Implementation> {
        self.client()?.server_info()?.server_info.clone()
    }

    /// The client, taking it from the pool when none is attached yet.
    pub async fn ensure_client(&self) -> Result<McpClient, ClientError> {
        if self.shut.load(Ordering::Acquire) {
            return Err(ClientError::Closed {
                server: self.name.clone(),
            });
        }
        // A pooled client closed behind our back (`pool.remove`) is replaced
        // from the pool; an injected one is the owner's to replace.
        let usable = |held: &Held| !(matches!(held, Held::Pooled(_)) && held.client().is_closed());
        if let Some(held) = self.held.load_full()
            && usable(&held)
        {
            return Ok(held.client().clone());
        }
        let _guard = self.connecting.lock().await;
        if let Some(held) = self.held.load_full()
            && usable(&held)
        {
            return Ok(held.client().clone());
        }
        let Some(pool) = &self.pool else {
            return Err(ClientError::Closed {
                server: self.name.clone(),
            });
        };
        // Boxed: connecting makes a large future, and every call's future
        // would carry (and move) it, though calls seldom connect.
        let leased = Box::pin(pool.get_client(&self.name, &self.config)).await?;
        let client = leased.client().clone();
        self.held.store(Some(Arc::new(Held::Pooled(leased))));
        self.attached
            .send_replace(Some(Attached::new(client.clone())));
        Ok(client)
    }

    /// True for a lazy server with declared tools that has not connected
    /// yet: its listings (resources, prompts, skills) are empty instead of
    /// connecting, so listing never starts it. Its first call connects, and
    /// the change stream then announces every kind, so a catalog re-lists.
    pub fn is_dormant(&self) -> bool {
        self.static_tools.is_some() && self.held.load().is_none()
    }

    /// Connects (unless lazy with declared tools) and counts the tools.
    pub async fn tool_count(&self) -> Result<usize, ClientError> {
        self.tools().await.map(|t| t.len())
    }

    fn err(&self, e: ClientError) -> ExtensionError {
        e.into_extension(self.name.as_str())
    }

    async fn tools(&self) -> Result<Arc<Vec<ToolEntry>>, ClientError> {
        if let Some(tools) = &self.static_tools {
            return Ok(tools.clone());
        }
        let client = self.ensure_client().await?;
        let epoch = client.signals().epoch(ChangeKind::ToolsChanged);
        if let Some(hit) = cached(&self.caches.tools, epoch) {
            return Ok(hit);
        }
        let tools = client.list_tools().await?;
        let entries = tools.into_iter().map(convert::tool_entry).collect();
        Ok(store(&self.caches.tools, epoch, entries))
    }

    async fn resource_index(&self) -> Result<Arc<ResourceIndex>, ClientError> {
        let client = self.ensure_client().await?;
        let epoch = client.signals().epoch(ChangeKind::ResourcesChanged);
        if let Some(hit) = cached(&self.caches.resources, epoch) {
            return Ok(hit);
        }
        let resources = client.list_resources().await?;
        let templates = client.list_resource_templates().await?;
        let index = ResourceIndex {
            resources: resources.iter().map(convert::resource_entry).collect(),
            templates: templates.iter().map(convert::template_entry).collect(),
        };
        Ok(store(&self.caches.resources, epoch, index))
    }

    async fn prompts(&self) -> Result<Arc<Vec<CommandEntry>>, ClientError> {
        let client = self.ensure_client().await?;
        let epoch = client.signals().epoch(ChangeKind::PromptsChanged);
        if let Some(hit) = cached(&self.caches.prompts, epoch) {
            return Ok(hit);
        }
        let prompts = client.list_prompts().await?;
        let entries = prompts.iter().map(convert::command_entry).collect();
        Ok(store(&self.caches.prompts, epoch, entries))
    }

    async fn skill_index(&self) -> Result<(McpClient, Arc<Vec<HostedSkill>>), ClientError> {
        let client = self.ensure_client().await?;
        let epoch = client.signals().epoch(ChangeKind::ResourcesChanged);
        if let Some(hit) = cached(&self.caches.skills, epoch) {
            return Ok((client, hit));
        }
        let index = skills::index(&client).await?;
        Ok((client.clone(), store(&self.caches.skills, epoch, index)))
    }

    /// The hosted skill owning `uri`, confirming unlisted SKILL.md URIs with `skills/get`.
    async fn skill_for(&self, uri: &str) -> Result<Option<(McpClient, HostedSkill)>, ClientError> {
        if !uri.starts_with("skill://") {
            return Ok(None);
        }
        let (client, index) = self.skill_index().await?;
        if let Some(skill) = skills::find(&index, uri) {
            return Ok(Some((client, skill.clone())));
        }
        match skills::confirm(&client, uri).await? {
            Some(skill) => {
                self.remember_skill(&client, skill.clone());
                Ok(Some((client, skill)))
            }
            None => Ok(None),
        }
    }

    fn remember_skill(&self, client: &McpClient, skill: HostedSkill) {
        let epoch = client.signals().epoch(ChangeKind::ResourcesChanged);
        let mut slot = self.caches.skills.lock();
        if let Some(c) = slot.as_mut().filter(|c| c.epoch == epoch) {
            let mut list: Vec<HostedSkill> = c
                .value
                .iter()
                .filter(|s| s.entry.uri != skill.entry.uri)
                .cloned()
                .collect();
            list.push(skill);
            c.value = Arc::new(list);
        }
    }
}

#[async_trait]
impl Capability for McpServerCap {
    fn id(&self) -> &str {
        self.name.as_str()
    }

    fn kind(&self) -> extpool_core::CapabilityKind {
        extpool_core::CapabilityKind::McpServer
    }

    async fn instructions(&self) -> Result<Option<String>, ExtensionError> {
        let client = if self.config.lazy {
            match self.client() {
                Some(c) => c,
                None => return Ok(None),
            }
        } else {
            self.ensure_client().await.map_err(|e| self.err(e))?
        };
        Ok(client
            .server_info()
            .and_then(|i| i.instructions.clone())
            .filter(|s| !s.trim().is_empty()))
    }

    async fn start(&self) -> Result<(), ExtensionError> {
        if self.config.lazy {
            return Ok(());
        }
        self.ensure_client()
            .await
            .map(drop)
            .map_err(|e| self.err(e))
    }

    async fn shutdown(&self) -> Result<(), ExtensionError> {
        self.shut.store(true, Ordering::Release);
        // Returns the lease: the pool owns the connection and decides when
        // it closes, unless this capability owns it.
        drop(self.held.swap(None));
        if self.close_when_released
            && let Some(pool) = &self.pool
        {
            pool.close_if_idle(&self.name, &self.config).await;
        }
        Ok(())
    }

    fn skills(&self) -> Option<&dyn SkillResource> {
        Some(self)
    }

    fn mcp(&self) -> Option<&dyn McpResource> {
        Some(self)
    }

    fn commands(&self) -> Option<&dyn CommandResource> {
        Some(self)
    }

    fn observable(&self) -> Option<&dyn ChangeObservable> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_tools_parse() {
        let mut cfg = McpServerConfig::stdio("x", Vec::<String>::new());
        cfg.lazy = true;
        cfg.tools = vec![crate::config::StaticTool {
            name: "echo".into(),
            description: "Echo".into(),
            input_schema: Some(
                r#"{"type":"object","properties":{"message":{"type":"string"}}}"#.into(),
            ),
        }];
        let name = ServerName::new("s").unwrap();
        let tools = static_tools(&name, &cfg).unwrap().unwrap();
        assert_eq!(tools[0].name, "echo");
        cfg.tools[0].input_schema = Some("[1]".into());
        assert!(static_tools(&name, &cfg).is_err());
        cfg.tools[0].input_schema = Some("{".into());
        assert!(static_tools(&name, &cfg).is_err());
    }
}
