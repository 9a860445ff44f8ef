//! Discovery benchmark: 10,000 generated skills (2 KB bodies), discovered by
//! `extpool_skills::discover` and by a straightforward Python walker
//! (`os.walk` + PyYAML frontmatter parse) over the same tree.
//!
//! Every measured run happens in a fresh process, so the peak memory
//! (VmHWM from /proc/self/status) is that of one discovery and nothing else.
//! The tree is spread over 10 roots of 1,000 skills each, since discovery
//! bounds a root to 2,000 directories (the client guide's bound); the roots
//! are configured paths, as a host with several skill sources would have.
//!
//! Run: `cargo bench -p extpool-skills --bench discovery`
//! (the Python side needs `scripts/peers.sh`: `.peers/venv` with PyYAML).
//! Targets (issue 13): median ≤ 80 ms in a fresh process, peak RSS ≤ 40 MB.
//! Each line also gives the CPU time (user + system, all threads), which
//! other load on the machine disturbs far less than wall time; on a loaded
//! machine the wall time is mostly waiting for a core. `EXTPOOL_SKILLS_BENCH_THREADS`
//! sets the discovery's worker threads (default: one per core, at most 4).
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use extpool_skills::{DiscoveryConfig, discover};

const ROOTS: usize = 10;
const PER_ROOT: usize = 1000;
const RUNS: usize = 5;
const CHILD_ENV: &str = "EXTPOOL_SKILLS_BENCH_CHILD";
const TARGET_MS: f64 = 80.0;
const TARGET_KB: u64 = 40 * 1024;

const PYTHON_WALKER: &str = r#"
import json, os, sys, time
import yaml

def vm(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0

loader = yaml.CSafeLoader if sys.argv[1] == "libyaml" else yaml.SafeLoader
roots = sys.argv[2:]
cpu0 = os.times()
start = time.perf_counter()
skills = []
for root in roots:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "node_modules"]
        if "SKILL.md" not in filenames:
            continue
        dirnames[:] = []
        with open(os.path.join(dirpath, "SKILL.md"), encoding="utf-8") as f:
            text = f.read()
        if not text.startswith("---"):
            continue
        parts = text.split("---", 2)
        if len(parts) < 3:
            continue
        meta = yaml.load(parts[1], Loader=loader)
        if isinstance(meta, dict) and meta.get("description"):
            skills.append((meta.get("name"), meta["description"], dirpath))
ms = (time.perf_counter() - start) * 1000
cpu1 = os.times()
cpu_ms = (cpu1.user - cpu0.user + cpu1.system - cpu0.system) * 1000
print(json.dumps({"ms": ms, "cpu_ms": cpu_ms, "skills": len(skills), "hwm_kb": vm("VmHWM"), "rss_before_kb": 0}))
"#;

/// One measured run.
#[derive(Debug, Clone, Copy)]
struct Run {
    ms: f64,
    cpu_ms: f64,
    skills: usize,
    hwm_kb: u64,
    rss_before_kb: u64,
}

fn vm_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU time of this process so far, in ms (from
/// /proc/self/stat, clock ticks of 10 ms; exited threads included).
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at ") ".
    let after = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    (ticks(11) + ticks(12)) * 10.0
}

fn roots(base: &Path) -> Vec<PathBuf> {
    (0..ROOTS)
        .map(|r| base.join(format!("root-{r:02}")))
        .collect()
}

/// The child: one discovery, then its figures as one JSON line.
fn child(base: &Path) {
    let rss_before_kb = vm_kb("VmRSS");
    let mut config = DiscoveryConfig::with_paths(roots(base));
    if let Some(n) = std::env::var("EXTPOOL_SKILLS_BENCH_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        config.threads = n;
    }
    let cpu0 = cpu_ms();
    let start = Instant::now();
    let found = discover(&config);
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let cpu = cpu_ms() - cpu0;
    let hwm_kb = vm_kb("VmHWM");
    let errors = found.diagnostics.iter().filter(|d| d.is_error()).count();
    assert_eq!(errors, 0, "{:?}", found.diagnostics.first());
    let line = serde_json::json!({
        "ms": ms,
        "cpu_ms": cpu,
        "skills": found.skills.len(),
        "hwm_kb": hwm_kb,
        "rss_before_kb": rss_before_kb,
    });
    std::io::Write::write_all(&mut std::io::stdout(), format!("{line}\n").as_bytes())
        .expect("stdout");
}

fn generate(base: &Path) {
    let body_line = "Follow these steps carefully and check every result before moving on.\n";
    let body: String = body_line.repeat(2048 / body_line.len() + 1);
    let body = &body[..2048];
    for (r, root) in roots(base).iter().enumerate() {
        for i in 0..PER_ROOT {
            let name = format!("skill-{r:02}-{i:04}");
            let dir = root.join(&name);
            std::fs::create_dir_all(&dir).expect("create skill dir");
            let text = format!(
                "---\nname: {name}\ndescription: Handles task {i} of group {r}. Use it when the user asks about task {i}.\nlicense: Apache-2.0\nmetadata:\n  author: bench\n  version: \"1.0\"\n---\n# {name}\n\n{body}"
            );
            std::fs::write(dir.join("SKILL.md"), text).expect("write SKILL.md");
        }
    }
}

