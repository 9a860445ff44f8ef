//! Logins against the local authorization server: headless, through the
//! loopback redirect with a "browser", and with a pasted redirect URL.

use std::sync::Arc;

use extpool_auth::{
    AuthContext, Grant, LoginOptions, LoginPrompt, LoginTarget, LoopbackAuthorizer, OAuthProfile,
    OAuthSession,
};
use extpool_testkit::oauth::OAuthServerOptions;

use crate::logs;
use crate::support::{self, SERVER};

fn param<'a>(request: &'a [(String, String)], key: &str) -> Option<&'a str> {
    request
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn headless_login_discovers_registers_and_stores() {
    logs::captured();
    let server = support::server(OAuthServerOptions::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    let url = server.mcp_url();
    let grant = support::login(&url, &store, &OAuthProfile::default()).await;
    let counts = server.counts();
    assert_eq!(
        (
            counts.registrations,
            counts.authorizations,
            counts.code_exchanges
        ),
        (1, 1, 1)
    );
    let requests = server.authorization_requests();
    let request = &requests[0];
    assert_eq!(param(request, "response_type"), Some("code"));
    assert_eq!(param(request, "code_challenge_method"), Some("S256"));
    assert!(param(request, "code_challenge").is_some_and(|c| c.len() >= 43));
    assert_eq!(param(request, "resource"), Some(url.as_str()));
    assert!(param(request, "state").is_some());
    assert_eq!(grant.issuer.as_deref(), Some(server.issuer().as_str()));
    assert_eq!(grant.resource, url);
    assert!(grant.registered_client && grant.refresh_token.is_some());
    assert_eq!(
        store.load::<Grant>(SERVER).expect("load"),
        Some(grant.clone())
    );
    // The next login reuses the registered client.
    support::login(&url, &store, &OAuthProfile::default()).await;
    assert_eq!(server.counts().registrations, 1);
}

#[tokio::test]
async fn preregistered_confidential_client_logs_in_and_refreshes() {
    let server = support::server(OAuthServerOptions {
        clients: vec![("pre-client".into(), Some("pre-secret-VALUE".into()))],
        registration: false,
        ..OAuthServerOptions::default()
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    let profile = OAuthProfile {
        client_id: Some("pre-client".into()),
        client_secret: Some("pre-secret-VALUE".into()),
        scopes: vec!["mcp:read".into()],
        store: Some(dir.path().to_owned()),
        ..OAuthProfile::default()
    };
    let url = server.mcp_url();
    let grant = support::login(&url, &store, &profile).await;
    assert_eq!(grant.client_id, "pre-client");
    assert_eq!(
        grant.auth_method,
        extpool_auth::TokenAuthMethod::ClientSecretBasic
    );
    assert_eq!(server.counts().registrations, 0);
    let requests = server.authorization_requests();
    assert_eq!(param(&requests[0], "scope"), Some("mcp:read"));
    support::expire(&store);
    let session =
        OAuthSession::new(SERVER, &url, profile, AuthContext::default()).expect("session");
    session
        .access_token()
        .await
        .expect("refresh with the client secret");
    assert_eq!(server.counts().refreshes, 1);
}

#[tokio::test]
async fn browser_login_through_the_loopback_redirect() {
    let server = support::server(OAuthServerOptions::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    let prompts = Arc::new(parking_lot_free::Log::default());
    let seen = prompts.clone();
    // The "browser": follows every redirect, like a user who clicks approve.
    let authorizer = LoopbackAuthorizer::new(true, Arc::new(move |p| seen.push(p))).with_opener(
        Arc::new(|url: &str| {
            let url = url.to_owned();
            tokio::spawn(async move {
                let browser = reqwest::Client::new();
                if let Err(e) = browser.get(&url).send().await {
                    tracing::warn!("test browser: {e}");
                }
            });
            Ok(())
        }),
    );
    let url = server.mcp_url();
    let grant = extpool_auth::login(
        LoginTarget {
            server: SERVER,
            url: &url,
            profile: &OAuthProfile::default(),
        },
        &store,
        &authorizer,
        &LoginOptions::default(),
    )
    .await
    .expect("login");
    assert!(matches!(
        prompts.all().first(),
        Some(LoginPrompt::Visit { paste: false, .. })
    ));
    let redirect = param(&server.authorization_requests()[0], "redirect_uri")
        .expect("redirect_uri")
        .to_owned();
    assert!(
        redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"),
        "{redirect}"
    );
    assert_eq!(store.load::<Grant>(SERVER).expect("load"), Some(grant));
}

#[tokio::test]
async fn pasted_redirect_url_completes_a_no_browser_login() {
    let server = support::server(OAuthServerOptions::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    let (paste_tx, paste_rx) = tokio::sync::mpsc::channel(1);
    // The user opens the URL elsewhere and pastes the address the browser
    // ended on; nothing reaches the loopback listener.
    let prompt = Arc::new(move |p: LoginPrompt| {
        if let LoginPrompt::Visit { url, paste } = p {
            assert!(paste);
            let tx = paste_tx.clone();
            tokio::spawn(async move {
                let browser = extpool_auth::oauth_http::oauth_client();
                let response = browser.get(&url).send().await.expect("authorize");
                let location = response.headers()["location"]
                    .to_str()
                    .expect("location")
                    .to_owned();
                tx.send(format!("  {location}  ")).await.expect("paste");
            });
        }
    });
    let authorizer = LoopbackAuthorizer::new(false, prompt).with_paste(paste_rx);
    let url = server.mcp_url();
    extpool_auth::login(
        LoginTarget {
            server: SERVER,
            url: &url,
            profile: &OAuthProfile::default(),
        },
        &store,
        &authorizer,
        &LoginOptions::default(),
    )
    .await
    .expect("login");
    assert_eq!(server.counts().code_exchanges, 1);
    assert!(store.load::<Grant>(SERVER).expect("load").is_some());
}

#[tokio::test]
async fn no_token_code_or_secret_reaches_logs_errors_or_debug() {
    logs::captured();
    let server = support::server(OAuthServerOptions {
        clients: vec![("conf-client".into(), Some("conf-secret-VALUE".into()))],
        ..OAuthServerOptions::default()
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = support::store(dir.path());
    let url = server.mcp_url();
    let profile = OAuthProfile {
        client_id: Some("conf-client".into()),
        client_secret: Some("conf-secret-VALUE".into()),
        store: Some(dir.path().to_owned()),
        ..OAuthProfile::default()
    };
    let grant = support::login(&url, &store, &profile).await;
    support::expire(&store);
    let session =
        OAuthSession::new(SERVER, &url, profile.clone(), AuthContext::default()).expect("session");
    session.access_token().await.expect("refresh");
    server.revoke_refresh_tokens();
    support::expire(&store);
    let session =
        OAuthSession::new(SERVER, &url, profile.clone(), AuthContext::default()).expect("session");
    let error = session.access_token().await.expect_err("refresh rejected");
    assert!(error.is_login_required(), "{error}");
    assert!(
        error.to_string().contains("run: extpool mcp login demo"),
        "{error}"
    );
    let mut secrets = server.issued_secrets();
    assert!(
        secrets.len() >= 5,
        "codes, tokens and the secret were issued: {}",
        secrets.len()
    );
    secrets.push("conf-secret-VALUE".into());
    let texts = [
        logs::captured(),
        error.to_string(),
        format!("{error:?}"),
        format!("{grant:?}"),
        format!("{session:?}"),
        format!("{profile:?}"),
    ];
    for secret in &secrets {
        for text in &texts {
            assert!(
                !text.contains(secret.as_str()),
                "a secret leaked into: {text}"
            );
        }
    }
}

/// A tiny shared log of prompts (no extra dependency).
mod parking_lot_free {
    use std::sync::Mutex;

    #[derive(Default)]
    pub struct Log(Mutex<Vec<extpool_auth::LoginPrompt>>);

    impl Log {
        pub fn push(&self, p: extpool_auth::LoginPrompt) {
            if let Ok(mut v) = self.0.lock() {
                v.push(p);
            }
        }
        pub fn all(&self) -> Vec<extpool_auth::LoginPrompt> {
            self.0.lock().map(|v| v.clone()).unwrap_or_default()
        }
    }
}
