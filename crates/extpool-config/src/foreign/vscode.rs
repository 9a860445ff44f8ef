//! VS Code's `mcp.json` (workspace `.vscode/mcp.json` or the user profile).
//!
//! ```jsonc
//! {
//!   "inputs": [{"type": "promptString", "id": "perplexity-key", "password": true}],
//!   "servers": {
//!     "perplexity": {"type": "stdio", "command": "npx", "args": ["-y", "server-perplexity-ask"],
//!                    "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}},
//!     "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}
//!   }
//! }
//! ```
//!
//! extpool never prompts: an `${input:id}` becomes `${ID}` (upper case,
//! `-` → `_`), read from the environment, and a note says which variable.

use super::mcp_servers_json::convert_entry;
use super::{ForeignConfig, ForeignContext, input_env_name};
use crate::diagnostics::Severity;
use crate::tree::Node;

/// Reads a VS Code `mcp.json` document.
pub fn read(root: &Node, ctx: &ForeignContext) -> ForeignConfig {
    let mut out = ForeignConfig::default();
    let Some(_) = root.as_map() else {
        out.diagnostics.push(ctx.diag(
            Severity::Error,
            root.pos,
            "",
            format!(
                "expected a JSON object with \"servers\", found {}",
                root.value.kind()
            ),
        ));
        return out;
    };
    if let Some(inputs) = root.get("inputs")
        && let crate::tree::Value::Seq(items) = &inputs.value
    {
        for item in items {
            let Some(id) = item.get("id").and_then(Node::as_str) else {
                continue;
            };
            out.diagnostics.push(ctx.diag(
                Severity::Note,
                item.pos,
                "inputs",
                format!(
                    "VS Code prompts for input {id:?}; extpool reads it from the environment variable {}",
                    input_env_name(id)
                ),
            ));
        }
    }
    let Some(servers) = root.entry("servers") else {
        out.diagnostics.push(ctx.diag(
            Severity::Warning,
            root.pos,
            "",
            "no \"servers\" object: this file defines no MCP servers",
        ));
        return out;
    };
    let Some(entries) = servers.value.as_map() else {
        out.diagnostics.push(ctx.diag(
            Severity::Error,
            servers.value.pos,
            "servers",
            format!(
                "expected an object of servers, found {}",
                servers.value.value.kind()
            ),
        ));
        return out;
    };
    for e in entries {
        let path = format!("servers.{}", e.key);
        if let Some(config) = convert_entry(ctx, &e.value, &path, &mut out.diagnostics) {
            out.push_server(ctx, &e.key, e.key_pos, &path, config);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locate::Origin;
    use crate::tree::parse_json;

    #[test]
    fn reads_servers_and_inputs() {
        let text = r#"{
  // comment
  "inputs": [{"type": "promptString", "id": "perplexity-key", "description": "Key", "password": true}],
  "servers": {
    "Perplexity": {"type": "stdio", "command": "npx", "args": ["-y", "p"], "env": {"K": "${input:perplexity-key}"}},
    "fetch": {"type": "http", "url": "https://example.com/mcp"},
  },
}"#;
        let ctx = ForeignContext {
            file: ".vscode/mcp.json".into(),
            origin: Origin::VsCode,
            workspace: "/ws".into(),
            cwd: "/ws".into(),
            strict: false,
        };
        let out = read(&parse_json(text).unwrap(), &ctx);
        assert_eq!(out.servers.len(), 2);
        assert_eq!(out.servers[0].name, "Perplexity");
        assert_eq!(out.servers[0].config.env["K"], "${PERPLEXITY_KEY}");
        assert_eq!(
            out.servers[1].config.url.as_deref(),
            Some("https://example.com/mcp")
        );
        assert!(out.diagnostics[0].message.contains("PERPLEXITY_KEY"));
    }
}
