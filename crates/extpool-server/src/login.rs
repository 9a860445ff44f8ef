//! Each caller's own login to a per-user server (`oauth.per_user`),
//! through the gateway:
//!
//! - `POST /v1/login/{server}` (the caller's token) starts the login —
//!   discovery, registration, PKCE, `resource=` — and answers the
//!   authorization URL for the caller's browser; the redirect comes back
//!   to the gateway itself, `/oauth/callback`;
//! - `GET /oauth/callback` (no token: a browser brings none; the
//!   unguessable `state` ties it to the login that sent it) finishes the
//!   login: the code is exchanged and the grant stored encrypted as that
//!   caller's own record ([`extpool_auth::OAuthProfile::record_name`]);
//! - `GET /v1/login/{server}` says how the caller's login stands
//!   (`?wait_ms=` waits for it to change, a watch without polling).
//!
//! The caller's sessions then reach the server with its grant: new
//! sessions at once, open ones on their next refresh (or when the failed
//! server is listed again). A login never touches another caller's grant.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Extension, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use extpool_auth::login::{AuthorizeError, Authorizer, PendingRedirect};
use extpool_host::core::Principal;
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::{oneshot, watch};

use crate::gateway::Shared;

/// The path the identity provider sends the browser back to.
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// How long a login waits for its browser to come back.
const LOGIN_PATIENCE: Duration = Duration::from_secs(600);
/// Most logins waiting for their browser at once (every caller together).
const MAX_PENDING: usize = 256;
/// Most (caller, server) login statuses kept; past it, the finished ones
/// are forgotten (a caller asking again is told `none`).
const MAX_STATUSES: usize = 4096;
/// Longest wait of `GET /v1/login/{server}?wait_ms=`.
const WAIT_MAX_MS: u64 = 60_000;

/// How one caller's login to one server stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub(crate) enum LoginStatus {
    /// No login was started here.
    None,
    /// Waiting for the browser at `authorization_url`.
    Pending {
        /// Where the caller's browser goes.
        authorization_url: String,
    },
    /// The grant is stored.
    Done,
    /// It failed, and why.
    Failed {
        /// The error, whole.
        error: String,
    },
}

/// The gateway's logins in progress.
#[derive(Default)]
pub(crate) struct Logins {
    /// Redirects awaited, by their `state`.
    waiting: Mutex<HashMap<String, oneshot::Sender<String>>>,
    /// Each (caller, server)'s login, as it changes.
    status: Mutex<HashMap<(String, String), watch::Sender<LoginStatus>>>,
}

impl Logins {
    /// The status of `key`, made `none` when there is none (within the
    /// bound).
    fn entry<T>(
        &self,
        key: &(String, String),
        with: impl FnOnce(&watch::Sender<LoginStatus>) -> T,
    ) -> T {
        let mut status = self.status.lock();
        if !status.contains_key(key) && status.len() >= MAX_STATUSES {
            status.retain(|_, s| matches!(*s.borrow(), LoginStatus::Pending { .. }));
        }
        let sender = status
            .entry(key.clone())
            .or_insert_with(|| watch::Sender::new(LoginStatus::None));
        with(sender)
    }

    fn status_of(&self, key: &(String, String)) -> watch::Receiver<LoginStatus> {
        self.entry(key, watch::Sender::subscribe)
    }

    fn set(&self, key: &(String, String), status: LoginStatus) {
        self.entry(key, |sender| {
            sender.send_replace(status);
        });
    }
}

/// The authorizer of one login: the redirect is the gateway's own
/// callback, the authorization URL goes to whoever asked.
struct GatewayAuthorizer {
    shared: Arc<Shared>,
    redirect_uri: String,
    url: Mutex<Option<oneshot::Sender<String>>>,
}

struct GatewayRedirect {
    shared: Arc<Shared>,
    redirect_uri: String,
    url: Option<oneshot::Sender<String>>,
}

#[async_trait::async_trait]
impl Authorizer for GatewayAuthorizer {
    async fn start(&self) -> Result<Box<dyn PendingRedirect>, AuthorizeError> {
        Ok(Box::new(GatewayRedirect {
            shared: self.shared.clone(),
            redirect_uri: self.redirect_uri.clone(),
            url: self.url.lock().take(),
        }))
    }
}

/// The `state` parameter of an authorization URL.
fn state_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}

