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
        source,
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

/// The size limit from the environment ([`MAX_FILE_BYTES_VAR`]), or the default.
pub fn limit_from_env() -> u64 {
    std::env::var(MAX_FILE_BYTES_VAR)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n: &u64| n > 0)
        .unwrap_or(DEFAULT_MAX_FILE_BYTES)
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
