//! One module per command; [`run`] dispatches.

mod api_keys;
mod arguments;
mod ask;
mod call;
mod completions;
mod config;
pub mod connect;
mod counts;
mod describe;
mod doctor;
mod gateway_login;
pub mod gateway_servers;
mod identity;
mod list;
pub mod mcp;
mod overview;
mod plugin_list;
mod plugins;
mod read;
pub mod registry;
mod run;
mod serve;
pub mod servers;
pub mod service;
mod sessions;
mod skills;
mod sources;
mod suggest;
pub mod tools;
mod watch;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command, SkillsCommand};
use crate::context::Ctx;
use extpool_host::{Host, HostOptions, ServerEvent, ServerSelection, View};

use crate::progress::Progress;
use crate::signals::{Interrupted, Signals};

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> Result<ExitCode> {
    let mut ctx = Ctx::new(cli.global);
    match cli.command {
        None => overview::run(&mut ctx).await,
        Some(Command::List(args)) => list::run(&mut ctx, args).await,
        Some(Command::Call(args)) => call::run(&mut ctx, args).await,
        Some(Command::Describe(args)) => describe::run(&mut ctx, args).await,
        Some(Command::Read(args)) => read::run(&mut ctx, args).await,
        Some(Command::Run(args)) => run::run(&mut ctx, args).await,
        Some(Command::Skills(SkillsCommand::Validate(args))) => skills::validate(&mut ctx, args),
        Some(Command::Plugins(cmd)) => plugins::run(&mut ctx, cmd),
        Some(Command::Watch(args)) => watch::run(&mut ctx, args).await,
        Some(Command::Config(cmd)) => config::run(&mut ctx, cmd),
        Some(Command::Completions(args)) => completions::run(&mut ctx, args),
        Some(Command::Doctor) => doctor::run(&mut ctx).await,
        Some(Command::Mcp(cmd)) => mcp::run(&mut ctx, cmd).await,
        Some(Command::Connect(args)) => connect::run(&mut ctx, args),
        Some(Command::Service(cmd)) => service::run(&mut ctx, cmd),
        Some(Command::Logs(args)) => gateway_servers::logs(&mut ctx, args).await,
        Some(Command::Restart(args)) => gateway_servers::restart(&mut ctx, args).await,
        Some(Command::Tools(cmd)) => tools::run(&mut ctx, cmd),
        Some(Command::Search(args)) => registry::search(&mut ctx, args).await,
        Some(Command::Serve(args)) => serve::run(&mut ctx, *args).await,
        Some(Command::Sessions(args)) => sessions::run(&mut ctx, args).await,
        Some(Command::ApiKeys(args)) => api_keys::run(&mut ctx, args).await,
    }
}

/// A started host and the view a command works in.
pub struct Opened {
    /// The host.
    pub host: Host,
    /// The command's session (one per invocation).
    pub view: View,
    /// SIGINT, SIGTERM and SIGHUP, left to the command while it is open.
    pub signals: Signals,
    /// Enabled MCP servers in the configuration, started or not.
    pub configured_servers: usize,
}

impl Opened {
    /// Runs `work` unless a termination signal comes first; the caller
    /// then shuts down as usual and the command ends with [`Interrupted`].
    pub async fn until_signal<T>(&self, work: impl Future<Output = T>) -> Result<T, Interrupted> {
        let mut signals = self.signals.clone();
        tokio::select! {
            value = work => Ok(value),
            signal = signals.received() => Err(Interrupted(signal)),
        }
    }

    /// The exit code of a listing (the overview, `list`): 1 when a
    /// configured server failed to start or the configuration has an error
    /// (a file or entry skipped, as `config check` fails on) — everything
    /// that works is still shown, and the failure with it — else 0.
    pub fn listing_code(&self) -> ExitCode {
        let config_ok = self.host.config().errors().next().is_none();
        if config_ok && self.host.status().failed_servers().is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }

    /// Shuts the host down (servers closed, process groups ended).
    pub async fn shutdown(self) {
        self.host.shutdown().await;
    }
}

/// The configuration files skipped for an error, as a note for a "not
/// found" answer (what was asked for may be defined in one of them).
pub fn skipped_note(opened: &Opened) -> Option<String> {
    let skipped = opened.host.config().skipped_files();
    (!skipped.is_empty()).then(|| {
        format!(
            "{} skipped for the error above: what {} defines is not loaded",
            skipped.join(", "),
            if skipped.len() == 1 { "it" } else { "they" }
        )
    })
}

/// The command that shows more about a host error: the CLI's own words,
/// added where it renders the error (the host's message says the fact and
/// the name to use, for a gateway's client or model as much as for a
/// terminal).
pub fn next_step(e: &extpool_host::HostError) -> Option<String> {
    use crate::invocation::cmd;
    use extpool_host::HostError;
    let see = |what: &str| format!("see `{}`", cmd(what));
    Some(match e {
        HostError::UnknownTool { failed, .. } if !failed.is_empty() => {
            format!("{} and `{}`", see("list sources"), cmd("list tools"))
        }
        HostError::UnknownTool { .. } => see("list tools"),
        HostError::ServerFailed { .. } => see("list sources"),
        HostError::UnknownCommand { .. } => see("list commands"),
        HostError::UnknownSkill { .. } => see("list skills"),
        _ => return None,
    })
}

