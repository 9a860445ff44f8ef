//! Each caller's own login to a per-user server (`oauth.per_user`),
//! through the gateway:
//!
//! - `POST /v1/login/{server}` (the caller's token) starts the login —
//!   discovery, registration, PKCE, `resource=` — and answers the URL of
//!   the gateway's login page for the caller's browser; the identity
//!   provider's redirect comes back to the gateway itself,
//!   `/oauth/callback`;
//! - the login page and the callback are the browser's side
//!   ([`browser`]): the page says who will be logged in, and its button
//!   binds the login to the browser that pressed it (a cookie) before
//!   sending it on to the provider; only that browser's return completes
//!   the login (OAuth 2.1 §7.14, RFC 9700 §4.7: a login started by one
//!   caller is never completed by another's browser, which would make
//!   the first act as the second);
//! - `GET /v1/login/{server}` says how the caller's login stands
//!   (`?wait_ms=` waits for it to change, a watch without polling).
//!
//! A caller has one login per server at a time — asking again answers
//! the one waiting, so no second client is registered upstream — and at
//! most [`MAX_PENDING_PER_CALLER`] waiting at once; every caller
//! together at most [`MAX_PENDING`] (both kept by [`crate::held::logins`]). Both bounds hold before discovery
//! and registration begin.
//!
//! The caller's sessions then reach the server with its grant: new
//! sessions at once, open ones on their next refresh (or when the failed
//! server is listed again). A login never touches another caller's grant.
//!
//! [`MAX_PENDING_PER_CALLER`]: crate::held::logins::MAX_PENDING_PER_CALLER
//! [`MAX_PENDING`]: crate::held::logins::MAX_PENDING

mod browser;

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use extpool_auth::login::{AuthorizeError, Authorizer, PendingRedirect};
use extpool_host::core::Principal;
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::{oneshot, watch};

pub(crate) use browser::{callback, confirm, confirm_page};

pub(crate) use crate::held::logins::{Key, LoginStatus, Reservation, Reserved, Waiting};
use crate::shared::Shared;

pub(crate) use crate::paths::{CALLBACK_PATH, LOGIN_PAGE_PATH};
/// How long a login waits for its browser to come back.
const LOGIN_PATIENCE: Duration = Duration::from_secs(600);
/// Longest wait of `GET /v1/login/{server}?wait_ms=`.
const WAIT_MAX_MS: u64 = 60_000;
/// How long a second start of a login waits for the first one's URL.
const START_PATIENCE: Duration = Duration::from_secs(60);

/// The authorizer of one login: the redirect is the gateway's own
/// callback; the login page's URL goes to whoever asked.
struct GatewayAuthorizer {
    shared: Arc<Shared>,
    key: Key,
    who: String,
    base: String,
    url: Mutex<Option<oneshot::Sender<String>>>,
}

struct GatewayRedirect {
    shared: Arc<Shared>,
    key: Key,
    who: String,
    base: String,
    url: Option<oneshot::Sender<String>>,
}

#[async_trait::async_trait]
impl Authorizer for GatewayAuthorizer {
    async fn start(&self) -> Result<Box<dyn PendingRedirect>, AuthorizeError> {
        Ok(Box::new(GatewayRedirect {
            shared: self.shared.clone(),
            key: self.key.clone(),
            who: self.who.clone(),
            base: self.base.clone(),
            url: self.url.lock().take(),
        }))
    }
}

/// The `state` parameter of a URL's query.
fn state_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}

/// The gateway's login page of the login `state`, at `base`.
fn login_page_url(base: &str, state: &str) -> String {
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("state", state)
        .finish();
    format!("{base}{LOGIN_PAGE_PATH}?{query}")
}

#[async_trait::async_trait]
impl PendingRedirect for GatewayRedirect {
    fn redirect_uri(&self) -> String {
        format!("{}{CALLBACK_PATH}", self.base)
    }

