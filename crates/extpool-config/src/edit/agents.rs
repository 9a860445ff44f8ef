//! The agents `extpool connect` wires to a gateway, each in its own file
//! and format, as its own documentation gives them:
//!
//! | agent | user file | project file | entry |
//! |---|---|---|---|
//! | Claude Code | `~/.claude.json` `mcpServers` | `.mcp.json` `mcpServers` | `{"type": "http", "url", "headers"}` |
//! | Codex | `$CODEX_HOME/config.toml` (`~/.codex`) | `.codex/config.toml` | `[mcp_servers.NAME]` `url`, `bearer_token_env_var` |
//! | Cursor | `~/.cursor/mcp.json` `mcpServers` | `.cursor/mcp.json` | `{"url", "headers"}` |
//! | VS Code | the user profile's `mcp.json` `servers` | `.vscode/mcp.json` | `{"type": "http", "url", "headers"}` |
//! | Gemini CLI | `~/.gemini/settings.json` `mcpServers` | `.gemini/settings.json` | `{"httpUrl", "headers"}` |
//!
//! A gateway's token is never written: the entry's header names an
//! environment variable in the agent's own syntax (`${VAR}` for Claude
//! Code and Gemini CLI, `${env:VAR}` for Cursor and VS Code, and Codex's
//! `bearer_token_env_var`), which the agent reads when it connects.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::{EditError, Edited};
use crate::locate::Places;

/// An agent whose configuration `extpool connect` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI Codex.
    Codex,
    /// Cursor.
    Cursor,
    /// Visual Studio Code.
    VsCode,
    /// Gemini CLI.
    Gemini,
}

/// Which of an agent's files: the user's (every project) or this
/// project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The user's file, for every project.
    User,
    /// The working directory's project file.
    Project,
}

impl Scope {
    /// Its word.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// How an agent's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// JSON, or JSONC where the agent reads comments.
    Json,
    /// TOML.
    Toml,
}

