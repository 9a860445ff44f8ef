//! The sandbox rewrites filters (checked arithmetic, collections, updates,
//! interpolation) and replaces some natives (`contains`, `indices`, the
//! regex family, `tojson`): on ordinary filters it must answer exactly as
//! jaq itself does, in the same order, with errors where jaq errs.

use jaq_core::data::JustLut;
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars};
use serde_json::json;

use super::*;

/// The filter's outputs under plain jaq, or `None` when it fails.
fn plain(filter: &str, input: &Value) -> Option<Vec<Value>> {
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let arena = Arena::default();
    let modules = Loader::new(defs)
        .load(
            &arena,
            File {
                code: filter,
                path: (),
            },
        )
        .ok()?;
    let funs = jaq_core::funs::<JustLut<jaq_json::Val>>()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let compiled = Compiler::default().with_funs(funs).compile(modules).ok()?;
    let value = jaq_json::read::parse_single(input.to_string().as_bytes()).ok()?;
    let ctx = Ctx::<JustLut<jaq_json::Val>>::new(&compiled.lut, Vars::new([]));
    let mut out = convert::Output::new(usize::MAX / 2);
    for item in compiled.id.run((ctx, value)) {
        out.push(&item.ok()?).ok()?;
    }
    Some(out.into_values())
}

