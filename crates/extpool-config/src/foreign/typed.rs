//! Values of the other programs' files read with the type they were
//! written with. JSON and TOML say a value's type as written, and Claude
//! Code, Cursor, VS Code and Codex refuse `"command": 7` or `"url": false`;
//! extpool's own YAML keeps taking an unquoted scalar as a string where one
//! is expected (`args: [--port, 8080]`).

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// A string that must be written as a string: a number, boolean or null
/// in its place is a located "expected a string, found …" error.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StrictString(pub String);

impl StrictString {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> serde::Deserialize<'de> for StrictString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Only;
        impl Visitor<'_> for Only {
            type Value = StrictString;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<StrictString, E> {
                Ok(StrictString(s.to_owned()))
            }
        }
        // Any: the value's own type decides, not the schema's.
        d.deserialize_any(Only)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::de::from_node;
    use crate::tree::parse_json;

    #[test]
    fn only_a_string_is_a_string() {
        let root = parse_json(r#"{"a": "x", "b": 7, "c": false}"#).unwrap();
        let a: StrictString = from_node(root.get("a").unwrap()).unwrap();
        assert_eq!(a.as_str(), "x");
        for key in ["b", "c"] {
            let e = from_node::<StrictString>(root.get(key).unwrap()).unwrap_err();
            assert!(e.to_string().contains("expected a string, found"), "{e}");
            assert!(e.pos.is_some(), "{e:?}");
        }
    }
}
