//! The third-party MCP peers that tests and benchmarks run against, as
//! installed by `scripts/peers.sh` into `.peers/`:
//! `@modelcontextprotocol/server-everything`, the MCP Apps example server
//! `@modelcontextprotocol/server-basic-vanillajs` and the TypeScript SDK
//! under `.peers/node_modules` (with panva's `oidc-provider`, for identity
//! tests),
//! and a Python venv with the `mcp` SDK (and `skills-ref`) under
//! `.peers/venv`.
//!
//! The directory comes from `EXTPOOL_PEERS_DIR` (set by `scripts/test.sh`),
//! or `<workspace root>/.peers` when unset. A missing peer is never a reason
//! to skip: every accessor panics with "peer missing: … run scripts/peers.sh".

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use crate::child::{ListeningChild, StdioCommand};

/// Environment variable naming the peers directory.
pub const PEERS_DIR_ENV: &str = "EXTPOOL_PEERS_DIR";

/// The directory peers are installed in: `$EXTPOOL_PEERS_DIR`, or
/// `<workspace root>/.peers`.
pub fn peers_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(PEERS_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    workspace_root().join(".peers")
}

/// The workspace root (two levels above this crate).
fn workspace_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .nth(2)
        .unwrap_or(crate_dir)
        .to_path_buf()
}

/// Panics with the standard "peer missing" message unless `path` exists.
fn require(path: PathBuf, what: &str) -> PathBuf {
    if !path.exists() {
        panic!(
            "peer missing: {what} not found at {}; run scripts/peers.sh (peers dir: {}, override with {PEERS_DIR_ENV})",
            path.display(),
            peers_dir().display()
        );
    }
    path
}

/// Finds `program` on `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The `node` executable.
///
/// # Panics
///
/// When `node` is not on `PATH`.
pub fn node() -> PathBuf {
    on_path("node").unwrap_or_else(|| {
        panic!("peer missing: `node` is not on PATH; install Node.js, then run scripts/peers.sh")
    })
}

/// `.peers/node_modules`, where the npm peers live (server-everything and
/// `@modelcontextprotocol/sdk`, for the TypeScript client in benchmarks).
///
/// # Panics
///
/// When the directory does not exist.
pub fn node_modules() -> PathBuf {
    require(peers_dir().join("node_modules"), "node_modules")
}

/// `dist/index.js` of `@modelcontextprotocol/server-everything`.
///
/// # Panics
///
/// When the package is not installed.
pub fn server_everything_script() -> PathBuf {
    require(
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "@modelcontextprotocol/server-everything",
    )
}

/// `server-everything` over stdio: `node …/dist/index.js stdio`.
///
/// # Panics
///
/// When node or the package is missing.
pub fn server_everything() -> StdioCommand {
    StdioCommand {
        program: node(),
        args: vec![
            server_everything_script().to_string_lossy().into_owned(),
            "stdio".to_owned(),
        ],
    }
}

/// `dist/index.js` of `@modelcontextprotocol/server-basic-vanillajs`, the
/// MCP Apps example server: tool `get-time`, whose `_meta.ui.resourceUri`
/// names its view, the `ui://get-time/mcp-app.html` resource.
///
/// # Panics
///
/// When the package is not installed.
pub fn server_basic_vanillajs_script() -> PathBuf {
    require(
        peers_dir().join("node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js"),
        "@modelcontextprotocol/server-basic-vanillajs",
    )
}

/// The MCP Apps example server over stdio: `node …/dist/index.js --stdio`.
///
/// # Panics
///
/// When node or the package is missing.
pub fn server_basic_vanillajs() -> StdioCommand {
    StdioCommand {
        program: node(),
        args: vec![
            server_basic_vanillajs_script()
                .to_string_lossy()
                .into_owned(),
            "--stdio".to_owned(),
        ],
    }
}

/// A Node preload that prints the `LISTENING` line for servers that only
/// log their port (shipped in this crate's `peers/` directory).
fn listening_preload() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/listening.mjs")
}

/// A third-party MCP server running over streamable HTTP in a child
/// process on an OS-assigned port; its process group is killed on drop.
#[derive(Debug)]
pub struct PeerHttpServer {
    child: ListeningChild,
}

