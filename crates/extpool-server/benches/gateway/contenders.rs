//! The contenders: how each one is started in front of the same stdio
//! upstream (the testkit server or the raw echo server), the two
//! fixed-body HTTP floors, and the gateway's own child process.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

/// How long a contender may take to listen; only reached when broken.
const START_PATIENCE: Duration = Duration::from_secs(180);

/// Environment variables that make the benchmark binary run the gateway.
pub const GATEWAY_CONFIG_ENV: &str = "EXTPOOL_BENCH_GATEWAY_CONFIG";
/// The port the gateway child listens on.
pub const GATEWAY_PORT_ENV: &str = "EXTPOOL_BENCH_GATEWAY_PORT";
/// The OTLP endpoint the gateway child exports its traces to, if any.
pub const GATEWAY_OTLP_ENV: &str = "EXTPOOL_BENCH_GATEWAY_OTLP";
/// Makes the benchmark binary run the fixed-body HTTP server on this port.
pub const FIXED_PORT_ENV: &str = "EXTPOOL_BENCH_FIXED_PORT";
/// Makes the benchmark binary run the hop floor on this port, in front of
/// the upstream `UPSTREAM_ENV` names.
pub const HOP_PORT_ENV: &str = "EXTPOOL_BENCH_HOP_PORT";
/// Calls in flight one session may have in the gateway under test: above
/// the most connections measured, since every connection shares one session.
pub const GATEWAY_CALLS_PER_SESSION: usize = 1024;
/// Sessions the gateway under test holds at once: above the idle-session
/// measurement's largest step.
pub const GATEWAY_MAX_SESSIONS: usize = 200_000;

/// The body both fixed-body floors answer every request with: a
/// `tools/call` result as extpool would give it.
pub const FIXED_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ping"}],"isError":false}}"#;

/// The stdio server behind every MCP contender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// The testkit server (rmcp's stdio server, with its many tools).
    Testkit,
    /// `extpool-raw-echo`: a hand-written stdio echo, so that what a
    /// contender costs itself shows.
    RawEcho,
}

impl Upstream {
    /// Both upstreams, in the order each round runs them.
    pub const ALL: [Upstream; 2] = [Upstream::RawEcho, Upstream::Testkit];

    /// The upstream whose [`Upstream::key`] is `key`.
    pub fn of_key(key: &str) -> Option<Upstream> {
        Self::ALL.into_iter().find(|u| u.key() == key)
    }

    /// The label in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Testkit => "testkit server",
            Self::RawEcho => "raw echo server",
        }
    }

    /// The key in file names and samples.
    pub fn key(self) -> &'static str {
        match self {
            Self::Testkit => "testkit",
            Self::RawEcho => "raw-echo",
        }
    }
}

/// One contender: a way of reaching an `echo` tool over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contender {
    /// nginx answering every request with one fixed body (no MCP): the
    /// HTTP floor, and the load generator's ceiling.
    Nginx,
    /// A hyper server (axum) answering every request with one fixed body.
    Fixed,
    /// The load generator straight to the testkit server's own streamable HTTP
    /// transport (rmcp's server): the floor of one HTTP hop.
    Floor,
    /// axum writing each body to the stdio upstream as a line and answering
    /// with its line (`gateway/hop.rs`): the floor of a stdio hop.
    Hop,
    /// extpool's gateway (`extpool_server::Gateway::serve_http`, as
    /// `extpool serve` runs it) in its own process.
    Extpool,
    /// The same gateway exporting its traces over OTLP to a collector that
    /// is down (a closed port): what tracing costs when it cannot send.
    ExtpoolOtlp,
    /// The same gateway driven with 2026-07-28 requests (no session, each
    /// with its `_meta` and the era's headers).
    Extpool2026,
    /// `supergateway` (npm), stdio → streamable HTTP, stateful.
    Supergateway,
    /// `mcp-proxy` (npm, punkpeye; on the TypeScript SDK 2.x packages).
    McpProxyNpm,
    /// A 30-line proxy on `@modelcontextprotocol/sdk` 1.x (benches/peers/sdk_proxy.mjs).
    SdkProxy,
    /// `mcp-proxy` (PyPI, sparfenyuk; on the Python SDK).
    McpProxyPy,
    /// FastMCP's `FastMCP.as_proxy` (benches/peers/fastmcp_proxy.py).
    FastMcp,
    /// ContextForge's stdio → streamable HTTP bridge (`mcpgateway.translate`).
    ContextForge,
    /// extpool's gateway as an earlier build of this benchmark serves it
    /// (the binary `EXTPOOL_BENCH_BEFORE` names): before and after a
    /// change, interleaved in one run. Left out when the variable is unset.
    ExtpoolBefore,
}

