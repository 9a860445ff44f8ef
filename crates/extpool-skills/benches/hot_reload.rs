//! Hot-reload latency: a SKILL.md written → the change event, over many
//! edits, with the debounce window subtracted.
//!
//! Two figures per tree size, measured on the same edits:
//! - **watcher batch**: the write → `SkillWatcher`'s coalesced batch (the
//!   filesystem event, delivered after the trailing debounce);
//! - **skills_changed**: the write → `SkillManagerCap`'s `skills_changed`
//!   event naming the edited skill (the batch, the rescan of every root, the
//!   comparison with the published snapshot, the new snapshot).
//!
//! Each edit rewrites one skill's description (a real change), then waits
//! for its event before the next edit, so every edit is its own batch. The
//! tree sizes are 100 skills (one root) and 10,000 skills (10 roots of
//! 1,000, as in the discovery benchmark: discovery bounds a root to 2,000
//! directories).
//!
//! Run: `cargo bench -p extpool-skills --bench hot_reload`. Knobs:
//! `EXTPOOL_BENCH_EDITS` (100 edits per tree), `EXTPOOL_BENCH_DEBOUNCE_MS`
//! (the debounce window; default the RFC's 500 ms),
//! `EXTPOOL_BENCH_RELOAD_SIZES` (tree sizes, e.g. `100,10000`). Target
//! (issue 13): p50 ≤ debounce + 50 ms.
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use extpool_core::{Capability, ChangeKind, ChangeObservable};
use extpool_skills::{DiscoveryConfig, SkillManagerCap, SkillWatcher, watch::DEFAULT_DEBOUNCE};
use futures::StreamExt;

const PER_ROOT: usize = 1000;
const TARGET_EXTRA_MS: f64 = 50.0;
/// Patience for one event; only reached when something is broken.
const PATIENCE: Duration = Duration::from_secs(30);

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn skill_text(name: &str, version: usize) -> String {
    format!(
        "---\nname: {name}\ndescription: Handles {name}, edit {version}. Use it when the user asks about {name}.\nlicense: Apache-2.0\n---\n# {name}\n\nFollow these steps carefully and check every result before moving on.\n"
    )
}

/// Writes `count` skills under `base`, 1,000 per root; returns the roots.
fn generate(base: &Path, count: usize) -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = (0..count.div_ceil(PER_ROOT))
        .map(|r| base.join(format!("root-{r:02}")))
        .collect();
    for i in 0..count {
        let dir = roots[i / PER_ROOT].join(format!("skill-{i:05}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), skill_text(&name(i), 0)).unwrap();
    }
    roots
}

fn name(i: usize) -> String {
    format!("skill-{i:05}")
}

fn skill_md(roots: &[PathBuf], i: usize) -> PathBuf {
    roots[i / PER_ROOT].join(name(i)).join("SKILL.md")
}

/// The skill edited at step `step`: spread over the whole tree.
fn edited(step: usize, count: usize) -> usize {
    (step * 7919) % count
}

struct Latencies {
    /// Milliseconds after the debounce window.
    extra_ms: Vec<f64>,
}

impl Latencies {
    fn q(&self, p: f64) -> f64 {
        let mut v = self.extra_ms.clone();
        v.sort_by(f64::total_cmp);
        let i = ((p * v.len() as f64) as usize).min(v.len() - 1);
        v[i]
    }
}

/// The write → the watcher's batch that names the file.
fn watcher_latency(roots: &[PathBuf], count: usize, edits: usize, debounce: Duration) -> Latencies {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<PathBuf>)>();
    let watcher = SkillWatcher::spawn(roots.to_vec(), debounce, move |batch| {
        let _ = tx.send((Instant::now(), batch.paths));
    })
    .unwrap();
    let mut extra_ms = Vec::with_capacity(edits);
    for step in 0..edits {
        let i = edited(step, count);
        let path = skill_md(roots, i);
        let t0 = Instant::now();
        std::fs::write(&path, skill_text(&name(i), step + 1)).unwrap();
        loop {
            let (at, paths) = rx.recv_timeout(PATIENCE).expect("no watcher batch");
            if paths.contains(&path) {
                extra_ms.push((at - t0).as_secs_f64() * 1e3 - debounce.as_secs_f64() * 1e3);
                break;
            }
        }
    }
    watcher.stop();
    Latencies { extra_ms }
}

/// The write → `skills_changed` naming the skill.
async fn manager_latency(
    roots: &[PathBuf],
    count: usize,
    edits: usize,
    debounce: Duration,
    offset: usize,
) -> Latencies {
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths(roots.iter().cloned()))
        .debounce(debounce)
        .build()
        .unwrap();
    cap.start().await.unwrap();
    assert!(cap.is_watching(), "the watcher did not start");
    assert_eq!(cap.local_skills().len(), count);
    let mut events = cap.on_change().unwrap();
    let mut extra_ms = Vec::with_capacity(edits);
    for step in 0..edits {
        let i = edited(step + offset, count);
        let path = skill_md(roots, i);
        let uri = format!("skill://{}", name(i));
        let t0 = Instant::now();
        std::fs::write(&path, skill_text(&name(i), step + offset + 1)).unwrap();
        loop {
            let event = tokio::time::timeout(PATIENCE, events.next())
                .await
                .expect("no skills_changed event")
                .expect("change stream ended")
                .expect("change stream failed");
            if event.kind == ChangeKind::SkillsChanged && event.source_uri == uri {
                extra_ms.push(t0.elapsed().as_secs_f64() * 1e3 - debounce.as_secs_f64() * 1e3);
                break;
            }
        }
    }
    cap.shutdown().await.unwrap();
    Latencies { extra_ms }
}

fn main() {
    let edits = env_usize("EXTPOOL_BENCH_EDITS", 100).max(1);
    let debounce = Duration::from_millis(env_usize(
        "EXTPOOL_BENCH_DEBOUNCE_MS",
        DEFAULT_DEBOUNCE.as_millis() as usize,
    ) as u64);
    let sizes: Vec<usize> = std::env::var("EXTPOOL_BENCH_RELOAD_SIZES")
        .unwrap_or_else(|_| "100,10000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .filter(|&n| n > 0)
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "hot reload: {edits} edits per tree, debounce {} ms; {} cores; load average {}",
        debounce.as_millis(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    );
    println!();
    println!(
        "| skills | event | p50 − debounce ms | p99 − debounce ms | max − debounce ms | target p50 ≤ debounce + {TARGET_EXTRA_MS} ms |"
    );
    println!("|---:|---|---:|---:|---:|---|");
    for count in sizes {
        let tmp = tempfile::tempdir().unwrap();
        let roots = generate(tmp.path(), count);
        let watched = watcher_latency(&roots, count, edits, debounce);
        let changed = rt.block_on(manager_latency(&roots, count, edits, debounce, edits));
        for (label, l) in [("watcher batch", &watched), ("skills_changed", &changed)] {
            let p50 = l.q(0.5);
            let met = if p50 <= TARGET_EXTRA_MS {
                "met"
            } else {
                "NOT met"
            };
            println!(
                "| {count} | {label} | {p50:.1} | {:.1} | {:.1} | {met} |",
                l.q(0.99),
                l.q(1.0)
            );
        }
    }
}
