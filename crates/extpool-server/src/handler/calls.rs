//! One `tools/call` through the gateway: the gateway's own tools (and the
//! tool search, with `--tool-search`), session grants, the session's bound
//! on calls in flight, the client's input round (2026-07-28
//! `input_required`), the call on the host view with progress and server
//! requests relayed, then metrics and the audit log.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use extpool_host::{HostError, InputRound, ToolResult};
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use super::GatewayHandler;
use crate::audit::{AuditRecord, args_digest, millis, now_ms};
use crate::relay;

/// Whether the client of this request takes `input_required` rounds (it
/// speaks 2026-07-28; rmcp refuses to send such a result to an older peer).
fn takes_input_rounds(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28)
}

/// A host error as the client sees it: a name it got wrong is invalid
/// params; anything else a server did is a tool error the model can read.
fn call_error(e: HostError) -> Result<CallToolResult, ErrorData> {
    match &e {
        HostError::UnknownTool { .. } => Err(ErrorData::invalid_params(e.to_string(), None)),
        _ if e.is_denied() => Err(ErrorData::invalid_params(e.to_string(), None)),
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
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        use tracing::Instrument;
        let name = self.catalog_tool(&request.name);
        let server = self
            .shared
            .host
            .server_of_tool(&name)
            .unwrap_or_else(|| extpool_host::BUILTIN.to_owned());
        let span = tracing::info_span!(
            "tool_call",
            session = %self.session_id(),
            server = %server,
            tool = %name,
        );
        self.call_in_span(request, context, name, server)
            .instrument(span)
            .await
    }

    async fn call_in_span(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        name: String,
        server: String,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(result) =
            crate::source_tools::call(&self.shared, self.durable.as_ref(), &name).await
        {
            return result.map(Into::into);
        }
        if let Some(config) = &self.shared.options.tool_search
            && name == crate::tool_search::SEARCH_TOOL
        {
            let args = request.arguments.unwrap_or_default();
            let (result, loaded) = crate::tool_search::search(
                config,
                &self.visible_tools(),
                &self.names(),
                &self.connection.loaded,
                &args,
            )?;
            if loaded && self.has_session() {
                let _ = context.peer.notify_tool_list_changed().await;
            }
            return Ok(result.into());
        }
        // A name not granted in this replica's copy may have been granted
        // through another replica: the store decides.
        if !self.may_call(&name) && !self.sync_authority().await.may_call(&name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "{name} is not granted to this session; RefreshMcpSources (or POST /v1/sessions/{}/mcp-refresh) grants the names active now",
                    self.session_id()
                ),
                None,
            ));
        }
        let args = request.arguments.as_ref();
        if let Some(target) = self.denied_through(&name, args)
            && self
                .sync_authority()
                .await
                .denied_through(&name, args)
                .is_some()
        {
            return Err(ErrorData::invalid_params(
                format!(
                    "{name} may call only the tools granted to this session, and {target} is not; RefreshMcpSources (or POST /v1/sessions/{}/mcp-refresh) grants the names active now",
                    self.session_id()
                ),
                None,
            ));
        }
        let _slot = self.enter_call()?;
        let round = takes_input_rounds(&context).then(|| {
            Arc::new(InputRound::new(
                request
                    .input_responses
                    .map(|r| r.into_iter().collect::<serde_json::Map<_, _>>()),
                request.request_state,
            ))
        });
        let args = request.arguments.unwrap_or_default();
        let started = Instant::now();
        let digest_args = self.shared.audit.is_some().then(|| args.clone());
        let outcome = self.run(&name, args, round.clone(), &context).await;
        let asked = round.and_then(|r| r.asked());
        let (result, word) = match outcome {
            Some(Ok(_)) if asked.is_some() => (Ok(CallToolResult::default()), "input_required"),
            outcome => settle(outcome),
        };
        let failed = !matches!(&result, Ok(r) if r.is_error != Some(true));
        self.shared
            .metrics
            .record_call(&server, &name, started.elapsed(), failed);
        if let Some(args) = &digest_args {
            self.audit(&name, args, word, started);
        }
        if let Some(asked) = asked {
            return relay::input_required(asked).map(Into::into);
        }
        result.map(Into::into)
    }

    /// A place among this connection's calls in flight, or the error that
    /// says the session has as many as it may
    /// ([`GatewayOptions::max_calls_per_session`](crate::GatewayOptions)).
    fn enter_call(&self) -> Result<Slot<'_>, ErrorData> {
        let max = self.shared.options.max_calls_per_session;
        let calls = &self.connection.calls;
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

    /// Runs the call on this connection's view with its progress, server
    /// requests and input round relayed; `None` when the client cancelled.
    async fn run(
        &self,
        name: &str,
        args: serde_json::Map<String, serde_json::Value>,
        round: Option<Arc<InputRound>>,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<ToolResult, HostError>> {
        let (mut call_context, forwarders) =
            relay::call_context(context, self.connection.log_level.clone());
        if let Some(round) = round {
            call_context = call_context.with_input(round);
        }
        let call = call_context.scope(self.view().call(name, args));
        let outcome = tokio::select! {
            result = call => Some(result),
            () = context.ct.cancelled() => None,
        };
        for forwarder in forwarders {
            // Every copy of the context is gone with the call: each task
            // sends what is queued, then ends.
            let _ = forwarder.await;
        }
        outcome
    }

    fn audit(
        &self,
        name: &str,
        args: &serde_json::Map<String, serde_json::Value>,
        outcome: &'static str,
        started: Instant,
    ) {
        let Some(log) = &self.shared.audit else {
            return;
        };
        let decision = self.view().permission(name);
        log.write(&AuditRecord {
            time_ms: now_ms(),
            session: self.session_id(),
            name,
            decision: if decision.is_allowed() {
                "allow"
            } else {
                "deny"
            },
            rule: decision.reason(),
            outcome,
            duration_ms: millis(started.elapsed()),
            args_sha256: args_digest(args),
        });
    }
}

/// The result the client gets for a call's outcome, and the audit word.
fn settle(outcome: Option<Result<ToolResult, HostError>>) -> Outcome {
    match outcome {
        Some(Ok(result)) => {
            let word = if result.is_error { "tool_error" } else { "ok" };
            (
                Ok(extpool_host::mcp::convert::wire::call_tool_result(&result)),
                word,
            )
        }
        Some(Err(e)) => {
            let word = if e.is_denied() { "denied" } else { "error" };
            (call_error(e), word)
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