/// Names an earlier build of this benchmark binary whose gateway runs as
/// the `extpool-before` contender.
pub const BEFORE_ENV: &str = "EXTPOOL_BENCH_BEFORE";

/// Every contender, in the order each round runs them.
pub const ALL: [Contender; 14] = [
    Contender::Nginx,
    Contender::Fixed,
    Contender::Floor,
    Contender::Hop,
    Contender::Extpool,
    Contender::ExtpoolBefore,
    Contender::ExtpoolOtlp,
    Contender::Extpool2026,
    Contender::Supergateway,
    Contender::McpProxyNpm,
    Contender::SdkProxy,
    Contender::McpProxyPy,
    Contender::FastMcp,
    Contender::ContextForge,
];

impl Contender {
    /// The label in tables and samples.
    pub fn name(self) -> &'static str {
        match self {
            Self::Nginx => "nginx, fixed body (no MCP)",
            Self::Fixed => "hyper, fixed body (no MCP)",
            Self::Floor => "testkit on rmcp HTTP (no hop)",
            Self::Hop => "axum + one pipe, no MCP logic (stdio hop floor)",
            Self::Extpool => "extpool serve",
            Self::ExtpoolOtlp => "extpool serve, OTLP collector down",
            Self::Extpool2026 => "extpool serve, 2026-07-28 requests",
            Self::Supergateway => "supergateway",
            Self::McpProxyNpm => "mcp-proxy (npm)",
            Self::SdkProxy => "TS SDK proxy (30 lines)",
            Self::McpProxyPy => "mcp-proxy (PyPI)",
            Self::FastMcp => "FastMCP as_proxy",
            Self::ContextForge => "ContextForge translate",
            Self::ExtpoolBefore => "extpool serve, before",
        }
    }

    /// The key `EXTPOOL_BENCH_ONLY` selects it by.
    pub fn key(self) -> &'static str {
        match self {
            Self::Nginx => "nginx",
            Self::Fixed => "fixed",
            Self::Floor => "floor",
            Self::Hop => "hop",
            Self::Extpool => "extpool",
            Self::ExtpoolOtlp => "extpool-otlp",
            Self::Extpool2026 => "extpool-2026",
            Self::Supergateway => "supergateway",
            Self::McpProxyNpm => "mcp-proxy-npm",
            Self::SdkProxy => "sdk-proxy",
            Self::McpProxyPy => "mcp-proxy-py",
            Self::FastMcp => "fastmcp",
            Self::ContextForge => "contextforge",
            Self::ExtpoolBefore => "extpool-before",
        }
    }

    /// A third-party gateway or proxy (what the targets compare with).
    pub fn is_peer(self) -> bool {
        !matches!(
            self,
            Self::Nginx
                | Self::Fixed
                | Self::Floor
                | Self::Hop
                | Self::Extpool
                | Self::ExtpoolBefore
                | Self::ExtpoolOtlp
                | Self::Extpool2026
        )
    }

    /// A contender with no stdio upstream behind it: measured once a
    /// round, whatever the upstream.
    pub fn is_floor(self) -> bool {
        matches!(self, Self::Nginx | Self::Fixed | Self::Floor)
    }

    /// Answers every request with one body: no session, no tool list.
    pub fn is_fixed(self) -> bool {
        matches!(self, Self::Nginx | Self::Fixed)
    }

    /// Driven with 2026-07-28 requests, without a session.
    pub fn is_stateless(self) -> bool {
        self == Self::Extpool2026
    }
}