/// `text` (an error as shown) with the [`next_step`] of the first host
/// error in `e`'s chain, if it has one.
pub fn with_next_step(text: String, e: &anyhow::Error) -> String {
    let step = e
        .chain()
        .find_map(|c| c.downcast_ref::<extpool_host::HostError>())
        .and_then(next_step);
    match step {
        Some(step) => format!("{text}; {step}"),
        None => text,
    }
}

/// `e`, with `note` ([`skipped_note`]) added when it says something was
/// not found.
pub fn noting_skipped(e: extpool_host::HostError, note: Option<&str>) -> anyhow::Error {
    match note {
        Some(note) if e.is_not_found() => {
            let step = next_step(&e).map(|s| format!("; {s}")).unwrap_or_default();
            anyhow::anyhow!("{e}{step} ({note})")
        }
        _ => e.into(),
    }
}

/// Runs `work` on a host without servers; when it fails there and servers
/// are configured, runs it again on a host with every server started (on
/// the configuration already read; what was said of it is not said
/// again). A local skill, its files and its commands never wait for a
/// server, and anything else is found as before (a skill or resource an
/// MCP server hosts, a file a local skill lacks but a hosted one of that
/// name has).
pub async fn local_first<T, E>(
    ctx: &Ctx,
    work: impl AsyncFn(&View) -> Result<T, E>,
) -> Result<(Opened, Result<T, E>)> {
    let loaded = ctx.load_reporting()?;
    let opened = open_loaded(ctx, loaded.clone(), Need::Nothing, false, true).await?;
    let local = opened.until_signal(work(&opened.view)).await;
    let (opened, result) = match local {
        Ok(Err(_)) if opened.configured_servers > 0 => {
            opened.shutdown().await;
            let opened = open_loaded(ctx, loaded, Need::Servers, false, false).await?;
            let again = opened.until_signal(work(&opened.view)).await;
            (opened, again)
        }
        other => (opened, other),
    };
    match result {
        Ok(done) => Ok((opened, done)),
        Err(interrupted) => {
            opened.shutdown().await;
            Err(interrupted.into())
        }
    }
}

/// What a command needs of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// No server: local skills, their files and commands, the configuration.
    Nothing,
    /// Every server started (listings, the overview).
    Servers,
    /// What calling or running `name` needs: only its own server when the
    /// name is one of a configured server's (`mcp__<server>__…`), so an
    /// unrelated server that hangs never delays it; every server otherwise.
    Named(String),
    /// What calling tool `name` with these arguments needs: as
    /// [`Need::Named`], and a built-in that names its server in its
    /// arguments (`CallMcpWithQuery server=…`) starts only that one
    /// ([`extpool_host::servers::call_selection`]).
    Call(String, serde_json::Map<String, serde_json::Value>),
}

/// Refuses at once, before any server starts, a tool name no tool can
/// have: an empty (or blank) one, or one longer than a catalog name may be
/// — shown cut, as every outside name an error shows.
pub(crate) fn check_tool_name(name: &str) -> Result<(), crate::UsageError> {
    use extpool_host::catalog::names::MAX_NAME_BYTES;
    if name.trim().is_empty() {
        return Err(crate::UsageError(format!(
            "a tool name is needed, not an empty one; see `{}`",
            crate::invocation::cmd("list tools")
        )));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(crate::UsageError(format!(
            "no tool is named {}: a tool name is at most {MAX_NAME_BYTES} bytes; see `{}`",
            extpool_host::core::text::shown_name(name),
            crate::invocation::cmd("list tools")
        )));
    }
    Ok(())
}

/// Loads the configuration and starts the host on it, drawing each
/// server's start-up on stderr (silent with `--json`).
pub async fn open_host(ctx: &Ctx, need: Need) -> Result<Opened> {
    open_with(ctx, need, false).await
}

/// [`open_host`], watching skill roots when `watch` (and the configuration
/// allows it).
pub async fn open_with(ctx: &Ctx, need: Need, watch: bool) -> Result<Opened> {
    let loaded = ctx.load_reporting()?;
    open_loaded(ctx, loaded, need, watch, true).await
}

/// [`open_with`] on a configuration already read; `report`: say what the
/// skill roots have wrong (false when a command opens its host a second
/// time).
async fn open_loaded(
    ctx: &Ctx,
    loaded: extpool_host::Loaded,
    need: Need,
    watch: bool,
    report: bool,
) -> Result<Opened> {
    let configured_servers = loaded.enabled_servers().count();
    let signals = crate::signals::subscribe()?;
    let host = start_host(ctx, loaded, need, watch, false).await?;
    report_unloaded(ctx, &host, report);
    let view = host.session("cli")?;
    Ok(Opened {
        host,
        view,
        signals,
        configured_servers,
    })
}

