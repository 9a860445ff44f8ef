//! Server names: checked by the one rule of `extpool_core::name`
//! (`[A-Za-z0-9_]+`, no `__`, no leading or trailing `_`, at most 64
//! bytes), unique ignoring case.
//!
//! The name is the key of a server in configuration, the label of its
//! tools (`mcp__<name>__<tool>`), the identity of its skills (SEP-2640 keys
//! skills by host-assigned label, never by the self-reported server name)
//! and the source of its token variable `MCP_<NAME>_TOKEN`. Checking it once,
//! here, keeps all of those well-formed.

use std::sync::Arc;

use crate::error::ConfigError;

/// A checked server name; cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerName(Arc<str>);

impl ServerName {
    /// Checks `name` against the server-name rule (`extpool_core::check_server_name`).
    pub fn new(name: impl AsRef<str>) -> Result<Self, ConfigError> {
        let name = name.as_ref();
        extpool_core::check_server_name(name).map_err(|reason| ConfigError::InvalidName {
            name: name.to_owned(),
            reason,
        })?;
        Ok(Self(Arc::from(name)))
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The environment variable holding this server's bearer token: `MCP_<NAME>_TOKEN`.
    pub fn token_env_var(&self) -> String {
        format!("MCP_{}_TOKEN", self.0.to_ascii_uppercase())
    }
}

impl std::fmt::Display for ServerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for ServerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl AsRef<str> for ServerName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Checks every name and that no two differ only by case.
pub fn check_names<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<ServerName>, ConfigError> {
    let mut seen = extpool_core::ServerNames::new();
    let mut out = Vec::new();
    for name in names {
        let checked = ServerName::new(name)?;
        if let Err(first) = seen.claim(name, name) {
            return Err(ConfigError::DuplicateName {
                first: (*first).to_owned(),
                second: name.to_owned(),
            });
        }
        out.push(checked);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_word_characters() {
        for ok in ["a", "GitHub", "my_server_2"] {
            assert!(ServerName::new(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        for bad in [
            "", "a-b", "a b", "a.b", "é", "a/b", "a\n", "_", "a__b", "_a",
        ] {
            assert!(
                matches!(ServerName::new(bad), Err(ConfigError::InvalidName { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn token_variable_is_upper_cased() {
        assert_eq!(
            ServerName::new("GitHub_2").unwrap().token_env_var(),
            "MCP_GITHUB_2_TOKEN"
        );
    }

    #[test]
    fn duplicates_ignoring_case_are_refused() {
        assert!(check_names(["a", "b"]).is_ok());
        let err = check_names(["github", "GitHub"]).unwrap_err();
        assert!(matches!(err, ConfigError::DuplicateName { .. }));
    }
}
