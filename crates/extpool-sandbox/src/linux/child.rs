//! What the child does between fork and exec to confine itself.
//!
//! [`ChildSteps::enter`] runs in the forked child of a multi-threaded
//! process, where only async-signal-safe calls are allowed: it makes
//! system calls only, on buffers built before the fork, and never
//! allocates, locks or touches state shared with the parent. Its errors
//! are built from an errno (no allocation). On a failure it tells the
//! parent which step failed over the report socket, then ends the child
//! before exec.
//!
//! The order matters: rlimits; a user namespace (and in it the network
//! namespace, and a mount namespace when DNS names are allowed) with this
//! user mapped to itself; the private `/etc/hosts`; `lo` up, the allowed
//! targets' addresses on it and a listener for each, each listener's
//! descriptor sent to the parent, which forwards its connections; then
//! Landlock, last, because it forbids what the steps before it need.

use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};

use landlock::RulesetCreated;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags,
    SocketType,
};
use rustix::process::{Resource, Rlimit};

use super::netlink;

/// A step of the child's confinement, as reported to the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Step {
    Limits = 1,
    UserNamespace = 2,
    IdMaps = 3,
    Loopback = 4,
    Addresses = 5,
    Listeners = 6,
    Landlock = 7,
    Hosts = 8,
}

impl Step {
    /// What the step does, for the error that names it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Step::Limits => "setting the resource limits",
            Step::UserNamespace => "creating the user and network namespaces",
            Step::IdMaps => "mapping the user into its namespace",
            Step::Loopback => "bringing up the namespace's loopback",
            Step::Addresses => "giving the loopback the allowed targets' addresses",
            Step::Listeners => "opening the allowed targets' listeners",
            Step::Landlock => "applying the Landlock rules",
            Step::Hosts => "mounting the private /etc/hosts that names the allowed hosts",
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Step> {
        [
            Step::Limits,
            Step::UserNamespace,
            Step::IdMaps,
            Step::Loopback,
            Step::Addresses,
            Step::Listeners,
            Step::Landlock,
            Step::Hosts,
        ]
        .into_iter()
        .find(|s| *s as u8 == code)
    }
}

/// The kind of a message on the report socket: a listener (with its
/// descriptor) or a failed step.
pub(crate) const MSG_LISTENER: u8 = 1;
pub(crate) const MSG_FAILED: u8 = 2;

/// The network namespace part, prepared.
#[derive(Debug)]
pub(crate) struct Namespace {
    /// `"<uid> <uid> 1\n"`: this user, mapped to itself.
    pub uid_map: Vec<u8>,
    /// `"<gid> <gid> 1\n"`.
    pub gid_map: Vec<u8>,
    /// Whether `lo` is brought up (loopback or an allow-list).
    pub loopback: bool,
    /// `RTM_NEWADDR` requests for targets that are not loopback addresses.
    pub addresses: Vec<Vec<u8>>,
    /// The addresses to listen on, in the order of the parent's targets.
    pub listeners: Vec<SocketAddr>,
    /// The `RTM_NEWLINK` request that brings `lo` up.
    pub loopback_up: Vec<u8>,
    /// The private hosts file and the path it is mounted on (`/etc/hosts`),
    /// when the profile allows DNS names: each name then resolves to the
    /// loopback address of its listener. Needs a mount namespace.
    pub hosts: Option<(std::ffi::CString, std::ffi::CString)>,
}

/// Everything the child does to confine itself (see the module docs).
#[derive(Debug)]
pub struct ChildSteps {
    pub(crate) limits: Vec<(Resource, u64)>,
    pub(crate) namespace: Option<Namespace>,
    pub(crate) ruleset: Option<RulesetCreated>,
    pub(crate) report: OwnedFd,
}

fn os(errno: Errno) -> io::Error {
    io::Error::from_raw_os_error(errno.raw_os_error())
}

impl ChildSteps {
    /// Confines the calling process. Async-signal-safe (see the module
    /// docs): meant to run between fork and exec, once.
    pub fn enter(&mut self) -> io::Result<()> {
        self.step(Step::Limits, Self::limits)?;
        if self.namespace.is_some() {
            self.step(Step::UserNamespace, |steps| {
                use nix::sched::{CloneFlags, unshare};
                let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET;
                if steps
                    .namespace
                    .as_ref()
                    .is_some_and(|ns| ns.hosts.is_some())
                {
                    flags |= CloneFlags::CLONE_NEWNS;
                }
                unshare(flags).map_err(|e| io::Error::from_raw_os_error(e as i32))
            })?;
            self.step(Step::IdMaps, Self::id_maps)?;
            self.step(Step::Hosts, Self::hosts)?;
            self.step(Step::Loopback, Self::loopback)?;
            self.step(Step::Addresses, Self::addresses)?;
            self.step(Step::Listeners, Self::listeners)?;
        }
        self.step(Step::Landlock, |steps| match steps.ruleset.take() {
            Some(ruleset) => ruleset
                .restrict_self()
                .map(|_| ())
                .map_err(|_| io::Error::last_os_error()),
            None => Ok(()),
        })
    }

