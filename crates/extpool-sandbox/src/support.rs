//! What this kernel can enforce, asked once per process, and the one rule
//! that decides whether a profile can be enforced here.
//!
//! A profile that cannot be enforced is refused, never run with a part of
//! it dropped: a server that asks for `network: none` on a kernel without
//! user namespaces does not start, and says why.

use std::sync::OnceLock;

use crate::profile::SandboxProfile;

/// The lowest Landlock ABI a profile needs: 3 (Linux 6.2), the first in
/// which a read-only file cannot be truncated.
pub const MIN_LANDLOCK_ABI: u8 = 3;

/// What this kernel supports for confining a child process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The operating system (`linux`, `macos`, …).
    pub os: &'static str,
    /// The Landlock ABI the kernel offers (0: none), as far as the
    /// `landlock` crate knows them.
    pub landlock_abi: u8,
    /// Whether a process may make its own user namespace (and in it a
    /// network namespace), or why not.
    pub user_namespaces: Result<(), String>,
    /// Whether seccomp filters are available (reported; the profiles
    /// enforce nothing through them).
    pub seccomp: bool,
    /// Whether cgroup v2 controllers are delegated to this user
    /// (reported; the limits are rlimits).
    pub cgroup_v2: Result<String, String>,
    /// Whether this process runs as root (uid 0), which the kernel exempts
    /// from the process limit.
    pub root: bool,
}

/// Why a profile cannot be enforced on this kernel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not Linux.
    #[error("sandboxing is supported on Linux only (Landlock and namespaces); this system is {os}")]
    Unsupported {
        /// The operating system.
        os: &'static str,
    },
    /// Landlock missing or too old.
    #[error(
        "this kernel cannot enforce the file-system rules: Landlock ABI {found} (need {MIN_LANDLOCK_ABI}, Linux 6.2 or later, with landlock in the LSM list)"
    )]
    Landlock {
        /// The ABI found (0: none).
        found: u8,
    },
    /// No user namespaces, so no network namespace.
    #[error("this kernel cannot enforce `network: {network}`: {reason}")]
    Namespaces {
        /// The profile's network, as written.
        network: String,
        /// Why user namespaces are unavailable.
        reason: String,
    },
    /// A process limit asked of a root process.
    #[error(
        "the process limit cannot be enforced for root: the kernel exempts uid 0 from RLIMIT_NPROC (run extpool as a user, or remove limits.processes)"
    )]
    RootProcesses,
}

impl Support {
    /// This kernel's support, probed once per process.
    pub fn current() -> &'static Support {
        static CURRENT: OnceLock<Support> = OnceLock::new();
        CURRENT.get_or_init(probe)
    }

    /// Why `profile` cannot be enforced here, if it cannot.
    pub fn refusal(&self, profile: &SandboxProfile) -> Option<Refusal> {
        if self.os != "linux" {
            return Some(Refusal::Unsupported { os: self.os });
        }
        if self.landlock_abi < MIN_LANDLOCK_ABI {
            return Some(Refusal::Landlock {
                found: self.landlock_abi,
            });
        }
        if profile.network.needs_namespace()
            && let Err(reason) = &self.user_namespaces
        {
            return Some(Refusal::Namespaces {
                network: profile.network.describe(),
                reason: reason.clone(),
            });
        }
        if profile.limits.processes.is_some() && self.root {
            return Some(Refusal::RootProcesses);
        }
        None
    }

    /// True when Landlock can also keep a confined server from signalling
    /// processes outside its sandbox and from reaching abstract UNIX
    /// sockets outside it (ABI 6, Linux 6.12).
    pub fn scopes(&self) -> bool {
        self.landlock_abi >= 6
    }
}

