//! How the user's consent is obtained: an [`Authorizer`] gives the redirect
//! URI to register and, given the authorization URL, returns the URL the
//! authorization server redirected to (carrying `code`, `state`, `iss`).
//!
//! - [`LoopbackAuthorizer`]: the interactive login. A one-shot HTTP
//!   listener on `127.0.0.1:<random port>` (RFC 8252 §7.3) receives the
//!   redirect; the URL is shown (and opened in a browser unless told not
//!   to); with paste enabled, a redirect URL typed back by the user (from a
//!   browser on another machine) is accepted too, whichever comes first.
//! - [`HeadlessAuthorizer`]: fetches the authorization URL itself and reads
//!   the redirect from `Location` (servers that approve without a user:
//!   test and conformance servers).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;

/// Why an authorization step failed (never contains a code).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct AuthorizeError(pub String);

/// Obtains consent; see the module docs.
#[async_trait]
pub trait Authorizer: Send + Sync {
    /// Prepares a redirect target (binds a listener, …).
    async fn start(&self) -> Result<Box<dyn PendingRedirect>, AuthorizeError>;
}

/// One prepared redirect.
#[async_trait]
pub trait PendingRedirect: Send {
    /// The redirect URI to register and send.
    fn redirect_uri(&self) -> String;
    /// Sends the user to `authorization_url`; returns the redirect URL.
    async fn wait(self: Box<Self>, authorization_url: &str) -> Result<String, AuthorizeError>;
}

/// What an interactive login shows the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginPrompt {
    /// Open this URL to authorize (printed always; opened unless `--no-browser`).
    Visit {
        /// The authorization URL (holds no secret: PKCE keeps the verifier here).
        url: String,
        /// True when a pasted redirect URL is accepted.
        paste: bool,
    },
    /// The browser could not be started.
    BrowserFailed(String),
}

/// Shows prompts (the CLI renders them on stderr).
pub type PromptSink = Arc<dyn Fn(LoginPrompt) + Send + Sync>;

/// Opens a URL in a browser (the default runs [`open_browser`]).
pub type BrowserOpener = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The interactive authorizer; see the module docs.
pub struct LoopbackAuthorizer {
    open_browser: bool,
    opener: BrowserOpener,
    prompt: PromptSink,
    paste: parking_lot::Mutex<Option<mpsc::Receiver<String>>>,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackAuthorizer")
            .field("open_browser", &self.open_browser)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl LoopbackAuthorizer {
    /// An authorizer that opens a browser when `open_browser`.
    pub fn new(open_browser: bool, prompt: PromptSink) -> Self {
        Self {
            open_browser,
            opener: Arc::new(self::open_browser),
            prompt,
            paste: parking_lot::Mutex::new(None),
            timeout: Duration::from_secs(300),
        }
    }

    /// Also accepts redirect URLs pasted by the user, one a message.
    pub fn with_paste(self, lines: mpsc::Receiver<String>) -> Self {
        *self.paste.lock() = Some(lines);
        self
    }

    /// Opens the browser with `opener` instead of `$BROWSER` / the platform opener.
    pub fn with_opener(mut self, opener: BrowserOpener) -> Self {
        self.opener = opener;
        self
    }

    /// How long to wait for the redirect (default 5 minutes).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// Longest callback query accepted.
const MAX_CALLBACK: usize = 16 * 1024;

const DONE_PAGE: &str = "<!doctype html><title>extpool</title><p>Authorization received. You can close this tab and return to the terminal.</p>";

#[async_trait]
impl Authorizer for LoopbackAuthorizer {
    async fn start(&self) -> Result<Box<dyn PendingRedirect>, AuthorizeError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| AuthorizeError(format!("cannot listen for the redirect: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthorizeError(e.to_string()))?
            .port();
        let redirect_uri = format!("http://127.0.0.1:{port}/callback");
        let (tx, rx) = mpsc::channel::<String>(4);
        let base = redirect_uri.clone();
        let callback_tx = tx.clone();
        let app = axum::Router::new().route(
            "/callback",
            axum::routing::get(move |uri: http::Uri| {
                let tx = callback_tx.clone();
                let base = base.clone();
                async move {
                    let query = uri.query().unwrap_or("");
                    if query.len() > MAX_CALLBACK {
                        return axum::response::Html("<p>Request too large.</p>");
                    }
                    let _ = tx.send(format!("{base}?{query}")).await;
                    axum::response::Html(DONE_PAGE)
                }
            }),
        );
        let stop = Arc::new(tokio::sync::Notify::new());
        let stop_wait = stop.clone();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop_wait.notified().await })
                .await;
        });
        if let Some(mut lines) = self.paste.lock().take() {
            let tx = tx.clone();
            tokio::spawn(async move {
                while let Some(line) = lines.recv().await {
                    let line = line.trim().to_owned();
                    if !line.is_empty() && tx.send(line).await.is_err() {
                        break;
                    }
                }
            });
        }
        Ok(Box::new(Loopback {
            redirect_uri,
            rx,
            stop,
            server,
            open_browser: self.open_browser,
            opener: self.opener.clone(),
            prompt: self.prompt.clone(),
            timeout: self.timeout,
        }))
    }
}

