//! What `add` is given — a folder, a git repository (a URL, with `#REF`),
//! or `NAME@MARKETPLACE` — told apart and checked before anything runs:
//! a URL or a ref reaches `git` only when it cannot be taken for an
//! option (no leading `-`) nor select a transport that runs a program
//! (`ext::`, `fd::`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::StoreError;

/// The longest URL or ref accepted.
const MAX_SPEC_BYTES: usize = 2048;

/// Where a plugin (or a marketplace) comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Source {
    /// A local folder (absolute).
    Path {
        /// The folder.
        path: PathBuf,
    },
    /// A git repository.
    Git {
        /// The clone URL (checked by [`check_url`]).
        url: String,
        /// The branch, tag or commit asked for (checked by [`check_ref`]);
        /// the default branch when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none", rename = "ref")]
        reference: Option<String>,
        /// The plugin's folder inside the repository.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subdir: Option<String>,
    },
    /// A plugin of a marketplace added before.
    Marketplace {
        /// The plugin's name in the marketplace.
        plugin: String,
        /// The marketplace's name.
        marketplace: String,
    },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Path { path } => write!(f, "{}", path.display()),
            Self::Git {
                url,
                reference,
                subdir,
            } => {
                write!(f, "{url}")?;
                if let Some(r) = reference {
                    write!(f, "#{r}")?;
                }
                if let Some(s) = subdir {
                    write!(f, " ({s})")?;
                }
                Ok(())
            }
            Self::Marketplace {
                plugin,
                marketplace,
            } => write!(f, "{plugin}@{marketplace}"),
        }
    }
}

/// Whether `spec` reads as a git URL: a scheme git speaks
/// (`https://`, `http://`, `ssh://`, `git://`, `file://`), scp-like
/// `user@host:path`, or a path ending in `.git`.
fn looks_like_git(spec: &str) -> bool {
    let lower = spec.to_ascii_lowercase();
    ["https://", "http://", "ssh://", "git://", "file://"]
        .iter()
        .any(|s| lower.starts_with(s))
        || scp_like(spec)
        || spec.trim_end_matches('/').ends_with(".git")
}

/// `user@host:path` (git's scp-like syntax): an `@` before the first `:`,
/// no `/` before it.
fn scp_like(spec: &str) -> bool {
    match (spec.find('@'), spec.find(':'), spec.find('/')) {
        (Some(at), Some(colon), slash) => at < colon && slash.is_none_or(|s| s > colon),
        _ => false,
    }
}

/// Refuses a URL git could take for an option, or that selects a
/// transport running a program (`ext::`, `fd::`) or holds a control
/// character; the URL is otherwise git's to judge.
pub fn check_url(url: &str) -> Result<(), StoreError> {
    let bad = |why: &str| StoreError::BadSource {
        spec: url.to_owned(),
        reason: why.to_owned(),
    };
    if url.is_empty() {
        return Err(bad("the URL is empty"));
    }
    if url.len() > MAX_SPEC_BYTES {
        return Err(bad("the URL is too long"));
    }
    if url.starts_with('-') {
        return Err(bad("a URL may not start with `-`"));
    }
    if url.chars().any(char::is_control) {
        return Err(bad("the URL holds a control character"));
    }
    if url.contains("::") {
        return Err(bad(
            "git's `transport::address` URLs (ext::, fd::) are not accepted",
        ));
    }
    Ok(())
}

/// Refuses a ref git could take for an option, or that is not a branch,
/// tag or commit name: 1 to 256 characters of letters, digits and
/// `. _ / - +`, not starting with `-` or `/`, without `..`, `//`, `@{`
/// or a trailing `/`, `.` or `.lock`.
pub fn check_ref(r: &str) -> Result<(), StoreError> {
    let bad = |why: &str| StoreError::BadSource {
        spec: format!("#{r}"),
        reason: why.to_owned(),
    };
    if r.is_empty() || r.len() > 256 {
        return Err(bad("a ref is 1 to 256 characters"));
    }
    if r.starts_with('-') {
        return Err(bad("a ref may not start with `-`"));
    }
    if !r
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-' | '+'))
    {
        return Err(bad(
            "a ref holds only letters, digits and `. _ / - +` characters",
        ));
    }
    if r.starts_with('/')
        || r.ends_with('/')
        || r.ends_with('.')
        || r.ends_with(".lock")
        || r.contains("..")
        || r.contains("//")
    {
        return Err(bad("not a valid branch, tag or commit name"));
    }
    Ok(())
}

