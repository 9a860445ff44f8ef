//! extpool-auth: OAuth for remote MCP servers.
//!
//! - [`OAuthProfile`] — `mcp_servers.<name>.oauth` in the configuration.
//! - [`login()`] — discovery, registration, authorization code + PKCE with
//!   `resource=`, issuer check, the grant stored; through an
//!   [`Authorizer`] (loopback redirect and browser, pasted redirect URL, or
//!   headless for servers that approve by themselves). Direct DCR lives in
//!   [`login::dcr`].
//! - [`CredentialStore`] — one encrypted record per profile
//!   (XChaCha20-Poly1305; key in the OS keyring or a 0600 key file), atomic
//!   writes, a cross-process lock per profile.
//! - [`OAuthSession`] — serving: restore, refresh ahead of expiry (one
//!   refresh across processes), 401 → one refresh and one retry,
//!   `insufficient_scope` → bounded step-up; never a browser unless the
//!   host gives an authorizer.
//! - [`AuthorizedClient`] — rmcp's streamable-HTTP client with the
//!   session's token on every request.
//! - [`status`] / [`logout`] — `auth-status` rows (never a token) and forgetting a grant.
//! - [`delegated`] — each caller's token for a server made from its own
//!   (RFC 8693 token exchange, passthrough), kept for its server's session.
//! - [`enterprise`] — enterprise-managed authorization (ID-JAG): a
//!   caller's identity assertion exchanged at the enterprise IdP, then at a
//!   server's authorization server, for that caller's token there.
//! - [`resource`] — the other side: the gateway as an OAuth protected
//!   resource, checking the access tokens its clients present
//!   ([`resource::TokenVerifier`]) and naming the [`extpool_core::Principal`].
//!
//! Tokens, codes and secrets are [`Secret`]s: redacted in `Debug` and
//! `Display`, absent from every error and log line.

pub mod delegated;
pub mod enterprise;
pub mod error;
pub mod grant;
mod jwt;
pub mod login;
pub mod manage;
pub mod oauth_http;
pub mod profile;
pub mod refresh;
pub mod resource;
pub mod secret;
pub mod session;
pub mod store;
pub mod transport;

pub use error::{AuthError, DcrError, login_command};
pub use grant::{Grant, TokenAuthMethod};
pub use login::{
    Authorizer, DcrAction, HeadlessAuthorizer, LoginOptions, LoginPrompt, LoginTarget,
    LoopbackAuthorizer, login,
};
pub use manage::{GrantState, LogoutOutcome, ProfileStatus, logout, status};
pub use profile::{
    ClientMode, ClientSettings, DcrSettings, OAuthProfile, PassthroughSettings, ProfileError,
    TokenExchangeSettings,
};
pub use secret::Secret;
pub use session::{AuthContext, OAuthSession};
pub use store::{CredentialStore, StoreError};
pub use transport::AuthorizedClient;
