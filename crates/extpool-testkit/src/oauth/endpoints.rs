//! The HTTP endpoints of the test authorization server.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Query, Request, State as AxState};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;
use tokio_util::sync::CancellationToken;

use super::state::{Access, Client, Code, RecordedRegistration, Refresh, State};
use crate::server::{ServerOptions, TestServer};

type Shared = Arc<State>;

pub(crate) fn router(state: Shared, ct: &CancellationToken) -> Router {
    let mcp = crate::server::http::router(TestServer::new(ServerOptions::default()), None, ct)
        .layer(middleware::from_fn_with_state(state.clone(), guard));
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(authorization_server),
        )
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/register", post(register))
        .with_state(state)
        .merge(mcp)
}

async fn protected_resource(AxState(s): AxState<Shared>) -> Json<Value> {
    Json(json!({
        "resource": s.mcp_url(),
        "authorization_servers": [s.base],
        "scopes_supported": s.options.scopes_supported,
        "bearer_methods_supported": ["header"],
    }))
}

async fn authorization_server(AxState(s): AxState<Shared>) -> Json<Value> {
    let mut doc = json!({
        "issuer": s.base,
        "authorization_endpoint": s
            .options
            .authorization_endpoint
            .clone()
            .unwrap_or_else(|| format!("{}/authorize", s.base)),
        "token_endpoint": format!("{}/token", s.base),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "scopes_supported": s.options.scopes_supported,
        "authorization_response_iss_parameter_supported": s.options.iss_parameter,
    });
    if s.options.registration {
        doc["registration_endpoint"] = json!(format!("{}/register", s.base));
    }
    Json(doc)
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        Json(json!({"error": error, "error_description": description})),
    )
        .into_response()
}

/// RFC 8252 §7.3: a loopback redirect URI matches whatever its port.
fn redirect_matches(registered: &[String], presented: &str) -> bool {
    let strip_port = |u: &str| {
        url_parts(u).map(|(scheme, host, path)| {
            if host == "127.0.0.1" || host == "localhost" || host == "[::1]" {
                format!("{scheme}://{host}{path}")
            } else {
                u.to_owned()
            }
        })
    };
    registered.is_empty()
        || registered.iter().any(|r| {
            r == presented || (strip_port(r).is_some() && strip_port(r) == strip_port(presented))
        })
}

fn url_parts(u: &str) -> Option<(String, String, String)> {
    let (scheme, rest) = u.split_once("://")?;
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    let path = path.split('?').next().unwrap_or("");
    Some((scheme.to_owned(), host.to_owned(), format!("/{path}")))
}

async fn authorize(
    AxState(s): AxState<Shared>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let q: HashMap<&str, &str> = query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut t = s.tables.lock();
    t.authorizations.push(query.clone());
    let (Some(client_id), Some(redirect_uri)) = (q.get("client_id"), q.get("redirect_uri")) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "client_id and redirect_uri are required",
        );
    };
    let Some(client) = t.clients.get(*client_id) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_client", "unknown client");
    };
    if !redirect_matches(&client.redirect_uris, redirect_uri) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "redirect_uri not registered",
        );
    }
    if q.get("response_type") != Some(&"code")
        || q.get("code_challenge_method") != Some(&"S256")
        || !q.contains_key("code_challenge")
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "code + PKCE S256 required",
        );
    }
    let resource = q.get("resource").copied().unwrap_or_default().to_owned();
    if resource != s.mcp_url() {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "unknown resource",
        );
    }
    let code = s.random("code");
    t.codes.insert(
        code.clone(),
        Code {
            client_id: (*client_id).to_owned(),
            redirect_uri: (*redirect_uri).to_owned(),
            challenge: q
                .get("code_challenge")
                .copied()
                .unwrap_or_default()
                .to_owned(),
            // Only supported scopes are granted.
            scope: q
                .get("scope")
                .copied()
                .unwrap_or_default()
                .split_whitespace()
                .filter(|x| s.options.scopes_supported.iter().any(|s| s == x))
                .collect::<Vec<_>>()
                .join(" "),
            resource,
        },
    );
    t.counts.authorizations += 1;
    t.issued.push(code.clone());
    let mut location = format!(
        "{redirect_uri}{}code={code}",
        if redirect_uri.contains('?') { '&' } else { '?' }
    );
    if let Some(state) = q.get("state") {
        location.push_str(&format!("&state={}", urlencode(state)));
    }
    if s.options.iss_parameter {
        location.push_str(&format!("&iss={}", urlencode(&s.base)));
    }
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