/// Says once, on stderr, what was found but not loaded: skills whose
/// SKILL.md has errors (how many, and the command that shows why), a skill
/// root whose scan stopped at a bound, names a server advertised that the
/// catalog refused, and entries a server listed that could not be read.
/// Without this they would just be missing.
/// `skills`: the skill roots too (false when they were reported already).
fn report_unloaded(ctx: &Ctx, host: &Host, skills: bool) {
    use std::io::Write;
    let s = ctx.err_style;
    let warning = s.yellow("warning");
    let mut lines = Vec::new();
    let roots = if skills {
        host.skill_root_reports()
    } else {
        Vec::new()
    };
    for root in roots {
        let shown_root = ctx.show_path(&root.root);
        let n = root.skipped.len();
        if n > 0 {
            lines.push(format!(
                "{warning}: {n} skill{} in {shown_root} not loaded (errors in {} SKILL.md); see `{}`",
                if n == 1 { "" } else { "s" },
                if n == 1 { "its" } else { "their" },
                crate::invocation::cmd(&format!("skills validate {shown_root}")),
            ));
        }
        for bound in &root.truncated {
            lines.push(format!("{shown_root}: {warning}: {bound}"));
        }
    }
    for d in host.dropped() {
        lines.push(format!(
            "{warning}: {}: {}",
            extpool_host::sources::source_label(&d.source),
            extpool_host::sources::dropped_line(&d.problem)
        ));
    }
    for (server, line) in host.unreadable_entries() {
        lines.push(format!("{warning}: MCP server {server:?}: {line}"));
    }
    let mut err = std::io::stderr().lock();
    for line in lines {
        let _ = writeln!(err, "{}", crate::output::shown(&line));
    }
}

/// Starts the host on `loaded`, drawing each server's start-up on stderr
/// (silent with `--json`). `relay`: servers' requests go to the clients
/// behind calls (the gateway).
pub async fn start_host(
    ctx: &Ctx,
    loaded: extpool_host::Loaded,
    need: Need,
    watch: bool,
    relay: bool,
) -> Result<Host> {
    let discovery = extpool_host::DiscoveryOptions::default();
    let gateway = relay.then(extpool_host::OwnEndpoints::default);
    start_host_with(ctx, loaded, need, watch, gateway, discovery).await
}

/// [`start_host`] with discovery while running, for the gateway whose
/// endpoints are `gateway` (its servers' requests relayed to the clients
/// behind calls, and no configured server that reaches it started).
pub async fn start_host_with(
    ctx: &Ctx,
    loaded: extpool_host::Loaded,
    need: Need,
    watch: bool,
    gateway: Option<extpool_host::OwnEndpoints>,
    discovery: extpool_host::DiscoveryOptions,
) -> Result<Host> {
    let relay = gateway.is_some();
    let (selection, note) = match &need {
        Need::Named(name) => {
            let (selection, _) =
                extpool_host::servers::call_selection(&loaded, name, &Default::default());
            (selection, None)
        }
        Need::Call(name, arguments) => {
            extpool_host::servers::call_selection(&loaded, name, arguments)
        }
        Need::Servers => (ServerSelection::All, None),
        Need::Nothing => (ServerSelection::None, None),
    };
    if let Some(note) = note {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}: {}",
            ctx.err_style.yellow("note"),
            crate::output::shown(&note)
        );
    }
    let names: Vec<String> = loaded
        .config
        .mcp_servers
        .iter()
        .filter(|(n, c)| c.enabled && selection.includes(n))
        // A gateway starts each caller's own servers for its callers.
        .filter(|(_, c)| !(relay && extpool_host::servers::is_each_callers(c)))
        .map(|(n, _)| n.clone())
        .collect();
    let watch = watch && loaded.config.skills.watch;
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel::<ServerEvent>();
    let options = HostOptions {
        places: ctx.places.clone(),
        servers: selection,
        watch_skills: Some(watch),
        events: Some(tx),
        relay,
        discovery,
        // The gateway (the one host that relays) serves many callers: a
        // server whose grant is each caller's is started for each.
        per_caller_servers: relay,
        plugins: match ctx.found_plugins() {
            Some(found) => extpool_host::PluginOptions::Found(Box::new(found)),
            None => extpool_host::PluginOptions::Discover,
        },
        own: gateway,
        ..HostOptions::loaded(loaded)
    };
    // A signal during start-up ends it (see `crate::signals`).
    let mut signals = crate::signals::subscribe()?;
    let mut progress = Progress::new(&names, ctx.err_style, ctx.global.json);
    let start = Host::start(options);
    tokio::pin!(start);
    let mut ticker = tokio::time::interval(std::time::Duration::from_millis(100));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let host = loop {
        tokio::select! {
            host = &mut start => break host?,
            // Dropping the start kills the servers started so far.
            signal = signals.received() => return Err(Interrupted(signal).into()),
            Some(event) = events.recv() => progress.server(&event),
            _ = ticker.tick() => progress.tick(),
        }
    };
    while let Ok(event) = events.try_recv() {
        progress.server(&event);
    }
    progress.finish();
    Ok(host)
}
