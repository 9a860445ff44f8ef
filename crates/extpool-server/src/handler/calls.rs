//! One `tools/call` through the gateway: the name resolved in the
//! session's table (which says what its grants and the rules refuse), the
//! gateway's own tools (and the tool search, with `--tool-search`), the
//! session's bound on calls in flight, the client's input round (2026-07-28
//! `input_required`), the call on the host view with progress and server
//! requests relayed and the caller named (the host's guardrails run in that
//! call, and tell their webhook who asked), then metrics and the audit log
//! with the guardrails' decisions.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use extpool_host::catalog::BuiltinTool;
use extpool_host::core::Principal;
use extpool_host::passthrough::log_level_rank;
use extpool_host::{
    GuardedCall, HostError, InputRound, Refusal, ToolCall, ToolResult, ToolTable, Verdict,
};
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};

use super::GatewayHandler;
use super::exchange::Exchange;
use crate::audit::{AuditRecord, args_digest, millis, now_ms};
use crate::handler::relay;
use crate::input_rounds::{self, Next, RoundClient};
use crate::sessions::OpenSession;

/// Whether the client of this request takes `input_required` rounds (it
/// speaks 2026-07-28; no older client reads such a result).
fn takes_input_rounds(ex: &Exchange) -> bool {
    ex.is_modern()
}

/// A host error as the client sees it: a name it got wrong or may not
/// call is invalid params (a refusal the session's grants made says how a
/// refresh grants names, `session` the session to refresh); an upstream's
/// `URLElicitationRequiredError` (-32042) is passed on as it came, for the
/// client to open its URLs and retry; anything else a server did is a tool
/// error the model can read.
pub(super) fn call_error(e: HostError, session: &str) -> Result<CallToolResult, ErrorData> {
    if let Some(error) = e.server_error()
        && error.code == extpool_host::mcp::url_elicitation::URL_ELICITATION_REQUIRED
    {
        return Err(error.clone());
    }
    match &e {
        HostError::UnknownTool { .. } => Err(ErrorData::invalid_params(e.to_string(), None)),
        _ if e.refusal().is_some_and(Refusal::is_not_granted) => Err(ErrorData::invalid_params(
            format!(
                "{e}; RefreshMcpSources (or POST /v1/sessions/{session}/mcp-refresh) grants the names active now"
            ),
            None,
        )),
        _ if e.is_refused() => Err(ErrorData::invalid_params(e.to_string(), None)),
        _ => Ok(CallToolResult::error(vec![ContentBlock::text(
            e.to_string(),
        )])),
    }
}

