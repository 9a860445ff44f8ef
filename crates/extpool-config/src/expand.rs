//! `${VAR}` and `${VAR:-default}` expansion.
//!
//! Configs keep the `${VAR}` form; values are substituted only when a server
//! is about to be started ([`expand_server`]), so printing a config never
//! shows a resolved secret. `$${` writes a literal `${`; a `$` not followed
//! by `{` is left alone. `${VAR:-default}` uses the default when `VAR` is
//! unset *or empty*, as in the shell and in Claude Code's `.mcp.json`.

use extpool_mcp::config::McpServerConfig;

/// A variable reference found in a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarRef {
    /// Variable name.
    pub name: String,
    /// The `:-` default, if any.
    pub default: Option<String>,
}

/// Why a string could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// `${` without a closing `}`, or a bad variable name.
    #[error("malformed variable reference at character {offset}: {reason}")]
    Syntax {
        /// Character offset of the `$` in the string.
        offset: usize,
        /// What was expected.
        reason: &'static str,
    },
    /// A `${VAR}` without default whose variable is not set.
    #[error("environment variable {name} is not set (write ${{{name}:-default}} for a fallback)")]
    Undefined {
        /// The variable name.
        name: String,
    },
}

enum Piece<'a> {
    Text(&'a str),
    Var(VarRef),
}

fn pieces(s: &str) -> Result<Vec<Piece<'_>>, ExpandError> {
    let mut out = Vec::new();
    let mut rest = s;
    let mut consumed = 0usize;
    while let Some(i) = rest.find('$') {
        let after = &rest[i + 1..];
        if after.starts_with("${") {
            // `$${` → literal `${`.
            out.push(Piece::Text(&rest[..i]));
            out.push(Piece::Text("${"));
            consumed += i + 3;
            rest = &rest[i + 3..];
            continue;
        }
        if !after.starts_with('{') {
            out.push(Piece::Text(&rest[..=i]));
            consumed += i + 1;
            rest = &rest[i + 1..];
            continue;
        }
        let offset = s[..consumed + i].chars().count();
        let body_start = i + 2;
        let Some(close) = rest[body_start..].find('}') else {
            return Err(ExpandError::Syntax {
                offset,
                reason: "`${` without a closing `}`",
            });
        };
        let body = &rest[body_start..body_start + close];
        let (name, default) = match body.split_once(":-") {
            Some((n, d)) => (n, Some(d.to_owned())),
            None => (body, None),
        };
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ExpandError::Syntax {
                offset,
                reason: "expected a variable name of letters, digits and `_` (like ${API_TOKEN})",
            });
        }
        out.push(Piece::Text(&rest[..i]));
        out.push(Piece::Var(VarRef {
            name: name.to_owned(),
            default,
        }));
        let end = body_start + close + 1;
        consumed += end;
        rest = &rest[end..];
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// The variables a string refers to (checks the syntax).
pub fn references(s: &str) -> Result<Vec<VarRef>, ExpandError> {
    Ok(pieces(s)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(v) => Some(v),
            Piece::Text(_) => None,
        })
        .collect())
}

/// True when the string contains a `${…}` reference.
pub fn has_references(s: &str) -> bool {
    references(s).is_ok_and(|r| !r.is_empty())
}

/// Expands `s` with `lookup` (usually the process environment).
pub fn expand(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    expand_noting(s, lookup, &mut Vec::new())
}

/// Like [`expand`], and appends each value taken from `lookup` to
/// `substituted` (they are secrets as far as anyone can tell).
fn expand_noting(
    s: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    substituted: &mut Vec<String>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(s.len());
    for piece in pieces(s)? {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(v) => match (lookup(&v.name), v.default) {
                (Some(value), Some(default)) if value.is_empty() => out.push_str(&default),
                (Some(value), _) => {
                    out.push_str(&value);
                    substituted.push(value);
                }
                (None, Some(default)) => out.push_str(&default),
                (None, None) => return Err(ExpandError::Undefined { name: v.name }),
            },
        }
    }
    Ok(out)
}

/// Escapes a literal string so that expansion gives it back unchanged.
pub fn escape(s: &str) -> String {
    s.replace("${", "$${")
}

/// A server config's expansion failure, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {error}")]
pub struct FieldExpandError {
    /// The field path inside the server entry (`env.GITHUB_TOKEN`, `args[2]`).
    pub field: String,
    /// What went wrong (shown in the message, so not a `source()`).
    pub error: ExpandError,
}

