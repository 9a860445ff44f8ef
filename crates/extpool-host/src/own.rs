//! A gateway never proxies itself. The configs it reads and watches are
//! the agents' own, the very files its banner tells users to add it to:
//! an entry for the gateway in `~/.claude.json`, Codex's `config.toml` or
//! Cursor's `mcp.json` would have it connect to itself, list its own
//! tools again under a new prefix at every change, and take more
//! connections each time. [`OwnEndpoints::recognise`] finds such an entry
//! before anything is started: a URL of the gateway's own listen address
//! in any spelling (a loopback name for a gateway on loopback or on every
//! interface, the unspecified address, an address of this machine — or a
//! name that resolves to one — for a gateway on every interface; any
//! path: `/mcp` and each session's endpoint alike), and a stdio entry that runs `extpool serve` (another
//! gateway of these same configs, which would start one in turn). The
//! host leaves such an entry out with one line saying why.
//!
//! What this cannot see — a name that does not resolve here, a proxy in
//! front, a chain through another extpool — the mark on every request finds ([`extpool_mcp::via`]):
//! the gateway refuses a request that came through it already.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use extpool_config::McpServerConfig;

/// What a host serving as a gateway knows of its own endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnEndpoints {
    /// The address it listens on over HTTP (none for a stdio gateway).
    pub listen: Option<SocketAddr>,
}

/// Whether `command`'s file is extpool's executable: named `extpool` (or
/// `extpool.exe`), or the very file this process runs.
fn is_extpool(command: &str) -> bool {
    // Either separator: a Windows path in a config read anywhere.
    let name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    if name == "extpool" || name.eq_ignore_ascii_case("extpool.exe") {
        return true;
    }
    let path = Path::new(command);
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    match (
        std::env::current_exe().ok().and_then(|e| canonical(&e)),
        path.is_absolute().then(|| canonical(path)).flatten(),
    ) {
        (Some(own), Some(other)) => own == other,
        _ => false,
    }
}

/// How long a host name of an entry on the gateway's port is looked up.
const RESOLVE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// The addresses `name` resolves to, within [`RESOLVE_PATIENCE`] (none
/// when it does not resolve by then: connecting to it would not reach
/// the gateway any sooner).
fn resolve(name: &str, port: u16) -> Vec<IpAddr> {
    use std::net::ToSocketAddrs;
    let (tx, rx) = std::sync::mpsc::channel();
    let target = (name.to_owned(), port);
    std::thread::spawn(move || {
        let found: Vec<IpAddr> = target
            .to_socket_addrs()
            .map(|addrs| addrs.map(|a| a.ip()).collect())
            .unwrap_or_default();
        let _ = tx.send(found);
    });
    rx.recv_timeout(RESOLVE_PATIENCE).unwrap_or_default()
}

