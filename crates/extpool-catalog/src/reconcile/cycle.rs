//! One reconciliation cycle: list every source, then publish all-or-nothing
//! over the required ones. Optional sources that fail are left out and
//! reported. A membership change is applied right before the revision
//! built with it is published, and only then.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use futures::StreamExt;

use super::{CycleOutcome, Shared, Source, list_source, new_status, status_row};
use crate::membership::{ChangeOutcome, Commit};
use crate::revision::{self, CatalogRevision, SourceListing, same_capability};
use crate::status::{SourceError, SourceStatus};

/// What listing one source gave.
type Listed = Result<SourceListing, SourceError>;

/// Runs one cycle over `visible` (an overlay's over `parent`) and says
/// what it did, and what became of `commit`'s membership change.
pub(super) async fn cycle(
    shared: &Shared,
    visible: &[Source],
    parent: Option<Arc<CatalogRevision>>,
    commit: &Commit<'_>,
) -> (CycleOutcome, ChangeOutcome) {
    let results = list_all(shared, visible).await;
    let now = SystemTime::now();
    shared.reconciliations.fetch_add(1, Ordering::Relaxed);
    let current = shared.current.load_full();
    let unchanged = CycleOutcome {
        revision: current.number(),
        ..CycleOutcome::default()
    };
    let not_published = |failed, refused| ChangeOutcome {
        published: false,
        revision: current.number(),
        failed,
        refused,
    };
    let failed_required = visible
        .iter()
        .zip(&results)
        .any(|(src, r)| !src.optional && r.is_err());
    if failed_required {
        let failed = record_failures(shared, visible, results, commit, now);
        return (unchanged, not_published(failed, None));
    }
    if let Err(refused) = commit.apply(&shared.services) {
        tracing::warn!(
            "catalog: membership change refused, keeping the published revision: {refused}"
        );
        shared.failures.fetch_add(1, Ordering::Relaxed);
        return (unchanged, not_published(Vec::new(), Some(refused)));
    }
    let (listings, left_out) = split(visible, results);
    let candidate = Candidate {
        rows: counts(visible, &listings),
        revision: build(shared, listings, parent, current.number() + 1),
        left_out,
        now,
    };
    publish(shared, visible, candidate, current, commit)
}

/// Lists every source, a bounded number at once, each within the source
/// timeout; the results in the order of `visible`.
async fn list_all(shared: &Shared, visible: &[Source]) -> Vec<Listed> {
    let cfg = shared.config;
    let timeout = Duration::from_millis(cfg.source_timeout_ms);
    let work: Vec<_> = visible
        .iter()
        .map(|src| list_source(src.cap.clone(), shared.services.clone(), timeout))
        .collect();
    futures::stream::iter(work)
        .buffered(cfg.max_concurrent_sources.max(1))
        .collect()
        .await
}

/// Records a cycle that publishes nothing because a required source
/// failed: every failing source's status, stale when required. Returns the
/// added capabilities of the membership change that failed, with why.
fn record_failures(
    shared: &Shared,
    visible: &[Source],
    results: Vec<Listed>,
    commit: &Commit<'_>,
    now: SystemTime,
) -> Vec<(String, Arc<SourceError>)> {
    shared.failures.fetch_add(1, Ordering::Relaxed);
    let mut failed = Vec::new();
    let mut table = shared.table.lock();
    table.last_reconcile = Some(now);
    table.members = visible.iter().map(|s| s.cap.clone()).collect();
    for (src, result) in visible.iter().zip(results) {
        let Err(error) = result else { continue };
        tracing::warn!(
            source = src.cap.id(),
            "catalog: source failed, keeping the published revision: {error}"
        );
        let error = Arc::new(error);
        if commit
            .change
            .add
            .iter()
            .any(|c| same_capability(c, &src.cap))
        {
            failed.push((src.cap.id().to_owned(), error.clone()));
        }
        let status = status_row(&mut table, src.cap.id(), &shared.services);
        status.stale = !src.optional;
        status.optional = src.optional;
        status.last_error = Some(error);
        status.last_attempt = Some(now);
    }
    failed
}

