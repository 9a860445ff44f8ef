//! An MCP server over streamable HTTP that accepts only access tokens
//! minted for itself: an RS256 JWT signed by a key the issuer publishes
//! (its JWKS, fetched at start), issued by that issuer, not expired, with
//! `aud` = this server's URL (no leeway on `exp`). Anything else gets 401 with a
//! `WWW-Authenticate` challenge. Its one tool, `whoami`, answers the
//! token's `sub`, `act` (the delegation chain) and `aud` as JSON text.
//!
//! Every request is recorded before it is judged — the fingerprint of the
//! token it presented (never the token) and whether it was accepted — so a
//! test can prove what reached it, and that something never did.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// [`crate::oauth::fingerprint`] of the bearer token presented, if any.
    pub token: Option<String>,
    /// Whether it was accepted.
    pub accepted: bool,
}

#[derive(Clone)]
struct Checker {
    issuer: String,
    audience: String,
    keys: Arc<Vec<(Option<String>, DecodingKey)>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Checker {
    fn claims(&self, token: &str) -> Option<Value> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 0;
        self.keys
            .iter()
            .filter(|(kid, _)| kid.is_none() || *kid == header.kid)
            .find_map(|(_, key)| jsonwebtoken::decode::<Value>(token, key, &validation).ok())
            .map(|data| data.claims)
    }
}

async fn check(State(checker): State<Checker>, mut request: Request, next: Next) -> Response {
    let token = crate::oauth::bearer_token(request.headers());
    let claims = token.as_deref().and_then(|t| checker.claims(t));
    checker
        .seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Seen {
            token: token.as_deref().map(crate::oauth::fingerprint),
            accepted: claims.is_some(),
        });
    match claims {
        Some(claims) => {
            request.extensions_mut().insert(Claims(claims));
            next.run(request).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\"")],
            "a token minted for this server is required",
        )
            .into_response(),
    }
}

/// The verified claims of a request (in its extensions).
#[derive(Clone)]
struct Claims(Value);

#[derive(Clone)]
struct Whoami;

impl ServerHandler for Whoami {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {}});
        let Value::Object(schema) = schema else {
            unreachable!("an object")
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "whoami",
            "The subject, actor chain and audience of the token this call came with",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let claims = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Claims>())
            .map(|c| c.0.clone())
            .unwrap_or(Value::Null);
        let answer = json!({"sub": claims["sub"], "act": claims["act"], "aud": claims["aud"]});
        Ok(CallToolResult::success(vec![ContentBlock::text(answer.to_string())]).into())
    }
}

/// A running server; stops on drop.
pub struct AudienceServer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    ct: CancellationToken,
}

impl Drop for AudienceServer {
    fn drop(&mut self) {
        self.ct.cancel();
    }
}

impl AudienceServer {
    /// Starts on `127.0.0.1:0`, taking tokens of `issuer` signed by the
    /// keys at `jwks_uri`.
    ///
    /// # Panics
    ///
    /// When the JWKS cannot be read or the port bound.
    pub async fn start(issuer: &str, jwks_uri: &str) -> Self {
        let jwks: Value = reqwest::get(jwks_uri)
            .await
            .and_then(reqwest::Response::error_for_status)
            .unwrap_or_else(|e| panic!("reading the JWKS {jwks_uri}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("the JWKS {jwks_uri} is not JSON: {e}"));
        let keys: Vec<(Option<String>, DecodingKey)> = jwks["keys"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| {
                let key = DecodingKey::from_rsa_components(k["n"].as_str()?, k["e"].as_str()?);
                Some((k["kid"].as_str().map(str::to_owned), key.ok()?))
            })
            .collect();
        assert!(!keys.is_empty(), "the JWKS {jwks_uri} has no RSA key");
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("binding 127.0.0.1:0");
        let addr = listener.local_addr().expect("the bound address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let checker = Checker {
            issuer: issuer.to_owned(),
            audience: format!("http://{addr}/mcp"),
            keys: Arc::new(keys),
            seen: seen.clone(),
        };
        let ct = CancellationToken::new();
        let service = StreamableHttpService::new(
            || Ok(Whoami),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token()),
        );
        let app = Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn_with_state(checker, check));
        let stop = ct.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
        });
        Self { addr, seen, ct }
    }

    /// Its MCP endpoint, also the audience its tokens must name.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Every request so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
