//! The permission profile a plugin's stdio servers run under: the one rule,
//! used where a plugin server's configuration is made
//! ([`super::server_config`]), by `extpool plugins add` before it asks,
//! and by the listings.
//!
//! Every plugin counts, whichever host installed it: a plugin is code
//! installed from elsewhere (Claude Code and Codex install from a
//! marketplace, `name@marketplace`; Gemini CLI from a git repository, a
//! release or a folder; extpool from a folder, a git repository or a
//! marketplace), never an entry the user wrote in a configuration file.
//! Its stdio servers are confined by its **default profile**: read its own
//! folder and the project (the working directory, unless that is `/` or
//! holds the home folder), write its data folder (`PLUGIN_DATA`), a
//! private `HOME`, no network. No plugin format declares what network its
//! servers need (Agent Plugins 1.0, Claude Code, Codex and Gemini CLI
//! manifests have no such field), so the network is `none` until the user
//! widens it. The user's `plugins.sandbox.<plugin>` widens the default
//! (a network, paths, variables, limits) or turns it off (`false`), and
//! `plugins.confine: false` turns the default off for every plugin; a
//! plugin's HTTP servers run elsewhere and are not confined.

use std::path::Path;

use extpool_config::Places;
use extpool_config::model::ExtpoolConfig;
use extpool_config::sandbox::PluginSandbox;
use extpool_plugins::Plugin;
use extpool_sandbox::{Network, SandboxProfile};

/// How one plugin's stdio servers are confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// The default profile, its paths as they are.
    default: SandboxProfile,
    /// What the user's `plugins.sandbox` entry adds, as written.
    widen: Option<SandboxProfile>,
}

impl Confinement {
    /// The profile, as shown to the user: the default widened by the
    /// user's entry.
    pub fn profile(&self) -> SandboxProfile {
        match &self.widen {
            Some(w) => self.default.widened(w),
            None => self.default.clone(),
        }
    }

    /// Why this machine cannot enforce the profile (its servers are then
    /// refused when they would start), with how to opt out; `None` when it
    /// can.
    pub fn unenforceable(&self) -> Option<String> {
        let profile = self.profile();
        let refusal = extpool_sandbox::Support::current().refusal(&profile)?;
        Some(match &profile.opt_out {
            Some(opt_out) => format!("{refusal}; {opt_out}"),
            None => refusal.to_string(),
        })
    }

    /// The profile as a server entry holds it: the default's paths
    /// escaped (they are literal; the entry's strings are expanded when
    /// the server starts), the user's as written (`${VAR}`s expand then).
    pub(crate) fn for_config(&self) -> SandboxProfile {
        let escape = |paths: &[String]| -> Vec<String> {
            paths
                .iter()
                .map(|p| extpool_config::expand::escape(p))
                .collect()
        };
        let default = SandboxProfile {
            read: escape(&self.default.read),
            write: escape(&self.default.write),
            ..self.default.clone()
        };
        match &self.widen {
            Some(w) => default.widened(w),
            None => default,
        }
    }
}

/// The project a plugin server may read: the working directory, unless
/// granting it would grant everything or the home folder (`/`, the home
/// folder itself or one of its ancestors, as a service started from `/`).
pub fn project(places: &Places) -> Option<&Path> {
    let cwd = places.cwd.as_path();
    // `/` has no parent: granting it would grant everything.
    cwd.parent()?;
    if let Some(home) = &places.home
        && home.starts_with(cwd)
    {
        return None;
    }
    Some(cwd)
}

/// The `plugins.sandbox` entry of `plugin` (installed under `id`): its
/// id's, else its name's.
fn entry<'a>(config: &'a ExtpoolConfig, plugin: &Plugin, id: &str) -> Option<&'a PluginSandbox> {
    let entries = &config.plugins.sandbox;
    entries.get(id).or_else(|| entries.get(&plugin.name))
}

/// The key under `plugins.sandbox` that names `plugin` (installed under
/// `id`): its id when an entry is written so, else its name.
fn key<'a>(config: &ExtpoolConfig, plugin: &'a Plugin, id: &'a str) -> &'a str {
    if config.plugins.sandbox.contains_key(id) {
        id
    } else {
        plugin.name.as_str()
    }
}

/// How the stdio servers of `plugin` (installed under `id`) run with
/// `config` from `places`: `None` when the user turned confinement off
/// for it.
pub fn confinement(
    config: &ExtpoolConfig,
    plugin: &Plugin,
    id: &str,
    places: &Places,
) -> Option<Confinement> {
    if unconfined_by(config, plugin, id).is_some() {
        return None;
    }
    let mut default = SandboxProfile::for_plugin(
        &plugin.root,
        &plugin.data_dir,
        project(places),
        Network::None,
    );
    default.opt_out = Some(format!(
        "plugin {}'s servers run confined by default: to run them unconfined, as you, set `plugins.sandbox.{}: false` in extpool.yaml (`plugins.confine: false` for every plugin)",
        plugin.name,
        key(config, plugin, id)
    ));
    Some(Confinement {
        default,
        widen: entry(config, plugin, id)
            .and_then(PluginSandbox::profile)
            .cloned(),
    })
}

/// The setting that runs the stdio servers of `plugin` (installed under
/// `id`) unconfined, as the user writes it (`plugins.sandbox.<key>: false`
/// or `plugins.confine: false`); `None` when they run confined.
pub fn unconfined_by(config: &ExtpoolConfig, plugin: &Plugin, id: &str) -> Option<String> {
    match entry(config, plugin, id) {
        Some(PluginSandbox::Unconfined) => Some(format!(
            "plugins.sandbox.{}: false",
            key(config, plugin, id)
        )),
        Some(_) => None,
        None if config.plugins.confine => None,
        None => Some("plugins.confine: false".into()),
    }
}

/// The `plugins.sandbox` entries of `config` that name no plugin of
/// `plugins` (each a name and an id), one line each.
pub fn unmatched(config: &ExtpoolConfig, plugins: &[(&str, &str)]) -> Vec<String> {
    config
        .plugins
        .sandbox
        .keys()
        .filter(|key| {
            !plugins
                .iter()
                .any(|(name, id)| *name == key.as_str() || *id == key.as_str())
        })
        .map(|key| format!("plugins.sandbox.{key} names no plugin found; it changes nothing"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn places(cwd: &str, home: &str) -> Places {
        let mut p = Places::from_env();
        p.cwd = PathBuf::from(cwd);
        p.home = Some(PathBuf::from(home));
        p
    }

    #[test]
    fn the_project_is_granted_unless_it_holds_the_home_folder() {
        assert_eq!(
            project(&places("/srv/app", "/home/me")),
            Some(Path::new("/srv/app"))
        );
        assert_eq!(
            project(&places("/home/me/code/app", "/home/me")),
            Some(Path::new("/home/me/code/app"))
        );
        assert_eq!(project(&places("/", "/home/me")), None);
        assert_eq!(project(&places("/home/me", "/home/me")), None);
        assert_eq!(project(&places("/home", "/home/me")), None);
    }
}
