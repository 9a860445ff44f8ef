//! The nesting every extpool reader of JSON (and of YAML or jq output
//! turned into JSON) accepts: [`MAX_DEPTH`] levels of arrays and objects,
//! as deep as `serde_json` — which parses everything that crosses the
//! wire — reads. A reader that accepted more would hand on a value that
//! the next reader, or the client, cannot parse; one that accepted less
//! would refuse what a server may send.

/// Deepest nesting of arrays and objects that can be read (a flat array
/// is 1 level): `serde_json`'s recursion limit of 128 refuses the 128th.
pub const MAX_DEPTH: usize = 127;

/// Whether arrays and objects nested `levels` deep are deeper than
/// [`MAX_DEPTH`]: the one test every reader applies.
pub fn too_deep(levels: usize) -> bool {
    levels > MAX_DEPTH
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn the_limit_is_as_deep_as_serde_json_reads() {
        for levels in [1, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2] {
            let read = serde_json::from_str::<serde_json::Value>(&nested(levels)).is_ok();
            assert_eq!(read, !too_deep(levels), "{levels} levels");
        }
        let objects = format!(
            "{}1{}",
            "{\"a\":".repeat(MAX_DEPTH + 1),
            "}".repeat(MAX_DEPTH + 1)
        );
        assert!(serde_json::from_str::<serde_json::Value>(&objects).is_err());
    }
}
