//! Shared set-up: a project directory with an `extpool.yaml`, places that
//! never see the machine's own configs or skills, the testkit server's
//! command line, and the processes whose command line carries a marker.

use std::path::{Path, PathBuf};

use extpool_host::{Host, HostOptions, Places};
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

/// Pids of live processes whose command line contains `marker`.
pub fn pids_with(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let alive = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        if alive && String::from_utf8_lossy(&cmdline).contains(marker) {
            pids.push(pid);
        }
    }
    pids
}

/// `{"k": v, …}` as an argument map.
pub fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().cloned().unwrap()
}

/// Waits (up to 10 s) until no live process carries `marker`; panics with
/// the pids that remain.
pub async fn wait_until_gone(marker: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let pids = pids_with(marker);
        if pids.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "processes still running after shutdown: {pids:?} ({marker})"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A symbolic link to the testkit server binary, so a test can make the
/// server impossible to start again (remove the link) and possible again
/// (restore it) while extpool runs.
pub struct Link {
    pub path: PathBuf,
    target: PathBuf,
}

impl Link {
    /// A link named `name` in `dir` to the testkit server.
    pub fn testkit(dir: &Path, name: &str) -> Self {
        let (program, _) = stdio_command(Vec::<String>::new()).into_parts();
        let path = dir.join(name);
        std::os::unix::fs::symlink(&program, &path).unwrap();
        Self {
            path,
            target: program,
        }
    }

    /// The server entry (YAML lines indented by `indent`) starting the
    /// server through this link with `state`.
    pub fn yaml(&self, state: &StateDir, indent: usize) -> String {
        let (_, args) = stdio_command(state.args()).into_parts();
        let pad = " ".repeat(indent);
        let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
        format!(
            "{pad}command: {:?}\n{pad}args: [{}]\n",
            self.path.display().to_string(),
            args.join(", ")
        )
    }

    /// Removes the link: the server cannot start again.
    pub fn break_it(&self) {
        std::fs::remove_file(&self.path).unwrap();
    }

    /// Restores the link.
    pub fn restore(&self) {
        std::os::unix::fs::symlink(&self.target, &self.path).unwrap();
    }
}

/// Kills (SIGKILL) the one live process carrying `marker` and waits until
/// it is gone; returns its pid.
pub async fn kill_server(marker: &str) -> u32 {
    let pids = pids_with(marker);
    assert_eq!(pids.len(), 1, "one server process for {marker}: {pids:?}");
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pids[0].to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    wait_until_gone(marker).await;
    pids[0]
}
