//! A gateway never proxies itself. `extpool serve` reads and watches the
//! agents' own configs — the very files its banner tells users to add it
//! to — so each agent's entry for the gateway, written as that agent
//! writes it (`claude mcp add …` into `~/.claude.json`, the Codex snippet
//! into `~/.codex/config.toml`, the Cursor snippet into
//! `~/.cursor/mcp.json`; the exact snippets the banner prints, and the
//! other spellings of its address), is left out with one line saying why,
//! while it runs and when it starts again. A chain through another
//! extpool that leads back is refused where it loops (`Extpool-Via`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::discovery::{sources_until, tools};
use crate::support::Sandbox;

/// Upper bound of anything waited for; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(120);

/// Fast discovery, the testkit server, no skills.
fn config(sb: &Sandbox) {
    sb.testkit_config(
        "discovery:\n  interval_ms: 100\n  backoff_initial_ms: 100\n  backoff_max_ms: 200\nskills:\n  default_roots: false\n  watch: false\n",
    );
}

/// A running `extpool serve`: its banner, and its stderr line by line.
struct Gateway {
    child: Child,
    /// Everything it printed on stdout up to "Stop with Ctrl-C.".
    banner: String,
    /// The MCP endpoint of its first line.
    url: String,
    /// Its stderr lines, as they come.
    lines: mpsc::Receiver<String>,
    /// The stderr lines read so far.
    seen: Vec<String>,
}

impl Gateway {
    /// `extpool serve --listen ADDR` in `sb`, its whole banner read.
    fn start(sb: &Sandbox, listen: &str) -> Self {
        let mut command = sb.command();
        command
            .args(["serve", "--listen", listen, "--toolhive=false"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let (tx, lines) = mpsc::channel();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut banner = String::new();
        for line in stdout.by_ref() {
            let line = line.unwrap();
            banner.push_str(&line);
            banner.push('\n');
            if line.contains("Stop with Ctrl-C.") {
                break;
            }
        }
        std::thread::spawn(move || stdout.for_each(drop));
        let first = banner.lines().next().unwrap_or_default();
        let url = first[first.find("http://").expect(&banner)..]
            .trim()
            .to_owned();
        Self {
            child,
            banner,
            url,
            lines,
            seen: Vec::new(),
        }
    }

    /// `http://127.0.0.1:PORT`.
    fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_owned()
    }

    /// The port it listens on.
    fn port(&self) -> String {
        self.base().rsplit(':').next().unwrap().to_owned()
    }

    /// The banner's snippet for the agent `label` (its line, or the
    /// lines indented under it).
    fn snippet(&self, label: &str) -> Vec<String> {
        let mut lines = self
            .banner
            .lines()
            .skip_while(|l| !l.trim_start().starts_with(label));
        let head = lines
            .next()
            .unwrap_or_else(|| panic!("no {label} in {}", self.banner));
        let rest: Vec<String> = lines
            .take_while(|l| l.starts_with("                 "))
            .map(|l| l.trim().to_owned())
            .collect();
        let head = head
            .trim_start()
            .trim_start_matches(label)
            .trim()
            .to_owned();
        std::iter::once(head).chain(rest).collect()
    }

    /// Waits for a stderr line holding `what`; the line.
    fn line(&mut self, what: &str) -> String {
        if let Some(line) = self.seen.iter().find(|l| l.contains(what)) {
            return line.clone();
        }
        loop {
            let line = self
                .lines
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("no line with {what:?} in {:#?}", self.seen));
            self.seen.push(line.clone());
            if line.contains(what) {
                return line;
            }
        }
    }

    /// The tools its MCP endpoint lists.
    fn tools(&self) -> Vec<String> {
        tools(&self.url)
    }

    /// Stops it with SIGTERM and waits.
    fn stop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        extpool_testkit::procs::wait_exited(self.child.id());
        let _ = self.child.wait();
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of a GET of `url`.
fn text(url: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { reqwest::get(url).await.unwrap().text().await.unwrap() })
}