/// A plugin or marketplace name as `NAME@MARKETPLACE` and the store use
/// it: 1 to 64 characters of letters, digits and `. _ -`, not starting
/// with `.` or `-`.
pub fn check_name(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadName {
            name: name.to_owned(),
        })
    }
}

/// Tells what `spec` is, relative paths against `cwd`: an existing
/// folder is a path; a git URL (with `#REF`) is a repository;
/// `NAME@MARKETPLACE` names a marketplace's plugin. Checked here, before
/// anything runs.
pub fn parse(spec: &str, cwd: &Path) -> Result<Source, StoreError> {
    let bad = |why: &str| StoreError::BadSource {
        spec: spec.to_owned(),
        reason: why.to_owned(),
    };
    if spec.trim().is_empty() {
        return Err(bad("it is empty"));
    }
    if spec.len() > MAX_SPEC_BYTES {
        return Err(bad("it is too long"));
    }
    let path = cwd.join(spec);
    if !looks_like_git(spec) && path.is_dir() {
        let path = std::fs::canonicalize(&path).map_err(|e| bad(&e.to_string()))?;
        return Ok(Source::Path { path });
    }
    if looks_like_git(spec) {
        let (url, reference) = match spec.rsplit_once('#') {
            Some((url, r)) => (url, Some(r)),
            None => (spec, None),
        };
        check_url(url)?;
        if let Some(r) = reference {
            check_ref(r)?;
        }
        // A local repository given by path: git is given it absolute.
        let url = if Path::new(url).is_relative() && !url.contains("://") && !scp_like(url) {
            cwd.join(url).display().to_string()
        } else {
            url.to_owned()
        };
        return Ok(Source::Git {
            url,
            reference: reference.map(str::to_owned),
            subdir: None,
        });
    }
    if let Some((plugin, marketplace)) = spec.rsplit_once('@')
        && !spec.contains('/')
    {
        check_name(plugin)?;
        check_name(marketplace)?;
        return Ok(Source::Marketplace {
            plugin: plugin.to_owned(),
            marketplace: marketplace.to_owned(),
        });
    }
    Err(bad(
        "not a folder, a git URL (https://, ssh://, git://, file://, user@host:path, or a path ending in .git) or NAME@MARKETPLACE",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_told_apart_and_checked() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("kit")).unwrap();
        let cwd = tmp.path();
        assert!(matches!(parse("kit", cwd).unwrap(), Source::Path { .. }));
        assert_eq!(
            parse("https://example.com/a/kit.git#v1.2", cwd).unwrap(),
            Source::Git {
                url: "https://example.com/a/kit.git".into(),
                reference: Some("v1.2".into()),
                subdir: None,
            }
        );
        assert!(matches!(
            parse("git@example.com:a/kit.git", cwd).unwrap(),
            Source::Git { .. }
        ));
        assert_eq!(
            parse("demo@market", cwd).unwrap(),
            Source::Marketplace {
                plugin: "demo".into(),
                marketplace: "market".into()
            }
        );
        for refused in [
            "",
            "https://x/a.git#-upload-pack=evil",
            "ext::sh -c touch% /tmp/pwned.git",
            "-uevil.git",
            "https://x/a.git#a..b",
            "https://x/a.git#a@{1}",
            "nowhere",
            "de mo@market",
        ] {
            assert!(parse(refused, cwd).is_err(), "{refused:?} is refused");
        }
    }
}
