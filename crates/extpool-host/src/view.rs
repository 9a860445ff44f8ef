//! [`View`]: what one scope — a session, an agent inside it, a turn inside
//! that — sees and does.
//!
//! A view lists the model-facing tools, calls them, reads `skill://` and
//! MCP resource URIs, lists and runs commands, collects instructions and
//! streams changes, always through the catalog revision it pins for the
//! operation. It registers capabilities of its own at its level; they are
//! visible to it and to the views inside it (RFC visibility: pool →
//! session → agent → turn, never the reverse) and are shut down when it
//! closes.
//!
//! A view without capabilities of its own costs a few hundred bytes: it
//! reads its parent's catalog. The first capability it registers gives it
//! an overlay catalog over the pool's shared revision, which lists only the
//! capabilities the pool does not have — never a copy of the pool's table.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use extpool_catalog::{CallError, Catalog, CatalogRevision, CommandKind, ToolRef};
use extpool_core::registry::ShutdownReport;
use extpool_core::{
    Capability, CapabilityKind, ChangeEvent, ExtUri, ResolveError, ResourceContent, Scope,
    ScopeLevel, ToolResult, TurnContext,
};
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::HostError;
use crate::health::HealthEvent;
use crate::host::HostInner;
use crate::info::{
    ArgInfo, BUILTIN, CommandInfo, InstructionInfo, ModelTool, ResourceInfo, SkillInfo,
    ToolDetails, ToolInfo,
};

/// A change a view's consumer may act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostEvent {
    /// A capability reported a change (tools, resources, prompts, skills).
    Change(ChangeEvent),
    /// The view's catalog published a new revision.
    Revision {
        /// Its number.
        number: u64,
        /// Tools in it (built-ins excluded).
        tools: usize,
        /// Commands in it.
        commands: usize,
        /// Resources in it.
        resources: usize,
    },
    /// A capability's server stayed unreachable after a reconnect: its
    /// tools leave the next compiled toolsets until it recovers.
    Degraded {
        /// The capability (server) id.
        capability: String,
        /// The failure, as the caller saw it.
        reason: String,
    },
    /// A degraded capability is usable again.
    Recovered {
        /// The capability id.
        capability: String,
    },
}

/// The shared state of one view.
pub(crate) struct ViewInner {
    pub host: Arc<HostInner>,
    pub scope: Scope,
    /// The view this one is inside (weak: a parent holds its children).
    parent: Weak<ViewInner>,
    /// The map this view is kept in while open (its parent's children, or
    /// the host's sessions); weak, so a dropped host frees its views.
    siblings: Weak<Views>,
    overlay: Mutex<Option<Arc<Catalog>>>,
    /// Open views inside this one, by agent name or turn id (kept until
    /// closed, so asking again gives the same view).
    children: Arc<Views>,
    closed: AtomicBool,
}

/// Open views by key (session id, agent name or turn id).
pub(crate) type Views = Mutex<HashMap<String, Arc<ViewInner>>>;

impl ViewInner {
    pub(crate) fn new(
        host: Arc<HostInner>,
        scope: Scope,
        parent: Weak<ViewInner>,
        siblings: Weak<Views>,
    ) -> Self {
        Self {
            host,
            scope,
            parent,
            siblings,
            overlay: Mutex::new(None),
            children: Arc::new(Mutex::new(HashMap::new())),
            closed: AtomicBool::new(false),
        }
    }

    /// The catalog this view reads: its own overlay, else its parent's.
    fn catalog(&self) -> Arc<Catalog> {
        if let Some(own) = self.overlay.lock().clone() {
            return own;
        }
        match self.parent.upgrade() {
            Some(parent) => parent.catalog(),
            None => self.host.catalog.clone(),
        }
    }

    /// The catalogs this view reads through, innermost first: its own
    /// overlay, its parents' overlays, the pool catalog.
    pub(crate) fn catalogs(&self) -> Vec<Arc<Catalog>> {
        let mut out = Vec::new();
        if let Some(own) = self.overlay.lock().clone() {
            out.push(own);
        }
        let mut next = self.parent.upgrade();
        while let Some(view) = next {
            if let Some(own) = view.overlay.lock().clone() {
                out.push(own);
            }
            next = view.parent.upgrade();
        }
        out.push(self.host.catalog.clone());
        out
    }

