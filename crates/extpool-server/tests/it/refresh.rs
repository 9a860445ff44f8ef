//! An explicit refresh runs a reconciliation cycle of its own against a
//! real stdio server and answers once it has run:
//! `POST /v1/sessions/{id}/mcp-refresh`. That the cycle starts at once,
//! without the coalescing window meant for bursts of `list_changed`, is
//! shown on paused time by the catalog's
//! `an_explicit_refresh_starts_its_cycle_at_once`, and measured through
//! this API by the replicas benchmark; a test never asserts a duration.

use extpool_server::GatewayOptions;
use extpool_state::StateStore;
use extpool_testkit::StateDir;
use serde_json::json;

use crate::support::{Project, Served, testkit_yaml};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_refresh_runs_a_cycle_of_its_own_before_it_answers() {
    let kit = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &kit));
    let url = format!("sqlite:{}", project.path().join("state.db").display());
    let state = StateStore::open_url(&url).await.unwrap();
    let served = Served::start(
        project,
        GatewayOptions {
            state: Some(state),
            ..GatewayOptions::default()
        },
    )
    .await;
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{}/v1/sessions", served.base))
        .json(&json!({"id": "s1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let cycles = served.gateway.host().catalog().status().reconciliations;
    let refresh = format!("{}/v1/sessions/s1/mcp-refresh", served.base);
    for round in 1..=11 {
        let answer = client.post(&refresh).send().await.unwrap();
        assert_eq!(answer.status(), 200);
        answer.bytes().await.unwrap();
        let ran = served.gateway.host().catalog().status().reconciliations - cycles;
        assert!(
            ran >= round,
            "refresh {round} answered before its own cycle ran ({ran} cycles)"
        );
    }
    served.stop().await;
}
