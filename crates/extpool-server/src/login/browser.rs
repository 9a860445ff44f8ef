//! The browser's side of a caller's login ([`super`]): the gateway's login
//! page and the identity provider's redirect back.
//!
//! - `GET /oauth/login?state=…` shows who will be logged in (the caller
//!   who started the login), to which server, at which provider, and a
//!   button; the link can reach someone else (a caller may send it to
//!   anyone), so the page says plainly that whoever started the login
//!   will act as the one who goes on.
//! - `POST /oauth/login` (the button; a browser's form, so it carries the
//!   gateway's own `Origin`, which the guard checks) gives this browser a
//!   cookie of its own for this login — `HttpOnly`, `SameSite=Lax`, only
//!   sent to the callback, `Secure` over https — and sends it on to the
//!   provider. Pressing it again (another tab, another browser) binds the
//!   login to the browser that pressed it last.
//! - `GET /oauth/callback` completes the login only when the browser
//!   brings that cookie: a provider's redirect reaching another browser
//!   (the link to the provider sent to someone) ends the login, failed,
//!   and completes nothing. Its page says "Logged in" only once the grant
//!   is stored, and otherwise why not; what the provider sent is shown as
//!   text, never as markup.
//!
//! Every page here is answered without a token (a browser brings none),
//! framed by no one, cached by no one, and sends no referrer.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use tokio::sync::watch;

use super::{LoginStatus, Waiting};
use crate::shared::Shared;

/// How long the callback's page waits for the code exchange to end.
const OUTCOME_PATIENCE: Duration = Duration::from_secs(30);
/// The names of the login cookies start so (then a digest of the state).
const COOKIE_PREFIX: &str = "extpool-login-";
/// Random bytes in a login cookie's value.
const COOKIE_BYTES: usize = 32;
/// Longest form body of the login page's button.
const MAX_FORM_BYTES: usize = 8 * 1024;

/// `text` as HTML text: `&`, `<`, `>`, `"` and `'` escaped, and control
/// characters shown as `\u{…}` (a provider's words or a claim's value
/// are shown, never interpreted).
fn html_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The name of the cookie of the login `state`.
fn cookie_name(state: &str) -> String {
    let digest = hex::encode(Sha256::digest(state.as_bytes()));
    format!("{COOKIE_PREFIX}{}", &digest[..16])
}

/// The value of cookie `name` among `headers`' `Cookie` headers.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.trim())
}

