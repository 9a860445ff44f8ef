//! The live per-server status shown while servers connect.
//!
//! On a terminal (stderr) it is a block of lines redrawn in place:
//!
//! ```text
//!   ⠹ github      connecting… 1.2 s
//!   ⠸ testkit     connecting… 41.0 s · Compiling extpool-testkit v0.1.0
//!   ✓ notes       ready in 38 ms · 9 tools
//!   ✗ broken      failed: command not found: brokn
//! ```
//!
//! When stderr is not a terminal it degrades to one plain line per change
//! (`testkit: ready in 38 ms with 9 tools`), so logs and pipes stay
//! readable. While a server connects, the latest line it wrote to stderr
//! is shown beside it (a server that `cargo` builds or `npx` downloads says
//! so); piped, each such line is one plain line too. Both end with the
//! same summary line. The display writes to
//! stderr only: standard output stays clean for `--json` and pipes.

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use extpool_host::ServerState;

use crate::output::{Style, shown};

/// The state of one server: the host's own, `Configured` meaning "not
/// started yet".
pub type Status = ServerState;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The display.
pub struct Progress {
    live: bool,
    quiet: bool,
    style: Style,
    rows: Vec<(String, Status, Instant)>,
    width: usize,
    drawn: usize,
    frame: usize,
    started: Instant,
}

/// The colour of a piece of the display.
#[derive(Clone, Copy)]
enum Tone {
    Plain,
    Dim,
    Good,
    Bad,
}

/// `text` cut to `max` characters, ending with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The width of the terminal on stderr: asked each time (it may be
/// resized), else `COLUMNS`, else 80.
fn terminal_columns() -> usize {
    rustix::termios::tcgetwinsize(io::stderr())
        .ok()
        .map(|w| usize::from(w.ws_col))
        .filter(|&c| c > 0)
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok())
        .unwrap_or(80)
}

/// The first line of `s` with text, trimmed.
fn one_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

impl Progress {
    /// A display for `names`. `quiet` shows nothing (for `--json`, where
    /// stderr stays for errors only).
    pub fn new(names: &[String], style: Style, quiet: bool) -> Self {
        let live =
            io::stderr().is_terminal() && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
        Self::with_mode(names, style, quiet, live)
    }

    /// A display with an explicit mode (tests).
    pub fn with_mode(names: &[String], style: Style, quiet: bool, live: bool) -> Self {
        let now = Instant::now();
        Self {
            live,
            quiet: quiet || names.is_empty(),
            style,
            width: names
                .iter()
                .map(|n| shown(n).chars().count())
                .max()
                .unwrap_or(0),
            rows: names
                .iter()
                .map(|n| (n.clone(), Status::Configured, now))
                .collect(),
            drawn: 0,
            frame: 0,
            started: now,
        }
    }

    /// Records a new status of `name`.
    pub fn update(&mut self, name: &str, status: Status) {
        let Some(row) = self.rows.iter_mut().find(|(n, _, _)| n == name) else {
            return;
        };
        if status == Status::Connecting {
            row.2 = Instant::now();
        }
        if matches!(status, Status::Starting { .. }) && !is_connecting(&row.1) {
            // A late line of a server that is already ready or failed.
            return;
        }
        row.1 = status.clone();
        if self.quiet {
            return;
        }
        if self.live {
            self.draw();
        } else {
            let line = format!(
                "{}: {}",
                shown(name),
                self.describe(&status, row_elapsed(&status))
            );
            let _ = writeln!(io::stderr().lock(), "{line}");
        }
    }

    /// Records a start-up event of the host.
    pub fn server(&mut self, event: &extpool_host::ServerEvent) {
        if matches!(event.state, Status::Configured | Status::Disabled) {
            return;
        }
        self.update(&event.server, event.state.clone());
    }

    /// Advances the spinner (live mode).
    pub fn tick(&mut self) {
        if self.live && !self.quiet {
            self.frame = (self.frame + 1) % SPINNER.len();
            self.draw();
        }
    }

    fn describe(&self, status: &Status, since: Option<Duration>) -> String {
        let (text, tone) = self.words(status, since);
        self.paint(tone, &text)
    }

    fn paint(&self, tone: Tone, text: &str) -> String {
        let s = self.style;
        match tone {
            Tone::Plain => text.to_owned(),
            Tone::Dim => s.dim(text),
            Tone::Good => s.green(text),
            Tone::Bad => s.red(text),
        }
    }

