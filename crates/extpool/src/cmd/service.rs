//! `extpool service install | uninstall | status`: the gateway (`extpool
//! serve`) as a background service of the user — a systemd user unit on
//! Linux, a launchd agent on macOS — started at login and restarted when
//! it fails, with the places of its state and its log said.
//!
//! The service manager is driven with its own command (`systemctl
//! --user`, `launchctl`); `--no-start` writes the file only.
//! `EXTPOOL_SERVICE_MANAGER` names another program in its place (a
//! wrapper, or a stand-in where no service manager runs).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::context::Ctx;
use crate::invocation::cmd;

/// The service's name (unit `extpool.service`, launchd label `dev.extpool.gateway`).
const UNIT: &str = "extpool.service";
const LABEL: &str = "dev.extpool.gateway";

/// `extpool service …`.
#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Write the service (a systemd user unit, or a launchd agent on macOS) and start it.
    Install(InstallArgs),
    /// Stop the service and remove its file.
    Uninstall(ManagerArgs),
    /// Where the service's file, state and log are, and whether it runs.
    Status(ManagerArgs),
}

/// `extpool service install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The address the gateway listens on.
    #[arg(long, default_value = "127.0.0.1:8520")]
    pub listen: String,
    /// Configuration files the gateway serves (repeatable; default: what
    /// `extpool serve` finds from the working directory).
    #[arg(long = "serve-config", value_name = "PATH")]
    pub config: Vec<PathBuf>,
    /// The gateway's working directory: where it finds a project's
    /// extpool.yaml and .mcp.json (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Write the file only; do not enable or start the service.
    #[arg(long)]
    pub no_start: bool,
    /// Replace a service file that differs.
    #[arg(long)]
    pub force: bool,
}

/// `extpool service uninstall|status`.
#[derive(Debug, Args)]
pub struct ManagerArgs {
    /// Do not ask the service manager (the file only).
    #[arg(long)]
    pub no_start: bool,
}

/// Where a service's pieces are.
#[derive(Debug, Serialize)]
struct Places {
    /// The unit or plist.
    file: PathBuf,
    /// The gateway's state store.
    state: Option<PathBuf>,
    /// Where its log is read.
    log: String,
    /// Variables the gateway reads (a token), one `KEY=VALUE` a line.
    env_file: Option<PathBuf>,
}

fn places(ctx: &Ctx) -> Result<Places> {
    let p = &ctx.places;
    let state = p.data_dir().map(|d| d.join("state.db"));
    if cfg!(target_os = "macos") {
        let home = p
            .home
            .clone()
            .ok_or_else(|| anyhow!("no home directory: set HOME"))?;
        Ok(Places {
            file: home.join(format!("Library/LaunchAgents/{LABEL}.plist")),
            state,
            log: home
                .join("Library/Logs/extpool/gateway.log")
                .display()
                .to_string(),
            env_file: None,
        })
    } else {
        let config = p
            .config_dir()
            .ok_or_else(|| anyhow!("no home directory: set HOME or XDG_CONFIG_HOME"))?;
        Ok(Places {
            file: config.join("systemd/user").join(UNIT),
            state,
            log: format!("journalctl --user -u {UNIT}"),
            env_file: Some(config.join("extpool/service.env")),
        })
    }
}

/// Runs a subcommand.
pub fn run(ctx: &mut Ctx, command: ServiceCommand) -> Result<ExitCode> {
    if !cfg!(any(target_os = "linux", target_os = "macos")) {
        bail!(
            "extpool service knows systemd (Linux) and launchd (macOS); run `extpool serve` under this system's service manager"
        );
    }
    match command {
        ServiceCommand::Install(args) => install(ctx, args),
        ServiceCommand::Uninstall(args) => uninstall(ctx, args),
        ServiceCommand::Status(args) => status(ctx, args),
    }
}

/// The command line the service runs.
fn serve_line(ctx: &Ctx, args: &InstallArgs) -> Result<Vec<String>> {
    let exe = std::env::current_exe().context("cannot tell where the extpool program is")?;
    let mut line = vec![exe.display().to_string(), "serve".into()];
    line.extend(["--listen".into(), args.listen.clone()]);
    for config in &args.config {
        let path = ctx.places.cwd.join(config);
        if !path.exists() {
            bail!("--serve-config {}: no such file", path.display());
        }
        line.extend(["--config".into(), path.display().to_string()]);
    }
    Ok(line)
}

