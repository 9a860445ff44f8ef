//! Where extpool keeps its own data on this machine.
//!
//! One rule for every crate that stores something per user (the credential
//! store, the gateway's state database): the platform's user data
//! directory, then `extpool`.

use std::ffi::OsString;
use std::path::PathBuf;

/// The user's extpool data directory: `$XDG_DATA_HOME/extpool` (else
/// `~/.local/share/extpool`) on Linux and other Unixes,
/// `~/Library/Application Support/extpool` on macOS, `%APPDATA%\extpool`
/// on Windows; `./extpool` when none of those can be known.
pub fn data_dir() -> PathBuf {
    data_dir_from(|name| std::env::var_os(name))
}

/// [`data_dir`] with the environment given by `var` (for tests).
pub fn data_dir_from(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = if cfg!(target_os = "windows") {
        set("APPDATA")
    } else if cfg!(target_os = "macos") {
        set("HOME").map(|h| h.join("Library/Application Support"))
    } else {
        set("XDG_DATA_HOME").or_else(|| set("HOME").map(|h| h.join(".local/share")))
    };
    base.unwrap_or_else(|| PathBuf::from(".")).join("extpool")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn xdg_then_home_then_here() {
        assert_eq!(
            data_dir_from(env(&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")])),
            PathBuf::from("/x/extpool")
        );
        assert_eq!(
            data_dir_from(env(&[("XDG_DATA_HOME", ""), ("HOME", "/h")])),
            PathBuf::from("/h/.local/share/extpool")
        );
        assert_eq!(data_dir_from(env(&[])), PathBuf::from("./extpool"));
    }
}
