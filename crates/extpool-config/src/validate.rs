//! Checks of an `extpool.yaml` beyond its shape: server names, transports,
//! URLs, `${…}` syntax, limits, skill paths. Every finding is located with
//! the tree the file was parsed into.

use std::collections::HashMap;
use std::path::Path;

use crate::diagnostics::{Diagnostic, Severity};
use crate::expand;
use crate::model::{ExtpoolConfig, check_server_name, sanitize_server_name};
use crate::tree::{Node, Pos};

/// Checks `config` (parsed from `root`), reporting into a list.
pub fn validate(config: &ExtpoolConfig, root: &Node, file: &str, dir: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut diag = |severity, pos: Pos, path: String, message: String| {
        out.push(Diagnostic::new(severity, file, Some(pos), path, message));
    };
    // Looked up by name once each, so thousands of servers stay linear.
    let keys = root.get("mcp_servers").map(Node::keys).unwrap_or_default();
    let mut seen: HashMap<String, (&str, Pos)> = HashMap::new();
    for (name, server) in &config.mcp_servers {
        let entry = keys.get(name.as_str());
        let key_pos = entry.map_or_else(|| root.pos_of(&["mcp_servers"]), |e| e.key_pos);
        let field_pos = |field: &str| entry.map_or(key_pos, |e| e.value.pos_of(&[field]));
        let path = format!("mcp_servers.{name}");
        if let Err(e) = check_server_name(name) {
            diag(
                Severity::Error,
                key_pos,
                path.clone(),
                format!("{e} (for example {:?})", sanitize_server_name(name)),
            );
        }
        if let Some((other, other_pos)) = seen.get(&name.to_ascii_lowercase()) {
            diag(
                Severity::Error,
                key_pos,
                path.clone(),
                format!(
                    "server name {name:?} collides with {other:?} (line {}): names must be unique ignoring case",
                    other_pos.line
                ),
            );
        }
        seen.entry(name.to_ascii_lowercase())
            .or_insert((name, key_pos));
        if let Err(e) = server.transport() {
            diag(Severity::Error, key_pos, path.clone(), e.to_string());
        }
        if let Some(url) = &server.url {
            let lower = url.to_ascii_lowercase();
            let templated = lower.starts_with("${");
            if !templated && !lower.starts_with("https://") && !lower.starts_with("http://") {
                diag(
                    Severity::Error,
                    field_pos("url"),
                    format!("{path}.url"),
                    "expected an http:// or https:// URL".into(),
                );
            }
        }
        if let Some(prefix) = &server.prefix
            && let Err(e) = check_server_name(prefix)
        {
            diag(
                Severity::Error,
                field_pos("prefix"),
                format!("{path}.prefix"),
                format!(
                    "{} (for example {:?})",
                    e.to_string().replacen("server name", "prefix", 1),
                    sanitize_server_name(prefix)
                ),
            );
        }
        if server.lazy && server.tools.is_empty() {
            diag(
                Severity::Warning,
                field_pos("lazy"),
                format!("{path}.lazy"),
                "a lazy server lists only the tools declared under `tools:`, and none are".into(),
            );
        }
        for (i, tool) in server.tools.iter().enumerate() {
            if let Some(schema) = &tool.input_schema
                && serde_json::from_str::<serde_json::Value>(schema).is_err()
            {
                let node = entry
                    .and_then(|e| e.value.get("tools"))
                    .and_then(|t| match &t.value {
                        crate::tree::Value::Seq(items) => items.get(i),
                        _ => None,
                    });
                diag(
                    Severity::Error,
                    node.map_or(key_pos, |n| n.pos_of(&["input_schema"])),
                    format!("{path}.tools[{i}].input_schema"),
                    "expected a JSON Schema written as JSON text".into(),
                );
            }
        }
        expand::for_each_string(server, &mut |field, value| {
            if let Err(e) = expand::references(value) {
                let segments: Vec<&str> = field.split(['.', '[']).collect();
                let mut at = Vec::new();
                at.extend(segments.first().copied());
                if segments.len() > 1 && !field.contains('[') {
                    at.push(segments[1]);
                }
                diag(
                    Severity::Error,
                    entry.map_or(key_pos, |e| e.value.pos_of(&at)),
                    format!("{path}.{field}"),
                    e.to_string(),
                );
            }
        });
    }
    let limits = &config.extensions;
    for (key, value) in [
        ("max_clients", limits.max_clients),
        ("max_composition_depth", limits.max_composition_depth),
    ] {
        if value == 0 {
            diag(
                Severity::Error,
                root.pos_of(&["extensions", key]),
                format!("extensions.{key}"),
                "expected a number of at least 1".into(),
            );
        }
    }
    for (list, rules) in [
        ("allow", &config.permissions.allow),
        ("deny", &config.permissions.deny),
    ] {
        for (i, rule) in rules.iter().enumerate() {
            if rule.trim().is_empty() || rule.chars().any(char::is_control) {
                diag(
                    Severity::Error,
                    root.pos_of(&["permissions", list]),
                    format!("permissions.{list}[{i}]"),
                    "expected a catalog name or glob such as mcp__github__*".into(),
                );
            }
        }
    }
    for (i, p) in config.skills.paths.iter().enumerate() {
        let full = crate::foreign::relative_to(dir, p);
        if !full.is_dir() {
            diag(
                Severity::Warning,
                root.pos_of(&["skills", "paths"]),
                format!("skills.paths[{i}]"),
                format!("directory {p:?} does not exist (yet); it is watched for when it appears"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::de::from_node;
    use crate::tree::parse_yaml;

    fn check(text: &str) -> Vec<String> {
        let root = parse_yaml(text).unwrap();
        let config: ExtpoolConfig = from_node(&root).unwrap();
        validate(&config, &root, "extpool.yaml", Path::new("/nonexistent"))
            .iter()
            .map(|d| d.to_string())
            .collect()
    }

    #[test]
    fn names_transports_and_urls() {
        let msgs = check(
            "mcp_servers:\n  git-hub:\n    command: x\n  GitHub:\n    command: y\n  github:\n    url: ftp://x\n  none: {}\n",
        );
        assert!(msgs.contains(&"extpool.yaml:2:3: error: mcp_servers.git-hub: server name \"git-hub\" has '-' at byte 3; only ASCII letters, digits and '_' are allowed (for example \"git_hub\")".to_owned()), "{msgs:#?}");
        assert!(msgs.iter().any(|m| m.starts_with("extpool.yaml:6:3: error: mcp_servers.github: server name \"github\" collides with \"GitHub\" (line 4)")), "{msgs:#?}");
        assert!(msgs.iter().any(|m| m.starts_with("extpool.yaml:7:10: error: mcp_servers.github.url: expected an http:// or https:// URL")), "{msgs:#?}");
        assert!(
            msgs.iter().any(|m| m
                .starts_with("extpool.yaml:8:3: error: mcp_servers.none: needs either `command`")),
            "{msgs:#?}"
        );
    }

    #[test]
    fn names_the_catalog_would_refuse_are_refused_here() {
        let msgs =
            check("mcp_servers:\n  a__b:\n    command: x\n  ok:\n    command: y\n    prefix: _p\n");
        assert!(
            msgs.iter().any(|m| m.starts_with(
                "extpool.yaml:2:3: error: mcp_servers.a__b: server name \"a__b\" contains '__'"
            )),
            "{msgs:#?}"
        );
        assert!(msgs.iter().any(|m| m.starts_with("extpool.yaml:6:13: error: mcp_servers.ok.prefix: prefix \"_p\" starts or ends with '_'")), "{msgs:#?}");
        let long = "x".repeat(300);
        let msgs = check(&format!("mcp_servers:\n  {long}:\n    command: x\n"));
        assert!(
            msgs.iter()
                .any(|m| m.contains("is 300 bytes, more than the limit of 64")),
            "{msgs:#?}"
        );
    }

    #[test]
    fn variables_limits_and_paths() {
        let msgs = check(
            "mcp_servers:\n  a:\n    command: x\n    env:\n      K: ${BROKEN\nextensions:\n  max_clients: 0\nskills:\n  paths: [./nowhere]\n",
        );
        assert!(
            msgs.iter().any(|m| m.starts_with(
                "extpool.yaml:5:10: error: mcp_servers.a.env.K: malformed variable reference"
            )),
            "{msgs:#?}"
        );
        assert!(
            msgs.iter().any(|m| m.starts_with(
                "extpool.yaml:7:16: error: extensions.max_clients: expected a number of at least 1"
            )),
            "{msgs:#?}"
        );
        assert!(msgs.iter().any(|m| m.starts_with("extpool.yaml:9:10: warning: skills.paths[0]: directory \"./nowhere\" does not exist")), "{msgs:#?}");
    }
}
