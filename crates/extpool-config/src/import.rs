//! Writing a configuration back out as `extpool.yaml`: `extpool config
//! show` (the effective configuration) and `extpool config import` (the
//! equivalent of the files read).
//!
//! Neither ever prints a resolved secret: values stay in their `${VAR}`
//! form. Literal secrets found in the files read (a token pasted into
//! `claude_desktop_config.json`) are masked by `show`, and replaced by a
//! `${VAR}` reference by `import`, which says which variable to export.

use std::path::{Path, PathBuf};

use extpool_mcp::config::McpServerConfig;
use serde::Serialize;

use crate::load::Loaded;
use crate::model::{DiscoveryConfig, ExtensionsConfig, PermissionsConfig, SkillsConfig};
use crate::secrets;

/// What the YAML is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderMode {
    /// `config show`: every section with its effective values; literal
    /// secrets masked.
    Show,
    /// `config import`: only what differs from the defaults; literal secrets
    /// replaced by `${VAR}` references unless `keep_secrets`; relative paths
    /// rewritten for a file written in `out_dir`.
    Import {
        /// Copy literal secrets as they are.
        keep_secrets: bool,
        /// Directory the YAML will be written to.
        out_dir: PathBuf,
    },
}

/// A rendered `extpool.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The YAML text.
    pub yaml: String,
    /// Environment variables the user must export (for replaced secrets).
    pub exports: Vec<String>,
}

/// Renders `loaded` as `extpool.yaml`.
pub fn render(loaded: &Loaded, mode: &RenderMode) -> Rendered {
    let mut yaml = String::new();
    let mut exports = Vec::new();
    let header = match mode {
        RenderMode::Show => "# The effective extpool configuration",
        RenderMode::Import { .. } => "# extpool.yaml written by `extpool config import`",
    };
    yaml.push_str(header);
    if loaded.sources.is_empty() {
        yaml.push_str(" (no configuration file found; defaults only)\n");
    } else {
        yaml.push_str(", from:\n");
        for s in &loaded.sources {
            yaml.push_str(&format!("#   {} ({})\n", s.file, s.origin.label()));
        }
    }
    yaml.push_str("# Values keep their ${VAR} form; nothing here is a resolved secret.\n");

    if loaded.config.mcp_servers.is_empty() {
        yaml.push_str("mcp_servers: {}\n");
    } else {
        yaml.push_str("mcp_servers:\n");
    }
    for (name, config) in &loaded.config.mcp_servers {
        let source = loaded.server_sources.get(name);
        let mut config = config.clone();
        match mode {
            RenderMode::Show => config = secrets::masked(&config),
            RenderMode::Import {
                keep_secrets,
                out_dir,
            } => {
                if let Some(src) = source {
                    rebase(&mut config, &src.dir, out_dir);
                }
                if !keep_secrets {
                    let file = source.map_or("", |s| s.file.as_str());
                    for (var, _) in secrets::to_references(&mut config, name) {
                        let note = format!(
                            "{var}  (mcp_servers.{name}: the literal value in {file} was not copied)"
                        );
                        if !exports.contains(&note) {
                            exports.push(note);
                        }
                    }
                }
            }
        }
        if let Some(src) = source {
            let renamed = if src.original_name != *name {
                format!(" (named {:?} there)", src.original_name)
            } else {
                String::new()
            };
            yaml.push_str(&format!("  # {}:{}{renamed}\n", src.file, src.pos));
        }
        yaml.push_str(&format!("  {}:\n", crate::tree::yaml_string(name)));
        yaml.push_str(&indent(&to_yaml(&config), 4));
    }

    let show = *mode == RenderMode::Show;
    let c = &loaded.config;
    if show || c.skills != SkillsConfig::default() {
        yaml.push_str("skills:\n");
        yaml.push_str(&indent(&to_yaml(&c.skills), 2));
    }
    if show || c.permissions != PermissionsConfig::default() {
        yaml.push_str("permissions:\n");
        yaml.push_str(&indent(&to_yaml(&c.permissions), 2));
    }
    if show || c.extensions != ExtensionsConfig::default() {
        yaml.push_str("extensions:\n");
        yaml.push_str(&indent(&to_yaml(&c.extensions), 2));
    }
    if show || c.discovery != DiscoveryConfig::default() {
        yaml.push_str("discovery:\n");
        yaml.push_str(&indent(&to_yaml(&c.discovery), 2));
    }
    if let Some(guardrails) = &c.guardrails {
        let mut guardrails = guardrails.clone();
        if let Some(webhook) = &mut guardrails.webhook {
            hide_header_secrets(webhook, mode, &mut exports);
        }
        yaml.push_str("guardrails:\n");
        yaml.push_str(&indent(&to_yaml(&guardrails), 2));
    }
    Rendered { yaml, exports }
}

/// A guardrail webhook's literal header values (anything but `${VAR}`
/// references) masked for `show`, replaced by a `${VAR}` to export for
/// `import` unless it keeps secrets: a header is how a policy service is
/// told who asks, so every literal value is taken for a credential.
fn hide_header_secrets(
    webhook: &mut crate::model::WebhookConfig,
    mode: &RenderMode,
    exports: &mut Vec<String>,
) {
    for (name, value) in &mut webhook.headers {
        if value.is_empty() || crate::expand::has_references(value) {
            continue;
        }
        match mode {
            RenderMode::Show => *value = secrets::MASK.to_owned(),
            RenderMode::Import {
                keep_secrets: true, ..
            } => {}
            RenderMode::Import { .. } => {
                let var: String = format!("GUARDRAILS_WEBHOOK_{name}")
                    .chars()
                    .map(|c| match c {
                        'a'..='z' => c.to_ascii_uppercase(),
                        'A'..='Z' | '0'..='9' => c,
                        _ => '_',
                    })
                    .collect();
                exports.push(format!(
                    "{var}  (guardrails.webhook.headers.{name}: the literal value was not copied)"
                ));
                *value = format!("${{{var}}}");
            }
        }
    }
}

