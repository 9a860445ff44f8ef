//! `extpool restart SERVER`: a running gateway's servers from the command
//! line, through its operator API (`--gateway`, with
//! `EXTPOOL_GATEWAY_TOKEN` as the bearer token when set, as `extpool
//! sessions` sends it).

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

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
