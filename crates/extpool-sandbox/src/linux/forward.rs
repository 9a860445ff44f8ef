//! The forwarding path of an allow-listed `host:port`: extpool accepts on
//! the listener the server's child opened inside its network namespace and
//! connects to the target from the host's network; nothing else leaves the
//! namespace.

use std::net::SocketAddr;
use std::os::fd::OwnedFd;

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::profile::{Host, NetTarget};

/// The most connections forwarded at once for one target; more are
/// closed as they arrive.
const MAX_CONNECTIONS: usize = 256;

/// Where one listener's connections go.
#[derive(Debug, Clone)]
pub(crate) enum Outbound {
    /// The address the server dialled, as it is outside (a loopback or
    /// other IP address the profile names).
    Addr(SocketAddr),
    /// A DNS name, resolved by extpool at each connection.
    Name(String, u16),
}

impl Outbound {
    pub(crate) fn of(target: &NetTarget, listening: SocketAddr) -> Outbound {
        match &target.host {
            Host::Ip(_) | Host::Localhost => Outbound::Addr(listening),
            Host::Name(name) => Outbound::Name(name.clone(), target.port),
        }
    }

    async fn connect(&self) -> std::io::Result<TcpStream> {
        match self {
            Outbound::Addr(addr) => TcpStream::connect(addr).await,
            Outbound::Name(name, port) => TcpStream::connect((name.as_str(), *port)).await,
        }
    }
}

/// Forwards every connection accepted on `listener` to `outbound` until
/// the task is aborted (the server's transport is dropped).
pub(crate) async fn forward(listener: OwnedFd, outbound: Outbound, server: String) {
    let listener = std::net::TcpListener::from(listener);
    let listener = match listener
        .set_nonblocking(true)
        .and_then(|()| TcpListener::from_std(listener))
    {
        Ok(l) => l,
        Err(error) => {
            tracing::warn!(%server, %error, "cannot forward an allowed target");
            return;
        }
    };
    let mut connections = JoinSet::new();
    loop {
        let inbound = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::debug!(%server, %error, "accepting a forwarded connection failed");
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        if connections.len() >= MAX_CONNECTIONS {
            tracing::warn!(%server, "too many forwarded connections; closing a new one");
            continue;
        }
        let outbound = outbound.clone();
        let server = server.clone();
        connections.spawn(async move {
            let mut inbound = inbound;
            match outbound.connect().await {
                Ok(mut out) => {
                    let _ = copy_bidirectional(&mut inbound, &mut out).await;
                }
                Err(error) => {
                    tracing::debug!(%server, ?outbound, %error, "an allowed target refused");
                }
            }
        });
    }
}