/// Relative paths are relative to the file they are written in: when the
/// YAML goes elsewhere, make them absolute.
fn rebase(config: &mut McpServerConfig, from: &Path, to: &Path) {
    if same_dir(from, to) {
        return;
    }
    if let Some(cmd) = &config.command
        && (cmd.contains('/') || cmd.contains('\\'))
        && Path::new(cmd).is_relative()
        && !cmd.starts_with("${")
    {
        config.command = Some(from.join(cmd).display().to_string());
    }
    if let Some(cwd) = &config.cwd
        && Path::new(cwd).is_relative()
        && !cwd.starts_with("${")
    {
        config.cwd = Some(from.join(cwd).display().to_string());
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn to_yaml<T: Serialize>(value: &T) -> String {
    match crate::tree::to_yaml(value) {
        Ok(s) => s,
        Err(e) => format!("# cannot render: {e}\n"),
    }
}

fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    let mut out = String::new();
    for line in text.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            out.push_str(&pad);
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::de::from_node;
    use crate::load::ServerSource;
    use crate::locate::Origin;
    use crate::model::ExtpoolConfig;
    use crate::tree::{Pos, parse_yaml};

    fn loaded() -> Loaded {
        let mut l = Loaded::default();
        let mut c = McpServerConfig::stdio("./bin/server", ["--token", "abc"]);
        c.env.insert("GITHUB_TOKEN".into(), "ghp_literal".into());
        c.env.insert("OTHER".into(), "${OTHER}".into());
        l.config.mcp_servers.insert("gh".into(), c);
        l.server_sources.insert(
            "gh".into(),
            ServerSource {
                file: ".mcp.json".into(),
                dir: "/proj".into(),
                pos: Pos::new(3, 5),
                original_name: "gh".into(),
                origin: Origin::ClaudeCode,
                plugin: None,
            },
        );
        l
    }

    #[test]
    fn show_masks_literal_secrets() {
        let r = render(&loaded(), &RenderMode::Show);
        assert!(!r.yaml.contains("ghp_literal"), "{}", r.yaml);
        assert!(!r.yaml.contains("abc"), "{}", r.yaml);
        assert!(r.yaml.contains("GITHUB_TOKEN: '********'"), "{}", r.yaml);
        assert!(r.yaml.contains("OTHER: ${OTHER}"), "{}", r.yaml);
        assert!(r.yaml.contains("max_clients: 20"), "{}", r.yaml);
        // The output is a valid extpool.yaml.
        let root = parse_yaml(&r.yaml).unwrap();
        let _: ExtpoolConfig = from_node(&root).unwrap();
    }

    #[test]
    fn import_replaces_secrets_and_rebases_paths() {
        let r = render(
            &loaded(),
            &RenderMode::Import {
                keep_secrets: false,
                out_dir: "/elsewhere".into(),
            },
        );
        assert!(
            r.yaml.contains("GITHUB_TOKEN: ${GITHUB_TOKEN}"),
            "{}",
            r.yaml
        );
        assert!(r.yaml.contains("${GH_TOKEN}"), "{}", r.yaml);
        assert!(r.yaml.contains("command: /proj/./bin/server"), "{}", r.yaml);
        assert!(!r.yaml.contains("max_clients"), "{}", r.yaml);
        assert_eq!(r.exports.len(), 2);
        let kept = render(
            &loaded(),
            &RenderMode::Import {
                keep_secrets: true,
                out_dir: "/proj".into(),
            },
        );
        assert!(kept.yaml.contains("ghp_literal"));
        assert!(kept.yaml.contains("command: ./bin/server"));
    }

    #[test]
    fn the_guardrails_section_is_shown_with_its_webhook_credentials_hidden() {
        let mut l = loaded();
        let root = parse_yaml(concat!(
            "guardrails:\n",
            "  block: [{pattern: \"rm\\\\s+-rf\", tools: \"mcp__shell__*\"}]\n",
            "  webhook:\n",
            "    url: https://policy.example/check\n",
            "    headers: {Authorization: Bearer literal-token, X-Ref: \"${REF}\"}\n",
        ))
        .unwrap();
        let c: ExtpoolConfig = from_node(&root).unwrap();
        l.config.guardrails = c.guardrails;
        let r = render(&l, &RenderMode::Show);
        assert!(!r.yaml.contains("literal-token"), "{}", r.yaml);
        assert!(r.yaml.contains("X-Ref: ${REF}"), "{}", r.yaml);
        assert!(r.yaml.contains("max_result_bytes: 1048576"), "{}", r.yaml);
        let shown: ExtpoolConfig = from_node(&parse_yaml(&r.yaml).unwrap()).unwrap();
        let g = shown.guardrails.unwrap();
        assert_eq!(g.block[0].pattern, r"rm\s+-rf");
        let r = render(
            &l,
            &RenderMode::Import {
                keep_secrets: false,
                out_dir: "/proj".into(),
            },
        );
        assert!(
            r.yaml
                .contains("Authorization: ${GUARDRAILS_WEBHOOK_AUTHORIZATION}"),
            "{}",
            r.yaml
        );
        assert!(
            r.exports
                .iter()
                .any(|e| e.starts_with("GUARDRAILS_WEBHOOK_AUTHORIZATION")),
            "{:?}",
            r.exports
        );
    }
}
