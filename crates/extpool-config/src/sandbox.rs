//! What `config check` says of a server's `sandbox:` profile: the rules it
//! breaks (errors, from the profile's own rules), a profile on a server
//! that cannot be confined, and a profile this kernel cannot enforce (a
//! warning: the config may be meant for another machine, and the server
//! is refused here when it starts).

use std::path::Path;

use extpool_mcp::McpServerConfig;
use extpool_sandbox::{SandboxProfile, Support};

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