/// A word of a systemd command line: quoted, with `%` and `$` escaped.
fn systemd_word(word: &str) -> String {
    let mut out = String::from("\"");
    for c in word.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A path in a unit's `WorkingDirectory=`/`EnvironmentFile=` (specifiers escaped).
fn systemd_path(path: &Path) -> String {
    path.display().to_string().replace('%', "%%")
}

fn systemd_unit(line: &[String], dir: &Path, env_file: Option<&Path>) -> String {
    let exec: Vec<String> = line.iter().map(|w| systemd_word(w)).collect();
    let env = env_file
        .map(|f| format!("EnvironmentFile=-{}\n", systemd_path(f)))
        .unwrap_or_default();
    format!(
        "# Written by `extpool service install`; `extpool service uninstall` removes it.\n\
[Unit]\n\
Description=extpool MCP gateway\n\
After=network.target\n\
\n\
[Service]\n\
Type=simple\n\
ExecStart={}\n\
WorkingDirectory={}\n\
{env}\
Restart=on-failure\n\
RestartSec=2\n\
# SIGTERM stops the gateway and every server it started.\n\
KillMode=mixed\n\
TimeoutStopSec=30\n\
\n\
[Install]\n\
WantedBy=default.target\n",
        exec.join(" "),
        systemd_path(dir),
    )
}

fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn launchd_plist(line: &[String], dir: &Path, log: &str) -> String {
    let args: String = line
        .iter()
        .map(|w| format!("    <string>{}</string>\n", xml(w)))
        .collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
<plist version=\"1.0\">\n<dict>\n\
  <key>Label</key>\n  <string>{LABEL}</string>\n\
  <key>ProgramArguments</key>\n  <array>\n{args}  </array>\n\
  <key>WorkingDirectory</key>\n  <string>{}</string>\n\
  <key>RunAtLoad</key>\n  <true/>\n\
  <key>KeepAlive</key>\n  <dict><key>SuccessfulExit</key><false/></dict>\n\
  <key>StandardOutPath</key>\n  <string>{}</string>\n\
  <key>StandardErrorPath</key>\n  <string>{}</string>\n\
</dict>\n</plist>\n",
        xml(&dir.display().to_string()),
        xml(log),
        xml(log)
    )
}

/// The service manager's program (`systemctl` or `launchctl`), or the
/// one `EXTPOOL_SERVICE_MANAGER` names.
fn manager() -> std::process::Command {
    let program = std::env::var_os("EXTPOOL_SERVICE_MANAGER")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "launchctl".into()
            } else {
                "systemctl".into()
            }
        });
    let mut command = std::process::Command::new(program);
    if !cfg!(target_os = "macos") {
        command.arg("--user");
    }
    command
}

