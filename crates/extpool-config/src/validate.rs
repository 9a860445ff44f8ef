//! Checks of an `extpool.yaml` beyond its shape: server names, transports,
//! URLs, `${…}` syntax, limits, skill paths. Every finding is located with
//! the tree the file was parsed into.

use std::collections::BTreeSet;
use std::path::Path;

use crate::de::{DeError, from_node_partial};
use crate::diagnostics::{Diagnostic, Severity};
use crate::expand;
use crate::model::{ExtpoolConfig, check_server_name, sanitize_server_name};
use crate::tree::{Node, Pos, Value};
use extpool_mcp::config::McpServerConfig;

/// Reads an `extpool.yaml` document (`root`, parsed from `file`) as far as
/// it can be read and checks it: every schema error of the file and every
/// finding of [`validate`], in the file's order, so one run reports them
/// all. The configuration is `None` when nothing could be read.
pub fn check_document(
    root: &Node,
    file: &str,
    dir: &Path,
) -> (Option<ExtpoolConfig>, Vec<Diagnostic>) {
    let (config, schema_errors) = readable(root);
    let mut found: Vec<Diagnostic> = schema_errors
        .iter()
        .map(|e| Diagnostic::schema(file, e))
        .collect();
    if let Some(config) = &config {
        found.extend(validate(config, root, file, dir));
    }
    // In the file's order, whichever check found them.
    found.sort_by_key(|d| d.pos.map(|p| (p.line, p.column)));
    (config, found)
}

/// An `extpool.yaml` document as far as it can be read, and every schema
/// error in it: a server whose entry has an error is left out whole (it is
/// neither validated nor started: half a server could run without the `env`
/// or `args` that were meant for it), any other key in error is left at its
/// default, and the rest is read so that validation reports its errors in
/// the same run. `None` when nothing could be read.
fn readable(root: &Node) -> (Option<ExtpoolConfig>, Vec<DeError>) {
    let (config, errors) = from_node_partial::<ExtpoolConfig>(root);
    let broken: BTreeSet<&str> = errors
        .iter()
        .filter_map(|e| match e.path.as_slice() {
            [section, server, ..] if section == "mcp_servers" => Some(server.as_str()),
            _ => None,
        })
        .collect();
    if broken.is_empty() {
        return (config, errors);
    }
    let mut doc = root.clone();
    if let Value::Map(sections) = &mut doc.value
        && let Some(servers) = sections.iter_mut().find(|e| e.key == "mcp_servers")
        && let Value::Map(entries) = &mut servers.value.value
    {
        entries.retain(|entry| !broken.contains(entry.key.as_str()));
    }
    // Errors outside the servers are found again; they are reported once.
    (from_node_partial(&doc).0, errors)
}

/// What the MCP client refuses when it starts a remote server: the field
/// at fault (`url`, `headers`) and what is wrong, as
/// [`remote_problem`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteProblem {
    /// The field of the server entry (`url`, `headers`).
    pub field: &'static str,
    /// What is wrong (never a secret of the URL: it is shown masked).
    pub message: String,
}

/// Most characters of a URL a message shows.
const SHOWN_URL_CHARS: usize = 200;

/// What the MCP client would refuse when it starts `config` as a remote
/// server, found without starting it: the client's own check
/// ([`extpool_mcp::http::check_remote`], the one owner of the rule) of the
/// URL and headers as written. `None` when the entry is no remote server or
/// the client accepts it — and when its URL or a header value holds a
/// `${VAR}`: what starts then depends on the environment, and `config
/// check` checks it resolved ([`crate::Loaded::remote_problems`]).
pub fn remote_problem(config: &McpServerConfig) -> Option<RemoteProblem> {
    let url = config.url.as_deref()?;
    if config.command.is_some()
        || expand::has_references(url)
        || config.headers.values().any(|v| expand::has_references(v))
    {
        return None;
    }
    // Without references, expansion only turns `$${` back into `${`:
    // this is the text the client is given.
    let none = |_: &str| None;
    let mut literal = config.clone();
    literal.url = Some(expand::expand(url, &none).ok()?);
    for value in literal.headers.values_mut() {
        *value = expand::expand(value, &none).ok()?;
    }
    resolved_remote_problem(&literal, url)
}

