//! Reading one configuration file: a regular file only (a FIFO would block
//! forever, `/dev/zero` would never end), at most a limited size, and UTF-8
//! text, with the first invalid byte located by line and column.

use std::io::Read;
use std::path::Path;

use crate::error::ConfigError;
use crate::tree::Pos;

/// The largest configuration file read by default (64 MiB: Claude Code's
/// `~/.claude.json` keeps project history and can grow to many MiB).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 << 20;

/// The environment variable that changes [`DEFAULT_MAX_FILE_BYTES`].
pub const MAX_FILE_BYTES_VAR: &str = "EXTPOOL_MAX_CONFIG_BYTES";

/// Reads `path` (shown to the user as `shown`) as UTF-8 text of at most
/// `limit` bytes.
pub fn read_text(path: &Path, shown: &str, limit: u64) -> Result<String, ConfigError> {
    let io = |source| ConfigError::Read {
        file: shown.to_owned(),
        error: source,
    };
    let file = open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ConfigError::NotRegular {
            file: shown.to_owned(),
            kind: kind_of(&meta),
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ConfigError::TooLarge {
            file: shown.to_owned(),
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&e.as_bytes()[..offset]).unwrap_or_default();
        ConfigError::InvalidUtf8 {
            file: shown.to_owned(),
            pos: position(valid),
            offset,
        }
    })
}

/// The position just after `text`.
fn position(text: &str) -> Pos {
    let line = text.matches('\n').count() + 1;
    let start = text.rfind('\n').map_or(0, |i| i + 1);
    Pos::new(line, text[start..].chars().count() + 1)
}

/// Opens without blocking: opening a FIFO with no writer would wait forever.
#[cfg(unix)]
fn open(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// What a path that is not a regular file is, in words.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// The size limit from the environment ([`MAX_FILE_BYTES_VAR`]), or the
/// default when it is unset or not a positive number
/// ([`limit_env_warning`] says so).
pub fn limit_from_env() -> u64 {
    limit_from(std::env::var_os(MAX_FILE_BYTES_VAR).as_deref()).0
}

/// When [`MAX_FILE_BYTES_VAR`] is set but is not a positive number of
/// bytes: a warning that says so and which default applies instead.
pub fn limit_env_warning() -> Option<String> {
    limit_from(std::env::var_os(MAX_FILE_BYTES_VAR).as_deref()).1
}

/// The limit a value of [`MAX_FILE_BYTES_VAR`] sets, and the warning
/// when it sets none.
fn limit_from(value: Option<&std::ffi::OsStr>) -> (u64, Option<String>) {
    let Some(value) = value else {
        return (DEFAULT_MAX_FILE_BYTES, None);
    };
    let text = value.to_string_lossy();
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => (n, None),
        _ => {
            let shown = extpool_core::text::cut(&text, 64);
            let warning = format!(
                "{MAX_FILE_BYTES_VAR}={shown:?} is not a positive number of bytes; \
                 the default limit of {DEFAULT_MAX_FILE_BYTES} bytes ({} MiB) applies",
                DEFAULT_MAX_FILE_BYTES >> 20
            );
            (DEFAULT_MAX_FILE_BYTES, Some(warning))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters() {
        assert_eq!(position(""), Pos::new(1, 1));
        assert_eq!(position("ab\ncé"), Pos::new(2, 3));
    }

    #[test]
    fn invalid_utf8_is_located() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, b"{\n  \"a\": \"\xc3\xa9\xff\"\n}").unwrap();
        let err = read_text(&path, "x.json", 1000).unwrap_err();
        assert_eq!(err.pos(), Some(Pos::new(2, 10)), "{err}");
        assert_eq!(
            err.to_string(),
            "x.json:2:10: invalid UTF-8 (byte 12 of the file); configuration files must be UTF-8 text"
        );
    }

    #[test]
    fn the_limit_variable_is_a_positive_number_or_said_not_to_be() {
        let of = |v: &str| limit_from(Some(std::ffi::OsStr::new(v)));
        assert_eq!(of("1000"), (1000, None));
        assert_eq!(of(" 42 "), (42, None));
        assert_eq!(limit_from(None), (DEFAULT_MAX_FILE_BYTES, None));
        for bad in ["abc", "0", "-5", "64MB", ""] {
            let (limit, warning) = of(bad);
            assert_eq!(limit, DEFAULT_MAX_FILE_BYTES, "{bad}");
            let warning = warning.unwrap();
            assert!(
                warning.starts_with(&format!("EXTPOOL_MAX_CONFIG_BYTES={bad:?} is not a positive number of bytes; the default limit of 67108864 bytes (64 MiB) applies")),
                "{warning}"
            );
        }
    }

    #[test]
    fn the_size_is_limited() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, "x".repeat(101)).unwrap();
        assert!(matches!(
            read_text(&path, "x.json", 100),
            Err(ConfigError::TooLarge { limit: 100, .. })
        ));
        assert_eq!(read_text(&path, "x.json", 101).unwrap().len(), 101);
    }
}
