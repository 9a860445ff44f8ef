//! Output for people and programs: aligned tables, colour only on a
//! terminal (and never with `NO_COLOR`), and `--json` that is pretty,
//! stable (fields in declaration order, lists sorted by the command) and
//! free of machine paths the user did not write.
//!
//! All standard output goes through [`Out`] so that a closed pipe surfaces
//! as an `io::Error` the caller turns into a quiet exit.
//!
//! Text that comes from outside — servers, skills, configuration files,
//! file names — passes through [`shown`] before it reaches a person, so no
//! server can move the cursor, clear the screen, retitle the window or
//! reorder a line with control characters.

use std::borrow::Cow;
use std::fmt::{Display, Write as _};
use std::io::{self, IsTerminal, Write};

use serde::Serialize;

use crate::cli::ColorChoice;

/// Colour codes, applied only when colour is on.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    on: bool,
}

impl Style {
    /// Colour decision for a stream.
    pub fn new(choice: ColorChoice, is_terminal: bool) -> Self {
        let on = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        };
        Self { on }
    }

    /// Whether colour is on.
    pub fn is_on(self) -> bool {
        self.on
    }

    fn paint(self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }

    /// Bold.
    pub fn bold(self, s: &str) -> String {
        self.paint("1", s)
    }
    /// Dim.
    pub fn dim(self, s: &str) -> String {
        self.paint("2", s)
    }
    /// Green.
    pub fn green(self, s: &str) -> String {
        self.paint("32", s)
    }
    /// Red.
    pub fn red(self, s: &str) -> String {
        self.paint("31", s)
    }
    /// Yellow.
    pub fn yellow(self, s: &str) -> String {
        self.paint("33", s)
    }
    /// Cyan.
    pub fn cyan(self, s: &str) -> String {
        self.paint("36", s)
    }
}