impl PeerHttpServer {
    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> &str {
        self.child.url()
    }

    /// The process id (also the process group id).
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// What the server wrote to stderr so far (its last lines).
    pub fn stderr(&self) -> String {
        self.child.stderr()
    }
}

/// Starts `server-everything` over streamable HTTP (`PORT=0`, port read
/// back through a preload) and waits until it listens.
///
/// # Panics
///
/// When node or the package is missing, or the server does not come up.
pub fn server_everything_http() -> PeerHttpServer {
    let mut command = Command::new(node());
    command
        .arg("--import")
        .arg(listening_preload())
        .arg(server_everything_script())
        .arg("streamableHttp")
        .env("PORT", "0");
    PeerHttpServer {
        child: ListeningChild::spawn(command, "server-everything (streamableHttp)"),
    }
}

/// The peers venv's Python (`.peers/venv/bin/python`, with `mcp` installed).
///
/// # Panics
///
/// When the venv does not exist.
pub fn python() -> PathBuf {
    require(
        peers_dir().join("venv/bin/python"),
        "Python venv with the mcp SDK",
    )
}

/// The `agentskills` command of PyPI `skills-ref`, the reference SKILL.md
/// validator, from the peers venv.
///
/// # Panics
///
/// When it is not installed.
pub fn skills_ref() -> PathBuf {
    require(
        peers_dir().join("venv/bin/agentskills"),
        "skills-ref (agentskills)",
    )
}

/// This crate's `peers/fastmcp_server.py`: a Python `mcp` SDK server with
/// tools `echo`, `add`, `structured`, resource `testkit://py/info` and
/// prompt `greet`.
pub fn fastmcp_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/fastmcp_server.py")
}

/// The Python `mcp` SDK server over stdio: `python fastmcp_server.py stdio`.
///
/// # Panics
///
/// When the venv is missing.
pub fn fastmcp_stdio() -> StdioCommand {
    StdioCommand {
        program: python(),
        args: vec![
            fastmcp_script().to_string_lossy().into_owned(),
            "stdio".to_owned(),
        ],
    }
}

/// The Python `mcp` SDK (FastMCP / MCPServer) test server in a child process.
#[derive(Debug)]
pub struct FastMcpServer;

impl FastMcpServer {
    /// Starts `fastmcp_server.py http` on an OS-assigned port and waits
    /// until it listens.
    ///
    /// # Panics
    ///
    /// When the venv is missing or the server does not come up.
    pub fn spawn_http() -> PeerHttpServer {
        let mut command = Command::new(python());
        command.arg(fastmcp_script()).arg("http");
        PeerHttpServer {
            child: ListeningChild::spawn(command, "Python mcp server (streamable HTTP)"),
        }
    }

    /// The stdio command line; same as [`fastmcp_stdio`].
    pub fn stdio() -> StdioCommand {
        fastmcp_stdio()
    }
}

/// `.peers/node_modules/oidc-provider`: panva's OpenID provider, which
/// [`crate::oidc::OidcProvider`] runs (with [`node22`]).
///
/// # Panics
///
/// When the package is not installed.
pub fn oidc_provider_package() -> PathBuf {
    require(
        peers_dir().join("node_modules/oidc-provider"),
        "oidc-provider (npm package)",
    )
}

/// Node.js 22 from the `node@22` npm package (the conformance suite needs
/// Node ≥ 22; the machine's `node` may be older).
///
/// # Panics
///
/// When the package is not installed.
pub fn node22() -> PathBuf {
    require(
        peers_dir().join("node_modules/node/bin/node"),
        "node@22 (npm package)",
    )
}