#[async_trait::async_trait]
impl PendingRedirect for GatewayRedirect {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    async fn wait(mut self: Box<Self>, authorization_url: &str) -> Result<String, AuthorizeError> {
        let state = state_of(authorization_url)
            .ok_or_else(|| AuthorizeError("the authorization URL carries no state".into()))?;
        let (tx, rx) = oneshot::channel();
        {
            let mut waiting = self.shared.logins.waiting.lock();
            waiting.retain(|_, t| !t.is_closed());
            if waiting.len() >= MAX_PENDING {
                return Err(AuthorizeError(format!(
                    "{MAX_PENDING} logins already wait for their browsers; try again later"
                )));
            }
            waiting.insert(state.clone(), tx);
        }
        if let Some(url) = self.url.take() {
            let _ = url.send(authorization_url.to_owned());
        }
        let came = tokio::time::timeout(LOGIN_PATIENCE, rx).await;
        self.shared.logins.waiting.lock().remove(&state);
        match came {
            Ok(Ok(redirect)) => Ok(redirect),
            Ok(Err(_)) => Err(AuthorizeError("the login was given up".into())),
            Err(_) => Err(AuthorizeError(format!(
                "the browser did not come back within {} s",
                LOGIN_PATIENCE.as_secs()
            ))),
        }
    }
}

fn error(status: StatusCode, message: impl std::fmt::Display) -> Response {
    (status, Json(json!({"error": message.to_string()}))).into_response()
}

/// A login started: where the caller's browser goes, and its status as
/// it changes.
pub(crate) struct Begun {
    /// The authorization URL.
    pub authorization_url: String,
    /// The `state` that ties the browser's return to this login.
    pub state: String,
    /// The login's status, as it changes.
    pub status: watch::Receiver<LoginStatus>,
}

/// Why a login could not begin.
pub(crate) enum BeginError {
    /// No per-user server of that name.
    NotPerUser,
    /// Discovery or registration failed.
    Failed(String),
}

/// Begins `principal`'s login to per-user server `server`, the redirect
/// coming back to the gateway at `base`.
pub(crate) async fn begin(
    shared: &Arc<Shared>,
    principal: &Principal,
    server: &str,
    base: &str,
) -> Result<Begun, BeginError> {
    let owner = crate::identity::owner_of(principal);
    let Some((url, profile)) = shared.host.caller_login(server, owner.as_deref()) else {
        return Err(BeginError::NotPerUser);
    };
    let key = (principal.owner(), server.to_owned());
    let (url_tx, url_rx) = oneshot::channel();
    let authorizer = GatewayAuthorizer {
        shared: shared.clone(),
        redirect_uri: format!("{base}{CALLBACK_PATH}"),
        url: Mutex::new(Some(url_tx)),
    };
    let store_dir = extpool_auth::AuthContext::default().store_dir_for(&profile);
    let task = {
        let shared = shared.clone();
        let key = key.clone();
        let server = server.to_owned();
        async move {
            let store = match extpool_auth::CredentialStore::open(store_dir) {
                Ok(store) => store,
                Err(e) => return Err(e.to_string()),
            };
            let target = extpool_auth::LoginTarget {
                server: &server,
                url: &url,
                profile: &profile,
            };
            let options = extpool_auth::LoginOptions::default();
            let outcome = extpool_auth::login(target, &store, &authorizer, &options).await;
            let status = match &outcome {
                Ok(_) => LoginStatus::Done,
                Err(e) => LoginStatus::Failed {
                    error: e.to_string(),
                },
            };
            shared.logins.set(&key, status);
            outcome.map(|_| ()).map_err(|e| e.to_string())
        }
    };
    let running = tokio::spawn(task);
    match tokio::time::timeout(Duration::from_secs(60), url_rx).await {
        Ok(Ok(authorization_url)) => {
            shared.logins.set(
                &key,
                LoginStatus::Pending {
                    authorization_url: authorization_url.clone(),
                },
            );
            let mut status = shared.logins.status_of(&key);
            status.borrow_and_update();
            tracing::info!(principal = %principal.label(), server = %key.1, "a caller's login started");
            Ok(Begun {
                state: state_of(&authorization_url).unwrap_or_default(),
                authorization_url,
                status,
            })
        }
        // The login ended before it had a URL: discovery or registration
        // failed, and the task says why.
        _ => Err(BeginError::Failed(match running.await {
            Ok(Err(e)) => e,
            _ => "the login could not reach the server's authorization server".to_owned(),
        })),
    }
}