/// Filters that exercise every rewrite and every replaced native.
const FILTERS: &[&str] = &[
    // generators through checked operators keep jaq's order
    "[(1,2) + (10,20)]",
    "[(1,2) - (10,20)]",
    "[(1,2) * (3,4)]",
    "[(10,20) / (2,5)]",
    "[(10,21) % (3,4)]",
    "[(1,2) == (1,2)]",
    "[(1,2) < (2,1)]",
    "[. + ([6], [7])]",
    r#"["\(1,2)-\(3,4)"]"#,
    r#"[{a: (1,2), b: (3,4)}]"#,
    r#"[{("x", "y"): (1, 2)}]"#,
    r#"{"a": 1} as $o | $o | {a, "b": 2, $o, c: .a}"#,
    r#""x" * 3, "x" * 0, 2 * 3, 2.5 * 2"#,
    r#"{a: {b: 1}} * {a: {c: 2}}"#,
    r#"[1,2,3,1] - [1]"#,
    r#""a,b,,c" / ",", "abc" / """#,
    r#"null + 1, 1 + null, {} + {a: 1}, [1] + [2], "a" + "b""#,
    r#"try ({} + 1) catch ., try ([] - {}) catch ., try ("a" / 1) catch ."#,
    // collections and objects
    "[.[] | . * 2]",
    "[range(5)] | map(select(. % 2 == 0))",
    "[limit(3; repeat(1))]",
    "[.[] as $x | [$x, $x]]",
    "to_entries, with_entries(.value += 1)",
    // updates of every kind
    ".[0] = 9",
    ".[] |= . + 1",
    ".[] += 10",
    ".[1:] = [7]",
    ".[2:4] |= map(. * 100)",
    ".[] |= empty",
    "(.[] | select(. > 2)) |= . * 2",
    ".[0] //= 5",
    "{a: {b: null}} | .a.b //= 3",
    "{a: {b: null}} | .a.c = 4",
    "{a: {b: null}} | .a.c.d = 4",
    "{a: 1} | .b += 1",
    "{a: 1} | .b.c.d += 1",
    "{} | .a += [1] | .a += [2]",
    "reduce range(5) as $i ({}; .[\"k\\($i)\"] = $i)",
    "reduce range(5) as $i ([]; . + [$i])",
    "foreach range(5) as $i (0; . + $i)",
    "del(.[0, 2])",
    "to_entries | map(.key) ",
    "walk(if type == \"number\" then . + 1 else . end)",
    "paths, [paths(type == \"number\")]",
    "getpath([0]), setpath([1]; 5), delpaths([[0]])",
    "[..]",
    // strings and formats
    "tostring, tojson, @json, @text, @base64, @html, @uri, @sh",
    r#"@base64 "x\(.)y", @json "v: \(.)""#,
    "map(tostring) | join(\"-\")",
    r#""héllo wörld" | explode, (explode | implode), ascii_upcase, length, utf8bytelength"#,
    r#""a-b-c" | split("-"), ltrimstr("a-"), rtrimstr("-c"), startswith("a"), endswith("c")"#,
    r#""  x  " | trim, ltrim, rtrim"#,
    // the regex family
    r#""test 123 abc 456" | [match("[0-9]+"; "g")]"#,
    r#""test 123 abc 456" | [match("(?<n>[0-9])([a-z])?"; "g")]"#,
    r#""aXbXc" | test("x"), test("x"; "i"), [scan("[a-c]")], split("X"; null)"#,
    r#""aXbXc" | sub("X"; "-"), gsub("X"; "-"), gsub("(?<l>[a-c])"; "<\(.l)>")"#,
    r#""abc" | gsub(""; "."), [splits("b")], capture("(?<x>b)")"#,
    r#""héllo" | [match("l"; "g") | .offset], sub("é"; "e")"#,
    r#""aaa" | [match("a*?"; "g")] | length"#,
    r#""x" | try test("("; "") catch ., try test("a"; "q") catch ."#,
    // the search natives
    "contains([1]), contains([9]), inside([1, 2, 3, 4, 5])",
    r#"{a: [1, {b: "xyz"}]} | contains({a: [{b: "y"}]}), contains({a: [2]})"#,
    r#""foobar" | contains("oba"), contains("z")"#,
    "indices(1), indices([1, 2]), index(2), rindex(1)",
    r#""a,b, cd, efg" | indices(", "), index(","), rindex(",")"#,
    r#""aaaa" | indices("aa")"#,
    r#""héhéhé" | indices("hé")"#,
    "[] | indices([]), indices(1)",
    "try (1 | indices(1)) catch .",
    // sorting and grouping
    "sort, sort_by(-.), group_by(. % 2), unique, min, max, min_by(-.), max_by(-.)",
    r#"[{a: 2, b: 1}, {a: 1}] | sort, sort_by(.a), unique_by(.a), (map(keys) | add)"#,
    "[[2, 1], [1, 2], [1]] | sort, (. == sort), (.[0] < .[1])",
    // numbers and misc
    "map(. / 2 | floor), (add / length), (map(fabs) | add)",
    "tojson | fromjson",
    "[splits(\"a\")]?",
    "try error({a: 1}) catch .a",
    "try error(\"boom\") catch .",
    ".[10], .[-1], .[1:3], first, last, nth(1)",
    "any(. > 4), all(. > 0), isempty(empty), [limit(2; .[])], [first(range(10; 0; -3))]",
    "[range(0; 10; 3)], [range(5; 0; -2)]",
    "[.[] | tostring | ascii_downcase] | unique",
    "transpose? // \"none\"",
    "[[1,2],[3,4]] | transpose, flatten, combinations | tostring",
    "ltrimstr(1)",
];

#[test]
fn the_sandbox_answers_as_jaq_does() {
    let input = json!([1, 2, 3, 4, 5]);
    let limits = JqLimits {
        timeout_ms: 600_000,
        ..JqLimits::default()
    };
    let mut differences = Vec::new();
    let mut failing = Vec::new();
    for filter in FILTERS {
        let expected = plain(filter, &input);
        if expected.is_none() {
            failing.push(*filter);
        }
        let got = evaluate(filter, &input, &limits);
        let same = match (&expected, &got) {
            (Some(e), Ok(g)) => e == g,
            (None, Err(e)) => !e.is_budget_exceeded(),
            _ => false,
        };
        if !same {
            differences.push(format!(
                "{filter}\n  jaq:     {expected:?}\n  sandbox: {got:?}"
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    // The comparison means something only where jaq answers.
    assert!(failing.len() <= 3, "jaq fails on {failing:?}");
}
