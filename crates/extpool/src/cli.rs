//! The command line, as parsed by clap (raw flags only; the commands turn
//! them into checked values).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const ROOT_AFTER: &str = "\
Examples:
  extpool                                      what extpool finds here, and what to try next
  extpool list tools                           every tool of every server, as mcp__<server>__<tool>
  extpool describe mcp__testkit__add           a tool's description and arguments
  extpool call mcp__testkit__echo message=hi   call a tool with key=value arguments
  extpool read skill://release-notes/SKILL.md
  extpool run /release-notes v1.2.0
  extpool --config .mcp.json list servers      use one file instead of discovering

Configuration:
  Without --config, extpool reads extpool.yaml, .mcp.json, .cursor/mcp.json,
  .vscode/mcp.json and .codex/config.toml in the working directory, then the
  user's ~/.config/extpool/extpool.yaml, ~/.claude.json, ~/.cursor/mcp.json,
  Claude Desktop's and VS Code's config and ~/.codex/config.toml.
  `extpool config paths` shows which exist. The plugins extpool, Claude Code,
  Codex and Gemini CLI installed, and every host's command files, are
  served too (`extpool list plugins`).

Exit codes:
  0  success
  1  failure (a server, tool, file or configuration problem)
  2  usage error (unknown command, bad flag or argument)";

/// extpool — MCP servers, Agent Skills and commands behind one registry.
#[derive(Debug, Parser)]
#[command(
    name = "extpool",
    version,
    about = "An extension host for AI agents: MCP servers, Agent Skills and commands behind one registry",
    after_help = ROOT_AFTER,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The runtime threads of a command that is not `extpool serve`: a short
/// command needs no more.
const COMMAND_WORKERS: usize = 2;

impl Cli {
    /// How many threads the command's runtime has: `extpool serve`'s
    /// `--workers`, else one per core over HTTP (a gateway shared by many
    /// sessions), else [`COMMAND_WORKERS`].
    pub fn workers(&self) -> usize {
        match &self.command {
            Some(Command::Serve(serve)) => match (serve.workers, serve.stdio) {
                (Some(n), _) => usize::from(n),
                (None, true) => COMMAND_WORKERS,
                (None, false) => std::thread::available_parallelism().map_or(1, usize::from),
            },
            _ => COMMAND_WORKERS,
        }
    }
}

/// Flags every command accepts.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Configuration file: extpool.yaml, .mcp.json, claude_desktop_config.json,
    /// VS Code mcp.json or Codex config.toml. Repeat to merge several (the first
    /// definition of a server wins). Without it, configs are discovered.
    #[arg(
        long,
        short = 'c',
        global = true,
        value_name = "FILE",
        env = "EXTPOOL_CONFIG"
    )]
    pub config: Vec<PathBuf>,

    /// Print machine-readable JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,

    /// When to use colour.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// Log details to stderr (repeat for more).
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// How log lines are written: text for people, json for a log pipeline
    /// (one object per line, with the fields of the spans it is in).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text,
          env = "EXTPOOL_LOG_FORMAT", value_name = "FORMAT")]
    pub log_format: LogFormat,

    /// Export traces over OTLP (HTTP/protobuf) to this collector, e.g.
    /// http://127.0.0.1:4318 (`/v1/traces` is added): a span per MCP
    /// request and a child span per upstream call. The standard
    /// OTEL_EXPORTER_OTLP_* variables work too.
    #[arg(long, global = true, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Lines for people (escaped for a terminal).
    Text,
    /// One JSON object per line.
    Json,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when printing to a terminal and NO_COLOR is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List tools, skills, commands, resources, servers or configuration sources.
    #[command(after_help = "\
Examples:
  extpool list                 everything, grouped
  extpool list tools           tools as the model sees them (mcp__<server>__<tool>)
  extpool list skills --json   skills as JSON, for programs
  extpool list sources         each server and skill root with its state")]
    List(ListArgs),

    /// Call a tool with JSON (--args) or key=value arguments.
    #[command(after_help = "\
Examples:
  extpool call mcp__testkit__add --args '{\"a\": 2, \"b\": 3}'
  extpool call mcp__testkit__echo message='hello world'
  extpool call mcp__testkit__add a=2 b=3 --json

