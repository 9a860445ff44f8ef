//! [`SkillManagerCap`]: one per agent, the RFC's replacement for three older
//! skill classes.
//!
//! It holds the local skills (discovered from the filesystem, metadata
//! only) and child capabilities: MCP-hosted skill providers given by the
//! caller, and the MCP servers skills embed (built through an
//! [`EmbeddedServerFactory`]). Through the resource protocols it lists and
//! reads skills (local first, then children), turns user-invocable skills
//! into slash commands, exposes the children's tools (filtered by each
//! skill's `allowed-tools`), injects instructions, and reports changes —
//! its own, from the filesystem watcher, and its children's.
//!
//! The published skill set is an immutable snapshot swapped whole on reload,
//! so readers never take a lock and never see half a reload.

mod children;
mod inject;
mod reload;
mod resources;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

// The runtime's clock, so a test on paused time moves the retry window.
use tokio::time::Instant;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use extpool_core::{
    Capability, CapabilityKind, ChangeEvent, ChangeKind, ChangeObservable, ChangeStream,
    CircularCompositionError, CommandResource, ExtensionError, McpResource, ParentChain,
    SkillResource, ToolEntry, TurnContext,
};
use parking_lot::{Mutex, RwLock};
use tokio::sync::broadcast;

use crate::diagnostic::Diagnostic;
use crate::discover::{Discovery, DiscoveryConfig, discover};
use crate::files::DEFAULT_MAX_FILE_BYTES;
use crate::skill::Skill;
use crate::watch::{DEFAULT_DEBOUNCE, SkillWatcher};

pub use children::{AllowedTools, EmbeddedServerFactory, is_server_down_default};
pub use inject::{SkillMatcher, skill_content};
pub use reload::ReloadSummary;

use children::Embedded;

/// The manager could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// A child capability is already an ancestor.
    #[error(transparent)]
    Circular(#[from] CircularCompositionError),
    /// Two children share an id.
    #[error("two child capabilities have the id {0:?}")]
    DuplicateChild(String),
}

/// A child capability that failed, as last seen.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChildFailure {
    /// The child's id.
    pub child: String,
    /// The skill that embeds it, for skill-embedded servers.
    pub skill: Option<String>,
    /// What failed, in words for people.
    pub error: String,
}

/// How long a child whose calls show it is down stays hidden before it is
/// asked again (RFC: the next run excludes a degraded capability's tools).
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(30);

/// A failure and, for a child found down by a call, until when it stays hidden.
pub(crate) struct FailureState {
    pub public: ChildFailure,
    pub hidden_until: Option<Instant>,
}

/// The published skill set.
pub(crate) struct State {
    pub discovery: Discovery,
    pub by_name: HashMap<String, Arc<Skill>>,
    pub embedded: Vec<Embedded>,
    /// Problems with embedded servers (building them).
    pub embedded_diagnostics: Vec<Diagnostic>,
}

impl State {
    pub fn skill(&self, name: &str) -> Option<&Arc<Skill>> {
        self.by_name.get(name)
    }
}

pub(crate) struct Inner {
    pub id: String,
    pub config: DiscoveryConfig,
    pub chain: ParentChain,
    pub state: ArcSwap<State>,
    pub children: Vec<Arc<dyn Capability>>,
    /// MCP servers whose hosted skills are offered after the local ones
    /// (not children: their tools, prompts and lifecycle are their own).
    pub hosted: Vec<Arc<dyn Capability>>,
    /// Root-inclusive nesting depth beyond which an embedded server is
    /// reported (RFC: 3; `extensions.max_composition_depth`).
    pub max_depth: usize,
    pub matcher: Option<Arc<dyn SkillMatcher>>,
    pub factory: Option<Arc<dyn EmbeddedServerFactory>>,
    pub events: broadcast::Sender<ChangeEvent>,
    pub watch: bool,
    pub debounce: Duration,
    pub watcher: Mutex<Option<SkillWatcher>>,
    pub failures: Mutex<BTreeMap<String, FailureState>>,
    pub retry_after: Duration,
    pub body_reads: AtomicU64,
    pub max_file_bytes: u64,
    pub routes: RwLock<HashMap<String, Arc<dyn Capability>>>,
    pub reload_lock: Mutex<()>,
    pub forwarders: reload::Forwarders,
}