/// One call counted among its connection's calls in flight while alive.
struct Slot<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How a call ended: its result (or why none), in the audit log's word.
type Outcome = (Result<CallToolResult, ErrorData>, &'static str);

impl GatewayHandler {
    /// `tools/call` of `request.name` for this connection's client, in a
    /// span naming the session, the upstream server and the tool, so every
    /// line logged on the call's way (the pool, the upstream connection)
    /// says whose call it was and where it went.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        ex: &Exchange,
    ) -> Result<CallToolResponse, ErrorData> {
        use tracing::Instrument;
        let principal = ex.caller.principal.clone();
        self.bind_caller(&principal).await;
        let table = ex.caller.table(self);
        // Borrowed from the caller's table when the name is in it (the
        // common case): no copy of either name.
        let (name, server): (Cow<'_, str>, Cow<'_, str>) = match table.row(&request.name) {
            Some(row) => (
                Cow::Borrowed(row.tool.name.as_str()),
                Cow::Borrowed(row.tool.server.as_str()),
            ),
            None => (
                Cow::Owned(request.name.to_string()),
                Cow::Owned(
                    (self.shared.host.server_of_tool(&request.name))
                        .or_else(|| self.shared.host.delegated_server_of_tool(&request.name))
                        .unwrap_or_else(|| extpool_host::BUILTIN.to_owned()),
                ),
            ),
        };
        // The request's span, which rmcp may have left in another task.
        let parent = crate::trace::call_parent(
            (ex.span.as_ref(), ex.headers.is_some()),
            (&ex.meta, &ex.id),
            &request,
            self.session_id(),
        );
        let span = tracing::info_span!(
            parent: &parent,
            "tool_call",
            principal = %ex.caller.label,
            session = %self.session_id(),
            server = %server,
            tool = %name,
        );
        // Inside the request's span too: when `tool_call` is not recorded,
        // what the call does upstream is still the request's child.
        self.call_in_span(request, ex, &table, &principal, &name, &server)
            .instrument(span)
            .instrument(parent)
            .await
    }

    async fn call_in_span(
        &self,
        request: CallToolRequestParams,
        ex: &Exchange,
        table: &Arc<ToolTable>,
        principal: &Principal,
        name: &str,
        server: &str,
    ) -> Result<CallToolResponse, ErrorData> {
        // A retry that answers a round of the gateway's goes on with a
        // call made already: no new call to count or to limit.
        let resumes = takes_input_rounds(ex)
            && request
                .request_state
                .as_deref()
                .is_some_and(input_rounds::is_ours);
        if !resumes {
            self.shared.ops.metrics.principal_call(&ex.caller.label);
            // A built-in that reaches another tool (`CallMcpWithQuery`)
            // is limited as that tool too; the gateway's own tools are
            // calls like any other.
            let args = request.arguments.as_ref();
            let reached = table
                .row(name)
                .zip(args)
                .and_then(|(row, args)| table.reached_through(row, args))
                .map(|tool| tool.name.as_str());
            let both;
            let names: &[&str] = match reached {
                Some(reached) => {
                    both = [name, reached];
                    &both
                }
                None => std::slice::from_ref(&name),
            };
            self.within_rate(ex, names).await?;
        }
        let args = request.arguments.as_ref();
        let table = &match self.delegated_reach(ex, table, name, args).await {
            Ok(table) => table,
            Err(refused) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(refused)]).into());
            }
        };
        if let Some(answer) = self
            .call_builtin(&request, ex, table, principal, name)
            .await
        {
            return answer;
        }
        let args = request.arguments.unwrap_or_default();
        let _slot = self.enter_call()?;
        let started = Instant::now();
        let table = &match self.delegated_table(ex, table, name, server).await {
            Ok(table) => table,
            Err(refused) => {
                // Nothing reached the server: the caller reads why.
                let digest = self.shared.ops.audit.is_some().then_some(&args);
                self.shared
                    .ops
                    .metrics
                    .record_call(server, name, started.elapsed(), true);
                self.audit(ex, table, name, digest, "error", &[], started);
                return Ok(CallToolResult::error(vec![ContentBlock::text(refused)]).into());
            }
        };
        let round = takes_input_rounds(ex).then(|| {
            Arc::new(InputRound::new(
                request
                    .input_responses
                    .map(|r| r.into_iter().collect::<serde_json::Map<_, _>>()),
                request.request_state,
            ))
        });
        let digest_args = self.shared.ops.audit.is_some().then(|| args.clone());
        let call = (table, principal, name, server);
        let (called, declined) = match self.execute(call, args, round.as_ref(), ex).await? {
            Next::Done { outcome, declined } => (Some(outcome), declined),
            Next::Cancelled => (None, None),
            Next::Asking(asked) => {
                // Counted once, when it ends; the audit log has each round.
                let digest = digest_args.as_ref();
                self.audit(ex, table, name, digest, "input_required", &[], started);
                return Ok(asked.into());
            }
        };
        let (outcome, verdicts) = match called {
            Some(GuardedCall {
                outcome,
                guardrails,
            }) => (Some(outcome), guardrails),
            None => (None, Vec::new()),
        };
        let asked = round.and_then(|r| r.asked());
        // Cancelled as its session closed: told so, as the call itself is.
        let outcome = outcome.or_else(|| {
            let closed = self.state.durable.as_ref()?.closed_message(principal)?;
            Some(Err(HostError::Scope(closed)))
        });
        let (mut result, word) = match outcome {
            Some(Ok(_)) if asked.is_some() => (Ok(CallToolResult::default()), "input_required"),
            outcome => settle(outcome, self.session_id()),
        };
        let failed = !matches!(&result, Ok(r) if r.is_error != Some(true));
        if failed && let Some(lacking) = declined.and_then(|m| missing_capability(server, &m)) {
            result = Err(lacking);
        }
        self.shared
            .ops
            .metrics
            .record_call(server, name, started.elapsed(), failed);
        self.audit(
            ex,
            table,
            name,
            digest_args.as_ref(),
            word,
            &verdicts,
            started,
        );
        if let Some(asked) = asked {
            return relay::input_required(asked).map(Into::into);
        }
        result.map(Into::into)
    }

    /// Answers a call of one of the gateway's own tools (the tool search,
    /// the session tools); `None` for any other tool.
    async fn call_builtin(
        &self,
        request: &CallToolRequestParams,
        ex: &Exchange,
        table: &Arc<ToolTable>,
        principal: &Principal,
        name: &str,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        match table.row(name).and_then(|row| row.builtin)? {
            BuiltinTool::ToolSearch => {
                let default = extpool_host::DeferralConfig::default();
                let config = self.shared.options.tool_search.as_ref().unwrap_or(&default);
                let args = request.arguments.clone().unwrap_or_default();
                let (result, loaded) = match crate::tool_search::search(
                    config,
                    table,
                    &self.state.connection.loaded,
                    &args,
                ) {
                    Ok(found) => found,
                    Err(e) => return Some(Err(e)),
                };
                if loaded
                    && self.has_session()
                    && let Some(client) = self.client_peer(ex)
                {
                    let changed = rmcp::model::ServerNotification::ToolListChangedNotification(
                        rmcp::model::ToolListChangedNotification::default(),
                    );
                    let _ = client.notify(changed).await;
                }
                Some(Ok(result.into()))
            }
            tool => crate::handler::source_tools::call(
                &self.shared,
                self.state.durable.as_ref(),
                principal,
                tool,
            )
            .await
            .map(|result| result.map(Into::into)),
        }
    }

    /// Runs `call` (its table, caller, tool and server) with `args`: in
    /// input rounds for a client that takes them; else once, and once more
    /// after logging its caller in to a per-user server that needs it.
    async fn execute(
        &self,
        (table, principal, name, server): (&Arc<ToolTable>, &Principal, &str, &str),
        args: serde_json::Map<String, serde_json::Value>,
        round: Option<&Arc<InputRound>>,
        ex: &Exchange,
    ) -> Result<Next<GuardedCall>, ErrorData> {
        if let Some(round) = round {
            return self
                .run_in_rounds(table, principal, name, args, round, ex)
                .await;
        }
        // A per-user server's call may log its caller in and run again.
        let again = self
            .shared
            .host
            .caller_login(server, None)
            .is_some()
            .then(|| args.clone());
        let mut called = self.run(table, principal, name, args, ex).await;
        let needs_login = matches!(
            &called,
            Some(GuardedCall {
                outcome: Err(HostError::ServerFailed { .. }),
                ..
            })
        );
        if let Some(args) = again
            && needs_login
            && self.log_in_through_client(ex, principal, server).await
        {
            let table = ex.caller.table_again(self);
            called = self.run(&table, principal, name, args, ex).await;
        }
        Ok(match called {
            Some(outcome) => Next::Done {
                outcome,
                declined: None,
            },
            None => Next::Cancelled,
        })
    }

    /// Runs the call of a client that takes input rounds: what an upstream
    /// asks during it becomes a round ([`crate::input_rounds`]), and a
    /// retry whose `requestState` is the gateway's answers the call it
    /// names instead of starting one.
    async fn run_in_rounds(
        &self,
        table: &Arc<ToolTable>,
        principal: &Principal,
        name: &str,
        args: serde_json::Map<String, serde_json::Value>,
        round: &Arc<InputRound>,
        ex: &Exchange,
    ) -> Result<Next<GuardedCall>, ErrorData> {
        let rounds = &self.shared.rounds;
        let owner = principal.owner();
        if let Some(state) = round
            .request_state
            .as_deref()
            .filter(|s| input_rounds::is_ours(s))
        {
            // Its log forwarder, if any, ends when the round's call drops
            // this request's client (it answers, or asks again).
            let (call_context, _forwarder) = relay::call_context(ex, self.log_level_of(ex));
            let here = relay::here(ex, &call_context);
            return rounds
                .resume(
                    state,
                    round.responses.as_ref(),
                    (&owner, name),
                    here,
                    &ex.ct,
                )
                .await;
        }
        let (call_context, forwarder) = relay::call_context(ex, self.log_level_of(ex));
        let (client, questions, route) = RoundClient::new(
            relay::here(ex, &call_context),
            ex.client_capabilities().unwrap_or_default(),
        );
        let mut call_context = call_context
            .with_client(client)
            .with_caller(ex.caller.label.clone())
            .with_input(round.clone());
        if call_context.wants_progress() {
            // Each round's request takes the call's progress under its token.
            call_context = call_context.with_progress_sink(route);
        }
        let (handler, table, tool) = (self.clone(), table.clone(), name.to_owned());
        let closed = session_closed(
            self.state
                .durable
                .clone()
                .map(|open| (open, principal.clone())),
        );
        let call = Box::pin(async move {
            let call = call_context.scope(
                handler
                    .view()
                    .call(ToolCall::new(&tool, args).in_table(&table)),
            );
            let outcome = tokio::select! {
                biased;
                closed = closed => closed,
                outcome = call => outcome,
            };
            if let Some(forwarder) = forwarder {
                let _ = forwarder.await;
            }
            outcome
        });
        rounds
            .start(call, questions, owner, name.to_owned(), &ex.ct)
            .await
    }

    /// The least severe level of the log messages relayed to the client of
    /// this request (a rank of [`extpool_host::passthrough::LOG_LEVELS`]): a
    /// 2026-07-28 request says it in its `_meta`
    /// (`io.modelcontextprotocol/logLevel`), and one that does not gets no
    /// log message (SEP-2575); a session's requests get what its
    /// `logging/setLevel` asked for.
    fn log_level_of(&self, ex: &Exchange) -> Arc<AtomicUsize> {
        // The request's own version, read once (a session's is never
        // 2026-07-28 or later): what `request_log_level` reads again.
        match ex.is_modern().then(|| meta_log_level(&ex.meta)) {
            Some(rank) => Arc::new(AtomicUsize::new(rank)),
            None => self.state.connection.log_level.clone(),
        }
    }

    /// A token of each of the caller's buckets a call known by `names`
    /// takes (the name called, and the tool a built-in reaches for it), or
    /// the error refusing it in SEP-3304's shape ([`crate::rate::answer`]).
    pub(super) async fn within_rate(&self, ex: &Exchange, names: &[&str]) -> Result<(), ErrorData> {
        ex.caller.take_rate(names).await.map_err(|limited| {
            self.shared.ops.metrics.rate_limited(&limited.rule);
            tracing::info!(principal = %ex.caller.label, limit = %limited.rule, "a call was refused for a rate limit");
            limited.error()
        })
    }

    /// A place among this connection's calls in flight, or the error that
    /// says the session has as many as it may
    /// ([`GatewayOptions::max_calls_per_session`](crate::GatewayOptions)).
    fn enter_call(&self) -> Result<Slot<'_>, ErrorData> {
        let max = self.shared.options.max_calls_per_session;
        let calls = &self.state.connection.calls;
        if calls.fetch_add(1, Ordering::AcqRel) >= max {
            calls.fetch_sub(1, Ordering::AcqRel);
            return Err(ErrorData::invalid_request(
                format!(
                    "this session already has {max} tool calls in flight, the most the gateway allows one session (extpool serve --max-calls-per-session); wait for one to finish"
                ),
                None,
            ));
        }
        Ok(Slot(calls))
    }

    /// Runs the call on this connection's view for `principal` with its
    /// progress and server requests relayed; `None` when the client
    /// cancelled.
    async fn run(
        &self,
        table: &ToolTable,
        principal: &Principal,
        name: &str,
        args: serde_json::Map<String, serde_json::Value>,
        ex: &Exchange,
    ) -> Option<GuardedCall> {
        let (call_context, forwarder) = relay::call_context(ex, self.log_level_of(ex));
        let call_context = call_context.with_caller(ex.caller.label.clone());
        let call = call_context.scope(self.view().call(ToolCall::new(name, args).in_table(table)));
        let closed = session_closed(
            self.state
                .durable
                .clone()
                .map(|open| (open, principal.clone())),
        );
        let outcome = tokio::select! {
            // Closing a session ends its MCP sessions, which cancels their
            // requests too: the closing is what the call is told.
            biased;
            closed = closed => Some(closed),
            result = call => Some(result),
            () = ex.ct.cancelled() => None,
        };
        if let Some(forwarder) = forwarder {
            // Every copy of the context is gone with the call: the task
            // sends what is queued, then ends.
            let _ = forwarder.await;
        }
        outcome
    }

    #[allow(clippy::too_many_arguments)]
    fn audit(
        &self,
        ex: &Exchange,
        table: &ToolTable,
        name: &str,
        args: Option<&serde_json::Map<String, serde_json::Value>>,
        outcome: &'static str,
        guardrails: &[Verdict],
        started: Instant,
    ) {
        let decision = self.view().permission(name);
        // A caller's own rule refused it: that rule decided.
        let (allowed, rule) = match table.resolve(name) {
            extpool_host::Resolved::Refused(Refusal::DeniedForPrincipal { rule, .. }) => {
                (false, rule)
            }
            // The rule's words only for the file (the page shows none).
            _ if self.shared.ops.audit.is_none() => (decision.is_allowed(), String::new()),
            _ => (decision.is_allowed(), decision.reason()),
        };
        let delegated = ex.caller.delegated();
        let record = AuditRecord {
            time_ms: now_ms(),
            principal: &ex.caller.label,
            credential: delegated.map(|d| d.mode),
            act: delegated.and_then(|d| d.act.as_ref()),
            session: self.session_id(),
            name,
            decision: if allowed { "allow" } else { "deny" },
            rule,
            outcome,
            guardrails,
            duration_ms: millis(started.elapsed()),
            // Only the file keeps it: the digest costs a copy of the
            // arguments, made only when there is a file.
            args_sha256: args.map(args_digest).unwrap_or_default(),
        };
        self.shared.ops.page.feed.push(&record);
        if let Some(log) = &self.shared.ops.audit {
            log.write(&record);
        }
    }
}

