//! Budget tests: filters that build or walk huge values end with a budget
//! error, for a deterministic reason (never the clock), in bounded memory.
//!
//! Peak memory is measured in a fresh child process (this test binary,
//! re-run on one probe test), so other tests do not disturb the figure.

use std::process::Command;
use std::time::Instant;

use serde_json::json;

use super::*;

/// Environment variable that turns [`probe_child`] into a probe.
const PROBE_FILTER: &str = "EXTPOOL_JQ_PROBE_FILTER";
const PROBE_INPUT: &str = "EXTPOOL_JQ_PROBE_INPUT";
/// Peak resident memory a probe may reach (the test harness itself takes a few MiB).
const MAX_PEAK_KIB: u64 = 256 * 1024;

/// Limits under which only the deterministic budgets (value size, total
/// built, work, steps) can stop a filter: the clock is far away.
fn no_clock() -> JqLimits {
    JqLimits {
        timeout_ms: 600_000,
        ..JqLimits::default()
    }
}

/// The peak resident set of this process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// In a child process: runs the probe filter and prints the outcome and peak memory.
#[test]
fn probe_child() {
    let Ok(filter) = std::env::var(PROBE_FILTER) else {
        return;
    };
    let input: Value = std::env::var(PROBE_INPUT)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    let started = Instant::now();
    let outcome = evaluate(&filter, &input, &no_clock());
    let elapsed = started.elapsed();
    let kind = match &outcome {
        Ok(_) => "ok".to_owned(),
        Err(e) if e.is_budget_exceeded() => format!("budget:{e}"),
        Err(e) => format!("error:{e}"),
    };
    #[allow(clippy::print_stdout)]
    {
        println!("PROBE outcome={kind}");
        println!("PROBE peak_kib={}", peak_rss_kib());
        println!("PROBE elapsed_ms={}", elapsed.as_millis());
    }
}

struct Probe {
    outcome: String,
    peak_kib: u64,
    elapsed_ms: u64,
}

/// Runs `filter` on `input` in a child process.
fn probe(filter: &str, input: &Value) -> Probe {
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new(exe)
        .args([
            "jq::budget_tests::probe_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_FILTER, filter)
        .env(PROBE_INPUT, input.to_string())
        .output()
        .expect("the probe runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.split_once("PROBE ")?.1.strip_prefix(name))
            .map(str::to_owned)
            .unwrap_or_else(|| {
                panic!(
                    "probe of {filter:?} printed no {name}: status {:?}\n{stdout}\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                )
            })
    };
    Probe {
        outcome: field("outcome="),
        peak_kib: field("peak_kib=").parse().unwrap_or(u64::MAX),
        elapsed_ms: field("elapsed_ms=").parse().unwrap_or(u64::MAX),
    }
}

/// What a bounded filter may end with.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// A budget error (value size, total built, work or steps).
    Refused,
    /// Any end but the clock: a result, a budget error or an output limit.
    Ends,
}

/// Asserts that `filter` ends as expected, in bounded memory, before the clock stops it.
fn assert_bounded(filter: &str, input: &Value, expect: Expect) {
    let p = probe(filter, input);
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "{filter}: {} in {} ms, peak {} KiB",
            p.outcome, p.elapsed_ms, p.peak_kib
        );
    }
    assert!(
        !p.outcome.contains("ms (the limit)"),
        "{filter}: only the clock stopped it: {}",
        p.outcome
    );
    if expect == Expect::Refused {
        assert!(
            p.outcome.starts_with("budget:"),
            "{filter}: expected a budget error, got {}",
            p.outcome
        );
    }
    assert!(
        p.peak_kib < MAX_PEAK_KIB,
        "{filter}: peak memory {} KiB, more than {MAX_PEAK_KIB} KiB",
        p.peak_kib
    );
}

/// The doubled value: `[., .]` forty times shares its halves, so it is
/// small in memory but 2^40 leaves when walked.
const DOUBLED: &str = "reduce range(40) as $i ([1]; [., .])";

#[test]
fn a_doubled_value_cannot_be_serialized() {
    assert_bounded(
        &format!("{DOUBLED} | tojson | length"),
        &Value::Null,
        Expect::Refused,
    );
}

#[test]
fn a_doubled_value_cannot_be_compared_sorted_or_searched() {
    for tail in [
        "$d == $d2",
        "$d < $d2",
        "[$d, $d2] | sort",
        "[$d, $d2] | unique",
        "$d | contains($d2)",
        "[$d] | index([$d2])",
        "$d | tostring",
        "\"\\($d)\"",
        "$d | @base64",
        "[$d[] | $d2]",
    ] {
        // `$d2` is built apart from `$d`, so no comparison is cut short by
        // pointer equality.
        let filter =
            format!("({DOUBLED}) as $d | (reduce range(40) as $i ([1]; [., .])) as $d2 | {tail}");
        assert_bounded(&filter, &Value::Null, Expect::Refused);
    }
}