impl Inner {
    pub fn emit(&self, kind: ChangeKind, source_uri: impl Into<String>) {
        let event = ChangeEvent::new(&self.id, kind, source_uri);
        tracing::debug!(capability = %self.id, kind = %kind, source = %event.source_uri, "change");
        // No subscriber is not an error.
        let _ = self.events.send(event);
    }

    /// Configured children then embedded ones.
    pub fn all_children(&self) -> Vec<Arc<dyn Capability>> {
        let state = self.state.load();
        self.children
            .iter()
            .cloned()
            .chain(state.embedded.iter().map(|e| e.cap.clone()))
            .collect()
    }

    /// Everything that may serve skills: the children, then the hosted
    /// skill sources.
    pub fn skill_sources(&self) -> Vec<Arc<dyn Capability>> {
        let mut out = self.all_children();
        out.extend(self.hosted.iter().cloned());
        out
    }

    /// The skill that embeds child `id`, if any.
    pub fn embedding_skill(&self, id: &str) -> Option<String> {
        self.state
            .load()
            .embedded
            .iter()
            .find(|e| e.cap.id() == id)
            .map(|e| e.skill.clone())
    }

    /// Records that asking a child failed (it is asked again next time);
    /// emits `tools_changed` when it was healthy.
    pub fn record_failure(&self, child: &str, error: &ExtensionError) {
        self.note_failure(child, error, None);
    }

    /// Records that a call showed the child's server is down: its tools are
    /// hidden for `retry_after`, or until the child reports a change.
    pub fn mark_down(&self, child: &str, error: &ExtensionError) {
        self.note_failure(child, error, Some(Instant::now() + self.retry_after));
        self.routes.write().retain(|_, c| c.id() != child);
    }

    fn note_failure(&self, child: &str, error: &ExtensionError, hidden_until: Option<Instant>) {
        let failure = ChildFailure {
            child: child.to_owned(),
            skill: self.embedding_skill(child),
            error: error.to_string(),
        };
        tracing::warn!(capability = %self.id, child, error = %error, "child capability failed; its tools are unavailable");
        let was_healthy = self
            .failures
            .lock()
            .insert(
                child.to_owned(),
                FailureState {
                    public: failure,
                    hidden_until,
                },
            )
            .is_none();
        if was_healthy {
            self.emit(ChangeKind::ToolsChanged, format!("mcp://{child}"));
        }
    }

    /// Whether a child is hidden because a call found it down.
    pub fn is_hidden(&self, child: &str) -> bool {
        self.failures
            .lock()
            .get(child)
            .and_then(|f| f.hidden_until)
            .is_some_and(|until| Instant::now() < until)
    }

    /// Whether an error from a child means its server is down.
    pub fn is_down_error(&self, error: &ExtensionError) -> bool {
        match &self.factory {
            Some(f) => f.is_server_down(error),
            None => children::is_server_down_default(error),
        }
    }

    /// Records that a child works; emits `tools_changed` when it had failed.
    pub fn record_ok(&self, child: &str) {
        if self.failures.lock().remove(child).is_some() {
            tracing::info!(capability = %self.id, child, "child capability recovered");
            self.emit(ChangeKind::ToolsChanged, format!("mcp://{child}"));
        }
    }

    /// Counts one read of a SKILL.md body from disk.
    pub fn count_body_read(&self) {
        self.body_reads.fetch_add(1, Ordering::Relaxed);
    }
}

/// The per-agent skill capability (RFC-0051 `SkillManagerCap`).
#[derive(Clone)]
pub struct SkillManagerCap {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SkillManagerCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillManagerCap")
            .field("id", &self.inner.id)
            .field("skills", &self.inner.state.load().discovery.skills.len())
            .finish()
    }
}

/// Builds a [`SkillManagerCap`].
pub struct SkillManagerBuilder {
    id: String,
    discovery: DiscoveryConfig,
    preloaded: Option<Discovery>,
    children: Vec<Arc<dyn Capability>>,
    hosted: Vec<Arc<dyn Capability>>,
    max_depth: usize,
    matcher: Option<Arc<dyn SkillMatcher>>,
    factory: Option<Arc<dyn EmbeddedServerFactory>>,
    watch: bool,
    debounce: Duration,
    max_file_bytes: u64,
    retry_after: Duration,
    parent: Option<ParentChain>,
}

