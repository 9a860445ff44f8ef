//! Keeping the values extpool hands a server out of what it shows from that
//! server.
//!
//! A server that fails often prints its configuration — `API key sk-… is
//! invalid`, a connection string with its password — and its stderr ends up
//! in error messages and the log. Every value extpool itself passed to the
//! server is replaced with `***` there (its stderr lines, the message of an
//! error it returns): `env` values, values substituted for `${VAR}`
//! references and literal secrets in its arguments
//! ([`McpServerConfig::secrets`]), header values, the
//! bearer token, and the user info and query values of the URL. Values
//! shorter than [`MIN_REDACTED_LEN`] bytes are left alone: they cannot hide
//! a credential, and masking every `1` or `on` would garble the text.

use std::borrow::Cow;
use std::sync::Arc;

use crate::config::McpServerConfig;

/// Shorter values are not redacted.
pub const MIN_REDACTED_LEN: usize = 4;

/// What replaces a redacted value.
pub const MASK: &str = "***";

/// The values to hide from one server's output; cheap to clone.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so a value that contains another is masked whole.
    values: Arc<[String]>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} values)", self.values.len())
    }
}

impl Redactor {
    /// The values `config` passes to its server, plus `extra` (a token
    /// that does not appear in the config).
    pub fn for_server<'a>(
        config: &McpServerConfig,
        extra: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut values: Vec<String> = Vec::new();
        let mut add = |v: &str| {
            if v.len() >= MIN_REDACTED_LEN && !values.iter().any(|known| known == v) {
                values.push(v.to_owned());
            }
        };
        config.env.values().for_each(|v| add(v));
        config.secrets.iter().for_each(|v| add(v));
        for value in config.headers.values() {
            add(value);
            // `Bearer <token>`, `Basic <credentials>`: the credential alone too.
            if let Some((_, credential)) = value.split_once(' ') {
                add(credential.trim());
            }
        }
        if let Some(url) = config
            .url
            .as_deref()
            .and_then(|u| reqwest::Url::parse(u).ok())
        {
            add(url.username());
            if let Some(password) = url.password() {
                add(password);
            }
            for (_, value) in url.query_pairs() {
                add(&value);
            }
        }
        extra.into_iter().for_each(add);
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        Self {
            values: values.into(),
        }
    }

    /// True when nothing would be masked.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every known value replaced by [`MASK`].
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for value in self.values.iter() {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), MASK));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passed_values_are_masked() {
        let mut config = McpServerConfig::stdio("srv", ["--verbose"]);
        config.env.insert("API_KEY".into(), "sk-ant-s3cr3t".into());
        config.env.insert("DEBUG".into(), "1".into());
        config.secrets = vec!["from-a-variable".into()];
        let r = Redactor::for_server(&config, []);
        assert_eq!(
            r.redact("key sk-ant-s3cr3t rejected; arg from-a-variable; DEBUG=1"),
            "key *** rejected; arg ***; DEBUG=1"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn url_credentials_headers_and_tokens_are_masked() {
        let mut config =
            McpServerConfig::http("https://user:pa55word@x.example/mcp?api_key=q-value");
        config
            .headers
            .insert("Authorization".into(), "Bearer hdr-token".into());
        let r = Redactor::for_server(&config, ["env-token"]);
        let shown = r.redact("pa55word q-value hdr-token env-token user@ Bearer hdr-token");
        assert_eq!(shown, "*** *** *** *** ***@ ***");
    }

    #[test]
    fn a_longer_value_is_masked_whole() {
        let mut config = McpServerConfig::stdio("srv", Vec::<String>::new());
        config.env.insert("A".into(), "abcd".into());
        config.env.insert("B".into(), "abcdefgh".into());
        let r = Redactor::for_server(&config, []);
        assert_eq!(r.redact("abcdefgh abcd"), "*** ***");
    }
}
