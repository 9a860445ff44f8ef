//! Skill-embedded MCP servers (RFC lifecycle diagram 3): the skill
//! manager's [`EmbeddedServerFactory`], implemented over the host's
//! connection pool.
//!
//! A skill's `mcp_servers:` entry is an ordinary server configuration:
//! `${VAR}`s expand from the environment and relative paths resolve against
//! the skill's directory. The server is named `<skill>_<server>` (made a
//! valid server name), so its tools are `mcp__<skill>_<server>__<tool>`.
//! Building connects nothing; the catalog connects it when it first lists
//! the skill manager's children, and a server that fails there costs only
//! its own tools.

use std::sync::Arc;

use extpool_config::{McpServerConfig, expand, process_env, resolve_paths};
use extpool_core::{BoxError, Capability, ExtensionError, sanitize_server_name};
use extpool_mcp::{McpServerCap, SessionConnectionPool};
use extpool_skills::{EmbeddedServerFactory, Skill};
use serde_json::Value;

/// Builds skill-embedded servers whose clients come from the shared pool.
pub(crate) struct PoolFactory {
    pub pool: SessionConnectionPool,
}

/// A skill-embedded server's configuration could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbeddedConfigError {
    /// The entry names the server without configuring it.
    #[error("no configuration: give it a `command` (stdio) or a `url` (streamable HTTP)")]
    Missing,
    /// The entry is not a server configuration.
    #[error("invalid configuration: {0}")]
    Invalid(serde_json::Error),
    /// A `${VAR}` could not be expanded.
    #[error(transparent)]
    Expand(#[from] expand::FieldExpandError),
}

/// The id of server `server` embedded by skill `skill`: `<skill>_<server>`
/// made a valid server name (`code-review` + `github` → `code_review_github`).
pub fn embedded_server_name(skill: &str, server: &str) -> String {
    sanitize_server_name(&format!("{skill}_{server}"))
}

impl EmbeddedServerFactory for PoolFactory {
    fn build(
        &self,
        skill: &Skill,
        server: &str,
        config: &Value,
    ) -> Result<Arc<dyn Capability>, BoxError> {
        if config.is_null() {
            return Err(EmbeddedConfigError::Missing.into());
        }
        let written: McpServerConfig =
            serde_json::from_value(config.clone()).map_err(EmbeddedConfigError::Invalid)?;
        let expanded =
            expand::expand_server(&written, &process_env).map_err(EmbeddedConfigError::Expand)?;
        let resolved = resolve_paths(expanded, &skill.dir);
        let name = embedded_server_name(skill.name(), server);
        let cap = McpServerCap::new(&name, resolved, self.pool.clone())?;
        Ok(Arc::new(cap))
    }

    fn is_server_down(&self, error: &ExtensionError) -> bool {
        extpool_mcp::is_server_down(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_names_are_valid_server_names() {
        assert_eq!(
            embedded_server_name("code-review", "github"),
            "code_review_github"
        );
        assert_eq!(embedded_server_name("a", "b__c"), "a_b_c");
        assert!(extpool_core::is_valid_server_name(&embedded_server_name(
            "-x-", "_y_"
        )));
    }
}
