//! Cost of `resolve_uri` (owner already indexed) and `get_visible_capabilities`
//! with 10 and with 10,000 registered capabilities, and their ratio.
//!
//! Run: `cargo bench -p extpool-core --bench registry`
#![allow(clippy::print_stdout, clippy::unwrap_used, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use extpool_core::{
    Capability, ExtensionError, ExtensionRegistry, ResourceContent, Scope, ScopeLevel, SkillEntry,
    SkillResource,
};

/// A capability owning exactly one skill name.
struct OneSkill {
    id: String,
    skill: String,
}

#[async_trait]
impl Capability for OneSkill {
    fn id(&self) -> &str {
        &self.id
    }
    fn skills(&self) -> Option<&dyn SkillResource> {
        Some(self)
    }
}

#[async_trait]
impl SkillResource for OneSkill {
    async fn list_skills(&self) -> Result<Vec<SkillEntry>, ExtensionError> {
        Ok(vec![SkillEntry::new(
            format!("skill://{}/SKILL.md", self.skill),
            self.skill.clone(),
            "",
        )])
    }
    async fn read_skill(&self, uri: &str) -> Result<Option<ResourceContent>, ExtensionError> {
        Ok(Some(ResourceContent::text(uri, None, "body")))
    }
    async fn skill_exists(&self, uri: &str) -> Result<bool, ExtensionError> {
        Ok(uri
            .strip_prefix("skill://")
            .and_then(|r| r.split('/').next())
            .is_some_and(|n| n == self.skill))
    }
}

struct Figures {
    resolve_ns: f64,
    visible_ns: f64,
}

fn measure(rt: &tokio::runtime::Runtime, n: usize) -> Figures {
    let reg = ExtensionRegistry::default();
    let pool = Scope::pool("p");
    // Spread registrations: most at pool level, some per session, as a gateway would.
    for i in 0..n {
        let cap: Arc<dyn Capability> = Arc::new(OneSkill {
            id: format!("cap-{i}"),
            skill: format!("skill-{i}"),
        });
        let scope = if i % 10 == 0 {
            pool.clone().session(format!("s{}", i % 100))
        } else {
            pool.clone()
        };
        let level = if i % 10 == 0 {
            ScopeLevel::Session
        } else {
            ScopeLevel::Pool
        };
        reg.register(cap, level, &scope, None).unwrap();
    }
    let scope = Scope::pool("p").session("s0").agent("coder").turn("t1");
    // The owner sits late in the walk: the worst case for probing.
    let uri = format!("skill://skill-{}/SKILL.md", n - 1);
    rt.block_on(async {
        reg.resolve_uri(&uri, &scope).await.unwrap();
    });

    let resolve_ns = per_op(|iters| {
        rt.block_on(async {
            for _ in 0..iters {
                black_box(reg.resolve_uri(black_box(&uri), &scope).await.unwrap());
            }
        })
    });
    let visible_ns = per_op(|iters| {
        for _ in 0..iters {
            black_box(reg.get_visible_capabilities(black_box(&scope)));
        }
    });
    Figures {
        resolve_ns,
        visible_ns,
    }
}

/// Median ns/op over 7 samples of ~100 ms each.
fn per_op(mut run: impl FnMut(u64)) -> f64 {
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        run(iters);
        if t.elapsed() > Duration::from_millis(50) {
            break;
        }
        iters *= 2;
    }
    let mut samples: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            run(iters);
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[3]
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let small = measure(&rt, 10);
    let large = measure(&rt, 10_000);
    println!("registry benchmark (median of 7 samples)");
    println!(
        "{:<28} {:>12} {:>12} {:>8}",
        "operation", "10 caps", "10,000 caps", "ratio"
    );
    for (name, a, b) in [
        (
            "resolve_uri (indexed owner)",
            small.resolve_ns,
            large.resolve_ns,
        ),
        (
            "get_visible_capabilities",
            small.visible_ns,
            large.visible_ns,
        ),
    ] {
        println!("{name:<28} {:>9.0} ns {:>9.0} ns {:>7.2}x", a, b, b / a);
    }
    let ratio = large.resolve_ns / small.resolve_ns;
    println!(
        "target: resolve_uri at 10,000 within 2x of 10 -> {:.2}x ({})",
        ratio,
        if ratio <= 2.0 { "met" } else { "MISSED" }
    );
}
