//! Each caller's own servers: a server whose OAuth grant is per user
//! (`oauth.per_user`) is not started for everyone but in each session's
//! view, with the grant of the caller who owns the session — one upstream
//! connection per caller and server, shared by that caller's sessions,
//! never another caller's credential. A caller without a grant finds the
//! server failed with the words that say how to log in ([`crate::login`]).

use extpool_host::View;
use extpool_host::core::Principal;

use crate::shared::Shared;

/// `principal`'s own view for requests without a session: the gateway's
/// policy, and its per-caller servers with its own grant.
pub(crate) async fn stateless_view(shared: &Shared, principal: &Principal) -> View {
    let owner = principal.owner();
    let kept = &shared.access.callers;
    if let Some(view) = kept.find(&owner) {
        return view;
    }
    let _making = kept.making().await;
    if let Some(view) = kept.find(&owner) {
        return view;
    }
    // A `/` is in no durable session's id, so no session's view is this.
    let id = format!("caller/{}", extpool_auth::profile::principal_digest(&owner));
    let view = match shared.host.session(&id) {
        Ok(view) => view,
        Err(e) => {
            tracing::warn!("a caller's own view could not be opened: {e}");
            return shared.access.stateless.clone();
        }
    };
    view.set_policy(shared.access.policy.clone());
    register(shared, &view, Some(owner.clone())).await;
    let evicted = kept.keep(owner, view.clone());
    if let Some(old) = evicted {
        tokio::spawn(async move { old.close().await });
    }
    view
}

/// Registers the per-caller servers of the caller whose owner key is
/// `owner` (`None`: the gateway's one caller) in `view`. A server that
/// cannot be registered is logged; the session goes on without it.
pub(crate) async fn register(shared: &Shared, view: &View, owner: Option<String>) {
    for cap in shared.host.caller_servers(owner.as_deref()) {
        let name = extpool_host::core::Capability::id(cap.as_ref()).to_owned();
        if let Err(e) = view.register(cap).await {
            tracing::warn!(server = %name, "a caller's own server could not be added to its session: {e}");
        }
    }
}
