//! Shared set-up: a test authorization server, a store, a logged-in profile.

use extpool_auth::{
    CredentialStore, Grant, HeadlessAuthorizer, LoginOptions, LoginTarget, OAuthProfile,
};
use extpool_testkit::oauth::{OAuthServer, OAuthServerOptions};

pub const SERVER: &str = "demo";

pub async fn server(options: OAuthServerOptions) -> OAuthServer {
    OAuthServer::start(options)
        .await
        .expect("start the OAuth test server")
}

pub fn store(dir: &std::path::Path) -> CredentialStore {
    CredentialStore::open(dir).expect("open store")
}

/// Logs `SERVER` in headlessly (DCR) and returns the stored grant.
pub async fn login(url: &str, store: &CredentialStore, profile: &OAuthProfile) -> Grant {
    extpool_auth::login(
        LoginTarget {
            server: SERVER,
            url,
            profile,
        },
        store,
        &HeadlessAuthorizer::default(),
        &LoginOptions::default(),
    )
    .await
    .expect("login")
}

/// Makes the stored grant due for refresh (expired a second ago).
pub fn expire(store: &CredentialStore) -> Grant {
    let mut grant: Grant = store.load(SERVER).expect("load").expect("a grant");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    grant.obtained_at = now - 100;
    grant.expires_at = Some(now - 1);
    store.save(SERVER, &grant).expect("save");
    grant
}
