//! The permission profile of a confined server, as written under a server
//! entry's `sandbox:`, and its one set of rules (what is a valid path, env
//! name, network target, limit).
//!
//! A profile is an allow-list: everything it does not name is denied. Left
//! out, a field is at its strictest (no network, nothing read beyond the
//! system's program and library directories, nothing written beyond the
//! private `HOME`, no variable of the gateway's environment).

use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The most network targets a profile may allow (each is a listener and a
/// forwarding task while the server runs).
pub const MAX_TARGETS: usize = 64;
/// The most paths a profile may name in `read` and in `write` (each is a
/// Landlock rule and an open descriptor while the rules are built).
pub const MAX_PATHS: usize = 256;
/// The most variables a profile may pass in `env`.
pub const MAX_ENV: usize = 256;

/// Variables every confined server receives from the sandbox itself; a
/// profile cannot name them in `env`.
pub const SET_BY_SANDBOX: &[&str] = &["HOME", "TMPDIR", "PATH"];

/// What a confined stdio server may reach (`sandbox:` on a server entry).
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct SandboxProfile {
    /// Where it may connect: `none` (the default), `loopback` (its own
    /// loopback only), `any`, or a list of `host:port` it may reach.
    #[serde(default)]
    pub network: Network,
    /// Paths it may read (and run programs from), besides the system's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// Paths it may read and write (create, remove, rename within).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<String>,
    /// Names of the gateway's environment variables it receives (besides
    /// `PATH`, and `HOME` and `TMPDIR`, which point at its private dirs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Resource bounds (rlimits).
    #[serde(default, skip_serializing_if = "Limits::is_unset")]
    pub limits: Limits,
    /// How the user would run this server unconfined, said with a refusal
    /// when this machine cannot enforce the profile. Set for a profile the
    /// user did not write (a plugin server's default, whose opt-out is not
    /// "remove `sandbox:`"); never read from a file.
    #[serde(skip)]
    pub opt_out: Option<String>,
}

/// Where a confined server may connect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Network {
    /// Nowhere: a network namespace of its own with no interface up.
    #[default]
    None,
    /// Its own loopback only (a network namespace whose `lo` is up): it
    /// may talk to itself and its children, never to the host's services.
    Loopback,
    /// Anywhere, as an unconfined server (the file-system rules still hold).
    Any,
    /// Only these `host:port` targets, each forwarded from inside its
    /// network namespace by extpool; every other address is unreachable.
    Allow(Vec<NetTarget>),
}

impl Network {
    /// The word or list as written in a profile.
    pub fn describe(&self) -> String {
        match self {
            Network::None => "none".into(),
            Network::Loopback => "loopback".into(),
            Network::Any => "any".into(),
            Network::Allow(targets) => {
                let list: Vec<String> = targets.iter().map(ToString::to_string).collect();
                list.join(", ")
            }
        }
    }

    /// True when the server gets a network namespace of its own.
    pub fn needs_namespace(&self) -> bool {
        !matches!(self, Network::Any)
    }

    /// This network and `other` together: the wider of the two, with both
    /// lists of targets when both are lists (`none` < `loopback` < a list
    /// of targets, whose namespace also has its own loopback, < `any`).
    pub fn widened(&self, other: &Network) -> Network {
        match (self, other) {
            (Network::Any, _) | (_, Network::Any) => Network::Any,
            (Network::Allow(a), Network::Allow(b)) => {
                let mut targets = a.clone();
                for t in b {
                    if !targets.contains(t) && targets.len() < MAX_TARGETS {
                        targets.push(t.clone());
                    }
                }
                Network::Allow(targets)
            }
            (Network::Allow(a), _) | (_, Network::Allow(a)) => Network::Allow(a.clone()),
            (Network::Loopback, _) | (_, Network::Loopback) => Network::Loopback,
            (Network::None, Network::None) => Network::None,
        }
    }
}

impl Serialize for Network {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::None => s.serialize_str("none"),
            Network::Loopback => s.serialize_str("loopback"),
            Network::Any => s.serialize_str("any"),
            Network::Allow(targets) => targets.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Network;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("none, loopback, any, or a list of \"host:port\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Network, E> {
                match v {
                    "none" => Ok(Network::None),
                    "loopback" => Ok(Network::Loopback),
                    "any" => Ok(Network::Any),
                    _ => Err(E::unknown_variant(v, &["none", "loopback", "any"])),
                }
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Network, A::Error> {
                let mut targets = Vec::new();
                while let Some(target) = seq.next_element::<NetTarget>()? {
                    if targets.len() == MAX_TARGETS {
                        return Err(serde::de::Error::custom(format!(
                            "at most {MAX_TARGETS} network targets"
                        )));
                    }
                    targets.push(target);
                }
                Ok(Network::Allow(targets))
            }
        }
        d.deserialize_any(V)
    }
}

