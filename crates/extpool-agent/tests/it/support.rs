//! Shared set-up: a project directory with an `extpool.yaml` and skills,
//! places that never see the machine's own configs, the testkit server's
//! command line (direct or through a breakable link), and bounded waits.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use extpool_agent::{AgentFactory, AgentOptions};
use extpool_host::{Host, HostOptions, McpServerConfig, Places};
use extpool_testkit::procs::ServerLink;
use extpool_testkit::{StateDir, stdio_command};
use tempfile::TempDir;

/// Upper bound for anything a test waits for; only reached when broken.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Awaits `f`, failing the test if it takes longer than [`PATIENCE`].
pub async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(PATIENCE, f)
        .await
        .expect("timed out waiting")
}

/// Waits until `check` holds for what the servers recorded in `state`
/// (looking again at each change there), failing after [`PATIENCE`].
pub async fn eventually(
    state: &extpool_testkit::StateDir,
    check: impl FnMut(&extpool_testkit::StateDir) -> bool,
    what: &str,
) {
    state.until(what, PATIENCE, check).await;
}

/// A project: a temporary working directory and an empty home.
pub struct Project {
    pub dir: TempDir,
}

impl Project {
    /// An empty project.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Self { dir }
    }

    /// The project directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `extpool.yaml`.
    pub fn config(&self, yaml: &str) {
        std::fs::write(self.path().join("extpool.yaml"), yaml).unwrap();
    }

    /// Writes `skills/<name>/SKILL.md` with `frontmatter` (YAML lines) and `body`.
    pub fn skill(&self, name: &str, frontmatter: &str, body: &str) -> PathBuf {
        let dir = self.path().join("skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\n{frontmatter}---\n{body}\n"),
        )
        .unwrap();
        dir
    }

    /// Options for this project's `extpool.yaml`, reading nothing else.
    pub fn options(&self) -> HostOptions {
        HostOptions {
            places: Places {
                cwd: self.path().to_path_buf(),
                home: Some(self.path().join("home")),
                ..Places::default()
            },
            watch_skills: Some(false),
            ..HostOptions::files([self.path().join("extpool.yaml")])
        }
    }

    /// Starts a host on this project and a factory with `options`.
    pub async fn start_with(&self, options: AgentOptions) -> (Host, AgentFactory) {
        let host = Host::start(self.options()).await.unwrap();
        let factory = AgentFactory::with_options(host.clone(), options);
        (host, factory)
    }

    /// Starts a host on this project and a factory with default options.
    pub async fn start(&self) -> (Host, AgentFactory) {
        self.start_with(AgentOptions::default()).await
    }
}

fn yaml_entry(program: &Path, args: &[String], indent: usize) -> String {
    let pad = " ".repeat(indent);
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "{pad}command: {:?}\n{pad}args: [{}]\n",
        program.display().to_string(),
        args.join(", ")
    )
}

/// The testkit server over stdio with `state`, as a server entry's YAML
/// lines indented by `indent` spaces.
pub fn testkit_yaml(state: &StateDir, indent: usize) -> String {
    let (program, args) = stdio_command(state.args()).into_parts();
    yaml_entry(&program, &args, indent)
}

/// The testkit server started through `link` (which a test can break).
pub fn linked_yaml(link: &ServerLink, state: &StateDir, indent: usize) -> String {
    let (_, args) = stdio_command(state.args()).into_parts();
    yaml_entry(link.command(), &args, indent)
}

/// The testkit server with `state`, as a configuration value.
pub fn testkit_config(state: &StateDir) -> McpServerConfig {
    let (program, args) = stdio_command(state.args()).into_parts();
    McpServerConfig::stdio(program.display().to_string(), args)
}

/// The marker of a server's process: its state directory.
pub fn marker(state: &StateDir) -> String {
    state.path().display().to_string()
}

/// `{"k": v, …}` as an argument map.
pub fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().cloned().unwrap()
}

/// Names of the tools a compiled agent offers.
pub fn names(compiled: &extpool_agent::CompiledAgent) -> Vec<String> {
    compiled.tools().map(|t| t.name.clone()).collect()
}

/// An `extpool.yaml` with the testkit server as `kit` (with `state`), no
/// skills.
pub fn kit_config(state: &StateDir) -> String {
    format!(
        "mcp_servers:\n  kit:\n{}skills:\n  default_roots: false\n",
        testkit_yaml(state, 4)
    )
}

/// The first agent event `pick` accepts.
pub async fn agent_event<T>(
    events: &mut tokio::sync::broadcast::Receiver<extpool_agent::AgentEvent>,
    pick: impl Fn(extpool_agent::AgentEvent) -> Option<T>,
) -> T {
    within(async {
        loop {
            if let Some(found) = events.recv().await.ok().and_then(&pick) {
                return found;
            }
        }
    })
    .await
}

/// The first host event of `changes` that `pick` accepts.
pub async fn host_event<T>(
    changes: &mut (impl futures::Stream<Item = extpool_host::HostEvent> + Unpin),
    pick: impl Fn(extpool_host::HostEvent) -> Option<T>,
) -> T {
    use futures::StreamExt;
    within(async {
        loop {
            if let Some(found) = changes.next().await.and_then(&pick) {
                return found;
            }
        }
    })
    .await
}
