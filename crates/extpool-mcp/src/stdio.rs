//! Starting a stdio server: the command runs directly (never through a
//! shell), in its own process group, with a filtered environment and its
//! stderr captured.
//!
//! - **Process group.** `npx`/`uvx`-style launchers start the real server as
//!   a grandchild; signalling only the direct child would leave it running.
//!   The child leads a new group and the whole group is killed on close, and
//!   the child is also killed if its handle is dropped without a close.
//! - **Lifetime.** On Linux the child dies with this process even when the
//!   process is killed with SIGKILL and closes nothing (its parent-death
//!   signal; see the crate's spawner module).
//! - **Environment.** The child inherits the host's environment minus
//!   variables that change how programs load or execute code (`LD_PRELOAD`,
//!   `NODE_OPTIONS`, …) and minus other servers' `MCP_*_TOKEN` secrets. A
//!   server gets such a variable only when its config lists it in
//!   `allow_env` (Goose refuses them the same way).
//! - **Allowlist.** A host may restrict which executables may be started.
//! - **Sandbox.** A server whose config has a `sandbox:` profile runs
//!   confined by it (`extpool_sandbox`): its environment is then only
//!   `PATH`, a private `HOME` and `TMPDIR`, the variables the profile
//!   names and the config's own `env`. A profile that breaks a rule or
//!   that this kernel cannot enforce refuses the server here, before
//!   anything starts.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use extpool_sandbox::{PrivateDirs, SandboxProfile};

use process_wrap::tokio::{CommandWrap, KillOnDrop};

use crate::config::McpServerConfig;
use crate::error::ConfigError;
use crate::name::ServerName;
use crate::stderr::StderrTail;
use crate::transport::ChildTransport;

/// Variables withheld from servers unless `allow_env` names them.
pub const DENIED_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "LD_DEBUG",
    "LD_DEBUG_OUTPUT",
    "LD_PROFILE",
    "LD_BIND_NOW",
    "LD_ASSUME_KERNEL",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "DYLD_FRAMEWORK_PATH",
    "DYLD_FALLBACK_LIBRARY_PATH",
    "NODE_OPTIONS",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONINSPECT",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "BASH_ENV",
    "ENV",
    "GCONV_PATH",
];

/// True when `key` is withheld by default: a listed variable, any `LD_*` or
/// `DYLD_*` loader variable, or an `MCP_<NAME>_TOKEN` secret.
pub fn is_denied_env(key: &str) -> bool {
    DENIED_ENV.contains(&key)
        || key.starts_with("LD_")
        || key.starts_with("DYLD_")
        || (key.starts_with("MCP_") && key.ends_with("_TOKEN") && key.len() > "MCP__TOKEN".len())
}

/// Host-wide rules for starting stdio servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnPolicy {
    /// When set, only these commands may be started: an entry matches the
    /// configured `command` exactly, or names the same file when both are paths.
    pub allowed_commands: Option<Vec<String>>,
    /// Where confined servers keep their private directories
    /// (`<dir>/<server>/home`, …); default: `sandbox` in extpool's data
    /// directory.
    pub sandbox_dir: Option<PathBuf>,
}

impl SpawnPolicy {
    fn allows(&self, command: &str) -> bool {
        let Some(allowed) = &self.allowed_commands else {
            return true;
        };
        allowed.iter().any(|entry| {
            entry == command
                || (is_path(entry)
                    && is_path(command)
                    && match (std::fs::canonicalize(entry), std::fs::canonicalize(command)) {
                        (Ok(a), Ok(b)) => a == b,
                        _ => false,
                    })
        })
    }
}

fn is_path(s: &str) -> bool {
    s.contains(std::path::MAIN_SEPARATOR) || s.contains('/')
}

/// A stdio server, checked and ready to spawn (any number of times).
#[derive(Clone, PartialEq, Eq)]
pub struct StdioPlan {
    /// The executable.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The complete environment of the child.
    env: BTreeMap<OsString, OsString>,
    /// Working directory.
    pub cwd: Option<String>,
    /// The profile it runs under, with its private directories.
    sandbox: Option<(SandboxProfile, PrivateDirs)>,
}