    /// Runs `work`; on failure, reports the step and the errno.
    fn step(
        &mut self,
        step: Step,
        work: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<()> {
        let result = work(self);
        if let Err(error) = &result {
            let errno = error.raw_os_error().unwrap_or(0);
            let mut msg = [0u8; 6];
            msg[0] = MSG_FAILED;
            msg[1] = step as u8;
            msg[2..6].copy_from_slice(&errno.to_ne_bytes());
            let _ = rustix::net::send(&self.report, &msg, SendFlags::empty());
        }
        result
    }

    fn limits(&mut self) -> io::Result<()> {
        for (resource, value) in &self.limits {
            let limit = Rlimit {
                current: Some(*value),
                maximum: Some(*value),
            };
            rustix::process::setrlimit(*resource, limit).map_err(os)?;
        }
        Ok(())
    }

    fn id_maps(&mut self) -> io::Result<()> {
        let Some(ns) = &self.namespace else {
            return Ok(());
        };
        write_proc(c"/proc/self/uid_map", &ns.uid_map)?;
        write_proc(c"/proc/self/setgroups", b"deny")?;
        write_proc(c"/proc/self/gid_map", &ns.gid_map)
    }

    /// Mounts the private hosts file on `/etc/hosts`. The new mount
    /// namespace belongs to the new user namespace, so the kernel has made
    /// the copied mounts slaves: nothing propagates back to the host.
    fn hosts(&mut self) -> io::Result<()> {
        match self.namespace.as_ref().and_then(|ns| ns.hosts.as_ref()) {
            Some((source, target)) => {
                rustix::mount::mount_bind(source.as_c_str(), target.as_c_str()).map_err(os)
            }
            None => Ok(()),
        }
    }

    fn loopback(&mut self) -> io::Result<()> {
        match &self.namespace {
            Some(ns) if ns.loopback => rtnetlink(&ns.loopback_up),
            _ => Ok(()),
        }
    }

    fn addresses(&mut self) -> io::Result<()> {
        let Some(ns) = &self.namespace else {
            return Ok(());
        };
        for request in &ns.addresses {
            rtnetlink(request)?;
        }
        Ok(())
    }

    fn listeners(&mut self) -> io::Result<()> {
        let Some(ns) = &self.namespace else {
            return Ok(());
        };
        for (index, addr) in ns.listeners.iter().enumerate() {
            let family = match addr {
                SocketAddr::V4(_) => AddressFamily::INET,
                SocketAddr::V6(_) => AddressFamily::INET6,
            };
            let socket =
                rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)
                    .map_err(os)?;
            rustix::net::bind(&socket, addr).map_err(os)?;
            rustix::net::listen(&socket, 128).map_err(os)?;
            send_listener(&self.report, index, &socket)?;
        }
        Ok(())
    }
}

/// Writes `bytes` to the `/proc` file `path` in one call.
fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty()).map_err(os)?;
    let written = rustix::io::write(&fd, bytes).map_err(os)?;
    if written == bytes.len() {
        Ok(())
    } else {
        Err(os(Errno::IO))
    }
}

/// Sends one rtnetlink request and waits for its acknowledgement.
fn rtnetlink(request: &[u8]) -> io::Result<()> {
    let socket = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(os)?;
    rustix::net::send(&socket, request, SendFlags::empty()).map_err(os)?;
    let mut reply = [0u8; 256];
    let (got, _) = rustix::net::recv(&socket, &mut reply[..], RecvFlags::empty()).map_err(os)?;
    let got = got.min(reply.len());
    netlink::ack_errno(&reply[..got]).map_err(io::Error::from_raw_os_error)
}

/// Sends the listener `socket` (the `index`th target's) to the parent.
fn send_listener(report: &OwnedFd, index: usize, socket: &OwnedFd) -> io::Result<()> {
    let mut payload = [0u8; 5];
    payload[0] = MSG_LISTENER;
    payload[1..5].copy_from_slice(&u32::try_from(index).unwrap_or(u32::MAX).to_ne_bytes());
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [socket.as_fd()];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(os(Errno::NOBUFS));
    }
    let iov = [io::IoSlice::new(&payload)];
    rustix::net::sendmsg(report, &iov, &mut control, SendFlags::empty()).map_err(os)?;
    Ok(())
}
