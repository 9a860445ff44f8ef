//! The example MCP server itself: an rmcp [`ServerHandler`] whose tools,
//! resources, prompts and skills are made for tests.
//!
//! The `extpool-testkit-server` binary wraps [`TestServer`] in a stdio or
//! streamable HTTP transport; tests of this crate (and in-process benchmarks
//! elsewhere) can also serve it directly. Everything that tests observe from
//! outside — counters, start records, the crash marker — goes through
//! [`crate::state`], so a test can check what really ran on the server.
//!
//! This module must never write to stdout: in stdio mode stdout is the MCP
//! channel.

mod asking;
mod barrier;
mod conformance;
mod content;
mod extra;
pub mod http;
pub mod modern;
mod notify;
mod paging;
pub mod probe;
mod prompts;
mod resources;
mod skills;
pub mod stdio;
mod tool_calls;
mod tools;
mod url_elicitation;

pub use barrier::arrivals_counter;
pub use extra::{ExtraLists, WrittenTool};
pub use paging::PagingFault;

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError, RwLock},
};

#[allow(deprecated)]
// logging and resources/subscribe are the session era's; the suite tests them
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
        DiscoverResult, GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams,
        GetSkillResult, Implementation, InitializeRequestParams, InitializeResult,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
        ListToolsResult, PaginatedRequestParams, Prompt, ReadResourceDirectoryRequestParams,
        ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse, Resource,
        ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
        SubscriptionFilter, Tool, UnsubscribeRequestParams,
    },
    service::{NotificationContext, Peer, RequestContext, SubscriptionContext, SubscriptionSink},
};

use crate::state::Counters;

/// Name the server reports in `serverInfo`.
pub const SERVER_NAME: &str = "extpool-testkit-server";

