//! Calling: a tool by catalog name, alias or built-in name on a pinned
//! revision (its outcome feeding [`crate::health`]), through the
//! configuration's [`crate::guardrails`] before dispatch and on its result,
//! a command rendered, and the errors a wrong name gets, with the name to
//! use instead.

use std::sync::Arc;

use extpool_catalog::{BuiltinTool, CallError, CatalogRevision, Query, Runner, ToolRef};
use extpool_core::{CallContext, Capability, ToolResult};
use serde_json::{Map, Value};

use super::{Pin, View, tools_of};
use crate::error::HostError;
use crate::guardrails::{Subject, Verdict};
use crate::policy::{Refusal, Resolved, Row, ToolTable};

mod tasks;

pub use tasks::RELATED_TASK;

/// One tool call ([`View::call`]): the tool (a catalog name, alias, listed
/// or built-in name), its arguments, and the table it is resolved in — a
/// table pinned earlier (a turn's, a caller's), or the view's table now.
#[derive(Debug)]
pub struct ToolCall<'a> {
    tool: &'a str,
    args: Map<String, Value>,
    table: Option<&'a ToolTable>,
}

impl<'a> ToolCall<'a> {
    /// `tool` called with `args` on the view's table now.
    pub fn new(tool: &'a str, args: Map<String, Value>) -> Self {
        Self {
            tool,
            args,
            table: None,
        }
    }

    /// Resolved in `table`, a table pinned earlier ([`View::table`]): its
    /// names, schemas, permissions and dispatch targets, even when a newer
    /// revision has been published since.
    #[must_use]
    pub fn in_table(self, table: &'a ToolTable) -> Self {
        Self {
            table: Some(table),
            ..self
        }
    }
}

/// A call's outcome and the guardrail decisions made on its way
/// ([`View::call`]): what a front end that keeps an audit log records. A
/// call that passed every guardrail untouched has none.
#[derive(Debug)]
pub struct GuardedCall {
    /// The result, or why there is none (a blocked call is
    /// [`HostError::Blocked`]).
    pub outcome: Result<ToolResult, HostError>,
    /// Each guardrail decision, in the order made: blocks, redactions,
    /// webhook failures let through.
    pub guardrails: Vec<Verdict>,
}

/// Whether the server of the call running here answered `input_required`
/// instead of a result.
fn input_asked() -> bool {
    CallContext::current()
        .and_then(|c| c.input().map(|round| round.asked().is_some()))
        .unwrap_or(false)
}

/// What guardrails see of a call of `row` with `args`: the tool it
/// reaches (through `CallMcpWithQuery`, the tool named in its arguments)
/// and who calls, as the front end put it in the call's context.
pub(super) fn subject_of(table: &ToolTable, row: &Row, args: &Map<String, Value>) -> Subject {
    let principal = super::guard::principal();
    if let Some(target) = table.reached_through(row, args) {
        return Subject {
            tool: target.name.clone(),
            server: target.server.to_string(),
            via: Some(row.tool.name.clone()),
            principal,
        };
    }
    Subject {
        tool: row.tool.name.clone(),
        server: row.tool.server.clone(),
        via: None,
        principal,
    }
}

/// A refusal as the host reports it: the permission rules' as the catalog
/// words it, any other layer's as the policy's.
pub(crate) fn refused(refusal: Refusal, through: Option<&str>) -> HostError {
    match (refusal, through) {
        (Refusal::Denied { name, rule }, None) => {
            HostError::Call(CallError::Denied { name, reason: rule })
        }
        (refusal, through) => HostError::NotAllowed {
            refusal,
            through: through.map(str::to_owned),
        },
    }
}

impl View {
    /// The error for a tool name `rev` does not have: the start failure of
    /// the server the name belongs to, when that server failed (not a
    /// suggestion of some other server's tool), else "unknown tool" with
    /// the closest name.
    pub(super) fn unknown_tool(&self, rev: &CatalogRevision, name: &str) -> HostError {
        let host = &self.inner.host;
        if let Some(server) = crate::servers::server_of(&host.loaded, name) {
            // The view's own source of that name (a per-session server, a
            // caller's own server) says why first: it is the one the call
            // would have reached.
            let own = self
                .own_sources()
                .into_iter()
                .find(|s| s.id == server)
                .and_then(|s| s.last_error.map(|e| e.to_string()));
            if let Some(reason) = own.or_else(|| host.failure_of(&server)) {
                return HostError::ServerFailed {
                    tool: name.to_owned(),
                    server,
                    reason,
                };
            }
        }
        HostError::UnknownTool {
            name: name.to_owned(),
            suggestion: suggest_tool(rev, name)
                .or_else(|| suggest_namespace(rev, &host.loaded, name)),
            failed: host.failed_servers(),
        }
    }