/// Calls `f(field_path, value)` for every string of a server entry that expansion applies to.
pub fn for_each_string(config: &McpServerConfig, f: &mut dyn FnMut(String, &str)) {
    if let Some(c) = &config.command {
        f("command".into(), c);
    }
    for (i, a) in config.args.iter().enumerate() {
        f(format!("args[{i}]"), a);
    }
    for (k, v) in &config.env {
        f(format!("env.{k}"), v);
    }
    if let Some(c) = &config.cwd {
        f("cwd".into(), c);
    }
    if let Some(sandbox) = &config.sandbox {
        for (list, paths) in [("read", &sandbox.read), ("write", &sandbox.write)] {
            for (i, p) in paths.iter().enumerate() {
                f(format!("sandbox.{list}[{i}]"), p);
            }
        }
    }
    if let Some(u) = &config.url {
        f("url".into(), u);
    }
    for (k, v) in &config.headers {
        f(format!("headers.{k}"), v);
    }
    if let Some(oauth) = &config.oauth {
        for (field, v) in [
            ("oauth.client_id", &oauth.client_id),
            ("oauth.client_secret", &oauth.client_secret),
        ] {
            if let Some(v) = v {
                f(field.into(), v);
            }
        }
        if let Some(ema) = &oauth.enterprise_managed {
            f("oauth.enterprise_managed.client_id".into(), &ema.client_id);
            f(
                "oauth.enterprise_managed.client_secret".into(),
                &ema.client_secret,
            );
        }
    }
}