impl SkillManagerBuilder {
    /// Where local skills are discovered.
    pub fn discovery(mut self, config: DiscoveryConfig) -> Self {
        self.discovery = config;
        self
    }

    /// Uses an existing discovery result instead of scanning at build time
    /// (reloads still scan with the discovery config).
    pub fn discovered(mut self, discovery: Discovery) -> Self {
        self.preloaded = Some(discovery);
        self
    }

    /// Adds a child capability (an MCP-hosted skill provider, typically).
    pub fn child(mut self, cap: Arc<dyn Capability>) -> Self {
        self.children.push(cap);
        self
    }

    /// Adds an MCP server whose hosted skills (SEP-2640, or `skill://`
    /// resources) this manager lists, reads and offers after the local
    /// ones. Unlike a child it is not part of the manager's composition:
    /// its tools, resources and prompts stay its own, and its lifecycle
    /// belongs to whoever registered it.
    pub fn hosted_skills(mut self, cap: Arc<dyn Capability>) -> Self {
        self.hosted.push(cap);
        self
    }

    /// Root-inclusive nesting depth beyond which an embedded server is
    /// reported as a warning (RFC: 3; it is still added).
    pub fn max_composition_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Chooses which skills' full instructions are injected per request.
    pub fn matcher(mut self, matcher: impl SkillMatcher + 'static) -> Self {
        self.matcher = Some(Arc::new(matcher));
        self
    }

    /// Builds skill-embedded MCP servers (without one, they are reported and skipped).
    pub fn embedded_servers(mut self, factory: Arc<dyn EmbeddedServerFactory>) -> Self {
        self.factory = Some(factory);
        self
    }

    /// Whether `start()` watches the roots for hot reload (default true).
    pub fn watch(mut self, on: bool) -> Self {
        self.watch = on;
        self
    }

    /// The watcher's debounce window (default 500 ms).
    pub fn debounce(mut self, window: Duration) -> Self {
        self.debounce = window;
        self
    }

    /// Largest skill file served through `skill://` (default 16 MiB).
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// How long a child found down by a failed call stays hidden (default 30 s).
    pub fn retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = wait;
        self
    }

    /// The ancestors of this manager, when it is itself a child.
    pub fn parent(mut self, chain: ParentChain) -> Self {
        self.parent = Some(chain);
        self
    }

    /// Discovers the local skills (blocking filesystem reads of metadata
    /// only), builds embedded servers (no I/O), checks composition.
    pub fn build(self) -> Result<SkillManagerCap, ManagerError> {
        let chain = match &self.parent {
            Some(parent) => parent.child(&self.id)?,
            None => ParentChain::root(&self.id),
        };
        let mut ids: Vec<&str> = Vec::new();
        for child in &self.children {
            children::check_subtree(&chain, child)?;
            if ids.contains(&child.id()) {
                return Err(ManagerError::DuplicateChild(child.id().to_owned()));
            }
            ids.push(child.id());
        }
        Ok(self.assemble(chain))
    }

    fn assemble(self, chain: ParentChain) -> SkillManagerCap {
        let discovery = self.preloaded.unwrap_or_else(|| discover(&self.discovery));
        let (events, _) = broadcast::channel(256);
        let inner = Arc::new(Inner {
            id: self.id,
            config: self.discovery,
            chain,
            state: ArcSwap::from_pointee(State {
                discovery: Discovery::default(),
                by_name: HashMap::new(),
                embedded: Vec::new(),
                embedded_diagnostics: Vec::new(),
            }),
            children: self.children,
            hosted: self.hosted,
            max_depth: self.max_depth,
            matcher: self.matcher,
            factory: self.factory,
            events,
            watch: self.watch,
            debounce: self.debounce,
            watcher: Mutex::new(None),
            failures: Mutex::new(BTreeMap::new()),
            retry_after: self.retry_after,
            body_reads: AtomicU64::new(0),
            max_file_bytes: self.max_file_bytes,
            routes: RwLock::new(HashMap::new()),
            reload_lock: Mutex::new(()),
            forwarders: reload::Forwarders::default(),
        });
        reload::publish(&inner, discovery, &[]);
        SkillManagerCap { inner }
    }
}

impl SkillManagerCap {
    /// A manager of the skills `config` discovers, without children.
    pub fn new(id: impl Into<String>, config: DiscoveryConfig) -> Self {
        let builder = Self::builder(id).discovery(config);
        let chain = ParentChain::root(&builder.id);
        // Without children or a parent there is nothing to refuse.
        builder.assemble(chain)
    }

