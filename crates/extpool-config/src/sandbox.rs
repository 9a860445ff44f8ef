//! What `config check` says of a server's `sandbox:` profile: the rules it
//! breaks (errors, from the profile's own rules), a profile on a server
//! that cannot be confined, and a profile this kernel cannot enforce (a
//! warning: the config may be meant for another machine, and the server
//! is refused here when it starts). And a plugin's entry under
//! `plugins.sandbox` ([`PluginSandbox`]): what it does to the plugin's
//! default profile, and the rules it breaks.

use std::fmt;
use std::path::Path;

use extpool_mcp::McpServerConfig;
use extpool_sandbox::{SandboxProfile, Support};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::diagnostics::Severity;

/// Each problem of `profile` on `server` (defined in `dir`): the field
/// under `sandbox`, its severity and the message. Paths are checked as
/// they will be used, relative ones made absolute against `dir`; a path
/// holding a `${VAR}` reference is checked once expanded, at start.
pub fn problems(
    server: &McpServerConfig,
    profile: &SandboxProfile,
    dir: &Path,
) -> Vec<(String, Severity, String)> {
    let mut resolved = profile.clone();
    for path in resolved.read.iter_mut().chain(resolved.write.iter_mut()) {
        if path.contains("${") {
            // Checked after expansion: stands for an absolute path here.
            *path = "/".to_owned() + "expanded";
        } else if Path::new(path.as_str()).is_relative() {
            *path = dir.join(path.as_str()).display().to_string();
        }
    }
    let mut out: Vec<(String, Severity, String)> = resolved
        .problems()
        .into_iter()
        .map(|p| (p.field, Severity::Error, p.message))
        .collect();
    if server.command.is_none() && server.url.is_some() {
        out.push((
            "".into(),
            Severity::Error,
            "only a stdio server (`command`) can be confined; an HTTP server runs elsewhere".into(),
        ));
    } else if let Some(refusal) = Support::current().refusal(profile) {
        out.push((
            "".into(),
            Severity::Warning,
            format!("{refusal}; the server will be refused on this machine"),
        ));
    }
    out
}

/// One plugin's entry under `plugins.sandbox`: how its stdio servers run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSandbox {
    /// `true`: confined by the plugin's default profile (even when
    /// `plugins.confine` is `false`).
    Default,
    /// `false`: unconfined, as the user.
    Unconfined,
    /// A profile: confined by the default profile widened by this one
    /// ([`SandboxProfile::widened`]). Relative paths are relative to the
    /// configuration file (made absolute when it is loaded).
    Widened(SandboxProfile),
}

impl PluginSandbox {
    /// The widening profile, when the entry is one.
    pub fn profile(&self) -> Option<&SandboxProfile> {
        match self {
            PluginSandbox::Widened(p) => Some(p),
            _ => None,
        }
    }
}

impl Serialize for PluginSandbox {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PluginSandbox::Default => s.serialize_bool(true),
            PluginSandbox::Unconfined => s.serialize_bool(false),
            PluginSandbox::Widened(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PluginSandbox {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = PluginSandbox;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "true, false, or a profile (network, read, write, env, limits) that widens the plugin's default",
                )
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<PluginSandbox, E> {
                Ok(if v {
                    PluginSandbox::Default
                } else {
                    PluginSandbox::Unconfined
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<PluginSandbox, A::Error> {
                SandboxProfile::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(PluginSandbox::Widened)
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for PluginSandbox {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PluginSandbox".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let profile = generator.subschema_for::<SandboxProfile>();
        schemars::json_schema!({
            "description": "How a plugin's stdio servers run: true (its default profile), false (unconfined, as the user), or a profile that widens the default.",
            "anyOf": [{"type": "boolean"}, profile]
        })
    }
}

/// Each problem of plugin entry `profile` (of a file in `dir`): the
/// field under it and the message, as for a server's `sandbox:`.
pub fn plugin_problems(profile: &SandboxProfile, dir: &Path) -> Vec<(String, Severity, String)> {
    let server = McpServerConfig {
        command: Some("plugin".into()),
        ..McpServerConfig::default()
    };
    problems(&server, profile, dir)
        .into_iter()
        // Whether this machine can enforce it is said of the plugin's
        // servers when they start (with the default profile's own opt-out).
        .filter(|(field, _, _)| !field.is_empty())
        .collect()
}

/// Makes the relative `read` and `write` paths of `profile` absolute
/// against `dir` (a path starting with `${` is left to expansion).
pub fn resolve_relative(profile: &mut SandboxProfile, dir: &Path) {
    for path in profile.read.iter_mut().chain(profile.write.iter_mut()) {
        if !path.starts_with("${") && Path::new(path.as_str()).is_relative() {
            *path = dir.join(path.as_str()).display().to_string();
        }
    }
}