Values of key=value arguments are parsed as JSON when they are valid JSON
(numbers, true/false, null, arrays, objects), otherwise taken as strings.")]
    Call(CallArgs),

    /// Show one tool: what it does, its arguments and a call to try.
    #[command(after_help = "\
Examples:
  extpool describe mcp__testkit__add          description, arguments, annotations
  extpool describe mcp__testkit__add --json   the same with the full JSON schemas")]
    Describe(DescribeArgs),

    /// Read a skill:// URI or an MCP resource URI.
    #[command(after_help = "\
Examples:
  extpool read skill://release-notes/SKILL.md
  extpool read skill://release-notes/references/format.md
  extpool read testkit://info")]
    Read(ReadArgs),

    /// Run a command (a skill's slash command or an MCP prompt) and print the prompt it renders.
    #[command(after_help = "\
Examples:
  extpool run /release-notes v1.2.0
  extpool run /mcp__testkit__greet name=Ada")]
    Run(RunArgs),

    /// Work with Agent Skills (SKILL.md folders).
    #[command(subcommand)]
    Skills(SkillsCommand),

    /// Install and manage extpool's own plugins; check a plugin folder.
    #[command(subcommand)]
    Plugins(PluginsCommand),

    /// Stream change events (tools, resources, prompts, skills) until interrupted.
    #[command(after_help = "\
Examples:
  extpool watch           one line per change
  extpool watch --json    one JSON object per line

Stop with Ctrl-C.")]
    Watch(WatchArgs),

    /// Check, show, import or locate configuration.
    #[command(subcommand)]
    Config(ConfigCommand),

    /// Print a shell completion script.
    #[command(after_help = "\
Examples:
  extpool completions bash > ~/.local/share/bash-completion/completions/extpool
  extpool completions zsh > ~/.zfunc/_extpool
  extpool completions fish > ~/.config/fish/completions/extpool.fish")]
    Completions(CompletionsArgs),
    /// Say what this machine supports: permission profiles (`sandbox:`) and the kernel features they need.
    #[command(after_help = "\
Examples:
  extpool doctor          what the kernel offers, and a confined process started for real
  extpool doctor --json   the same as one JSON object")]
    Doctor,
    /// MCP servers of extpool.yaml (add, remove, list) and OAuth for remote ones (login, logout, auth-status).
    #[command(subcommand)]
    Mcp(crate::cmd::mcp::McpCommand),

    /// Write an agent's own config so it reaches the gateway (Claude Code, Codex, Cursor, VS Code, Gemini CLI).
    #[command(after_help = "\
Examples:
  extpool connect claude-code                    ~/.claude.json reaches the local gateway
  extpool connect codex --scope project          .codex/config.toml in this project
  extpool connect cursor --url https://gw.example/mcp --token-env GW_TOKEN
  extpool connect vscode --print                 the snippet alone; nothing written
  extpool connect gemini --remove                take the entry out again
  extpool connect --status                       which agents reach which gateway

Only the entry is written: comments and everything else in the agent's file
stay. A token is never written; the entry names the environment variable the
agent reads it from (EXTPOOL_GATEWAY_TOKEN when it is set or the gateway is
not on this machine). Running it twice changes nothing.")]
    Connect(crate::cmd::connect::ConnectArgs),

    /// Run the gateway in the background: a systemd user unit (Linux) or a launchd agent (macOS).
    #[command(
        subcommand,
        after_help = "\
Examples:
  extpool service install                     serve this directory's configuration at login
  extpool service install --listen 127.0.0.1:9000 --serve-config ~/team.yaml
  extpool service status                      the unit, the state store, the log, whether it runs
  extpool service uninstall"
    )]
    Service(crate::cmd::service::ServiceCommand),

    /// Show one server's log on a running gateway: its stderr and extpool's lines about it.
    #[command(after_help = "\
Examples:
  extpool logs github                     what github wrote to stderr, and its state changes
  extpool logs github --follow            and every new line until Ctrl-C
  extpool logs github --json --gateway http://gw.internal:8520

The gateway keeps the last 200 lines of each server. It is for an operator:
the gateway's token or an operator API key in EXTPOOL_GATEWAY_TOKEN.")]
    Logs(crate::cmd::gateway_servers::LogsArgs),

    /// Restart one server of a running gateway (its connection closed and made again).
    #[command(after_help = "\