/// How a [`TestServer`] behaves; mirrors the binary's flags.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Where persistent counters live (`--state-dir`); in memory when `None`.
    pub state_dir: Option<PathBuf>,
    /// Never answer `initialize` (`--hang-on-initialize`), for timeout tests.
    pub hang_on_initialize: bool,
    /// Number of dummy tools `tool_0000`… (`--extra-tools`), for catalogs and
    /// pagination.
    pub extra_tools: usize,
    /// Page size of tools/list, resources/list and prompts/list
    /// (`--page-size`); everything in one page when `None`.
    pub page_size: Option<usize>,
    /// Declare the SEP-2640 skills extension and answer `skills/list` and
    /// `skills/get` (off with `--no-skills-extension`, leaving only the
    /// `skill://` resources).
    pub skills_extension: bool,
    /// Serve one wrong digest in the skills manifest (`--bad-digest`), so
    /// clients can prove they verify digests.
    pub bad_digest: bool,
    /// Declare `directoryRead` in the skills extension and answer SEP-2640
    /// `resources/directory/read` (`--directory-read`), paged by
    /// `--page-size`; every such request increments counter
    /// `directory_reads`.
    pub directory_read: bool,
    /// Serve stdio through rmcp's own transport (blocking-pool stdin and
    /// stdout) instead of extpool's (`--rmcp-stdio`), so benchmarks can
    /// measure the server before and after in one run.
    pub rmcp_stdio: bool,
    /// Also serve the fixtures of the official conformance suite's server
    /// scenarios (`--conformance`; see the `conformance` module), and
    /// declare logging, completions and resource subscriptions.
    pub conformance: bool,
    /// Also serve the tools of the 2026-07-28 era (`--modern`; see the
    /// `modern` module): `confirm` (input_required) and `regional` (an
    /// argument promoted to an `Mcp-Param-*` header).
    pub modern: bool,
    /// Also advertise tools no catalog may publish (`--bad-tool-names`):
    /// a name with an ESC byte, a name of 300 bytes, and `echo` twice.
    pub bad_tool_names: bool,
    /// Also serve `barrier_write` (`--write-barrier`): `barrier` without
    /// `readOnlyHint`, a held call a client must never send twice.
    pub write_barrier: bool,
    /// Page tools/list, resources/list and prompts/list wrongly
    /// (`--paging-fault`): a next cursor on every page.
    pub paging_fault: Option<PagingFault>,
    /// Tools to serve instead of every other (`--tools-file`): a call of one
    /// answers `called <name> with <arguments as JSON>`, so a test can give
    /// a client any schema and annotations and see what it sent.
    pub tools: Option<Vec<rmcp::model::Tool>>,
    /// Prompts, resources and templates listed after the others, and the
    /// contents reads of their URIs answer (`--lists-file`), exactly as
    /// the test wrote them.
    pub lists: ExtraLists,
    /// Declare the MCP Apps extension, `io.modelcontextprotocol/ui`, with
    /// the MIME type of its views, as an MCP Apps server may
    /// (`--ui-extension`), so a test can see who passes it on.
    pub ui_extension: bool,
    /// Also serve the URL-mode elicitation tools (`--url-elicitation`; see
    /// the `url_elicitation` module): `elicit_url`, `url_required` and
    /// `complete_elicitation`.
    pub url_elicitation: bool,
    /// Also serve the tools that try what a permission profile forbids
    /// (`--probe`; see the `probe` module): `read_file`, `write_file`,
    /// `connect` and `parent_environ`.
    pub probe: bool,
    /// The `serverInfo` to report instead of the testkit's own name and
    /// version (`--server-info`: title, icons, websiteUrl…), so a test can
    /// see who keeps and shows it.
    pub server_info: Option<Implementation>,
    /// HTTP mode: `Host` values accepted besides the loopback names
    /// (`--allowed-host`), as a server deployed behind a name accepts it.
    pub allowed_hosts: Vec<String>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            state_dir: None,
            hang_on_initialize: false,
            extra_tools: 0,
            page_size: None,
            skills_extension: true,
            bad_digest: false,
            directory_read: false,
            rmcp_stdio: false,
            conformance: false,
            modern: false,
            bad_tool_names: false,
            write_barrier: false,
            paging_fault: None,
            tools: None,
            lists: ExtraLists::default(),
            ui_extension: false,
            url_elicitation: false,
            probe: false,
            server_info: None,
            allowed_hosts: Vec::new(),
        }
    }
}

/// The test MCP server. Cheap to clone: every clone shares counters,
/// dynamic tools and the list of connected peers; each HTTP session gets
/// its own clone ([`TestServer::for_new_session`]).
#[derive(Debug, Clone)]
pub struct TestServer {
    shared: Arc<Shared>,
    /// Which session this clone serves (resource subscriptions are per session).
    session: u64,
}

/// State shared by every session of one server process.
#[derive(Debug)]
struct Shared {
    options: ServerOptions,
    counters: Counters,
    /// Calls waiting at `barrier`s.
    barriers: barrier::Barriers,
    dynamic: RwLock<Dynamic>,
    /// Legacy-session peers, kept from `initialize` to push
    /// `list_changed` notifications; closed ones are pruned on send.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// 2026-07-28 `subscriptions/listen` sinks, pruned the same way.
    sinks: Mutex<Vec<SubscriptionSink>>,
    /// State of the conformance fixtures (level, subscriptions).
    conformance: conformance::State,
    /// The last session number handed out.
    sessions: std::sync::atomic::AtomicU64,
}

/// Tools, resources and prompts added at run time by `add_tool`,
/// `add_resource` and `add_prompt`.
#[derive(Debug, Default)]
struct Dynamic {
    tools: BTreeMap<String, Tool>,
    resources: BTreeMap<String, (Resource, String)>,
    prompts: BTreeMap<String, Prompt>,
}