    /// Marks this view and every view inside it closed and stops their
    /// catalogs (published revisions stay readable).
    pub(crate) async fn close_tree(&self) {
        self.closed.store(true, Ordering::Release);
        let children: Vec<Arc<ViewInner>> = self.children.lock().drain().map(|(_, v)| v).collect();
        for child in children {
            Box::pin(child.close_tree()).await;
        }
        let overlay = self.overlay.lock().clone();
        if let Some(overlay) = overlay {
            overlay.shutdown().await;
        }
    }
}

/// A scoped view of the host: a session, an agent in it, or a turn in that.
/// Cheap to clone; clones are the same view.
#[derive(Clone)]
pub struct View {
    pub(crate) inner: Arc<ViewInner>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("scope", &self.inner.scope)
            .finish()
    }
}

/// Finds or creates the open view `key` of `children`.
pub(crate) fn child_view(
    children: &Arc<Views>,
    key: &str,
    make: impl FnOnce(Weak<Views>) -> ViewInner,
) -> View {
    let mut map = children.lock();
    if let Some(inner) = map.get(key)
        && !inner.closed.load(Ordering::Acquire)
    {
        return View {
            inner: inner.clone(),
        };
    }
    let inner = Arc::new(make(Arc::downgrade(children)));
    map.insert(key.to_owned(), inner.clone());
    View { inner }
}

impl View {
    /// The scope of this view.
    pub fn scope(&self) -> &Scope {
        &self.inner.scope
    }

    /// The level this view registers at.
    pub fn level(&self) -> ScopeLevel {
        self.inner.scope.level()
    }

    /// The agent `name` inside this session (the same view for the same name).
    pub fn agent(&self, name: &str) -> Result<View, HostError> {
        self.child(ScopeLevel::Session, name, |s| s.agent(name))
    }

    /// The turn `id` inside this agent (the same view for the same id).
    pub fn turn(&self, id: &str) -> Result<View, HostError> {
        self.child(ScopeLevel::Agent, id, |s| s.turn(id))
    }

    fn child(
        &self,
        parent_level: ScopeLevel,
        key: &str,
        narrow: impl FnOnce(Scope) -> Scope,
    ) -> Result<View, HostError> {
        self.check_open()?;
        if self.level() != parent_level || key.is_empty() || key.chars().any(char::is_control) {
            return Err(HostError::Scope(format!(
                "cannot open {key:?} inside the {} view {}",
                self.level(),
                describe(&self.inner.scope)
            )));
        }
        let scope = narrow(self.inner.scope.clone());
        Ok(child_view(&self.inner.children, key, |siblings| {
            ViewInner::new(
                self.inner.host.clone(),
                scope,
                Arc::downgrade(&self.inner),
                siblings,
            )
        }))
    }