/// `POST /v1/login/{server}`: starts the caller's login; answers the
/// authorization URL for its browser.
pub(crate) async fn start(
    State(shared): State<Arc<Shared>>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(server): Path<String>,
    headers: HeaderMap,
) -> Response {
    match begin(
        &shared,
        &principal,
        &server,
        &crate::identity::base_url(&headers),
    )
    .await
    {
        Ok(begun) => Json(json!({
            "status": "pending",
            "authorization_url": begun.authorization_url,
        }))
        .into_response(),
        Err(BeginError::NotPerUser) => error(
            StatusCode::NOT_FOUND,
            format!(
                "no server {:?} here has a login of each caller's own (oauth: {{per_user: true}})",
                extpool_host::core::text::shown_name(&server)
            ),
        ),
        Err(BeginError::Failed(e)) => error(StatusCode::BAD_GATEWAY, e),
    }
}

#[derive(serde::Deserialize)]
pub(crate) struct WaitQuery {
    wait_ms: Option<u64>,
}

/// `GET /v1/login/{server}`: how the caller's login stands; with
/// `?wait_ms=`, once it changes (or the wait is over).
pub(crate) async fn status(
    State(shared): State<Arc<Shared>>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(server): Path<String>,
    query: Result<Query<WaitQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(query)) = query else {
        return error(
            StatusCode::BAD_REQUEST,
            "the query string is wait_ms=MILLISECONDS",
        );
    };
    let key = (principal.owner(), server);
    let mut status = shared.logins.status_of(&key);
    let now = status.borrow_and_update().clone();
    let wait = query.wait_ms.unwrap_or(0).min(WAIT_MAX_MS);
    if wait == 0 || !matches!(now, LoginStatus::Pending { .. }) {
        return Json(now).into_response();
    }
    let changed = tokio::time::timeout(Duration::from_millis(wait), status.changed()).await;
    let now = match changed {
        Ok(Ok(())) => status.borrow().clone(),
        _ => now,
    };
    Json(now).into_response()
}

/// `GET /oauth/callback`: the caller's browser back from the identity
/// provider; its `state` names the login it finishes.
pub(crate) async fn callback(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let uri = request.uri().clone();
    let state = uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
    });
    let waiting = state.and_then(|s| shared.logins.waiting.lock().remove(&s));
    let Some(waiting) = waiting else {
        return page(
            StatusCode::BAD_REQUEST,
            "This login is unknown or already finished. Start it again.",
        );
    };
    let redirect = format!("{}{}", crate::identity::base_url(request.headers()), uri);
    if waiting.send(redirect).is_err() {
        return page(StatusCode::GONE, "This login was given up. Start it again.");
    }
    page(
        StatusCode::OK,
        "Logged in. You can close this tab and go back to your agent.",
    )
}

/// A small page for the browser (no outside text in it).
fn page(status: StatusCode, message: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        format!("<!doctype html><meta charset=utf-8><title>extpool</title><p>{message}</p>\n"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_read_from_the_authorization_url() {
        assert_eq!(
            state_of("https://as.example/authorize?client_id=c&state=abc%2F1&x=y"),
            Some("abc/1".to_owned())
        );
        assert_eq!(state_of("https://as.example/authorize?client_id=c"), None);
        assert_eq!(state_of("not a url"), None);
    }

    #[test]
    fn the_statuses_stay_bounded_and_keep_the_logins_still_waiting() {
        let logins = Logins::default();
        let key = |i: usize| (format!("caller-{i}"), "server".to_owned());
        let waiting = LoginStatus::Pending {
            authorization_url: "https://as.example/authorize".to_owned(),
        };
        logins.set(&key(0), waiting.clone());
        for i in 1..MAX_STATUSES * 2 {
            logins.set(&key(i), LoginStatus::Done);
            assert!(logins.status.lock().len() <= MAX_STATUSES);
        }
        assert_eq!(*logins.status_of(&key(0)).borrow(), waiting);
        assert_eq!(
            *logins.status_of(&key(MAX_STATUSES * 2 - 1)).borrow(),
            LoginStatus::Done
        );
    }
}
