//! What this machine can enforce of a server's `sandbox:` profile, for
//! `extpool doctor`: the kernel's features, and a process actually started
//! under the strictest profile.

use std::path::Path;

use extpool_sandbox::{MIN_LANDLOCK_ABI, SandboxProfile, Support};
use serde::Serialize;

/// One feature: present or not, and what was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Present (usable).
    pub ok: bool,
    /// What was found, or why it is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Check {
    fn of(result: &Result<String, String>) -> Check {
        match result {
            Ok(detail) => Check {
                ok: true,
                detail: (!detail.is_empty()).then(|| detail.clone()),
            },
            Err(why) => Check {
                ok: false,
                detail: Some(why.clone()),
            },
        }
    }
}

/// This machine's support for permission profiles.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxReport {
    /// The operating system.
    pub os: &'static str,
    /// Whether profiles can be enforced here (`refusal` says why not).
    pub supported: bool,
    /// Why a profile is refused here, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The Landlock ABI the kernel offers (0: none).
    pub landlock_abi: u8,
    /// The Landlock ABI a profile needs.
    pub min_landlock_abi: u8,
    /// Whether Landlock also keeps a confined server from signalling
    /// processes and reaching abstract UNIX sockets outside its sandbox
    /// (ABI 6).
    pub landlock_scopes: bool,
    /// Whether a process may make its own user and network namespaces
    /// (what every `network` but `any` needs).
    pub user_namespaces: Check,
    /// Whether seccomp filters are available (not used by profiles).
    pub seccomp: bool,
    /// Whether cgroup v2 memory and pids controllers are delegated (not
    /// used by profiles: limits are rlimits).
    pub cgroup_v2: Check,
    /// Whether extpool runs as root, which the kernel exempts from the
    /// process limit (a profile with `limits.processes` is refused then).
    pub root: bool,
    /// A process confined by the strictest profile, started for real.
    pub confined_start: Check,
    /// How long that start took until the process had exited, in
    /// milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confined_start_ms: Option<f64>,
}

/// Probes this machine, starting one confined process (`true`) whose
/// private directories go where confined servers' go.
pub async fn report() -> SandboxReport {
    report_in(&extpool_mcp::default_sandbox_dir()).await
}

/// [`report`] with the private directories under `dir`.
pub async fn report_in(dir: &Path) -> SandboxReport {
    let support = Support::current();
    let strictest = SandboxProfile::default();
    let refusal = support.refusal(&strictest).map(|r| r.to_string());
    let trial = match &refusal {
        Some(reason) => Err(reason.clone()),
        None => extpool_mcp::sandbox_trial(&strictest, dir).await,
    };
    SandboxReport {
        os: support.os,
        supported: refusal.is_none(),
        refusal,
        landlock_abi: support.landlock_abi,
        min_landlock_abi: MIN_LANDLOCK_ABI,
        landlock_scopes: support.scopes(),
        user_namespaces: Check::of(&support.user_namespaces.clone().map(|()| String::new())),
        seccomp: support.seccomp,
        cgroup_v2: Check::of(&support.cgroup_v2),
        root: support.root,
        confined_start: Check::of(&trial.as_ref().map(|_| String::new()).map_err(Clone::clone)),
        confined_start_ms: trial.ok().map(|d| d.as_secs_f64() * 1000.0),
    }
}
