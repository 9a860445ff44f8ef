//! Recognising literal secrets in server entries, to hide them.
//!
//! A `${VAR}` reference is never a secret (it is what we print). A literal
//! value is treated as a secret when its key looks like one: an env var or
//! header named like a token, key, password or credential, the value of a
//! `--token`-style argument, a URL query parameter with such a name, or a
//! password in a URL. Each is either masked (`config show`) or replaced by a
//! `${VAR}` reference (`config import`), through one visitor so the two
//! can never disagree about what counts.

use extpool_mcp::config::McpServerConfig;

use crate::expand;

/// The text printed instead of a literal secret.
pub const MASK: &str = "********";

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
}

impl SecretSite {
    /// The environment variable that should hold this secret for `server`.
    pub fn env_name(&self, server: &str) -> String {
        let up = |s: &str| {
            s.trim_start_matches('-')
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_uppercase()
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        };
        match self {
            SecretSite::Env(name) => up(name),
            SecretSite::Header(h) if h.eq_ignore_ascii_case("authorization") => {
                format!("{}_TOKEN", up(server))
            }
            SecretSite::Header(name) | SecretSite::Arg(name) | SecretSite::Url(name) => {
                format!("{}_{}", up(server), up(name))
            }
            SecretSite::OAuthClientSecret => format!("{}_OAUTH_CLIENT_SECRET", up(server)),
        }
    }
}

/// Rewrites every literal secret of `config` with `replace(site, value)`.
pub fn rewrite(config: &mut McpServerConfig, replace: &mut dyn FnMut(&SecretSite, &str) -> String) {
    if let Some(secret) = config
        .oauth
        .as_mut()
        .and_then(|o| o.client_secret.as_mut())
        .filter(|s| is_literal(s))
    {
        *secret = replace(&SecretSite::OAuthClientSecret, secret);
    }
    for (k, v) in config.env.iter_mut() {
        if is_secret_name(k) && is_literal(v) {
            *v = replace(&SecretSite::Env(k.clone()), v);
        }
    }
    for (k, v) in config.headers.iter_mut() {
        if !(is_secret_name(k) && is_literal(v)) {
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
    for arg in config.args.iter_mut() {
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
        }
    }
    if let Some(url) = &mut config.url {
        *url = rewrite_url(url, replace);
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

/// A copy of `config` with every literal secret masked.
pub fn masked(config: &McpServerConfig) -> McpServerConfig {
    let mut c = config.clone();
    rewrite(&mut c, &mut |_, _| MASK.to_owned());
    c
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
        assert_eq!(
            m.url.as_deref(),
            Some("https://u:********@h/mcp?api_key=********&x=1")
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