#[test]
fn a_doubling_array_is_refused_before_it_is_large() {
    assert_bounded(
        r#"reduce range(40) as $i (["x"]; . + .) | add"#,
        &Value::Null,
        Expect::Refused,
    );
    assert_bounded(
        r#"reduce range(40) as $i (["x"]; . + .)"#,
        &Value::Null,
        Expect::Refused,
    );
}

#[test]
fn gsub_on_a_long_string_is_bounded() {
    let input = json!("y".repeat(10_000));
    assert_bounded(r#"gsub(""; "xxxxxxxxxx")"#, &input, Expect::Ends);
}

#[test]
fn values_shared_through_updates_are_counted_as_copies() {
    for filter in [
        // `.[0] = .` doubles through an update, not a constructor.
        "reduce range(40) as $i ([1, 1]; .[0] = . | .[1] = .[0]) | tojson",
        // the error message would print the whole value
        "reduce range(40) as $i ([1, 1]; .[0] = . | .[1] = .[0]) | try .a catch length",
        "reduce range(40) as $i ([1, 1]; .[] = .) | length",
        // a linear blow-up: one large value shared ten thousand times
        r#"("x" * 1000000) as $x | reduce range(10000) as $i ({}; .["k\($i)"] = $x) | tostring"#,
        r#"[limit(100000; repeat("x" * 100000))] | length"#,
    ] {
        assert_bounded(filter, &Value::Null, Expect::Refused);
    }
}

#[test]
fn many_large_values_alive_at_once_are_bounded() {
    for filter in [
        // each level of recursion holds a new 8 MB string
        r#"def f: (. + "x") as $keep | ($keep | f), $keep; "x" * 8000000 | [f] | length"#,
        r#"[range(1000) | "x" * 8000000 + "y"] | length"#,
        r#"[range(1000) as $i | {a: ("x" * 8000000 + "\($i)")}] | length"#,
    ] {
        assert_bounded(filter, &Value::Null, Expect::Refused);
    }
}

#[test]
fn expensive_builtins_are_bounded_by_work() {
    for filter in [
        "[range(60000)] | contains([range(60000)] | reverse)",
        "[range(100000) | 0] | indices([range(50000) | 0] + [1])",
        r#"[range(100000) | 0] | index([range(50000) | 0] + [1])"#,
        r#""a" * 10000000 | test("(a|b)*c" * 100)"#,
        r#""," * 8000000 | split(",") | length"#,
        r#""," * 8000000 | [splits(",")] | length"#,
        r#""x" * 10000000 | explode | length"#,
        r#""x" * 10000000 | [match("x"; "g")] | length"#,
    ] {
        assert_bounded(filter, &Value::Null, Expect::Refused);
    }
    // A linear search need not be refused, only bounded.
    assert_bounded(
        r#""a" * 1000000 | indices("a" * 50000 + "b")"#,
        &Value::Null,
        Expect::Ends,
    );
}

#[test]
fn ordinary_filters_on_large_inputs_still_work() {
    let items: Vec<Value> = (0..20_000)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "tags": ["a", "b"]}))
        .collect();
    let input = json!({ "items": items });
    let limits = JqLimits {
        max_output_bytes: 10 << 20,
        ..no_clock()
    };
    let run = |filter: &str| {
        let started = Instant::now();
        let out = evaluate(filter, &input, &limits);
        #[allow(clippy::print_stderr)]
        {
            eprintln!("{filter}: {} ms", started.elapsed().as_millis());
        }
        out
    };
    assert_eq!(
        run(".items | map(select(.id % 2 == 0)) | length").unwrap(),
        vec![json!(10_000)]
    );
    assert_eq!(
        run(".items | sort_by(-.id) | .[0].id").unwrap(),
        vec![json!(19_999)]
    );
    assert_eq!(
        run("reduce .items[] as $x ({}; .[$x.name] = $x.id) | length").unwrap(),
        vec![json!(20_000)]
    );
    assert_eq!(
        run("reduce .items[] as $x ([]; . + [$x.id]) | length").unwrap(),
        vec![json!(20_000)]
    );
    assert_eq!(
        run("[.items[].name] | join(\",\") | length").unwrap(),
        vec![json!(208_889)]
    );
    assert_eq!(
        run(".items | group_by(.id % 3) | map(length)").unwrap(),
        vec![json!([6667, 6667, 6666])]
    );
    assert_eq!(
        run(".items | tojson | fromjson | length").unwrap(),
        vec![json!(20_000)]
    );
    assert_eq!(
        run(".items == .items and (.items | contains([{id: 5}]))").unwrap(),
        vec![json!(true)]
    );
}