fn urlencode(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The client id the request authenticates as, or an error response.
fn authenticate(
    s: &State,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Result<String, Box<Response>> {
    let bad = || {
        Box::new(oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "client authentication failed",
        ))
    };
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.split_once(':').map(|(a, b)| (a.to_owned(), b.to_owned())));
    let (client_id, secret, method) = match (&basic, form.get("client_id")) {
        (Some((id, secret)), _) => (
            percent_decode(id),
            Some(percent_decode(secret)),
            "client_secret_basic",
        ),
        (None, Some(id)) => match form.get("client_secret") {
            Some(secret) => (id.clone(), Some(secret.clone()), "client_secret_post"),
            None => (id.clone(), None, "none"),
        },
        (None, None) => return Err(bad()),
    };
    let t = s.tables.lock();
    let client = t.clients.get(&client_id).ok_or_else(bad)?;
    match (&client.secret, &secret) {
        (Some(expected), Some(given)) if expected == given => {}
        (None, None) => {}
        _ => return Err(bad()),
    }
    if client.secret.is_some() && client.auth_method != "none" && method == "none" {
        return Err(bad());
    }
    Ok(client_id)
}

fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&v[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn issue(s: &State, client_id: &str, scope: &str) -> Value {
    let access = s.random("at");
    let mut t = s.tables.lock();
    t.issued.push(access.clone());
    t.access.insert(
        access.clone(),
        Access {
            scope: scope.to_owned(),
            expires_at: Instant::now() + Duration::from_secs(s.options.access_token_ttl),
        },
    );
    let mut body = json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": s.options.access_token_ttl,
        "scope": scope,
    });
    if s.options.refresh_tokens {
        let refresh = s.random("rt");
        t.issued.push(refresh.clone());
        t.refresh.insert(
            refresh.clone(),
            Refresh {
                client_id: client_id.to_owned(),
                scope: scope.to_owned(),
            },
        );
        body["refresh_token"] = json!(refresh);
    }
    body
}

async fn token(
    AxState(s): AxState<Shared>,
    headers: HeaderMap,
    axum::Form(form): axum::Form<HashMap<String, String>>,
) -> Response {
    let client_id = match authenticate(&s, &headers, &form) {
        Ok(id) => id,
        Err(response) => return *response,
    };
    if form.get("resource").map(String::as_str) != Some(s.mcp_url().as_str()) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "resource missing or unknown",
        );
    }
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let code = form
                .get("code")
                .and_then(|c| s.tables.lock().codes.remove(c));
            let Some(code) = code else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown or used code",
                );
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if code.client_id != client_id
                || challenge != code.challenge
                || form.get("redirect_uri") != Some(&code.redirect_uri)
                || code.resource != s.mcp_url()
            {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "code does not match",
                );
            }
            s.tables.lock().counts.code_exchanges += 1;
            Json(issue(&s, &client_id, &code.scope)).into_response()
        }
        Some("refresh_token") => {
            let presented = form.get("refresh_token").cloned().unwrap_or_default();
            let found = {
                let mut t = s.tables.lock();
                let found = t.refresh.get(&presented).cloned();
                match &found {
                    Some(r) if r.client_id == client_id => {
                        if s.options.rotate_refresh_tokens {
                            t.refresh.remove(&presented);
                        }
                        t.counts.refreshes += 1;
                    }
                    _ => t.counts.refresh_rejections += 1,
                }
                found.filter(|r| r.client_id == client_id)
            };
            let Some(grant) = found else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown or used refresh token",
                );
            };
            let mut body = issue(&s, &client_id, &grant.scope);
            if !s.options.rotate_refresh_tokens
                && let Some(obj) = body.as_object_mut()
                && let Some(Value::String(new)) = obj.remove("refresh_token")
            {
                s.tables.lock().refresh.remove(&new);
            }
            Json(body).into_response()
        }
        _ => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "unsupported grant_type",
        ),
    }
}

