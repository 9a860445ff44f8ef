//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use extpool_core::{ChangeEvent, ChangeStream};
use futures::StreamExt;

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate sits in <root>/crates/<name>")
        .to_owned()
}

/// The peers directory: `EXTPOOL_PEERS_DIR`, else `<workspace root>/.peers`.
pub fn peers_dir() -> PathBuf {
    std::env::var_os("EXTPOOL_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".peers"))
}

/// The reference validator's console script; fails the test when missing.
pub fn agentskills() -> PathBuf {
    let path = peers_dir().join("venv/bin/agentskills");
    assert!(
        path.is_file(),
        "the reference validator is missing at {}: run scripts/peers.sh (it installs skills-ref==0.1.1 into .peers/venv), or set EXTPOOL_PEERS_DIR",
        path.display()
    );
    path
}

/// The fixture directory of this crate.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Writes `<root>/<dir>/SKILL.md` with a name, a description and a body.
pub fn write_skill(root: &Path, dir: &str, name: &str, description: &str, body: &str) -> PathBuf {
    write_raw(
        root,
        dir,
        &format!("---\nname: {name}\ndescription: {description}\n---\n{body}"),
    )
}

/// Writes `<root>/<dir>/SKILL.md` with the given content.
pub fn write_raw(root: &Path, dir: &str, content: &str) -> PathBuf {
    let d = root.join(dir);
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join("SKILL.md");
    std::fs::write(&path, content).unwrap();
    path
}

/// The next event of a change stream, or `None` after `timeout`.
pub async fn next_event(stream: &mut ChangeStream, timeout: Duration) -> Option<ChangeEvent> {
    match tokio::time::timeout(timeout, stream.next()).await {
        Ok(Some(Ok(event))) => Some(event),
        Ok(Some(Err(e))) => panic!("change stream failed: {e}"),
        Ok(None) => panic!("change stream ended"),
        Err(_) => None,
    }
}

/// Every event that arrives within `window`.
pub async fn collect_events(stream: &mut ChangeStream, window: Duration) -> Vec<ChangeEvent> {
    let deadline = tokio::time::Instant::now() + window;
    let mut out = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return out;
        }
        match next_event(stream, left).await {
            Some(e) => out.push(e),
            None => return out,
        }
    }
}