    /// A builder for managers with children, a matcher or embedded servers.
    pub fn builder(id: impl Into<String>) -> SkillManagerBuilder {
        SkillManagerBuilder {
            id: id.into(),
            discovery: DiscoveryConfig::default(),
            preloaded: None,
            children: Vec::new(),
            hosted: Vec::new(),
            max_depth: 3,
            matcher: None,
            factory: None,
            watch: true,
            debounce: DEFAULT_DEBOUNCE,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            retry_after: DEFAULT_RETRY_AFTER,
            parent: None,
        }
    }

    /// The skill whose `mcp_servers` declares child `id`, if any.
    pub fn embedding_skill(&self, id: &str) -> Option<String> {
        self.inner.embedding_skill(id)
    }

    /// The local skills now published, highest precedence first.
    pub fn local_skills(&self) -> Vec<Arc<Skill>> {
        self.inner.state.load().discovery.skills.clone()
    }

    /// The local skill with this name.
    pub fn local_skill(&self, name: &str) -> Option<Arc<Skill>> {
        self.inner.state.load().skill(name).cloned()
    }

    /// Problems of the last discovery and of building embedded servers.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let state = self.inner.state.load();
        state
            .discovery
            .diagnostics
            .iter()
            .chain(&state.embedded_diagnostics)
            .cloned()
            .collect()
    }

    /// Children that failed the last time they were used.
    pub fn child_failures(&self) -> Vec<ChildFailure> {
        self.inner
            .failures
            .lock()
            .values()
            .map(|f| f.public.clone())
            .collect()
    }

    /// How many times a local SKILL.md was read in full since construction
    /// (discovery reads only frontmatter and does not count).
    pub fn body_reads(&self) -> u64 {
        self.inner.body_reads.load(Ordering::Relaxed)
    }

    /// Rescans the roots now and publishes the result; emits change events
    /// when something changed. The watcher calls this on every batch. It
    /// reads the filesystem synchronously: from async code, call it inside
    /// `spawn_blocking`.
    pub fn reload(&self) -> ReloadSummary {
        reload::reload(&self.inner, &[], false)
    }

    /// True while the filesystem watcher runs.
    pub fn is_watching(&self) -> bool {
        self.inner.watcher.lock().is_some()
    }
}

#[async_trait]
impl Capability for SkillManagerCap {
    fn id(&self) -> &str {
        &self.inner.id
    }

    /// The children's tools, merged (first child wins a name); a failing
    /// child is skipped and reported.
    async fn toolset(&self) -> Result<Vec<ToolEntry>, ExtensionError> {
        Ok(resources::merged_tools(&self.inner).await)
    }

    async fn instructions(&self) -> Result<Option<String>, ExtensionError> {
        inject::instructions(&self.inner).await
    }

    async fn before_model_request(&self, ctx: &mut TurnContext) -> Result<(), ExtensionError> {
        inject::before_model_request(&self.inner, ctx).await
    }

    /// Starts the watcher (when enabled), forwards the children's change
    /// streams, and starts the children (a failing child is reported, not fatal).
    async fn start(&self) -> Result<(), ExtensionError> {
        if self.inner.watch {
            reload::start_watcher(&self.inner);
        }
        reload::forward_children(&self.inner);
        for child in self.inner.all_children() {
            if let Err(e) = child.start().await {
                self.inner.record_failure(child.id(), &e);
            }
        }
        Ok(())
    }

    /// Stops the watcher and shuts the children down.
    async fn shutdown(&self) -> Result<(), ExtensionError> {
        if let Some(w) = self.inner.watcher.lock().take() {
            w.stop();
        }
        self.inner.forwarders.abort_all();
        for child in self.inner.all_children() {
            if let Err(e) = child.shutdown().await {
                tracing::warn!(child = %child.id(), error = %e, "child shutdown failed");
            }
        }
        Ok(())
    }

    fn kind(&self) -> CapabilityKind {
        CapabilityKind::SkillManager
    }

    fn children(&self) -> Vec<Arc<dyn Capability>> {
        self.inner.all_children()
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

impl ChangeObservable for SkillManagerCap {
    fn on_change(&self) -> Option<ChangeStream> {
        Some(reload::subscribe(&self.inner))
    }
}
