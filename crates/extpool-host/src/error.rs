//! [`HostError`]: what the host refuses or could not do, each case naming
//! the thing at fault (the tool, the URI, the command, the scope).
//!
//! A message says the fact and the name to use, for whoever reads it — a
//! gateway's client and its model as much as a terminal's user — and
//! never a command to run: which command shows more is the CLI's to add
//! when it renders the error.

use extpool_catalog::{CallError, CatalogError, CommandError};
use extpool_core::{ExtensionError, RegistryError, ResolveError};

/// Why a host operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The configuration could not be loaded (every problem is located).
    #[error(transparent)]
    Config(#[from] extpool_config::ConfigError),
    /// The catalog refused its configuration (a malformed permission rule).
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// A registration was refused (duplicate id, composition cycle).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The skill manager could not be built.
    #[error(transparent)]
    Skills(#[from] extpool_skills::ManagerError),
    /// No tool of this name in the scope's catalog.
    #[error("unknown tool {}{hint}", extpool_core::text::shown_name(.name), hint = hint(.suggestion, .failed))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The closest known name, when one is close.
        suggestion: Option<String>,
        /// Servers that failed to start (their tools are missing).
        failed: Vec<String>,
    },
    /// The tool's server failed to start, so none of its tools exist here.
    #[error("{tool} is unavailable: MCP server \"{server}\" failed to start: {reason}")]
    ServerFailed {
        /// The name asked for.
        tool: String,
        /// The server it belongs to.
        server: String,
        /// Why the server failed to start.
        reason: String,
    },
    /// The tool exists but the call failed before or at dispatch.
    #[error(transparent)]
    Call(CallError),
    /// No command of this name.
    #[error("unknown command /{name}{hint}", hint = hint(.suggestion, &[]))]
    UnknownCommand {
        /// The name asked for, without `/`.
        name: String,
        /// The closest known command, with its `/`.
        suggestion: Option<String>,
    },
    /// The command exists but could not be rendered.
    #[error(transparent)]
    Command(CommandError),
    /// A `skill://` URI names no skill visible here.
    #[error("no skill named {skill:?} (from {uri}); known skills: {known}")]
    UnknownSkill {
        /// The URI.
        uri: String,
        /// Its skill name.
        skill: String,
        /// The known skills, as [`known_skills`] lists them.
        known: String,
    },
    /// A known skill has no such file.
    #[error(
        "skill {skill:?} has no file {path:?} (from {uri}); its instructions are skill://{skill}/SKILL.md"
    )]
    NoSkillFile {
        /// The URI.
        uri: String,
        /// The skill.
        skill: String,
        /// The missing path inside it.
        path: String,
    },
    /// No skill visible here has the directory a directory read named.
    #[error("no skill visible here has the directory {uri}; known skills: {known}")]
    NoSkillDirectory {
        /// The URI.
        uri: String,
        /// The known skills, as [`known_skills`] lists them.
        known: String,
    },
    /// A URI could not be read (malformed, unknown scheme, the owner failed).
    #[error(transparent)]
    Read(#[from] ResolveError),
    /// A server configuration given to the host is unusable.
    #[error(transparent)]
    Server(#[from] extpool_mcp::CapError),
    /// A server failed or refused an MCP operation relayed to it (a
    /// completion, a subscription).
    #[error("{operation} on {server}: {error}")]
    Relay {
        /// The MCP method.
        operation: &'static str,
        /// The server.
        server: String,
        /// What it said (shown in this message, so not a `source()`).
        error: extpool_core::ExtensionError,
    },
    /// The server that owns what was asked does not offer the operation.
    #[error("{server} does not offer {what}")]
    Unsupported {
        /// The operation, in words.
        what: String,
        /// The server.
        server: String,
    },
    /// A view cannot be opened or used (a turn outside an agent, a closed view).
    #[error("{0}")]
    Scope(String),
    /// No configured or discovered server has that name.
    #[error("no MCP server named {name:?} here (servers: {known})")]
    UnknownServer {
        /// The name asked for.
        name: String,
        /// The servers there are, comma-separated.
        known: String,
    },
    /// A server could not be restarted.
    #[error("restarting MCP server {server:?}: {reason}")]
    Restart {
        /// The server.
        server: String,
        /// Why, in words.
        reason: String,
    },
    /// The host has been shut down.
    #[error("the extension host is shut down")]
    ShutDown,
    /// A discovery source is misconfigured (a ToolHive URL that is not one).
    #[error("discovery: {0}")]
    Discovery(String),
    /// The view's policy refuses the tool (not granted to the session, its
    /// server's name taken, filtered out, its server down), directly or
    /// through the built-in `through` that would reach it.
    #[error("{}", not_allowed(.refusal, .through.as_deref()))]
    NotAllowed {
        /// Why, naming the tool.
        refusal: crate::policy::Refusal,
        /// The built-in called to reach it (`CallMcpWithQuery`), if any.
        through: Option<String>,
    },
    /// The configuration's guardrails could not be built.
    #[error(transparent)]
    Guardrails(#[from] crate::guardrails::GuardrailError),
    /// A guardrail blocked the call before it was dispatched, or its result
    /// before it reached the model ([`crate::guardrails`]). The message
    /// names the guardrail and never quotes the arguments.
    #[error("{}", blocked(.tool, *.phase, .reason))]
    Blocked {
        /// The catalog name of the tool the call reached.
        tool: String,
        /// Before dispatch, or on the result.
        phase: crate::guardrails::Phase,
        /// The rule that blocked ([`crate::Verdict::guardrail`]).
        guardrail: String,
        /// Why, in words (`blocked by guardrail block[0] (…)`).
        reason: String,
    },
    /// A built-in its front end answers (`ListMcpSources`,
    /// `RefreshMcpSources`, `CloseSession`, `ToolSearch`), asked of the host.
    #[error("{name} is answered by the front end that lists it")]
    FrontEndTool {
        /// The built-in's name.
        name: String,
    },
}

fn blocked(tool: &str, phase: crate::guardrails::Phase, reason: &str) -> String {
    match phase {
        crate::guardrails::Phase::Call => format!("{tool} was not called: {reason}"),
        crate::guardrails::Phase::Result => {
            format!("the result of {tool} was withheld: {reason}")
        }
    }
}

fn not_allowed(refusal: &crate::policy::Refusal, through: Option<&str>) -> String {
    match through {
        Some(through) => format!("{through} reaches only the tools this view may call: {refusal}"),
        None => refusal.to_string(),
    }
}

fn hint(suggestion: &Option<String>, failed: &[String]) -> String {
    let mut out = String::new();
    if let Some(s) = suggestion {
        out.push_str(&format!("; did you mean {s}?"));
    }
    if !failed.is_empty() {
        out.push_str(&format!(
            " (servers that failed to start: {})",
            failed.join(", ")
        ));
    }
    out
}

impl HostError {
    /// True when a tool, command, skill or resource was not found.
    pub fn is_not_found(&self) -> bool {
        match self {
            Self::UnknownTool { .. }
            | Self::ServerFailed { .. }
            | Self::UnknownCommand { .. }
            | Self::UnknownSkill { .. }
            | Self::NoSkillFile { .. }
            | Self::NoSkillDirectory { .. } => true,
            Self::Read(e) => e.is_not_found() || matches!(e, ResolveError::UnknownScheme { .. }),
            _ => false,
        }
    }

    /// True when what was asked is itself wrong: a malformed or traversing
    /// URI, or one its owner refused (a file where a directory was asked,
    /// a path out of a skill's folder).
    pub fn is_invalid_request(&self) -> bool {
        match self {
            Self::Read(ResolveError::Uri(_)) => true,
            Self::Read(ResolveError::Capability { error, .. }) => matches!(
                error,
                ExtensionError::InvalidArgument(_) | ExtensionError::Denied(_)
            ),
            _ => false,
        }
    }

    /// True when the permission rules deny what was asked.
    pub fn is_denied(&self) -> bool {
        matches!(self, Self::Call(e) if e.is_denied())
    }

    /// True when the view's policy refused the tool (or the rules denied
    /// it): the name is known, and this view may not call it.
    pub fn is_refused(&self) -> bool {
        self.is_denied() || matches!(self, Self::NotAllowed { .. })
    }

    /// True when a guardrail blocked the call or its result.
    pub fn is_blocked(&self) -> bool {
        matches!(self, Self::Blocked { .. })
    }

    /// The policy's refusal, when it refused the call.
    pub fn refusal(&self) -> Option<&crate::policy::Refusal> {
        match self {
            Self::NotAllowed { refusal, .. } => Some(refusal),
            _ => None,
        }
    }

    /// The error a capability (a server) reported, which this one carries
    /// whole: what the guardrails redact in it before it reaches a model.
    pub(crate) fn capability_error_mut(&mut self) -> Option<&mut ExtensionError> {
        match self {
            Self::Call(CallError::Source { error, .. })
            | Self::Read(ResolveError::Capability { error, .. })
            | Self::Relay { error, .. }
            | Self::Command(CommandError::Source { error, .. }) => Some(error),
            _ => None,
        }
    }

    /// The JSON-RPC error an MCP server answered a call with, exactly as
    /// sent, when that is why the call failed (a front end that speaks MCP
    /// may pass one on whole: a `URLElicitationRequiredError`, say).
    pub fn server_error(&self) -> Option<&rmcp::model::ErrorData> {
        match self {
            Self::Call(CallError::Source { error, .. }) => error
                .downcast_source::<extpool_mcp::ClientError>()?
                .rpc_error(),
            _ => None,
        }
    }
}

/// Most skill names an unknown skill's error lists.
const MAX_KNOWN_SKILLS: usize = 20;

/// The skill names an unknown skill's error lists: `none`, or the first
/// [`MAX_KNOWN_SKILLS`] and how many more (two thousand skills make no
/// error message).
pub(crate) fn known_skills(names: &[String]) -> String {
    match names.len() {
        0 => "none".into(),
        n if n <= MAX_KNOWN_SKILLS => names.join(", "),
        n => format!(
            "{}, … and {} more",
            names[..MAX_KNOWN_SKILLS].join(", "),
            n - MAX_KNOWN_SKILLS
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tool_says_the_fact_and_the_name_to_use_and_no_command() {
        let e = HostError::UnknownTool {
            name: "mcp__kit__ech".into(),
            suggestion: Some("mcp__kit__echo".into()),
            failed: vec!["broken".into()],
        };
        assert_eq!(
            e.to_string(),
            "unknown tool mcp__kit__ech; did you mean mcp__kit__echo? (servers that failed to start: broken)"
        );
        assert!(e.is_not_found());
    }

    #[test]
    fn no_message_names_a_command_to_run() {
        let errors = [
            HostError::UnknownTool {
                name: "mcp__kit__ech".into(),
                suggestion: Some("mcp__kit__echo".into()),
                failed: vec!["broken".into()],
            },
            HostError::ServerFailed {
                tool: "mcp__bad__add".into(),
                server: "bad".into(),
                reason: "no such file".into(),
            },
            HostError::UnknownCommand {
                name: "revew".into(),
                suggestion: Some("/review".into()),
            },
            HostError::UnknownSkill {
                uri: "skill://x/SKILL.md".into(),
                skill: "x".into(),
                known: known_skills(&(0..30).map(|i| format!("s{i}")).collect::<Vec<_>>()),
            },
        ];
        for e in errors {
            let shown = e.to_string();
            assert!(!shown.contains("extpool "), "{shown}");
            assert!(e.is_not_found(), "{shown}");
        }
    }
}
