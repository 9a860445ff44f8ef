//! One guard for the whole router, and connections that cannot be held
//! forever: every route refuses a foreign `Host` and `Origin` (and an
//! empty `Host` as a missing one), connections past the limit are told
//! so, and a connection that sends no header (or dribbles one) is closed.

use std::time::Duration;

use extpool_server::GatewayOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{Project, Served, within};

async fn served(options: GatewayOptions) -> Served {
    let project = Project::new();
    project.config("");
    Served::start(project, options).await
}

/// `host:port` of a served gateway.
fn address(served: &Served) -> String {
    served.base.trim_start_matches("http://").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_a_foreign_host_and_a_foreign_origin() {
    let dir = tempfile::tempdir().unwrap();
    let state = extpool_state::StateStore::open_url(&format!(
        "sqlite:{}",
        dir.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let served = served(GatewayOptions {
        state: Some(state),
        session_commands: true,
        ..GatewayOptions::default()
    })
    .await;
    let mut paths: Vec<String> = served
        .gateway
        .paths()
        .iter()
        .map(|p| p.replace("{id}", "s1").replace("{*resource}", "mcp"))
        .collect();
    assert!(paths.len() >= 11, "{paths:?}");
    // Paths no route serves are behind the guard too.
    paths.extend(["/".into(), "/not-a-route".into(), "/v1/nope".into()]);
    let client = reqwest::Client::new();
    for path in &paths {
        for method in [
            reqwest::Method::GET,
            reqwest::Method::POST,
            reqwest::Method::DELETE,
        ] {
            let url = format!("{}{path}", served.base);
            let refused = [
                ("host", "evil.example", "does not answer to the host"),
                (
                    "origin",
                    "http://evil.example",
                    "refuses requests from web pages",
                ),
                ("origin", "null", "refuses requests from web pages"),
            ];
            for (header, value, says) in refused {
                let response = within(
                    client
                        .request(method.clone(), &url)
                        .header(header, value)
                        .header("content-type", "application/json")
                        .body(r#"{"mcp_servers":{"x":{"command":"/bin/true"}}}"#)
                        .send(),
                )
                .await
                .unwrap();
                let status = response.status().as_u16();
                let body = within(response.text()).await.unwrap();
                assert_eq!(
                    status, 403,
                    "{method} {path} with {header}: {value}: {body}"
                );
                assert!(body.contains(says), "{method} {path}: {body}");
            }
        }
    }
    // Nothing got through: no session was made.
    let listed: serde_json::Value =
        within(client.get(format!("{}/v1/sessions", served.base)).send())
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    assert_eq!(listed["sessions"], serde_json::json!([]), "{listed}");
    // The gateway's own names are served.
    for host in ["localhost", &address(&served)] {
        let response = within(
            client
                .get(format!("{}/healthz", served.base))
                .header("host", host)
                .header("origin", "http://localhost:3000")
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{host}");
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_but_the_probes_and_the_resource_metadata_needs_the_token() {
    let served = served(GatewayOptions {
        bearer: Some("s3cret-token-for-tests".into()),
        ..GatewayOptions::default()
    })
    .await;
    let client = reqwest::Client::new();
    let mut paths: Vec<String> = served
        .gateway
        .paths()
        .iter()
        .map(|p| p.replace("{id}", "s1").replace("{*resource}", "mcp"))
        .collect();
    paths.push("/not-a-route".into());
    for path in &paths {
        let response = within(client.get(format!("{}{path}", served.base)).send())
            .await
            .unwrap();
        let status = response.status().as_u16();
        let public = ["/healthz", "/readyz", "/oauth/callback", "/oauth/login"]
            .contains(&path.as_str())
            || path.starts_with("/.well-known/oauth-protected-resource");
        if public {
            assert_ne!(status, 401, "{path}");
        } else {
            assert_eq!(status, 401, "{path}");
            assert_eq!(response.headers()["www-authenticate"], "Bearer", "{path}");
        }
    }
    served.stop().await;
}

/// Reads from `tcp` until the peer closes it; what arrived.
async fn until_closed(tcp: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match within(tcp.read(&mut buf)).await {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&got).into_owned(),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_are_refused_and_silent_ones_are_closed() {
    // Long enough for the test to open its connections first (it takes
    // milliseconds), short enough to wait for.
    let served = served(GatewayOptions {
        max_connections: 20,
        header_read_timeout: Duration::from_secs(3),
        ..GatewayOptions::default()
    })
    .await;
    let addr = address(&served);
    // 20 connections that send nothing hold every place.
    let mut held = Vec::new();
    for _ in 0..20 {
        held.push(within(TcpStream::connect(&addr)).await.unwrap());
    }
    // Each one more is told the limit at once, and closed.
    for _ in 0..10 {
        let mut more = within(TcpStream::connect(&addr)).await.unwrap();
        let answer = until_closed(&mut more).await;
        assert!(
            answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{answer}"
        );
        assert!(
            answer.contains("has 20 connections open, its limit (extpool serve --max-connections)"),
            "{answer}"
        );
    }
    // The silent ones are closed when their header time is up, without
    // an answer; their places are free again.
    for tcp in &mut held {
        let answer = until_closed(tcp).await;
        assert!(!answer.contains("200 OK"), "{answer:?}");
    }
    let response = within(reqwest::get(format!("{}/healthz", served.base)))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let metrics = served.gateway.metrics();
    assert!(
        metrics.contains("extpool_refused_total{reason=\"connections\"} 10\n"),
        "{metrics}"
    );
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_dribbled_byte_by_byte_or_an_idle_keep_alive_is_closed() {
    let served = served(GatewayOptions {
        header_read_timeout: Duration::from_secs(1),
        ..GatewayOptions::default()
    })
    .await;
    let addr = address(&served);
    // A client that sends its header a byte at a time, forever.
    let mut slow = within(TcpStream::connect(&addr)).await.unwrap();
    let dribble = async {
        for byte in b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
            .iter()
            .cycle()
        {
            if slow.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    within(dribble).await;
    let answer = until_closed(&mut slow).await;
    assert!(!answer.contains("200 OK"), "{answer}");

    // A keep-alive connection that got its answer and then goes quiet.
    let mut quiet = within(TcpStream::connect(&addr)).await.unwrap();
    quiet
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let answer = until_closed(&mut quiet).await;
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with("ok\n"), "{answer}");
    // And serving goes on.
    let response = within(reqwest::get(format!("{}/healthz", served.base)))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    served.stop().await;
}

/// The answer to `request` sent as it is on a connection of its own.
async fn raw(served: &Served, request: &str) -> String {
    let mut tcp = within(TcpStream::connect(address(served))).await.unwrap();
    within(tcp.write_all(request.as_bytes())).await.unwrap();
    until_closed(&mut tcp).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_host_or_origin_or_another_host_in_the_target_is_refused() {
    let served = served(GatewayOptions::default()).await;
    let here = address(&served);
    for path in ["/healthz", "/v1", "/mcp", "/metrics"] {
        for (headers, status, says) in [
            (
                format!("Host: {here}\r\nHost: evil.example\r\n"),
                400,
                "one Host header",
            ),
            (
                format!("Host: evil.example\r\nHost: {here}\r\n"),
                400,
                "one Host header",
            ),
            (
                format!(
                    "Host: {here}\r\nOrigin: http://localhost:3000\r\nOrigin: http://evil.example\r\n"
                ),
                403,
                "several Origin headers",
            ),
        ] {
            let request = format!("GET {path} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n");
            let answer = raw(&served, &request).await;
            assert!(
                answer.starts_with(&format!("HTTP/1.1 {status} ")),
                "{request:?}: {answer}"
            );
            assert!(answer.contains(says), "{request:?}: {answer}");
        }
        // A target in absolute form naming another host than Host.
        let request = format!(
            "GET http://evil.example{path} HTTP/1.1\r\nHost: {here}\r\nConnection: close\r\n\r\n"
        );
        let answer = raw(&served, &request).await;
        assert!(answer.starts_with("HTTP/1.1 400 "), "{request:?}: {answer}");
        assert!(answer.contains("request target names the host"), "{answer}");
    }
    // One Host, or a target naming the same host, is served.
    for request in [
        format!("GET /healthz HTTP/1.1\r\nHost: {here}\r\nConnection: close\r\n\r\n"),
        format!("GET http://{here}/healthz HTTP/1.1\r\nHost: {here}\r\nConnection: close\r\n\r\n"),
    ] {
        let answer = raw(&served, &request).await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{request:?}: {answer}");
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_badly_framed_body_is_a_bad_request_and_a_long_one_too_large() {
    let served = served(GatewayOptions {
        max_body_bytes: 1000,
        ..GatewayOptions::default()
    })
    .await;
    let addr = address(&served);
    let post = |framing: &str, chunks: String| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{framing}\r\n\r\n{chunks}"
        )
    };
    // A chunk size that is no number: the body cannot be read.
    let mut tcp = within(TcpStream::connect(&addr)).await.unwrap();
    tcp.write_all(post("Transfer-Encoding: chunked", "zz\r\n{}\r\n0\r\n\r\n".into()).as_bytes())
        .await
        .unwrap();
    let answer = until_closed(&mut tcp).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(
        answer.contains("the request body could not be read"),
        "{answer}"
    );
    // A well-framed body over the limit, sent without a length.
    let chunk = "x".repeat(1500);
    let mut tcp = within(TcpStream::connect(&addr)).await.unwrap();
    tcp.write_all(
        post(
            "Transfer-Encoding: chunked\r\nConnection: close",
            format!("{:x}\r\n{chunk}\r\n0\r\n\r\n", chunk.len()),
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let answer = until_closed(&mut tcp).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("--max-request-bytes"), "{answer}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_or_blank_host_is_refused_as_a_missing_one_on_every_route() {
    let served = served(GatewayOptions::default()).await;
    let here = address(&served);
    let mut paths: Vec<String> = served
        .gateway
        .paths()
        .iter()
        .map(|p| p.replace("{id}", "s1").replace("{*resource}", "mcp"))
        .collect();
    paths.extend(["/".into(), "/not-a-route".into()]);
    let needs = "this extpool gateway needs a Host header that names it";
    for path in &paths {
        for method in ["GET", "POST", "DELETE"] {
            for host in ["", "Host:\r\n", "Host: \r\n", "Host: \t \r\n"] {
                let request = format!(
                    "{method} {path} HTTP/1.1\r\n{host}Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
                );
                let answer = raw(&served, &request).await;
                assert!(answer.starts_with("HTTP/1.1 400 "), "{request:?}: {answer}");
                assert!(answer.contains(needs), "{request:?}: {answer}");
            }
        }
    }
    // An empty Host never stands for the host a target in absolute form
    // names; a Host that names a port of no host is malformed.
    for (request, says) in [
        (
            format!("GET http://{here}/healthz HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n"),
            needs,
        ),
        (
            "GET /healthz HTTP/1.1\r\nHost: :8520\r\nConnection: close\r\n\r\n".to_owned(),
            "is not a host[:port]",
        ),
    ] {
        let answer = raw(&served, &request).await;
        assert!(answer.starts_with("HTTP/1.1 400 "), "{request:?}: {answer}");
        assert!(answer.contains(says), "{request:?}: {answer}");
    }
    // A Host that names it is served.
    let answer = raw(
        &served,
        &format!("GET /healthz HTTP/1.1\r\nHost: {here}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_that_leaves_a_body_unread_closes_its_connection_and_says_so() {
    let served = served(GatewayOptions {
        bearer: Some("s3cret-token-for-tests".into()),
        ..GatewayOptions::default()
    })
    .await;
    let addr = address(&served);
    // A POST without the token whose body has not come yet when it is
    // refused: the connection cannot carry another request, and the
    // answer says so.
    let mut posted = within(TcpStream::connect(&addr)).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n";
    within(posted.write_all(head.as_bytes())).await.unwrap();
    let answer = until_closed(&mut posted).await.to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 401 "), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
    // The same for the router's own refusal: a POST to a GET route.
    let mut unrouted = within(TcpStream::connect(&addr)).await.unwrap();
    let head = "POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n";
    within(unrouted.write_all(head.as_bytes())).await.unwrap();
    let answer = until_closed(&mut unrouted).await.to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 405 "), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");

    // A refusal of a request without a body keeps its connection: the
    // request after it on the same connection is answered.
    let mut kept = within(TcpStream::connect(&addr)).await.unwrap();
    let two = "GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n\
               GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    within(kept.write_all(two.as_bytes())).await.unwrap();
    let answers = until_closed(&mut kept).await.to_ascii_lowercase();
    let (refused, next) = answers
        .split_once("http/1.1 200 ok")
        .unwrap_or_else(|| panic!("no answer to the second request: {answers}"));
    assert!(refused.starts_with("http/1.1 401 "), "{answers}");
    assert!(!refused.contains("connection: close"), "{answers}");
    assert!(next.contains("\r\n\r\n"), "{answers}");
    served.stop().await;
}