    /// Makes `call` as its table resolves it (this view's table now when
    /// it names none, its revision pinned for the call): a refused name is
    /// refused with why, a built-in reaches no further than a call by name
    /// would, the front end's own built-ins are its to answer, and the
    /// configuration's guardrails check the call before dispatch and its
    /// result before it is returned. The outcome comes with the guardrail
    /// decisions made on the way (what blocked, what was redacted, a
    /// webhook failure let through), for a front end's audit log. Outcomes
    /// feed [`crate::health`].
    pub async fn call(&self, call: ToolCall<'_>) -> GuardedCall {
        let ToolCall { tool, args, table } = call;
        let mut guardrails = Vec::new();
        let outcome = match table {
            Some(table) => self.call_checked(table, tool, args, &mut guardrails).await,
            None => {
                let table = self.table(Pin::now());
                self.call_checked(&table, tool, args, &mut guardrails).await
            }
        };
        GuardedCall {
            outcome,
            guardrails,
        }
    }

    /// The revision `table` was compiled from and the row `name` resolves
    /// to in it, once this view is open; the error a refused or unknown
    /// name gets otherwise (a call and a task start alike).
    pub(super) fn callable<'t>(
        &self,
        table: &'t ToolTable,
        name: &str,
    ) -> Result<(&'t Arc<CatalogRevision>, &'t Row), HostError> {
        self.check_open()?;
        let rev = table.revision();
        match table.resolve(name) {
            Resolved::Tool(row) => Ok((rev, row)),
            Resolved::Refused(refusal) => Err(refused(refusal, None)),
            _ => Err(self.unknown_tool(rev, name)),
        }
    }

    async fn call_checked(
        &self,
        table: &ToolTable,
        name: &str,
        args: Map<String, Value>,
        verdicts: &mut Vec<Verdict>,
    ) -> Result<ToolResult, HostError> {
        let (rev, row) = self.callable(table, name)?;
        match row.builtin {
            Some(b) if b.runner() != Runner::Catalog => {
                return Err(HostError::FrontEndTool {
                    name: b.name().to_owned(),
                });
            }
            Some(BuiltinTool::CallMcpWithQuery) => {
                let arg = |key: &str| args.get(key).and_then(Value::as_str);
                if let (Some(server), Some(tool)) = (arg("server"), arg("tool"))
                    && let Some(refusal) = table.refusal_through(server, tool)
                {
                    return Err(refused(refusal, Some(&row.tool.name)));
                }
            }
            _ => {}
        }
        let guard = self.guard(|| subject_of(table, row, &args), &args);
        if let Some(guard) = &guard {
            guard.call(&args, verdicts).await?;
        }
        let name = row.tool.name.as_str();
        let outcome = match row.builtin {
            Some(BuiltinTool::CallMcpWithQuery) => {
                self.query(rev, args, guard.as_ref(), verdicts).await
            }
            _ => {
                let outcome = rev.call(name, args).await;
                record_health(self, remote_capability(rev, name), &outcome);
                match (outcome, &guard) {
                    // A server that asked for input (2026-07-28
                    // `input_required`) gave no result yet: its questions
                    // go back to the client, and the result of the retry
                    // is checked.
                    (Ok(result), _) if input_asked() => Ok(result),
                    (Ok(result), Some(guard)) => guard.result(result, verdicts).await,
                    (Ok(result), None) => Ok(result),
                    (Err(e), _) => Err(self.call_error(rev, e)),
                }
            }
        };
        match (outcome, &guard) {
            (Err(e), Some(guard)) => Err(guard.error(e, verdicts)),
            (outcome, _) => outcome,
        }
    }

    /// `CallMcpWithQuery` with `args` on `rev`: the tool's result checked
    /// by `guard` before the filter reads it, and the filter's output
    /// after (a tool error is passed on unfiltered, checked once).
    async fn query(
        &self,
        rev: &CatalogRevision,
        args: Map<String, Value>,
        guard: Option<&super::guard::Guard>,
        verdicts: &mut Vec<Verdict>,
    ) -> Result<ToolResult, HostError> {
        let mut query = rev.query(args).map_err(|e| self.call_error(rev, e))?;
        let target = remote_capability(rev, &query.tool().name);
        let outcome = query.call().await;
        record_health(self, target, &outcome);
        let result = outcome.map_err(|e| self.call_error(rev, e))?;
        if input_asked() {
            return Ok(result);
        }
        let Some(guard) = guard else {
            return query
                .filter(result)
                .await
                .map_err(|e| self.call_error(rev, e));
        };
        let checked = guard.result(result, verdicts).await?;
        let filters = Query::filters(&checked);
        let output = query
            .filter(checked)
            .await
            .map_err(|e| self.call_error(rev, e))?;
        if !filters {
            return Ok(output);
        }
        guard.result(output, verdicts).await
    }

    /// A call's error as the host reports it: the name unknown may be the
    /// one a built-in reaches (`CallMcpWithQuery`'s `tool`), which is said.
    fn call_error(&self, rev: &CatalogRevision, e: CallError) -> HostError {
        match e {
            CallError::UnknownTool { name } => self.unknown_tool(rev, &name),
            e => HostError::Call(e),
        }
    }

    /// Renders command `name` (with or without its `/`) with `args`: a
    /// skill's body with `$ARGUMENTS` substituted, or an MCP prompt
    /// (`key=value` arguments) through the guardrails.
    pub async fn run(&self, name: &str, args: &[String]) -> Result<String, HostError> {
        self.check_open()?;
        let name = name.trim_start_matches('/');
        let rev = self.revision();
        let named: Map<String, Value> = args
            .iter()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
            .collect();
        let guard = self.prompt_guard(&rev, name, &named);
        let text = rev
            .render_command(name, args)
            .await
            .map_err(|e| self.command_error(&rev, name, e));
        match (text, guard) {
            (Ok(text), Some(guard)) => guard.text(text).await,
            (Err(e), Some(guard)) => Err(guard.error(e, &mut Vec::new())),
            (text, None) => text,
        }
    }

    /// The guard of MCP prompt `name` of `rev` got with `args`, checked as
    /// a result of a tool of that name; `None` for a command that is no
    /// MCP prompt (a local skill's, the user's own text).
    pub(crate) fn prompt_guard(
        &self,
        rev: &CatalogRevision,
        name: &str,
        args: &Map<String, Value>,
    ) -> Option<super::guard::Guard> {
        let command = rev.command(name)?;
        if command.kind != extpool_catalog::CommandKind::McpPrompt {
            return None;
        }
        let subject = Subject {
            tool: command.name.clone(),
            server: command.server.to_string(),
            via: None,
            principal: super::guard::principal(),
        };
        self.guard(|| subject, args)
    }

    /// A command's error as the host reports it: an unknown name with the
    /// closest known command.
    pub(crate) fn command_error(
        &self,
        rev: &CatalogRevision,
        name: &str,
        e: extpool_catalog::CommandError,
    ) -> HostError {
        if e.is_unknown() {
            return HostError::UnknownCommand {
                name: name.to_owned(),
                suggestion: extpool_config::diagnostics::did_you_mean(
                    name,
                    rev.all_commands().map(|c| c.name.as_str()),
                )
                .map(|s| format!("/{s}")),
            };
        }
        HostError::Command(e)
    }
}