/// The least severe level of the log messages a 2026-07-28 request with
/// `meta` gets (a rank of [`extpool_host::passthrough::LOG_LEVELS`]): the
/// one its `_meta` says (`io.modelcontextprotocol/logLevel`), none without
/// one (`usize::MAX`; SEP-2575); `None` for a request of an earlier era,
/// whose session's `logging/setLevel` says it.
pub(crate) fn request_log_level(meta: &rmcp::model::RequestMetaObject) -> Option<usize> {
    if !meta
        .protocol_version()
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28)
    {
        return None;
    }
    Some(meta_log_level(meta))
}

/// The rank of the log level a 2026-07-28 request's `meta` asks for, or
/// `usize::MAX` (no log message) when it asks for none.
fn meta_log_level(meta: &rmcp::model::RequestMetaObject) -> usize {
    meta.log_level()
        .and_then(|level| log_level_rank(&crate::handler::passthrough::level_word(level)))
        .unwrap_or(usize::MAX)
}

/// The error of a call that failed after `server` asked `method`, which
/// the client did not declare: `-32021` naming the capability it lacked
/// (SEP-2575); `None` for a method no capability covers.
fn missing_capability(server: &str, method: &str) -> Option<ErrorData> {
    let mut error = ErrorData::missing_required_client_capability(relay::capability_for(method)?);
    error.message = format!(
        "Missing required client capability: MCP server \"{server}\" asked {method} during this call, which the request's _meta (io.modelcontextprotocol/clientCapabilities) does not declare"
    )
    .into();
    Some(error)
}

