//! The MCP server a client talks to: one [`GatewayHandler`] per client
//! connection (per session for session-era clients, per request for
//! 2026-07-28 clients), answering from its host view.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use extpool_host::core::Principal;
use extpool_host::{HostError, Pin, ToolTable, View};
use rmcp::ErrorData;
#[allow(deprecated)] // logging and resources/subscribe are the session era's
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, DiscoverResult,
    GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams, GetSkillResult,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult, ListToolsResult,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
    SetLevelRequestParams,
};
use serde_json::Value;

use crate::client_peer::ClientPeer;
use crate::convert;
use crate::lists;
use crate::names::{Names, NamesCache};
use crate::sessions::OpenSession;
use crate::shared::Shared;
use crate::skills;
use exchange::Exchange;

pub(crate) mod caller;
pub(crate) mod caller_views;
pub(crate) mod calls;
mod delegated;
mod dispatch;
pub(crate) use dispatch::{admitted, negotiate};
pub(crate) mod exchange;
#[cfg(test)]
mod future_sizes;
mod login;
pub mod passthrough;
pub mod relay;
pub mod source_tools;
pub(crate) mod stdio;
mod task_extension;
mod tasks;

/// Name the gateway reports in `serverInfo`.
pub const SERVER_NAME: &str = "extpool";

/// One client session's view; closed when the last handler of the session
/// is dropped (the client went away or its session expired).
struct Session {
    id: String,
    view: View,
    shared: Arc<Shared>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shared.ops.metrics.sessions(-1);
        let view = self.view.clone();
        tracing::debug!(session = %self.id, "client session closed");
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { view.close().await });
        }
    }
}

/// What one client connection keeps while it lasts: the names of its
/// view's revision, the log level it set, and its resource subscriptions
/// (dropped with the connection).
struct Connection {
    /// Its key among resource subscriptions.
    key: String,
    names: NamesCache,
    /// The least severe log level the client wants (`logging/setLevel`).
    log_level: Arc<AtomicUsize>,
    /// Whether it ever subscribed to a resource.
    subscribed: AtomicBool,
    /// The tools its searches loaded (`--tool-search`).
    loaded: crate::tool_search::Loaded,
    /// Its tool calls in flight (bounded by `max_calls_per_session`).
    calls: AtomicUsize,
    shared: Arc<Shared>,
}

/// Numbers connections, for their subscription keys.
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

impl Connection {
    fn new(shared: Arc<Shared>) -> Self {
        let n = CONNECTIONS.fetch_add(1, Ordering::Relaxed);
        Self {
            key: format!("connection-{n}"),
            names: NamesCache::default(),
            log_level: Arc::new(AtomicUsize::new(0)),
            subscribed: AtomicBool::new(false),
            loaded: crate::tool_search::Loaded::default(),
            calls: AtomicUsize::new(0),
            shared,
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if !self.subscribed.load(Ordering::Acquire) {
            return;
        }
        let (shared, key) = (self.shared.clone(), self.key.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { shared.subscriptions.close_session(&key).await });
        }
    }
}

/// The MCP server of one client connection.
#[derive(Clone)]
pub struct GatewayHandler {
    shared: Arc<Shared>,
    /// What every clone of this handler shares, in one allocation.
    state: Arc<HandlerState>,
}

/// The state of one client connection's handler, shared by its clones.
struct HandlerState {
    /// Its implicit session, once `initialize` opened it.
    session: OnceLock<Arc<Session>>,
    /// The durable session this endpoint belongs to (`/sessions/{id}/mcp`).
    durable: Option<Arc<OpenSession>>,
    /// A request without a session: its caller's own view, when the caller
    /// has per-caller servers ([`crate::handler::caller_views`]); one
    /// handler serves one such request.
    caller: OnceLock<View>,
    connection: Connection,
    /// How its session's client is reached outside a call's answer, set
    /// at `initialize` (a session-era connection only).
    client: OnceLock<ClientPeer>,
}