/// A host a profile lets a server reach.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// An IP address (v4 or v6).
    Ip(IpAddr),
    /// `localhost`: 127.0.0.1 and ::1.
    Localhost,
    /// A DNS name, resolved by extpool (outside the sandbox) at each
    /// connection.
    Name(String),
}

/// One `host:port` a profile allows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NetTarget {
    /// The host.
    pub host: Host,
    /// The TCP port (1-65535).
    pub port: u16,
}

/// A `host:port` that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("network target {target:?}: {problem}")]
pub struct TargetError {
    /// The target as written.
    pub target: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl FromStr for NetTarget {
    type Err = TargetError;

    fn from_str(s: &str) -> Result<Self, TargetError> {
        let err = |problem| TargetError {
            target: s.chars().take(80).collect(),
            problem,
        };
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (ip, port) = rest
                .split_once("]:")
                .ok_or_else(|| err("expected [IPv6]:port"))?;
            let ip: std::net::Ipv6Addr = ip.parse().map_err(|_| err("not an IPv6 address"))?;
            (Host::Ip(IpAddr::V6(ip)), port)
        } else {
            let (host, port) = s
                .rsplit_once(':')
                .ok_or_else(|| err("expected host:port"))?;
            if host.contains(':') {
                return Err(err("write an IPv6 address in brackets: [::1]:port"));
            }
            let host = if host.eq_ignore_ascii_case("localhost") {
                Host::Localhost
            } else if let Ok(ip) = host.parse::<IpAddr>() {
                Host::Ip(ip)
            } else if is_dns_name(host) {
                Host::Name(host.to_ascii_lowercase())
            } else {
                return Err(err("the host is neither an IP address nor a DNS name"));
            };
            (host, port)
        };
        let port: u16 = port
            .parse()
            .map_err(|_| err("the port is not a number from 1 to 65535"))?;
        if port == 0 {
            return Err(err("the port is not a number from 1 to 65535"));
        }
        Ok(NetTarget { host, port })
    }
}

/// True for a DNS name: dot-separated labels of letters, digits and `-`,
/// none empty or longer than 63 bytes, 253 bytes at most in all.
fn is_dns_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

impl fmt::Display for NetTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}:{}", self.port),
            Host::Localhost => write!(f, "localhost:{}", self.port),
            Host::Name(name) => write!(f, "{name}:{}", self.port),
        }
    }
}

impl Serialize for NetTarget {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NetTarget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Resource bounds of a confined server, as rlimits of its processes.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Largest data segment of each process, in MiB (`RLIMIT_DATA`: heap
    /// and writable private mappings; address space merely reserved, as
    /// V8 reserves it, is not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Most processes and threads at once (`RLIMIT_NPROC`, counted within
    /// the server's own user namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// Most open file descriptors per process (`RLIMIT_NOFILE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<u64>,
}

impl Limits {
    /// True when no bound is set (so it is not printed).
    pub fn is_unset(&self) -> bool {
        *self == Self::default()
    }
}

/// A profile that breaks a rule, with the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sandbox.{field}: {message}")]
pub struct ProfileProblem {
    /// The field under `sandbox` (`read[2]`, `env[0]`, `limits.processes`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl SandboxProfile {
    /// Every rule this profile breaks, each with its field. Paths are
    /// checked as they will be used (after `${VAR}` expansion and against
    /// the config's directory): they must be absolute.
    pub fn problems(&self) -> Vec<ProfileProblem> {
        let mut out = Vec::new();
        let mut problem =
            |field: String, message: String| out.push(ProfileProblem { field, message });
        for (list, paths) in [("read", &self.read), ("write", &self.write)] {
            if paths.len() > MAX_PATHS {
                problem(list.into(), format!("at most {MAX_PATHS} paths"));
            }
            for (i, path) in paths.iter().enumerate() {
                if let Err(message) = check_path(path, list == "write") {
                    problem(format!("{list}[{i}]"), message);
                }
            }
        }
        if self.env.len() > MAX_ENV {
            problem("env".into(), format!("at most {MAX_ENV} names"));
        }
        for (i, name) in self.env.iter().enumerate() {
            if !is_env_name(name) {
                problem(
                    format!("env[{i}]"),
                    "expected a variable name (letters, digits and _, not starting with a digit)"
                        .into(),
                );
            } else if SET_BY_SANDBOX.contains(&name.as_str()) {
                problem(
                    format!("env[{i}]"),
                    format!(
                        "{name} is set by the sandbox itself (HOME and TMPDIR are private directories, PATH is passed)"
                    ),
                );
            }
        }
        if let Network::Allow(targets) = &self.network
            && targets.is_empty()
        {
            problem(
                "network".into(),
                "an empty list allows nothing: write `none`".into(),
            );
        }
        for (field, value) in [
            ("memory_mb", self.limits.memory_mb),
            ("processes", self.limits.processes),
            ("open_files", self.limits.open_files),
        ] {
            if value == Some(0) {
                problem(
                    format!("limits.{field}"),
                    "expected a number of at least 1".into(),
                );
            }
        }
        out
    }