struct Loopback {
    redirect_uri: String,
    rx: mpsc::Receiver<String>,
    stop: Arc<tokio::sync::Notify>,
    server: tokio::task::JoinHandle<()>,
    open_browser: bool,
    opener: BrowserOpener,
    prompt: PromptSink,
    timeout: Duration,
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.notify_one();
        self.server.abort();
    }
}

#[async_trait]
impl PendingRedirect for Loopback {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    async fn wait(mut self: Box<Self>, authorization_url: &str) -> Result<String, AuthorizeError> {
        // The URL is the authorization server's (its metadata names the
        // endpoint): only a web page is shown, and only https (or http to
        // this machine) is opened.
        let url = match openable(authorization_url) {
            Ok(url) => Ok(url),
            Err(NotOpened::NotWeb(why)) => {
                return Err(AuthorizeError(format!(
                    "the authorization server's authorization URL is not a web page ({why}); it was not opened"
                )));
            }
            Err(e @ NotOpened::PlainHttp { .. }) => Err(e),
        };
        let shown = match &url {
            Ok(url) => url.clone(),
            Err(_) => authorization_url.to_owned(),
        };
        (self.prompt)(LoginPrompt::Visit {
            url: shown,
            paste: !self.open_browser,
        });
        if self.open_browser {
            let opened = match &url {
                Ok(url) => (self.opener)(url),
                Err(e) => Err(format!("not opened: {e}")),
            };
            if let Err(e) = opened {
                (self.prompt)(LoginPrompt::BrowserFailed(e));
            }
        }
        loop {
            let received = tokio::time::timeout(self.timeout, self.rx.recv())
                .await
                .map_err(|_| {
                    AuthorizeError(format!("no redirect within {} s", self.timeout.as_secs()))
                })?
                .ok_or_else(|| AuthorizeError("the redirect listener stopped".into()))?;
            match url::Url::parse(&received) {
                Ok(url) if url.query_pairs().any(|(k, _)| k == "code" || k == "error") => {
                    return Ok(received);
                }
                _ => tracing::warn!("ignoring input that is not a redirect URL with a code"),
            }
        }
    }
}

/// Why a URL is not opened in a browser.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotOpened {
    /// Not a URL, or one of another scheme (`file:`, `javascript:`,
    /// `data:`): no login page, and a browser (or the platform's opener)
    /// would read a file, run a script or start a program.
    #[error("{0}")]
    NotWeb(String),
    /// Plain `http://` to another machine: what the page shows and what
    /// is typed into it could be read or changed on the way.
    #[error("it is plain http:// to another machine ({host}), not https://")]
    PlainHttp {
        /// The host it names.
        host: String,
    },
}

/// `url` as a browser may be sent to it: `https://`, or `http://` to this
/// machine (`localhost`, `127.0.0.0/8`, `::1`), with a host; returned as
/// the URL parser writes it (tabs and newlines dropped, other control
/// characters and spaces percent-encoded). The one rule for every URL
/// extpool hands to a browser, whoever supplied it (an authorization
/// server's metadata, a gateway).
pub fn openable(url: &str) -> Result<String, NotOpened> {
    let parsed =
        url::Url::parse(url).map_err(|e| NotOpened::NotWeb(format!("it is not a URL: {e}")))?;
    let host = parsed.host_str().unwrap_or_default().to_owned();
    // `https://accounts.example@evil.example/` reads as the first host
    // and leads to the second.
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(NotOpened::NotWeb(
            "it carries a user name or password before its host, which disguises where it leads"
                .into(),
        ));
    }
    match parsed.scheme() {
        "https" if !host.is_empty() => Ok(parsed.into()),
        "http" if extpool_core::web::is_loopback_host(&host) => Ok(parsed.into()),
        "http" if !host.is_empty() => Err(NotOpened::PlainHttp { host }),
        "http" | "https" => Err(NotOpened::NotWeb("it names no host".into())),
        other => Err(NotOpened::NotWeb(format!(
            "its scheme is {other:?}, not https"
        ))),
    }
}

/// Opens `url` in the user's browser when it is [`openable`]: `$BROWSER`
/// (a command; `%s` is replaced by the URL, else the URL is appended),
/// else the platform opener. Never through a shell: the URL is one
/// argument of the program, whatever it holds (`&` included). Unlike a
/// server, the program is not tied to extpool's life (no parent-death
/// signal): the browser it may be is the user's, and must outlive
/// `extpool mcp login`.
pub fn open_browser(url: &str) -> Result<(), String> {
    let url = openable(url).map_err(|e| format!("not opened: {e}"))?;
    let browser = std::env::var("BROWSER").ok();
    let (program, args) = opener_command(&url, browser.as_deref(), std::env::consts::OS);
    std::process::Command::new(&program)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|e| format!("cannot run {program}: {e}"))
}