impl GatewayHandler {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self::with_durable(shared, None)
    }

    /// A handler for a durable session's endpoint.
    pub(crate) fn for_session(shared: Arc<Shared>, open: Arc<OpenSession>) -> Self {
        Self::with_durable(shared, Some(open))
    }

    fn with_durable(shared: Arc<Shared>, durable: Option<Arc<OpenSession>>) -> Self {
        Self {
            state: Arc::new(HandlerState {
                session: OnceLock::new(),
                durable,
                caller: OnceLock::new(),
                connection: Connection::new(shared.clone()),
                client: OnceLock::new(),
            }),
            shared,
        }
    }

    /// Serves this request without a session from `principal`'s own view
    /// when the caller has per-caller servers (a 2026-07-28 request); a
    /// session's handler, the gateway's one caller and a gateway without
    /// such servers keep their view.
    pub(crate) async fn bind_caller(&self, principal: &Principal) {
        if self.has_session()
            || principal.is_local()
            || self.state.caller.get().is_some()
            || !self.shared.host.has_caller_servers()
        {
            return;
        }
        let view = crate::handler::caller_views::stateless_view(&self.shared, principal).await;
        let _ = self.state.caller.set(view);
    }

    /// The view this connection sees: its durable session's, its implicit
    /// session's, else the stateless one.
    pub(crate) fn view(&self) -> &View {
        if let Some(open) = &self.state.durable {
            return &open.view;
        }
        if let Some(session) = self.state.session.get() {
            return &session.view;
        }
        self.state
            .caller
            .get()
            .unwrap_or(&self.shared.access.stateless)
    }

    fn session_id(&self) -> &str {
        if let Some(open) = &self.state.durable {
            return open.id.as_str();
        }
        self.state
            .session
            .get()
            .map_or("stateless", |s| s.id.as_str())
    }

    /// Who hears this connection's list changes: its durable session's
    /// clients, or the gateway's.
    pub(crate) fn notifier(&self) -> &crate::notify::Notifier {
        match &self.state.durable {
            Some(open) => &open.notifier,
            None => &self.shared.notifier,
        }
    }

    /// Whether this connection belongs to a session (implicit or durable);
    /// 2026-07-28 requests do not.
    fn has_session(&self) -> bool {
        self.state.durable.is_some() || self.state.session.get().is_some()
    }

    /// The prompt names this connection's client sees (see [`crate::names`]).
    pub(crate) fn names(&self) -> Arc<Names> {
        let cache = if self.has_session() {
            &self.state.connection.names
        } else {
            &self.shared.access.stateless_names
        };
        cache.get(&self.view().revision(), &self.shared.access.unprefixed)
    }

    /// What this connection's model sees and may call now: its view's
    /// table (the gateway's policy, its session's grants).
    pub(crate) fn table(&self) -> Arc<ToolTable> {
        self.view().table(Pin::now())
    }

    /// Refuses MCP prompt `name` (its catalog name) to the caller of
    /// `ex` when that caller's rules do (`permissions.principals`).
    fn prompt_allowed(&self, ex: &Exchange, name: &str) -> Result<(), ErrorData> {
        match ex.caller.table(self).prompt_refusal(name) {
            Some(refusal) => Err(ErrorData::invalid_params(refusal.to_string(), None)),
            None => Ok(()),
        }
    }

    /// Runs `work` as the caller of `ex` (who the guardrails' webhook is
    /// told asked).
    async fn as_caller<F: std::future::Future>(&self, ex: &Exchange, work: F) -> F::Output {
        let label = ex.caller.principal.label();
        extpool_host::CallContext::new()
            .with_caller(label)
            .scope(work)
            .await
    }

    /// The input schema of tool `name` as `caller` calls it, when it
    /// promotes arguments to `Mcp-Param-*` headers (see
    /// [`crate::names::header_schema`]): what a 2026-07-28 `tools/call`'s
    /// headers are checked against. A tool the caller does not see has
    /// none.
    pub(crate) async fn header_schema(
        &self,
        name: &str,
        caller: &caller::Caller,
    ) -> Option<serde_json::Value> {
        self.bind_caller(&caller.principal).await;
        let table = caller.table(self);
        crate::names::header_schema(&table.row(name)?.tool.input_schema)
            .map(serde_json::Value::Object)
    }

    /// The session parts the passthrough needs: the connection's key among
    /// subscriptions, its view and its log level; `None` without a session.
    pub(crate) fn session_parts(&self) -> Option<(&str, &View, &Arc<AtomicUsize>)> {
        self.has_session().then(|| {
            (
                self.state.connection.key.as_str(),
                self.view(),
                &self.state.connection.log_level,
            )
        })
    }

    /// How this connection's client is reached outside a call's answer:
    /// the session's, once `initialize` set it, else the stdio peer of
    /// `ex`; `None` for a 2026-07-28 request over HTTP (its answer is all
    /// that reaches its client).
    pub(crate) fn client_peer(&self, ex: &Exchange) -> Option<ClientPeer> {
        if let Some(client) = self.state.client.get() {
            return Some(client.clone());
        }
        match &ex.back {
            exchange::Back::Peer(peer) => Some(ClientPeer::Rmcp(peer.clone())),
            exchange::Back::Queue { .. } => None,
        }
    }

    /// Marks this connection as holding subscriptions (dropped with it).
    pub(crate) fn note_subscription(&self) {
        self.state
            .connection
            .subscribed
            .store(true, Ordering::Release);
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// What `tools/list` answers on this connection, the one definition of
    /// it: its table's listed rows (behind `ToolSearch` above its budget
    /// with `--tool-search`), the gateway's own tools among them, sorted.
    pub(crate) fn listed_tools(&self) -> ListToolsResult {
        lists::tools(crate::tool_search::listed(
            &self.table(),
            &self.state.connection.loaded,
        ))
    }

    /// Opens this connection's implicit session (on `initialize`) for
    /// `principal`: its view has that caller's own servers
    /// ([`crate::handler::caller_views`]).
    async fn open_session(&self, principal: &Principal) -> Result<(), ErrorData> {
        if self.state.session.get().is_some() || self.state.durable.is_some() {
            return Ok(());
        }
        // The slot was taken before rmcp made the session
        // (`--max-sessions`, crate::held::live).
        let id = self.shared.session_id();
        // The view's id has a `/`, which no durable session's id has: a
        // durable session named like this one can never share its view.
        let view = self
            .shared
            .host
            .session(&format!("mcp/{id}"))
            .map_err(internal)?;
        view.set_policy(self.shared.access.policy.clone());
        crate::handler::caller_views::register(
            &self.shared,
            &view,
            crate::identity::owner_of(principal),
        )
        .await;
        self.shared.ops.metrics.sessions(1);
        tracing::debug!(session = %id, "client session opened");
        let _ = self.state.session.set(Arc::new(Session {
            id,
            view,
            shared: self.shared.clone(),
        }));
        Ok(())
    }
}

