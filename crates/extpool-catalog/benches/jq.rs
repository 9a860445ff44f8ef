//! jq benchmark: the sandbox (`extpool_catalog::jq::evaluate`) against
//! plain jaq on the same filters and input, interleaved, with the ratio.
//!
//! Run with `cargo bench -p extpool-catalog --bench jq` (optimized). The
//! input is 20,000 objects (about 1 MB of JSON), as a large tool result.

// A benchmark's output is its result.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use extpool_catalog::JqLimits;
use extpool_catalog::jq::evaluate;
use jaq_core::data::JustLut;
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars};
use serde_json::{Value, json};

const ROUNDS: usize = 5;

const FILTERS: &[&str] = &[
    ".items | map(select(.id % 2 == 0)) | length",
    ".items | sort_by(-.id) | .[0].id",
    "reduce .items[] as $x ({}; .[$x.name] = $x.id) | length",
    "reduce .items[] as $x ([]; . + [$x.id]) | length",
    "[.items[].name] | join(\",\") | length",
    ".items | group_by(.id % 3) | map(length)",
    ".items | tojson | fromjson | length",
    "[.items[] | \"\\(.id): \\(.name)\"] | length",
    "[.items[] | {id, n: .name, t: (.tags | length)}] | length",
    "[.items[] | select(.name | test(\"9$\"))] | length",
];

/// Plain jaq: the same standard library, no budget.
fn plain(filter: &str, input: &Value) -> usize {
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
        .unwrap();
    let funs = jaq_core::funs::<JustLut<jaq_json::Val>>()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let compiled = Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .unwrap();
    let value = jaq_json::read::parse_single(input.to_string().as_bytes()).unwrap();
    let ctx = Ctx::<JustLut<jaq_json::Val>>::new(&compiled.lut, Vars::new([]));
    let mut n = 0;
    for v in compiled.id.run((ctx, value)) {
        v.unwrap();
        n += 1;
    }
    n
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let items: Vec<Value> = (0..20_000)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "tags": ["a", "b"]}))
        .collect();
    let input = json!({ "items": items });
    let limits = JqLimits {
        timeout_ms: 60_000,
        max_steps: 10_000_000,
        max_output_bytes: 10 << 20,
        ..JqLimits::default()
    };
    println!(
        "{:<60} {:>10} {:>10} {:>7}",
        "filter", "jaq ms", "extpool", "ratio"
    );
    for filter in FILTERS {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let t = Instant::now();
            let n = plain(filter, &input);
            theirs.push(t.elapsed());
            let t = Instant::now();
            let out = evaluate(filter, &input, &limits).unwrap();
            ours.push(t.elapsed());
            assert_eq!(out.len(), n, "{filter}");
        }
        let (o, t) = (median(ours), median(theirs));
        println!(
            "{:<60} {:>10.1} {:>10.1} {:>7.2}",
            filter,
            t.as_secs_f64() * 1e3,
            o.as_secs_f64() * 1e3,
            o.as_secs_f64() / t.as_secs_f64()
        );
    }
}
