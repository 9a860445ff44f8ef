//! Running `extpool` in an isolated temporary home.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// A temporary home and working directory for one test.
pub struct Sandbox {
    pub dir: TempDir,
}

/// The result of one run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("extpool-cli-")
            .tempdir()
            .expect("temp dir");
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        Self { dir }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// A FIFO (named pipe) at `rel` under the working directory.
    pub fn fifo(&self, rel: &str) -> PathBuf {
        let path = self.work().join(rel);
        let made = Command::new("mkfifo").arg(&path).status().expect("mkfifo");
        assert!(made.success(), "mkfifo {}", path.display());
        path
    }

    /// Writes a file under the working directory (creating parents).
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.work().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `extpool` with a clean environment pointing at the sandbox.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_extpool"));
        cmd.current_dir(self.work())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env_remove("EXTPOOL_CONFIG")
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("XDG_DATA_HOME")
            .env_remove("APPDATA")
            .env_remove("EXTPOOL_LOG")
            .env_remove("TOOLHIVE_API_URL")
            .env("NO_COLOR", "1")
            .env("COLUMNS", "200");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[])
    }

    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command();
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        run(cmd)
    }

    /// Replaces the sandbox's paths in text, so snapshots hold none.
    pub fn redact(&self, text: &str) -> String {
        let real = self.dir.path().canonicalize().unwrap();
        text.replace(&real.display().to_string(), "[SANDBOX]")
            .replace(&self.dir.path().display().to_string(), "[SANDBOX]")
            .replace(&testkit().display().to_string(), "[TESTKIT]")
    }

    /// An extpool.yaml with the testkit server (and the given extra YAML).
    pub fn testkit_config(&self, extra: &str) -> PathBuf {
        let bin = testkit();
        self.write(
            "extpool.yaml",
            &format!(
                "mcp_servers:\n  testkit:\n    command: {}\n{extra}",
                bin.display()
            ),
        )
    }
}

pub fn run(mut cmd: Command) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run extpool");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// The testkit example server (built on first use).
pub fn testkit() -> &'static Path {
    extpool_testkit::server_binary()
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A fixture file of this crate.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}
