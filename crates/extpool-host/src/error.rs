//! [`HostError`]: what the host refuses or could not do, each case naming
//! the thing at fault (the tool, the URI, the command, the scope).

use extpool_catalog::{CallError, CatalogError, CommandError};
use extpool_core::{RegistryError, ResolveError};

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
    #[error("unknown tool {name}{hint}; see `extpool list tools`", hint = hint(.suggestion, .failed))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The closest known name, when one is close.
        suggestion: Option<String>,
        /// Servers that failed to start (their tools are missing).
        failed: Vec<String>,
    },
    /// The tool's server failed to start, so none of its tools exist here.
    #[error(
        "{tool} is unavailable: MCP server \"{server}\" failed to start: {reason}; see `extpool list sources`"
    )]
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
    #[error("unknown command /{name}{hint}; see `extpool list commands`", hint = hint(.suggestion, &[]))]
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
        /// The known skills, comma-separated, or `none`.
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
    /// The host has been shut down.
    #[error("the extension host is shut down")]
    ShutDown,
    /// A discovery source is misconfigured (a ToolHive URL that is not one).
    #[error("discovery: {0}")]
    Discovery(String),
}

fn hint(suggestion: &Option<String>, failed: &[String]) -> String {
    let mut out = String::new();
    if let Some(s) = suggestion {
        out.push_str(&format!("; did you mean {s}?"));
    }
    if !failed.is_empty() {
        out.push_str(&format!(
            " (servers that failed to start: {}; see `extpool list sources`)",
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
            | Self::NoSkillFile { .. } => true,
            Self::Read(e) => e.is_not_found() || matches!(e, ResolveError::UnknownScheme { .. }),
            _ => false,
        }
    }

    /// True when the permission rules deny what was asked.
    pub fn is_denied(&self) -> bool {
        matches!(self, Self::Call(e) if e.is_denied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tool_says_what_to_do_once() {
        let e = HostError::UnknownTool {
            name: "mcp__kit__ech".into(),
            suggestion: Some("mcp__kit__echo".into()),
            failed: vec!["broken".into()],
        };
        assert_eq!(
            e.to_string(),
            "unknown tool mcp__kit__ech; did you mean mcp__kit__echo? (servers that failed to start: broken; see `extpool list sources`); see `extpool list tools`"
        );
        assert!(e.is_not_found());
    }
}
