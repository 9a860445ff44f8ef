//! A request of a session the client named by its `Mcp-Session-Id`: its
//! owner checked (here, or in the store's record for a resume), admitted
//! to the session if held here, else resumed into a slot of its own if the
//! store keeps its record, else unknown (HTTP 404); then answered by the
//! session — its `GET` stream, its `DELETE`, a request's answer, a
//! notification or an answer to the gateway's question taken — and kept
//! busy while its answer streams.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcRequest};

use super::initialize::{self, MakeHandler};
use super::opening::refuse_full;
use super::read::{Read, rpc_error};
use super::{Session, refusals, session_not_found};
use crate::handler::caller::Caller;
use crate::held::live::{Busy, Key, Refused};
use crate::metrics::Refusal;
use crate::shared::Shared;

/// Where a session was found when its owner was checked.
pub(super) enum Found {
    /// Held here.
    Here,
    /// Not held here: its record in the store and that record's owner
    /// (`None`: no record, or no store).
    Stored(Option<Option<String>>),
}

/// The store's record of MCP session `key`: `None` when there is none
/// (or no store), else its owner. `Err` is the answer when the store
/// does not answer.
pub(super) async fn stored(shared: &Shared, key: &Key) -> Result<Option<Option<String>>, Response> {
    let Some(sessions) = &shared.sessions else {
        return Ok(None);
    };
    // Boxed: the store's future is large and a held session never waits on it.
    match Box::pin(sessions.store().mcp_session_owner(&key.0, &key.1)).await {
        Ok(record) => Ok(record),
        Err(e) => {
            tracing::warn!("cannot read an MCP session's owner: {e}");
            Err(rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                -32000,
                "the session could not be looked up (the state store does not answer); retry",
            ))
        }
    }
}

/// Whether `principal` may use MCP session `key`: its owner (as this
/// replica holds it, or as the store keeps it for a resume), or an
/// operator. A session known nowhere passes here and is answered 404 by
/// [`in_session`].
pub(super) async fn check_owner(
    shared: &Shared,
    key: &Key,
    principal: &extpool_host::core::Principal,
) -> Result<Found, Response> {
    let (owner, found) = match shared.front.live.owner(key) {
        Some(owner) => (owner, Found::Here),
        None => match stored(shared, key).await? {
            Some(owner) => (owner.clone(), Found::Stored(Some(owner))),
            None => return Ok(Found::Stored(None)),
        },
    };
    if principal.may_act_on(owner.as_deref()) {
        Ok(found)
    } else {
        Err(session_not_found())
    }
}

/// A request of a session, its owner checked.
pub(super) struct Admitted {
    pub(super) key: Key,
    /// Where its owner was found.
    pub(super) found: Found,
}

/// A request of session `key` (`found` where its owner was checked):
/// admitted to it if held here, else resumed into a slot of its own if
/// the store keeps its record ([`initialize::resume`]), else answered as
/// unknown (HTTP 404); then answered by the session ([`in_own_session`]).
pub(super) async fn in_session(
    shared: &Arc<Shared>,
    admitted: Admitted,
    parts: axum::http::request::Parts,
    read: Read,
    make: MakeHandler,
    principal: &Arc<extpool_host::core::Principal>,
) -> Response {
    let Admitted { key, found } = admitted;
    let message = &read.message;
    let live = &shared.front.live;
    let id = message.id_text();
    let admitted = match live.admit(&key, id.as_deref()) {
        Ok(busy) => Ok((busy, None)),
        Err(Refused::NotHeld) => {
            // Not held here: resumed from the store's record, if there is
            // one; if not, it is unknown, whatever the slots.
            let record = match found {
                Found::Stored(record) => record,
                // Held when its owner was checked, expired since.
                Found::Here => match stored(shared, &key).await {
                    Ok(record) => record,
                    Err(answer) => return answer,
                },
            };
            let Some(owner) = record else {
                return session_not_found();
            };
            live.resume(&key, owner, id.as_deref())
        }
        Err(refused) => Err(refused),
    };
    let (mut busy, resuming) = match admitted {
        Ok(admitted) => admitted,
        Err(Refused::DuplicateId) => {
            shared.ops.metrics.refused(Refusal::DuplicateId);
            return rpc_error(
                StatusCode::BAD_REQUEST,
                message.id.as_ref(),
                -32600,
                &format!(
                    "request id {} is already in use by a request in flight on this session; give each request its own id",
                    id.unwrap_or_default()
                ),
            );
        }
        Err(Refused::TooMany) => {
            return rpc_error(
                StatusCode::TOO_MANY_REQUESTS,
                message.id.as_ref(),
                -32000,
                &crate::held::live::too_many_requests(),
            );
        }
        Err(Refused::Full(full)) => return refuse_full(shared, message, &full),
        Err(Refused::NotHeld) => return session_not_found(),
    };
    // Admitted while another request resumes the session: this one goes
    // on once that is done.
    busy.until_resumed().await;
    if resuming.is_some() {
        // Boxed: a resume is rare, its future large.
        match Box::pin(initialize::resume(shared, &key, make, principal)).await {
            Ok(session) => live.set_session(&key, session),
            Err(answer) => {
                // The resume came to nothing (its record is gone, or the
                // store failed): no session here, unless a request
                // admitted meanwhile still makes one.
                drop(resuming);
                drop(busy);
                live.forget_unused(&key);
                return answer;
            }
        }
    }
    // The session is resumed: the requests waiting for it go on.
    drop(resuming);
    let method = parts.method.clone();
    let response = match busy.session::<Session>() {
        Some(session) => {
            let caller = Caller::of(shared, principal.clone()).presenting(&parts.extensions);
            in_own_session(shared, &key, &session, (parts, read), caller).await
        }
        None => session_not_found(),
    };
    let gone = response.status() == StatusCode::NOT_FOUND;
    if gone || (method == Method::DELETE && response.status().is_success()) {
        // Ended (or never known): free its slot.
        drop(busy);
        live.forget(&key);
        return response;
    }
    while_open(response, busy)
}

