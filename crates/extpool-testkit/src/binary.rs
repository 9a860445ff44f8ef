//! Finding (and if needed building) the `extpool-testkit-server` binary from
//! any test, example or benchmark of the workspace.
//!
//! A test binary of another crate lives in `target/<profile>/deps/`, an
//! example in `target/<profile>/examples/`; the server belongs in
//! `target/<profile>/`. When it is missing or older than this crate's
//! sources, `cargo build -p extpool-testkit --bin extpool-testkit-server` is
//! run once per process with the caller's profile and target directory, so a
//! release benchmark talks to a release server.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
    time::SystemTime,
};

/// File name of the server binary.
pub const SERVER_BIN_NAME: &str = "extpool-testkit-server";

/// Environment variable that, when set, names the server binary to use
/// instead of finding or building one.
pub const SERVER_BIN_ENV: &str = "EXTPOOL_TESTKIT_SERVER";

/// Why the server binary could not be provided.
#[derive(Debug, thiserror::Error)]
enum BinaryError {
    #[error("cannot find the running executable: {0}")]
    CurrentExe(std::io::Error),
    #[error("{0} is not inside a cargo target directory")]
    NotInTarget(PathBuf),
    #[error("cannot run {cargo:?}: {error}")]
    Spawn {
        cargo: OsString,
        error: std::io::Error,
    },
    #[error("`{command}` failed ({status}):\n{stderr}")]
    Build {
        command: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("cargo built the server, but {0} does not exist")]
    Missing(PathBuf),
}

/// Where cargo puts binaries of the running executable's build.
struct Layout {
    /// `target/[<triple>/]<profile>`.
    profile_dir: PathBuf,
    /// The `--target-dir`.
    target_dir: PathBuf,
    /// `Some(triple)` for cross builds.
    triple: Option<String>,
    /// The directory name of the profile (`debug`, `release`, or a custom one).
    profile: String,
}

fn is_target_root(dir: &Path) -> bool {
    dir.join("CACHEDIR.TAG").is_file()
}

fn layout() -> Result<Layout, BinaryError> {
    let exe = std::env::current_exe().map_err(BinaryError::CurrentExe)?;
    let not_in_target = || BinaryError::NotInTarget(exe.clone());
    let mut dir = exe.parent().ok_or_else(not_in_target)?;
    if matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some("deps" | "examples")
    ) {
        dir = dir.parent().ok_or_else(not_in_target)?;
    }
    let profile = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(not_in_target)?
        .to_owned();
    let parent = dir.parent().ok_or_else(not_in_target)?;
    let (target_dir, triple) = if is_target_root(parent) {
        (parent.to_path_buf(), None)
    } else {
        let grand = parent.parent().ok_or_else(not_in_target)?;
        if !is_target_root(grand) {
            return Err(not_in_target());
        }
        let triple = parent
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(not_in_target)?;
        (grand.to_path_buf(), Some(triple.to_owned()))
    };
    Ok(Layout {
        profile_dir: dir.to_path_buf(),
        target_dir,
        triple,
        profile,
    })
}

fn modified(path: &Path) -> Option<SystemTime> {
    path.metadata().and_then(|m| m.modified()).ok()
}

/// The newest modification time of the files under `dir`.
fn newest_under(dir: &Path) -> Option<SystemTime> {
    let mut newest = modified(dir);
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let time = if path.is_dir() {
            newest_under(&path)
        } else {
            modified(&path)
        };
        newest = newest.max(time);
    }
    newest
}

/// The workspace crates the server is built from (its stdio transport
/// lives in extpool-mcp).
const SERVER_CRATES: &[&str] = &["extpool-testkit", "extpool-mcp", "extpool-core"];

/// True when `binary` is missing or older than the sources it is built from.
fn is_stale(binary: &Path) -> bool {
    let Some(built) = modified(binary) else {
        return true;
    };
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent();
    let sources = SERVER_CRATES
        .iter()
        .filter_map(|name| {
            let dir = crates?.join(name);
            newest_under(&dir.join("src")).max(modified(&dir.join("Cargo.toml")))
        })
        .max();
    sources.is_some_and(|s| s > built)
}

fn build(layout: &Layout, bin: &str) -> Result<(), BinaryError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .args(["build", "--quiet", "-p", "extpool-testkit", "--bin", bin])
        .arg("--target-dir")
        .arg(&layout.target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match layout.profile.as_str() {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    if let Some(triple) = &layout.triple {
        command.args(["--target", triple]);
    }
    let output = command.output().map_err(|source| BinaryError::Spawn {
        cargo: cargo.clone(),
        error: source,
    })?;
    if !output.status.success() {
        return Err(BinaryError::Build {
            command: format!("{command:?}"),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(())
}

fn locate_or_build(bin: &str, env: &str) -> Result<PathBuf, BinaryError> {
    if let Some(path) = std::env::var_os(env) {
        return Ok(PathBuf::from(path));
    }
    let layout = layout()?;
    let binary = layout.profile_dir.join(bin);
    if is_stale(&binary) {
        build(&layout, bin)?;
        if !binary.is_file() {
            return Err(BinaryError::Missing(binary));
        }
    }
    Ok(binary)
}

/// The path of the built `extpool-testkit-server`, for the caller's profile.
///
/// The first call in a process builds the binary with cargo when it is
/// missing or older than this crate's sources; later calls return the cached
/// path. `EXTPOOL_TESTKIT_SERVER` overrides the lookup.
///
/// # Panics
///
/// When the running executable is not inside a cargo target directory or the
/// build fails; the message carries cargo's output.
pub fn server_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        locate_or_build(SERVER_BIN_NAME, SERVER_BIN_ENV)
            .unwrap_or_else(|e| panic!("{SERVER_BIN_NAME} unavailable: {e}"))
    })
}

/// File name of the raw echo server (benchmarks only).
pub const RAW_ECHO_BIN_NAME: &str = "extpool-raw-echo";

/// Environment variable that names the raw echo server binary to use.
pub const RAW_ECHO_BIN_ENV: &str = "EXTPOOL_RAW_ECHO";

/// The path of the built `extpool-raw-echo` (a hand-written stdio echo
/// server without an SDK: the floor clients are measured on), built like
/// [`server_binary`].
///
/// # Panics
///
/// As [`server_binary`].
pub fn raw_echo_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        locate_or_build(RAW_ECHO_BIN_NAME, RAW_ECHO_BIN_ENV)
            .unwrap_or_else(|e| panic!("{RAW_ECHO_BIN_NAME} unavailable: {e}"))
    })
}