impl TestServer {
    /// A server with the given options.
    pub fn new(options: ServerOptions) -> Self {
        let counters = Counters::new(options.state_dir.clone());
        Self {
            shared: Arc::new(Shared {
                options,
                counters,
                barriers: barrier::Barriers::default(),
                dynamic: RwLock::new(Dynamic::default()),
                peers: Mutex::new(Vec::new()),
                sinks: Mutex::new(Vec::new()),
                conformance: conformance::State::default(),
                sessions: std::sync::atomic::AtomicU64::new(0),
            }),
            session: 0,
        }
    }

    /// A clone serving a new session (its own resource subscriptions).
    pub fn for_new_session(&self) -> Self {
        let session = self
            .shared
            .sessions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        Self {
            shared: self.shared.clone(),
            session,
        }
    }

    /// The options this server runs with.
    pub fn options(&self) -> &ServerOptions {
        &self.shared.options
    }

    fn read_dynamic(&self) -> std::sync::RwLockReadGuard<'_, Dynamic> {
        self.shared
            .dynamic
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write_dynamic(&self) -> std::sync::RwLockWriteGuard<'_, Dynamic> {
        self.shared
            .dynamic
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The server's counters (shared with the HTTP layer's fault injection).
    pub(crate) fn counters(&self) -> &Counters {
        &self.shared.counters
    }

    /// Counts a request that only tells the client what exists (counter
    /// `lists`): lists and pings.
    fn count_contact(&self) {
        if let Err(error) = self.shared.counters.increment("lists") {
            tracing::warn!("cannot count a list request: {error}");
        }
    }

    fn cursor(request: Option<&PaginatedRequestParams>) -> Option<&str> {
        request.and_then(|r| r.cursor.as_deref())
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let builder = ServerCapabilities::builder()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_tools()
            .enable_tool_list_changed();
        let mut capabilities = if self.shared.options.skills_extension {
            if self.shared.options.directory_read {
                builder.enable_skills_with_directory_read().build()
            } else {
                builder.enable_skills().build()
            }
        } else {
            builder.build()
        };
        if self.shared.options.conformance {
            capabilities.logging = Some(rmcp::model::JsonObject::new());
            capabilities.completions = Some(rmcp::model::JsonObject::new());
            if let Some(resources) = capabilities.resources.as_mut() {
                resources.subscribe = Some(true);
            }
        }
        if self.shared.options.ui_extension {
            let mut settings = rmcp::model::JsonObject::new();
            settings.insert(
                "mimeTypes".to_owned(),
                serde_json::json!(["text/html;profile=mcp-app"]),
            );
            capabilities
                .extensions
                .get_or_insert_default()
                .insert("io.modelcontextprotocol/ui".to_owned(), settings);
        }
        ServerConfig::new(capabilities)
            .with_server_info(
                self.shared
                    .options
                    .server_info
                    .clone()
                    .unwrap_or_else(|| Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))),
            )
            .with_instructions(
                "extpool test server: tools, resources, prompts and skills for tests",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.shared.options.hang_on_initialize {
            tracing::info!("--hang-on-initialize: never answering initialize");
            std::future::pending::<()>().await;
        }
        context.peer.set_peer_info(request.clone());
        // Keep the peer now rather than in `on_initialized`: notifications
        // run in their own tasks, so a tool call right after `initialized`
        // could otherwise broadcast before the peer is registered.
        self.shared
            .peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(context.peer.clone());
        self.negotiate_initialize(&request)
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        if self.shared.options.hang_on_initialize {
            tracing::info!("--hang-on-initialize: never answering server/discover");
            std::future::pending::<()>().await;
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn ping(&self, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.count_contact();
        Ok(())
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        tracing::info!("client initialized");
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.shared
            .sinks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(context.sink().clone());
        // Counted once the sink is kept: a test waits for it before
        // changing a list.
        if let Err(e) = self.counters().increment("listeners") {
            tracing::warn!("counting listeners: {e}");
        }
        context.cancelled().await;
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.count_contact();
        let (items, next) = paging::page_with_fault(
            self.all_tools(),
            Self::cursor(request.as_ref()),
            self.shared.options.page_size,
            self.shared.options.paging_fault,
        )?;
        let mut result = ListToolsResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.find_tool(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(response) = self.call_modern(&request) {
            return response;
        }
        if self.shared.options.conformance
            && let Some(response) = conformance::stateless_call(&request, &context)
        {
            return response;
        }
        self.dispatch_tool(request, context).await.map(Into::into)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.count_contact();
        let (items, next) = paging::page_with_fault(
            self.all_resources(),
            Self::cursor(request.as_ref()),
            self.shared.options.page_size,
            self.shared.options.paging_fault,
        )?;
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.read(&request.uri).map(Into::into)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.count_contact();
        let mut templates = if self.shared.options.conformance {
            self.conformance_templates()
        } else {
            Vec::new()
        };
        templates.extend(self.shared.options.lists.resource_templates.iter().cloned());
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        if !self.shared.options.conformance {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CompleteRequestMethod,
            >());
        }
        self.conformance_complete(&request)
    }

    #[allow(deprecated)] // logging (SEP-2577) is deprecated but the suite tests it
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !self.shared.options.conformance {
            return Err(ErrorData::method_not_found::<
                rmcp::model::SetLevelRequestMethod,
            >());
        }
        self.set_level_to(request.level);
        Ok(())
    }

    #[allow(deprecated)] // resources/subscribe is legacy-only but the suite tests it
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !self.shared.options.conformance {
            return Err(ErrorData::method_not_found::<
                rmcp::model::SubscribeRequestMethod,
            >());
        }
        self.subscribe_to(&request.uri, context.peer)
    }

    #[allow(deprecated)] // resources/unsubscribe is legacy-only but the suite tests it
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !self.shared.options.conformance {
            return Err(ErrorData::method_not_found::<
                rmcp::model::UnsubscribeRequestMethod,
            >());
        }
        self.unsubscribe_from(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.count_contact();
        let (items, next) = paging::page_with_fault(
            self.all_prompts(),
            Self::cursor(request.as_ref()),
            self.shared.options.page_size,
            self.shared.options.paging_fault,
        )?;
        let mut result = ListPromptsResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.prompt(&request.name, request.arguments.as_ref())
            .map(Into::into)
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        Ok(ListSkillsResult::with_all_items(vec![skills::entry(
            self.shared.options.bad_digest,
        )]))
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        if let Err(error) = self.shared.counters.increment("directory_reads") {
            tracing::warn!("cannot count a directory read: {error}");
        }
        let children =
            skills::directory(&request.uri).map_err(|why| ErrorData::invalid_params(why, None))?;
        let (items, next) = paging::page(
            children,
            request.cursor.as_deref(),
            self.shared.options.page_size,
        )?;
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let skill = skills::entry(self.shared.options.bad_digest);
        if request.uri == skill.uri {
            Ok(GetSkillResult::new(skill))
        } else {
            Err(ErrorData::invalid_params(
                format!("no skill at {}", request.uri),
                None,
            ))
        }
    }
}

impl TestServer {
    /// `sample`: asks the client for a completion of `prompt`.
    #[allow(deprecated)] // sampling (SEP-2577) is deprecated but clients still answer it
    async fn sample(
        &self,
        prompt: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResult, ErrorData> {
        use rmcp::model::{CreateMessageRequestParams, SamplingMessage};
        let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
        match context.peer.create_message(params).await {
            Ok(answer) => {
                let text = answer
                    .message
                    .content
                    .iter()
                    .find_map(|c| c.as_text().map(|t| t.text.clone()))
                    .unwrap_or_default();
                Ok(rmcp::model::CallToolResult::success(vec![
                    rmcp::model::ContentBlock::text(text),
                ]))
            }
            Err(e) => Ok(rmcp::model::CallToolResult::error(vec![
                rmcp::model::ContentBlock::text(format!("sampling failed: {e}")),
            ])),
        }
    }
}
