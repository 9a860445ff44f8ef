//! The counts the overview and the gateway's banner print, each labelled
//! with what it holds: a client's `tools/list` from the gateway has the
//! gateway's own tools (`ListMcpSources`, `RefreshMcpSources`) besides the
//! servers' tools and the catalog's built-ins the overview counts, and the
//! overview's skills include those MCP servers host, which `extpool list
//! skills` leaves out unless `--hosted`. One place says what is counted,
//! so the numbers printed agree with what each listing shows.

use extpool_host::catalog::builtins::{BuiltinTool, Runner};

/// Tools by where they come from.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ToolCounts {
    /// The servers' tools.
    pub servers: usize,
    /// The catalog's built-ins (`ListMcpResources`, `CallMcpWithQuery`, …).
    pub builtin: usize,
    /// The gateway's own (`ListMcpSources`, `RefreshMcpSources`, `ToolSearch`, …).
    pub gateway: usize,
}

impl ToolCounts {
    /// The counts of a list of tool names.
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut counts = Self::default();
        for name in names {
            match BuiltinTool::named(name).map(BuiltinTool::runner) {
                None => counts.servers += 1,
                Some(Runner::Catalog) => counts.builtin += 1,
                Some(_) => counts.gateway += 1,
            }
        }
        counts
    }

    /// Every tool counted.
    pub fn total(self) -> usize {
        self.servers + self.builtin + self.gateway
    }

    /// `N tools (S from servers, B built-in, G of the gateway)`, each part
    /// only when it is not zero.
    pub fn label(self) -> String {
        let mut parts = Vec::new();
        if self.servers > 0 {
            parts.push(format!("{} from servers", self.servers));
        }
        if self.builtin > 0 {
            parts.push(format!("{} built-in", self.builtin));
        }
        if self.gateway > 0 {
            parts.push(format!("{} of the gateway", self.gateway));
        }
        let total = plural(self.total(), "tool");
        if parts.len() > 1 {
            format!("{total} ({})", parts.join(", "))
        } else {
            total
        }
    }
}

/// `N skills (L local, H hosted by MCP servers)`: `sources` are the
/// skills' `source` fields (`local`, `plugin`, or a server's name).
pub fn skills_label<'a>(sources: impl IntoIterator<Item = &'a str>) -> String {
    let (mut local, mut hosted) = (0, 0);
    for source in sources {
        if matches!(source, "local" | "plugin") {
            local += 1;
        } else {
            hosted += 1;
        }
    }
    let total = plural(local + hosted, "skill");
    if local > 0 && hosted > 0 {
        format!("{total} ({local} local, {hosted} hosted by MCP servers)")
    } else {
        total
    }
}

/// `1 tool`, `2 tools`.
pub fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_say_what_is_counted() {
        let c = ToolCounts::of([
            "mcp__a__x",
            "mcp__a__y",
            "ListMcpResources",
            "ListMcpSources",
        ]);
        assert_eq!(
            c,
            ToolCounts {
                servers: 2,
                builtin: 1,
                gateway: 1
            }
        );
        assert_eq!(
            c.label(),
            "4 tools (2 from servers, 1 built-in, 1 of the gateway)"
        );
        assert_eq!(ToolCounts::of(["mcp__a__x"]).label(), "1 tool");
        assert_eq!(
            skills_label(["local", "local", "kit"]),
            "3 skills (2 local, 1 hosted by MCP servers)"
        );
        assert_eq!(skills_label(["local"]), "1 skill");
    }
}