/// The command of the stdio server behind every MCP contender.
pub fn upstream(which: Upstream) -> (PathBuf, Vec<String>) {
    match which {
        Upstream::Testkit => extpool_testkit::stdio_command(Vec::<String>::new()).into_parts(),
        Upstream::RawEcho => (extpool_testkit::raw_echo_binary().to_path_buf(), Vec::new()),
    }
}

/// A contender's HTTP server in its own process group, killed on drop.
pub struct Served {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    what: &'static str,
}

impl Drop for Served {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Served {
    /// The contender's process id (its process group's leader).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process still runs.
    pub fn check_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("{} exited early: {status}", self.what);
        }
    }
}

/// 32 random bytes as hex (a throw-away secret for a peer that needs one).
fn random_hex() -> String {
    use std::io::Read as _;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("reading /dev/urandom");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("binding a free port");
    l.local_addr().expect("local address").port()
}

fn peers() -> PathBuf {
    extpool_testkit::peers::peers_dir()
}

fn need(path: &Path, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} missing at {}: run `scripts/peers.sh --bench`",
        path.display()
    );
    path.to_path_buf()
}

/// Starts `command` (listening on `port`) and waits until the port accepts.
fn spawn(mut command: Command, port: u16, what: &'static str) -> Served {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if std::env::var_os("EXTPOOL_BENCH_VERBOSE").is_some() {
        command.stderr(Stdio::inherit()).stdout(Stdio::inherit());
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut served = Served { child, addr, what };
    let deadline = Instant::now() + START_PATIENCE;
    // Waits on the condition "the port accepts"; each try blocks in connect.
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        served.check_alive();
        assert!(Instant::now() < deadline, "{what} did not listen on {addr}");
        std::thread::park_timeout(Duration::from_millis(50));
    }
    served
}

/// nginx's configuration for the fixed-body floor in `dir`.
fn nginx_conf(dir: &Path, port: u16) -> PathBuf {
    let conf = dir.join(format!("nginx-{port}.conf"));
    let body = FIXED_BODY.replace('\'', "\\'");
    let text = format!(
        "worker_processes auto;\npid {pid};\nerror_log {err} error;\n\
         events {{ worker_connections 4096; }}\n\
         http {{ access_log off; keepalive_requests 10000000; keepalive_timeout 600s;\n\
         client_body_temp_path {tmp}; proxy_temp_path {tmp}; fastcgi_temp_path {tmp};\n\
         uwsgi_temp_path {tmp}; scgi_temp_path {tmp};\n\
         server {{ listen 127.0.0.1:{port}; location / {{ default_type application/json;\n\
         return 200 '{body}'; }} }} }}\n",
        pid = dir.join(format!("nginx-{port}.pid")).display(),
        err = dir.join("nginx-error.log").display(),
        tmp = dir.display(),
    );
    std::fs::write(&conf, text).expect("writing nginx.conf");
    conf
}

fn nginx() -> PathBuf {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("nginx missing: run `scripts/peers.sh` (it installs nginx-light)")
}

