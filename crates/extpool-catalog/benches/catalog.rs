//! Catalog benchmark: builds a catalog from 100 in-process sources × 100
//! tools and prints the publish time and the per-call lookup cost (canonical
//! name and provider-safe alias), each beside its target.
//!
//! Run with `cargo bench -p extpool-catalog --bench catalog` (optimized).
//! No network, no child process: the sources are `extpool_testkit::LocalSource`.

// A benchmark's output is its result.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use extpool_catalog::revision::{self, SourceListing};
use extpool_catalog::{Catalog, CatalogConfig, ReconcileConfig, Services};
use extpool_core::{
    Capability, CommandResource, ExtensionRegistry, McpResource, Scope, ScopeLevel,
};
use extpool_testkit::LocalSource;

const SOURCES: usize = 100;
const TOOLS: usize = 100;
const PUBLISH_TARGET: Duration = Duration::from_millis(10);
const LOOKUP_TARGET_NS: f64 = 1_000.0;

fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "OVER TARGET" }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// 100 sources; half of each source's tool names need an alias (dots).
fn sources() -> Vec<Arc<LocalSource>> {
    (0..SOURCES)
        .map(|s| {
            let src = LocalSource::new(format!("server_{s:03}"));
            for t in 0..TOOLS {
                if t % 2 == 0 {
                    src.add_tool(format!("tool_{t:03}"));
                } else {
                    src.add_tool(format!("files.read.{t:03}"));
                }
            }
            src
        })
        .collect()
}

async fn listings(sources: &[Arc<LocalSource>]) -> Vec<SourceListing> {
    let mut out = Vec::with_capacity(sources.len());
    for s in sources {
        out.push(SourceListing {
            capability: s.clone() as Arc<dyn Capability>,
            tools: s.list_tools().await.unwrap(),
            resources: s.list_resources().await.unwrap(),
            commands: s.list_commands().await.unwrap(),
            skills: Vec::new(),
        });
    }
    out
}

fn lookup_ns(rev: &revision::CatalogRevision, names: &[String]) -> f64 {
    let rounds = 100;
    let start = Instant::now();
    let mut found = 0usize;
    for _ in 0..rounds {
        for n in names {
            if black_box(rev.tool(black_box(n))).is_some() {
                found += 1;
            }
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(found, rounds * names.len(), "every name must resolve");
    elapsed.as_nanos() as f64 / (rounds * names.len()) as f64
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let sources = sources();
        let listings = listings(&sources).await;
        let services = Arc::new(Services::new(&CatalogConfig::default()).unwrap());
        println!(
            "catalog benchmark: {SOURCES} sources x {TOOLS} tools = {} tools (in-process, release build)",
            SOURCES * TOOLS
        );

        // Build a complete candidate from the listings and publish it atomically.
        let published = ArcSwap::from_pointee(revision::build(0, Vec::new(), services.clone()));
        let mut times = Vec::new();
        for n in 1..=30u64 {
            // Fresh listings are owned by the cycle; copying them is not
            // publishing. The old revision is freed when its last pin goes,
            // not by the publisher: keep it alive past the measurement.
            let fresh = listings.clone();
            let old = published.load_full();
            let start = Instant::now();
            let candidate = revision::build(n, fresh, services.clone());
            published.store(Arc::new(candidate));
            times.push(start.elapsed());
            drop(old);
        }
        let publish = median(times);
        let rev = published.load_full();
        assert_eq!(rev.tools().len(), SOURCES * TOOLS);
        println!(
            "publish (build candidate + atomic swap): median {:>8.3} ms over 30 runs   target <= {} ms   {}",
            publish.as_secs_f64() * 1e3,
            PUBLISH_TARGET.as_millis(),
            verdict(publish <= PUBLISH_TARGET)
        );

        // The whole reconciliation cycle through the loop: list 100 sources,
        // build, publish (coalescing window set to 0 for the measurement).
        let registry = Arc::new(ExtensionRegistry::default());
        let scope = Scope::pool("bench");
        for s in &sources {
            registry
                .register(s.clone() as Arc<dyn Capability>, ScopeLevel::Pool, &scope, None)
                .unwrap();
        }
        let catalog = Catalog::new(CatalogConfig {
            reconcile: ReconcileConfig {
                coalesce_ms: 0,
                ..ReconcileConfig::default()
            },
            ..CatalogConfig::default()
        })
        .unwrap();
        catalog.start(registry, scope).unwrap();
        catalog.wait_for_revision(1).await;
        catalog.settled().await;
        let mut cycles = Vec::new();
        for (i, source) in sources.iter().take(10).enumerate() {
            source.add_tool(format!("added_{i}"));
            let target = catalog.current().number() + 1;
            let start = Instant::now();
            catalog.request_reconcile();
            catalog.wait_for_revision(target).await;
            cycles.push(start.elapsed());
            catalog.settled().await;
        }
        let cycle = median(cycles);
        println!(
            "reconcile cycle (list 100 sources + build + publish): median {:>8.3} ms over 10 runs   target <= {} ms   {}",
            cycle.as_secs_f64() * 1e3,
            PUBLISH_TARGET.as_millis(),
            verdict(cycle <= PUBLISH_TARGET)
        );
        catalog.shutdown().await;

        // Per-call lookup cost on the pinned revision.
        let canonical: Vec<String> = rev.tools().iter().map(|t| t.name.clone()).collect();
        let aliases: Vec<String> = rev
            .tools()
            .iter()
            .filter(|t| t.alias != t.name)
            .map(|t| t.alias.clone())
            .collect();
        let _ = lookup_ns(&rev, &canonical); // warm up
        let by_name = lookup_ns(&rev, &canonical);
        let by_alias = lookup_ns(&rev, &aliases);
        println!(
            "lookup by canonical name: {by_name:>8.1} ns/lookup over {} names   target <= 1 µs   {}",
            canonical.len(),
            verdict(by_name <= LOOKUP_TARGET_NS)
        );
        println!(
            "lookup by alias:          {by_alias:>8.1} ns/lookup over {} aliases   target <= 1 µs   {}",
            aliases.len(),
            verdict(by_alias <= LOOKUP_TARGET_NS)
        );
    });
}