Examples:
  extpool restart github                               the local gateway's github server
  extpool restart github --gateway http://gw.internal:8520

A stdio server's process exits and a new one starts; the other servers are
untouched. It is for an operator: the gateway's token or an operator API key
in EXTPOOL_GATEWAY_TOKEN.")]
    Restart(crate::cmd::gateway_servers::RestartArgs),

    /// Turn a tool off or on again: a deny rule in extpool.yaml's permissions.
    #[command(
        subcommand,
        after_help = "\
Examples:
  extpool tools disable mcp__github__delete_repo     a deny rule written to extpool.yaml
  extpool tools enable mcp__github__delete_repo      that rule removed again
  extpool tools disable 'mcp__github__delete_*' --scope user

Only the rule's line is written: comments and everything else stay. A running
gateway applies it from its configuration watcher."
    )]
    Tools(crate::cmd::tools::ToolsCommand),

    /// Find servers in an MCP Registry (the official one, or --registry URL).
    #[command(after_help = "\
Examples:
  extpool search weather                    servers with weather in their name
  extpool search github --json              the same, with what each would run
  extpool search files --registry https://registry.example.org

Add one with `extpool mcp add NAME --from-registry`; what it runs is shown first.")]
    Search(crate::cmd::registry::SearchArgs),

    /// Serve every MCP server, skill and command as one MCP server (the gateway).
    #[command(after_help = "\
Examples:
  extpool serve                                  streamable HTTP on 127.0.0.1:8520/mcp
  extpool serve --stdio                          one client on stdin/stdout (add this to an agent)
  extpool serve --listen 0.0.0.0:8520 --token-file gw.token
  extpool serve --mcp-server docs=https://docs.example/mcp --mcp-prompts=false
  extpool serve --toolhive-group dev             only ToolHive's `dev` workloads
  extpool serve --toolhive=false --watch-config=false

Every client session shares one connection per upstream server. On an address
other than loopback, clients must send the gateway's bearer token
(EXTPOOL_GATEWAY_TOKEN or --token-file). While serving, edits of the
configuration files add, change and remove servers, and ToolHive's running
workloads are discovered (ListMcpSources shows each source's state).")]
    Serve(Box<ServeArgs>),

    /// Sessions of a running gateway: list, create, get, refresh, delete, sources.
    #[command(after_help = "\
Examples:
  extpool sessions list
  extpool sessions create --id alice
  extpool sessions refresh alice
  extpool sessions --gateway http://gw.internal:8520 sources")]
    Sessions(SessionsArgs),

    /// Static API keys of a gateway's state store, for scripts and CI: create, list, revoke.
    #[command(after_help = "\
Examples:
  extpool api-keys create ci            prints the key once; only its digest is kept
  extpool api-keys create admin --operator
  extpool api-keys list
  extpool api-keys revoke ci            every replica refuses it from now on

A client sends a key as its bearer token (Authorization: Bearer epk_...).
Its caller is the key's name; an operator key sees every session.")]
    ApiKeys(ApiKeysArgs),
}

/// `extpool api-keys …`.
#[derive(Debug, Args)]
pub struct ApiKeysArgs {
    /// The gateway's state store: a SQLite path (`sqlite:PATH`) or
    /// `postgres://…` (default: state.db in the user's data directory).
    #[arg(long, value_name = "URL", env = "EXTPOOL_STATE", global = true)]
    pub state: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: ApiKeysCommand,
}

/// The operations on API keys.
#[derive(Debug, Subcommand)]
pub enum ApiKeysCommand {
    /// Make a key; it is printed once (only its digest is kept).
    Create {
        /// Its name: the caller's name in sessions, logs and the audit log.
        name: String,
        /// An operator's key: sees and manages every session, reads /metrics.
        #[arg(long)]
        operator: bool,
    },
    /// The keys: name, operator or not, made and last used (never a secret).
    List,
    /// Revoke a key: every replica refuses it from now on.
    Revoke {
        /// Its name.
        name: String,
    },
}

