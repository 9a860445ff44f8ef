//! Recognising literal secrets in server entries, to hide them.
//!
//! A `${VAR}` reference is never a secret (it is what we print). A literal
//! value is treated as a secret when its key looks like one: an env var or
//! header named like a token, key, password or credential, the value of a
//! `--token`-style argument, a URL query parameter with such a name, or a
//! password in a URL; or when the value itself does, wherever it is (see
//! [`value`]: `sk-ant-…`, `ghp_…`, `xoxb-…`, AWS keys, a password inside a
//! database URL). Each is either masked (`config show`) or replaced by a
//! `${VAR}` reference (`config import`), through one visitor so the two
//! can never disagree about what counts.
//!
//! For text shown anywhere else (listings, errors, logs, a server's
//! stderr), [`mask_text`] and [`mask_url`] apply the same recognition.

pub mod value;

use extpool_mcp::config::McpServerConfig;

use crate::expand;
pub use value::looks_like_secret;
use value::{Span, SpanKind};

/// The text printed instead of a literal secret.
pub const MASK: &str = "********";

/// `name` as (part of) an environment variable's name: ASCII letters
/// and digits upper-cased, anything else `_` (`perplexity-key` →
/// `PERPLEXITY_KEY`). The one rule for every variable extpool names.
pub fn env_name_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// True when an env var, header, flag or query parameter name suggests a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name
        .trim_start_matches('-')
        .to_ascii_uppercase()
        .replace('-', "_");
    const WORDS: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "APIKEY",
        "ACCESS_KEY",
        "PRIVATE_KEY",
        "CREDENTIAL",
        "AUTHORIZATION",
        "AUTH",
        "COOKIE",
        "PAT",
        "SIGNATURE",
    ];
    upper.split('_').any(|w| WORDS.contains(&w))
        || WORDS.iter().any(|w| w.len() > 4 && upper.contains(w))
        || upper.ends_with("_KEY")
        || upper == "KEY"
}

/// Where a secret sits, for naming its replacement variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSite {
    /// The value of env var `name`.
    Env(String),
    /// The value of header `name`.
    Header(String),
    /// The value of argument flag `name` (without dashes).
    Arg(String),
    /// URL query parameter `name` or the URL's password (`"password"`).
    Url(String),
    /// `oauth.client_secret`.
    OAuthClientSecret,
    /// `oauth.enterprise_managed.client_secret`.
    EnterpriseClientSecret,
}

impl SecretSite {
    /// The environment variable that should hold this secret for `server`.
    pub fn env_name(&self, server: &str) -> String {
        let up = |s: &str| env_name_part(s.trim_start_matches('-'));
        match self {
            SecretSite::Env(name) => up(name),
            SecretSite::Header(h) if h.eq_ignore_ascii_case("authorization") => {
                format!("{}_TOKEN", up(server))
            }
            SecretSite::Header(name) | SecretSite::Arg(name) | SecretSite::Url(name) => {
                format!("{}_{}", up(server), up(name))
            }
            SecretSite::OAuthClientSecret => format!("{}_OAUTH_CLIENT_SECRET", up(server)),
            SecretSite::EnterpriseClientSecret => format!("{}_AS_CLIENT_SECRET", up(server)),
        }
    }
}

/// Rewrites every literal secret of `config` with `replace(site, value)`.
pub fn rewrite(config: &mut McpServerConfig, replace: &mut dyn FnMut(&SecretSite, &str) -> String) {
    rewrite_with(config, false, replace);
}

/// Replaces every literal secret of `config` (server `server`'s entry) by
/// a `${VAR}` reference named for where it sat ([`SecretSite::env_name`]),
/// and returns each variable with that place, once: what to export. How
/// `config import` and `mcp add` keep a pasted token out of a file.
pub fn to_references(config: &mut McpServerConfig, server: &str) -> Vec<(String, SecretSite)> {
    let mut vars: Vec<(String, SecretSite)> = Vec::new();
    rewrite(config, &mut |site, _| {
        let var = site.env_name(server);
        if !vars.iter().any(|(v, _)| *v == var) {
            vars.push((var.clone(), site.clone()));
        }
        format!("${{{var}}}")
    });
    vars
}