#[cfg(target_os = "linux")]
fn probe() -> Support {
    Support {
        os: std::env::consts::OS,
        landlock_abi: crate::linux::landlock_abi(),
        user_namespaces: user_namespaces(|path| std::fs::read_to_string(path).ok()),
        seccomp: std::fs::read_to_string("/proc/self/status")
            .map(|s| s.lines().any(|l| l.starts_with("Seccomp:")))
            .unwrap_or(false),
        cgroup_v2: cgroup_v2(),
        root: rustix::process::geteuid().is_root(),
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Support {
    Support {
        os: std::env::consts::OS,
        landlock_abi: 0,
        user_namespaces: Err("not Linux".into()),
        seccomp: false,
        cgroup_v2: Err("not Linux".into()),
        root: false,
    }
}

/// Whether user namespaces may be made, from the sysctls that forbid them
/// (`read` gives a file's text). What a sysctl cannot tell (a security
/// module's policy) shows at the first confined start, whose failure names
/// the step.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn user_namespaces(read: impl Fn(&str) -> Option<String>) -> Result<(), String> {
    let number = |path: &str| read(path).and_then(|s| s.trim().parse::<i64>().ok());
    if number("/proc/sys/user/max_user_namespaces") == Some(0) {
        return Err("user namespaces are disabled (user.max_user_namespaces = 0)".into());
    }
    if number("/proc/sys/kernel/unprivileged_userns_clone") == Some(0) {
        return Err(
            "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
                .into(),
        );
    }
    if number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == Some(1) {
        return Err("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)".into());
    }
    Ok(())
}

/// The cgroup v2 controllers delegated to this process's cgroup.
#[cfg(target_os = "linux")]
fn cgroup_v2() -> Result<String, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
        return Err("no cgroup v2 hierarchy".into());
    };
    for mount in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        let dir = format!("{mount}{path}");
        if let Ok(controllers) = std::fs::read_to_string(format!("{dir}/cgroup.controllers")) {
            let controllers = controllers.trim();
            let wanted = ["memory", "pids"];
            return if wanted
                .iter()
                .all(|c| controllers.split(' ').any(|x| x == *c))
            {
                Ok(controllers.to_owned())
            } else {
                Err(format!(
                    "cgroup v2 at {dir} has controllers [{controllers}], not memory and pids"
                ))
            };
        }
    }
    Err("cgroup v2 is not mounted".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Limits, Network};

    fn linux(abi: u8, userns: Result<(), String>, root: bool) -> Support {
        Support {
            os: "linux",
            landlock_abi: abi,
            user_namespaces: userns,
            seccomp: true,
            cgroup_v2: Err("none".into()),
            root,
        }
    }

    #[test]
    fn what_cannot_be_enforced_is_refused_with_the_reason() {
        let none = SandboxProfile::default();
        let any = SandboxProfile {
            network: Network::Any,
            ..SandboxProfile::default()
        };
        assert_eq!(linux(7, Ok(()), false).refusal(&none), None);
        assert_eq!(
            linux(2, Ok(()), false).refusal(&none),
            Some(Refusal::Landlock { found: 2 })
        );
        let no_userns = linux(7, Err("off".into()), false);
        assert!(matches!(
            no_userns.refusal(&none),
            Some(Refusal::Namespaces { ref network, .. }) if network == "none"
        ));
        // `any` needs no namespace: Landlock alone enforces the rest.
        assert_eq!(no_userns.refusal(&any), None);
        let processes = SandboxProfile {
            limits: Limits {
                processes: Some(8),
                ..Limits::default()
            },
            ..SandboxProfile::default()
        };
        assert_eq!(
            linux(7, Ok(()), true).refusal(&processes),
            Some(Refusal::RootProcesses)
        );
        assert_eq!(linux(7, Ok(()), false).refusal(&processes), None);
        let mac = Support {
            os: "macos",
            ..linux(0, Err("not Linux".into()), false)
        };
        assert!(
            mac.refusal(&none)
                .unwrap()
                .to_string()
                .contains("Linux only")
        );
    }

    #[test]
    fn user_namespace_sysctls_are_read() {
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            move |path: &str| {
                pairs
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(user_namespaces(with(&[])), Ok(()));
        assert!(user_namespaces(with(&[("/proc/sys/user/max_user_namespaces", "0\n")])).is_err());
        assert!(
            user_namespaces(with(&[(
                "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
                "1"
            )]))
            .unwrap_err()
            .contains("AppArmor")
        );
    }
}