/// `extpool serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to serve streamable HTTP on (`/mcp`, `/healthz`, `/readyz`, `/metrics`).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:8520",
        conflicts_with = "stdio"
    )]
    pub listen: std::net::SocketAddr,

    /// Serve one client over stdin and stdout instead of HTTP.
    #[arg(long)]
    pub stdio: bool,

    /// Threads that serve requests (default: one per core over HTTP, 2
    /// with --stdio); each stdio server has a thread of its own besides.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub workers: Option<u16>,

    /// File holding the bearer token clients must send (required off loopback).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// The identity provider whose access tokens name who is calling
    /// (OpenID Connect discovery at URL/.well-known/openid-configuration):
    /// every request then needs a valid token, on loopback too, and each
    /// caller sees only its own sessions (default: gateway.auth.issuer).
    #[arg(long, value_name = "URL", conflicts_with = "stdio")]
    pub auth_issuer: Option<String>,

    /// What the issuer's tokens must be for, their `aud` (default:
    /// gateway.auth.audience, else http://LISTEN).
    #[arg(long, value_name = "AUD", conflicts_with = "stdio")]
    pub auth_audience: Option<String>,

    /// A token claim kept on the caller's principal, for permission rules
    /// and logs (repeatable; default: gateway.auth.claims, else groups).
    #[arg(long = "auth-claim", value_name = "CLAIM", conflicts_with = "stdio")]
    pub auth_claims: Vec<String>,

    /// CLAIM=VALUE that makes a caller an operator, who sees and manages
    /// every session and reads /metrics (default: gateway.auth.operator).
    #[arg(long, value_name = "CLAIM=VALUE", conflicts_with = "stdio")]
    pub auth_operator: Option<String>,

    /// A scope clients should ask the issuer for, advertised in the
    /// protected-resource metadata and the 401 challenge (repeatable;
    /// default: gateway.auth.scopes, else none).
    #[arg(long = "auth-scope", value_name = "SCOPE", conflicts_with = "stdio")]
    pub auth_scopes: Vec<String>,

    /// An upstream streamable-HTTP server, NAME=URL (repeatable; wins over a
    /// configured server of the same name).
    #[arg(long = "mcp-server", value_name = "NAME=URL")]
    pub mcp_servers: Vec<String>,

    /// Allow plain http:// to a non-loopback host for server NAME (repeatable).
    #[arg(long = "mcp-server-insecure-http", value_name = "NAME")]
    pub insecure_http: Vec<String>,

    /// List server NAME's tools and prompts under their own names, without
    /// mcp__NAME__, where that collides with nothing (repeatable).
    #[arg(long = "unprefixed", value_name = "NAME")]
    pub unprefixed: Vec<String>,

    /// Offer ListMcpResources / ReadMcpResource tools (default: the configuration's).
    #[arg(long, value_name = "BOOL")]
    pub mcp_resource_tools: Option<bool>,

    /// Offer MCP prompts as commands / prompts (default: the configuration's).
    #[arg(long, value_name = "BOOL")]
    pub mcp_prompts: Option<bool>,

    /// Accept this Host header too (repeatable; loopback and the listen address always are).
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,

    /// Accept browser requests from this origin, e.g. https://app.example:443 (repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,

    /// Append one JSON line per tool call to this file (no arguments, only their hash).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,

    /// Offer a form on the operator page (`/`) to call each tool: it calls
    /// real tools, as any client of /mcp may.
    #[arg(long)]
    pub playground: bool,

    /// Largest request body accepted, in bytes; a larger one gets HTTP 413.
    #[arg(long, value_name = "BYTES", default_value_t = extpool_server::gateway::DEFAULT_MAX_BODY_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_request_bytes: u64,

    /// Most bytes the answers kept for resuming hold, gateway-wide (SSE
    /// streams a client whose connection broke reconnects to); past it the
    /// streams that finished longest ago are dropped first.
    #[arg(long, value_name = "BYTES", default_value_t = extpool_server::gateway::DEFAULT_MAX_REPLAY_BYTES as u64)]
    pub max_replay_bytes: u64,

    /// Most operator page event streams open at once (`/v1/page/events`,
    /// one per open page); one more is answered 503.
    #[arg(long, value_name = "N", default_value_t = extpool_server::gateway::DEFAULT_MAX_PAGE_STREAMS as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_page_streams: u64,

    /// Bytes of events an operator page stream's reader may fall behind
    /// (what it was sent and has not read, and what came since) before
    /// its connection is closed.
    #[arg(long, value_name = "BYTES", default_value_t = extpool_server::gateway::DEFAULT_PAGE_STREAM_BYTES as u64)]
    pub page_stream_bytes: u64,

    /// Most MCP sessions held at once (every endpoint); one more is refused,
    /// told when the longest-idle one expires.
    #[arg(long, value_name = "N", default_value_t = extpool_server::gateway::DEFAULT_MAX_SESSIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: u64,

    /// Most sessions one caller (principal) holds, of each kind: MCP
    /// sessions on this replica, durable sessions in the store; one more is
    /// refused with HTTP 429 (default: gateway.limits.sessions_per_principal,
    /// else 256).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub sessions_per_principal: Option<u64>,

    /// Seconds an MCP session (or a durable session's view) is kept in
    /// memory with no request or stream open; its stored record stays
    /// (twice as long, at least an hour) and is resumed on its next request.
    #[arg(long, value_name = "SECS", default_value_t = extpool_server::gateway::DEFAULT_SESSION_IDLE_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle_timeout: u64,

    /// Most HTTP connections open at once; one more is answered 503 and
    /// closed.
    #[arg(long, value_name = "N", default_value_t = extpool_server::listener::DEFAULT_MAX_CONNECTIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,

    /// Seconds a connection has to send a whole request header, from
    /// connecting and from the end of its last response (idle keep-alive
    /// connections close after it).
    #[arg(long, value_name = "SECS", default_value_t = extpool_server::listener::DEFAULT_HEADER_READ_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout: u64,

    /// Seconds requests in flight get to finish when serve stops on a
    /// signal (new connections are refused meanwhile); each one still
    /// running then is answered with an error and cancelled. 0 cancels at
    /// once.
    #[arg(long, value_name = "SECS", default_value_t = extpool_server::gateway::DEFAULT_SHUTDOWN_TIMEOUT.as_secs())]
    pub shutdown_timeout: u64,

    /// Most tool calls one client session has in flight at once; one more is refused.
    #[arg(long, value_name = "N", default_value_t = extpool_server::gateway::DEFAULT_MAX_CALLS_PER_SESSION as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_calls_per_session: u64,

    /// Where sessions and their grants are kept: a SQLite path (`sqlite:PATH`)
    /// or `postgres://…` (default: state.db in the user's data directory).
    #[arg(long, value_name = "URL", env = "EXTPOOL_STATE")]
    pub state: Option<String>,

    /// Refuse per-session MCP servers in session creation requests.
    #[arg(long)]
    pub no_session_servers: bool,

    /// Accept local commands (stdio) as per-session MCP servers, not only
    /// remote URLs: whoever may create a session may then run programs as
    /// this user. For a gateway whose session API is as trusted as its
    /// configuration.
    #[arg(long, conflicts_with = "no_session_servers")]
    pub session_commands: bool,

    /// Accept per-session servers on loopback and private network
    /// addresses (127/8, 10/8, 172.16/12, 192.168/16, fc00::/7, ::1), not
    /// only public ones; link-local and cloud metadata addresses stay
    /// refused.
    #[arg(long, conflicts_with = "no_session_servers")]
    pub private_session_servers: bool,

    /// Defer tool schemas above a budget: clients get the tools' names and
    /// one-line descriptions in a ToolSearch tool, and load the schemas they
    /// need by searching (a deferred tool can also be called by name).
    #[arg(long)]
    pub tool_search: bool,

    /// The schema budget of --tool-search, in bytes of tool definitions
    /// (default 40000, about 10,000 tokens).
    #[arg(long, value_name = "BYTES", requires = "tool_search")]
    pub tool_search_budget: Option<usize>,
    /// This gateway's id among replicas sharing one state store (default:
    /// the host name and a random suffix).
    #[arg(long, value_name = "ID", env = "EXTPOOL_REPLICA_ID")]
    pub replica_id: Option<String>,

    /// Seconds between this replica's heartbeats to the state store; a
    /// replica silent for three is taken for gone and its sessions open
    /// on whichever replica serves them next.
    #[arg(long, value_name = "SECONDS", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub replica_heartbeat: u64,

    /// Discover the MCP servers ToolHive runs, polling its workloads API
    /// (default: the configuration's discovery.toolhive.enabled, true).
    #[arg(long, value_name = "BOOL")]
    pub toolhive: Option<bool>,

    /// Only the ToolHive workloads of this group.
    #[arg(long, value_name = "GROUP")]
    pub toolhive_group: Option<String>,

    /// ToolHive's API (`thv serve`; default: discovery.toolhive.url, else
    /// http://127.0.0.1:8080).
    #[arg(long, value_name = "URL", env = "TOOLHIVE_API_URL")]
    pub toolhive_url: Option<String>,

    /// Apply edits of the configuration files' servers while serving
    /// (default: the configuration's discovery.watch_config, true).
    #[arg(long, value_name = "BOOL")]
    pub watch_config: Option<bool>,
}

