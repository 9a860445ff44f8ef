//! Confinement on Linux: Landlock for the file system (and, from ABI 6,
//! signals and abstract UNIX sockets), a user and network namespace for
//! the network, rlimits for resources.

mod child;
mod forward;
mod netlink;
mod rules;

use std::ffi::OsStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SocketFlags, SocketType,
};
use rustix::process::Resource;
use tokio::task::JoinSet;

pub use child::ChildSteps;
pub(crate) use rules::landlock_abi;
pub use rules::{DEVICES_READ, DEVICES_RW, ETC_SECRETS, SYSTEM_READ};

use crate::Request;
use crate::error::SandboxError;
use crate::profile::{Host, NetTarget, Network};
use crate::support::Support;
use child::{MSG_FAILED, MSG_LISTENER, Namespace, Step};
use forward::Outbound;
use rules::Grant;

/// A confinement prepared for one spawn: the child's steps (for the
/// spawner's `pre_exec`) and what the parent does once the child has
/// started or failed.
#[derive(Debug)]
pub struct Prepared {
    /// What the child does between fork and exec.
    pub child: ChildSteps,
    /// What the parent does after the spawn.
    pub parent: ParentSide,
}

/// The parent's half of a confinement.
#[derive(Debug)]
pub struct ParentSide {
    report: OwnedFd,
    targets: Vec<(NetTarget, SocketAddr)>,
    server: String,
}

/// A confined server's running parts (the forwarders of its allowed
/// targets): dropped with the server's transport, which ends them.
#[derive(Debug, Default)]
pub struct Running {
    _forwarders: JoinSet<()>,
}

/// Prepares the confinement `request` describes: the Landlock rules, the
/// namespace steps, the rlimits; refused when this kernel cannot enforce
/// the profile.
pub fn prepare(request: &Request<'_>) -> Result<Prepared, SandboxError> {
    let support = Support::current();
    if let Some(refusal) = support.refusal(request.profile) {
        return Err(refusal.into());
    }
    let targets = match &request.profile.network {
        Network::Allow(targets) => listen_addresses(targets),
        _ => Vec::new(),
    };
    let hosts = private_hosts(request, &targets)?;
    let abi = landlock::ABI::from(i32::from(support.landlock_abi));
    let ruleset = rules::ruleset(abi, &grants(request))?;
    let (report, child_report) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| SandboxError::Io {
        what: "making the confinement's report socket",
        source: e.into(),
    })?;
    let namespace = request.profile.network.needs_namespace().then(|| {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        Namespace {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            loopback: !matches!(request.profile.network, Network::None),
            addresses: targets
                .iter()
                .map(|(_, addr)| addr.ip())
                .filter(|ip| !ip.is_loopback())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(netlink::add_address)
                .collect(),
            listeners: targets.iter().map(|(_, addr)| *addr).collect(),
            loopback_up: netlink::loopback_up(),
            hosts,
        }
    });
    let limits = &request.profile.limits;
    let mut rlimits = Vec::new();
    if let Some(mb) = limits.memory_mb {
        rlimits.push((Resource::Data, mb.saturating_mul(1024 * 1024)));
    }
    if let Some(n) = limits.processes {
        rlimits.push((Resource::Nproc, n));
    }
    if let Some(n) = limits.open_files {
        rlimits.push((Resource::Nofile, n));
    }
    Ok(Prepared {
        child: ChildSteps {
            limits: rlimits,
            namespace,
            ruleset: Some(ruleset),
            report: child_report,
        },
        parent: ParentSide {
            report,
            targets,
            server: request.server.to_owned(),
        },
    })
}

/// Each allowed target with the address its listener takes inside the
/// namespace: an IP target's own address (`localhost` gives two, v4 and
/// v6); a DNS name, a loopback address of its own from 127.0.0.2 on, which
/// the private `/etc/hosts` gives the name.
fn listen_addresses(targets: &[NetTarget]) -> Vec<(NetTarget, SocketAddr)> {
    let mut names: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for target in targets {
        let ips: Vec<IpAddr> = match &target.host {
            Host::Ip(ip) => vec![*ip],
            Host::Localhost => vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ],
            Host::Name(name) => {
                let index = match names.iter().position(|n| n == name) {
                    Some(i) => i,
                    None => {
                        names.push(name);
                        names.len() - 1
                    }
                };
                vec![IpAddr::V4(name_address(index))]
            }
        };
        for ip in ips {
            let addr = SocketAddr::new(ip, target.port);
            if !out.iter().any(|(_, a)| *a == addr) {
                out.push((target.clone(), addr));
            }
        }
    }
    out
}

/// The loopback address the `index`th allowed DNS name resolves to inside
/// the sandbox (127.0.0.2, 127.0.0.3, …; at most 64 names, so no wrap).
fn name_address(index: usize) -> Ipv4Addr {
    let n = u32::try_from(index).unwrap_or(0) + 2;
    Ipv4Addr::from(0x7f00_0000 | n)
}

/// The private hosts file's text: `localhost`, and each allowed DNS name
/// at its listener's address.
fn hosts_file(targets: &[(NetTarget, SocketAddr)]) -> String {
    let mut text = String::from("127.0.0.1 localhost\n::1 localhost\n");
    let mut seen = std::collections::BTreeSet::new();
    for (target, addr) in targets {
        if let Host::Name(name) = &target.host
            && seen.insert(name.as_str())
        {
            text.push_str(&format!("{} {name}\n", addr.ip()));
        }
    }
    text
}

