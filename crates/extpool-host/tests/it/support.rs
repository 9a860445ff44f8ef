//! Shared set-up: a project directory with an `extpool.yaml`, places that
//! never see the machine's own configs or skills, the testkit server's
//! command line, and the processes whose command line carries a marker.

use std::path::{Path, PathBuf};

use extpool_host::{Host, HostOptions, Places};
use extpool_testkit::procs::ServerLink;
use extpool_testkit::{StateDir, stdio_command};
use tempfile::TempDir;

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

    /// Places rooted here: the machine's own configs and skills are never read.
    pub fn places(&self) -> Places {
        Places {
            cwd: self.path().to_path_buf(),
            home: Some(self.path().join("home")),
            ..Places::default()
        }
    }

    /// Writes `extpool.yaml`.
    pub fn config(&self, yaml: &str) -> PathBuf {
        let path = self.path().join("extpool.yaml");
        std::fs::write(&path, yaml).unwrap();
        path
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

    /// Options for this project's `extpool.yaml`.
    pub fn options(&self) -> HostOptions {
        HostOptions {
            places: self.places(),
            watch_skills: Some(false),
            ..HostOptions::files([self.path().join("extpool.yaml")])
        }
    }

    /// Starts a host on this project's `extpool.yaml`.
    pub async fn start(&self) -> Host {
        Host::start(self.options()).await.unwrap()
    }
}

/// The testkit server over stdio with `state`, as YAML flow lines for a
/// server entry indented by `indent` spaces.
pub fn testkit_yaml(state: &StateDir, indent: usize) -> String {
    let (program, args) = stdio_command(state.args()).into_parts();
    let pad = " ".repeat(indent);
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "{pad}command: {:?}\n{pad}args: [{}]\n",
        program.display().to_string(),
        args.join(", ")
    )
}

pub use extpool_testkit::procs::{pids_with, wait_until_gone};

/// `{"k": v, …}` as an argument map.
pub fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().cloned().unwrap()
}

/// The server entry (YAML lines indented by `indent`) starting the
/// testkit server through `link` with `state`.
pub fn linked_yaml(link: &ServerLink, state: &StateDir, indent: usize) -> String {
    let (_, args) = stdio_command(state.args()).into_parts();
    let pad = " ".repeat(indent);
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "{pad}command: {:?}\n{pad}args: [{}]\n",
        link.command().display().to_string(),
        args.join(", ")
    )
}