impl std::fmt::Debug for StdioPlan {
    // The environment may hold secrets the config passes on purpose; print names only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioPlan")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env_keys", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("sandbox", &self.sandbox)
            .finish()
    }
}

impl StdioPlan {
    /// Checks the command against `policy` and computes the child's environment.
    pub fn new(
        name: &ServerName,
        config: &McpServerConfig,
        policy: &SpawnPolicy,
    ) -> Result<Self, ConfigError> {
        Self::with_host_env(name, config, policy, std::env::vars_os())
    }

    /// Like [`StdioPlan::new`] with an explicit host environment (for tests).
    pub fn with_host_env(
        name: &ServerName,
        config: &McpServerConfig,
        policy: &SpawnPolicy,
        host_env: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<Self, ConfigError> {
        let command = config.command.clone().unwrap_or_default();
        if command.is_empty() {
            return Err(ConfigError::Transport {
                server: name.to_string(),
                problem: crate::config::TransportError::Missing,
            });
        }
        if !policy.allows(&command) {
            return Err(ConfigError::CommandNotAllowed {
                server: name.to_string(),
                command,
            });
        }
        let allowed = |key: &str| config.allow_env.iter().any(|a| a == key);
        let sandbox = match &config.sandbox {
            Some(profile) => Some((profile.clone(), confinable(name, profile, policy)?)),
            None => None,
        };
        let inherited: BTreeMap<OsString, OsString> = match &sandbox {
            Some((profile, dirs)) => extpool_sandbox::environment(profile, dirs, host_env),
            None => host_env.into_iter().collect(),
        };
        let mut env: BTreeMap<OsString, OsString> = inherited
            .into_iter()
            .filter(|(k, _)| match k.to_str() {
                Some(k) => !is_denied_env(k) || allowed(k),
                None => false,
            })
            .collect();
        for (key, value) in &config.env {
            if is_denied_env(key) && !allowed(key) {
                return Err(ConfigError::DeniedEnv {
                    server: name.to_string(),
                    key: key.clone(),
                });
            }
            env.insert(key.into(), value.into());
        }
        Ok(Self {
            command,
            args: config.args.clone(),
            env,
            cwd: config.cwd.clone(),
            sandbox,
        })
    }

    /// The confinement of one spawn, prepared (none when unconfined).
    fn confinement(&self, name: &ServerName) -> std::io::Result<Option<extpool_sandbox::Prepared>> {
        let Some((profile, dirs)) = &self.sandbox else {
            return Ok(None);
        };
        let sandbox_error =
            |e: &dyn std::fmt::Display| std::io::Error::other(format!("sandbox: {e}"));
        dirs.create().map_err(|e| {
            sandbox_error(&format_args!("cannot make its private directories: {e}"))
        })?;
        let request = extpool_sandbox::Request {
            profile,
            server: name.as_str(),
            program: &self.command,
            cwd: self.cwd.as_deref().map(Path::new),
            path_var: self
                .env
                .get(std::ffi::OsStr::new("PATH"))
                .map(OsString::as_os_str),
            dirs,
        };
        extpool_sandbox::prepare(&request)
            .map(Some)
            .map_err(|e| sandbox_error(&e))
    }

    /// The plan with `key` set to `value` in the child's environment.
    pub(crate) fn with_env(mut self, key: &str, value: &str) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Whether the child would receive `key`.
    #[cfg(test)]
    pub fn passes_env(&self, key: &str) -> bool {
        self.env.contains_key(std::ffi::OsStr::new(key))
    }

    /// Starts the child: own process group, killed on drop, stderr captured into `tail`.
    pub fn spawn(
        &self,
        name: &ServerName,
        tail: &StderrTail,
    ) -> std::io::Result<(ChildTransport, Option<u32>)> {
        let mut cmd = tokio::process::Command::new(&self.command);
        cmd.args(&self.args).env_clear().envs(&self.env);
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(Path::new(cwd));
        }
        let confinement = self.confinement(name)?;
        let mut wrap = CommandWrap::from(cmd);
        wrap.wrap(KillOnDrop);
        #[cfg(unix)]
        wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
        let (transport, stderr) =
            ChildTransport::spawn_confined(wrap, Stdio::piped(), confinement)?;
        let pid = transport.id();
        if let Some(stderr) = stderr {
            tail.capture(name.clone(), stderr);
        }
        tracing::debug!(server = %name, command = %self.command, ?pid, "spawned MCP server");
        Ok((transport, pid))
    }
}