async fn register(AxState(s): AxState<Shared>, Json(body): Json<Value>) -> Response {
    if !s.options.registration {
        return StatusCode::NOT_FOUND.into_response();
    }
    let strings = |key: &str| -> Vec<String> {
        body.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let redirect_uris = strings("redirect_uris");
    if redirect_uris.is_empty() {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            "redirect_uris required",
        );
    }
    let method = body
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .unwrap_or("client_secret_basic")
        .to_owned();
    let client_id = s.random("client");
    let secret = (method != "none").then(|| s.random("secret"));
    let mut t = s.tables.lock();
    t.issued.extend(secret.clone());
    t.clients.insert(
        client_id.clone(),
        Client {
            secret: secret.clone(),
            auth_method: method.clone(),
            redirect_uris: redirect_uris.clone(),
        },
    );
    t.counts.registrations += 1;
    t.registrations.push(RecordedRegistration {
        grant_types: strings("grant_types"),
        token_endpoint_auth_method: method.clone(),
        scope: body.get("scope").and_then(Value::as_str).map(str::to_owned),
        client_id: client_id.clone(),
    });
    let mut response = json!({
        "client_id": client_id,
        "redirect_uris": redirect_uris,
        "token_endpoint_auth_method": method,
        "grant_types": strings("grant_types"),
    });
    if let Some(secret) = secret {
        response["client_secret"] = json!(secret);
    }
    (StatusCode::CREATED, Json(response)).into_response()
}

/// Bearer validation in front of `/mcp`.
async fn guard(AxState(s): AxState<Shared>, request: Request, next: Next) -> Response {
    let token = super::bearer_token(request.headers());
    let access = token.as_ref().and_then(|t| {
        let tables = s.tables.lock();
        tables
            .access
            .get(t)
            .filter(|a| a.expires_at > Instant::now())
            .cloned()
    });
    let Some(access) = access else {
        s.tables.lock().counts.unauthorized += 1;
        let challenge = format!("Bearer resource_metadata=\"{}\"", s.prm_url());
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
        )
            .into_response();
    };
    if let Some(required) = &s.options.tool_scope
        && !access.scope.split_whitespace().any(|x| x == required)
    {
        let (parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, 16 * 1024 * 1024).await {
            Ok(b) => b,
            Err(_) => return StatusCode::PAYLOAD_TOO_LARGE.into_response(),
        };
        let is_call = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| {
                v.get("method")
                    .and_then(Value::as_str)
                    .map(|m| m == "tools/call")
            })
            .unwrap_or(false);
        if is_call {
            s.tables.lock().counts.insufficient_scope += 1;
            let challenge = format!(
                "Bearer error=\"insufficient_scope\", scope=\"{required}\", resource_metadata=\"{}\"",
                s.prm_url()
            );
            return (
                StatusCode::FORBIDDEN,
                [(header::WWW_AUTHENTICATE, challenge)],
            )
                .into_response();
        }
        let request = Request::from_parts(parts, axum::body::Body::from(bytes));
        if let Some(t) = token {
            s.tables.lock().accepted.push(super::fingerprint(&t));
        }
        return next.run(request).await;
    }
    if let Some(t) = token {
        s.tables.lock().accepted.push(super::fingerprint(&t));
    }
    next.run(request).await
}
