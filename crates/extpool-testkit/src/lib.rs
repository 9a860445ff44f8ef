//! extpool-testkit: test support for every extpool crate.
//!
//! Tests of a capability host are only worth something against real servers,
//! so this crate provides one: `extpool-testkit-server`, an rmcp MCP server
//! (stdio and streamable HTTP) whose tools are made for tests — echo, add,
//! persistent counters to count executions across reconnects, sleep with
//! cancellation accounting, a crash mid-call, `list_changed` on demand, large
//! and structured results, resources, prompts and an MCP-hosted skill.
//!
//! Around it, helpers every test needs:
//! - [`server_binary`]: the path of the built server, built on first use;
//! - [`raw_echo_binary`]: `extpool-raw-echo`, a hand-written stdio echo
//!   server without an SDK, for benchmarks only (the floor a client's cost
//!   is measured on);
//! - [`StateDir`]: a temporary state directory with counter readers;
//! - [`HttpServer`] and [`stdio_command`]: the server as a child process,
//!   killed with its whole process group on drop;
//! - [`peers`]: the third-party peers (`server-everything`, a Python FastMCP
//!   server) installed by `scripts/peers.sh`.
//!
//! - [`client`]: plain rmcp clients, the baseline for benchmarks.
//! - [`balancer`]: an HTTP load balancer (round robin or failover) in front
//!   of gateway replicas.
//! - [`procs`]: live processes by command-line marker, killing one like a
//!   crash, and a server link a test can break and restore.
//! - [`postgres`]: a private PostgreSQL server (Unix socket only) for the
//!   state store's tests.
//! - [`small_disk`]: a small tmpfs a test fills and frees, for a disk that
//!   is really full.
//! - [`conformance`]: the official conformance suite, run and tallied.
//! - [`oauth`]: a local OAuth authorization server guarding the test server.
//! - [`oidc`]: a real OpenID provider (panva's `oidc-provider`) issuing JWT
//!   access tokens for users `alice`, `bob` and `ops`, with key rotation and
//!   edge-case token signing, for identity tests.
//! - [`toolhive`]: a stand-in for ToolHive's workloads API (its real wire
//!   format), for discovery tests.
//! - [`plugins`]: plugins written from each host's documentation and
//!   installed in a home folder as each host's CLI installs them.
//! - [`LocalSource`]: an in-process capability (tools, resources, prompts,
//!   change events) for catalog and host tests that need no process.
//!
//! Nothing here skips silently: a missing peer or a server that cannot be
//! built is a panic with a message saying how to fix it.
//!
//! # The server
//!
//! `extpool-testkit-server [--transport stdio|http] [--bind ADDR]
//! [--state-dir DIR] [--die-on-start] [--hang-on-initialize]
//! [--extra-tools N] [--page-size K] [--no-skills-extension] [--bad-digest] [--directory-read]
//! [--require-bearer TOKEN] [--ignore-eof] [--ignore-sigterm] [--conformance]
//! [--nagle] [--tools-file FILE] [--lists-file FILE] [--echo-argv] [-- ARG...]`
//!
//! `--tools-file FILE` serves the tools FILE defines (a JSON array of MCP
//! tool definitions, any schema and annotations) instead of every other; a
//! call of one answers `called <name> with <its arguments as JSON>`.
//! `--lists-file FILE` also lists the tools, prompts, resources and resource
//! templates FILE defines (a JSON object with `tools`, `prompts`,
//! `resources` and `resourceTemplates` arrays of MCP definitions; each of
//! `tools` is `{"tool": …, "result": …}`), after the others and as
//! written; a call of such a tool answers its written result, the others
//! are only listed, never got or read.
//!
//! `--echo-argv` writes `argv: <its arguments>` to stderr first, as servers
//! that log their command line do; arguments after `--` are accepted and
//! ignored (a server's own flags for it to echo, such as `--api-key=…`).
//!
//! `--nagle` (HTTP mode) leaves Nagle's algorithm on for accepted
//! connections, as a plain `axum::serve` does (for benchmarks of clients).
//! `--ignore-eof` keeps a stdio server running after its stdin closed and
//! `--ignore-sigterm` ignores SIGTERM, SIGINT and SIGHUP: together, a
//! server only SIGKILL ends (for tests of how clients end their servers).
//! With `--state-dir`, every start appends `pid=<pid>` to `DIR/starts`
//! ([`StateDir::pids`]). Every `tools/list`, `resources/list`,
//! `resources/templates/list`, `prompts/list` and `ping` it answers
//! increments counter `lists`, so a test can tell whether a client
//! contacted it.
//!
//! | tool | arguments | does |
//! |---|---|---|
//! | `echo` | `message` | returns `message` |
//! | `add` | `a`, `b` (numbers) | returns the sum as text (`"42"`, `"3.5"`) |
//! | `counter` | `key?` = `"default"` | increments counter `key`, returns the new value |
//! | `count` | `key` | returns counter `key` without incrementing |
//! | `fail` | `message?` | increments `fail`, answers JSON-RPC error -32603 `message` |
//! | `tool_error` | `message?` | result with `isError: true` |
//! | `sleep` | `ms` | increments `sleep`, then sleeps; when cancelled increments `cancelled` |
//! | `barrier` | `key`, `parties` | increments `barrier-<key>`, then waits until `parties` calls with `key` have arrived in this process (proves calls overlapped); when cancelled increments `cancelled` |
//! | `crash` | `once?` | exits with code 3 before answering; `once: true` crashes only while `DIR/crashed` is absent (creates it), else increments `crash` and returns `"survived"` |
//! | `add_tool` / `add_resource` / `add_prompt` | `name` / `uri`, `text` / `name` | adds one, then sends the matching `list_changed` to every client |
//! | `notify` | `kind?` = `tools` \| `resources` \| `prompts` \| `log` \| `progress` \| `mixed` \| `elicit`, `count?` = 1 | sends `count` `list_changed` notifications, changes nothing; `log`: `notifications/message`, `progress`: progress for this call (needs a progress token), `mixed`: `count` pairs of a `notifications/message` `step i` and progress i for this call (needs a progress token), `elicit`: `count` `elicitation/create` at once, answered `accepted A, declined D, cancelled C, failed F` |
//! | `http_status` | `code` | over HTTP: counts `http_status`, then the HTTP request gets status `code` (no JSON-RPC answer); over stdio a tool error |
//! | `large_text` | `bytes` | one text block of exactly `bytes` bytes |
//! | `structured` | `count` | `structuredContent` `{"items":[{"id":0,"name":"item-0"},…]}` (declared `outputSchema`) plus the same JSON as text |
//! | `nested` | `depth` | `structuredContent` `{"a":{"a":…{}}}`, `depth` objects deep (at most 20,000) |
//! | `json_block` | `count` | the same JSON document as text, no output schema |
//! | `mixed_content` | — | text, image (PNG), audio (WAV), embedded resource, resource link |
//! | `env` | `name` | the variable's value or `<unset>` |
//! | `stderr` | `message` | writes `message` to stderr, returns `"ok"` |
//! | `sample` | `prompt` | asks the client to sample (`sampling/createMessage`), returns the answer's text |
//! | `elicit` | `message` | asks the user (`elicitation/create`, a form with one string `answer`), returns `action=<accept\|decline\|cancel>, content=<JSON>` |
//! | `tool_0000`… | `message?` | (`--extra-tools`) returns `message` or its name |
//!
//! `echo`, `add`, `count`, `tool_error`, `sleep`, `barrier`, `large_text`, `structured`,
//! `nested`, `json_block`, `mixed_content` and `env` are annotated `readOnlyHint: true`;
//! the others are mutations as far as a client can tell.
//!
//! Unknown tools and bad arguments are JSON-RPC -32602 errors. Resources:
//! `testkit://info` (text), `testkit://blob` (PNG), `skill://testkit-skill/SKILL.md`
//! and `skill://testkit-skill/references/guide.md`; the skill is also served
//! through SEP-2640 `skills/list` / `skills/get` (and, with `--directory-read`,
//! `resources/directory/read` of `skill://testkit-skill` and its
//! `references` folder, counted as `directory_reads`). Prompts: `greet {name,
//! style?}` → `"Hello, <name>!"` (+ `" (style: <style>)"`), `summarize {topic}` →
//! `"Please summarize <topic>."`.
//!
//! `--conformance` adds the fixtures the official conformance suite's
//! server scenarios expect (tools `test_*`, resources `test://…` and the
//! template `test://template/{id}/data`, prompts `test_*`, completions,
//! `logging/setLevel`, resource subscriptions): see
//! `server::conformance` (private) for the list.

pub mod audience;
pub mod balancer;
mod binary;
mod child;
pub mod client;
mod closed_port;
pub mod conformance;
pub mod local_source;
pub mod oauth;
pub mod oidc;
pub mod peers;
pub mod plugins;
#[cfg(unix)]
pub mod postgres;
pub mod procs;
pub mod server;
#[cfg(target_os = "linux")]
pub mod small_disk;
pub mod state;
mod state_dir;
pub mod toolhive;

pub use binary::{RAW_ECHO_BIN_NAME, SERVER_BIN_NAME, raw_echo_binary, server_binary};
pub use child::{HttpServer, StdioCommand, stdio_command};
pub use closed_port::ClosedPort;
pub use local_source::LocalSource;
pub use state_dir::StateDir;
