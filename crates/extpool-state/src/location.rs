//! [`StoreUrl`]: where the state lives, parsed from `--state`.
//!
//! * `sqlite:PATH`, `sqlite://PATH` or a bare path — an embedded SQLite
//!   file (created with its directory when missing);
//! * `postgres://…` or `postgresql://…` — a PostgreSQL database, libpq
//!   style (`?host=/run/postgresql` reaches a Unix socket directory).
//!
//! A URL is shown only masked ([`StoreUrl`]'s `Display` and `Debug`), so a
//! password in it never reaches a log line or an error.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use extpool_config::secrets::mask_url;

use crate::error::StateError;

/// The file name of the default SQLite store inside the data directory.
pub const DEFAULT_FILE: &str = "state.db";

/// Connection parameters accepted in a PostgreSQL URL's query. Others are
/// refused (the driver would only warn, quoting their values).
const PG_PARAMS: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
    "options",
    "statement-cache-capacity",
];

/// Which database engine a store uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// An embedded SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        })
    }
}

/// Where a state store lives.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// An SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (kept whole for the driver; shown masked).
    Postgres(String),
}

impl StoreUrl {
    /// The default store: `state.db` in the user's extpool data directory
    /// (`~/.local/share/extpool/state.db` on Linux).
    pub fn default_sqlite() -> StoreUrl {
        StoreUrl::Sqlite(extpool_core::dirs::data_dir().join(DEFAULT_FILE))
    }

    /// The backend this URL selects.
    pub fn backend(&self) -> Backend {
        match self {
            StoreUrl::Sqlite(_) => Backend::Sqlite,
            StoreUrl::Postgres(_) => Backend::Postgres,
        }
    }

    /// The SQLite file, when this is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            StoreUrl::Sqlite(p) => Some(p),
            StoreUrl::Postgres(_) => None,
        }
    }

    /// The URL as it may be shown: any password and query value masked.
    pub fn masked(&self) -> String {
        match self {
            StoreUrl::Sqlite(p) => format!("sqlite:{}", p.display()),
            StoreUrl::Postgres(url) => mask_url(url),
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({})", self.masked())
    }
}

impl FromStr for StoreUrl {
    type Err = StateError;

    fn from_str(s: &str) -> Result<StoreUrl, StateError> {
        let bad = |reason: &str| StateError::BadUrl {
            url: mask_url(s),
            reason: reason.to_owned(),
        };
        if s.trim().is_empty() {
            return Err(bad("empty; give a file path, sqlite:PATH or postgres://…"));
        }
        if let Some(rest) = s.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() || path.starts_with(":memory:") {
                return Err(bad(
                    "an SQLite store needs a file path (an in-memory database would lose \
                     every session at exit)",
                ));
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            check_pg_params(s).map_err(|reason| bad(&reason))?;
            return Ok(StoreUrl::Postgres(s.to_owned()));
        }
        if let Some(scheme) = url_scheme(s) {
            return Err(bad(&format!(
                "unsupported scheme {scheme:?}; use a file path, sqlite:PATH or postgres://…"
            )));
        }
        Ok(StoreUrl::Sqlite(PathBuf::from(s)))
    }
}

/// The scheme of `s` when it starts like a URL (`name:` with a name of two
/// or more letters, so `C:\…` stays a path).
fn url_scheme(s: &str) -> Option<&str> {
    let (scheme, _) = s.split_once(':')?;
    let ok = scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then_some(scheme)
}

/// Refuses query parameters the PostgreSQL driver does not understand,
/// naming the parameter (never its value).
fn check_pg_params(url: &str) -> Result<(), String> {
    let Some((_, query)) = url.split_once('?') else {
        return Ok(());
    };
    let query = query.split('#').next().unwrap_or_default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let key = pair.split_once('=').map_or(pair, |(k, _)| k);
        if !PG_PARAMS.contains(&key) && !key.starts_with("options[") {
            return Err(format!(
                "unknown connection parameter {key:?} (known: {})",
                PG_PARAMS.join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> StoreUrl {
        s.parse().expect(s)
    }

    #[test]
    fn sqlite_forms() {
        assert_eq!(parse("sqlite:/a/b.db"), StoreUrl::Sqlite("/a/b.db".into()));
        assert_eq!(
            parse("sqlite:///a/b.db"),
            StoreUrl::Sqlite("/a/b.db".into())
        );
        assert_eq!(parse("sqlite:rel.db"), StoreUrl::Sqlite("rel.db".into()));
        assert_eq!(parse("/var/x.db"), StoreUrl::Sqlite("/var/x.db".into()));
        assert_eq!(parse("x.db"), StoreUrl::Sqlite("x.db".into()));
        assert_eq!(parse("C:\\x.db"), StoreUrl::Sqlite("C:\\x.db".into()));
        assert_eq!(parse("sqlite:/a").backend(), Backend::Sqlite);
    }

    #[test]
    fn postgres_forms() {
        let u = parse("postgres://u:pw@h:5432/db?sslmode=disable");
        assert_eq!(u.backend(), Backend::Postgres);
        assert!(matches!(
            parse("postgresql:///db?host=/run/pg"),
            StoreUrl::Postgres(_)
        ));
    }

    #[test]
    fn refusals_are_clear_and_masked() {
        for (url, says) in [
            ("", "empty"),
            ("sqlite::memory:", "file path"),
            ("sqlite:", "file path"),
            ("mysql://u:hunter2@h/db", "unsupported scheme \"mysql\""),
            (
                "postgres://u:hunter2@h/db?tokenx=hunter2",
                "unknown connection parameter \"tokenx\"",
            ),
        ] {
            let e = url.parse::<StoreUrl>().expect_err(url).to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("hunter2"), "{url}: {e}");
        }
    }

    #[test]
    fn shown_masked() {
        let u = parse("postgres://app:hunter2@db.internal:5432/extpool");
        for shown in [u.to_string(), format!("{u:?}"), u.masked()] {
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(shown.contains("app:********@db.internal"), "{shown}");
        }
        assert_eq!(parse("sqlite:/a.db").to_string(), "sqlite:/a.db");
    }

    #[test]
    fn default_is_under_the_data_dir() {
        let StoreUrl::Sqlite(p) = StoreUrl::default_sqlite() else {
            panic!("not sqlite")
        };
        assert_eq!(p, extpool_core::dirs::data_dir().join("state.db"));
    }
}
