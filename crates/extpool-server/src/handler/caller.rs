//! The caller of one request, resolved once for it: who sent it (the
//! principal the guard put on its HTTP request, the local caller over
//! stdio), the tool table it sees and calls — its view's table with
//! the rules its principal's claims match (`permissions.principals`)
//! applied — and its rate bucket (`gateway.rate_limits`, [`crate::rate`]).
//! Every handler method asks the request's [`Caller`] for the table and
//! for a call's tokens; none picks a table or reaches for the limiter.
//!
//! **Adding a per-principal rule.** What a caller may see and call is one
//! policy (`extpool_host::policy`): a visibility rule is a rule of the
//! caller's policy ([`extpool_host::ViewPolicy::for_principal`]), and it
//! reaches every method through [`Caller::table`]. A rate is the caller's
//! [`Caller::take_rate`]. A quota or a content rule that is not the
//! table's goes in [`GatewayHandler::call`]'s one path
//! (`handler/calls.rs`), which every `tools/call` (plain, in rounds, as a
//! task, a built-in) takes with this caller.

use std::sync::{Arc, OnceLock};

use extpool_host::core::Principal;
use extpool_host::{Pin, ToolTable};

use super::GatewayHandler;
use crate::delegation::{CallerToken, Delegated};

/// The caller of one request.
pub(crate) struct Caller {
    /// Who sent it.
    pub principal: Arc<Principal>,
    /// Its principal's label ([`Principal::label`]), made once for the
    /// request: what its metrics, its audit record, its call's context
    /// (the guardrails' webhook) and its log lines name.
    pub label: Arc<str>,
    /// The access token it presented, when the gateway's issuer vouched
    /// for it: what a delegated server's token is made from
    /// ([`crate::delegation`]).
    pub token: Option<CallerToken>,
    /// Its table, resolved on first use and kept for the request.
    table: OnceLock<Arc<ToolTable>>,
    /// Its rate bucket, when the gateway sets limits.
    rate: Option<crate::rate::Bucket>,
    /// The delegated credential its call went with, for the audit record.
    delegated: OnceLock<Delegated>,
}

impl Caller {
    /// The caller `principal` of a request to the gateway `shared`: its
    /// rate bucket, its table not yet resolved.
    pub(crate) fn of(shared: &crate::shared::Shared, principal: Arc<Principal>) -> Self {
        let rate = shared
            .access
            .rate_limits
            .as_ref()
            .map(|limits| limits.bucket(principal.owner()));
        Self {
            label: label_of(&principal),
            principal,
            token: None,
            table: OnceLock::new(),
            rate,
            delegated: OnceLock::new(),
        }
    }

    /// Takes a token of this caller's rate bucket for a call known by
    /// `names` (the name called, and the tool a built-in reaches for
    /// it), or the limit that refuses it.
    pub(crate) async fn take_rate(&self, names: &[&str]) -> Result<(), crate::rate::Limited> {
        match &self.rate {
            Some(bucket) => bucket.take(names).await,
            None => Ok(()),
        }
    }

    /// This caller as it presented itself in a request with `extensions`:
    /// the issuer's token it presented, as the guard put it there.
    pub(crate) fn presenting(self, extensions: &http::Extensions) -> Self {
        Self {
            token: extensions.get::<CallerToken>().cloned(),
            ..self
        }
    }

    /// Makes sure this caller's token for `server` is in place when the
    /// server is reached with a token made from the caller's
    /// ([`crate::delegation`]); `Err` is what the caller reads.
    pub(crate) async fn delegate(
        &self,
        handler: &GatewayHandler,
        server: &str,
    ) -> Result<Option<Delegated>, String> {
        let shared = handler.shared();
        let delegated = shared
            .access
            .delegation
            .ensure(&shared.host, server, &self.principal, self.token.as_ref())
            .await?;
        if let Some(d) = &delegated {
            let _ = self.delegated.set(d.clone());
        }
        Ok(delegated)
    }

    /// The delegated credential this request's call went with, if any.
    pub(crate) fn delegated(&self) -> Option<&Delegated> {
        self.delegated.get()
    }

    /// The table this caller sees and calls on `handler`'s connection:
    /// its view's, with the caller's rules applied when the revision has
    /// any (else the view's table itself). Resolved once per request.
    pub(crate) fn table(&self, handler: &GatewayHandler) -> Arc<ToolTable> {
        self.table
            .get_or_init(|| resolve(handler, &self.principal))
            .clone()
    }

    /// The table again, after something this request did changed it (its
    /// caller's login granted a server): the one place a request's table
    /// is read twice.
    pub(crate) fn table_again(&self, handler: &GatewayHandler) -> Arc<ToolTable> {
        resolve(handler, &self.principal)
    }
}

/// The label of `principal`: the local caller's shared, anyone else's
/// made for it.
fn label_of(principal: &Principal) -> Arc<str> {
    static LOCAL: OnceLock<Arc<str>> = OnceLock::new();
    if principal.is_local() {
        return LOCAL.get_or_init(|| principal.label().into()).clone();
    }
    principal.label().into()
}

/// The table `principal` sees on `handler`'s connection.
fn resolve(handler: &GatewayHandler, principal: &Arc<Principal>) -> Arc<ToolTable> {
    let view = handler.view();
    if !view.revision().permissions().has_principal_rules() {
        return view.table(Pin::now());
    }
    view.table(Pin::now().policy(&view.policy().for_principal(principal)))
}
