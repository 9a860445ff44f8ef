//! `extpool sessions …`: the operator API of a running gateway, from the
//! command line. Requests go to `--gateway` (with `EXTPOOL_GATEWAY_TOKEN`
//! as the bearer token when set); answers are printed as a table (`list`,
//! with the columns of the operator page) or as JSON.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cli::{SessionsArgs, SessionsCommand};
use crate::context::Ctx;

/// Runs `extpool sessions …`.
pub async fn run(ctx: &mut Ctx, args: SessionsArgs) -> Result<ExitCode> {
    let (method, path, body) = match &args.command {
        SessionsCommand::List => (reqwest::Method::GET, "/v1/sessions".to_owned(), None),
        SessionsCommand::Create { id, auto_grant } => (
            reqwest::Method::POST,
            "/v1/sessions".to_owned(),
            Some(serde_json::json!({"id": id, "auto_grant": auto_grant})),
        ),
        SessionsCommand::Get { id } => (reqwest::Method::GET, format!("/v1/sessions/{id}"), None),
        SessionsCommand::Refresh { id } => (
            reqwest::Method::POST,
            format!("/v1/sessions/{id}/mcp-refresh"),
            None,
        ),
        SessionsCommand::Delete { id } => {
            (reqwest::Method::DELETE, format!("/v1/sessions/{id}"), None)
        }
        SessionsCommand::Sources => (reqwest::Method::GET, "/v1/sources".to_owned(), None),
    };
    let value = gateway_request(&args.addr.gateway, method, &path, body).await?;
    if matches!(args.command, SessionsCommand::List) && !ctx.global.json {
        print_table(ctx, &value)?;
    } else {
        ctx.out.json_value(&value)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `GET path` of the gateway at `gateway`: its JSON answer.
pub async fn gateway_get(gateway: &str, path: &str) -> Result<Value> {
    gateway_request(gateway, reqwest::Method::GET, path, None).await
}

/// One request of the operator API of the gateway at `gateway` (with
/// `EXTPOOL_GATEWAY_TOKEN` as the bearer token when set): its JSON
/// answer, or the error it answered with.
pub(super) async fn gateway_request(
    gateway: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Result<Value> {
    let base = gateway.trim_end_matches('/');
    let mut request = reqwest::Client::new().request(method, format!("{base}{path}"));
    if let Ok(token) = std::env::var("EXTPOOL_GATEWAY_TOKEN") {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.with_context(|| {
        format!(
            "cannot reach the gateway at {base} (is `{}` running?)",
            crate::invocation::cmd("serve")
        )
    })?;
    let status = response.status();
    let body = read_answer(response)
        .await
        .with_context(|| format!("reading the answer of the gateway at {base}"))?;
    if !status.is_success() {
        bail!("the gateway answered {status}: {}", refusal(status, &body));
    }
    serde_json::from_slice(&body)
        .with_context(|| format!("the gateway at {base} did not answer with JSON"))
}

/// Largest answer of the operator API read (a list page of 500 sessions
/// is far below it).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The body of `response`, at most [`MAX_ANSWER_BYTES`].
pub(super) async fn read_answer(mut response: reqwest::Response) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            bail!("its answer is over {MAX_ANSWER_BYTES} bytes");
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Why the gateway refused a request, in its own words: the API's
/// `{"error"}`, or the text the guard answers with (a missing or wrong
/// token, a foreign Host); with where the token comes from on a 401.
pub(super) fn refusal(status: reqwest::StatusCode, body: &[u8]) -> String {
    let said = match serde_json::from_slice::<Value>(body) {
        Ok(value) => value["error"].as_str().map(str::to_owned),
        Err(_) => Some(String::from_utf8_lossy(body).trim().to_owned()),
    };
    let said = said.filter(|s| !s.is_empty());
    let mut message = match said {
        Some(said) => extpool_host::core::text::cut(&said, 1000).into_owned(),
        None => "no reason given".to_owned(),
    };
    if status == reqwest::StatusCode::UNAUTHORIZED {
        message.push_str(
            " (the command sends EXTPOOL_GATEWAY_TOKEN as its bearer token: the gateway's token, an API key or an access token of its issuer)",
        );
    }
    message
}

/// The sessions as the operator page lists them: id, owner, catalog
/// revision, grants, calls in flight on this replica, last activity and
/// state (open on the replica that answered, or the stored status).
fn print_table(ctx: &mut Ctx, page: &Value) -> Result<()> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".to_owned(),
        other => other.to_string(),
    };
    let rows: Vec<Vec<String>> = page["sessions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|s| {
            let revision = match s["revision_by"].as_str() {
                Some(by) => format!("{} ({by})", text(&s["revision"])),
                None => text(&s["revision"]),
            };
            let last = s["last_seen_ms"]
                .as_u64()
                .map(|ms| {
                    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
                    extpool_host::core::time::rfc3339(at)
                })
                .unwrap_or_else(|| "–".to_owned());
            let state = if s["open_here"] == true {
                "open here".to_owned()
            } else {
                text(&s["status"])
            };
            vec![
                text(&s["id"]),
                text(&s["owner"]),
                revision,
                text(&s["granted_count"]),
                text(&s["in_flight"]),
                last,
                state,
            ]
        })
        .collect();
    if rows.is_empty() {
        ctx.out.line("(no sessions)")?;
        return Ok(());
    }
    ctx.out.table(
        &[
            "SESSION",
            "OWNER",
            "REVISION",
            "GRANTS",
            "IN FLIGHT",
            "LAST ACTIVITY",
            "STATE",
        ],
        &rows,
    )?;
    Ok(())
}
