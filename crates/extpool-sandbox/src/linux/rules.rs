//! The file-system rules of a confined server, as one Landlock ruleset.
//!
//! Landlock rules only ever allow (a path and everything beneath it), so
//! "`/etc` but not its secrets" is written as a rule for each entry of
//! `/etc` except the secrets, descending into a directory only where a
//! secret lies beneath it.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use crate::error::SandboxError;

/// Directories of programs and libraries, readable (and executable) under
/// every profile, where they exist.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/nix/store",
    // Runtimes read their own process's entries (another process's memory
    // and environment stay out of reach: Landlock refuses to let a
    // confined process inspect one outside its domain), and the CPU and
    // memory layout.
    "/proc",
    "/sys",
];

/// Devices every program may use: read and written.
pub const DEVICES_RW: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];
/// Devices every program may read.
pub const DEVICES_READ: &[&str] = &["/dev/random", "/dev/urandom"];

/// What under `/etc` stays unreadable: password hashes, host keys, TLS
/// private keys, stored credentials (relative to `/etc`; `*` matches any
/// run of characters within one name).
pub const ETC_SECRETS: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "security/opasswd",
    "ssh/ssh_host_*_key",
    "ssl/private",
    "krb5.keytab",
    "wireguard",
    "NetworkManager/system-connections",
    "ppp/chap-secrets",
    "ppp/pap-secrets",
    "ipsec.secrets",
    "credstore",
    "credstore.encrypted",
    "libvirt/secrets",
];

/// One path granted, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The path.
    pub path: PathBuf,
    /// Read and write (else read only).
    pub write: bool,
    /// A missing path is an error (a path the profile names) rather than
    /// skipped (a system directory this machine does not have).
    pub required: bool,
}

/// Builds the ruleset granting `grants` and denying everything else the
/// kernel's ABI `abi` can handle; with ABI 6 or later, it also keeps the
/// server from signalling processes outside its sandbox and from
/// abstract UNIX sockets outside it.
pub(crate) fn ruleset(abi: ABI, grants: &[Grant]) -> Result<RulesetCreated, SandboxError> {
    let landlock = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(landlock)?;
    if abi as u8 >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(landlock)?;
    }
    let mut created = ruleset.create().map_err(landlock)?;
    for grant in grants {
        let fd = match PathFd::new(&grant.path) {
            Ok(fd) => fd,
            Err(_) if !grant.required && !grant.path.exists() => continue,
            Err(e) => {
                return Err(SandboxError::Path {
                    path: grant.path.display().to_string(),
                    access: if grant.write { "write" } else { "read" },
                    reason: std::error::Error::source(&e)
                        .map_or_else(|| e.to_string(), ToString::to_string),
                });
            }
        };
        let mut access = if grant.write {
            AccessFs::from_all(abi)
        } else {
            AccessFs::from_read(abi)
        };
        if !grant.path.is_dir() {
            access &= AccessFs::from_file(abi);
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(landlock)?;
    }
    Ok(created)
}

/// The read grants that stand for `/etc` without its secrets.
pub(crate) fn etc_without_secrets() -> Vec<Grant> {
    let mut out = Vec::new();
    grant_except(Path::new("/etc"), Path::new(""), &mut out, 0);
    out
}

/// Grants `dir` (shown as `rel` under `/etc`) whole when no secret lies
/// beneath it, else each entry except the secrets, descending as needed.
fn grant_except(dir: &Path, rel: &Path, out: &mut Vec<Grant>, depth: usize) {
    let read = |path: PathBuf| Grant {
        path,
        write: false,
        required: false,
    };
    if !ETC_SECRETS.iter().any(|s| is_beneath(s, rel)) {
        out.push(read(dir.to_path_buf()));
        return;
    }
    // Secrets lie at most three levels down.
    if depth > 3 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let child_rel = rel.join(&name);
        if ETC_SECRETS.iter().any(|s| matches(s, &child_rel)) {
            continue;
        }
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if is_dir {
            grant_except(&entry.path(), &child_rel, out, depth + 1);
        } else {
            out.push(read(entry.path()));
        }
    }
}

/// True when the secret pattern `secret` names `rel` itself.
fn matches(secret: &str, rel: &Path) -> bool {
    let Some(rel) = rel.to_str() else {
        return false;
    };
    let (sd, sn) = secret.rsplit_once('/').unwrap_or(("", secret));
    let (rd, rn) = rel.rsplit_once('/').unwrap_or(("", rel));
    sd == rd && glob(sn, rn)
}

/// True when the secret pattern `secret` lies strictly beneath `rel` (or
/// `rel` is the empty root).
fn is_beneath(secret: &str, rel: &Path) -> bool {
    let Some(rel) = rel.to_str() else {
        return true;
    };
    rel.is_empty()
        || secret
            .strip_prefix(rel)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// `*`-only globbing within one name.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail)
        }
    }
}

/// The Landlock ABI this kernel offers, found by asking for each ABI's
/// rights under a hard requirement (nothing is enforced: the rulesets are
/// only created, never applied).
pub(crate) fn landlock_abi() -> u8 {
    use landlock::{AccessNet, RestrictSelf, RestrictSelfAttr};
    let supports = |n: i32| -> bool {
        let abi = ABI::from(n);
        let mut ruleset = match Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
        {
            Ok(r) => r,
            Err(_) => return false,
        };
        if n >= 4 {
            let net: BitFlags<AccessNet> = AccessNet::from_all(abi);
            ruleset = match ruleset.handle_access(net) {
                Ok(r) => r,
                Err(_) => return false,
            };
        }
        if n >= 6 {
            ruleset = match ruleset.scope(Scope::from_all(abi)) {
                Ok(r) => r,
                Err(_) => return false,
            };
        }
        if ruleset.create().is_err() {
            return false;
        }
        let flags = RestrictSelf::default().set_compatibility(CompatLevel::HardRequirement);
        match n {
            7 => flags.log_subdomains(false).is_ok(),
            8 => flags.all_threads(true).is_ok(),
            _ => true,
        }
    };
    (1..=10).rev().find(|n| supports(*n)).unwrap_or(0) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_matched_by_name_and_glob() {
        assert!(matches("shadow", Path::new("shadow")));
        assert!(!matches("shadow", Path::new("shadowfax")));
        assert!(matches(
            "ssh/ssh_host_*_key",
            Path::new("ssh/ssh_host_ed25519_key")
        ));
        assert!(!matches(
            "ssh/ssh_host_*_key",
            Path::new("ssh/ssh_host_ed25519_key.pub")
        ));
        assert!(!matches(
            "ssh/ssh_host_*_key",
            Path::new("ssh_host_rsa_key")
        ));
        assert!(is_beneath("ssh/ssh_host_*_key", Path::new("ssh")));
        assert!(!is_beneath("ssh/ssh_host_*_key", Path::new("ssl")));
        assert!(is_beneath("shadow", Path::new("")));
    }

    #[test]
    fn etc_is_granted_entry_by_entry_without_its_secrets() {
        let grants = etc_without_secrets();
        let paths: Vec<&Path> = grants.iter().map(|g| g.path.as_path()).collect();
        assert!(!paths.contains(&Path::new("/etc")), "granted whole");
        assert!(!paths.contains(&Path::new("/etc/shadow")));
        assert!(paths.contains(&Path::new("/etc/passwd")), "{paths:?}");
        assert!(
            !paths.iter().any(|p| p.starts_with("/etc/ssl/private")),
            "{paths:?}"
        );
        assert!(grants.iter().all(|g| !g.write));
    }
}
