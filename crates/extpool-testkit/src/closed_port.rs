//! A loopback port that refuses connections, for tests of what is down.

use std::net::SocketAddr;

/// A loopback port that refuses connections and that nothing else can take
/// while this lives: a socket bound to it that does not listen. (A port
/// bound and released again may be taken by another test meanwhile.)
#[derive(Debug)]
pub struct ClosedPort(tokio::net::TcpSocket);

impl ClosedPort {
    /// A fresh port on 127.0.0.1.
    ///
    /// # Panics
    ///
    /// When no socket can be made or bound.
    pub fn new() -> Self {
        let socket =
            tokio::net::TcpSocket::new_v4().unwrap_or_else(|e| panic!("cannot make a socket: {e}"));
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        socket
            .bind(any)
            .unwrap_or_else(|e| panic!("cannot bind 127.0.0.1:0: {e}"));
        Self(socket)
    }

    /// Its address.
    ///
    /// # Panics
    ///
    /// When the socket has none (it is bound, so never).
    pub fn addr(&self) -> SocketAddr {
        self.0
            .local_addr()
            .unwrap_or_else(|e| panic!("the bound socket has no address: {e}"))
    }

    /// Listens on it from now on: what was down comes up (inside a tokio
    /// runtime).
    ///
    /// # Panics
    ///
    /// When the socket cannot listen.
    pub fn listen(self) -> tokio::net::TcpListener {
        self.0
            .listen(1024)
            .unwrap_or_else(|e| panic!("cannot listen: {e}"))
    }
}

impl Default for ClosedPort {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_closed_port_refuses_until_it_listens() {
        let port = ClosedPort::new();
        let addr = port.addr();
        let refused = tokio::net::TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
        let listener = port.listen();
        let (connected, accepted) =
            tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
        connected.unwrap();
        accepted.unwrap();
    }
}
