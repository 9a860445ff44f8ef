//! extpool-sandbox: permission profiles for the stdio servers extpool
//! starts, enforced by the kernel.
//!
//! A [`SandboxProfile`] (a server entry's `sandbox:`) says what a server may
//! reach: paths to read, paths to write, the network (`none`, its own
//! `loopback`, `any`, or a list of `host:port`), the gateway's environment
//! variables it receives, and resource limits. Everything else is denied.
//!
//! On Linux, [`prepare`] turns a profile into the steps a child takes
//! between fork and exec ([`ChildSteps::enter`], run by extpool-mcp's
//! spawner) and what the parent does once it started ([`ParentSide`]):
//!
//! - **Files**: one Landlock ruleset (ABI 3 or later). The system's
//!   program and library directories, `/proc`, `/sys`, a few devices and
//!   `/etc` without its secrets are readable; the server's command, its
//!   working directory and the profile's `read` paths are readable; its
//!   private `HOME` and `TMPDIR` and the profile's `write` paths are
//!   writable; the user's home and everything else are not. From ABI 6 it
//!   also cannot signal processes outside its sandbox or reach abstract
//!   UNIX sockets outside it; Landlock always keeps it from inspecting a
//!   process outside its domain (another's `/proc/<pid>/environ`).
//! - **Network**: a user namespace with this user mapped to itself, and in
//!   it a network namespace: no interface up (`none`), `lo` up
//!   (`loopback`), or `lo` up with a listener for each allowed target,
//!   whose connections extpool forwards from the host's network (DNS names
//!   resolve, through a private `/etc/hosts` in a mount namespace, to a
//!   loopback address of their own). `any` takes no namespace.
//! - **Environment**: [`environment`] passes `PATH`, points `HOME` and
//!   `TMPDIR` at private directories ([`PrivateDirs`]) and passes only the
//!   variables the profile names.
//! - **Limits**: `RLIMIT_DATA`, `RLIMIT_NPROC` (counted in the server's own
//!   user namespace), `RLIMIT_NOFILE`.
//!
//! A profile this kernel cannot enforce is refused ([`Support::refusal`]),
//! never run with a part dropped. Elsewhere than Linux every profile is
//! refused with a message that says so.

mod error;
mod profile;
mod support;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(not(target_os = "linux"))]
mod other;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

pub use error::SandboxError;
#[cfg(target_os = "linux")]
pub use linux::{
    ChildSteps, DEVICES_READ, DEVICES_RW, ETC_SECRETS, ParentSide, Prepared, Running, SYSTEM_READ,
    prepare,
};
#[cfg(not(target_os = "linux"))]
pub use other::{ChildSteps, ParentSide, Prepared, Running, prepare};
pub use profile::{
    Host, Limits, MAX_ENV, MAX_PATHS, MAX_TARGETS, NetTarget, Network, ProfileProblem,
    SET_BY_SANDBOX, SandboxProfile, TargetError,
};
pub use support::{MIN_LANDLOCK_ABI, Refusal, Support};

/// What confining one spawn needs to know.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The profile.
    pub profile: &'a SandboxProfile,
    /// The server's name (for logs).
    pub server: &'a str,
    /// The program as configured (a name looked up on `path_var`, or a path).
    pub program: &'a str,
    /// The child's working directory.
    pub cwd: Option<&'a Path>,
    /// The child's `PATH`.
    pub path_var: Option<&'a OsStr>,
    /// The server's private directories.
    pub dirs: &'a PrivateDirs,
}

/// A confined server's own directories, kept between its starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateDirs {
    /// Its `HOME`.
    pub home: PathBuf,
    /// Its `TMPDIR`.
    pub tmp: PathBuf,
    /// Its `/etc/hosts`, when its profile allows DNS names.
    pub hosts: PathBuf,
}

impl PrivateDirs {
    /// The directories of server `server` under `root` (extpool keeps them
    /// in its data directory, `sandbox/<server>/`).
    pub fn of(root: &Path, server: &str) -> PrivateDirs {
        let dir = root.join(server);
        PrivateDirs {
            home: dir.join("home"),
            tmp: dir.join("tmp"),
            hosts: dir.join("hosts"),
        }
    }

    /// Makes the directories if missing, readable by this user only.
    pub fn create(&self) -> std::io::Result<()> {
        for d in [&self.home, &self.tmp] {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(d)?;
        }
        Ok(())
    }
}

/// The environment of a confined server: `PATH` from `host_env`, `HOME`
/// and `TMPDIR` at its private directories, and the variables of
/// `host_env` its profile names — nothing else of the gateway's.
pub fn environment(
    profile: &SandboxProfile,
    dirs: &PrivateDirs,
    host_env: impl IntoIterator<Item = (OsString, OsString)>,
) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = host_env
        .into_iter()
        .filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| k == "PATH" || profile.env.iter().any(|n| n == k))
        })
        .collect();
    env.insert("HOME".into(), dirs.home.clone().into_os_string());
    env.insert("TMPDIR".into(), dirs.tmp.clone().into_os_string());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_named_variables_and_the_private_dirs_pass() {
        let dirs = PrivateDirs {
            home: "/data/s/home".into(),
            tmp: "/data/s/tmp".into(),
            hosts: "/data/s/hosts".into(),
        };
        let profile = SandboxProfile {
            env: vec!["API_URL".into()],
            ..SandboxProfile::default()
        };
        let host = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("API_URL", "https://x"),
            ("EXTPOOL_SECRET", "s3cret"),
            ("AWS_SECRET_ACCESS_KEY", "k"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = environment(&profile, &dirs, host);
        let keys: Vec<&str> = env.keys().filter_map(|k| k.to_str()).collect();
        assert_eq!(keys, ["API_URL", "HOME", "PATH", "TMPDIR"]);
        assert_eq!(env[OsStr::new("HOME")], "/data/s/home");
    }
}