/// Where confined servers keep their private directories unless the
/// host says otherwise: `sandbox` in extpool's data directory.
pub fn default_sandbox_dir() -> PathBuf {
    extpool_core::dirs::data_dir().join("sandbox")
}

/// Starts `true` confined by `profile` (its private directories under
/// `dir`) and waits for it: how long a confined start and exit took, or
/// why it failed. What `extpool doctor` runs to show that confinement
/// works here, beyond what the kernel says it offers.
pub async fn sandbox_trial(
    profile: &SandboxProfile,
    dir: &Path,
) -> Result<std::time::Duration, String> {
    let started = std::time::Instant::now();
    let dirs = PrivateDirs::of(dir, "doctor");
    dirs.create()
        .map_err(|e| format!("cannot make {}: {e}", dirs.home.display()))?;
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let request = extpool_sandbox::Request {
        profile,
        server: "doctor",
        program: "true",
        cwd: None,
        path_var: Some(&path),
        dirs: &dirs,
    };
    let prepared = extpool_sandbox::prepare(&request).map_err(|e| e.to_string())?;
    let mut command = tokio::process::Command::new("true");
    command
        .env_clear()
        .env("PATH", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut wrap = CommandWrap::from(command);
    wrap.wrap(KillOnDrop);
    let mut child = match crate::spawner::spawn(wrap, Some(prepared.child)) {
        Ok(child) => child,
        Err(error) => return Err(prepared.parent.failed(error).to_string()),
    };
    let _running = prepared.parent.started().map_err(|e| e.to_string())?;
    let status = child.wait().await.map_err(|e| e.to_string())?;
    if status.success() {
        Ok(started.elapsed())
    } else {
        Err(format!("the confined process ended with {status}"))
    }
}

/// Checks `profile` (its rules, and that this kernel can enforce it) and
/// gives the server's private directories.
fn confinable(
    name: &ServerName,
    profile: &SandboxProfile,
    policy: &SpawnPolicy,
) -> Result<PrivateDirs, ConfigError> {
    let refused = |reason: String| ConfigError::Sandbox {
        server: name.to_string(),
        reason,
    };
    let problems = profile.problems();
    if !problems.is_empty() {
        let all: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Err(refused(all.join("; ")));
    }
    if let Some(refusal) = extpool_sandbox::Support::current().refusal(profile) {
        let advice = match (&profile.opt_out, &refusal) {
            (Some(opt_out), _) => format!("; {opt_out}"),
            (None, extpool_sandbox::Refusal::Unsupported { .. }) => {
                ": remove `sandbox:` to run the server unconfined".into()
            }
            (None, _) => String::new(),
        };
        return Err(refused(format!("sandbox: {refusal}{advice}")));
    }
    let root = policy
        .sandbox_dir
        .clone()
        .unwrap_or_else(default_sandbox_dir);
    Ok(PrivateDirs::of(&root, name.as_str()))
}

/// A stdio child's process group, terminated as a whole when the server goes.
///
/// rmcp's graceful close ends the direct child and reaps what it can, but a
/// grandchild of a launcher (`npx`, `uvx`, a shell script) is not its child
/// and survives; signalling the group reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessGroup(pub u32);

impl ProcessGroup {
    /// Sends SIGTERM to the group; if anything is left after `grace`, SIGKILL.
    pub async fn terminate(self, grace: std::time::Duration) {
        if !self.signal(Signal::Term) {
            return;
        }
        tokio::time::sleep(grace).await;
        self.signal(Signal::Kill);
    }

    /// SIGKILL to the group, now (for drop paths that cannot wait).
    pub fn kill(self) {
        self.signal(Signal::Kill);
    }

    /// True while a member may remain (the signal was delivered).
    #[cfg(unix)]
    fn signal(self, signal: Signal) -> bool {
        use nix::sys::signal::{Signal as S, killpg};
        use nix::unistd::Pid;
        let Ok(raw) = i32::try_from(self.0) else {
            return false;
        };
        let sig = match signal {
            Signal::Term => S::SIGTERM,
            Signal::Kill => S::SIGKILL,
        };
        match killpg(Pid::from_raw(raw), sig) {
            Ok(()) => true,
            Err(nix::errno::Errno::ESRCH) => false,
            Err(error) => {
                tracing::debug!(pgid = self.0, %error, "signalling MCP server process group failed");
                false
            }
        }
    }

    #[cfg(not(unix))]
    fn signal(self, _signal: Signal) -> bool {
        false
    }
}

#[derive(Debug, Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> ServerName {
        ServerName::new("s").unwrap()
    }

    fn host() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/home/x"),
            ("LD_PRELOAD", "/evil.so"),
            ("NODE_OPTIONS", "--require evil"),
            ("MCP_OTHER_TOKEN", "secret"),
            ("DYLD_INSERT_LIBRARIES", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    #[test]
    fn dangerous_variables_are_withheld() {
        let cfg = McpServerConfig::stdio("node", ["server.js"]);
        let plan =
            StdioPlan::with_host_env(&name(), &cfg, &SpawnPolicy::default(), host()).unwrap();
        assert!(plan.passes_env("PATH"));
        assert!(plan.passes_env("HOME"));
        for k in [
            "LD_PRELOAD",
            "NODE_OPTIONS",
            "MCP_OTHER_TOKEN",
            "DYLD_INSERT_LIBRARIES",
        ] {
            assert!(!plan.passes_env(k), "{k}");
        }
    }

    #[test]
    fn allow_env_passes_a_withheld_variable() {
        let mut cfg = McpServerConfig::stdio("node", ["server.js"]);
        cfg.allow_env = vec!["NODE_OPTIONS".into()];
        let plan =
            StdioPlan::with_host_env(&name(), &cfg, &SpawnPolicy::default(), host()).unwrap();
        assert!(plan.passes_env("NODE_OPTIONS"));
        assert!(!plan.passes_env("LD_PRELOAD"));
    }

    #[test]
    fn configured_denied_variable_needs_allow_env() {
        let mut cfg = McpServerConfig::stdio("node", ["server.js"]);
        cfg.env.insert("LD_PRELOAD".into(), "/x.so".into());
        let err =
            StdioPlan::with_host_env(&name(), &cfg, &SpawnPolicy::default(), host()).unwrap_err();
        assert!(matches!(err, ConfigError::DeniedEnv { ref key, .. } if key == "LD_PRELOAD"));
        cfg.allow_env = vec!["LD_PRELOAD".into()];
        assert!(StdioPlan::with_host_env(&name(), &cfg, &SpawnPolicy::default(), host()).is_ok());
    }

    #[test]
    fn configured_env_is_passed() {
        let mut cfg = McpServerConfig::stdio("node", ["server.js"]);
        cfg.env.insert("API_KEY".into(), "k".into());
        let plan =
            StdioPlan::with_host_env(&name(), &cfg, &SpawnPolicy::default(), host()).unwrap();
        assert!(plan.passes_env("API_KEY"));
        assert!(!format!("{plan:?}").contains("\"k\""));
    }

    #[test]
    fn allowlist_is_enforced() {
        let policy = SpawnPolicy {
            allowed_commands: Some(vec!["node".into()]),
            ..SpawnPolicy::default()
        };
        let ok = McpServerConfig::stdio("node", ["a"]);
        assert!(StdioPlan::with_host_env(&name(), &ok, &policy, host()).is_ok());
        let bad = McpServerConfig::stdio("bash", ["-c", "x"]);
        let err = StdioPlan::with_host_env(&name(), &bad, &policy, host()).unwrap_err();
        assert!(matches!(err, ConfigError::CommandNotAllowed { .. }));
    }

    #[test]
    fn token_pattern() {
        assert!(is_denied_env("MCP_GITHUB_TOKEN"));
        assert!(!is_denied_env("MCP_TOKEN"));
        assert!(!is_denied_env("MCP_GITHUB_URL"));
        assert!(is_denied_env("LD_ANYTHING"));
        assert!(!is_denied_env("PATH"));
    }
}
