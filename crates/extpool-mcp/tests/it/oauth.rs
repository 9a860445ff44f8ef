//! Serving HTTP servers with an `oauth` profile: restore the stored grant,
//! refresh ahead of expiry, one refresh + one retry on 401, step-up on
//! `insufficient_scope`, direct DCR expiry, and the errors that say what
//! to do — against a local authorization server (extpool-testkit `oauth`).

use std::sync::Arc;

use extpool_auth::{
    AuthContext, ClientMode, ClientSettings, CredentialStore, DcrSettings, Grant,
    HeadlessAuthorizer, LoginOptions, LoginTarget, OAuthProfile,
};
use extpool_mcp::{ClientError, ClientOptions, McpClient, McpServerConfig};
use extpool_testkit::oauth::{OAuthServer, OAuthServerOptions};

use crate::support::{args, name, options};

const SERVER: &str = "demo";

struct Setup {
    server: OAuthServer,
    dir: tempfile::TempDir,
    profile: OAuthProfile,
}

impl Setup {
    async fn new(options: OAuthServerOptions, profile: OAuthProfile) -> Self {
        let server = OAuthServer::start(options).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let profile = OAuthProfile {
            store: Some(dir.path().to_owned()),
            ..profile
        };
        Self {
            server,
            dir,
            profile,
        }
    }

    fn store(&self) -> CredentialStore {
        CredentialStore::open(self.dir.path()).unwrap()
    }

    async fn login(&self, options: LoginOptions) -> Grant {
        extpool_auth::login(
            LoginTarget {
                server: SERVER,
                url: &self.server.mcp_url(),
                profile: &self.profile,
            },
            &self.store(),
            &HeadlessAuthorizer::default(),
            &options,
        )
        .await
        .unwrap()
    }

    fn config(&self) -> McpServerConfig {
        let mut config = McpServerConfig::http(self.server.mcp_url());
        config.oauth = Some(self.profile.clone());
        config
    }

    fn client(&self, options: ClientOptions) -> McpClient {
        McpClient::new(name(SERVER), self.config(), Arc::new(options)).unwrap()
    }

    fn expire(&self) {
        let store = self.store();
        let mut grant: Grant = store.load(SERVER).unwrap().unwrap();
        let now = extpool_auth::grant::now_secs();
        grant.obtained_at = now - 100;
        grant.expires_at = Some(now - 1);
        store.save(SERVER, &grant).unwrap();
    }

    fn stored(&self) -> Grant {
        self.store().load(SERVER).unwrap().unwrap()
    }
}

async fn echo(client: &McpClient) -> Result<String, ClientError> {
    let result = client
        .call_tool("echo", args(serde_json::json!({"message": "hi"})))
        .await?;
    Ok(result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default())
}

#[tokio::test]
async fn serving_restores_the_stored_grant() {
    let s = Setup::new(OAuthServerOptions::default(), OAuthProfile::default()).await;
    let grant = s.login(LoginOptions::default()).await;
    let client = s.client(options());
    assert_eq!(echo(&client).await.unwrap(), "hi");
    assert_eq!(
        s.server.accepted_token_fingerprints().last(),
        Some(&grant.access_token.fingerprint())
    );
    assert_eq!(s.server.counts().refreshes, 0);
    client.close().await;
}

#[tokio::test]
async fn an_expiring_token_is_refreshed_before_use_and_the_rotation_persisted() {
    let s = Setup::new(OAuthServerOptions::default(), OAuthProfile::default()).await;
    let grant = s.login(LoginOptions::default()).await;
    s.expire();
    let before = s.server.counts(); // (the login's discovery probe got one 401)
    let client = s.client(options());
    assert_eq!(echo(&client).await.unwrap(), "hi");
    let counts = s.server.counts();
    assert_eq!(
        (counts.refreshes, counts.unauthorized - before.unauthorized),
        (1, 0),
        "refreshed before use, never sent expired: {counts:?}"
    );
    let stored = s.stored();
    assert_ne!(stored.refresh_token, grant.refresh_token);
    assert_eq!(
        s.server.accepted_token_fingerprints().last(),
        Some(&stored.access_token.fingerprint())
    );
    client.close().await;
}

#[tokio::test]
async fn a_401_triggers_one_refresh_and_one_retry() {
    let s = Setup::new(OAuthServerOptions::default(), OAuthProfile::default()).await;
    s.login(LoginOptions::default()).await;
    let client = s.client(options());
    assert_eq!(echo(&client).await.unwrap(), "hi");
    let before = s.server.counts().unauthorized;
    s.server.revoke_access_tokens();
    assert_eq!(echo(&client).await.unwrap(), "hi");
    let counts = s.server.counts();
    assert_eq!(
        (counts.unauthorized - before, counts.refreshes),
        (1, 1),
        "{counts:?}"
    );
    // A rejected refresh token leaves only a login: one attempt, then the hint.
    s.server.revoke_access_tokens();
    s.server.revoke_refresh_tokens();
    let error = echo(&client).await.unwrap_err();
    assert!(
        error.to_string().contains("run: extpool mcp login demo"),
        "{error}"
    );
    let counts = s.server.counts();
    assert_eq!(
        (counts.unauthorized - before, counts.refresh_rejections),
        (2, 1),
        "{counts:?}"
    );
    client.close().await;
}

#[tokio::test]
async fn without_a_grant_serving_says_to_log_in_and_never_authorizes() {
    let s = Setup::new(OAuthServerOptions::default(), OAuthProfile::default()).await;
    let client = s.client(options());
    let error = client.ensure_connected().await.unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("needs an OAuth login (no stored grant); run: extpool mcp login demo"),
        "{message}"
    );
    let counts = s.server.counts();
    assert_eq!((counts.registrations, counts.authorizations), (0, 0));
}