/// `extpool sessions …`: the operator API of a running gateway.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Which gateway.
    #[command(flatten)]
    pub addr: crate::cmd::gateway_servers::GatewayAddr,
    /// What to do.
    #[command(subcommand)]
    pub command: SessionsCommand,
}

/// The operations on sessions.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions.
    List,
    /// Create a session (optionally with an id; auto-granted with --auto-grant).
    Create {
        /// Its id (generated when absent).
        #[arg(long)]
        id: Option<String>,
        /// Grant every active name as it appears.
        #[arg(long)]
        auto_grant: bool,
    },
    /// Show a session: status, grants, per-session servers.
    Get {
        /// The session.
        id: String,
    },
    /// Grant a session the names active now (idempotent; never removes one).
    Refresh {
        /// The session.
        id: String,
    },
    /// Close a session's servers and forget it.
    Delete {
        /// The session.
        id: String,
    },
    /// Every source's cached state (ListMcpSources).
    Sources,
}

/// What `list` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListKind {
    /// Tools, namespaced mcp__<server>__<tool>.
    Tools,
    /// Agent Skills (local and MCP-hosted).
    Skills,
    /// Slash commands: skills', command files' and MCP prompts.
    Commands,
    /// Plugins: extpool's own and those Claude Code, Codex and Gemini CLI
    /// installed, enabled or not.
    Plugins,
    /// Subagent definitions of the enabled plugins.
    Agents,
    /// MCP resources (and, in the table, resource templates).
    Resources,
    /// MCP resource templates (URI templates a server can fill in).
    Templates,
    /// Configured servers and skill roots with their state.
    Sources,
    /// Configured MCP servers (without connecting).
    Servers,
}

