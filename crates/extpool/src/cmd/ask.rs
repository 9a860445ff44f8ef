//! Asking before doing what runs code or changes where an agent connects:
//! one question on the terminal, `--yes` answering it for scripts, and no
//! terminal (a pipe, CI) meaning no.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Result;

use crate::UsageError;
use crate::context::Ctx;

/// Asks `question` on the terminal; `yes` answers it. Without a terminal
/// and without `yes`, refuses to `what` (a usage error naming `--yes`).
pub fn confirm(ctx: &Ctx, question: &str, yes: bool, what: &str) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        return Err(UsageError(format!(
            "refusing to {what} without confirmation: standard input is not a terminal; pass --yes to {what} anyway"
        ))
        .into());
    }
    let mut err = std::io::stderr().lock();
    write!(err, "{} [y/N] ", ctx.err_style.bold(question))?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}
