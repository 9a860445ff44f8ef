//! `extpool logs SERVER [--follow]` and `extpool restart SERVER`: a
//! running gateway's servers from the command line, through its operator API (`--gateway`, with
//! `EXTPOOL_GATEWAY_TOKEN` as the bearer token when set, as `extpool
//! sessions` sends it).

use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use serde_json::Value;

use crate::context::Ctx;
use crate::output::shown;

/// Which gateway.
#[derive(Debug, Args)]
pub struct GatewayAddr {
    /// The gateway's address.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:8520",
        env = "EXTPOOL_GATEWAY"
    )]
    pub gateway: String,
}

/// `extpool restart`.
#[derive(Debug, Args)]
pub struct RestartArgs {
    /// The server's name (as `extpool list sources` shows it).
    pub server: String,
    /// Which gateway.
    #[command(flatten)]
    pub addr: GatewayAddr,
}

/// The path segment of a server's name (anything but `[A-Za-z0-9_-]`
/// percent-encoded: the gateway answers with a clear error for a name it
/// does not have).
pub(super) fn segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// Runs `extpool restart`.
pub async fn restart(ctx: &mut Ctx, args: RestartArgs) -> Result<ExitCode> {
    let path = format!("/v1/sources/{}/restart", segment(&args.server));
    let answer =
        super::sessions::gateway_request(&args.addr.gateway, reqwest::Method::POST, &path, None)
            .await?;
    if ctx.global.json {
        ctx.out.json_value(&answer)?;
        return Ok(ExitCode::SUCCESS);
    }
    let c = &answer["connection"];
    let name = answer["restarted"].as_str().unwrap_or(&args.server);
    let pid = c["pid"]
        .as_u64()
        .map(|p| format!(", pid {p}"))
        .unwrap_or_default();
    let state = if c["connected"] == true {
        "connected"
    } else {
        "not connected"
    };
    ctx.out.line(format!(
        "restarted {}: {state}{pid} (connection {})",
        shown(name),
        c["connections"]
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `extpool logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The server's name (as `extpool list sources` shows it).
    pub server: String,
    /// Keep printing new lines until interrupted (Ctrl-C).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Which gateway.
    #[command(flatten)]
    pub addr: GatewayAddr,
}

/// Longest line of a followed log read (the gateway cuts its lines far
/// shorter).
const MAX_FOLLOW_LINE: usize = 64 * 1024;

/// Runs `extpool logs`.
pub async fn logs(ctx: &mut Ctx, args: LogsArgs) -> Result<ExitCode> {
    let base = args.addr.gateway.trim_end_matches('/');
    let path = format!("/v1/sources/{}/logs", segment(&args.server));
    if !args.follow {
        let answer =
            super::sessions::gateway_request(base, reqwest::Method::GET, &path, None).await?;
        if ctx.global.json {
            ctx.out.json_value(&answer)?;
        } else {
            let lines = answer["lines"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            if lines.is_empty() {
                ctx.out.line(ctx.out.style.dim("(nothing kept yet)"))?;
            }
            for line in lines {
                print_line(ctx, line)?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut request = reqwest::Client::new().get(format!("{base}{path}?follow=true"));
    if let Ok(token) = std::env::var("EXTPOOL_GATEWAY_TOKEN") {
        request = request.bearer_auth(token);
    }
    let mut response = request.send().await.with_context(|| {
        format!(
            "cannot reach the gateway at {base} (is `{}` running?)",
            crate::invocation::cmd("serve")
        )
    })?;
    let status = response.status();
    if !status.is_success() {
        let body = super::sessions::read_answer(response)
            .await
            .unwrap_or_default();
        bail!(
            "the gateway answered {status}: {}",
            super::sessions::refusal(status, &body)
        );
    }
    let mut pending: Vec<u8> = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .with_context(|| format!("reading the log from the gateway at {base}"))?
    {
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let value: Value = serde_json::from_slice(&line)
                .with_context(|| format!("the gateway at {base} sent a line that is not JSON"))?;
            if ctx.global.json {
                ctx.out.json_line(&value)?;
            } else {
                print_line(ctx, &value)?;
            }
        }
        if pending.len() > MAX_FOLLOW_LINE {
            bail!("the gateway at {base} sent a line over {MAX_FOLLOW_LINE} bytes");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One log line for people: its time, who wrote it, the line.
fn print_line(ctx: &mut Ctx, line: &Value) -> Result<()> {
    let at = line["at_ms"]
        .as_u64()
        .map(|ms| {
            let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
            extpool_host::core::time::rfc3339(at)
        })
        .unwrap_or_default();
    let kind = line["kind"].as_str().unwrap_or("?");
    let text = shown(line["line"].as_str().unwrap_or_default());
    ctx.out.line(format!("{at} {kind:<7} {text}"))?;
    Ok(())
}
