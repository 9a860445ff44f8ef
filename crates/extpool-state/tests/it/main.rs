#![allow(missing_docs, clippy::unwrap_used)]
//! Integration tests of extpool-state: one suite (`suite`) run on an
//! SQLite file and on a real PostgreSQL server started by the test
//! (extpool-testkit's `postgres`), plus what only one backend has.

mod postgres_only;
mod replicas;
mod sqlite_only;
mod suite;
mod support;

/// Every suite function, whichever file holds it.
mod all {
    pub use crate::replicas::*;
    pub use crate::suite::*;
}

/// Runs each suite function as a test on both backends:
/// `sqlite::NAME` and `postgres::NAME`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let f = crate::support::Fixture::new("sqlite").await;
                    crate::all::$name(&f).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let f = crate::support::Fixture::new("postgres").await;
                    crate::all::$name(&f).await;
                }
            )*
        }
    };
}

on_both_backends!(
    migrations_apply_once_when_opened_twice,
    migrations_apply_once_when_opened_concurrently,
    a_store_from_a_newer_extpool_is_refused_untouched,
    a_session_round_trips_through_another_handle,
    creating_an_existing_id_is_refused_and_changes_nothing,
    delete_returns_the_servers_and_removes_everything,
    refresh_grants_the_active_names_and_a_retry_confirms,
    a_vanished_name_stays_granted_and_applies_again_when_it_returns,
    refresh_works_in_every_status_and_keeps_it,
    status_and_last_seen_are_recorded,
    concurrent_refreshes_from_two_pools_lose_no_grant,
    a_refresh_retried_after_a_failed_save_completes_the_union,
    an_auto_grant_session_sees_every_active_name,
    limits_are_enforced_naming_the_session_and_writing_nothing,
    list_pages_through_every_session_once,
    a_reopened_store_restores_every_session_and_authority,
    replicas_hold_sessions_and_the_silent_ones_are_swept,
    an_mcp_session_resumes_through_another_handle_on_its_endpoint_only,
    mcp_sessions_nobody_holds_expire,
    a_handle_hears_its_own_writes,
    a_pinned_revision_names_the_replica_that_saw_it,
    an_older_store_is_migrated_forward_keeping_its_sessions,
    sessions_are_listed_per_owner_with_paging,
    an_mcp_sessions_owner_is_kept_when_rmcp_stores_it_again,
    an_api_key_round_trips_and_its_secret_never_shows,
    a_schema_2_store_opens_at_3_with_its_sessions_intact_and_unowned,
    an_owners_bound_holds_under_concurrent_creates_from_two_handles,
);
