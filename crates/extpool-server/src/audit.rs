//! The audit log: one JSON line per tool call through the gateway — time,
//! who called (the principal), session, catalog name, the permission decision with the rule that
//! decided, the guardrails' decisions with their rules, outcome and duration. Arguments are never written, only the
//! SHA-256 of their JSON (so equal calls can be matched without keeping
//! what they carried).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// One audited call.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord<'a> {
    /// Milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// Who called ([`extpool_host::core::Principal::label`]).
    pub principal: &'a std::sync::Arc<str>,
    /// The client session (the gateway's id).
    pub session: &'a str,
    /// The catalog name called (as the client gave it).
    pub name: &'a str,
    /// `allow` or `deny`.
    pub decision: &'static str,
    /// What decided (`deny rule "mcp__x__*"`, `the default policy (allow)`).
    pub rule: String,
    /// `ok`, `tool_error`, `error`, `denied`, `blocked` (by a guardrail)
    /// or `cancelled`.
    pub outcome: &'static str,
    /// Each guardrail decision made on the call's way (`phase`, `decision`:
    /// `block`, `redact` or `fail_open`, `guardrail`: the rule, `reason`);
    /// left out when none decided anything.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub guardrails: &'a [extpool_host::Verdict],
    /// How long the call took, in milliseconds.
    pub duration_ms: u64,
    /// `sha256:<hex>` of the arguments' JSON.
    pub args_sha256: String,
    /// How the server was reached when with a token made from the
    /// caller's: `token_exchange` or `passthrough` (left out otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<&'static str>,
    /// The delegation chain of that token (its `act` claim: who acts for
    /// the caller, and for whom that one acted), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub act: Option<&'a serde_json::Value>,
}

/// Where audit records go.
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.path)
            .finish()
    }
}

impl AuditLog {
    /// Appends to `path` (created 0600 when missing).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// Writes one record (a failure to write is logged, never fatal).
    pub fn write(&self, record: &AuditRecord<'_>) {
        let Ok(mut line) = serde_json::to_vec(record) else {
            return;
        };
        line.push(b'\n');
        if let Err(e) = self.file.lock().write_all(&line) {
            tracing::warn!(path = %self.path.display(), "cannot write the audit log: {e}");
        }
    }
}

/// `sha256:<hex>` of `args` as JSON.
pub fn args_digest(args: &serde_json::Map<String, serde_json::Value>) -> String {
    let bytes = serde_json::to_vec(args).unwrap_or_default();
    format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A duration in whole milliseconds.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
