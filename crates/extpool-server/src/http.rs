//! The gateway over HTTP: `/mcp` (streamable HTTP, both protocol eras),
//! `/healthz` (the process answers), `/readyz` (the first catalog revision
//! is published and the state store answered the last heartbeat),
//! `/metrics` (Prometheus), the `/v1` API ([`crate::api`]) and the
//! operator page at `/` (`crate::page`). Every
//! route is behind the one [`crate::guard`] (Host, Origin, bearer token,
//! body size); connections are bounded by [`crate::listener`].

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, any, get};
use tokio::net::TcpListener;

use crate::gateway::{Gateway, GatewayError};
use crate::shared::Shared;

/// Path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// Whether `addr` can only be reached from this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// The one rule for where the gateway listens: an address other machines
/// can reach needs a bearer token. [`Gateway::serve_http`] applies it, and
/// a front end calls it before binding, so a refused address fails before
/// any server starts.
pub fn check_listen_address(addr: SocketAddr, has_token: bool) -> Result<(), GatewayError> {
    if is_loopback(&addr) || has_token {
        Ok(())
    } else {
        Err(GatewayError::NeedsToken { addr })
    }
}

/// `/mcp`, served by [`crate::front`]: checked, its session's slot and
/// activity kept, event ids tagged with this replica.
async fn mcp(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let make: crate::front::MakeHandler = {
        let shared = shared.clone();
        Box::new(move || Box::pin(async move { Ok(crate::handler::GatewayHandler::new(shared)) }))
    };
    crate::front::serve(&shared, "", request, make).await
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    let status = shared.host.status();
    if let Some(failure) = shared.ops.replica_health.failure() {
        // Another replica can serve durable sessions; this one cannot.
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: the state store does not answer: {failure}\n"),
        )
            .into_response();
    }
    if status.is_ready() {
        (
            StatusCode::OK,
            format!("ready: catalog revision {}\n", status.catalog.revision),
        )
            .into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: no catalog revision published yet\n",
        )
            .into_response()
    }
}

/// `/metrics`: an operator's (with identities, its labels name
/// principals and servers every principal does not see).
async fn metrics(
    State(shared): State<Arc<Shared>>,
    axum::extract::Extension(principal): axum::extract::Extension<
        Arc<extpool_host::core::Principal>,
    >,
) -> Response {
    if !principal.operator {
        return (
            StatusCode::FORBIDDEN,
            "/metrics is for this gateway's operators (an operator's token or API key)\n",
        )
            .into_response();
    }
    let mut text = shared.ops.metrics.render(&shared.host.status());
    shared.front.kept_streams.render(&mut text);
    shared.ops.page.streams.render(&mut text);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

impl Gateway {
    /// The router serving this gateway for a server listening on `addr`:
    /// every route behind the one [`crate::guard`].
    pub fn router(&self, addr: SocketAddr) -> Router {
        let options = &self.shared.options;
        let guard = Arc::new(crate::guard::Guard::new(
            addr,
            &options.allowed_hosts,
            &options.allowed_origins,
            (
                self.shared.access.identity.clone(),
                Some(self.shared.host.via().clone()),
            ),
            options.max_body_bytes,
            self.shared.ops.metrics.clone(),
        ));
        self.routes()
            .into_iter()
            .fold(Router::new(), |router, (path, route)| {
                router.route(path, route)
            })
            .layer(middleware::from_fn_with_state(guard, crate::guard::check))
    }

    /// Every path the router serves (`{id}` where a session id goes), so
    /// that what guards them can be shown to guard them all.
    pub fn paths(&self) -> Vec<&'static str> {
        self.routes().into_iter().map(|(path, _)| path).collect()
    }

    /// The one table of routes the router is made of.
    fn routes(&self) -> Vec<(&'static str, MethodRouter)> {
        let shared = self.shared.clone();
        let api = crate::api::Api {
            shared: shared.clone(),
        };
        let mut routes: Vec<(&'static str, MethodRouter)> = vec![
            (MCP_PATH, any(mcp).with_state(shared.clone())),
            ("/healthz", get(healthz)),
            ("/readyz", get(readyz).with_state(shared.clone())),
            ("/metrics", get(metrics).with_state(shared.clone())),
            (
                crate::identity::RESOURCE_METADATA_PATH,
                get(crate::identity::resource_metadata).with_state(shared.access.identity.clone()),
            ),
            (
                "/.well-known/oauth-protected-resource/{*resource}",
                get(crate::identity::resource_metadata).with_state(shared.access.identity.clone()),
            ),
            (
                "/v1/login/{server}",
                get(crate::login::status)
                    .post(crate::login::start)
                    .with_state(shared.clone()),
            ),
            (
                crate::login::CALLBACK_PATH,
                get(crate::login::callback).with_state(shared.clone()),
            ),
            (
                crate::login::LOGIN_PAGE_PATH,
                get(crate::login::confirm_page)
                    .post(crate::login::confirm)
                    .with_state(shared.clone()),
            ),
        ];
        routes.extend(crate::api::routes(&api));
        routes.extend(crate::page::routes(&shared));
        routes
    }

    /// Serves HTTP on `listener` until [`Gateway::shutdown`]. A
    /// non-loopback address needs a bearer token. Connections are bounded
    /// as [`crate::listener`] says.
    pub async fn serve_http(&self, listener: TcpListener) -> Result<(), GatewayError> {
        self.serve_http_until(listener, std::future::pending())
            .await
    }

    /// Serves HTTP on `listener` until `shutdown` completes (a signal, for
    /// `extpool serve`) or [`Gateway::shutdown`], then follows the
    /// shutdown path ([`crate::shutdown`]): new connections are refused,
    /// requests in flight get [`GatewayOptions::shutdown_timeout`] to
    /// finish, and each one still running is answered with the shutdown
    /// error and cancelled. Returns when every connection closed (or was
    /// given up); call [`Gateway::shutdown`] then to close the upstreams.
    ///
    /// [`GatewayOptions::shutdown_timeout`]: crate::GatewayOptions::shutdown_timeout
    pub async fn serve_http_until(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), GatewayError> {
        let addr = listener.local_addr().map_err(|source| GatewayError::Io {
            what: "reading the listen address".into(),
            error: source,
        })?;
        check_listen_address(addr, self.shared.access.identity.guards_network().await)?;
        let app = self.router(addr);
        let options = &self.shared.options;
        let bounds = crate::listener::Bounds {
            max_connections: options.max_connections,
            header_read_timeout: options.header_read_timeout,
        };
        crate::listener::serve(
            listener,
            app,
            bounds,
            self.shared.ops.metrics.clone(),
            self.shutdown_path(),
            shutdown,
        )
        .await
        .map_err(|source| GatewayError::Io {
            what: format!("serving HTTP on {addr}"),
            error: source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_other_machines_reach_needs_a_token() {
        let at = |a: &str| a.parse::<SocketAddr>().unwrap();
        for loopback in ["127.0.0.1:0", "[::1]:8080", "127.1.2.3:9"] {
            assert!(
                check_listen_address(at(loopback), false).is_ok(),
                "{loopback}"
            );
        }
        for open in ["0.0.0.0:0", "[::]:8080", "192.168.1.5:80"] {
            let e = check_listen_address(at(open), false).unwrap_err();
            assert!(matches!(e, GatewayError::NeedsToken { .. }), "{open}: {e}");
            assert!(check_listen_address(at(open), true).is_ok(), "{open}");
        }
    }
}
