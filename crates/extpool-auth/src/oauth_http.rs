//! The HTTP client for OAuth endpoints (token, registration), and the
//! adapter that lets the `oauth2` crate send through it.
//!
//! Redirects are never followed (a token endpoint that redirects is
//! refused rather than handed a code or a secret), responses are bounded,
//! and requests time out.

use std::time::Duration;

/// Largest OAuth response body read.
const MAX_BODY: usize = 1024 * 1024;

/// A reqwest client for OAuth endpoints: no redirects, bounded time.
pub fn oauth_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot build the OAuth HTTP client; using defaults");
            reqwest::Client::new()
        })
}

/// Why an OAuth HTTP exchange failed (no bodies, no credentials).
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The request could not be sent or read (shown with its causes, so
    /// not a `source()`).
    #[error("{}", extpool_core::Causes(.0))]
    Http(reqwest::Error),
    /// The body was larger than allowed.
    #[error("response larger than {MAX_BODY} bytes")]
    TooLarge,
    /// The response could not be rebuilt.
    #[error("bad response: {0}")]
    Build(String),
}

impl From<reqwest::Error> for SendError {
    fn from(error: reqwest::Error) -> Self {
        Self::Http(error)
    }
}

/// The `oauth2` crate's view of a reqwest client.
#[derive(Debug, Clone)]
pub struct OAuthHttp(pub reqwest::Client);

impl<'c> oauth2::AsyncHttpClient<'c> for OAuthHttp {
    type Error = SendError;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<oauth2::HttpResponse, SendError>> + Send + 'c>,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(send(self.0.clone(), request))
    }
}

/// Sends one `oauth2` request through `client`.
pub async fn send(
    client: reqwest::Client,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, SendError> {
    let (parts, body) = request.into_parts();
    let response = client
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = read_bounded(response).await?;
    let mut builder = http::Response::builder().status(status);
    if let Some(h) = builder.headers_mut() {
        *h = headers;
    }
    builder
        .body(body)
        .map_err(|e| SendError::Build(e.to_string()))
}

/// Reads a response body, at most 1 MiB.
pub async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, SendError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(SendError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Longest `error` code of a token endpoint's refusal shown to anyone, in
/// characters.
pub const MAX_ERROR_CODE: usize = 64;

/// A token endpoint's `error` code as shown (in a caller's tool error, a
/// log line): at most [`MAX_ERROR_CODE`] visible ASCII characters of it,
/// else `HTTP <status>` when it gave none. The one place such a code is
/// trimmed, for every grant extpool asks for.
pub fn error_code(error: Option<&str>, status: u16) -> String {
    let code: String = error
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_graphic)
        .take(MAX_ERROR_CODE)
        .collect();
    if code.is_empty() {
        format!("HTTP {status}")
    } else {
        code
    }
}

/// RFC 6749 §2.3.1: a client's id and secret are form-encoded before they
/// go in HTTP Basic.
pub fn form_urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