/// The configuration source's status in `/v1/sources`.
fn config_source(sources: &Value) -> &Value {
    sources["discovery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["source"] == "config")
        .unwrap_or_else(|| panic!("no config source: {sources:#}"))
}

/// Whether the config source's notes say `name` was left out as this
/// gateway itself, from `file`.
fn left_out(sources: &Value, name: &str, file: &str) -> bool {
    config_source(sources)["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .any(|n| n.starts_with(&format!("server {name:?} ({file}")) && n.contains("left out: "))
}

#[test]
fn the_gateway_added_to_each_agent_as_its_banner_says_is_left_out() {
    let sb = Sandbox::new();
    config(&sb);
    let mut g = Gateway::start(&sb, "127.0.0.1:0");
    let (base, port, url) = (g.base(), g.port(), g.url.clone());
    let before = g.tools();
    assert!(!before.is_empty());
    let home = sb.home();

    // Claude Code: `claude mcp add --transport http extpool URL` (the
    // banner's line) writes this project's entry in ~/.claude.json; `claude
    // mcp add -s user gateway -- extpool serve --stdio` (what the banner's
    // last line suggests) a user-wide stdio one.
    let add = g.snippet("Claude Code");
    assert_eq!(
        add,
        [format!("claude mcp add --transport http extpool {url}")]
    );
    let added_url = add[0].rsplit(' ').next().unwrap();
    let claude = json!({
        "numStartups": 4,
        "projects": {sb.work().display().to_string(): {
            "allowedTools": [],
            "mcpServers": {"extpool": {"type": "http", "url": added_url}},
        }},
        "mcpServers": {"gateway": {"type": "stdio", "command": "extpool", "args": ["serve", "--stdio"], "env": {}}},
    });
    std::fs::write(home.join(".claude.json"), claude.to_string()).unwrap();
    let sources = sources_until(&base, "Claude Code's entries left out", |s| {
        left_out(s, "extpool", "~/.claude.json") && left_out(s, "gateway", "~/.claude.json")
    });
    let notes = config_source(&sources)["notes"].to_string();
    assert!(notes.contains("it is this gateway itself"), "{notes}");
    assert!(notes.contains("it runs `extpool serve`"), "{notes}");
    let line = g.line("\"extpool\" (~/.claude.json");
    assert!(
        line.contains("left out: it is this gateway itself"),
        "{line}"
    );
    std::fs::remove_file(home.join(".claude.json")).unwrap();

    // Codex: the banner's snippet in ~/.codex/config.toml, and the
    // gateway again as the address it listens on spelled other ways.
    let snippet = g.snippet("Codex").split_off(1).join("\n");
    assert_eq!(snippet, format!("[mcp_servers.extpool]\nurl = \"{url}\""));
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(
        home.join(".codex/config.toml"),
        format!(
            "{snippet}\n\n[mcp_servers.unspecified]\nurl = \"http://0.0.0.0:{port}/mcp\"\n\n[mcp_servers.v6]\nurl = \"http://[::1]:{port}/sessions/s1/mcp\"\n"
        ),
    )
    .unwrap();
    sources_until(&base, "Codex's entries left out", |s| {
        ["extpool", "unspecified", "v6"]
            .iter()
            .all(|n| left_out(s, n, "~/.codex/config.toml"))
    });
    std::fs::remove_file(home.join(".codex/config.toml")).unwrap();

    // Cursor: the banner's JSON in ~/.cursor/mcp.json, with `localhost`.
    let cursor = g.snippet("Cursor");
    let cursor = cursor[0].trim_start_matches("in .cursor/mcp.json:").trim();
    let mut document: Value = serde_json::from_str(cursor).unwrap();
    assert_eq!(document, json!({"mcpServers": {"extpool": {"url": url}}}));
    document["mcpServers"]["named"] = json!({"url": format!("http://LocalHost:{port}/mcp")});
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    std::fs::write(home.join(".cursor/mcp.json"), document.to_string()).unwrap();
    let sources = sources_until(&base, "Cursor's entries left out", |s| {
        ["extpool", "named"]
            .iter()
            .all(|n| left_out(s, n, "~/.cursor/mcp.json"))
    });
    // Nothing of it was started: the gateway serves what it served.
    assert!(
        !config_source(&sources)["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s != "testkit"),
        "{sources:#}"
    );
    assert_eq!(g.tools(), before);
    let metrics = text(&format!("{base}/metrics"));
    assert!(
        metrics.contains("extpool_refused_total{reason=\"loop\"} 0\n"),
        "no request of its own ever reached it: {metrics}"
    );

    // Started again on the same address with every agent's entry in
    // place: each is left out at once, with its line, instead of the start
    // waiting for a gateway that is not serving yet.
    std::fs::write(home.join(".claude.json"), claude.to_string()).unwrap();
    g.stop();
    let mut again = Gateway::start(&sb, &format!("127.0.0.1:{port}"));
    let skipped = again.line("extpool: skipped: it is this gateway itself");
    assert!(skipped.contains(&format!("127.0.0.1:{port}")), "{skipped}");
    again.line("gateway: skipped: it runs `extpool serve`");
    let summary = again.line("server ready");
    assert!(summary.contains("1 of 1 server ready"), "{summary}");
    assert!(
        !again.seen.iter().any(|l| l.contains("initialize")),
        "{:#?}",
        again.seen
    );
    assert_eq!(again.tools(), before);
    again.stop();
}

#[test]
fn a_chain_through_another_extpool_is_refused_where_it_loops() {
    let (sa, sb) = (Sandbox::new(), Sandbox::new());
    config(&sa);
    config(&sb);
    let a = Gateway::start(&sa, "127.0.0.1:0");
    let b = Gateway::start(&sb, "127.0.0.1:0");
    let cursor = |sandbox: &Sandbox, name: &str, url: &str| {
        std::fs::create_dir_all(sandbox.home().join(".cursor")).unwrap();
        std::fs::write(
            sandbox.home().join(".cursor/mcp.json"),
            json!({"mcpServers": {name: {"url": url}}}).to_string(),
        )
        .unwrap();
    };
    let serves = |sources: &Value, name: &str| {
        config_source(sources)["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == name)
    };
    // B proxies A: fine.
    cursor(&sb, "a", &a.url);
    sources_until(&b.base(), "B serving A", |s| serves(s, "a"));
    let b_tools = b.tools();
    assert!(
        b_tools.iter().any(|t| t.starts_with("mcp__a__")),
        "{b_tools:?}"
    );
    // A proxies B too: the loop is refused at B (A's requests carry B's
    // mark, learnt from B's), and A's entry for B fails saying why.
    cursor(&sa, "b", &b.url);
    let sources = sources_until(&a.base(), "A's entry for B refused", |s| {
        config_source(s)["failed"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["name"] == "b"))
    });
    let failed = config_source(&sources)["failed"].to_string();
    assert!(
        failed.contains("came through this extpool already"),
        "{failed}"
    );
    let metrics = text(&format!("{}/metrics", b.base()));
    assert!(
        !metrics.contains("extpool_refused_total{reason=\"loop\"} 0\n"),
        "{metrics}"
    );
    // Neither grows: B lists A's tools once, A none of B's.
    assert_eq!(b.tools(), b_tools);
    assert!(!a.tools().iter().any(|t| t.starts_with("mcp__b__")));

    // A stdio chain: an extpool started by as many extpools as a chain may
    // hold refuses to serve.
    let chain: Vec<String> = (0..8).map(|i| format!("{i:016x}")).collect();
    let run = sa.run_with(&["serve", "--stdio"], &[("EXTPOOL_VIA", &chain.join(","))]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("started by a chain of 8 extpool gateways"),
        "{}",
        run.stderr
    );
}
