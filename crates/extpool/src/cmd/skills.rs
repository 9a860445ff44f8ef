//! `extpool skills validate [--strict] PATH…`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use extpool_host::config::diagnostics::display_path;
use extpool_host::skills::{Severity, ValidationMode};
use serde::Serialize;

use crate::cli::ValidateArgs;
use crate::context::Ctx;
use crate::output::shown;

#[derive(Serialize)]
struct Problem {
    severity: &'static str,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    message: String,
}

#[derive(Serialize)]
struct Report {
    mode: &'static str,
    skills: usize,
    valid: usize,
    with_errors: usize,
    problems: Vec<Problem>,
}

/// Validates skills; exit 1 when any error is found (strict mode turns
/// every specification problem into an error).
pub fn validate(ctx: &mut Ctx, args: ValidateArgs) -> Result<ExitCode> {
    let mode = if args.strict {
        ValidationMode::Strict
    } else {
        ValidationMode::Lenient
    };
    let mut reports = Vec::new();
    for path in &args.paths {
        reports.extend(extpool_host::skills::validate_path(path, mode));
    }
    // Counts are of skills, not of messages (one skill may have several).
    let summary = extpool_host::skills::summarize(&reports);
    let (skills, valid) = (summary.checked, summary.valid);
    let mut problems = Vec::new();
    for d in reports.into_iter().flat_map(|r| r.diagnostics) {
        problems.push(Problem {
            severity: if d.severity == Severity::Error {
                "error"
            } else {
                "warning"
            },
            path: display_path(&d.path, Some(&ctx.places.cwd), ctx.places.home.as_deref()),
            line: d.line,
            message: d.message,
        });
    }
    let errors = summary.errors;
    if ctx.global.json {
        ctx.out.json_value(&Report {
            mode: if args.strict { "strict" } else { "lenient" },
            skills,
            valid,
            with_errors: summary.with_errors,
            problems,
        })?;
    } else {
        for p in &problems {
            let loc = match p.line {
                Some(line) => format!("{}:{line}", p.path),
                None => p.path.clone(),
            };
            let word = if p.severity == "error" {
                ctx.out.style.red("error")
            } else {
                ctx.out.style.yellow("warning")
            };
            ctx.out
                .line(format!("{}: {word}: {}", shown(&loc), shown(&p.message)))?;
        }
        let summary = format!(
            "{skills} skill{} checked ({} mode): {valid} valid, {} with errors",
            if skills == 1 { "" } else { "s" },
            if args.strict { "strict" } else { "lenient" },
            summary.with_errors,
        );
        let _ = writeln!(std::io::stderr().lock(), "{summary}");
    }
    Ok(if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