/// Answers a request (`parts`, as `read`) of `session`, held here as
/// `key` and admitted to it: `GET` its stream (or a call's, resumed),
/// `DELETE` its end, a POSTed request its answer, a notification or an
/// answer to the gateway's question taken.
pub(super) async fn in_own_session(
    shared: &Arc<Shared>,
    key: &Key,
    session: &Arc<Session>,
    (parts, read): (axum::http::request::Parts, Read),
    caller: Caller,
) -> Response {
    let Read {
        message,
        bytes,
        parsed,
    } = read;
    if let Some(request_id) = &message.cancels {
        session.cancel(request_id);
    }
    let info = session.client_info();
    let negotiated = info.as_ref().map(|info| info.protocol_version.as_str());
    if let Some(refused) = refusals::in_session(&parts.method, &parts.headers, negotiated) {
        return refused;
    }
    match parts.method {
        Method::GET => get(session, &parts.headers),
        Method::DELETE => {
            session.end();
            Box::pin(shared.front.resume.discard(&key.0, &key.1)).await;
            StatusCode::NO_CONTENT.into_response()
        }
        Method::POST => match parsed {
            Some(ClientJsonRpcMessage::Request(JsonRpcRequest {
                id,
                request: ClientRequest::InitializeRequest(_),
                ..
            })) => refusals::rpc_error(
                StatusCode::BAD_REQUEST,
                Some(&id),
                -32600,
                "this session is initialized already; an initialize starts a new session (send it without Mcp-Session-Id)",
            ),
            Some(ClientJsonRpcMessage::Request(JsonRpcRequest { id, request, .. })) => {
                let request = session.request_of(request, &bytes);
                session.answer(parts, (id, request), caller).await
            }
            Some(ClientJsonRpcMessage::Notification(notification)) => {
                if matches!(
                    notification.notification,
                    rmcp::model::ClientNotification::InitializedNotification(_)
                ) {
                    session.handler.initialized();
                }
                StatusCode::ACCEPTED.into_response()
            }
            Some(answer) => {
                session.answered(&answer);
                StatusCode::ACCEPTED.into_response()
            }
            None => refusals::rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                -32600,
                "the message could not be read",
            ),
        },
        _ => refusals::plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: an MCP endpoint takes GET, POST and DELETE",
        ),
    }
}

/// The session's `GET` stream: a stream made here that the client resumes
/// by its `Last-Event-ID`, else the stream of what the gateway sends the
/// client outside a call's answer (one at a time: 409 while one is open).
pub(super) fn get(session: &Arc<Session>, headers: &axum::http::HeaderMap) -> Response {
    let (_, accepts_sse) = refusals::accepted(headers);
    if !accepts_sse {
        return refusals::plain(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok())
        && let Some(resumed) = session.resume(last)
    {
        return resumed;
    }
    let Some(outbound) = session.outbound() else {
        return refusals::plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
    };
    let Some(messages) = outbound.open_stream() else {
        return refusals::plain(
            StatusCode::CONFLICT,
            "Conflict: this session's GET stream is open already; one at a time",
        );
    };
    crate::held::replay::listen(messages, outbound.closed().clone())
}

/// `response`, keeping its session busy until an SSE body ends (a JSON or
/// empty body is whole already).
pub(super) fn while_open(response: Response, busy: Busy) -> Response {
    let streaming = crate::front::event_ids::is_event_stream(&response);
    if !streaming {
        return response;
    }
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _busy = &busy;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}