/// The site of a secret found by its value inside the value of `site`.
fn inner_site(site: &SecretSite, span: &Span, whole: bool) -> SecretSite {
    let suffix = match &span.kind {
        _ if whole => return site.clone(),
        SpanKind::Token | SpanKind::Credential => "TOKEN".to_owned(),
        SpanKind::UrlPassword => "PASSWORD".to_owned(),
        SpanKind::QueryValue(name) => name.clone(),
    };
    let join = |name: &str| format!("{name}_{suffix}");
    match site {
        SecretSite::Env(n) => SecretSite::Env(join(n)),
        SecretSite::Header(n) => SecretSite::Header(join(n)),
        SecretSite::Arg(n) => SecretSite::Arg(join(n)),
        SecretSite::Url(n) => SecretSite::Url(join(n)),
        SecretSite::OAuthClientSecret => SecretSite::OAuthClientSecret,
        SecretSite::EnterpriseClientSecret => SecretSite::EnterpriseClientSecret,
    }
}

/// Replaces the secrets found in `v` by their value (literal ones only).
fn rewrite_spans(
    v: &str,
    site: &SecretSite,
    all_query_values: bool,
    replace: &mut dyn FnMut(&SecretSite, &str) -> String,
) -> String {
    let spans: Vec<Span> = value::spans(v, all_query_values)
        .into_iter()
        .filter(|s| is_literal(&v[s.range.clone()]))
        .collect();
    let mut out = String::with_capacity(v.len());
    let mut at = 0;
    for span in spans {
        let whole = span.range.start == 0 && span.range.end == v.len();
        out.push_str(&v[at..span.range.start]);
        out.push_str(&replace(
            &inner_site(site, &span, whole),
            &v[span.range.clone()],
        ));
        at = span.range.end;
    }
    out.push_str(&v[at..]);
    out
}

/// [`rewrite`]; with `all_query_values`, every literal URL query value
/// counts as a secret (for showing a config), not only those named or
/// looking like one (for importing it).
fn rewrite_with(
    config: &mut McpServerConfig,
    all_query_values: bool,
    replace: &mut dyn FnMut(&SecretSite, &str) -> String,
) {
    if let Some(secret) = config
        .oauth
        .as_mut()
        .and_then(|o| o.client_secret.as_mut())
        .filter(|s| is_literal(s))
    {
        *secret = replace(&SecretSite::OAuthClientSecret, secret);
    }
    if let Some(ema) = config
        .oauth
        .as_mut()
        .and_then(|o| o.enterprise_managed.as_mut())
        .filter(|e| is_literal(&e.client_secret))
    {
        ema.client_secret = replace(&SecretSite::EnterpriseClientSecret, &ema.client_secret);
    }
    for (k, v) in config.env.iter_mut() {
        let site = SecretSite::Env(k.clone());
        if is_secret_name(k) && is_literal(v) {
            *v = replace(&site, v);
        } else {
            *v = rewrite_spans(v, &site, all_query_values, replace);
        }
    }
    for (k, v) in config.headers.iter_mut() {
        if !(is_secret_name(k) && is_literal(v)) {
            *v = rewrite_spans(v, &SecretSite::Header(k.clone()), all_query_values, replace);
            continue;
        }
        let site = SecretSite::Header(k.clone());
        // Keep the auth scheme visible: `Bearer ********`.
        match v.split_once(' ') {
            Some((scheme, token))
                if ["bearer", "basic", "token"].contains(&scheme.to_ascii_lowercase().as_str()) =>
            {
                *v = format!("{scheme} {}", replace(&site, token));
            }
            _ => *v = replace(&site, v),
        }
    }
    let mut secret_next: Option<String> = None;
    // The flag an argument belongs to names its secret (`--db URL`).
    let mut last_flag: Option<String> = None;
    for (i, arg) in config.args.iter_mut().enumerate() {
        if let Some(flag) = secret_next.take()
            && is_literal(arg)
            && !arg.starts_with('-')
        {
            *arg = replace(&SecretSite::Arg(flag), arg);
            continue;
        }
        if let Some((flag, value)) = arg.split_once('=')
            && flag.starts_with('-')
            && is_secret_name(flag)
            && is_literal(value)
        {
            let new = replace(
                &SecretSite::Arg(flag.trim_start_matches('-').to_owned()),
                value,
            );
            *arg = format!("{flag}={new}");
        } else if arg.starts_with('-') && is_secret_name(arg) {
            secret_next = Some(arg.trim_start_matches('-').to_owned());
        } else {
            let name = match (arg.split_once('='), &last_flag) {
                (Some((flag, _)), _) if flag.starts_with('-') => {
                    flag.trim_start_matches('-').to_owned()
                }
                (_, Some(flag)) => flag.clone(),
                _ => format!("arg{i}"),
            };
            *arg = rewrite_spans(arg, &SecretSite::Arg(name), all_query_values, replace);
        }
        last_flag = arg
            .starts_with('-')
            .then(|| arg.trim_start_matches('-').to_owned())
            .filter(|f| !f.contains('='));
    }
    if let Some(url) = &mut config.url {
        let named = rewrite_url(url, replace);
        *url = rewrite_spans(
            &named,
            &SecretSite::Url("url".into()),
            all_query_values,
            replace,
        );
    }
}