/// Whether `ip` is an address of this machine (a socket can be bound to
/// it).
fn is_local_address(ip: IpAddr) -> bool {
    ip.is_loopback()
        || ip.is_unspecified()
        || std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

impl OwnEndpoints {
    /// Why `config` would reach this gateway itself, if it would (in
    /// words, for the line that says it is left out).
    pub fn recognise(&self, config: &McpServerConfig) -> Option<String> {
        if let Some(command) = &config.command {
            if is_extpool(command) && config.args.iter().any(|a| a == "serve") {
                return Some(
                    "it runs `extpool serve`, another gateway of these same configs, which would start one in turn"
                        .to_owned(),
                );
            }
            return None;
        }
        let listen = self.listen?;
        let url = url::Url::parse(config.url.as_deref()?).ok()?;
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        if url.port_or_known_default() != Some(listen.port()) {
            return None;
        }
        let named = match url.host()? {
            // `localhost.` is `localhost` (the root's dot).
            url::Host::Domain(name) => {
                let name = name.strip_suffix('.').unwrap_or(name);
                if extpool_core::web::is_loopback_host(name) {
                    listen.ip().is_loopback() || listen.ip().is_unspecified()
                } else {
                    // This machine's own name: connecting to it before the
                    // gateway serves would wait out the start-up timeout.
                    resolve(name, listen.port())
                        .into_iter()
                        .any(|ip| self.reaches(ip, listen))
                }
            }
            url::Host::Ipv4(ip) => self.reaches(IpAddr::V4(ip), listen),
            // `[::ffff:127.0.0.1]` is 127.0.0.1 on a dual-stack socket.
            url::Host::Ipv6(ip) => match ip.to_ipv4_mapped() {
                Some(v4) => self.reaches(IpAddr::V4(v4), listen),
                None => self.reaches(IpAddr::V6(ip), listen),
            },
        };
        // The URL as a listing shows it: no query, no credentials.
        let shown = format!(
            "{}://{}{}",
            url.scheme(),
            url.host_str().unwrap_or_default(),
            url.port().map(|p| format!(":{p}")).unwrap_or_default()
        ) + url.path();
        named.then(|| {
            format!("it is this gateway itself ({shown} reaches its listen address {listen})")
        })
    }

    /// Whether a connection to `ip` at the listen port reaches the
    /// gateway listening on `listen`.
    fn reaches(&self, ip: IpAddr, listen: SocketAddr) -> bool {
        if ip == listen.ip() || ip.is_unspecified() {
            return true;
        }
        if listen.ip().is_unspecified() {
            return is_local_address(ip);
        }
        ip.is_loopback() && listen.ip().is_loopback()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(listen: &str) -> OwnEndpoints {
        OwnEndpoints {
            listen: Some(listen.parse().unwrap()),
        }
    }

    fn http(url: &str) -> McpServerConfig {
        McpServerConfig::http(url)
    }

    #[test]
    fn its_own_address_in_any_spelling_is_itself() {
        let on_loopback = own("127.0.0.1:8520");
        for url in [
            "http://127.0.0.1:8520/mcp",
            "http://localhost:8520/mcp",
            "http://LOCALHOST:8520/sessions/s1/mcp",
            "http://[::1]:8520/mcp",
            "http://127.0.0.2:8520/",
            "http://0.0.0.0:8520/mcp",
            "http://[::]:8520/mcp",
            "http://127.1:8520/mcp",
            "http://2130706433:8520/mcp",
            "http://0x7f.0.0.1:8520/mcp",
            "http://[::ffff:127.0.0.1]:8520/mcp",
            "http://localhost.:8520/mcp",
            "https://127.0.0.1:8520/mcp",
        ] {
            assert!(on_loopback.recognise(&http(url)).is_some(), "{url}");
        }
        for url in [
            "http://127.0.0.1:8521/mcp",
            "http://localhost/mcp",
            "https://mcp.example.com:8520/mcp",
            "http://10.255.255.1:8520/mcp",
        ] {
            assert!(on_loopback.recognise(&http(url)).is_none(), "{url}");
        }
        let everywhere = own("0.0.0.0:8520");
        for url in ["http://127.0.0.1:8520/mcp", "http://localhost:8520/mcp"] {
            assert!(everywhere.recognise(&http(url)).is_some(), "{url}");
        }
        // An address no interface here has is another machine.
        assert!(
            everywhere
                .recognise(&http("http://192.0.2.1:8520/mcp"))
                .is_none()
        );
        let why = on_loopback
            .recognise(&http("http://localhost:8520/mcp"))
            .unwrap();
        assert!(why.contains("http://localhost:8520/mcp"), "{why}");
        // A stdio gateway has no address to be reached at.
        assert!(
            OwnEndpoints::default()
                .recognise(&http("http://127.0.0.1:8520/mcp"))
                .is_none()
        );
    }

    #[test]
    fn a_stdio_entry_that_runs_extpool_serve_is_a_gateway_of_these_configs() {
        let gateway = OwnEndpoints::default();
        for (command, args) in [
            ("extpool", vec!["serve", "--stdio"]),
            (
                "/usr/local/bin/extpool",
                vec!["--config", "x.yaml", "serve"],
            ),
            ("C:\\tools\\extpool.EXE", vec!["serve", "--stdio"]),
        ] {
            let config = McpServerConfig::stdio(command, args.clone());
            assert!(gateway.recognise(&config).is_some(), "{command} {args:?}");
        }
        for (command, args) in [
            ("extpool", vec!["list", "tools"]),
            ("npx", vec!["-y", "@modelcontextprotocol/server-everything"]),
            ("extpool-like", vec!["serve"]),
        ] {
            let config = McpServerConfig::stdio(command, args.clone());
            assert!(gateway.recognise(&config).is_none(), "{command} {args:?}");
        }
    }
}
