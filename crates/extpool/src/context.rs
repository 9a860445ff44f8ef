//! What every command starts from: the global flags, standard output, and
//! the configuration (loaded once, on demand).

use std::io::{IsTerminal, Write};

use anyhow::Result;
use extpool_host::config::{Diagnostic, LoadRequest, Loaded, Places, Severity};

use crate::cli::GlobalArgs;
use crate::output::{Out, Style};

/// The shared state of one invocation.
pub struct Ctx {
    /// Global flags.
    pub global: GlobalArgs,
    /// Standard output.
    pub out: Out,
    /// Colours for stderr.
    pub err_style: Style,
    /// Where configs are looked for.
    pub places: Places,
    /// The plugins found when the configuration was last loaded, handed
    /// to the host started on it.
    plugins: std::sync::Mutex<Option<extpool_host::plugins::Found>>,
}

impl Ctx {
    /// The context of this process.
    pub fn new(global: GlobalArgs) -> Self {
        let out = Out::new(global.color);
        let err_style = Style::new(global.color, std::io::stderr().is_terminal());
        if let Some(warning) = extpool_host::config::read::limit_env_warning() {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{}: {}",
                err_style.yellow("warning"),
                crate::output::shown(&warning)
            );
        }
        Self {
            global,
            out,
            err_style,
            places: Places::from_env(),
            plugins: std::sync::Mutex::new(None),
        }
    }

    fn request(&self) -> LoadRequest {
        LoadRequest {
            files: self.global.config.clone(),
            places: self.places.clone(),
        }
    }

    /// Loads the configuration (named with `--config`, or discovered) with
    /// the servers of the plugins found beside it (see
    /// [`extpool_host::plugins`]); the plugins found go to the host
    /// started on it ([`Ctx::found_plugins`]).
    pub fn load(&self) -> Result<Loaded> {
        let (loaded, found) = extpool_host::plugins::load(&self.request())?;
        if let Ok(mut slot) = self.plugins.lock() {
            *slot = Some(found);
        }
        Ok(loaded)
    }

    /// Loads the configuration files only, without plugins: what `config`
    /// checks, shows and imports.
    pub fn load_files(&self) -> Result<Loaded> {
        Ok(extpool_host::config::load(&self.request())?)
    }

    /// The plugins found by the last [`Ctx::load`].
    pub fn found_plugins(&self) -> Option<extpool_host::plugins::Found> {
        self.plugins.lock().ok().and_then(|s| s.clone())
    }

    /// Loads the configuration and prints its warnings to stderr.
    pub fn load_reporting(&self) -> Result<Loaded> {
        let loaded = self.load()?;
        self.warn(&loaded.diagnostics);
        Ok(loaded)
    }

    /// A path as shown to the user (relative to the working directory, `~`).
    pub fn show_path(&self, path: &std::path::Path) -> String {
        extpool_host::config::diagnostics::display_path(
            path,
            Some(&self.places.cwd),
            self.places.home.as_deref(),
        )
    }

    /// Skills with their directories as shown to the user.
    pub fn shown_skills(
        &self,
        skills: Vec<extpool_host::SkillInfo>,
    ) -> Vec<extpool_host::SkillInfo> {
        skills
            .into_iter()
            .map(|mut s| {
                s.path = s.path.map(|p| self.show_path(&p).into());
                s
            })
            .collect()
    }

    /// Prints warnings and errors (not notes) to stderr: an error of a
    /// loaded configuration is a file or entry that was skipped while the
    /// rest loaded, so the command goes on.
    pub fn warn(&self, diagnostics: &[Diagnostic]) {
        let mut err = std::io::stderr().lock();
        for d in diagnostics.iter().filter(|d| d.severity != Severity::Note) {
            let _ = writeln!(err, "{}", self.diagnostic_line(d));
        }
    }

    /// A diagnostic as one (or two) coloured lines.
    pub fn diagnostic_line(&self, d: &Diagnostic) -> String {
        diagnostic_line(self.err_style, d)
    }
}

/// A diagnostic as one (or two) lines, its severity coloured in `s`.
pub fn diagnostic_line(s: Style, d: &Diagnostic) -> String {
    let text = crate::output::shown(&d.to_string()).into_owned();
    let word = d.severity.as_str();
    let coloured = match d.severity {
        Severity::Error => s.red(word),
        Severity::Warning => s.yellow(word),
        Severity::Note => s.cyan(word),
    };
    text.replacen(&format!(": {word}: "), &format!(": {coloured}: "), 1)
}

/// A configuration that cannot be used, as every command reports it on
/// stderr: each diagnostic with its own `file:line:column: error:`, then
/// one line that counts the errors — never an `error:` before an `error:`.
pub fn config_error_report(s: Style, diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        out.push_str(&diagnostic_line(s, d));
        out.push('\n');
    }
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    out.push_str(&format!(
        "{}: the configuration has {errors} error{}\n",
        s.red("error"),
        if errors == 1 { "" } else { "s" }
    ));
    out
}