/// The protocol extensions the gateway passes through whole, declared to
/// its clients only when an upstream server declares them: MCP Apps
/// (SEP-1865), whose tools' `_meta.ui` and `ui://` resources reach the
/// client unchanged.
const PASSED_EXTENSIONS: [&str; 1] = [UI_EXTENSION];

/// The MCP Apps extension's identifier.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

impl GatewayHandler {
    /// Adds to `capabilities.extensions` each of [`PASSED_EXTENSIONS`] a
    /// server visible here declares, with that server's settings.
    fn declare_passed_extensions(&self, capabilities: &mut ServerCapabilities) {
        for id in PASSED_EXTENSIONS {
            if let Some(Value::Object(settings)) = self.view().upstream_extension(id) {
                capabilities
                    .extensions
                    .get_or_insert_default()
                    .insert(id.to_owned(), settings);
            }
        }
    }
}

fn internal(e: HostError) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

impl GatewayHandler {
    /// What the gateway says of itself at `initialize` and
    /// `server/discover`: its capabilities (the extensions its upstreams
    /// declare among them), its name and its instructions.
    pub(crate) fn info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_skills_with_directory_read()
            .build();
        capabilities.logging = Some(rmcp::model::JsonObject::new());
        capabilities.completions = Some(rmcp::model::JsonObject::new());
        if let Some(resources) = capabilities.resources.as_mut() {
            resources.subscribe = Some(true);
        }
        self.declare_passed_extensions(&mut capabilities);
        self.declare_tasks_extension(&mut capabilities);
        let mut config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")));
        if !self.shared.instructions.is_empty() {
            config = config.with_instructions(self.shared.instructions.clone());
        }
        config
    }

    /// Begins this connection's session for `principal`, whose client said
    /// `request` and is reached through `client` outside a call's answer:
    /// its view opened, its client told of list changes, the protocol
    /// version agreed.
    pub(crate) async fn initialize(
        &self,
        principal: &Principal,
        request: &InitializeRequestParams,
        client: ClientPeer,
    ) -> Result<InitializeResult, ErrorData> {
        self.open_session(principal).await?;
        let _ = self.state.client.set(client.clone());
        // Kept now, not when `initialized` comes: a change right after it
        // must reach the client.
        self.notifier().add_peer(client);
        let mut info = self.info();
        info.protocol_version = dispatch::negotiate(&request.protocol_version)?;
        Ok(info)
    }

    /// `server/discover`: the versions spoken and what `initialize` says.
    fn discover(&self) -> DiscoverResult {
        DiscoverResult::from_server_info(dispatch::supported().to_vec(), self.info())
    }

    /// `notifications/initialized`: noted.
    pub(crate) fn initialized(&self) {
        tracing::debug!(session = %self.session_id(), "client initialized");
    }

    /// `tools/list`, for the caller of `ex`.
    async fn list_tools(&self, ex: &Exchange) -> ListToolsResult {
        self.bind_caller(&ex.caller.principal).await;
        let mut table = ex.caller.table(self);
        if self.delegate_unlisted(ex, &table).await {
            table = ex.caller.table_again(self);
        }
        lists::tools(crate::tool_search::listed(
            &table,
            &self.state.connection.loaded,
        ))
    }

    /// `tools/call`: a task, when the client takes one and the tool is
    /// only ever one; else the call.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ex: &Exchange,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.call_makes_task(&request.name, ex) {
            // Boxed: a task is rare; the call's future stays small.
            return Box::pin(self.call_as_task(request, ex)).await;
        }
        self.call(request, ex).await
    }

    /// `resources/list`: the view's resources, and its skills as plain
    /// resources for clients without the skills extension.
    fn list_resources(&self) -> ListResourcesResult {
        let view = self.view();
        let mut resources: Vec<_> = view.resources().iter().map(convert::resource).collect();
        // A server that hosts a skill may list its SKILL.md already.
        let listed: std::collections::HashSet<String> =
            resources.iter().map(|r| r.uri.clone()).collect();
        resources.extend(
            view.skills()
                .iter()
                .filter(|s| !listed.contains(&s.uri))
                .map(convert::skill_resource),
        );
        lists::resources(resources)
    }

    /// `resources/read`, as the caller of `ex`.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ex: &Exchange,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let read = self.as_caller(ex, self.view().read(&request.uri));
        match read.await {
            Ok(content) => Ok(lists::read(ReadResourceResult::new(vec![
                extpool_host::mcp::convert::wire::resource_contents(&content),
            ]))
            .into()),
            // SEP-2164: the error names the URI it did not find.
            Err(e) if e.is_not_found() => Err(ErrorData::resource_not_found(
                e.to_string(),
                Some(serde_json::json!({"uri": request.uri})),
            )),
            Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }

    /// `prompts/list`: the commands the caller of `ex` may get.
    fn list_prompts(&self, ex: &Exchange) -> ListPromptsResult {
        let names = self.names();
        let table = ex.caller.table(self);
        let prompts = self
            .view()
            .commands()
            .iter()
            .filter(|info| table.prompt_refusal(&info.name).is_none())
            .map(|info| {
                convert::prompt(info, names.listed_prompt(info.name.trim_start_matches('/')))
            })
            .collect();
        lists::prompts(prompts)
    }

    /// `prompts/get`, as the caller of `ex`.
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ex: &Exchange,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = self.names().catalog_prompt(&request.name).to_owned();
        self.prompt_allowed(ex, &name)?;
        let get =
            passthrough::get_prompt(self.view(), &name, request.arguments.unwrap_or_default());
        self.as_caller(ex, get).await.map(Into::into)
    }

    /// `resources/templates/list`.
    async fn list_resource_templates(&self) -> ListResourceTemplatesResult {
        lists::templates(passthrough::templates(self.view()).await)
    }

    /// `completion/complete`, of a prompt the caller of `ex` may get.
    async fn complete(
        &self,
        request: CompleteRequestParams,
        ex: &Exchange,
    ) -> Result<CompleteResult, ErrorData> {
        if let rmcp::model::Reference::Prompt(prompt) = &request.r#ref {
            self.prompt_allowed(ex, self.names().catalog_prompt(&prompt.name))?;
        }
        passthrough::complete(self.view(), &self.names(), request).await
    }

    /// `logging/setLevel`.
    #[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still set it
    async fn set_level(&self, request: SetLevelRequestParams) -> Result<(), ErrorData> {
        passthrough::set_level(self, request.level).await
    }

    /// `resources/subscribe` of `uri` for the client of `ex` (`Some`), or
    /// `resources/unsubscribe` (`None`).
    async fn subscribe(&self, uri: &str, ex: Option<&Exchange>) -> Result<(), ErrorData> {
        let peer = match ex {
            None => None,
            Some(ex) => match self.client_peer(ex) {
                Some(peer) => Some(peer),
                None => {
                    return Err(ErrorData::invalid_request(
                        "resources/subscribe needs a session (initialize first); 2026-07-28 clients use subscriptions/listen",
                        None,
                    ));
                }
            },
        };
        passthrough::subscribe(self, uri, peer).await
    }

    /// `skills/list`.
    async fn list_skills(&self) -> ListSkillsResult {
        let view = self.view();
        let mut out = Vec::new();
        for info in view.skills() {
            out.push(skills::manifest(view, &info).await);
        }
        lists::skills(out)
    }

    /// `resources/directory/read`.
    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        skills::read_directory(self.view(), request).await
    }

    /// `skills/get`.
    async fn get_skill(&self, request: GetSkillRequestParams) -> Result<GetSkillResult, ErrorData> {
        let view = self.view();
        let Some(info) = view.skills().into_iter().find(|s| s.uri == request.uri) else {
            return Err(ErrorData::invalid_params(
                format!("no skill at {}", request.uri),
                None,
            ));
        };
        Ok(lists::skill(GetSkillResult::new(
            skills::manifest(view, &info).await,
        )))
    }
}
