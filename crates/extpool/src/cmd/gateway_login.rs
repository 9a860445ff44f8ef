//! `extpool mcp login SERVER --gateway URL`: a caller's own login to a
//! gateway's per-user server (`oauth: {per_user: true}`). The gateway
//! runs the OAuth flow and keeps the grant as this caller's; this command
//! asks it to start (`POST /v1/login/SERVER`, with the caller's token from
//! `EXTPOOL_GATEWAY_TOKEN`), sends the browser to the authorization URL,
//! and waits for the gateway to say the login is done.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::context::Ctx;

/// How long the command waits for the browser's consent.
const PATIENCE: Duration = Duration::from_secs(600);

/// One request to the gateway's login API; its JSON answer.
async fn ask(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
) -> Result<Value> {
    let mut request = client.request(method, url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("cannot reach the gateway at {url}"))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if !status.is_success() {
        let why = value["error"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| text.trim().to_owned());
        bail!("the gateway answered {status}: {why}");
    }
    Ok(value)
}

/// Runs the login of `server` through the gateway at `gateway`.
pub async fn run(ctx: &mut Ctx, gateway: &str, server: &str, browser: bool) -> Result<ExitCode> {
    let base = gateway.trim_end_matches('/').trim_end_matches("/mcp");
    let token = std::env::var("EXTPOOL_GATEWAY_TOKEN").ok();
    let client = reqwest::Client::new();
    let login = format!("{base}/v1/login/{server}");
    let started = ask(&client, reqwest::Method::POST, &login, token.as_deref()).await?;
    let Some(given) = started["authorization_url"].as_str() else {
        bail!("the gateway started no login for {server} (it gave no authorization URL)");
    };
    // The URL is the gateway's to give: only a web page is shown, and
    // only https (or http to this machine) is opened.
    let (url, not_opened) = match extpool_auth::login::openable(given) {
        Ok(url) => (url, None),
        Err(e @ extpool_auth::login::NotOpened::PlainHttp { .. }) => (given.to_owned(), Some(e)),
        Err(e) => bail!(
            "the gateway gave {:?} as the page to log in at: {e}; it was not opened",
            extpool_host::core::text::shown_name(given)
        ),
    };
    let opened = match (&not_opened, browser) {
        (None, true) => extpool_auth::login::authorizer::open_browser(&url).is_ok(),
        _ => false,
    };
    {
        // Best effort: a closed stderr must not end the login.
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let shown = crate::output::shown(&url);
        let _ = if opened {
            writeln!(
                err,
                "Opening the browser to authorize. If it does not open, visit:\n\n  {shown}\n"
            )
        } else {
            writeln!(
                err,
                "Open this URL in a browser to authorize:\n\n  {shown}\n"
            )
        };
        if let (Some(why), true) = (&not_opened, browser) {
            let _ = writeln!(
                err,
                "(not opened in a browser: {why}; open it yourself if you trust the gateway)"
            );
        }
        let _ = writeln!(err, "Waiting for the gateway to finish the login…");
    }
    let started_at = Instant::now();
    let status = loop {
        let wait = format!("{login}?wait_ms=60000");
        let status = ask(&client, reqwest::Method::GET, &wait, token.as_deref()).await?;
        if status["status"] != "pending" || started_at.elapsed() > PATIENCE {
            break status;
        }
    };
    match status["status"].as_str() {
        Some("done") => {
            if ctx.global.json {
                ctx.out.json_value(&status)?;
            } else {
                ctx.out.line(format!(
                    "{} logged in to {server} through the gateway at {base}: its calls of {server} now use your own grant",
                    ctx.out.style.green("✓"),
                ))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some("failed") => bail!(
            "the login to {server} failed: {}",
            status["error"].as_str().unwrap_or("no reason given")
        ),
        _ => bail!(
            "the login to {server} did not finish within {} s",
            PATIENCE.as_secs()
        ),
    }
}