/// `extpool list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// What to list (default: tools, skills, commands and resources).
    #[arg(value_enum)]
    pub kind: Option<ListKind>,
    /// With `skills`: also start the MCP servers and list the skills they
    /// host (without it, `list skills` starts no server).
    #[arg(long)]
    pub hosted: bool,
    /// With `sources`: the sources of the gateway running at URL (its
    /// `GET /v1/sources`, what its operator page shows), instead of
    /// starting this configuration's servers. `EXTPOOL_GATEWAY_TOKEN` is
    /// sent as its bearer token when set.
    #[arg(long, value_name = "URL")]
    pub gateway: Option<String>,
}

/// `extpool call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's catalog name (see `extpool list tools`).
    pub tool: String,
    /// Arguments as one JSON object.
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Arguments as key=value pairs (merged over --args).
    #[arg(value_name = "KEY=VALUE")]
    pub pairs: Vec<String>,
}

/// `extpool describe`.
#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// The tool's catalog name or alias (see `extpool list tools`).
    pub tool: String,
}

/// `extpool read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The URI to read.
    pub uri: String,
}

/// `extpool run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The command, with or without the leading `/`.
    pub command: String,
    /// Its arguments (positional words, or key=value for named arguments).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// `extpool plugins …`.
#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// Install a plugin from a folder, a git repository or a marketplace,
    /// after saying what it will run.
    #[command(after_help = "\
Examples:
  extpool plugins add ./my-plugin
  extpool plugins add https://github.com/acme/kit.git#v1.2.0
  extpool plugins add kit@acme                  from a marketplace added before
  extpool plugins add ./my-plugin --yes         in a script

