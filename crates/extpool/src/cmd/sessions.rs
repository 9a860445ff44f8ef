//! `extpool sessions …`: the operator API of a running gateway, from the
//! command line. Requests go to `--gateway` (with `EXTPOOL_GATEWAY_TOKEN`
//! as the bearer token when set); answers are printed as a table (`list`)
//! or as JSON.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cli::{SessionsArgs, SessionsCommand};
use crate::context::Ctx;

/// Runs `extpool sessions …`.
pub async fn run(ctx: &mut Ctx, args: SessionsArgs) -> Result<ExitCode> {
    let base = args.gateway.trim_end_matches('/');
    let client = reqwest::Client::new();
    let token = std::env::var("EXTPOOL_GATEWAY_TOKEN").ok();
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
    let mut request = client.request(method, format!("{base}{path}"));
    if let Some(token) = &token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.with_context(|| {
        format!("cannot reach the gateway at {base} (is `extpool serve` running?)")
    })?;
    let status = response.status();
    let value: Value = response
        .json()
        .await
        .with_context(|| format!("the gateway at {base} did not answer with JSON"))?;
    if !status.is_success() {
        let message = value["error"].as_str().unwrap_or("no reason given");
        bail!("the gateway answered {status}: {message}");
    }
    if matches!(args.command, SessionsCommand::List) && !ctx.global.json {
        print_table(ctx, &value)?;
    } else {
        ctx.out.json_value(&value)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(ctx: &mut Ctx, page: &Value) -> Result<()> {
    let rows: Vec<[String; 4]> = page["sessions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|s| {
            [
                s["id"].as_str().unwrap_or_default().to_owned(),
                s["status"].as_str().unwrap_or_default().to_owned(),
                s["granted_count"].to_string(),
                s["server_count"].to_string(),
            ]
        })
        .collect();
    let header = ["SESSION", "STATUS", "GRANTED", "SERVERS"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2)];
    let line = |r: [&str; 4]| {
        format!(
            "{:<w0$}  {:<w1$}  {:>w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        )
    };
    ctx.out.line(line(header))?;
    for r in &rows {
        ctx.out
            .line(crate::output::shown(&line([&r[0], &r[1], &r[2], &r[3]])))?;
    }
    if rows.is_empty() {
        ctx.out.line("(no sessions)")?;
    }
    Ok(())
}
