//! Property tests of URI parsing (`skill://…`, `mcp://…`, registered
//! schemes): no input panics, nothing accepted can climb out of its owner,
//! and every refusal names the URI.
//!
//! `EXTPOOL_FUZZ_CASES=100000 cargo test -p extpool-core --test it props`
//! runs a long campaign.

use extpool_core::uri::ExtUri;
use proptest::prelude::*;

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("EXTPOOL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// URIs made of the pieces that matter (schemes, dots, encodings,
/// separators), and arbitrary text.
fn uri() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(
        &[
            "skill", "mcp", "x+y", "1bad", "", "://", "/", "//", "\\", ".", "..", "%2e", "%2E%2e",
            "%2f", "%5c", "a", "pdf", "SKILL.md", "?q=1", "#f", "%00", "\u{0}", "\n", "é", "~",
            ":",
        ][..],
    );
    prop_oneof![
        3 => prop::collection::vec(piece, 0..12).prop_map(|p| p.concat()),
        1 => "\\PC{0,64}",
        1 => "(skill|mcp)://[a-z.%/\\\\]{0,30}",
    ]
}

/// Percent-decoding, as a reader of the path would do it.
fn decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

proptest! {
    #![proptest_config(cases(5000))]

    #[test]
    fn uris_parse_without_panicking_and_refusals_name_the_uri(raw in uri()) {
        match ExtUri::parse(&raw) {
            Ok(u) => {
                // Nothing accepted leaves its owner, however a reader decodes it.
                let once = decode(u.path);
                let twice = decode(&String::from_utf8_lossy(&once));
                for path in [once, twice] {
                    prop_assert!(!path.split(|&b| b == b'/' || b == b'\\').any(|s| s == b".."), "{raw:?}");
                }
                prop_assert!(u.authority != "..", "{raw:?}");
                prop_assert!(!raw.contains('\\'), "{raw:?}");
                prop_assert!(!raw.chars().any(char::is_control), "{raw:?}");
            }
            Err(e) => {
                prop_assert!(e.to_string().contains(&format!("{raw:?}")), "{e}");
            }
        }
    }
}
