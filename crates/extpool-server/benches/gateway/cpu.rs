//! CPU time of a contender's processes, read from `/proc`: the process
//! that answers HTTP (the gateway's own figure) and it with every
//! descendant (its stdio upstream included); and how often the HTTP
//! process's threads were switched out (each one a sleep and a wake-up).

use std::time::Duration;

/// Clock ticks per second of `/proc/<pid>/stat` (`USER_HZ`, 100 on Linux).
const TICKS_PER_SEC: u64 = 100;

/// `(parent pid, utime + stime in ticks)` of `pid`, if it runs.
fn stat(pid: u32) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields
    // are counted after its closing one (field 3 is the state).
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

fn ticks(t: u64) -> Duration {
    Duration::from_millis(t * 1000 / TICKS_PER_SEC)
}

/// CPU used so far by `pid` alone and by `pid` with all its descendants.
pub fn of(pid: u32) -> (Duration, Duration) {
    let mut all: Vec<(u32, u32, u64)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if let Some((ppid, t)) = stat(p) {
                all.push((p, ppid, t));
            }
        }
    }
    let own = all.iter().find(|(p, _, _)| *p == pid).map_or(0, |x| x.2);
    let mut tree = vec![pid];
    let mut total = 0;
    while let Some(p) = tree.pop() {
        for &(child, ppid, t) in &all {
            if child == p {
                total += t;
            }
            if ppid == p {
                tree.push(child);
            }
        }
    }
    (ticks(own), ticks(total))
}

/// Context switches so far of all of `pid`'s threads, voluntary and not
/// (`/proc/<pid>/task/*/status`); threads that ended are not counted.
pub fn switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}