/// Runs the service manager with `args`; its failure is said whole.
fn manage(args: &[&str]) -> Result<String> {
    let out = manager()
        .args(args)
        .output()
        .with_context(|| format!("cannot run the service manager ({})", args.join(" ")))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() {
        bail!(
            "the service manager failed ({}): {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(text)
}

#[derive(Serialize)]
struct Said<'a> {
    outcome: &'a str,
    #[serde(flatten)]
    places: &'a Places,
    running: Option<String>,
}

fn install(ctx: &mut Ctx, args: InstallArgs) -> Result<ExitCode> {
    let places = places(ctx)?;
    let dir = match &args.dir {
        Some(d) => ctx.places.cwd.join(d),
        None => ctx.places.cwd.clone(),
    };
    if !dir.is_dir() {
        bail!("--dir {}: not a directory", dir.display());
    }
    let line = serve_line(ctx, &args)?;
    let text = if cfg!(target_os = "macos") {
        launchd_plist(&line, &dir, &places.log)
    } else {
        systemd_unit(&line, &dir, places.env_file.as_deref())
    };
    let file = ctx.show_path(&places.file);
    let old = std::fs::read_to_string(&places.file).ok();
    let outcome = match &old {
        Some(old) if *old == text => "unchanged",
        Some(_) if !args.force => bail!(
            "{file} exists and differs from what this would write; pass --force to replace it (`{}` shows it)",
            cmd("service status")
        ),
        _ => {
            extpool_host::config::edit::write_atomic(&places.file, &text)
                .with_context(|| format!("cannot write {file}"))?;
            "installed"
        }
    };
    if cfg!(target_os = "macos")
        && let Some(logs) = Path::new(&places.log).parent()
    {
        std::fs::create_dir_all(logs).with_context(|| format!("cannot make {}", logs.display()))?;
    }
    let mut running = None;
    if !args.no_start {
        if cfg!(target_os = "macos") {
            let target = places.file.display().to_string();
            let _ = manage(&["unload", &target]);
            manage(&["load", "-w", &target])?;
        } else {
            manage(&["daemon-reload"])?;
            manage(&["enable", "--now", UNIT])?;
            if outcome == "installed" && old.is_some() {
                manage(&["restart", UNIT])?;
            }
        }
        running = Some("started".into());
    }
    say(ctx, outcome, &places, running)
}

fn uninstall(ctx: &mut Ctx, args: ManagerArgs) -> Result<ExitCode> {
    let places = places(ctx)?;
    if !places.file.exists() {
        ctx.out.line(format!(
            "no service is installed ({} does not exist)",
            ctx.show_path(&places.file)
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    if !args.no_start {
        if cfg!(target_os = "macos") {
            let _ = manage(&["unload", "-w", &places.file.display().to_string()]);
        } else {
            let _ = manage(&["disable", "--now", UNIT]);
        }
    }
    std::fs::remove_file(&places.file)
        .with_context(|| format!("cannot remove {}", ctx.show_path(&places.file)))?;
    if !args.no_start && !cfg!(target_os = "macos") {
        let _ = manage(&["daemon-reload"]);
    }
    say(ctx, "uninstalled", &places, None)
}

fn status(ctx: &mut Ctx, args: ManagerArgs) -> Result<ExitCode> {
    let places = places(ctx)?;
    let installed = places.file.exists();
    let running = if args.no_start || !installed {
        None
    } else if cfg!(target_os = "macos") {
        Some(match manage(&["list", LABEL]) {
            Ok(_) => "loaded".to_owned(),
            Err(_) => "not loaded".to_owned(),
        })
    } else {
        // `is-active` answers non-zero for inactive: its word is the state.
        let out = manager().args(["is-active", UNIT]).output();
        Some(match out {
            Ok(out) => {
                let word = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                if word.is_empty() {
                    "unknown".into()
                } else {
                    word
                }
            }
            Err(e) => format!("unknown (cannot run the service manager: {e})"),
        })
    };
    say(
        ctx,
        if installed {
            "installed"
        } else {
            "not installed"
        },
        &places,
        running,
    )
}

fn say(ctx: &mut Ctx, outcome: &str, places: &Places, running: Option<String>) -> Result<ExitCode> {
    if ctx.global.json {
        ctx.out.json_value(&Said {
            outcome,
            places,
            running,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    ctx.out.line(format!("service: {outcome}"))?;
    ctx.out
        .line(format!("  file:  {}", ctx.show_path(&places.file)))?;
    if let Some(running) = &running {
        ctx.out.line(format!("  state: {running}"))?;
    }
    if let Some(state) = &places.state {
        ctx.out.line(format!("  store: {}", ctx.show_path(state)))?;
    }
    ctx.out.line(format!("  log:   {}", places.log))?;
    if let Some(env) = &places.env_file {
        ctx.out.line(format!(
            "  env:   {} (KEY=VALUE lines the gateway reads: EXTPOOL_GATEWAY_TOKEN, the servers' ${{VAR}}s)",
            ctx.show_path(env)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_systemd_and_launchd() {
        assert_eq!(systemd_word("a b%$\"c"), "\"a b%%$$\\\"c\"");
        let plist = launchd_plist(
            &["/x/extpool".into(), "serve".into()],
            Path::new("/w&d"),
            "/l.log",
        );
        assert!(plist.contains("<string>/w&amp;d</string>"), "{plist}");
    }
}
