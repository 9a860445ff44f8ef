//! The MCP server a client talks to: one [`GatewayHandler`] per client
//! connection (per session for session-era clients, per request for
//! 2026-07-28 clients), answering from its host view.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use extpool_host::{HostError, View};
#[allow(deprecated)] // logging and resources/subscribe are the session era's
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, DiscoverResult,
    GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams, GetSkillResult,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::convert;
use crate::gateway::Shared;
use crate::lists;
use crate::names::{Names, NamesCache};
use crate::passthrough;
use crate::sessions::OpenSession;
use crate::skills;

mod calls;

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
        self.shared.metrics.sessions(-1);
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
    fn new(shared: Arc<Shared>) -> Arc<Self> {
        let n = CONNECTIONS.fetch_add(1, Ordering::Relaxed);
        Arc::new(Self {
            key: format!("connection-{n}"),
            names: NamesCache::default(),
            log_level: Arc::new(AtomicUsize::new(0)),
            subscribed: AtomicBool::new(false),
            loaded: crate::tool_search::Loaded::default(),
            calls: AtomicUsize::new(0),
            shared,
        })
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
    session: Arc<OnceLock<Arc<Session>>>,
    /// The durable session this endpoint belongs to (`/sessions/{id}/mcp`).
    durable: Option<Arc<OpenSession>>,
    connection: Arc<Connection>,
}

