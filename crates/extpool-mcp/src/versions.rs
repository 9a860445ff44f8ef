//! The MCP protocol versions extpool speaks — to the clients of its
//! gateway and to its upstream servers — as one list that every check of
//! a version asks: an upstream whose `initialize` answers another version
//! is disconnected (the specification: a client that does not support the
//! version in the server's response should disconnect), and a client
//! request naming another is refused.

use rmcp::model::ProtocolVersion;

/// Every version extpool speaks, oldest first.
pub fn spoken() -> &'static [ProtocolVersion] {
    ProtocolVersion::KNOWN_VERSIONS
}

/// Whether extpool speaks protocol version `version`.
pub fn speaks(version: &str) -> bool {
    spoken().iter().any(|known| known.as_str() == version)
}

/// The versions extpool speaks, as a message lists them
/// (`2024-11-05, …, 2026-07-28`).
pub fn spoken_list() -> String {
    spoken()
        .iter()
        .map(ProtocolVersion::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_versions_of_both_eras_are_spoken_and_no_other() {
        for v in ["2025-06-18", "2025-11-25", "2026-07-28"] {
            assert!(speaks(v), "{v}");
        }
        for v in ["1999-01-01", "2025-11-26", "", "2025-11-25 "] {
            assert!(!speaks(v), "{v:?}");
        }
        assert!(spoken_list().starts_with("2024-11-05, "));
        assert!(spoken_list().ends_with(", 2026-07-28"));
    }
}