Before anything is installed, extpool says what the plugin will run (its
MCP servers' commands and URLs) and asks; without a terminal it refuses
unless --yes is given. Hooks are listed and never run by extpool. Adding
the same commit again changes nothing.")]
    Add(PluginAddArgs),
    /// Marketplaces: catalogs of plugins to install by name.
    #[command(subcommand)]
    Marketplace(MarketplaceCommand),
    /// The plugins extpool installed (`extpool list plugins` shows every host's).
    List,
    /// Serve an installed plugin again (its servers start).
    Enable {
        /// Its name.
        name: String,
    },
    /// Stop serving an installed plugin (it stays installed).
    Disable {
        /// Its name.
        name: String,
    },
    /// Uninstall a plugin extpool installed.
    Remove {
        /// Its name.
        name: String,
    },
    /// Check a plugin folder (any format) and say what it provides.
    #[command(after_help = "\
Examples:
  extpool plugins validate ./my-plugin
  extpool plugins validate ./my-plugin --json   one object: outcome, name, skills, servers, commands, diagnostics")]
    Validate {
        /// The plugin's folder.
        path: PathBuf,
    },
}

/// `extpool plugins add`.
#[derive(Debug, Args)]
pub struct PluginAddArgs {
    /// A folder, a git URL (with #REF for a branch, tag or commit), or
    /// NAME@MARKETPLACE.
    #[arg(value_name = "PATH|GIT-URL[#REF]|NAME@MARKETPLACE")]
    pub source: String,
    /// Install and enable without asking (for scripts).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `extpool plugins marketplace …`.
#[derive(Debug, Subcommand)]
pub enum MarketplaceCommand {
    /// Add a marketplace (a folder or a git repository with
    /// .claude-plugin/marketplace.json or .agents/plugins/marketplace.json).
    Add {
        /// The marketplace's folder or git URL (with #REF).
        #[arg(value_name = "PATH|GIT-URL")]
        source: String,
    },
    /// The marketplaces added and the plugins each lists.
    List,
}

/// `extpool skills …`.
#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Check SKILL.md files against the Agent Skills specification.
    #[command(after_help = "\
Examples:
  extpool skills validate ./skills              every skill below ./skills
  extpool skills validate --strict my-skill     the specification's rules; exit 1 on any problem

Problems are printed as path:line: message.")]
    Validate(ValidateArgs),
}

/// `extpool skills validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Apply the specification's rules strictly and exit 1 on any problem.
    #[arg(long)]
    pub strict: bool,
    /// Skill folders, SKILL.md files, or directories holding skill folders.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// `extpool watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {}

/// `extpool config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Check the configuration and report every problem with file:line:column.
    #[command(after_help = "\
Examples:
  extpool config check
  extpool --config extpool.yaml config check --json")]
    Check,
    /// Print the effective configuration as extpool.yaml (secrets as ${VAR}).
    #[command(after_help = "\
Examples:
  extpool config show
  extpool --config ~/.cursor/mcp.json config show")]
    Show,
    /// Write the equivalent extpool.yaml of the configs read.
    #[command(after_help = "\
Examples:
  extpool config import                         discovered configs → stdout
  extpool config import .mcp.json -o extpool.yaml
  extpool config import ~/.codex/config.toml --keep-secrets -o extpool.yaml

Literal secrets (tokens pasted into a config) are replaced by ${VAR}
references and the variables to export are listed, unless --keep-secrets.")]
    Import(ImportArgs),
    /// List the places configurations are looked for, and which exist.
    Paths,
    /// Print the JSON Schema of extpool.yaml, for editors (or the configuration reference as Markdown).
    #[command(after_help = "\
Examples:
  extpool config schema > extpool.schema.json
      then, as the first line of extpool.yaml:
      # yaml-language-server: $schema=extpool.schema.json
  extpool config schema --markdown     the configuration reference")]
    Schema {
        /// The configuration reference as Markdown instead.
        #[arg(long)]
        markdown: bool,
    },
}

/// `extpool config import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files to import (default: the discovered configs, or --config).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Copy literal secrets instead of replacing them with ${VAR} references.
    #[arg(long)]
    pub keep_secrets: bool,
}

/// `extpool completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