/// Starts `contender` in front of `which` upstream.
pub fn start(contender: Contender, which: Upstream, gateway_config: &Path) -> Served {
    let (program, args) = upstream(which);
    let port = free_port();
    let node = extpool_testkit::peers::node();
    let npm = peers().join("bench/npm/node_modules");
    let bench_peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers");
    let dir = gateway_config.parent().expect("the project dir");
    let command = match contender {
        Contender::Nginx => {
            let mut c = Command::new(nginx());
            c.arg("-c")
                .arg(nginx_conf(dir, port))
                .args(["-g", "daemon off;", "-p"])
                .arg(dir);
            c
        }
        Contender::Fixed => {
            let mut c = Command::new(std::env::current_exe().expect("the bench binary"));
            c.env(FIXED_PORT_ENV, port.to_string());
            c
        }
        Contender::Hop => {
            let mut c = Command::new(std::env::current_exe().expect("the bench binary"));
            c.env(HOP_PORT_ENV, port.to_string())
                .env(UPSTREAM_ENV, which.key());
            c
        }
        Contender::Floor => {
            let mut c = Command::new(&program);
            c.args(["--transport", "http", "--bind"])
                .arg(format!("127.0.0.1:{port}"));
            c
        }
        Contender::Extpool
        | Contender::ExtpoolBefore
        | Contender::ExtpoolOtlp
        | Contender::Extpool2026 => {
            let binary = if contender == Contender::ExtpoolBefore {
                before_binary()
            } else {
                std::env::current_exe().expect("the bench binary")
            };
            let mut c = Command::new(binary);
            c.env(GATEWAY_CONFIG_ENV, gateway_config)
                .env(GATEWAY_PORT_ENV, port.to_string())
                .env(UPSTREAM_ENV, which.key());
            if contender == Contender::ExtpoolOtlp {
                c.env(GATEWAY_OTLP_ENV, closed_port_url());
            }
            c
        }
        Contender::Supergateway => {
            let script = need(&npm.join("supergateway/dist/index.js"), "supergateway");
            let line = std::iter::once(program.display().to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" ");
            let mut c = Command::new(&node);
            c.arg(script)
                .args(["--stdio", &line, "--outputTransport", "streamableHttp"])
                .args(["--stateful", "--logLevel", "none", "--port"])
                .arg(port.to_string());
            c
        }
        Contender::McpProxyNpm => {
            let script = need(&npm.join("mcp-proxy/dist/bin/mcp-proxy.mjs"), "mcp-proxy");
            let mut c = Command::new(&node);
            c.arg(script)
                .args(["--server", "stream", "--host", "127.0.0.1", "--port"])
                .arg(port.to_string())
                .arg("--")
                .arg(&program)
                .args(&args);
            c
        }
        Contender::SdkProxy => {
            let sdk = need(
                &peers().join("node_modules/@modelcontextprotocol/sdk"),
                "@modelcontextprotocol/sdk",
            );
            let mut c = Command::new(&node);
            c.arg(bench_peers.join("sdk_proxy.mjs"))
                .arg(sdk)
                .arg(port.to_string())
                .arg(&program)
                .args(&args);
            c
        }
        Contender::McpProxyPy => {
            let bin = need(
                &peers().join("bench/mcp-proxy-venv/bin/mcp-proxy"),
                "mcp-proxy (PyPI)",
            );
            let mut c = Command::new(bin);
            c.args(["--host", "127.0.0.1", "--port"])
                .arg(port.to_string())
                .arg("--")
                .arg(&program)
                .args(&args);
            c
        }
        Contender::FastMcp => {
            let python = need(&peers().join("bench/fastmcp-venv/bin/python"), "fastmcp");
            let mut c = Command::new(python);
            c.arg(bench_peers.join("fastmcp_proxy.py"))
                .arg(port.to_string())
                .arg(&program)
                .args(&args);
            c
        }
        Contender::ContextForge => {
            let python = need(
                &peers().join("bench/contextforge-venv/bin/python"),
                "mcp-contextforge-gateway",
            );
            let line = std::iter::once(program.display().to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" ");
            let mut c = Command::new(python);
            // It refuses to start without secrets of its own: fresh ones per run.
            c.args(["-m", "mcpgateway.translate", "--stdio", &line])
                .args(["--expose-streamable-http", "--host", "127.0.0.1"])
                .args(["--logLevel", "error", "--port"])
                .arg(port.to_string())
                .current_dir(dir)
                .env("JWT_SECRET_KEY", random_hex())
                .env("AUTH_ENCRYPTION_SECRET", random_hex())
                .env(
                    "DATABASE_URL",
                    format!("sqlite:///{}", dir.join("contextforge.db").display()),
                );
            c
        }
    };
    spawn(command, port, contender.name())
}

