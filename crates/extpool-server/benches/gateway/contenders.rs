//! The contenders: how each one is started in front of the same stdio
//! upstream (the testkit server), and the gateway's own child process.

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

/// One contender: a way of reaching the testkit's `echo` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contender {
    /// rmcp client straight to the testkit server over stdio (no hop).
    Stdio,
    /// rmcp client straight to the testkit server's own streamable HTTP
    /// transport (rmcp's server): the floor of one HTTP hop.
    Floor,
    /// extpool's gateway (`extpool_server::Gateway::serve_http`, as
    /// `extpool serve` runs it) in its own process.
    Extpool,
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
}

/// Every contender, in the order each round runs them.
pub const ALL: [Contender; 9] = [
    Contender::Stdio,
    Contender::Floor,
    Contender::Extpool,
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
            Self::Stdio => "direct stdio (rmcp → testkit)",
            Self::Floor => "floor: rmcp → rmcp HTTP",
            Self::Extpool => "extpool serve",
            Self::Supergateway => "supergateway",
            Self::McpProxyNpm => "mcp-proxy (npm)",
            Self::SdkProxy => "TS SDK proxy (30 lines)",
            Self::McpProxyPy => "mcp-proxy (PyPI)",
            Self::FastMcp => "FastMCP as_proxy",
            Self::ContextForge => "ContextForge translate",
        }
    }

    /// The key `EXTPOOL_BENCH_ONLY` selects it by.
    pub fn key(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Floor => "floor",
            Self::Extpool => "extpool",
            Self::Supergateway => "supergateway",
            Self::McpProxyNpm => "mcp-proxy-npm",
            Self::SdkProxy => "sdk-proxy",
            Self::McpProxyPy => "mcp-proxy-py",
            Self::FastMcp => "fastmcp",
            Self::ContextForge => "contextforge",
        }
    }

    /// A third-party gateway or proxy (what the targets compare with).
    pub fn is_peer(self) -> bool {
        !matches!(self, Self::Stdio | Self::Floor | Self::Extpool)
    }
}

/// The upstream every contender fronts: the testkit server over stdio.
pub fn upstream() -> (PathBuf, Vec<String>) {
    extpool_testkit::stdio_command(Vec::<String>::new()).into_parts()
}

/// A contender's HTTP server in its own process group, killed on drop.
pub struct Served {
    child: Child,
    /// The MCP endpoint.
    pub url: String,
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
fn spawn(mut command: Command, port: u16, path: &str, what: &'static str) -> Served {
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
    let mut served = Served {
        child,
        url: format!("http://127.0.0.1:{port}{path}"),
        what,
    };
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + START_PATIENCE;
    // Waits on the condition "the port accepts"; each try blocks in connect.
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        served.check_alive();
        assert!(Instant::now() < deadline, "{what} did not listen on {addr}");
        std::thread::park_timeout(Duration::from_millis(50));
    }
    served
}

/// Starts `contender` in front of the upstream; `None` for direct stdio.
pub fn start(contender: Contender, gateway_config: &Path) -> Option<Served> {
    let (program, args) = upstream();
    let port = free_port();
    let node = extpool_testkit::peers::node();
    let npm = peers().join("bench/npm/node_modules");
    let bench_peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers");
    let command = match contender {
        Contender::Stdio => return None,
        Contender::Floor => {
            let mut c = Command::new(&program);
            c.args(["--transport", "http", "--bind"])
                .arg(format!("127.0.0.1:{port}"));
            c
        }
        Contender::Extpool => {
            let mut c = Command::new(std::env::current_exe().expect("the bench binary"));
            c.env(GATEWAY_CONFIG_ENV, gateway_config)
                .env(GATEWAY_PORT_ENV, port.to_string());
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
            let dir = gateway_config.parent().expect("the project dir");
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
    Some(spawn(command, port, "/mcp", contender.name()))
}

/// Writes the gateway's project: an `extpool.yaml` with the upstream as
/// server `bench`, no skills; returns the config's path.
pub fn gateway_project(dir: &Path) -> PathBuf {
    let (program, args) = upstream();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    std::fs::create_dir_all(dir.join("home")).expect("home dir");
    let path = dir.join("extpool.yaml");
    let yaml = format!(
        "mcp_servers:\n  bench:\n    command: {:?}\n    args: [{}]\nskills:\n  paths: [./skills]\n  default_roots: false\n  watch: false\n",
        program.display().to_string(),
        args.join(", ")
    );
    std::fs::write(&path, yaml).expect("writing extpool.yaml");
    path
}

/// The gateway child: a host on the project of `config`, served over
/// streamable HTTP on the given port, as `extpool serve` does. Never returns.
pub fn run_gateway(config: &Path, port: u16) -> ! {
    use extpool_host::{Host, HostOptions, Places};
    use extpool_server::{Gateway, GatewayOptions};
    let dir = config.parent().expect("the project dir").to_path_buf();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
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
        let gateway = Gateway::new(host, GatewayOptions::default())
            .await
            .expect("starting the gateway");
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("binding the gateway port");
        gateway.serve_http(listener).await.expect("serving");
    });
    std::process::exit(0)
}