/// True for a character that must not reach a terminal as is: control
/// characters other than newline and tab (C0, DEL, C1 — ESC among them)
/// and the invisible bidirectional controls that reorder what is shown.
fn unsafe_to_show(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` as it may be shown to a person: each unsafe character (see the
/// module docs) written as an escape, `\x1b` or `\u{202e}`; newlines and
/// tabs kept. The one rule every front-end output applies to outside text.
pub fn shown(text: &str) -> Cow<'_, str> {
    escaped(text, unsafe_to_show)
}

/// A log line as it may reach a terminal: [`shown`], except that ESC is
/// kept, for the log formatter's own colours; tracing-subscriber has
/// already escaped ESC in every value the line quotes.
pub fn shown_log_line(line: &str) -> Cow<'_, str> {
    escaped(line, |c| c != '\u{1b}' && unsafe_to_show(c))
}

fn escaped(text: &str, unsafe_to_show: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&unsafe_to_show) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !unsafe_to_show(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// Standard output.
pub struct Out {
    /// Colours for stdout.
    pub style: Style,
    terminal: bool,
    stdout: io::Stdout,
}

impl Out {
    /// Standard output with the global flags applied.
    pub fn new(color: ColorChoice) -> Self {
        let stdout = io::stdout();
        let terminal = stdout.is_terminal();
        Self {
            style: Style::new(color, terminal),
            terminal,
            stdout,
        }
    }

    /// Prints one line.
    pub fn line(&mut self, s: impl Display) -> io::Result<()> {
        writeln!(self.stdout.lock(), "{s}")
    }

    /// Prints what a server or skill sent (a tool result, a resource, a
    /// rendered prompt): escaped with [`shown`] on a terminal, byte for
    /// byte when piped, so `> file` keeps it exact.
    pub fn payload(&mut self, s: &str) -> io::Result<()> {
        if self.terminal {
            self.text(&shown(s))
        } else {
            self.text(s)
        }
    }

    /// Prints text as is.
    pub fn text(&mut self, s: &str) -> io::Result<()> {
        let mut lock = self.stdout.lock();
        lock.write_all(s.as_bytes())?;
        lock.flush()
    }

    /// Prints a value as pretty JSON.
    pub fn json_value<T: Serialize + ?Sized>(&mut self, v: &T) -> io::Result<()> {
        let text = serde_json::to_string_pretty(v).map_err(io::Error::other)?;
        self.line(text)
    }

    /// Prints a value as one JSON line (for streams).
    pub fn json_line<T: Serialize + ?Sized>(&mut self, v: &T) -> io::Result<()> {
        let text = serde_json::to_string(v).map_err(io::Error::other)?;
        let mut lock = self.stdout.lock();
        writeln!(lock, "{text}")?;
        lock.flush()
    }

    /// Prints an aligned table. The last column is cut to the terminal
    /// width when printing to a terminal; never when piped.
    pub fn table(&mut self, headers: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
        let text = render_table(headers, rows, self.width(), self.style);
        self.text(&text)
    }

    fn width(&self) -> Option<usize> {
        if !self.terminal {
            return None;
        }
        let cols = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(100usize);
        Some(cols.max(40))
    }
}

/// Number of characters as displayed (ignoring colour codes, which tables never contain).
fn display_len(s: &str) -> usize {
    s.chars().count()
}

/// Renders a table: two spaces between columns, header in bold.
pub fn render_table(
    headers: &[&str],
    rows: &[Vec<String>],
    width: Option<usize>,
    style: Style,
) -> String {
    let cols = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| display_len(h)).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| shown(cell).into_owned()).collect())
        .collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate().take(cols) {
            let first_line = cell.lines().next().unwrap_or("");
            widths[i] = widths[i].max(display_len(first_line));
        }
    }
    let mut out = String::new();
    let mut emit = |cells: Vec<String>, header: bool| {
        let mut line = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let cell = cell.lines().next().unwrap_or("").to_owned();
            let last = i + 1 == cells.len();
            let mut cell = cell;
            if last && let Some(w) = width {
                let used = display_len(&line);
                let room = w.saturating_sub(used).max(10);
                if display_len(&cell) > room {
                    cell = cell
                        .chars()
                        .take(room.saturating_sub(1))
                        .collect::<String>()
                        + "…";
                }
            }
            let pad = if last {
                0
            } else {
                widths[i].saturating_sub(display_len(&cell)) + 2
            };
            let shown = if header {
                style.bold(&cell)
            } else {
                cell.clone()
            };
            line.push_str(&shown);
            if !last {
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    emit(headers.iter().map(|h| (*h).to_owned()).collect(), true);
    for row in rows {
        emit(row, false);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_cut_only_on_terminals() {
        let rows = vec![
            vec!["a".into(), "long description here".into()],
            vec!["bbbb".into(), "x\nsecond line".into()],
        ];
        let style = Style { on: false };
        let t = render_table(&["NAME", "DESCRIPTION"], &rows, None, style);
        assert_eq!(
            t,
            "NAME  DESCRIPTION\na     long description here\nbbbb  x\n"
        );
        let t = render_table(&["NAME", "DESCRIPTION"], &rows, Some(16), style);
        assert!(t.contains("a     long desc…"), "{t}");
    }

    #[test]
    fn control_characters_are_shown_escaped() {
        assert!(matches!(shown("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            shown("a\x1b[2Jb\x07\u{9b}c\u{202e}d\r"),
            "a\\x1b[2Jb\\x07\\x9bc\\u{202e}d\\x0d"
        );
        let rows = vec![vec!["x\x1b]0;title\x07".to_owned()]];
        let t = render_table(&["NAME"], &rows, None, Style { on: false });
        assert_eq!(t, "NAME\nx\\x1b]0;title\\x07\n");
    }

    #[test]
    fn colour_only_when_asked_or_on_a_terminal() {
        assert!(!Style::new(ColorChoice::Auto, false).on);
        assert!(Style::new(ColorChoice::Always, false).on);
        assert!(!Style::new(ColorChoice::Never, true).on);
        assert_eq!(Style { on: true }.bold("x"), "\x1b[1mx\x1b[0m");
    }
}