/// The listings that succeeded, and the optional sources that failed.
fn split(
    visible: &[Source],
    results: Vec<Listed>,
) -> (Vec<SourceListing>, Vec<(String, SourceError)>) {
    let mut listings = Vec::with_capacity(results.len());
    let mut left_out = Vec::new();
    for (src, result) in visible.iter().zip(results) {
        match result {
            Ok(listing) => listings.push(listing),
            Err(error) => {
                tracing::warn!(
                    source = src.cap.id(),
                    "catalog: optional source failed; publishing without its tools: {error}"
                );
                left_out.push((src.cap.id().to_owned(), error));
            }
        }
    }
    (listings, left_out)
}

/// What a listed source's status row says: its id, whether it is
/// optional, and how many tools, resources and commands it gave.
struct Counted {
    id: String,
    optional: bool,
    tools: usize,
    resources: usize,
    commands: usize,
}

fn counts(visible: &[Source], listings: &[SourceListing]) -> Vec<Counted> {
    listings
        .iter()
        .map(|l| Counted {
            id: l.capability.id().to_owned(),
            optional: visible
                .iter()
                .any(|s| s.optional && same_capability(&s.cap, &l.capability)),
            tools: l.tools.len(),
            resources: l.resources.len(),
            commands: l.commands.len(),
        })
        .collect()
}

fn build(
    shared: &Shared,
    listings: Vec<SourceListing>,
    parent: Option<Arc<CatalogRevision>>,
    number: u64,
) -> CatalogRevision {
    let services = shared.services.clone();
    match parent {
        Some(parent) => revision::build_overlay(number, listings, services, parent),
        None => revision::build(number, listings, services),
    }
}

/// A built revision, waiting to be published, and the status it brings.
struct Candidate {
    revision: CatalogRevision,
    rows: Vec<Counted>,
    left_out: Vec<(String, SourceError)>,
    now: SystemTime,
}

/// Publishes `candidate` when its content differs from `current` (else
/// keeps the number) and records every source's status.
fn publish(
    shared: &Shared,
    visible: &[Source],
    candidate: Candidate,
    current: Arc<CatalogRevision>,
    commit: &Commit<'_>,
) -> (CycleOutcome, ChangeOutcome) {
    let changed = !candidate.revision.same_content(&current);
    // The provider's report, the revision and the status table change
    // together: a reader that saw the provider's new report and then reads
    // the status waits for this lock and reads the new one.
    let mut table = shared.table.lock();
    commit.announce();
    let published = if changed {
        let number = candidate.revision.number();
        shared.current.store(Arc::new(candidate.revision));
        shared.revisions.send_replace(number);
        tracing::info!(revision = number, "catalog: published revision");
        number
    } else {
        current.number()
    };
    // Freeing a large unpinned revision is not the loop's work.
    tokio::task::spawn_blocking(move || drop(current));
    let now = candidate.now;
    table.last_reconcile = Some(now);
    table.members = visible.iter().map(|s| s.cap.clone()).collect();
    let mut rows: Vec<SourceStatus> = candidate
        .rows
        .into_iter()
        .map(|c| SourceStatus {
            revision: Some(published),
            optional: c.optional,
            last_attempt: Some(now),
            last_success: Some(now),
            tools: c.tools,
            resources: c.resources,
            commands: c.commands,
            ..new_status(&c.id, &shared.services)
        })
        .collect();
    let degraded = !candidate.left_out.is_empty();
    for (id, error) in candidate.left_out {
        let previous = table.sources.iter().find(|s| s.id == id);
        rows.push(SourceStatus {
            optional: true,
            available: false,
            last_error: Some(Arc::new(error)),
            last_attempt: Some(now),
            last_success: previous.and_then(|p| p.last_success),
            ..new_status(&id, &shared.services)
        });
    }
    table.sources = rows;
    let told = ChangeOutcome {
        published: true,
        revision: published,
        failed: Vec::new(),
        refused: None,
    };
    let outcome = CycleOutcome {
        ticket: 0,
        revision: published,
        changed,
        ok: true,
        degraded,
    };
    (outcome, told)
}