    /// A one-line summary for listings: `network none; read 2 paths; …`.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!("network {}", self.network.describe())];
        let count = |n: usize, what: &str| {
            if n == 1 {
                format!("{what} 1 path")
            } else {
                format!("{what} {n} paths")
            }
        };
        if !self.read.is_empty() {
            parts.push(count(self.read.len(), "read"));
        }
        if !self.write.is_empty() {
            parts.push(count(self.write.len(), "write"));
        }
        if !self.env.is_empty() {
            parts.push(format!("env {}", self.env.join(",")));
        }
        let limits = &self.limits;
        let mut bounds = Vec::new();
        if let Some(mb) = limits.memory_mb {
            bounds.push(format!("memory {mb} MiB"));
        }
        if let Some(n) = limits.processes {
            bounds.push(format!("{n} processes"));
        }
        if let Some(n) = limits.open_files {
            bounds.push(format!("{n} files"));
        }
        if !bounds.is_empty() {
            parts.push(bounds.join(", "));
        }
        parts.join("; ")
    }

    /// The profile a plugin's server runs under by default: it reads its
    /// plugin's `root` and the `project`, writes its `data` directory (the
    /// plugin's `PLUGIN_DATA`), and reaches the network its manifest asks
    /// for (`network`; `Network::None` when it asks for nothing). Paths are
    /// written as given (absolute, as the plugin manager resolves them).
    pub fn for_plugin(
        root: &Path,
        data: &Path,
        project: Option<&Path>,
        network: Network,
    ) -> SandboxProfile {
        let shown = |p: &Path| p.display().to_string();
        let mut read = vec![shown(root)];
        read.extend(project.map(shown));
        SandboxProfile {
            network,
            read,
            write: vec![shown(data)],
            env: Vec::new(),
            limits: Limits::default(),
            opt_out: None,
        }
    }

    /// This profile widened by `other`: the wider network
    /// ([`Network::widened`]), the paths and variables of both (each
    /// once), and `other`'s limits where it sets one. What a user's
    /// `plugins.sandbox` entry does to a plugin's default profile.
    pub fn widened(&self, other: &SandboxProfile) -> SandboxProfile {
        let union = |a: &[String], b: &[String]| {
            let mut out = a.to_vec();
            for item in b {
                if !out.contains(item) {
                    out.push(item.clone());
                }
            }
            out
        };
        SandboxProfile {
            network: self.network.widened(&other.network),
            read: union(&self.read, &other.read),
            write: union(&self.write, &other.write),
            env: union(&self.env, &other.env),
            limits: Limits {
                memory_mb: other.limits.memory_mb.or(self.limits.memory_mb),
                processes: other.limits.processes.or(self.limits.processes),
                open_files: other.limits.open_files.or(self.limits.open_files),
            },
            opt_out: self.opt_out.clone(),
        }
    }
}

/// The rule for a `read` or `write` path: absolute, no NUL, not `..`
/// anywhere; for `write`, not the root.
fn check_path(path: &str, write: bool) -> Result<(), String> {
    if path.contains('\0') {
        return Err("a path cannot hold a NUL byte".into());
    }
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(format!(
            "{path:?} is not an absolute path (write ${{HOME}}/… or a path relative to the config file)"
        ));
    }
    if p.components().any(|c| c == std::path::Component::ParentDir) {
        return Err(format!("{path:?} holds `..`: write the path it means"));
    }
    if write && p.parent().is_none() {
        return Err("write access to / would leave nothing confined".into());
    }
    Ok(())
}

