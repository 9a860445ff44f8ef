//! A plugin's skills: the folders below its skill locations that hold a
//! `SKILL.md`, checked by extpool-skills (the one owner of the SKILL.md
//! rules) and named `plugin:skill`.

use std::fs;
use std::path::Path;

use extpool_skills::{ValidationMode, validate_skill_dir};

use crate::diag::{Diagnostic, DiagnosticKind, Severity};
use crate::fsx::{Found, Root};
use crate::plugin::{PluginSkill, qualified};

/// Reads the skills in the immediate child folders of `dir` (already
/// resolved inside `root`): a child whose `SKILL.md` is missing or not a
/// regular file is not a skill (Agent Plugins §7.1); one whose folder or
/// `SKILL.md` resolves outside the root, or that `mode` refuses, is
/// skipped with one diagnostic. `budget` counts the folders looked at
/// against the plugin's file bound.
pub(crate) fn read_children(
    root: &Root,
    dir: &Path,
    plugin: &str,
    mode: ValidationMode,
    budget: &mut usize,
    diags: &mut Vec<Diagnostic>,
) -> Vec<PluginSkill> {
    let mut children: Vec<_> = match fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(Result::ok).map(|e| e.path()).collect(),
        Err(e) => {
            diags.push(Diagnostic::error(
                DiagnosticKind::ComponentInvalid,
                dir,
                format!("cannot read the skills folder: {e}"),
            ));
            return Vec::new();
        }
    };
    children.sort();
    let mut out = Vec::new();
    for child in children {
        let Some(name) = child
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
        else {
            continue;
        };
        if *budget == 0 {
            diags.push(Diagnostic::warning(
                DiagnosticKind::Bound,
                dir,
                "the plugin's file bound was reached; the remaining skills are not read",
            ));
            break;
        }
        *budget -= 1;
        let skip = |message: String| {
            Diagnostic::new(
                Severity::Error,
                DiagnosticKind::SkillSkipped,
                &child,
                None,
                format!("skill skipped: {message}"),
            )
        };
        match root.resolve(&child, &name) {
            Ok(Found::Dir(_)) => {}
            Ok(_) => continue,
            Err(e) => {
                diags.push(skip(e.to_string()));
                continue;
            }
        }
        let skill_md = child.join("SKILL.md");
        match root.resolve(&skill_md, &format!("{name}/SKILL.md")) {
            Ok(Found::File(_)) => {}
            Ok(_) => continue,
            Err(e) => {
                diags.push(skip(e.to_string()));
                continue;
            }
        }
        let report = validate_skill_dir(&child, mode);
        match report.meta {
            Some(meta) => out.push(PluginSkill {
                qualified: qualified(plugin, &name),
                plugin: plugin.to_owned(),
                plugin_root: root.canonical.clone(),
                name,
                dir: child.clone(),
                skill_md,
                meta,
            }),
            None => {
                let first = report.diagnostics.iter().find(|d| d.is_error());
                let (message, line) = first.map_or_else(
                    || ("it does not load".to_owned(), None),
                    |d| (d.message.clone(), d.line),
                );
                let mut d = skip(message);
                d.path = first.map_or(skill_md, |d| d.path.clone());
                d.line = line;
                diags.push(d);
            }
        }
    }
    out
}
