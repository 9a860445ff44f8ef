//! [`AuthError`]: every failure of extpool-auth, each saying what to do.
//! No variant carries a token, a code or a client secret.

use crate::profile::ProfileError;
use crate::refresh::RefreshError;
use crate::store::StoreError;

/// The command that authorizes a profile.
pub fn login_command(server: &str) -> String {
    format!("extpool mcp login {server}")
}

/// Failures of OAuth for one server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No usable grant, and this process may not open a browser.
    #[error(
        "MCP server \"{server}\" needs an OAuth login ({reason}); run: extpool mcp login {server}"
    )]
    LoginRequired {
        /// The server (profile).
        server: String,
        /// Why the stored grant cannot be used.
        reason: String,
    },
    /// A `per_user` server has no grant of this caller's: the caller logs
    /// in for itself, through the gateway (never with another's grant).
    #[error(
        "MCP server \"{server}\" needs your own OAuth login ({reason}); log in through the gateway: extpool mcp login {server} --gateway URL (or POST /v1/login/{server}), then call again"
    )]
    CallerLoginRequired {
        /// The server (profile).
        server: String,
        /// Why no grant of the caller's can be used.
        reason: String,
    },
    /// A delegated credential (`token_exchange`, `passthrough`) is not
    /// there for this caller: the gateway makes it at each call.
    #[error("MCP server \"{server}\": {reason}")]
    Delegated {
        /// The server (profile).
        server: String,
        /// What is missing, in words.
        reason: String,
    },
    /// The server wants scopes the grant lacks, and no step-up is possible here.
    #[error(
        "MCP server \"{server}\" needs scope \"{scopes}\" (insufficient_scope); run: extpool mcp login {server}"
    )]
    InsufficientScope {
        /// The server.
        server: String,
        /// The scopes to ask for.
        scopes: String,
    },
    /// Step-up was attempted the maximum number of times.
    #[error(
        "MCP server \"{server}\" still answers insufficient_scope after {attempts} authorizations; giving up"
    )]
    StepUpLimit {
        /// The server.
        server: String,
        /// Authorizations made.
        attempts: u32,
    },
    /// The profile's grant comes from the environment.
    #[error(
        "the OAuth profile of \"{server}\" is environment-backed ({var}) and read-only; update its Secret and restart the process"
    )]
    ReadOnly {
        /// The server.
        server: String,
        /// The variable.
        var: String,
    },
    /// The environment variable is missing or not a grant.
    #[error("MCP server \"{server}\": {var} {reason}")]
    Environment {
        /// The server.
        server: String,
        /// The variable.
        var: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The profile contradicts itself.
    #[error("MCP server \"{server}\": {error}")]
    Profile {
        /// The server.
        server: String,
        /// The problem (shown in the message, so not a `source()`).
        error: ProfileError,
    },
    /// The credential store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Metadata discovery failed.
    #[error("MCP server \"{server}\": OAuth discovery failed: {reason}")]
    Discovery {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// Client registration failed.
    #[error("MCP server \"{server}\": client registration failed: {reason}")]
    Registration {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// The authorization step failed (denied, wrong state or issuer, no code).
    #[error("MCP server \"{server}\": authorization failed: {reason}")]
    Authorization {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// Exchanging the code for a token failed.
    #[error("MCP server \"{server}\": token request failed: {reason}")]
    TokenExchange {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// A refresh failed for a reason that may pass (network, server error).
    #[error("MCP server \"{server}\": {error}")]
    Refresh {
        /// The server.
        server: String,
        /// Why (shown in the message, so not a `source()`).
        error: RefreshError,
    },
    /// Direct DCR state does not allow the requested action.
    #[error("MCP server \"{server}\": {kind}")]
    Dcr {
        /// The server.
        server: String,
        /// What is wrong.
        kind: DcrError,
    },
    /// The user gave up, or the redirect never came.
    #[error("MCP server \"{server}\": login cancelled: {reason}")]
    Cancelled {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
}

/// Direct-DCR state errors. Each fails closed: nothing is changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DcrError {
    /// The access grant expired; direct DCR never refreshes.
    #[error("login-required: the direct-DCR grant expired; run: extpool mcp login {0}")]
    LoginRequired(String),
    /// A registration was interrupted.
    #[error(
        "a client registration was interrupted (pending); run: extpool mcp login {0} --retry-dcr-registration"
    )]
    Pending(String),
    /// The pending registration was made for another identity.
    #[error(
        "pending-identity-mismatch: the interrupted registration was for {field} {recorded:?}, the profile now has {current:?}; restore that configuration before --retry-dcr-registration"
    )]
    PendingIdentityMismatch {
        /// Which part differs (profile, principal, resource, issuer).
        field: &'static str,
        /// What the pending record holds.
        recorded: String,
        /// What the configuration gives now.
        current: String,
    },
    /// `--retry-dcr-registration` without an interrupted registration.
    #[error(
        "--retry-dcr-registration needs an interrupted (pending) registration; the state is {0}"
    )]
    NotPending(&'static str),
    /// `--reset-dcr-registration` without a ready registration and grant.
    #[error(
        "--reset-dcr-registration needs a ready registration with a valid grant; the state is {0}"
    )]
    NotReady(&'static str),
    /// The stored registration cannot be read.
    #[error("the stored registration is corrupt ({0}); remove it with `extpool mcp logout` first")]
    Corrupt(String),
    /// Both flags given.
    #[error("--retry-dcr-registration and --reset-dcr-registration are mutually exclusive")]
    BothFlags,
    /// Flags for a profile that is not direct DCR.
    #[error("DCR registration flags apply only to profiles with `client: {{mode: dcr}}`")]
    NotDcrProfile,
}

impl AuthError {
    /// True when only a new login helps.
    pub fn is_login_required(&self) -> bool {
        matches!(
            self,
            AuthError::CallerLoginRequired { .. }
                | Self::LoginRequired { .. }
                | Self::InsufficientScope { .. }
                | Self::Dcr {
                    kind: DcrError::LoginRequired(_),
                    ..
                }
        )
    }
}
