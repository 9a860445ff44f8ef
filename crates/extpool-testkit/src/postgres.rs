//! A real PostgreSQL server for tests: `initdb` into a temporary
//! directory, `postgres` listening on a Unix socket in that directory only
//! (no TCP port, so tests never collide), password authentication
//! (scram-sha-256). Ready when the server says so on stderr — no polling,
//! no sleeps. Missing PostgreSQL binaries fail the test, loudly:
//! `scripts/test.sh` installs Debian's `postgresql` package.
//!
//! The server runs under a small watchdog shell that holds the read end
//! of a pipe from this process: when the [`PgServer`] is dropped (panics
//! included) *or this process dies in any way*, the pipe closes and the
//! watchdog stops the server and removes its directory. So
//! [`PgServer::shared`] — one server for every test of a process, each
//! test on its own database — leaves nothing behind either.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::Duration;

/// The password of the test server's `extpool` role.
pub const PASSWORD: &str = "pg-Secret-4711";

/// Stops the server (`$@`, started in the background) when standard input
/// closes, then removes its directory (`$1`). The shell closes its own
/// stderr so that the server's stderr reaching EOF means the server exited.
const WATCHDOG: &str = r#"dir=$1; shift
"$@" &
pid=$!
exec 2>&-
cat >/dev/null
kill -QUIT "$pid" 2>/dev/null
wait "$pid"
rm -rf "$dir"
"#;

/// A running PostgreSQL server.
pub struct PgServer {
    watchdog: Child,
    /// The watchdog's standard input; dropping it stops the server.
    lifeline: Option<ChildStdin>,
    dir: PathBuf,
}

impl PgServer {
    /// One server shared by every test of this process (started by the
    /// first caller, stopped when the process exits). Give each test a
    /// database of its own.
    pub fn shared() -> &'static PgServer {
        static SHARED: OnceLock<PgServer> = OnceLock::new();
        SHARED.get_or_init(PgServer::start)
    }

    /// Initializes and starts a server of its own; panics (with the
    /// server's log) if it cannot. It does not flush to disk (`fsync=off`):
    /// fast, and as safe as tests need.
    pub fn start() -> PgServer {
        PgServer::start_with(false)
    }

    /// [`PgServer::start`] with PostgreSQL's default durability (`fsync`
    /// on), for benchmarks that compare it with a store that flushes.
    pub fn start_durable() -> PgServer {
        PgServer::start_with(true)
    }

    fn start_with(durable: bool) -> PgServer {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("extpool-pg")
            .tempdir()
            .expect("temp dir");
        let user = run_as();
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown temp dir");
        }
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, PASSWORD).expect("write pwfile");
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).expect("chown pwfile");
        }
        let data = dir.path().join("data");
        let out = command(user, &bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "extpool", "-A", "scram-sha-256", "-E", "UTF8"])
            .args(["--locale=C", "--no-sync", "--no-instructions"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let server = command(user, &bin.join("postgres"));
        let mut watchdog = Command::new("sh");
        watchdog
            .arg("-c")
            .arg(WATCHDOG)
            .arg("sh")
            .arg(dir.path())
            .arg(server.get_program())
            .args(server.get_args())
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(dir.path())
            .args(["-c", "listen_addresses=", "-c"])
            .arg(if durable { "fsync=on" } else { "fsync=off" })
            .args(["-c", "max_connections=300"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = watchdog.spawn().expect("start postgres");
        // From here the watchdog owns the directory.
        let dir = dir.keep();
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut log = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                log.push_str(&line);
                log.push('\n');
                if line.contains("database system is ready to accept connections") {
                    let _ = tx.send(Ok(()));
                }
            }
            // EOF: the server exited before it was ready (or later).
            let _ = tx.send(Err(log));
        });
        let lifeline = child.stdin.take();
        let server = PgServer {
            watchdog: child,
            lifeline,
            dir,
        };
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Ok(())) => server,
            Ok(Err(log)) => {
                drop(server);
                panic!("postgres exited before it was ready:\n{log}")
            }
            Err(e) => {
                drop(server);
                panic!("postgres never said it was ready: {e}")
            }
        }
    }

    /// A URL of database `db` as user `extpool` with `password`, through
    /// the server's socket directory.
    pub fn url_with(&self, db: &str, password: &str) -> String {
        format!(
            "postgres://extpool:{password}@localhost/{db}?host={}",
            self.dir.display()
        )
    }

    /// The URL of the `postgres` database with the right password.
    pub fn url(&self) -> String {
        self.url_with("postgres", PASSWORD)
    }

    /// A new, empty database of its own; returns its URL.
    ///
    /// # Panics
    ///
    /// When `psql` fails.
    pub fn database(&self) -> String {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let db = format!("p{}_{n}", std::process::id());
        self.psql(&self.url(), &format!("CREATE DATABASE {db}"));
        self.url_with(&db, PASSWORD)
    }

    /// Runs `sql` with `psql` on the database at `url`; returns what it
    /// printed (unaligned, tuples only: one value per line).
    ///
    /// # Panics
    ///
    /// When `psql` cannot run or `sql` fails.
    pub fn psql(&self, url: &str, sql: &str) -> String {
        // Next to the server binaries, else on PATH (Debian's client package).
        let beside = bin_dir().join("psql");
        let psql = if beside.is_file() {
            beside
        } else {
            PathBuf::from("psql")
        };
        let out = Command::new(psql)
            .args([
                "-X",
                "-q",
                "-t",
                "-A",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                url,
                "-c",
                sql,
            ])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // Closing the lifeline makes the watchdog stop the server
        // (immediate shutdown) and remove the directory.
        drop(self.lifeline.take());
        let _ = self.watchdog.wait();
    }
}

/// Where the PostgreSQL server binaries are: `$EXTPOOL_PG_BIN`, else the
/// directory of `initdb` on `PATH`, else the newest
/// `/usr/lib/postgresql/*/bin` (Debian's layout).
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("EXTPOOL_PG_BIN").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|p| p.join("initdb").is_file() && p.join("postgres").is_file())
    });
    if let Some(dir) = on_path {
        return dir;
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    debian.sort();
    match debian.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "PostgreSQL server binaries (initdb, postgres) are missing: install Debian's \
             `postgresql` package (scripts/test.sh does) or set EXTPOOL_PG_BIN to their directory"
        ),
    }
}

/// PostgreSQL refuses to run as root: as root, run it as the `postgres`
/// user (Debian's package creates it).
fn run_as() -> Option<(u32, u32)> {
    let root = std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false);
    if !root {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    let ids = passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.first() == Some(&"postgres") && f.len() > 3)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            .flatten()
    });
    Some(ids.expect(
        "running as root and there is no `postgres` user to run PostgreSQL as; install \
         Debian's `postgresql` package (it creates the user) or run the tests as another user",
    ))
}

/// `program`, run as `user` when given (through `setpriv`, which execs it,
/// so the child's pid is the program's own).
fn command(user: Option<(u32, u32)>, program: &Path) -> Command {
    match user {
        Some((uid, gid)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups")
                .arg("--")
                .arg(program);
            c
        }
        None => Command::new(program),
    }
}