/// The earlier build `BEFORE_ENV` names; a contender asked for without it
/// fails the run.
fn before_binary() -> PathBuf {
    let path = std::env::var_os(BEFORE_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "extpool-before needs {BEFORE_ENV}: the path of an earlier build of this benchmark"
            )
        });
    assert!(
        path.is_file(),
        "{BEFORE_ENV}: no file at {}",
        path.display()
    );
    path
}

/// Tells the gateway child which upstream its project names.
pub const UPSTREAM_ENV: &str = "EXTPOOL_BENCH_UPSTREAM";

/// Writes the gateway's projects: one `extpool-<upstream>.yaml` per
/// upstream, that upstream as server `bench`, no skills; returns the
/// testkit one (the other sits beside it).
pub fn gateway_project(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("home")).expect("home dir");
    for which in Upstream::ALL {
        write_project(dir, which);
    }
    dir.join("extpool-testkit.yaml")
}

fn write_project(dir: &Path, which: Upstream) {
    let (program, args) = upstream(which);
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    let path = dir.join(format!("extpool-{}.yaml", which.key()));
    let yaml = format!(
        "mcp_servers:\n  bench:\n    command: {:?}\n    args: [{}]\nskills:\n  paths: [./skills]\n  default_roots: false\n  watch: false\n",
        program.display().to_string(),
        args.join(", ")
    );
    std::fs::write(&path, yaml).expect("writing extpool.yaml");
}

/// The gateway child: a host on the project of `config` (or the one beside
/// it for the upstream `UPSTREAM_ENV` names), served over streamable HTTP
/// on the given port, as `extpool serve` does. Never returns.
pub fn run_gateway(config: &Path, port: u16) -> ! {
    use extpool_host::{Host, HostOptions, Places};
    use extpool_server::{Gateway, GatewayOptions};
    let dir = config.parent().expect("the project dir").to_path_buf();
    let key = std::env::var(UPSTREAM_ENV).unwrap_or_else(|_| "testkit".into());
    let config = dir.join(format!("extpool-{key}.yaml"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // With an OTLP endpoint, the layer `extpool serve --otlp-endpoint`
    // installs; kept until the process exits.
    let _traces = std::env::var(GATEWAY_OTLP_ENV).ok().map(|endpoint| {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        let (layer, traces) = extpool_server::otel::start(Some(&endpoint))
            .expect("starting the OTLP exporter")
            .expect("an endpoint was given");
        tracing_subscriber::registry()
            .with(layer)
            .try_init()
            .expect("one subscriber");
        traces
    });
    rt.block_on(async move {
        let host = Host::start(HostOptions {
            places: Places {
                cwd: dir.clone(),
                home: Some(dir.join("home")),
                ..Places::default()
            },
            watch_skills: Some(false),
            relay: true,
            ..HostOptions::files([config.to_path_buf()])
        })
        .await
        .expect("starting the host");
        let options = GatewayOptions {
            max_calls_per_session: GATEWAY_CALLS_PER_SESSION,
            max_sessions: GATEWAY_MAX_SESSIONS,
            // The load generator is one caller holding every session.
            sessions_per_principal: GATEWAY_MAX_SESSIONS,
            ..GatewayOptions::default()
        };
        let gateway = Gateway::new(host, options)
            .await
            .expect("starting the gateway");
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("binding the gateway port");
        gateway.serve_http(listener).await.expect("serving");
    });
    std::process::exit(0)
}

/// The fixed-body floor's child: axum on a multi-threaded runtime, every
/// request answered 200 with [`FIXED_BODY`]. Never returns.
pub fn run_fixed(port: u16) -> ! {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let app = axum::Router::new().fallback(|| async {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                FIXED_BODY,
            )
        });
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("binding the fixed-body port");
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .await
            .expect("serving the fixed body");
    });
    std::process::exit(0)
}

/// The URL of a port nothing listens on (it was bound, then closed): a
/// collector that is down.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    format!("http://{}", listener.local_addr().expect("its address"))
}