/// The program and arguments that open `url` on operating system `os`,
/// with `$BROWSER` set to `browser`. On Windows `rundll32`'s URL handler,
/// not `cmd /C start`: cmd reads `&` in a URL as the end of one command
/// and the start of another.
fn opener_command(url: &str, browser: Option<&str>, os: &str) -> (String, Vec<String>) {
    match browser {
        Some(cmd) if !cmd.trim().is_empty() => {
            let mut parts: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
            let program = parts.remove(0);
            if parts.iter().any(|p| p.contains("%s")) {
                parts = parts.into_iter().map(|p| p.replace("%s", url)).collect();
            } else {
                parts.push(url.to_owned());
            }
            (program, parts)
        }
        _ => match os {
            "macos" => ("open".into(), vec![url.into()]),
            "windows" => (
                "rundll32".into(),
                vec!["url.dll,FileProtocolHandler".into(), url.into()],
            ),
            _ => ("xdg-open".into(), vec![url.into()]),
        },
    }
}

/// Follows the authorization URL without a user; see the module docs.
#[derive(Debug, Clone)]
pub struct HeadlessAuthorizer {
    http: reqwest::Client,
    redirect_uri: String,
}

impl Default for HeadlessAuthorizer {
    fn default() -> Self {
        Self::new("http://127.0.0.1/callback")
    }
}

impl HeadlessAuthorizer {
    /// Uses `redirect_uri` (never contacted: the code is read from `Location`).
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        Self {
            http: crate::oauth_http::oauth_client(),
            redirect_uri: redirect_uri.into(),
        }
    }
}

#[async_trait]
impl Authorizer for HeadlessAuthorizer {
    async fn start(&self) -> Result<Box<dyn PendingRedirect>, AuthorizeError> {
        Ok(Box::new(self.clone()))
    }
}

#[async_trait]
impl PendingRedirect for HeadlessAuthorizer {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    async fn wait(self: Box<Self>, authorization_url: &str) -> Result<String, AuthorizeError> {
        let response = self
            .http
            .get(authorization_url)
            .send()
            .await
            .map_err(|e| AuthorizeError(format!("authorization request failed: {e}")))?;
        let status = response.status();
        let location = response
            .headers()
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                AuthorizeError(format!(
                    "the authorization endpoint answered {status} without a redirect"
                ))
            })?;
        let base = url::Url::parse(authorization_url).map_err(|e| AuthorizeError(e.to_string()))?;
        base.join(location)
            .map(String::from)
            .map_err(|e| AuthorizeError(format!("bad redirect location: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_and_loopback_http_are_opened() {
        for ok in [
            "https://idp.example/authorize?a=1&b=2",
            "http://127.0.0.1:8520/oauth/login?state=x",
            "http://localhost/x",
            "http://[::1]:9/",
        ] {
            assert!(openable(ok).is_ok(), "{ok}");
        }
        for (bad, plain) in [
            ("file:///etc/passwd", false),
            ("javascript:alert(1)", false),
            ("data:text/html,<script>x</script>", false),
            ("ftp://idp.example/", false),
            ("-a https://x", false),
            ("", false),
            ("http://idp.example/authorize", true),
            ("http://10.0.0.1/", true),
            ("https://accounts.example@evil.example/", false),
            ("https://u:p@idp.example/", false),
        ] {
            let e = openable(bad).unwrap_err();
            assert_eq!(
                matches!(e, NotOpened::PlainHttp { .. }),
                plain,
                "{bad}: {e}"
            );
        }
        // Control characters never reach the opener as themselves.
        let url = openable("https://idp.example/a\u{1b}[31m b\n?x=1&y=2").unwrap();
        assert!(!url.chars().any(|c| c.is_control() || c == ' '), "{url}");
        assert!(url.ends_with("?x=1&y=2"), "{url}");
    }

    #[test]
    fn the_url_is_one_argument_of_a_program_never_a_shell_command() {
        let url = "https://idp.example/?a=1&calc.exe";
        let (program, args) = opener_command(url, None, "windows");
        assert_eq!(program, "rundll32");
        assert_eq!(args, ["url.dll,FileProtocolHandler", url]);
        assert_eq!(
            opener_command(url, None, "linux"),
            ("xdg-open".to_owned(), vec![url.to_owned()])
        );
        assert_eq!(
            opener_command(url, None, "macos"),
            ("open".to_owned(), vec![url.to_owned()])
        );
        assert_eq!(
            opener_command(url, Some("firefox --new-tab %s"), "linux"),
            (
                "firefox".to_owned(),
                vec!["--new-tab".to_owned(), url.to_owned()]
            )
        );
    }
}