/// `dist/index.js` of `@modelcontextprotocol/conformance` (the official suite).
///
/// # Panics
///
/// When the package is not installed.
pub fn conformance_script() -> PathBuf {
    require(
        peers_dir().join("node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        "@modelcontextprotocol/conformance",
    )
}

/// `dist/index.js` of the suite's draft release (0.2.0-alpha, installed as
/// `conformance-draft`): the one with the 2026-07-28 era's scenarios.
///
/// # Panics
///
/// When the package is not installed.
pub fn conformance_draft_script() -> PathBuf {
    require(
        peers_dir().join("node_modules/conformance-draft/dist/index.js"),
        "conformance-draft (npm:@modelcontextprotocol/conformance@0.2.0-alpha.12)",
    )
}

/// This crate's `peers/mcp_client.py`: the Python `mcp` SDK client that
/// runs a JSON list of steps (see the script) and prints one JSON line per
/// step. Append `--url URL` or `--stdio CMD ARGS…`, then the steps.
///
/// # Panics
///
/// When the venv is missing.
pub fn python_client() -> Command {
    let mut command = Command::new(python());
    command.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/mcp_client.py"));
    command
}

/// This crate's `peers/mcp_client.mjs`: the TypeScript SDK client with the
/// same steps as [`python_client`].
///
/// # Panics
///
/// When Node.js or the SDK is missing.
pub fn typescript_client() -> Command {
    let mut command = Command::new(node());
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/mcp_client.mjs"))
        .env("EXTPOOL_NODE_MODULES", node_modules());
    command
}

/// This crate's `peers/url_elicitation.mjs`: several TypeScript SDK
/// clients, each a session of its own, that run a JSON list of steps about
/// URL-mode elicitation (see the script). Append `--url URL` or `--stdio
/// CMD ARGS…` (a process per client), then the steps.
///
/// # Panics
///
/// When Node.js or the SDK is missing.
pub fn typescript_url_elicitation_clients() -> Command {
    let mut command = Command::new(node());
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/url_elicitation.mjs"))
        .env("EXTPOOL_NODE_MODULES", node_modules());
    command
}

/// This crate's `peers/tasks.mjs`: several TypeScript SDK clients, each a
/// session of its own, that run a JSON list of steps about tasks (MCP
/// 2025-11-25: start, get, wait, result, list, cancel; see the script).
/// Append `--url URL`, then the steps.
///
/// # Panics
///
/// When Node.js or the SDK is missing.
pub fn typescript_tasks_clients() -> Command {
    let mut command = Command::new(node());
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/tasks.mjs"))
        .env("EXTPOOL_NODE_MODULES", node_modules());
    command
}

/// This crate's `peers/tasks.py`: the steps of [`typescript_tasks_clients`]
/// with the Python SDK's clients (its task types, sent through its generic
/// `send_request`). Append `--url URL`, then the steps.
///
/// # Panics
///
/// When Python or the SDK is missing.
pub fn python_tasks_clients() -> Command {
    let mut command = Command::new(python());
    command.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/tasks.py"));
    command
}

/// A host's own command line `bin` from `.peers/node_modules/.bin` (a
/// native program, or a script run by Node.js 22 when `node_script`),
/// Node.js 22 first on `PATH` for what it starts, `HOME` set to `home`
/// and nothing of the machine's own configuration.
fn host_cli(bin: &str, package: &str, home: &Path, node_script: bool) -> Command {
    let program = require(peers_dir().join("node_modules/.bin").join(bin), package);
    let node = node22();
    let node_dir = node.parent().map(Path::to_path_buf).unwrap_or_default();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![node_dir];
    dirs.extend(std::env::split_paths(&path));
    let mut command = if node_script {
        let mut c = Command::new(node);
        c.arg(program);
        c
    } else {
        Command::new(program)
    };
    command
        .env("PATH", std::env::join_paths(dirs).unwrap_or(path))
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        // Nothing the tests do needs a network or a login.
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    command
}

/// Claude Code's own `claude` (`@anthropic-ai/claude-code`, a native
/// program from its platform package), with `HOME` set to `home`. Its
/// `plugin marketplace add DIR` and `plugin install NAME@MARKET` work
/// offline.
///
/// # Panics
///
/// When the package or Node.js 22 is not installed.
pub fn claude(home: &Path) -> Command {
    host_cli("claude", "@anthropic-ai/claude-code", home, false)
}

/// Gemini CLI's own `gemini` (`@google/gemini-cli`, run by Node.js 22),
/// with `HOME` set to `home`. Its `extensions install DIR` works offline
/// (it asks on stdin whether to trust the folder).
///
/// # Panics
///
/// When the package or Node.js 22 is not installed.
pub fn gemini(home: &Path) -> Command {
    host_cli("gemini", "@google/gemini-cli", home, true)
}