impl GatewayHandler {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self {
            connection: Connection::new(shared.clone()),
            shared,
            session: Arc::new(OnceLock::new()),
            durable: None,
        }
    }

    /// A handler for a durable session's endpoint.
    pub(crate) fn for_session(shared: Arc<Shared>, open: Arc<OpenSession>) -> Self {
        Self {
            connection: Connection::new(shared.clone()),
            shared,
            session: Arc::new(OnceLock::new()),
            durable: Some(open),
        }
    }

    /// The view this connection sees: its durable session's, its implicit
    /// session's, else the stateless one.
    fn view(&self) -> &View {
        if let Some(open) = &self.durable {
            return &open.view;
        }
        self.session
            .get()
            .map_or(&self.shared.stateless, |s| &s.view)
    }

    fn session_id(&self) -> &str {
        if let Some(open) = &self.durable {
            return open.id.as_str();
        }
        self.session.get().map_or("stateless", |s| s.id.as_str())
    }

    /// Whether this connection belongs to a session (implicit or durable);
    /// 2026-07-28 requests do not.
    fn has_session(&self) -> bool {
        self.durable.is_some() || self.session.get().is_some()
    }

    /// The names this connection's client sees (see [`crate::names`]).
    pub(crate) fn names(&self) -> Arc<Names> {
        let cache = if self.has_session() {
            &self.connection.names
        } else {
            &self.shared.stateless_names
        };
        let view = self.view();
        cache.get(&view.revision(), || view.tools(), &self.shared.unprefixed)
    }

    /// The catalog name a call of tool `name` means.
    fn catalog_tool(&self, name: &str) -> String {
        if self.shared.unprefixed.is_empty() {
            // Listed names are catalog names or aliases: the catalog takes both.
            return name.to_owned();
        }
        self.names().catalog_tool(name).to_owned()
    }

    /// The session parts the passthrough needs: the connection's key among
    /// subscriptions, its view and its log level; `None` without a session.
    pub(crate) fn session_parts(&self) -> Option<(&str, &View, &Arc<AtomicUsize>)> {
        self.has_session().then(|| {
            (
                self.connection.key.as_str(),
                self.view(),
                &self.connection.log_level,
            )
        })
    }

    /// Marks this connection as holding subscriptions (dropped with it).
    pub(crate) fn note_subscription(&self) {
        self.connection.subscribed.store(true, Ordering::Release);
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The tools this connection may see, in catalog order.
    fn visible_tools(&self) -> Vec<extpool_host::ToolInfo> {
        let mut tools = self.view().tools();
        if let Some(open) = &self.durable {
            tools.retain(|t| open.allows_tool(t));
        }
        tools
    }

    /// Whether a call of `name` (catalog name or alias) may go ahead: always
    /// outside a durable session; inside one, when the tool is granted (or
    /// a built-in). A name the catalog does not know goes ahead, so that
    /// the catalog's own "unknown tool" answer (with its suggestion) is
    /// given.
    fn may_call(&self, name: &str) -> bool {
        let Some(open) = &self.durable else {
            return true;
        };
        open.view
            .tools()
            .iter()
            .find(|t| t.name == name || t.alias == name)
            .is_none_or(|t| open.allows_tool(t))
    }

    /// The tool a call of `name` reaches through the `CallMcpWithQuery`
    /// built-in (its `server` and `tool` arguments), inside a durable
    /// session only, when it is one this session may not call: a built-in
    /// reaches no further than the session's grants.
    fn denied_through(
        &self,
        name: &str,
        args: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Option<String> {
        let open = self.durable.as_ref()?;
        if name != extpool_host::catalog::BuiltinTool::CallMcpWithQuery.name() {
            return None;
        }
        let arg = |key: &str| args.and_then(|a| a.get(key)).and_then(|v| v.as_str());
        let (server, tool) = (arg("server")?, arg("tool")?);
        open.view
            .tools()
            .into_iter()
            .find(|t| !t.builtin && t.server == server && t.tool == tool)
            .filter(|t| !open.allows_tool(t))
            .map(|t| t.name)
    }

    /// Reads a durable session's authority from the store again (another
    /// replica may have granted names since this one last looked).
    async fn sync_authority(&self) -> &Self {
        if let (Some(open), Some(sessions)) = (&self.durable, &self.shared.sessions) {
            sessions.reload(&self.shared, open).await;
        }
        self
    }

    /// Opens this connection's implicit session (on `initialize`).
    fn open_session(&self) -> Result<(), ErrorData> {
        if self.session.get().is_some() || self.durable.is_some() {
            return Ok(());
        }
        let max = self.shared.options.max_sessions;
        if usize::try_from(self.shared.metrics.open_sessions()).unwrap_or(0) >= max {
            return Err(ErrorData::internal_error(
                format!(
                    "the gateway serves at most {max} sessions at once (extpool serve --max-sessions); try again when one has ended"
                ),
                None,
            ));
        }
        let id = self.shared.session_id();
        let view = self.shared.host.session(&id).map_err(internal)?;
        self.shared.metrics.sessions(1);
        tracing::debug!(session = %id, "client session opened");
        let _ = self.session.set(Arc::new(Session {
            id,
            view,
            shared: self.shared.clone(),
        }));
        Ok(())
    }
}

fn internal(e: HostError) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

impl ServerHandler for GatewayHandler {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_skills()
            .build();
        capabilities.logging = Some(rmcp::model::JsonObject::new());
        capabilities.completions = Some(rmcp::model::JsonObject::new());
        if let Some(resources) = capabilities.resources.as_mut() {
            resources.subscribe = Some(true);
        }
        let mut config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")));
        if !self.shared.instructions.is_empty() {
            config = config.with_instructions(self.shared.instructions.clone());
        }
        config
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.open_session()?;
        context.peer.set_peer_info(request.clone());
        // Kept now, not in `on_initialized`: notifications run in their own
        // tasks, and a change right after `initialized` must reach it.
        match &self.durable {
            Some(open) => open.notifier.add_peer(context.peer.clone()),
            None => self.shared.notifier.add_peer(context.peer.clone()),
        }
        self.negotiate_initialize(&request)
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        tracing::debug!(session = %self.session_id(), "client initialized");
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        match &self.durable {
            Some(open) => open.notifier.add_sink(context.sink().clone()),
            None => self.shared.notifier.add_sink(context.sink().clone()),
        }
        context.cancelled().await;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.sync_authority().await;
        let names = self.names();
        let visible = self.visible_tools();
        let shown = crate::tool_search::shown(
            self.shared.options.tool_search.as_ref(),
            &visible,
            &names,
            &self.connection.loaded,
        );
        let mut tools: Vec<_> = shown
            .loaded
            .iter()
            .map(|&i| convert::tool(&visible[i], names.listed_tool(&visible[i].name)))
            .collect();
        tools.extend(shown.search_tool);
        tools.extend(crate::source_tools::tools());
        Ok(lists::tools(tools))
    }

    /// Only tools whose schema promotes arguments to `Mcp-Param-*` headers
    /// are returned: rmcp's HTTP layer asks for the schema of every
    /// 2026-07-28 `tools/call` to check those headers against the body,
    /// and a tool without annotations has none to check.
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let names = self.names();
        let schema = names.header_schema(names.catalog_tool(name))?;
        Some(rmcp::model::Tool::new(
            name.to_owned(),
            String::new(),
            schema.clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let view = self.view();
        let mut resources: Vec<_> = view.resources().iter().map(convert::resource).collect();
        // Skills as plain resources, for clients without the extension
        // (a server that hosts a skill may list its SKILL.md already).
        let listed: std::collections::HashSet<String> =
            resources.iter().map(|r| r.uri.clone()).collect();
        resources.extend(
            view.skills()
                .await
                .iter()
                .filter(|s| !listed.contains(&s.uri))
                .map(convert::skill_resource),
        );
        Ok(lists::resources(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match self.view().read(&request.uri).await {
            Ok(content) => Ok(lists::read(ReadResourceResult::new(vec![
                extpool_host::mcp::convert::wire::resource_contents(&content),
            ]))
            .into()),
            Err(e) if e.is_not_found() => Err(ErrorData::resource_not_found(e.to_string(), None)),
            Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let names = self.names();
        let prompts = self
            .view()
            .commands()
            .iter()
            .map(|info| {
                convert::prompt(info, names.listed_prompt(info.name.trim_start_matches('/')))
            })
            .collect();
        Ok(lists::prompts(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = self.names().catalog_prompt(&request.name).to_owned();
        passthrough::get_prompt(self.view(), &name, request.arguments.unwrap_or_default())
            .await
            .map(Into::into)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(lists::templates(passthrough::templates(self.view()).await))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        passthrough::complete(self.view(), &self.names(), request).await
    }

    #[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still set it
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        passthrough::set_level(self, request.level).await
    }

    #[allow(deprecated)] // resources/subscribe is the session era's
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        passthrough::subscribe(self, &request.uri, Some(context.peer)).await
    }

    #[allow(deprecated)] // resources/unsubscribe is the session era's
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        passthrough::subscribe(self, &request.uri, None).await
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let view = self.view();
        let mut out = Vec::new();
        for info in view.skills().await {
            out.push(skills::manifest(view, &info).await);
        }
        Ok(lists::skills(out))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let view = self.view();
        let Some(info) = view
            .skills()
            .await
            .into_iter()
            .find(|s| s.uri == request.uri)
        else {
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
