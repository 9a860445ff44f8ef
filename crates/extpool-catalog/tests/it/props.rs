//! Property tests of the catalog's parsers of outside input: jq filters on
//! the sandbox (from the model) and tool names (from servers). No input
//! panics, every evaluation ends within its budgets with bounded output,
//! and every rejection names what it refused.
//!
//! `EXTPOOL_FUZZ_CASES=100000 cargo test -p extpool-catalog --test it props`
//! runs a long campaign; the normal run tries a few hundred to a few
//! thousand cases per property.

use std::time::{Duration, Instant};

use extpool_catalog::JqLimits;
use extpool_catalog::jq::{JqError, evaluate};
use extpool_catalog::names::{canonical_name, is_provider_safe, provider_alias, validate_name};
use proptest::prelude::*;
use serde_json::Value;

/// The number of cases: `EXTPOOL_FUZZ_CASES`, else `default`.
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

/// A watchdog on one case (a hang would be a bug), not a speed check.
const CASE_LIMIT: Duration = Duration::from_secs(20);

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(Value::from),
        "[a-z ,:]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-c]", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const LEAVES: &[&str] = &[
    ".",
    ".a",
    ".[0]",
    ".[]",
    ".[]?",
    "..",
    "1",
    "\"x\"",
    "null",
    "true",
    "[]",
    "{}",
    "empty",
    "length",
    "keys",
    "tostring",
    "tojson",
    "range(5)",
    "$x",
    "add",
    "sort",
    "unique",
    "reverse",
    "to_entries",
    "paths",
    "flatten",
    "min",
    "max",
    "explode",
    "ascii_downcase",
    "input",
    "env",
    "now",
    "[.[]?] | length",
    "@base64",
    "@json",
    "splits(\"a\")",
    "error(\"e\")",
];

const UNARY: &[&str] = &[
    "map(#)",
    "select(#)",
    "[#]",
    "{a: #}",
    "try #",
    "#?",
    "first(#)",
    "limit(3; #)",
    "repeat(#)",
    "recurse(#)",
    "group_by(#)",
    "sort_by(#)",
    "contains(#)",
    "indices(#)",
    "index(#)",
    "ltrimstr(#)",
    "test(#)",
    "gsub(#; \"b\")",
    "split(#)",
    "join(#)",
    "tostring | fromjson?",
    "def f: #; f",
    "# as $x | $x",
    "reduce # as $x (0; . + 1)",
    "foreach # as $x (0; . + 1)",
    ".a |= #",
    ".[0] = #",
    ".[] += #",
    "del(#)",
    "getpath([#])",
    "\"\\(#)\"",
    "@text \"v\\(#)\"",
    "with_entries(#)",
    "any(#)",
    "all(#)",
    "until(true; #)",
    "[limit(5; repeat(#))] | tojson",
    "# * 3",
    "-(#)",
    "not",
    "walk(#)",
];

const BINARY: &[&str] = &[
    "# | #",
    "#, #",
    "# + #",
    "# - #",
    "# * #",
    "# / #",
    "# % #",
    "# == #",
    "# != #",
    "# < #",
    "# >= #",
    "# and #",
    "# or #",
    "# // #",
    "if # then # else # end",
    "[#, #]",
    "{(#): #}",
];

fn filter() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(LEAVES).prop_map(|s| format!("1 as $x | {s}"));
    let structured = leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (prop::sample::select(UNARY), inner.clone())
                .prop_map(|(t, a)| t.replace('#', &format!("({a})"))),
            (
                prop::sample::select(BINARY),
                inner.clone(),
                inner.clone(),
                inner
            )
                .prop_map(|(t, a, b, c)| {
                    t.replacen('#', &format!("({a})"), 1)
                        .replacen('#', &format!("({b})"), 1)
                        .replacen('#', &format!("({c})"), 1)
                        .replace('#', "(.)")
                }),
        ]
    });
    // Arbitrary text too: every refusal of it must be located.
    prop_oneof![4 => structured, 1 => "\\PC{0,40}", 1 => "[.|\\[\\]{}()a-z0-9\"$:;, +*-]{0,40}"]
}

fn limits() -> JqLimits {
    JqLimits {
        max_steps: 20_000,
        timeout_ms: 10_000,
        max_value_bytes: 1 << 20,
        max_built_bytes: 8 << 20,
        ..JqLimits::default()
    }
}

proptest! {
    #![proptest_config(cases(1000))]

    #[test]
    fn jq_filters_end_within_their_budgets(filter in filter(), input in json()) {
        let limits = limits();
        let started = Instant::now();
        let result = evaluate(&filter, &input, &limits);
        prop_assert!(started.elapsed() < CASE_LIMIT, "{filter}: {:?}", started.elapsed());
        match result {
            Ok(outputs) => {
                let size: usize = outputs.iter().map(|v| v.to_string().len() + 1).sum();
                prop_assert!(size <= limits.max_output_bytes + 1, "{filter}: {size} bytes out");
            }
            Err(JqError::Internal) => prop_assert!(false, "{filter}: the evaluator failed internally"),
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                if e.is_filter_error() {
                    // A refused filter says where in it the problem is.
                    let pos = e.position().expect("a position");
                    prop_assert!(pos.offset <= filter.len(), "{filter}: {e}");
                    prop_assert!(e.to_string().contains(&format!("line {}", pos.line)), "{e}");
                }
            }
        }
    }

    #[test]
    fn tool_names_are_checked_without_panicking(name in "\\PC{0,80}|[\\x00-\\x7f]{0,300}", ns in "[A-Za-z0-9_-]{0,20}|\\PC{0,10}") {
        match validate_name(&name, "tool name") {
            Ok(()) => {}
            Err(e) => {
                let shown = e.to_string();
                // The refusal names the name (Debug-escaped), or what was empty.
                prop_assert!(
                    shown.contains(&format!("{name:?}")) || (name.is_empty() && shown.contains("tool name")),
                    "{shown}"
                );
            }
        }
        if let Ok(canonical) = canonical_name(&ns, &name) {
            prop_assert!(canonical.contains(&name));
            let alias = provider_alias(&canonical);
            prop_assert!(is_provider_safe(&alias), "{alias:?}");
        }
    }
}