    /// A status in words (escaped, one line; a failure is whole when not
    /// live: it is the only place a plain log shows it) and its colour.
    fn words(&self, status: &Status, since: Option<Duration>) -> (String, Tone) {
        match status {
            Status::Configured | Status::Disabled => ("waiting".into(), Tone::Dim),
            Status::Connecting => (
                match since {
                    Some(d) if self.live && d >= Duration::from_millis(500) => {
                        format!("connecting… {:.1} s", d.as_secs_f64())
                    }
                    _ if self.live => "connecting…".into(),
                    _ => "connecting".into(),
                },
                Tone::Plain,
            ),
            Status::Starting { said } => (
                match since {
                    Some(d) if self.live => {
                        format!(
                            "connecting… {:.1} s · {}",
                            d.as_secs_f64(),
                            shown(one_line(said))
                        )
                    }
                    _ => format!("connecting: {}", shown(one_line(said))),
                },
                Tone::Plain,
            ),
            Status::Ready { elapsed_ms, tools } => {
                let sep = if self.live { " · " } else { " with " };
                (
                    format!(
                        "ready in {elapsed_ms} ms{sep}{tools} tool{}",
                        if *tools == 1 { "" } else { "s" }
                    ),
                    Tone::Good,
                )
            }
            Status::Lazy { tools } => (
                format!(
                    "lazy: {tools} declared tool{}, connects on first call",
                    if *tools == 1 { "" } else { "s" }
                ),
                Tone::Plain,
            ),
            Status::Failed { reason } => {
                (format!("failed: {}", shown(one_line(reason))), Tone::Bad)
            }
            Status::Skipped { reason } => {
                (format!("skipped: {}", shown(one_line(reason))), Tone::Dim)
            }
            _ => (String::new(), Tone::Plain),
        }
    }

    /// Redraws the block in place. Every row is cut to the terminal's
    /// width: a row that wrapped would take two lines, and moving the
    /// cursor up by the number of rows would then leave stale lines above.
    fn draw(&mut self) {
        let columns = terminal_columns();
        let mut text = String::new();
        if self.drawn > 0 {
            text.push_str(&format!("\x1b[{}A", self.drawn));
        }
        for (name, status, since) in &self.rows {
            let (mark, mark_tone) = match status {
                Status::Connecting | Status::Starting { .. } => (SPINNER[self.frame], Tone::Plain),
                Status::Ready { .. } | Status::Lazy { .. } => ("✓", Tone::Good),
                Status::Failed { .. } => ("✗", Tone::Bad),
                _ => ("·", Tone::Dim),
            };
            let elapsed = is_connecting(status).then(|| since.elapsed());
            let head = format!("  {mark} {:<w$}  ", shown(name), w = self.width);
            let (words, tone) = self.words(status, elapsed);
            // One column is left free: some terminals wrap on the last one.
            let room = columns.saturating_sub(1);
            let head_len = head.chars().count();
            let (head, words) = if head_len >= room {
                (cut(&head, room), String::new())
            } else {
                (head, cut(&words, room - head_len))
            };
            let mark_painted = if is_connecting(status) {
                self.style.cyan(mark)
            } else {
                self.paint(mark_tone, mark)
            };
            text.push_str("\x1b[2K");
            text.push_str(&head.replacen(mark, &mark_painted, 1));
            text.push_str(&self.paint(tone, &words));
            text.push('\n');
        }
        self.drawn = self.rows.len();
        let mut err = io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }

    /// The summary line, e.g. `2 servers ready, 1 failed (1.3 s)`.
    pub fn summary(&self) -> String {
        let ready = self.rows.iter().filter(|r| r.1.is_usable()).count();
        let count = |f: fn(&Status) -> bool| self.rows.iter().filter(|r| f(&r.1)).count();
        let failed = count(|s| matches!(s, Status::Failed { .. }));
        let skipped = count(|s| matches!(s, Status::Skipped { .. }));
        let total = self.rows.len() - skipped;
        let mut s = format!(
            "{ready} of {total} server{} ready",
            if total == 1 { "" } else { "s" }
        );
        if failed > 0 {
            s.push_str(&format!(", {failed} failed"));
        }
        if skipped > 0 {
            s.push_str(&format!(", {skipped} skipped"));
        }
        let detail = if failed > 0 && self.live {
            " — whole errors: extpool list sources"
        } else {
            ""
        };
        s.push_str(&format!(
            " ({:.1} s){detail}",
            self.started.elapsed().as_secs_f64()
        ));
        s
    }

    /// Draws the final state and prints the summary.
    pub fn finish(&mut self) {
        if self.quiet {
            return;
        }
        if self.live {
            self.draw();
        }
        let summary = self.summary();
        let _ = writeln!(io::stderr().lock(), "{}", self.style.dim(&summary));
    }
}

/// Connecting, whether or not the server said something meanwhile.
fn is_connecting(status: &Status) -> bool {
    matches!(status, Status::Connecting | Status::Starting { .. })
}

fn row_elapsed(status: &Status) -> Option<Duration> {
    match status {
        Status::Ready { elapsed_ms, .. } => Some(Duration::from_millis(*elapsed_ms)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_descriptions() {
        let p = Progress::with_mode(
            &["a".into()],
            Style::new(crate::cli::ColorChoice::Never, false),
            false,
            false,
        );
        assert_eq!(p.describe(&Status::Connecting, None), "connecting");
        let said = Status::Starting {
            said: "   Compiling kit v0.1.0\x1b[2J\nmore".into(),
        };
        assert_eq!(
            p.describe(&said, None),
            "connecting: Compiling kit v0.1.0\\x1b[2J"
        );
        assert_eq!(
            p.describe(
                &Status::Ready {
                    elapsed_ms: 12,
                    tools: 1
                },
                None
            ),
            "ready in 12 ms with 1 tool"
        );
        assert_eq!(
            p.describe(
                &Status::Failed {
                    reason: "\nboom\nmore".into()
                },
                None
            ),
            "failed: boom"
        );
        assert!(p.summary().starts_with("0 of 1 server ready"));
    }
}