/// Whether `value` is the cookie whose digest is `bound` (compared in
/// constant time).
fn binds(value: &str, bound: &[u8; 32]) -> bool {
    let digest: [u8; 32] = Sha256::digest(value.as_bytes()).into();
    digest
        .iter()
        .zip(bound.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// A page for the browser: `body` is HTML made here (outside text in it
/// went through [`html_text`]); `form_to` is where its form may lead.
fn page(status: StatusCode, title: &str, body: &str, form_to: Option<&str>) -> Response {
    let mut response = (
        status,
        format!(
            "<!doctype html><meta charset=utf-8><meta name=viewport content=\"width=device-width\"><title>extpool: {title}</title><h1>{title}</h1>{body}\n"
        ),
    )
        .into_response();
    let form_action = match form_to {
        Some(to) => format!("'self' {to}"),
        None => "'none'".to_owned(),
    };
    let csp = format!("default-src 'none'; frame-ancestors 'none'; form-action {form_action}");
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if let Ok(value) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

fn unknown() -> Response {
    page(
        StatusCode::BAD_REQUEST,
        "Unknown login",
        "<p>This login is unknown or already finished. Start it again from your agent.</p>",
        None,
    )
}

/// The `state` of a query string or form body.
fn state_in(encoded: &[u8]) -> Option<String> {
    url::form_urlencoded::parse(encoded)
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}

/// The origin (`scheme://host[:port]`) of `url`, for the page's policy.
fn origin_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
        .filter(|o| o != "null")
}

/// `GET /oauth/login?state=…`: who will be logged in, and the button.
pub(crate) async fn confirm_page(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let state = request
        .uri()
        .query()
        .and_then(|q| state_in(q.as_bytes()))
        .unwrap_or_default();
    let shown = shared.access.logins.with_waiting(&state, |w| {
        (
            w.who.clone(),
            w.key.1.clone(),
            origin_of(&w.authorization_url).unwrap_or_default(),
        )
    });
    let Some((who, server, provider)) = shown else {
        return unknown();
    };
    let (who, server, shown_provider) = (html_text(&who), html_text(&server), html_text(&provider));
    let body = format!(
        "<p>The extpool caller <strong>{who}</strong> started a login to the server <strong>{server}</strong> with an account at <strong>{shown_provider}</strong>.</p>\
<p>Go on only if you are <strong>{who}</strong> and started this login yourself just now: whoever started it will reach <strong>{server}</strong> as the account you sign in with.</p>\
<form method=post action=\"{path}\"><input type=hidden name=state value=\"{state}\"><button>Continue to {shown_provider}</button></form>",
        path = super::LOGIN_PAGE_PATH,
        state = html_text(&state),
    );
    page(
        StatusCode::OK,
        &format!("Log in to {server}"),
        &body,
        Some(&provider),
    )
}

/// `POST /oauth/login` (the page's button): binds the login to this
/// browser and sends it to the identity provider.
pub(crate) async fn confirm(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    // A browser's form sends its page's origin (checked by the guard): a
    // request without one is no press of the gateway's own button.
    if request.headers().get(header::ORIGIN).is_none() {
        return page(
            StatusCode::FORBIDDEN,
            "Not from the login page",
            "<p>A login goes on only from the gateway's login page, in a browser.</p>",
            None,
        );
    }
    let body = match axum::body::to_bytes(request.into_body(), MAX_FORM_BYTES).await {
        Ok(body) => body,
        Err(_) => return unknown(),
    };
    let state = state_in(&body).unwrap_or_default();
    let mut secret = [0u8; COOKIE_BYTES];
    if getrandom::fill(&mut secret).is_err() {
        return page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Try again",
            "<p>The gateway has no randomness for the login right now; try again.</p>",
            None,
        );
    }
    let value = hex::encode(secret);
    let bound = shared.access.logins.with_waiting(&state, |w| {
        w.bound = Some(Sha256::digest(value.as_bytes()).into());
        (w.authorization_url.clone(), w.secure)
    });
    let Some((authorization_url, secure)) = bound else {
        return unknown();
    };
    let cookie = format!(
        "{}={value}; Path={}; Max-Age={}; HttpOnly; SameSite=Lax{}",
        cookie_name(&state),
        super::CALLBACK_PATH,
        super::LOGIN_PATIENCE.as_secs(),
        if secure { "; Secure" } else { "" }
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    let (Ok(location), Ok(cookie)) = (
        HeaderValue::from_str(&authorization_url),
        HeaderValue::from_str(&cookie),
    ) else {
        return unknown();
    };
    headers.insert(header::LOCATION, location);
    headers.insert(header::SET_COOKIE, cookie);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// `GET /oauth/callback`: the browser back from the identity provider;
/// its `state` names the login, its cookie proves it is the browser that
/// went there from the login page.
pub(crate) async fn callback(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let uri = request.uri().clone();
    let state = uri
        .query()
        .and_then(|q| state_in(q.as_bytes()))
        .unwrap_or_default();
    let name = cookie_name(&state);
    let presented = cookie(request.headers(), &name).map(str::to_owned);
    let Some(waiting) = shared.access.logins.take(&state) else {
        return unknown();
    };
    let Waiting {
        key,
        bound,
        redirect,
        ..
    } = waiting;
    let bound_here = matches!((&presented, &bound), (Some(v), Some(b)) if binds(v, b));
    if !bound_here {
        let _ = redirect.send(Err(
            "the browser that came back from the identity provider is not the one that went there from the gateway's login page; nothing was stored (start the login again and open its link in your own browser)"
                .to_owned(),
        ));
        tracing::warn!(server = %key.1, "a login's redirect came back to another browser; the login was ended");
        return page(
            StatusCode::FORBIDDEN,
            "Not logged in",
            "<p>This browser did not go to the identity provider from this login's page at the gateway, so the login was not completed: its starter would have acted as you.</p><p>If you started it, start it again and open its link in this browser.</p>",
            None,
        );
    }
    // Watched from before the redirect is handed on: its outcome is news.
    let mut status = shared.access.logins.status_of(&key);
    status.borrow_and_update();
    let redirect_url = format!("{}{}", crate::identity::base_url(request.headers()), uri);
    if redirect.send(Ok(redirect_url)).is_err() {
        return page(
            StatusCode::GONE,
            "Not logged in",
            "<p>This login was given up. Start it again from your agent.</p>",
            None,
        );
    }
    let mut response = outcome_page(status, &key.1).await;
    let forget = format!("{name}=; Path={}; Max-Age=0", super::CALLBACK_PATH);
    if let Ok(value) = HeaderValue::from_str(&forget) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The callback's page once the login ends (or [`OUTCOME_PATIENCE`] is
/// over): "Logged in" only when the grant is stored.
async fn outcome_page(mut status: watch::Receiver<LoginStatus>, server: &str) -> Response {
    let outcome = tokio::time::timeout(OUTCOME_PATIENCE, async {
        loop {
            if status.changed().await.is_err() {
                return None;
            }
            let now = status.borrow_and_update().clone();
            if matches!(now, LoginStatus::Done | LoginStatus::Failed { .. }) {
                return Some(now);
            }
        }
    })
    .await;
    let server = html_text(server);
    match outcome {
        Ok(Some(LoginStatus::Done)) => page(
            StatusCode::OK,
            "Logged in",
            &format!(
                "<p>Logged in to <strong>{server}</strong>. You can close this tab and go back to your agent.</p>"
            ),
            None,
        ),
        Ok(Some(LoginStatus::Failed { error })) => page(
            StatusCode::BAD_GATEWAY,
            "Not logged in",
            &format!(
                "<p>The login to <strong>{server}</strong> failed:</p><pre>{}</pre>",
                html_text(&error)
            ),
            None,
        ),
        _ => page(
            StatusCode::ACCEPTED,
            "Still logging in",
            &format!(
                "<p>The gateway is still finishing the login to <strong>{server}</strong>; your agent says when it is done.</p>"
            ),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_text_is_shown_as_text() {
        assert_eq!(
            html_text("<script>alert('x')</script> & \"y\"\u{1b}[31m"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;\\u{001b}[31m"
        );
    }

    #[test]
    fn a_cookie_is_found_by_its_name_among_several() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; extpool-login-x=v1"),
        );
        headers.append(header::COOKIE, HeaderValue::from_static("b=2"));
        assert_eq!(cookie(&headers, "extpool-login-x"), Some("v1"));
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, "extpool-login-y"), None);
        let bound: [u8; 32] = Sha256::digest(b"v1").into();
        assert!(binds("v1", &bound));
        assert!(!binds("v2", &bound));
        assert_ne!(cookie_name("s1"), cookie_name("s2"));
    }
}
