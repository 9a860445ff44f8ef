//! `extpool tools disable | enable NAME`: a tool turned off or on again by
//! a deny rule in `extpool.yaml`'s `permissions` (extpool-config's located
//! edit: the rule's line added or removed, every other byte kept). It is a
//! configuration edit, so it works without a gateway; a running one takes
//! it from its configuration watcher.

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use extpool_host::config::edit::{self, permissions::RuleList};

use super::servers::{Target, check, chosen_file, edit_error, read};
use crate::UsageError;
use crate::context::Ctx;
use crate::output::shown;

/// `extpool tools …`.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Turn a tool off: a deny rule for it in extpool.yaml's permissions.
    Disable(ToolArgs),
    /// Turn a tool on again: the deny rule `disable` wrote removed.
    Enable(ToolArgs),
}

/// The tool and the file.
#[derive(Debug, Args)]
pub struct ToolArgs {
    /// The tool's name as `extpool list tools` shows it
    /// (mcp__SERVER__TOOL), or a glob (mcp__github__delete_*).
    pub name: String,
    /// Which extpool.yaml.
    #[command(flatten)]
    pub target: Target,
}

/// Runs `extpool tools …`.
pub fn run(ctx: &mut Ctx, command: ToolsCommand) -> Result<ExitCode> {
    let (args, disable) = match command {
        ToolsCommand::Disable(args) => (args, true),
        ToolsCommand::Enable(args) => (args, false),
    };
    let name = args.name.as_str();
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UsageError(format!(
            "{}: a tool's name has no spaces or control characters (see `{}`)",
            shown(name),
            crate::invocation::cmd("list tools")
        ))
        .into());
    }
    let chosen = chosen_file(ctx, &args.target)?;
    let file = ctx.show_path(&chosen.path);
    let old = read(ctx, &chosen.path)?;
    let edited = if disable {
        edit::permissions::add_rule(&old, RuleList::Deny, name)
    } else {
        edit::permissions::remove_rule(&old, RuleList::Deny, name)
    }
    .map_err(|e| edit_error(&file, e))?;
    if edited.changed {
        check(ctx, &chosen.path, &edited.text)?;
        edit::write_atomic(&chosen.path, &edited.text)
            .with_context(|| format!("cannot write {file}"))?;
    }
    let outcome = match (disable, edited.changed) {
        (true, true) => "disabled",
        (true, false) => "already disabled",
        (false, true) => "enabled",
        (false, false) => "not disabled",
    };
    if ctx.global.json {
        ctx.out.json_value(&serde_json::json!({
            "outcome": outcome, "name": name, "file": file, "scope": chosen.scope,
            "written": edited.changed,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let line = match (disable, edited.changed) {
        (true, true) => format!(
            "disabled {}: permissions.deny in {file} lists it; a running gateway applies it",
            shown(name)
        ),
        (true, false) => format!(
            "{} is already in permissions.deny of {file}; nothing written",
            shown(name)
        ),
        (false, true) => format!(
            "enabled {}: its rule is removed from permissions.deny in {file}; a running gateway applies it",
            shown(name)
        ),
        (false, false) => format!(
            "{} is not in permissions.deny of {file}; nothing written (a glob or another file may deny it: `{}`)",
            shown(name),
            crate::invocation::cmd("config show")
        ),
    };
    ctx.out.line(line)?;
    Ok(ExitCode::SUCCESS)
}