impl Agent {
    /// Every agent, in the order they are listed.
    pub const ALL: [Agent; 5] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::Cursor,
        Agent::VsCode,
        Agent::Gemini,
    ];

    /// Its id on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Cursor => "cursor",
            Agent::VsCode => "vscode",
            Agent::Gemini => "gemini",
        }
    }

    /// Its name for people.
    pub fn label(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Cursor => "Cursor",
            Agent::VsCode => "VS Code",
            Agent::Gemini => "Gemini CLI",
        }
    }

    /// The agent of an id.
    pub fn from_id(id: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.id() == id)
    }

    /// The format of its files.
    pub fn format(self) -> FileFormat {
        match self {
            Agent::Codex => FileFormat::Toml,
            _ => FileFormat::Json,
        }
    }

    /// The key its servers are kept under.
    pub fn container(self) -> &'static [&'static str] {
        match self {
            Agent::Codex => &["mcp_servers"],
            Agent::VsCode => &["servers"],
            Agent::ClaudeCode | Agent::Cursor | Agent::Gemini => &["mcpServers"],
        }
    }

    /// Its file of `scope` (`None` without a home directory).
    pub fn file(self, scope: Scope, places: &Places) -> Option<PathBuf> {
        let home = places.home.as_ref();
        let cwd = &places.cwd;
        Some(match (self, scope) {
            (Agent::ClaudeCode, Scope::User) => home?.join(".claude.json"),
            (Agent::ClaudeCode, Scope::Project) => cwd.join(".mcp.json"),
            (Agent::Codex, Scope::User) => places
                .codex_home
                .clone()
                .or_else(|| home.map(|h| h.join(".codex")))?
                .join("config.toml"),
            (Agent::Codex, Scope::Project) => cwd.join(".codex/config.toml"),
            (Agent::Cursor, Scope::User) => home?.join(".cursor/mcp.json"),
            (Agent::Cursor, Scope::Project) => cwd.join(".cursor/mcp.json"),
            (Agent::VsCode, Scope::User) => places.app_config_file("Code/User", "mcp.json")?,
            (Agent::VsCode, Scope::Project) => cwd.join(".vscode/mcp.json"),
            (Agent::Gemini, Scope::User) => home?.join(".gemini/settings.json"),
            (Agent::Gemini, Scope::Project) => cwd.join(".gemini/settings.json"),
        })
    }

    /// The entry that reaches a gateway at `url`, with a bearer token from
    /// environment variable `token_env` when given.
    pub fn entry(self, url: &str, token_env: Option<&str>) -> Value {
        let header = |reference: String| json!({"Authorization": format!("Bearer {reference}")});
        let mut entry = match self {
            Agent::ClaudeCode | Agent::VsCode => json!({"type": "http", "url": url}),
            Agent::Cursor | Agent::Codex => json!({"url": url}),
            Agent::Gemini => json!({"httpUrl": url}),
        };
        if let (Some(var), Value::Object(map)) = (token_env, &mut entry) {
            match self {
                Agent::Codex => {
                    map.insert("bearer_token_env_var".into(), json!(var));
                }
                Agent::ClaudeCode | Agent::Gemini => {
                    map.insert("headers".into(), header(format!("${{{var}}}")));
                }
                Agent::Cursor | Agent::VsCode => {
                    map.insert("headers".into(), header(format!("${{env:{var}}}")));
                }
            }
        }
        entry
    }

    /// The URL an entry of this agent's file reaches, when it is a remote one.
    pub fn entry_url(self, entry: &Value) -> Option<String> {
        let url = match self {
            Agent::Gemini => entry.get("httpUrl").or_else(|| entry.get("url")),
            _ => entry.get("url"),
        };
        url.and_then(Value::as_str).map(str::to_owned)
    }

    /// The environment variable an entry takes its bearer token from, if
    /// it names one.
    pub fn entry_token_env(self, entry: &Value) -> Option<String> {
        if let Some(var) = entry.get("bearer_token_env_var").and_then(Value::as_str) {
            return Some(var.to_owned());
        }
        let auth = entry
            .get("headers")?
            .as_object()?
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))?
            .1
            .as_str()?;
        let inner = auth.split("${").nth(1)?.split('}').next()?;
        Some(inner.strip_prefix("env:").unwrap_or(inner).to_owned())
    }

    /// The snippet alone, as it would be written in the agent's file.
    pub fn snippet(self, name: &str, entry: &Value) -> Result<String, EditError> {
        match self.format() {
            FileFormat::Toml => {
                super::toml::set_entry("", self.container(), name, entry).map(|e| e.text)
            }
            FileFormat::Json => {
                let mut value = json!({name: entry});
                for key in self.container().iter().rev() {
                    value = json!({*key: value});
                }
                serde_json::to_string_pretty(&value)
                    .map(|s| s + "\n")
                    .map_err(EditError::render)
            }
        }
    }

    /// `text` (the agent's file) with entry `name` set to `entry`.
    pub fn connect(self, text: &str, name: &str, entry: &Value) -> Result<Edited, EditError> {
        match self.format() {
            FileFormat::Json => super::jsonc::set_entry(text, self.container(), name, entry),
            FileFormat::Toml => super::toml::set_entry(text, self.container(), name, entry),
        }
    }

    /// `text` without entry `name`.
    pub fn disconnect(self, text: &str, name: &str) -> Result<Edited, EditError> {
        match self.format() {
            FileFormat::Json => super::jsonc::remove_entry(text, self.container(), name),
            FileFormat::Toml => super::toml::remove_entry(text, self.container(), name),
        }
    }

    /// The server entries of `text`, with their values.
    pub fn entries(self, text: &str) -> Result<Vec<(String, Value)>, EditError> {
        match self.format() {
            FileFormat::Json => super::jsonc::entries(text, self.container()),
            FileFormat::Toml => super::toml::entries(text, self.container()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_names_the_token_variable_in_its_own_syntax() {
        let url = "http://127.0.0.1:8520/mcp";
        let var = Some("EXTPOOL_GATEWAY_TOKEN");
        assert_eq!(
            Agent::ClaudeCode.entry(url, var)["headers"]["Authorization"],
            "Bearer ${EXTPOOL_GATEWAY_TOKEN}"
        );
        assert_eq!(
            Agent::Cursor.entry(url, var)["headers"]["Authorization"],
            "Bearer ${env:EXTPOOL_GATEWAY_TOKEN}"
        );
        assert_eq!(
            Agent::Codex.entry(url, var)["bearer_token_env_var"],
            "EXTPOOL_GATEWAY_TOKEN"
        );
        assert_eq!(Agent::Gemini.entry(url, None), json!({"httpUrl": url}));
        for agent in Agent::ALL {
            let entry = agent.entry(url, var);
            assert_eq!(agent.entry_url(&entry).as_deref(), Some(url));
            assert_eq!(
                agent.entry_token_env(&entry).as_deref(),
                var,
                "{}",
                agent.id()
            );
            assert_eq!(Agent::from_id(agent.id()), Some(agent));
        }
    }

    #[test]
    fn files_follow_the_agents_places() {
        let places = Places {
            cwd: "/p".into(),
            home: Some("/h".into()),
            ..Places::default()
        };
        let file = |a: Agent, s| a.file(s, &places).unwrap();
        assert_eq!(
            file(Agent::ClaudeCode, Scope::User),
            PathBuf::from("/h/.claude.json")
        );
        assert_eq!(
            file(Agent::ClaudeCode, Scope::Project),
            PathBuf::from("/p/.mcp.json")
        );
        assert_eq!(
            file(Agent::Codex, Scope::User),
            PathBuf::from("/h/.codex/config.toml")
        );
        assert_eq!(
            file(Agent::Gemini, Scope::Project),
            PathBuf::from("/p/.gemini/settings.json")
        );
        assert_eq!(
            file(Agent::VsCode, Scope::Project),
            PathBuf::from("/p/.vscode/mcp.json")
        );
    }

    #[test]
    fn snippets_are_what_would_be_written() {
        let entry = Agent::Codex.entry("http://127.0.0.1:8520/mcp", None);
        assert_eq!(
            Agent::Codex.snippet("extpool", &entry).unwrap(),
            "[mcp_servers.extpool]\nurl = \"http://127.0.0.1:8520/mcp\"\n"
        );
        let entry = Agent::VsCode.entry("http://127.0.0.1:8520/mcp", None);
        let snippet: Value =
            serde_json::from_str(&Agent::VsCode.snippet("extpool", &entry).unwrap()).unwrap();
        assert_eq!(snippet["servers"]["extpool"]["type"], "http");
    }
}
