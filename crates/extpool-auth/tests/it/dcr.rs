//! Direct DCR's registration state machine: pending, retry, identity
//! drift, reset, corrupt state — each wrong state fails closed.

use extpool_auth::login::dcr::{DcrIdentity, Registration, RegistrationState, canonical_resource};
use extpool_auth::{
    AuthContext, AuthError, ClientMode, ClientSettings, CredentialStore, DcrAction, DcrError,
    DcrSettings, Grant, HeadlessAuthorizer, LoginOptions, LoginTarget, OAuthProfile, OAuthSession,
};
use extpool_testkit::oauth::{OAuthServer, OAuthServerOptions};

use crate::support::{self, SERVER};

fn profile(dir: &std::path::Path, principal: &str) -> OAuthProfile {
    OAuthProfile {
        client: ClientSettings {
            mode: ClientMode::Dcr,
            dcr: Some(DcrSettings::default()),
        },
        store: Some(dir.to_owned()),
        principal: Some(principal.into()),
        ..OAuthProfile::default()
    }
}

async fn login(
    server: &OAuthServer,
    store: &CredentialStore,
    profile: &OAuthProfile,
    dcr: DcrAction,
) -> Result<Grant, AuthError> {
    extpool_auth::login(
        LoginTarget {
            server: SERVER,
            url: &server.mcp_url(),
            profile,
        },
        store,
        &HeadlessAuthorizer::default(),
        &LoginOptions {
            dcr,
            ..LoginOptions::default()
        },
    )
    .await
}

fn dcr_kind(result: Result<Grant, AuthError>) -> DcrError {
    match result {
        Err(AuthError::Dcr { kind, .. }) => kind,
        other => panic!("expected a DCR state error, got {other:?}"),
    }
}

fn registration(store: &CredentialStore) -> Registration {
    store.load(SERVER).unwrap().unwrap()
}

#[tokio::test]
async fn an_interrupted_registration_is_retried_only_for_the_same_identity() {
    let server = support::server(OAuthServerOptions::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store(dir.path());
    let alice = profile(dir.path(), "alice");
    // A registration that was sent but never answered.
    store
        .save(
            SERVER,
            &Registration {
                state: RegistrationState::Pending,
                generation: 1,
                identity: DcrIdentity {
                    profile: SERVER.into(),
                    principal: "alice".into(),
                    resource: canonical_resource(&server.mcp_url()),
                    issuer: server.issuer(),
                },
                client_id: None,
                registration_endpoint: format!("{}/register", server.issuer()),
                updated_at: 0,
            },
        )
        .unwrap();
    let plain = dcr_kind(login(&server, &store, &alice, DcrAction::Normal).await);
    assert!(
        plain.to_string().contains("--retry-dcr-registration"),
        "{plain}"
    );
    let reset = dcr_kind(login(&server, &store, &alice, DcrAction::Reset).await);
    assert_eq!(reset, DcrError::NotReady("pending"));
    let bob = profile(dir.path(), "bob");
    let drift = dcr_kind(login(&server, &store, &bob, DcrAction::Retry).await);
    assert!(
        drift.to_string().starts_with("pending-identity-mismatch"),
        "{drift}"
    );
    assert!(matches!(
        drift,
        DcrError::PendingIdentityMismatch {
            field: "principal",
            ..
        }
    ));
    assert_eq!(
        server.counts().registrations,
        0,
        "nothing was sent for a wrong state"
    );
    assert_eq!(
        registration(&store).state,
        RegistrationState::Pending,
        "state unchanged"
    );

    let grant = login(&server, &store, &alice, DcrAction::Retry)
        .await
        .unwrap();
    let ready = registration(&store);
    assert_eq!(
        (ready.state, ready.generation),
        (RegistrationState::Ready, 1)
    );
    assert_eq!(grant.dcr_generation, Some(1));
    assert_eq!(server.counts().registrations, 1);
    let again = dcr_kind(login(&server, &store, &alice, DcrAction::Retry).await);
    assert_eq!(again, DcrError::NotPending("ready"));
}

#[tokio::test]
async fn reset_replaces_a_ready_registration_and_voids_the_old_grant() {
    let server = support::server(OAuthServerOptions::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store(dir.path());
    let alice = profile(dir.path(), "alice");
    let absent = dcr_kind(login(&server, &store, &alice, DcrAction::Reset).await);
    assert_eq!(absent, DcrError::NotReady("absent"));
    let first = login(&server, &store, &alice, DcrAction::Normal)
        .await
        .unwrap();
    let second = login(&server, &store, &alice, DcrAction::Reset)
        .await
        .unwrap();
    assert_eq!(
        server.counts().registrations,
        2,
        "a new client; the old one is not revoked"
    );
    assert_eq!(
        (first.dcr_generation, second.dcr_generation),
        (Some(1), Some(2))
    );
    assert_ne!(first.client_id, second.client_id);
    // The generation-1 grant is void under generation 2.
    store.save(SERVER, &first).unwrap();
    let session = OAuthSession::new(
        SERVER,
        server.mcp_url(),
        alice.clone(),
        AuthContext::default(),
    )
    .unwrap();
    let error = session.access_token().await.unwrap_err();
    assert!(error.to_string().contains("login-required"), "{error}");
    // Reset needs a valid grant.
    let expired = dcr_kind(login(&server, &store, &alice, DcrAction::Reset).await);
    assert_eq!(expired, DcrError::NotReady("ready without a valid grant"));
}

#[tokio::test]
async fn a_corrupt_registration_fails_closed() {
    let server = support::server(OAuthServerOptions::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store(dir.path());
    let alice = profile(dir.path(), "alice");
    std::fs::write(store.record_path(SERVER, "registration"), b"garbage").unwrap();
    for action in [DcrAction::Normal, DcrAction::Retry, DcrAction::Reset] {
        let kind = dcr_kind(login(&server, &store, &alice, action).await);
        assert!(matches!(kind, DcrError::Corrupt(_)), "{action:?}: {kind}");
    }
    assert_eq!(server.counts().registrations, 0);
    assert_eq!(
        std::fs::read(store.record_path(SERVER, "registration")).unwrap(),
        b"garbage"
    );
}