    async fn wait(mut self: Box<Self>, authorization_url: &str) -> Result<String, AuthorizeError> {
        let state = state_of(authorization_url)
            .ok_or_else(|| AuthorizeError("the authorization URL carries no state".into()))?;
        let (tx, rx) = oneshot::channel();
        self.shared.access.logins.wait(
            state.clone(),
            Waiting {
                key: self.key.clone(),
                who: self.who.clone(),
                authorization_url: authorization_url.to_owned(),
                secure: self.base.starts_with("https://"),
                bound: None,
                redirect: tx,
            },
        );
        if let Some(url) = self.url.take() {
            let _ = url.send(login_page_url(&self.base, &state));
        }
        let came = tokio::time::timeout(LOGIN_PATIENCE, rx).await;
        self.shared.access.logins.take(&state);
        match came {
            Ok(Ok(Ok(redirect))) => Ok(redirect),
            Ok(Ok(Err(why))) => Err(AuthorizeError(why)),
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
    /// The gateway's login page for it.
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
    /// Too many logins wait already (the refusal, in words).
    Busy(String),
    /// Discovery or registration failed.
    Failed(String),
}

/// Begins `principal`'s login to per-user server `server`, the browser
/// coming to the gateway at `base` — or answers the login of theirs that
/// is already starting or waiting.
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
    let key: Key = (principal.owner(), server.to_owned());
    let reservation = match shared.access.logins.reserve(&key) {
        Reserved::New(reservation) => reservation,
        Reserved::Existing => return waiting_one(shared, &key).await,
        Reserved::Full(why) => return Err(BeginError::Busy(why)),
    };
    let (url_tx, url_rx) = oneshot::channel();
    let authorizer = GatewayAuthorizer {
        shared: shared.clone(),
        key: key.clone(),
        who: principal.label(),
        base: base.to_owned(),
        url: Mutex::new(Some(url_tx)),
    };
    let running = tokio::spawn(run(
        reservation,
        authorizer,
        server.to_owned(),
        url,
        profile,
    ));
    match tokio::time::timeout(START_PATIENCE, url_rx).await {
        Ok(Ok(authorization_url)) => {
            shared.access.logins.set(
                &key,
                LoginStatus::Pending {
                    authorization_url: authorization_url.clone(),
                },
            );
            let mut status = shared.access.logins.status_of(&key);
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

/// Runs the login of `reservation` to `server` at `url` (whose OAuth
/// profile is `profile`) through `authorizer`, and ends it with its
/// outcome.
async fn run(
    reservation: Reservation,
    authorizer: GatewayAuthorizer,
    server: String,
    url: String,
    profile: extpool_auth::OAuthProfile,
) -> Result<(), String> {
    let store_dir = extpool_auth::AuthContext::default().store_dir_for(&profile);
    let store = match extpool_auth::CredentialStore::open(store_dir) {
        Ok(store) => store,
        Err(e) => {
            let error = e.to_string();
            reservation.finish(LoginStatus::Failed {
                error: error.clone(),
            });
            return Err(error);
        }
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
    reservation.finish(status);
    outcome.map(|_| ()).map_err(|e| e.to_string())
}

/// The caller's login of `key` that is starting or waiting already, once
/// it has its URL.
async fn waiting_one(shared: &Arc<Shared>, key: &Key) -> Result<Begun, BeginError> {
    let mut status = shared.access.logins.status_of(key);
    let found = tokio::time::timeout(START_PATIENCE, async {
        loop {
            let now = status.borrow_and_update().clone();
            match now {
                LoginStatus::Pending { authorization_url } => return Ok(authorization_url),
                LoginStatus::Failed { error } => return Err(error),
                LoginStatus::Done => {
                    return Err(format!(
                        "your login to {} finished just now; start another to log in anew",
                        key.1
                    ));
                }
                LoginStatus::None => {}
            }
            if status.changed().await.is_err() {
                return Err("the login was given up".to_owned());
            }
        }
    })
    .await;
    match found {
        Ok(Ok(authorization_url)) => Ok(Begun {
            state: state_of(&authorization_url).unwrap_or_default(),
            authorization_url,
            status,
        }),
        Ok(Err(e)) => Err(BeginError::Failed(e)),
        Err(_) => Err(BeginError::Failed(
            "the login could not reach the server's authorization server".to_owned(),
        )),
    }
}

/// `POST /v1/login/{server}`: starts the caller's login (or answers the
/// one waiting); answers the login page's URL for its browser.
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
        Err(BeginError::Busy(why)) => error(StatusCode::TOO_MANY_REQUESTS, why),
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
    let mut status = shared.access.logins.status_of(&key);
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
        let page = login_page_url("http://127.0.0.1:9", "a/b+c");
        assert_eq!(page, "http://127.0.0.1:9/oauth/login?state=a%2Fb%2Bc");
        assert_eq!(state_of(&page).as_deref(), Some("a/b+c"));
    }
}