    pub(crate) fn check_open(&self) -> Result<(), HostError> {
        if self.inner.host.is_shut_down() {
            return Err(HostError::ShutDown);
        }
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(HostError::Scope(format!(
                "the view {} is closed",
                describe(&self.inner.scope)
            )));
        }
        Ok(())
    }

    /// The catalog revision now published for this view. Hold it for a
    /// whole operation to pin it: later publications do not change it.
    pub fn revision(&self) -> Arc<CatalogRevision> {
        self.inner.catalog().current()
    }

    /// What the permission rules say about calling `name` here, and the
    /// rule that decided.
    pub fn permission(&self, name: &str) -> extpool_catalog::Decision {
        self.revision().permission(name)
    }

    /// Every tool the model may call here: remote tools by catalog name,
    /// then the catalog's built-ins (permission-filtered, with aliases).
    pub fn tools(&self) -> Vec<ToolInfo> {
        tools_of(&self.revision())
    }

    /// One tool by catalog name or alias, or the same error a call of
    /// that name gets (with its suggestion).
    pub fn tool(&self, name: &str) -> Result<ToolInfo, HostError> {
        let rev = self.revision();
        tools_of(&rev)
            .into_iter()
            .find(|t| t.name == name || t.alias == name)
            .ok_or_else(|| self.unknown_tool(&rev, name))
    }

    /// The error for a tool name `rev` does not have: the start failure of
    /// the server the name belongs to, when that server failed (not a
    /// suggestion of some other server's tool), else "unknown tool" with
    /// the closest name.
    fn unknown_tool(&self, rev: &CatalogRevision, name: &str) -> HostError {
        let host = &self.inner.host;
        if let Some(server) = crate::servers::server_of(&host.loaded, name)
            && let Some(reason) = host.failure_of(&server)
        {
            return HostError::ServerFailed {
                tool: name.to_owned(),
                server,
                reason,
            };
        }
        HostError::UnknownTool {
            name: name.to_owned(),
            suggestion: suggest_tool(rev, name)
                .or_else(|| suggest_namespace(rev, &host.loaded, name)),
            failed: host.failed_servers(),
        }
    }

    /// Calls a tool by catalog name, alias or built-in name, on the
    /// revision published now (pinned for the call).
    pub async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, HostError> {
        self.call_on(&self.revision(), name, args).await
    }

    /// Calls a tool on `rev`, a revision pinned earlier (a turn's): its
    /// names, schemas, permissions and dispatch targets, even when a newer
    /// revision has been published since. Outcomes feed [`crate::health`].
    pub async fn call_on(
        &self,
        rev: &Arc<CatalogRevision>,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, HostError> {
        self.check_open()?;
        let rev = rev.clone();
        let target = remote_capability(&rev, name);
        let outcome = rev.call(name, args).await;
        if let Some(cap) = &target {
            match &outcome {
                Ok(_) => {
                    self.inner.host.health.record(cap, Ok(()));
                }
                Err(CallError::Source { error, .. }) => {
                    self.inner.host.health.record(cap, Err(error));
                }
                Err(_) => {}
            }
        }
        match outcome {
            Ok(result) => Ok(result),
            Err(e) if e.is_unknown_tool() => Err(self.unknown_tool(&rev, name)),
            Err(e) => Err(HostError::Call(e)),
        }
    }

    /// Every resource of the servers visible here.
    pub fn resources(&self) -> Vec<ResourceInfo> {
        let rev = self.revision();
        let mut rows: Vec<ResourceInfo> = rev
            .all_resources()
            .map(|r| ResourceInfo {
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

    /// Every command: skills' slash commands, then MCP prompts, by name.
    pub fn commands(&self) -> Vec<CommandInfo> {
        let rev = self.revision();
        let mut rows: Vec<CommandInfo> = rev
            .all_commands()
            .map(|c| CommandInfo {
                name: format!("/{}", c.name),
                description: c.entry.description.clone(),
                arguments: c
                    .entry
                    .arguments
                    .iter()
                    .map(|a| ArgInfo {
                        name: a.name.clone(),
                        required: a.required,
                    })
                    .collect(),
                source: match c.kind {
                    CommandKind::McpPrompt => format!("prompt:{}", c.server),
                    _ => "skill".to_owned(),
                },
            })
            .collect();
        rows.sort_by(|a, b| (a.source != "skill", &a.name).cmp(&(b.source != "skill", &b.name)));
        rows
    }

    /// Renders command `name` (with or without its `/`) with `args`: a
    /// skill's body with `$ARGUMENTS` substituted, or an MCP prompt
    /// (`key=value` arguments).
    pub async fn run(&self, name: &str, args: &[String]) -> Result<String, HostError> {
        self.check_open()?;
        let name = name.trim_start_matches('/');
        let rev = self.revision();
        rev.render_command(name, args)
            .await
            .map_err(|e| self.command_error(&rev, name, e))
    }

    /// A command's error as the host reports it: an unknown name with the
    /// closest known command.
    pub(crate) fn command_error(
        &self,
        rev: &CatalogRevision,
        name: &str,
        e: extpool_catalog::CommandError,
    ) -> HostError {
        if e.is_unknown() {
            return HostError::UnknownCommand {
                name: name.to_owned(),
                suggestion: extpool_config::diagnostics::did_you_mean(
                    name,
                    rev.all_commands().map(|c| c.name.as_str()),
                )
                .map(|s| format!("/{s}")),
            };
        }
        HostError::Command(e)
    }

    /// Every skill visible here: local skills first (by name), then those
    /// MCP servers host, by name; a name is listed once (local wins).
    pub async fn skills(&self) -> Vec<SkillInfo> {
        let host = &self.inner.host;
        let mut local: Vec<SkillInfo> = host
            .manager
            .local_skills()
            .iter()
            .map(|s| SkillInfo {
                name: s.meta.name.clone(),
                description: s.meta.description.clone(),
                uri: s.uri(),
                source: "local".into(),
                path: Some(s.dir.clone()),
            })
            .collect();
        local.sort_by(|a, b| a.name.cmp(&b.name));
        let mut remote: Vec<SkillInfo> = Vec::new();
        for cap in host.registry.get_skill_resources(&self.inner.scope) {
            if cap.kind() == CapabilityKind::SkillManager {
                continue;
            }
            let Some(skills) = cap.skills() else { continue };
            match skills.list_skills().await {
                Ok(entries) => {
                    for e in entries {
                        if local.iter().chain(&remote).any(|s| s.name == e.name) {
                            continue;
                        }
                        remote.push(SkillInfo {
                            name: e.name,
                            description: e.description,
                            uri: e.uri,
                            source: cap.id().to_owned(),
                            path: None,
                        });
                    }
                }
                Err(e) => tracing::warn!(source = cap.id(), "skills not listed: {e}"),
            }
        }
        remote.sort_by(|a, b| a.name.cmp(&b.name));
        local.extend(remote);
        local
    }

    /// Reads a `skill://` URI (local skills first, then MCP-hosted ones) or
    /// any MCP resource URI (from the server that lists it in the pinned
    /// revision, else from whichever visible server has it).
    pub async fn read(&self, uri: &str) -> Result<ResourceContent, HostError> {
        self.check_open()?;
        let rev = self.revision();
        if !uri.starts_with("skill://")
            && let Some(cap) = listed_owner(&rev, uri)
            && let Some(mcp) = cap.mcp()
        {
            match mcp.read_resource(uri).await {
                Ok(Some(content)) => return Ok(content),
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
                Err(self.missing_skill(uri).await)
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn missing_skill(&self, uri: &str) -> HostError {
        let (skill, path) = match ExtUri::parse(uri) {
            Ok(parsed) => (parsed.authority.to_owned(), parsed.path.to_owned()),
            Err(_) => (String::new(), String::new()),
        };
        let skills = self.skills().await;
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
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        }
    }

    /// What the visible capabilities contribute to the system prompt (the
    /// skill list, servers' instructions), in visibility order. A
    /// capability whose instructions fail is skipped (and logged).
    pub async fn instructions(&self) -> Vec<InstructionInfo> {
        let visible = self
            .inner
            .host
            .registry
            .get_visible_capabilities(&self.inner.scope)
            .to_vec();
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

    /// Changes of every capability visible now, and each revision this
    /// view's catalog publishes, until the stream is dropped.
    pub fn changes(&self) -> impl Stream<Item = HostEvent> + Send + 'static {
        let catalog = self.inner.catalog();
        let mut revisions = catalog.subscribe();
        revisions.mark_unchanged();
        let revisions =
            tokio_stream::wrappers::WatchStream::from_changes(revisions).map(move |number| {
                let rev = catalog.current();
                HostEvent::Revision {
                    number,
                    tools: rev.all_tools().count(),
                    commands: rev.all_commands().count(),
                    resources: rev.all_resources().count(),
                }
            });
        let changes = match self
            .inner
            .host
            .registry
            .merge_change_streams(&self.inner.scope)
        {
            Some(merged) => merged.map(HostEvent::Change).boxed(),
            None => futures::stream::empty().boxed(),
        };
        let health =
            tokio_stream::wrappers::BroadcastStream::new(self.inner.host.health.subscribe())
                .filter_map(|event| async move {
                    match event.ok()? {
                        HealthEvent::Degraded(d) => Some(HostEvent::Degraded {
                            capability: d.capability,
                            reason: d.reason,
                        }),
                        HealthEvent::Recovered { capability } => {
                            Some(HostEvent::Recovered { capability })
                        }
                    }
                });
        futures::stream::select(futures::stream::select(changes, revisions), health)
    }

    /// Runs every visible capability's `before_model_request` hook (pool →
    /// session → agent → turn) on `ctx`: what a runtime calls before each
    /// model request of a turn (dynamic skill injection: always-active
    /// skills, matched skills). A hook that fails is logged and skipped.
    pub async fn before_model_request(&self, ctx: &mut TurnContext) -> Result<(), HostError> {
        self.check_open()?;
        let visible = self
            .inner
            .host
            .registry
            .get_visible_capabilities(&self.inner.scope);
        for cap in visible.iter() {
            if let Err(e) = cap.before_model_request(ctx).await {
                tracing::warn!(capability = cap.id(), "before_model_request failed: {e}");
            }
        }
        Ok(())
    }

    /// Registers `cap` at this view's level: it is visible here and in the
    /// views inside this one, its tools join this view's catalog (published
    /// before this returns), and it is shut down when the view closes.
    pub async fn register(&self, cap: Arc<dyn Capability>) -> Result<(), HostError> {
        self.check_open()?;
        let host = &self.inner.host;
        let server = (cap.kind() == CapabilityKind::McpServer).then(|| cap.id().to_owned());
        host.registry
            .register(cap, self.level(), &self.inner.scope, None)?;
        if let Some(name) = server
            && self.level() == ScopeLevel::Session
        {
            host.runtime.hold(&name, &self.inner.scope.session_id);
        }
        let catalog = if self.level() == ScopeLevel::Pool {
            host.catalog.clone()
        } else {
            self.overlay()?
        };
        catalog.reconcile_now().await;
        Ok(())
    }

    /// Runs a reconciliation cycle of the pool catalog — consulting every
    /// discovery source first (the configuration read again, ToolHive
    /// asked now) — and, when this view has capabilities of its own, of
    /// its catalog; returns the outcome of this view's catalog (whether it
    /// published a new revision).
    pub async fn reconcile_now(&self) -> extpool_catalog::CycleOutcome {
        let host = &self.inner.host;
        host.rediscover();
        let pool = host.catalog.reconcile_now().await;
        let own = self.inner.overlay.lock().clone();
        match own {
            Some(overlay) => {
                let mut mine = overlay.reconcile_now().await;
                mine.changed |= pool.changed;
                mine
            }
            None => pool,
        }
    }

    /// Unregisters capability `id` from this view's level and shuts it down.
    pub async fn unregister(&self, id: &str) -> Result<(), HostError> {
        self.check_open()?;
        let host = &self.inner.host;
        host.registry
            .unregister_and_shutdown(id, self.level(), &self.inner.scope)
            .await?;
        if self.level() == ScopeLevel::Session {
            host.runtime.release(Some(id), &self.inner.scope.session_id);
        }
        let catalog = if self.level() == ScopeLevel::Pool {
            Some(host.catalog.clone())
        } else {
            self.inner.overlay.lock().clone()
        };
        if let Some(catalog) = catalog {
            catalog.reconcile_now().await;
        }
        Ok(())
    }

    /// This view's overlay catalog, created on first need.
    fn overlay(&self) -> Result<Arc<Catalog>, HostError> {
        let mut slot = self.inner.overlay.lock();
        if let Some(own) = slot.clone() {
            return Ok(own);
        }
        let host = &self.inner.host;
        let overlay = Arc::new(Catalog::new(host.catalog_config.clone())?);
        overlay.start_overlay(
            &host.catalog,
            host.registry.clone(),
            self.inner.scope.clone(),
        )?;
        *slot = Some(overlay.clone());
        Ok(overlay)
    }

    /// Closes the view: shuts down what it and the views inside it
    /// registered (innermost first, each within the RFC's timeout) and stops
    /// their catalogs. Pool connections stay open for everyone else. A view
    /// stays open until closed (dropping a handle closes nothing): close
    /// every turn, agent and session you open.
    ///
    /// The pool view never closes (its capabilities are everyone's): use
    /// [`crate::Host::shutdown`].
    pub async fn close(&self) {
        self.close_with_report().await;
    }

    /// [`View::close`], reporting each capability it shut down (innermost
    /// first); empty when the view was already closed or is the pool view.
    pub async fn close_with_report(&self) -> ShutdownReport {
        if self.level() == ScopeLevel::Pool || self.inner.closed.swap(true, Ordering::AcqRel) {
            return ShutdownReport::default();
        }
        let report = self
            .inner
            .host
            .registry
            .shutdown_within(&self.inner.scope)
            .await;
        self.inner.close_tree().await;
        if self.level() == ScopeLevel::Session {
            self.inner
                .host
                .runtime
                .release(None, &self.inner.scope.session_id);
        }
        let key = match self.level() {
            ScopeLevel::Turn => &self.inner.scope.turn_id,
            ScopeLevel::Agent => &self.inner.scope.agent_name,
            _ => &self.inner.scope.session_id,
        };
        if let Some(siblings) = self.inner.siblings.upgrade() {
            let mut map = siblings.lock();
            if map.get(key).is_some_and(|v| Arc::ptr_eq(v, &self.inner)) {
                map.remove(key);
            }
        }
        report
    }
}

/// The capability a remote tool of `rev` dispatches to.
fn remote_capability(rev: &CatalogRevision, name: &str) -> Option<Arc<dyn Capability>> {
    match rev.tool(name)? {
        ToolRef::Remote(tool) => rev
            .chain()
            .find_map(|r| r.source(&tool.server))
            .map(|s| s.capability.clone()),
        _ => None,
    }
}

/// The model-facing tools of a revision: remote tools by name, then
/// built-ins (the one ordering every front end and agent runtime shows).
pub fn model_tools(rev: &CatalogRevision) -> Vec<ModelTool> {
    let mut rows: Vec<ModelTool> = rev
        .all_tools()
        .map(|t| ModelTool {
            name: t.name.clone(),
            alias: t.alias.clone(),
            server: t.server.to_string(),
            tool: t.original().to_owned(),
            description: t.entry.description.clone(),
            input_schema: t.entry.input_schema.clone(),
            builtin: false,
            details: ToolDetails::of(&t.entry),
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows.extend(rev.all_builtins().into_iter().map(|b| {
        let entry = b.entry();
        ModelTool {
            name: b.name().to_owned(),
            alias: b.name().to_owned(),
            server: BUILTIN.to_owned(),
            tool: b.name().to_owned(),
            description: entry.description.clone(),
            input_schema: entry.input_schema.clone(),
            builtin: true,
            details: ToolDetails::of(entry),
        }
    }));
    rows
}

/// The model-facing tools of a revision as [`ToolInfo`] rows.
pub(crate) fn tools_of(rev: &CatalogRevision) -> Vec<ToolInfo> {
    model_tools(rev).into_iter().map(ToolInfo::from).collect()
}

/// A suggestion for an unknown tool: the one tool whose own name it is
/// (a call without the `mcp__<server>__` prefix), else the closest name.
/// For `mcp__<namespace>__<tool>` whose namespace no configured server has
/// and nothing visible is named under (the server's name mistyped, so none
/// was started): the same tool under the closest configured namespace.
fn suggest_namespace(
    rev: &CatalogRevision,
    loaded: &extpool_config::Loaded,
    name: &str,
) -> Option<String> {
    use extpool_catalog::names::{MCP_PREFIX, SEPARATOR};
    let (namespace, tool) = name.strip_prefix(MCP_PREFIX)?.split_once(SEPARATOR)?;
    if namespace.is_empty() || tool.is_empty() || crate::servers::server_of(loaded, name).is_some()
    {
        return None;
    }
    if rev
        .all_tools()
        .any(|t| extpool_catalog::names::in_namespace(&t.name, namespace))
    {
        return None;
    }
    let namespaces = loaded
        .enabled_servers()
        .map(|(server, c)| c.prefix.as_deref().unwrap_or(server.as_str()));
    let closest = extpool_config::diagnostics::did_you_mean(namespace, namespaces)?;
    Some(format!("{MCP_PREFIX}{closest}{SEPARATOR}{tool}"))
}

fn suggest_tool(rev: &CatalogRevision, name: &str) -> Option<String> {
    let mut by_original = rev.all_tools().filter(|t| t.original() == name);
    if let (Some(only), None) = (by_original.next(), by_original.next()) {
        return Some(only.name.clone());
    }
    let names: Vec<String> = tools_of(rev).into_iter().map(|t| t.name).collect();
    extpool_config::diagnostics::did_you_mean(name, names.iter().map(String::as_str))
        .map(str::to_owned)
}

/// The capability of the server that lists `uri` in `rev` (or a parent).
fn listed_owner(rev: &CatalogRevision, uri: &str) -> Option<Arc<dyn Capability>> {
    let resource = rev.all_resources().find(|r| r.entry.uri == uri)?;
    rev.chain()
        .find_map(|r| r.source(&resource.server))
        .map(|s| s.capability.clone())
}

/// A scope as `pool p / session A / agent coder / turn t1`, for messages.
pub fn describe(scope: &Scope) -> String {
    let mut parts = vec![format!("pool {}", scope.pool_id)];
    for (word, id) in [
        ("session", &scope.session_id),
        ("agent", &scope.agent_name),
        ("turn", &scope.turn_id),
    ] {
        if !id.is_empty() {
            parts.push(format!("{word} {id}"));
        }
    }
    parts.join(" / ")
}