/// Writes the private hosts file when the profile allows DNS names, and
/// returns it with the path it is mounted on.
fn private_hosts(
    request: &Request<'_>,
    targets: &[(NetTarget, SocketAddr)],
) -> Result<Option<(std::ffi::CString, std::ffi::CString)>, SandboxError> {
    if !targets.iter().any(|(t, _)| matches!(t.host, Host::Name(_))) {
        return Ok(None);
    }
    let path = &request.dirs.hosts;
    std::fs::write(path, hosts_file(targets)).map_err(|e| SandboxError::Io {
        what: "writing the sandbox's hosts file",
        source: e,
    })?;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).map_err(|e| SandboxError::Io {
            what: "naming the sandbox's hosts file",
            source: std::io::Error::other(e),
        })
    };
    Ok(Some((c(path)?, c(Path::new("/etc/hosts"))?)))
}

/// Every path the server is granted: the system's, its command, its
/// working directory, its private directories and what its profile names.
fn grants(request: &Request<'_>) -> Vec<Grant> {
    let system = |path: &str, write: bool| Grant {
        path: PathBuf::from(path),
        write,
        required: false,
    };
    let named = |path: &Path, write: bool| Grant {
        path: path.to_path_buf(),
        write,
        required: true,
    };
    let mut out: Vec<Grant> = SYSTEM_READ.iter().map(|p| system(p, false)).collect();
    out.extend(DEVICES_RW.iter().map(|p| system(p, true)));
    out.extend(DEVICES_READ.iter().map(|p| system(p, false)));
    out.extend(rules::etc_without_secrets());
    if let Some(program) = resolve_program(request.program, request.cwd, request.path_var) {
        out.push(named(&program, false));
    }
    if let Some(cwd) = request.cwd {
        out.push(named(cwd, false));
    }
    out.push(named(&request.dirs.home, true));
    out.push(named(&request.dirs.tmp, true));
    if matches!(&request.profile.network, Network::Allow(t) if t.iter().any(|t| matches!(t.host, Host::Name(_))))
    {
        out.push(named(&request.dirs.hosts, false));
    }
    out.extend(
        request
            .profile
            .read
            .iter()
            .map(|p| named(Path::new(p), false)),
    );
    out.extend(
        request
            .profile
            .write
            .iter()
            .map(|p| named(Path::new(p), true)),
    );
    out
}

/// The file `program` runs, found as `execvp` finds it: a path (relative
/// to `cwd`) as is, else the first executable of that name on `path_var`.
fn resolve_program(program: &str, cwd: Option<&Path>, path_var: Option<&OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    let found = if program.contains('/') {
        let p = Path::new(program);
        Some(match cwd {
            Some(cwd) if p.is_relative() => cwd.join(p),
            _ => p.to_path_buf(),
        })
    } else {
        std::env::split_paths(path_var?)
            .map(|dir| dir.join(program))
            .find(|p| executable(p))
    }?;
    std::fs::canonicalize(found).ok()
}

impl ParentSide {
    /// After a successful spawn: starts forwarding each allowed target's
    /// listener (within the caller's tokio runtime).
    pub fn started(self) -> Result<Running, SandboxError> {
        let mut received = self.receive();
        let mut forwarders = JoinSet::new();
        if let Some((step, errno)) = received.failed {
            return Err(step_error(step, errno));
        }
        for (index, (target, addr)) in self.targets.iter().enumerate() {
            let Some(listener) = received.listeners.get_mut(index).and_then(Option::take) else {
                return Err(SandboxError::Step {
                    step: Step::Listeners.describe(),
                    source: std::io::Error::other(format!("no listener arrived for {target}")),
                });
            };
            let outbound = Outbound::of(target, *addr);
            forwarders.spawn(forward::forward(listener, outbound, self.server.clone()));
        }
        Ok(Running {
            _forwarders: forwarders,
        })
    }

    /// After a failed spawn: the error, naming the confinement step that
    /// failed when one did.
    pub fn failed(self, error: std::io::Error) -> std::io::Error {
        match self.receive().failed {
            Some((step, errno)) => {
                let kind = std::io::Error::from_raw_os_error(errno).kind();
                std::io::Error::new(kind, step_error(step, errno))
            }
            None => error,
        }
    }

    /// Reads what the child reported (it has exec'd or ended: every
    /// message is queued).
    fn receive(&self) -> Received {
        let mut out = Received {
            listeners: (0..self.targets.len()).map(|_| None).collect(),
            failed: None,
        };
        // One message per listener and at most one failure.
        for _ in 0..=self.targets.len() {
            let mut payload = [0u8; 8];
            let mut space =
                [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let mut iov = [std::io::IoSliceMut::new(&mut payload)];
            let got = rustix::net::recvmsg(
                &self.report,
                &mut iov,
                &mut control,
                RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
            );
            let Ok(msg) = got else {
                break;
            };
            if msg.bytes == 0 {
                break;
            }
            let mut fd = None;
            for message in control.drain() {
                if let RecvAncillaryMessage::ScmRights(fds) = message {
                    fd = fds.into_iter().next();
                }
            }
            match payload[0] {
                MSG_LISTENER => {
                    let index =
                        u32::from_ne_bytes([payload[1], payload[2], payload[3], payload[4]]);
                    if let (Some(slot), Some(fd)) = (out.listeners.get_mut(index as usize), fd) {
                        *slot = Some(fd);
                    }
                }
                MSG_FAILED => {
                    let errno =
                        i32::from_ne_bytes([payload[2], payload[3], payload[4], payload[5]]);
                    if let Some(step) = Step::from_code(payload[1]) {
                        out.failed = Some((step, errno));
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// What the child sent: listeners by target index, and a failed step.
struct Received {
    listeners: Vec<Option<OwnedFd>>,
    failed: Option<(Step, i32)>,
}

fn step_error(step: Step, errno: i32) -> SandboxError {
    SandboxError::Step {
        step: step.describe(),
        source: std::io::Error::from_raw_os_error(errno),
    }
}