fn is_literal(v: &str) -> bool {
    !v.is_empty() && !expand::has_references(v)
}

fn rewrite_url(url: &str, replace: &mut dyn FnMut(&SecretSite, &str) -> String) -> String {
    let (base, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let (before_query, query) = match base.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (base, None),
    };
    let mut out = String::new();
    // userinfo password: scheme://user:password@host
    match before_query.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            out.push_str(scheme);
            out.push_str("://");
            match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    match userinfo.split_once(':') {
                        Some((user, pass)) if is_literal(pass) => {
                            let new = replace(&SecretSite::Url("password".into()), pass);
                            out.push_str(&format!("{user}:{new}"));
                        }
                        _ => out.push_str(userinfo),
                    }
                    out.push('@');
                    out.push_str(host);
                }
                None => out.push_str(authority),
            }
            out.push_str(path);
        }
        None => out.push_str(before_query),
    }
    if let Some(q) = query {
        out.push('?');
        let parts: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) if is_secret_name(k) && is_literal(v) => {
                    format!("{k}={}", replace(&SecretSite::Url(k.to_owned()), v))
                }
                _ => pair.to_owned(),
            })
            .collect();
        out.push_str(&parts.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// A copy of `config` with every literal secret masked, and every literal
/// URL query value with them (for `config show`).
pub fn masked(config: &McpServerConfig) -> McpServerConfig {
    let mut c = config.clone();
    rewrite_with(&mut c, true, &mut |_, _| MASK.to_owned());
    c
}

/// Every literal value of `config` that [`masked`] hides (`config show`'s
/// rule): for masking what the server itself prints, where the value may
/// stand alone (`--password hunter2` echoed back as `hunter2`).
pub fn literal_secrets(config: &McpServerConfig) -> Vec<String> {
    let mut found = Vec::new();
    keep_literal_secrets(config, &mut found);
    found
}

/// Appends to `secrets` (a resolved config's [`McpServerConfig::secrets`])
/// each of [`literal_secrets`] of `config` it does not hold yet.
pub fn keep_literal_secrets(config: &McpServerConfig, secrets: &mut Vec<String>) {
    rewrite_with(&mut config.clone(), true, &mut |_, value| {
        if !secrets.iter().any(|known| known == value) {
            secrets.push(value.to_owned());
        }
        value.to_owned()
    });
}

/// `text` with every secret recognisable by its value masked: service
/// tokens, JWTs, URL passwords, every literal URL query value, and the
/// credential after `Bearer`/`Basic`/`token`. For anything shown to people
/// or logged that may quote a configuration or a server: listings, error
/// messages, trace lines, a server's stderr. `${VAR}` references stay.
pub fn mask_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in value::spans(text, true) {
        let secret = &text[span.range.clone()];
        if !is_literal(secret) {
            continue;
        }
        out.push_str(&text[at..span.range.start]);
        out.push_str(MASK);
        at = span.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// A URL with its password, every literal query value and any token in it
/// masked (`https://u:********@h/mcp?api_key=********&v=********`), for
/// showing a server's address anywhere (`list sources`, `--json`, errors).
pub fn mask_url(url: &str) -> String {
    mask_text(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for n in [
            "GITHUB_TOKEN",
            "API_KEY",
            "OPENAI_API_KEY",
            "x-api-key",
            "Authorization",
            "--token",
            "DB_PASSWORD",
            "GH_PAT",
            "SECRET",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "DEBUG",
            "PATH",
            "HOME",
            "--port",
            "Content-Type",
            "PATTERN",
            "KEYBOARD_LAYOUT",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn masks_literals_keeps_references() {
        let mut c = McpServerConfig::stdio(
            "x",
            [
                "--token",
                "abc",
                "--api-key=def",
                "--port",
                "80",
                "--auth=${A}",
            ],
        );
        c.env.insert("GITHUB_TOKEN".into(), "ghp_123".into());
        c.env.insert("OTHER_TOKEN".into(), "${OTHER_TOKEN}".into());
        c.env.insert("DEBUG".into(), "1".into());
        c.headers
            .insert("Authorization".into(), "Bearer xyz".into());
        c.url = Some("https://u:pw@h/mcp?api_key=k1&x=1".into());
        let m = masked(&c);
        assert_eq!(
            m.args,
            [
                "--token",
                MASK,
                "--api-key=********",
                "--port",
                "80",
                "--auth=${A}"
            ]
        );
        assert_eq!(m.env["GITHUB_TOKEN"], MASK);
        assert_eq!(m.env["OTHER_TOKEN"], "${OTHER_TOKEN}");
        assert_eq!(m.env["DEBUG"], "1");
        assert_eq!(m.headers["Authorization"], "Bearer ********");
        // Shown, every literal query value is hidden (a secret's parameter
        // need not be named like one).
        assert_eq!(
            m.url.as_deref(),
            Some("https://u:********@h/mcp?api_key=********&x=********")
        );
    }

    #[test]
    fn secrets_are_recognised_by_their_value_wherever_they_are() {
        let mut c = McpServerConfig::stdio(
            "x",
            [
                "--db",
                "postgres://app:pw1@db/app",
                "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
                "--header",
                "Authorization: Bearer abcdefgh12345",
                "--plain",
                "value",
            ],
        );
        c.env
            .insert("SLACK".into(), "xoxb-123456789012-abcdefghijkl".into());
        c.env.insert("AWS_ID".into(), "AKIAIOSFODNN7EXAMPLE".into());
        c.env
            .insert("DATABASE_URL".into(), "mysql://root:pw2@h/db".into());
        c.env.insert("REF".into(), "postgres://u:${PW}@h/db".into());
        c.headers.insert(
            "X-Custom".into(),
            "ghp_abcdefghijklmnopqrstuvwxyz0123".into(),
        );
        let m = masked(&c);
        assert_eq!(
            m.args,
            [
                "--db",
                "postgres://app:********@db/app",
                MASK,
                "--header",
                "Authorization: Bearer ********",
                "--plain",
                "value"
            ]
        );
        assert_eq!(m.env["SLACK"], MASK);
        assert_eq!(m.env["AWS_ID"], MASK);
        assert_eq!(m.env["DATABASE_URL"], "mysql://root:********@h/db");
        assert_eq!(m.env["REF"], "postgres://u:${PW}@h/db");
        assert_eq!(m.headers["X-Custom"], MASK);

        // Import replaces them with references named after where they were.
        let mut vars = Vec::new();
        let mut imported = c.clone();
        rewrite(&mut imported, &mut |site, _| {
            let var = site.env_name("srv");
            vars.push(var.clone());
            format!("${{{var}}}")
        });
        assert_eq!(imported.args[1], "postgres://app:${SRV_DB_PASSWORD}@db/app");
        assert_eq!(imported.args[2], "${SRV_ARG2}");
        assert_eq!(imported.env["SLACK"], "${SLACK}");
        assert_eq!(
            imported.env["DATABASE_URL"],
            "mysql://root:${DATABASE_URL_PASSWORD}@h/db"
        );
        assert!(vars.contains(&"SRV_HEADER_TOKEN".to_owned()), "{vars:?}");
    }

    #[test]
    fn literal_secrets_are_what_config_show_masks() {
        let mut c = McpServerConfig::stdio(
            "x",
            [
                "--api-key=sk-ant-api03-abcdefghijklmnop",
                "--password",
                "hunter2hunter2",
                "--port",
                "8080",
                "--token=${T}",
                "--url=https://u:pw-in-url@h/mcp?team=t1",
            ],
        );
        c.env.insert("GITHUB_TOKEN".into(), "ghp_123".into());
        c.env.insert("DEBUG".into(), "1".into());
        let found = literal_secrets(&c);
        for secret in [
            "sk-ant-api03-abcdefghijklmnop",
            "hunter2hunter2",
            "pw-in-url",
            "t1",
            "ghp_123",
        ] {
            assert!(found.iter().any(|f| f == secret), "{secret}: {found:?}");
        }
        for shown in ["8080", "1", "${T}", "--port"] {
            assert!(!found.iter().any(|f| f == shown), "{shown}: {found:?}");
        }
        // Nothing it returns is left visible by `config show`.
        let shown = format!("{:?} {:?}", masked(&c).args, masked(&c).env);
        for secret in &found {
            assert!(!shown.contains(secret.as_str()), "{secret}: {shown}");
        }
    }

    #[test]
    fn shown_urls_hide_credentials_and_query_values() {
        assert_eq!(
            mask_url("https://u:p@h/mcp?api_key=k&v=2&ref=${REF}"),
            "https://u:********@h/mcp?api_key=********&v=********&ref=${REF}"
        );
        let mut c = McpServerConfig::http("https://h/mcp?team=t1&key=k1");
        c.url = Some("https://h/mcp?team=t1&key=k1".into());
        assert_eq!(
            masked(&c).url.as_deref(),
            Some("https://h/mcp?team=********&key=********")
        );
        // Import only replaces what is a secret.
        let mut imported = c.clone();
        rewrite(&mut imported, &mut |site, _| {
            format!("${{{}}}", site.env_name("h"))
        });
        assert_eq!(
            imported.url.as_deref(),
            Some("https://h/mcp?team=t1&key=${H_KEY}")
        );
        assert_eq!(
            mask_text(
                "connect to https://h/x?token=abc failed: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
            ),
            "connect to https://h/x?token=******** failed: Bearer ********"
        );
    }

    #[test]
    fn replacement_variable_names() {
        assert_eq!(
            SecretSite::Env("GH_TOKEN".into()).env_name("gh"),
            "GH_TOKEN"
        );
        assert_eq!(
            SecretSite::Header("Authorization".into()).env_name("github"),
            "GITHUB_TOKEN"
        );
        assert_eq!(
            SecretSite::Header("X-Api-Key".into()).env_name("brave"),
            "BRAVE_X_API_KEY"
        );
        assert_eq!(SecretSite::Arg("api-key".into()).env_name("s"), "S_API_KEY");
    }
}