/// Expands every string of a server entry: command, args, env values, cwd,
/// the sandbox's read and write paths, url, header values and the OAuth client ids and secrets. The values
/// substituted for references, and the literal secrets `config show` masks
/// ([`crate::secrets::keep_literal_secrets`]), are kept in
/// [`McpServerConfig::secrets`], so that what the server prints back is
/// masked.
pub fn expand_server(
    config: &McpServerConfig,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<McpServerConfig, FieldExpandError> {
    let substituted = std::cell::RefCell::new(Vec::new());
    let ex = |field: String, s: &str| {
        expand_noting(s, lookup, &mut substituted.borrow_mut()).map_err(|source| FieldExpandError {
            field,
            error: source,
        })
    };
    let mut out = config.clone();
    if let Some(c) = &config.command {
        out.command = Some(ex("command".into(), c)?);
    }
    for (i, a) in config.args.iter().enumerate() {
        out.args[i] = ex(format!("args[{i}]"), a)?;
    }
    for (k, v) in &config.env {
        out.env.insert(k.clone(), ex(format!("env.{k}"), v)?);
    }
    if let Some(c) = &config.cwd {
        out.cwd = Some(ex("cwd".into(), c)?);
    }
    if let (Some(sandbox), Some(from)) = (out.sandbox.as_mut(), config.sandbox.as_ref()) {
        for (i, p) in from.read.iter().enumerate() {
            sandbox.read[i] = ex(format!("sandbox.read[{i}]"), p)?;
        }
        for (i, p) in from.write.iter().enumerate() {
            sandbox.write[i] = ex(format!("sandbox.write[{i}]"), p)?;
        }
    }
    if let Some(u) = &config.url {
        out.url = Some(ex("url".into(), u)?);
    }
    for (k, v) in &config.headers {
        out.headers
            .insert(k.clone(), ex(format!("headers.{k}"), v)?);
    }
    if let (Some(oauth), Some(from)) = (out.oauth.as_mut(), config.oauth.as_ref()) {
        if let Some(v) = &from.client_id {
            oauth.client_id = Some(ex("oauth.client_id".into(), v)?);
        }
        if let Some(v) = &from.client_secret {
            oauth.client_secret = Some(ex("oauth.client_secret".into(), v)?);
        }
        if let (Some(ema), Some(from)) = (
            oauth.enterprise_managed.as_mut(),
            from.enterprise_managed.as_ref(),
        ) {
            ema.client_id = ex("oauth.enterprise_managed.client_id".into(), &from.client_id)?;
            ema.client_secret = ex(
                "oauth.enterprise_managed.client_secret".into(),
                &from.client_secret,
            )?;
        }
    }
    out.secrets.extend(substituted.into_inner());
    crate::secrets::keep_literal_secrets(config, &mut out.secrets);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substituted_values_are_kept_as_secrets() {
        let mut config = McpServerConfig::stdio("srv", ["--key=${TOKEN}", "${MISSING:-plain}"]);
        config.env.insert("A".into(), "${EMPTY:-x}".into());
        let out = expand_server(&config, &env).unwrap();
        assert_eq!(out.args, ["--key=s3cr3t", "plain"]);
        assert_eq!(out.secrets, ["s3cr3t"]);

        // A literal secret `config show` masks is kept with them.
        let config =
            McpServerConfig::stdio("srv", ["--password", "hunter2hunter2", "--port", "80"]);
        let out = expand_server(&config, &env).unwrap();
        assert_eq!(out.secrets, ["hunter2hunter2"]);
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cr3t".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_vars_and_defaults() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cr3t");
        assert_eq!(expand("${MISSING:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand("${EMPTY:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand("${MISSING:-}", &env).unwrap(), "");
        assert_eq!(
            expand("a$b $ $${TOKEN} ${TOKEN}", &env).unwrap(),
            "a$b $ ${TOKEN} s3cr3t"
        );
        assert_eq!(expand("ü${TOKEN}ü", &env).unwrap(), "üs3cr3tü");
    }

    #[test]
    fn undefined_and_malformed() {
        assert_eq!(
            expand("${MISSING}", &env).unwrap_err(),
            ExpandError::Undefined {
                name: "MISSING".into()
            }
        );
        let e = expand("éé${TOKEN", &env).unwrap_err();
        assert!(matches!(e, ExpandError::Syntax { offset: 2, .. }), "{e:?}");
        assert!(matches!(
            expand("${1X}", &env),
            Err(ExpandError::Syntax { .. })
        ));
        assert!(matches!(
            expand("${}", &env),
            Err(ExpandError::Syntax { .. })
        ));
        assert!(matches!(
            expand("${env:X}", &env),
            Err(ExpandError::Syntax { .. })
        ));
    }

    #[test]
    fn errors_never_contain_values() {
        let e = expand("${TOKEN}${MISSING}", &env).unwrap_err();
        assert!(!e.to_string().contains("s3cr3t"));
    }

    #[test]
    fn escape_round_trips() {
        let s = "literal ${NOT_A_VAR} $x";
        assert_eq!(expand(&escape(s), &env).unwrap(), s);
    }

    #[test]
    fn server_fields_are_expanded() {
        let mut c = McpServerConfig::stdio("${MISSING:-npx}", ["--token=${TOKEN}"]);
        c.env.insert("K".into(), "${TOKEN}".into());
        let out = expand_server(&c, &env).unwrap();
        assert_eq!(out.command.as_deref(), Some("npx"));
        assert_eq!(out.args, ["--token=s3cr3t"]);
        assert_eq!(out.env["K"], "s3cr3t");
        c.headers.insert("X".into(), "${NOPE}".into());
        let e = expand_server(&c, &env).unwrap_err();
        assert_eq!(e.field, "headers.X");
    }

    #[test]
    fn the_enterprise_managed_client_secret_is_expanded_and_kept_secret() {
        let oauth = |secret: &str| {
            serde_json::from_value(serde_json::json!({
                "enterprise_managed": {"client_id": "${MISSING:-gw}", "client_secret": secret}
            }))
            .unwrap()
        };
        let mut c = McpServerConfig::stdio("npx", ["x"]);
        c.oauth = Some(oauth("${TOKEN}"));
        let out = expand_server(&c, &env).unwrap();
        let ema = out.oauth.unwrap().enterprise_managed.unwrap();
        assert_eq!(
            (ema.client_id.as_str(), ema.client_secret.as_str()),
            ("gw", "s3cr3t")
        );
        assert_eq!(out.secrets, ["s3cr3t"]);
        // A literal one is masked in what the server prints, too.
        c.oauth = Some(oauth("literal-as-secret"));
        let out = expand_server(&c, &env).unwrap();
        assert_eq!(out.secrets, ["literal-as-secret"]);
        c.oauth = Some(oauth("${NOPE}"));
        let e = expand_server(&c, &env).unwrap_err();
        assert_eq!(e.field, "oauth.enterprise_managed.client_secret");
    }
}