/// [`remote_problem`] of a server entry whose variables are resolved;
/// `shown_url` is the URL as written (shown masked, never the resolved one).
pub(crate) fn resolved_remote_problem(
    config: &McpServerConfig,
    shown_url: &str,
) -> Option<RemoteProblem> {
    // The name only words the client's message; its prefix is cut below.
    let name = extpool_mcp::ServerName::new("server").ok()?;
    let error = extpool_mcp::http::check_remote(&name, config).err()?;
    let text = error.to_string();
    let text = text
        .strip_prefix(&format!("MCP server {:?}: ", name.as_str()))
        .unwrap_or(&text);
    Some(match error {
        extpool_mcp::ConfigError::InvalidUrl { reason, .. } => RemoteProblem {
            field: "url",
            message: format!(
                "invalid URL {:?}: {reason}",
                extpool_core::text::cut(&crate::secrets::mask_url(shown_url), SHOWN_URL_CHARS)
            ),
        },
        extpool_mcp::ConfigError::InvalidHeader { .. }
        | extpool_mcp::ConfigError::TooManyHeaders { .. } => RemoteProblem {
            field: "headers",
            message: text.to_owned(),
        },
        _ => RemoteProblem {
            field: "url",
            message: text.to_owned(),
        },
    })
}

/// Checks `config` (parsed from `root`), reporting into a list.
pub fn validate(config: &ExtpoolConfig, root: &Node, file: &str, dir: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut diag = |severity, pos: Pos, path: String, message: String| {
        out.push(Diagnostic::new(severity, file, Some(pos), path, message));
    };
    // Looked up by name once each, so thousands of servers stay linear.
    let keys = root.get("mcp_servers").map(Node::keys).unwrap_or_default();
    let mut seen = extpool_core::ServerNames::new();
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
        if let Err((other, other_pos)) = seen.claim(name, (name, key_pos)) {
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
        if let Err(e) = server.transport() {
            diag(Severity::Error, key_pos, path.clone(), e.to_string());
        }
        if let Some(problem) = remote_problem(server) {
            diag(
                Severity::Error,
                field_pos(problem.field),
                format!("{path}.{}", problem.field),
                problem.message,
            );
        } else if let Some(url) = &server.url
            && !url.starts_with("${")
            && let Err(e) = extpool_core::check_http_url(url)
        {
            // A URL with a `${VAR}` in it: its scheme, at least, is known.
            diag(
                Severity::Error,
                field_pos("url"),
                format!("{path}.url"),
                e.to_string(),
            );
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
        if let Some(sandbox) = &server.sandbox {
            let at = |field: &str| {
                let field = field.split(['.', '[']).next().unwrap_or(field);
                entry.map_or(key_pos, |e| e.value.pos_of(&["sandbox", field]))
            };
            for (field, severity, message) in crate::sandbox::problems(server, sandbox, dir) {
                let shown = if field.is_empty() {
                    format!("{path}.sandbox")
                } else {
                    format!("{path}.sandbox.{field}")
                };
                diag(severity, at(&field), shown, message);
            }
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
    for (i, entry) in config.permissions.principals.iter().enumerate() {
        if entry.claims.is_empty() {
            diag(
                Severity::Error,
                root.pos_of(&["permissions", "principals"]),
                format!("permissions.principals[{i}].match"),
                "expected the claims a caller must hold, such as {groups: eng}; an entry without any matches nobody".into(),
            );
        }
        if entry.allow.is_none() && entry.deny.is_empty() {
            diag(
                Severity::Warning,
                root.pos_of(&["permissions", "principals"]),
                format!("permissions.principals[{i}]"),
                "this entry has neither allow nor deny, so it changes nothing".into(),
            );
        }
    }
    let zero = |v: Option<u32>| v == Some(0);
    if zero(config.gateway.limits.sessions_per_principal) {
        diag(
            Severity::Error,
            root.pos_of(&["gateway", "limits", "sessions_per_principal"]),
            "gateway.limits.sessions_per_principal".into(),
            "expected at least 1 (leave it out for the default, 256)".into(),
        );
    }
    let limits = &config.gateway.rate_limits;
    if zero(limits.calls_per_minute) || zero(limits.burst) {
        diag(
            Severity::Error,
            root.pos_of(&["gateway", "rate_limits"]),
            "gateway.rate_limits".into(),
            "expected calls_per_minute and burst of at least 1 (leave calls_per_minute out for no limit)".into(),
        );
    }
    for (i, rule) in limits.tools.iter().enumerate() {
        if rule.calls_per_minute == 0 || zero(rule.burst) {
            diag(
                Severity::Error,
                root.pos_of(&["gateway", "rate_limits", "tools"]),
                format!("gateway.rate_limits.tools[{i}]"),
                "expected calls_per_minute and burst of at least 1 (deny the tools in permissions to refuse every call)".into(),
            );
        }
        if rule.tools.trim().is_empty() || rule.tools.chars().any(char::is_control) {
            diag(
                Severity::Error,
                root.pos_of(&["gateway", "rate_limits", "tools"]),
                format!("gateway.rate_limits.tools[{i}].match"),
                "expected a catalog name or glob such as mcp__github__*".into(),
            );
        }
    }
    for (field, problem) in delegation_problems(config) {
        let (pos, path) = match field {
            Some(name) => {
                let pos = root.pos_of(&["mcp_servers", name, "oauth"]);
                (pos, format!("mcp_servers.{name}.oauth"))
            }
            None => (root.pos_of(&["gateway", "auth"]), "gateway.auth".to_owned()),
        };
        diag(Severity::Error, pos, path, problem);
    }
    if let Some(auth) = &config.gateway.auth {
        if !auth.issuer.starts_with("${")
            && let Err(e) = extpool_core::check_http_url(&auth.issuer)
        {
            diag(
                Severity::Error,
                root.pos_of(&["gateway", "auth", "issuer"]),
                "gateway.auth.issuer".into(),
                e.to_string(),
            );
        }
        if let Some(operator) = &auth.operator
            && let Err(e) = operator.parse::<extpool_auth::resource::ClaimMatch>()
        {
            diag(
                Severity::Error,
                root.pos_of(&["gateway", "auth", "operator"]),
                "gateway.auth.operator".into(),
                e,
            );
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
    if let Some(guardrails) = &config.guardrails {
        out.extend(check_guardrails(guardrails, root, file));
    }
    out.extend(check_plugin_sandboxes(config, root, file, dir));
    out
}

/// What is wrong with the servers reached with a token made from each
/// caller's (`oauth.token_exchange`, `oauth.enterprise_managed`,
/// `oauth.passthrough`) and the
/// gateway's client that exchanges them: each with the server it is
/// about (`None`: `gateway.auth`).
fn delegation_problems(config: &ExtpoolConfig) -> Vec<(Option<&str>, String)> {
    let mut out = Vec::new();
    let auth = config.gateway.auth.as_ref();
    for (name, server) in &config.mcp_servers {
        let Some(oauth) = server.oauth.as_ref() else {
            continue;
        };
        let Some(mode) = oauth.delegation() else {
            continue;
        };
        if let Err(e) = oauth.validate() {
            out.push((Some(name.as_str()), e.to_string()));
        } else if server.url.is_none() {
            out.push((Some(name.as_str()), format!(
                "`oauth.{mode}` makes each caller's token for a remote server; {name:?} is not one (no `url`)"
            )));
        } else if auth.is_none() {
            out.push((Some(name.as_str()), format!(
                "`oauth.{mode}` makes each caller's token from the one it presents to the gateway: set gateway.auth (its issuer)"
            )));
        } else if mode != "passthrough"
            && auth.is_some_and(|a| a.client_id.is_none() || a.client_secret.is_none())
        {
            out.push((Some(name.as_str()), format!(
                "`oauth.{mode}`: the gateway exchanges tokens as its own client at its issuer; set gateway.auth.client_id and gateway.auth.client_secret"
            )));
        }
        if let Some(ema) = server
            .oauth
            .as_ref()
            .and_then(|o| o.enterprise_managed.as_ref())
        {
            out.extend(
                enterprise_problems(ema)
                    .into_iter()
                    .map(|p| (Some(name.as_str()), p)),
            );
        }
    }
    if let Some(auth) = auth {
        if auth.client_secret.is_some() && auth.client_id.is_none() {
            out.push((None, "`client_secret` needs `client_id`".to_owned()));
        }
        if let Some(secret) = &auth.client_secret
            && !crate::expand::has_references(secret)
        {
            out.push((
                None,
                "`client_secret` must be a ${VAR} reference, not the secret itself".to_owned(),
            ));
        }
    }
    out
}

/// What is wrong with an `oauth.enterprise_managed` section as written,
/// besides the profile's own checks: an authorization server that is no
/// usable URL (a `${VAR}` one is checked once expanded), and a client
/// secret that is not a reference.
fn enterprise_problems(ema: &extpool_auth::enterprise::EnterpriseManagedSettings) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(url) = &ema.authorization_server
        && !crate::expand::has_references(url)
        && let Err(e) = extpool_auth::enterprise::check_authorization_server(url)
    {
        out.push(e.to_string());
    }
    if !crate::expand::has_references(&ema.client_secret) {
        out.push("`oauth.enterprise_managed.client_secret` must be a ${VAR} reference, not the secret itself".to_owned());
    }
    out
}

/// The problems of each `plugins.sandbox` entry's profile, located.
fn check_plugin_sandboxes(
    config: &ExtpoolConfig,
    root: &Node,
    file: &str,
    dir: &Path,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (name, entry) in &config.plugins.sandbox {
        let Some(profile) = entry.profile() else {
            continue;
        };
        for (field, severity, message) in crate::sandbox::plugin_problems(profile, dir) {
            let top = field.split(['.', '[']).next().unwrap_or(&field);
            let pos = root.pos_of(&["plugins", "sandbox", name, top]);
            out.push(Diagnostic::new(
                severity,
                file,
                Some(pos),
                format!("plugins.sandbox.{name}.{field}"),
                message,
            ));
        }
    }
    out
}

/// Where `field` of item `i` of the list at `path` is written (else the
/// list, else its closest ancestor).
fn item_pos(root: &Node, path: &[&str], i: usize, field: &str) -> Pos {
    match root.at(path).map(|n| &n.value) {
        Some(Value::Seq(items)) => items
            .get(i)
            .map_or_else(|| root.pos_of(path), |item| item.pos_of(&[field])),
        _ => root.pos_of(path),
    }
}

/// Whether `name` is an HTTP header name (RFC 9110 token characters).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The `guardrails:` section's findings: sizes, each pattern compiled as
/// the host compiles it ([`crate::guardrails`]), the webhook's URL,
/// timeout and headers.
fn check_guardrails(
    g: &crate::model::GuardrailsConfig,
    root: &Node,
    file: &str,
) -> Vec<Diagnostic> {
    use crate::guardrails::{
        MAX_NAME_BYTES, MAX_RULES, MAX_WEBHOOK_TIMEOUT_MS, check_webhook_url, compile_pattern,
    };
    let mut out = Vec::new();
    let mut error = |pos: Pos, path: String, message: String| {
        out.push(Diagnostic::new(
            Severity::Error,
            file,
            Some(pos),
            path,
            message,
        ));
    };
    for (key, value) in [
        ("max_argument_bytes", g.max_argument_bytes),
        ("max_result_bytes", g.max_result_bytes),
    ] {
        if value == 0 {
            error(
                root.pos_of(&["guardrails", key]),
                format!("guardrails.{key}"),
                "expected a number of bytes of at least 1".into(),
            );
        }
    }
    for (list, len) in [("block", g.block.len()), ("redact", g.redact.len())] {
        if len > MAX_RULES {
            error(
                root.pos_of(&["guardrails", list]),
                format!("guardrails.{list}"),
                format!("{len} rules, more than the limit of {MAX_RULES}"),
            );
        }
    }
    let mut check_pattern = |list: &str, i: usize, pattern: &str| {
        if let Err(e) = compile_pattern(pattern) {
            error(
                item_pos(root, &["guardrails", list], i, "pattern"),
                format!("guardrails.{list}[{i}].pattern"),
                e.to_string(),
            );
        }
    };
    for (i, rule) in g.block.iter().enumerate() {
        check_pattern("block", i, &rule.pattern);
    }
    for (i, rule) in g.redact.iter().enumerate() {
        check_pattern("redact", i, &rule.pattern);
    }
    for (i, rule) in g.block.iter().enumerate() {
        if let Some(tools) = &rule.tools
            && (tools.trim().is_empty() || tools.chars().any(char::is_control))
        {
            error(
                item_pos(root, &["guardrails", "block"], i, "tools"),
                format!("guardrails.block[{i}].tools"),
                "expected a catalog name or glob such as mcp__github__*".into(),
            );
        }
    }
    for (i, rule) in g.redact.iter().enumerate() {
        let name_ok = !rule.name.is_empty()
            && rule.name.len() <= MAX_NAME_BYTES
            && rule
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !name_ok {
            error(
                item_pos(root, &["guardrails", "redact"], i, "name"),
                format!("guardrails.redact[{i}].name"),
                format!(
                    "expected a name of 1 to {MAX_NAME_BYTES} letters, digits, '-', '_' or '.' (it is shown as [REDACTED:<name>])"
                ),
            );
        }
    }
    if let Some(webhook) = &g.webhook {
        let at = |field: &str| root.pos_of(&["guardrails", "webhook", field]);
        match expand::references(&webhook.url) {
            Err(e) => error(at("url"), "guardrails.webhook.url".into(), e.to_string()),
            // Checked again with its variables resolved, when extpool starts.
            Ok(vars) if !vars.is_empty() => {}
            Ok(_) => {
                if let Err(e) = check_webhook_url(&webhook.url) {
                    error(at("url"), "guardrails.webhook.url".into(), e.to_string());
                }
            }
        }
        if webhook.timeout_ms == 0 || webhook.timeout_ms > MAX_WEBHOOK_TIMEOUT_MS {
            error(
                at("timeout_ms"),
                "guardrails.webhook.timeout_ms".into(),
                format!("expected 1 to {MAX_WEBHOOK_TIMEOUT_MS} milliseconds"),
            );
        }
        for (name, value) in &webhook.headers {
            let pos = root
                .at(&["guardrails", "webhook", "headers"])
                .and_then(|h| h.entry(name))
                .map_or_else(|| at("headers"), |e| e.key_pos);
            if !is_header_name(name) {
                error(
                    pos,
                    format!("guardrails.webhook.headers.{name}"),
                    "expected an HTTP header name (letters, digits and '-')".into(),
                );
            }
            if let Err(e) = expand::references(value) {
                error(
                    pos,
                    format!("guardrails.webhook.headers.{name}"),
                    e.to_string(),
                );
            }
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
    fn delegated_credentials_need_a_remote_server_and_the_gateways_client() {
        let stdio = check(
            "mcp_servers:\n  x:\n    command: echo\n    oauth: {token_exchange: {}}\ngateway:\n  auth: {issuer: 'https://idp.example', client_id: gw, client_secret: '${S}'}\n",
        );
        assert!(
            stdio.iter().any(|d| d.contains("not one (no `url`)")),
            "{stdio:?}"
        );
        let no_client = check(
            "mcp_servers:\n  x:\n    url: https://x.example/mcp\n    oauth: {token_exchange: {}}\ngateway:\n  auth: {issuer: 'https://idp.example'}\n",
        );
        assert!(
            no_client
                .iter()
                .any(|d| d.contains("gateway.auth.client_id")),
            "{no_client:?}"
        );
        let no_auth = check(
            "mcp_servers:\n  x:\n    url: https://x.example/mcp\n    oauth: {passthrough: {}}\n",
        );
        assert!(
            no_auth.iter().any(|d| d.contains("set gateway.auth")),
            "{no_auth:?}"
        );
        let literal = check(
            "mcp_servers:\n  x:\n    url: https://x.example/mcp\n    oauth: {token_exchange: {}}\ngateway:\n  auth: {issuer: 'https://idp.example', client_id: gw, client_secret: plain}\n",
        );
        assert!(
            literal.iter().any(|d| d.contains("${VAR} reference")),
            "{literal:?}"
        );
        let good = check(
            "mcp_servers:\n  x:\n    url: https://x.example/mcp\n    oauth: {token_exchange: {audience: x}}\ngateway:\n  auth: {issuer: 'https://idp.example', client_id: gw, client_secret: '${S}'}\n",
        );
        assert!(good.is_empty(), "{good:?}");
    }

    #[test]
    fn enterprise_managed_sections_are_checked_where_they_are_written() {
        let with = |ema: &str| {
            check(&format!(
                "mcp_servers:\n  crm:\n    url: https://crm.example/mcp\n    oauth: {{enterprise_managed: {ema}}}\ngateway:\n  auth: {{issuer: 'https://idp.example', client_id: gw, client_secret: '${{S}}'}}\n"
            ))
        };
        assert!(with("{client_id: gw, client_secret: '${CRM_SECRET}'}").is_empty());
        let literal = with("{client_id: gw, client_secret: plain}");
        assert!(
            literal.iter().any(|d| d.contains("mcp_servers.crm.oauth")
                && d.contains("client_secret` must be a ${VAR}")),
            "{literal:?}"
        );
        let bad_as = with(
            "{client_id: gw, client_secret: '${S}', authorization_server: 'http://as.example'}",
        );
        assert!(
            bad_as
                .iter()
                .any(|d| d.contains("authorization_server` is plain http://")),
            "{bad_as:?}"
        );
        assert!(
            with("{client_id: gw, client_secret: '${S}', authorization_server: '${AS}'}")
                .is_empty()
        );
        let scope = with("{client_id: gw, client_secret: '${S}', scopes: ['a b']}");
        assert!(
            scope.iter().any(|d| d.contains("scopes` has \"a b\"")),
            "{scope:?}"
        );
        let no_client = check(
            "mcp_servers:\n  crm:\n    url: https://crm.example/mcp\n    oauth: {enterprise_managed: {client_id: gw, client_secret: '${S}'}}\ngateway:\n  auth: {issuer: 'https://idp.example'}\n",
        );
        assert!(
            no_client.iter().any(|d| d.contains(
                "`oauth.enterprise_managed`: the gateway exchanges tokens as its own client"
            )),
            "{no_client:?}"
        );
    }

    #[test]
    fn names_transports_and_urls() {
        let msgs = check(
            "mcp_servers:\n  git-hub:\n    command: x\n  GitHub:\n    command: y\n  github:\n    url: ftp://x\n  none: {}\n",
        );
        assert!(msgs.contains(&"extpool.yaml:2:3: error: mcp_servers.git-hub: server name \"git-hub\" has '-' at byte 3; only ASCII letters, digits and '_' are allowed (for example \"git_hub\")".to_owned()), "{msgs:#?}");
        assert!(msgs.iter().any(|m| m.starts_with("extpool.yaml:6:3: error: mcp_servers.github: server name \"github\" collides with \"GitHub\" (line 4)")), "{msgs:#?}");
        assert!(msgs.iter().any(|m| m.starts_with("extpool.yaml:7:10: error: mcp_servers.github.url: invalid URL \"ftp://x\": scheme \"ftp\" is not http or https")), "{msgs:#?}");
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

    #[test]
    fn the_guardrails_section_is_checked_where_it_is_written() {
        let msgs = check(concat!(
            "guardrails:\n",
            "  max_argument_bytes: 0\n",
            "  block:\n",
            "    - pattern: \"rm\\\\s+-rf\"\n",
            "      tools: \"mcp__shell__*\"\n",
            "    - pattern: \"(unclosed\"\n",
            "  redact:\n",
            "    - {name: \"bad name\", pattern: \"sk-[a-z]+\"}\n",
            "  webhook:\n",
            "    url: http://policy.example/check\n",
            "    timeout_ms: 60000\n",
            "    headers: {Authorization: \"Bearer ${BROKEN\"}\n",
        ));
        let expected = [
            "extpool.yaml:2:23: error: guardrails.max_argument_bytes: expected a number of bytes of at least 1",
            "extpool.yaml:6:16: error: guardrails.block[1].pattern: invalid regular expression \"(unclosed\": ",
            "extpool.yaml:8:14: error: guardrails.redact[0].name: expected a name of 1 to 64 letters",
            "extpool.yaml:10:10: error: guardrails.webhook.url: is plain http:// off loopback",
            "extpool.yaml:11:17: error: guardrails.webhook.timeout_ms: expected 1 to 30000 milliseconds",
            "extpool.yaml:12:15: error: guardrails.webhook.headers.Authorization: malformed variable reference",
        ];
        assert_eq!(msgs.len(), expected.len(), "{msgs:#?}");
        for want in expected {
            assert!(
                msgs.iter().any(|m| m.starts_with(want)),
                "{want}\n{msgs:#?}"
            );
        }
        // A valid section has nothing to say; a URL with a variable is
        // checked when its variable is known.
        let msgs = check(concat!(
            "guardrails:\n",
            "  redact: [{name: openai-key, pattern: \"sk-[A-Za-z0-9]{20,}\"}]\n",
            "  webhook: {url: \"${POLICY_URL}\", fail: open, headers: {Authorization: \"Bearer ${T}\"}}\n",
        ));
        assert!(msgs.is_empty(), "{msgs:#?}");
        // An unknown key or fail mode is a schema error with its choices.
        let root =
            parse_yaml("guardrails:\n  webhook: {url: \"https://x\", fail: maybe}\n").unwrap();
        let e = from_node::<ExtpoolConfig>(&root).unwrap_err().to_string();
        assert!(e.contains("closed, open"), "{e}");
    }

    #[test]
    fn a_schema_error_hides_no_other_error_and_skips_only_its_server() {
        let text = "mcp_servers:\n  s: {command: [1]}\n  t: {url: 5}\n  ok: {command: echo}\nextensions:\n  max_clients: many\n  max_composition_depth: 0\n";
        let root = parse_yaml(text).unwrap();
        let (config, found) = check_document(&root, "extpool.yaml", Path::new("/nonexistent"));
        let msgs: Vec<String> = found.iter().map(|d| d.to_string()).collect();
        let expected = [
            "extpool.yaml:2:16: error: mcp_servers.s.command: expected a string, found a sequence",
            "extpool.yaml:3:12: error: mcp_servers.t.url: invalid URL \"5\": expected an http:// or https:// URL",
            "extpool.yaml:6:16: error: extensions.max_clients: expected a non-negative integer, found a string",
            "extpool.yaml:7:26: error: extensions.max_composition_depth: expected a number of at least 1",
        ];
        assert_eq!(msgs, expected, "{msgs:#?}");
        let config = config.expect("the rest of the file is read");
        let servers: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
        assert_eq!(
            servers,
            ["ok", "t"],
            "the unreadable entry alone is left out"
        );
    }
}