/// True for a portable environment variable name.
fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl schemars::JsonSchema for Network {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Network".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Where a confined server may connect: none, loopback, any, or a list of \"host:port\".",
            "anyOf": [
                {"type": "string", "enum": ["none", "loopback", "any"]},
                {"type": "array", "items": {"type": "string", "pattern": "^.+:[0-9]+$"}}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(json: &str) -> SandboxProfile {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn network_forms_parse_and_print_back() {
        for (text, network) in [
            ("\"none\"", Network::None),
            ("\"loopback\"", Network::Loopback),
            ("\"any\"", Network::Any),
        ] {
            let p = profile(&format!("{{\"network\": {text}}}"));
            assert_eq!(p.network, network);
            assert_eq!(serde_json::to_string(&p.network).unwrap(), text);
        }
        let p = profile(
            r#"{"network": ["127.0.0.1:5432", "[::1]:80", "localhost:8080", "API.example.com:443"]}"#,
        );
        let Network::Allow(targets) = &p.network else {
            panic!("{p:?}")
        };
        assert_eq!(
            targets.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "127.0.0.1:5432",
                "[::1]:80",
                "localhost:8080",
                "api.example.com:443"
            ]
        );
        assert_eq!(profile("{}").network, Network::None);
    }

    #[test]
    fn bad_targets_are_refused_with_the_reason() {
        for (text, reason) in [
            ("host", "expected host:port"),
            ("host:0", "1 to 65535"),
            ("host:70000", "1 to 65535"),
            ("::1:80", "brackets"),
            ("[::1]80", "[IPv6]:port"),
            ("bad_host!:80", "neither an IP address nor a DNS name"),
        ] {
            let err = text.parse::<NetTarget>().unwrap_err();
            assert!(err.to_string().contains(reason), "{text}: {err}");
        }
        let err = serde_json::from_str::<SandboxProfile>(r#"{"network": "everywhere"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`none`, `loopback`, `any`"), "{err}");
    }

    #[test]
    fn problems_name_the_field() {
        let p = profile(
            r#"{"read": ["relative/dir", "/ok"], "write": ["/"], "env": ["HOME", "1X", "TOKEN"],
                "network": [], "limits": {"processes": 0}}"#,
        );
        let fields: Vec<String> = p.problems().into_iter().map(|p| p.field).collect();
        assert_eq!(
            fields,
            [
                "read[0]",
                "write[0]",
                "env[0]",
                "env[1]",
                "network",
                "limits.processes"
            ]
        );
        assert!(
            profile(r#"{"read": ["/a/../b"]}"#).problems()[0]
                .message
                .contains("..")
        );
        assert!(
            profile(r#"{"read": ["/usr"], "env": ["TOKEN"]}"#)
                .problems()
                .is_empty()
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = serde_json::from_str::<SandboxProfile>(r#"{"netwrok": "none"}"#).unwrap_err();
        assert!(err.to_string().contains("netwrok"), "{err}");
    }

    #[test]
    fn a_plugin_reads_its_root_and_project_and_writes_its_data() {
        let p = SandboxProfile::for_plugin(
            Path::new("/plugins/demo"),
            Path::new("/data/demo"),
            Some(Path::new("/srv/project")),
            Network::None,
        );
        assert_eq!(p.read, ["/plugins/demo", "/srv/project"]);
        assert_eq!(p.write, ["/data/demo"]);
        assert!(p.env.is_empty());
        assert!(p.problems().is_empty());
        assert_eq!(p.summary(), "network none; read 2 paths; write 1 path");
    }

    #[test]
    fn widening_takes_the_wider_network_and_both_lists() {
        let net = |json: &str| profile(&format!("{{\"network\": {json}}}")).network;
        let (none, lo, any) = (net("\"none\""), net("\"loopback\""), net("\"any\""));
        let a = net(r#"["127.0.0.1:1"]"#);
        let b = net(r#"["127.0.0.1:1", "api.example.com:443"]"#);
        assert_eq!(none.widened(&none), none);
        assert_eq!(none.widened(&lo), lo);
        assert_eq!(lo.widened(&a), a);
        assert_eq!(a.widened(&none), a);
        assert_eq!(a.widened(&b), b);
        assert_eq!(b.widened(&any), any);
        assert_eq!(any.widened(&none), any);

        let base = SandboxProfile::for_plugin(
            Path::new("/plugins/demo"),
            Path::new("/data/demo"),
            None,
            Network::None,
        );
        let wider = profile(
            r#"{"network": ["api.example.com:443"], "read": ["/plugins/demo", "/srv/docs"],
                "env": ["TOKEN"], "limits": {"open_files": 64}}"#,
        );
        let p = base.widened(&wider);
        assert_eq!(p.network, net(r#"["api.example.com:443"]"#));
        assert_eq!(p.read, ["/plugins/demo", "/srv/docs"]);
        assert_eq!(p.write, ["/data/demo"]);
        assert_eq!(p.env, ["TOKEN"]);
        assert_eq!(p.limits.open_files, Some(64));
    }
}