/// Records a call's `outcome` at `target`, the capability it was
/// dispatched to, in the host's health ([`crate::health`]).
fn record_health(
    view: &View,
    target: Option<Arc<dyn Capability>>,
    outcome: &Result<ToolResult, CallError>,
) {
    let Some(cap) = target else { return };
    match outcome {
        Ok(_) => {
            view.inner.host.health.record(&cap, Ok(()));
        }
        Err(CallError::Source { error, .. }) => {
            view.inner.host.health.record(&cap, Err(error));
        }
        Err(_) => {}
    }
}

/// The capability a remote tool of `rev` dispatches to.
fn remote_capability(rev: &CatalogRevision, name: &str) -> Option<Arc<dyn Capability>> {
    match rev.tool(name)? {
        ToolRef::Remote(tool) => rev
            .chain()
            .find_map(|r| r.source(&tool.server))
            .map(|s| s.capability.clone()),
        _ => None,
    }
}

/// A suggestion for an unknown tool: the one tool whose own name it is
/// (a call without the `mcp__<server>__` prefix), else the closest name.
/// For `mcp__<namespace>__<tool>` whose namespace no configured server has
/// and nothing visible is named under (the server's name mistyped, so none
/// was started): the same tool under the closest configured namespace.
fn suggest_namespace(
    rev: &CatalogRevision,
    loaded: &extpool_config::Loaded,
    name: &str,
) -> Option<String> {
    use extpool_catalog::names;
    let (namespace, tool) = names::split(name)?;
    if crate::servers::server_of(loaded, name).is_some() {
        return None;
    }
    if rev
        .all_tools()
        .any(|t| names::in_namespace(&t.name, namespace))
    {
        return None;
    }
    let namespaces = loaded
        .enabled_servers()
        .map(|(server, c)| c.prefix.as_deref().unwrap_or(server.as_str()));
    let closest = extpool_config::diagnostics::did_you_mean(namespace, namespaces)?;
    Some(names::compose(closest, tool))
}

fn suggest_tool(rev: &CatalogRevision, name: &str) -> Option<String> {
    let mut by_original = rev.all_tools().filter(|t| t.original() == name);
    if let (Some(only), None) = (by_original.next(), by_original.next()) {
        return Some(only.name.clone());
    }
    let names: Vec<String> = tools_of(rev).into_iter().map(|t| t.name).collect();
    extpool_config::diagnostics::did_you_mean(name, names.iter().map(String::as_str))
        .map(str::to_owned)
}