#[tokio::test]
async fn insufficient_scope_while_serving_asks_for_a_login_with_the_scope() {
    let s = Setup::new(
        OAuthServerOptions {
            tool_scope: Some("mcp:write".into()),
            ..OAuthServerOptions::default()
        },
        OAuthProfile {
            scopes: vec!["mcp:read".into()],
            ..OAuthProfile::default()
        },
    )
    .await;
    s.login(LoginOptions::default()).await;
    let client = s.client(options());
    assert!(
        client.list_tools().await.is_ok(),
        "listing needs no extra scope"
    );
    let error = echo(&client).await.unwrap_err();
    assert!(
        error.to_string().contains(
            "needs scope \"mcp:read mcp:write\" (insufficient_scope); run: extpool mcp login demo"
        ),
        "{error}"
    );
    assert_eq!(s.stored().wanted_scopes, vec!["mcp:read", "mcp:write"]);
    // The next login asks for the wanted scopes; then the call goes through.
    s.login(LoginOptions::default()).await;
    let last = s.server.authorization_requests().pop().unwrap();
    let scope = last.iter().find(|(k, _)| k == "scope").unwrap();
    assert_eq!(scope.1, "mcp:read mcp:write");
    let client = s.client(options());
    assert_eq!(echo(&client).await.unwrap(), "hi");
    client.close().await;
}

#[tokio::test]
async fn with_an_authorizer_insufficient_scope_steps_up_a_bounded_number_of_times() {
    let s = Setup::new(
        OAuthServerOptions {
            tool_scope: Some("mcp:write".into()),
            ..OAuthServerOptions::default()
        },
        OAuthProfile {
            scopes: vec!["mcp:read".into()],
            ..OAuthProfile::default()
        },
    )
    .await;
    let interactive = ClientOptions {
        auth: AuthContext {
            authorizer: Some(Arc::new(HeadlessAuthorizer::default())),
            ..AuthContext::default()
        },
        ..options()
    };
    // No stored grant: the first 401 starts the login, then the 403 a step-up.
    let client = s.client(interactive);
    assert_eq!(echo(&client).await.unwrap(), "hi");
    let counts = s.server.counts();
    assert_eq!(
        (counts.authorizations, counts.insufficient_scope),
        (2, 1),
        "{counts:?}"
    );
    client.close().await;

    // A server that never accepts: at most max_step_ups more authorizations.
    let stubborn = Setup::new(
        OAuthServerOptions {
            tool_scope: Some("mcp:never-granted".into()),
            scopes_supported: vec!["mcp:read".into()],
            ..OAuthServerOptions::default()
        },
        OAuthProfile::default(),
    )
    .await;
    let client = stubborn.client(ClientOptions {
        auth: AuthContext {
            authorizer: Some(Arc::new(HeadlessAuthorizer::default())),
            ..AuthContext::default()
        },
        ..options()
    });
    let error = echo(&client).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("still answers insufficient_scope"),
        "{error}"
    );
    assert_eq!(
        stubborn.server.counts().authorizations,
        3,
        "1 login + 2 step-ups"
    );
    client.close().await;
}

#[tokio::test]
async fn direct_dcr_never_refreshes_and_expiry_is_login_required() {
    let s = Setup::new(
        OAuthServerOptions::default(),
        OAuthProfile {
            client: ClientSettings {
                mode: ClientMode::Dcr,
                dcr: Some(DcrSettings::default()),
            },
            ..OAuthProfile::default()
        },
    )
    .await;
    let grant = s.login(LoginOptions::default()).await;
    let registration = &s.server.registrations()[0];
    assert_eq!(registration.grant_types, vec!["authorization_code"]);
    assert_eq!(registration.token_endpoint_auth_method, "none");
    assert_eq!(registration.scope.as_deref(), Some("openid"));
    let request = &s.server.authorization_requests()[0];
    let get = |k: &str| {
        request
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("scope").as_deref(), Some("openid"));
    assert_eq!(get("prompt").as_deref(), Some("consent"));
    assert!(grant.refresh_token.is_none() && grant.dcr_generation == Some(1));

    let client = s.client(options());
    assert_eq!(echo(&client).await.unwrap(), "hi");
    client.close().await;
    s.expire();
    let client = s.client(options());
    let error = client.ensure_connected().await.unwrap_err();
    assert!(error.to_string().contains("login-required"), "{error}");
    assert_eq!(s.server.counts().refreshes, 0);
    // `mcp login` reuses the registration for a new grant.
    s.login(LoginOptions::default()).await;
    assert_eq!(s.server.counts().registrations, 1);
    let client = s.client(options());
    assert_eq!(echo(&client).await.unwrap(), "hi");
    client.close().await;
}

#[tokio::test]
async fn oauth_profiles_follow_the_token_rules() {
    let mut config = McpServerConfig::http("http://mcp.example.com/mcp");
    config.oauth = Some(OAuthProfile::default());
    let error = McpClient::new(name("x"), config.clone(), Arc::new(options())).unwrap_err();
    assert!(error.to_string().contains("HTTPS"), "{error}");
    config.url = Some("https://mcp.example.com/mcp".into());
    config
        .headers
        .insert("Authorization".into(), "Bearer static".into());
    let error = McpClient::new(name("x"), config, Arc::new(options())).unwrap_err();
    assert!(error.to_string().contains("conflicts"), "{error}");
}