/// Resolves, once `durable` (a durable session's endpoint's session,
/// with the caller of the call in flight) is closed for good, to the
/// outcome that call then gets: a tool error saying the session closed.
/// Never, without a durable session (and then no caller is copied).
async fn session_closed(durable: Option<(Arc<OpenSession>, Principal)>) -> GuardedCall {
    let Some((open, principal)) = durable else {
        return std::future::pending().await;
    };
    open.until_closed().await;
    GuardedCall {
        outcome: Err(HostError::Scope(
            open.closed_message(&principal).unwrap_or_default(),
        )),
        guardrails: Vec::new(),
    }
}

/// The result the client gets for a call's outcome, and the audit word.
fn settle(outcome: Option<Result<ToolResult, HostError>>, session: &str) -> Outcome {
    match outcome {
        Some(Ok(result)) => {
            let word = if result.is_error { "tool_error" } else { "ok" };
            (
                Ok(extpool_host::mcp::convert::wire::into_call_tool_result(
                    result,
                )),
                word,
            )
        }
        Some(Err(e)) => {
            let word = if e.is_refused() {
                "denied"
            } else if e.is_blocked() {
                "blocked"
            } else {
                "error"
            };
            (call_error(e, session), word)
        }
        None => (
            Err(ErrorData::internal_error(
                "the client cancelled the call",
                None,
            )),
            "cancelled",
        ),
    }
}
