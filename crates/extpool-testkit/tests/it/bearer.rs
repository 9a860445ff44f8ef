//! `--require-bearer`: HTTP requests without the token get 401, and the
//! token never shows up in the server's logs.

use extpool_testkit::HttpServer;
use serde_json::json;

use crate::common::{call_text, try_connect_http};

const TOKEN: &str = "s3cret-token-for-tests";

#[tokio::test]
async fn require_bearer_refuses_a_missing_or_wrong_token() {
    let server = HttpServer::spawn(["--require-bearer", TOKEN]);

    let missing = try_connect_http(server.url(), None).await;
    let error = missing.err().expect("no token must be refused");
    assert!(error.is_authorization_required(), "{error:?}");

    let wrong = try_connect_http(server.url(), Some("not-the-token")).await;
    assert!(wrong.is_err(), "a wrong token must be refused");

    let (client, _) = try_connect_http(server.url(), Some(TOKEN))
        .await
        .expect("the right token is accepted");
    assert_eq!(
        call_text(&client, "echo", json!({"message": "authorized"})).await,
        "authorized"
    );
    assert!(
        !server.stderr().contains(TOKEN),
        "the token leaked into the server's stderr"
    );
}