fn parse_run(stdout: &[u8], what: &str) -> Run {
    let text = String::from_utf8_lossy(stdout);
    let v: serde_json::Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{what}: bad output {text:?}: {e}"));
    Run {
        ms: v["ms"].as_f64().expect("ms"),
        cpu_ms: v["cpu_ms"].as_f64().unwrap_or(0.0),
        skills: v["skills"].as_u64().expect("skills") as usize,
        hwm_kb: v["hwm_kb"].as_u64().expect("hwm_kb"),
        rss_before_kb: v["rss_before_kb"].as_u64().unwrap_or(0),
    }
}

fn run_rust(base: &Path) -> Run {
    let exe = std::env::current_exe().expect("current exe");
    let out = Command::new(exe)
        .env(CHILD_ENV, base)
        .output()
        .expect("run the benchmark child");
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_run(&out.stdout, "rust child")
}

fn python() -> PathBuf {
    let peers = std::env::var_os("EXTPOOL_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../.peers")
                .to_path_buf()
        });
    let python = peers.join("venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} with PyYAML is needed for the comparison: run scripts/peers.sh (or set EXTPOOL_PEERS_DIR)",
        python.display()
    );
    python
}

fn run_python(python: &Path, loader: &str, base: &Path) -> Run {
    let out = Command::new(python)
        .arg("-c")
        .arg(PYTHON_WALKER)
        .arg(loader)
        .args(roots(base))
        .output()
        .expect("run the Python walker");
    assert!(
        out.status.success(),
        "Python walker failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_run(&out.stdout, "python walker")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn summarize(label: &str, runs: &[Run]) -> (f64, u64) {
    let ms = median(runs.iter().map(|r| r.ms).collect());
    let cpu = median(runs.iter().map(|r| r.cpu_ms).collect());
    let min = runs.iter().map(|r| r.ms).fold(f64::INFINITY, f64::min);
    let hwm = runs.iter().map(|r| r.hwm_kb).max().unwrap_or(0);
    let skills = runs[0].skills;
    assert!(
        runs.iter().all(|r| r.skills == skills),
        "{label}: skill counts differ"
    );
    let before = runs[0].rss_before_kb;
    let before = if before > 0 {
        format!(", RSS before {:.1} MB", before as f64 / 1024.0)
    } else {
        String::new()
    };
    println!(
        "{label:<28} {skills:>6} skills  median {ms:>8.1} ms  (min {min:>7.1}, CPU {cpu:>7.1} ms)  peak RSS {:>6.1} MB{before}",
        hwm as f64 / 1024.0
    );
    (ms, hwm)
}

fn main() {
    if let Some(base) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&base));
        return;
    }
    let python = python();
    let tmp = tempfile::tempdir().expect("temp dir");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let gen_start = Instant::now();
    generate(tmp.path());
    println!(
        "generated {} skills (2 KB bodies) in {} roots in {:.1} s; {} cores; load average {}; {RUNS} fresh-process runs each, interleaved",
        ROOTS * PER_ROOT,
        ROOTS,
        gen_start.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load.split_whitespace().next().unwrap_or("?"),
    );
    // One unmeasured pass of each so both read from a warm page cache.
    run_rust(tmp.path());
    run_python(&python, "pure", tmp.path());

    // Interleaved, so machine drift affects every walker alike.
    let (mut rust, mut py, mut py_c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        rust.push(run_rust(tmp.path()));
        py.push(run_python(&python, "pure", tmp.path()));
        py_c.push(run_python(&python, "libyaml", tmp.path()));
    }
    assert_eq!(rust[0].skills, ROOTS * PER_ROOT);
    assert_eq!(py[0].skills, ROOTS * PER_ROOT);

    let (rust_ms, rust_kb) = summarize("extpool-skills discover", &rust);
    let (py_ms, py_kb) = summarize("python os.walk + safe_load", &py);
    let (pyc_ms, pyc_kb) = summarize("python + CSafeLoader", &py_c);
    println!(
        "ratio: python/extpool time {:.1}x (libyaml {:.1}x), peak RSS {:.1}x (libyaml {:.1}x)",
        py_ms / rust_ms,
        pyc_ms / rust_ms,
        py_kb as f64 / rust_kb as f64,
        pyc_kb as f64 / rust_kb as f64,
    );
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "targets: time ≤ {TARGET_MS} ms {}; peak RSS ≤ {} MB {}",
        verdict(rust_ms <= TARGET_MS),
        TARGET_KB / 1024,
        verdict(rust_kb <= TARGET_KB)
    );
}
