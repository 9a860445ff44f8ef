//! `extpool doctor`: what this machine supports.

use std::process::ExitCode;

use anyhow::Result;
use extpool_host::sandbox::{Check, SandboxReport};

use crate::context::Ctx;

/// Prints what this machine supports of permission profiles.
pub async fn run(ctx: &mut Ctx) -> Result<ExitCode> {
    let report = extpool_host::sandbox::report().await;
    if ctx.global.json {
        ctx.out
            .json_value(&serde_json::json!({ "sandbox": report }))?;
    } else {
        for line in lines(&report) {
            ctx.out.line(line)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn yes_no(check: &Check, yes: &str) -> String {
    match (&check.ok, &check.detail) {
        (true, Some(detail)) => format!("{yes} ({detail})"),
        (true, None) => yes.to_owned(),
        (false, Some(why)) => format!("no: {why}"),
        (false, None) => "no".to_owned(),
    }
}

/// The report as lines for people.
fn lines(r: &SandboxReport) -> Vec<String> {
    let mut out = vec![match &r.refusal {
        None => "sandbox (permission profiles of stdio servers): supported".to_owned(),
        Some(why) => {
            format!("sandbox (permission profiles of stdio servers): not supported: {why}")
        }
    }];
    let landlock = if r.landlock_abi == 0 {
        "none".to_owned()
    } else {
        format!("ABI {} (need {})", r.landlock_abi, r.min_landlock_abi)
    };
    out.push(format!("  Landlock (file-system rules): {landlock}"));
    out.push(format!(
        "  Landlock scopes (signals, abstract sockets): {}",
        if r.landlock_scopes {
            "yes"
        } else {
            "no (ABI 6, Linux 6.12): a confined server can signal this user's processes"
        }
    ));
    out.push(format!(
        "  user and network namespaces (network none, loopback, host:port lists): {}",
        yes_no(&r.user_namespaces, "yes")
    ));
    let start = match r.confined_start_ms {
        Some(ms) => format!("ok in {ms:.1} ms"),
        None => yes_no(&r.confined_start, "ok"),
    };
    out.push(format!("  a confined process started for real: {start}"));
    out.push(format!(
        "  resource limits: rlimits (memory, open files, processes{})",
        if r.root {
            "; processes not for root, and extpool runs as root"
        } else {
            ""
        }
    ));
    out.push(format!(
        "  seccomp: {} (not used: profiles are Landlock and namespaces)",
        if r.seccomp { "available" } else { "no" }
    ));
    out.push(format!(
        "  cgroup v2 delegation: {} (not used: limits are rlimits)",
        yes_no(&r.cgroup_v2, "yes")
    ));
    out
}
