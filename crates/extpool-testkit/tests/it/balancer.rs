//! The test balancer moves requests off a backend as nginx does with its
//! defaults: past one that refuses, past one that fails an idempotent
//! request, never a second time for a POST, and past a failed one for
//! the requests after it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use extpool_testkit::balancer::{Balancer, Policy};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// A backend that takes connections and reads each request whole, then
/// closes without answering: a replica that died after its socket
/// accepted (it keeps accepting, as a killed process's socket does for a
/// moment). Its base URL, and how many requests it took.
async fn dying() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let taken = Arc::new(AtomicUsize::new(0));
    let count = taken.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut seen = Vec::new();
            let mut chunk = [0u8; 1024];
            // Headers end with an empty line; the POSTs here end with "end".
            while !(seen.ends_with(b"\r\n\r\n") || seen.ends_with(b"end")) {
                match socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&chunk[..n]),
                }
            }
            count.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    (url, taken)
}

/// A backend that answers every request `200 live`.
async fn live() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback(|| async { "live" });
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A backend whose port refuses connections (bound, then closed).
async fn gone() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

async fn send(method: reqwest::Method, url: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .request(method, url)
        .body("end")
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn a_post_a_backend_failed_is_not_sent_twice_and_the_next_goes_to_another() {
    let (dying, taken) = dying().await;
    let lb = Balancer::start([dying.clone(), live().await], Policy::Failover).await;
    let (status, body) = send(reqwest::Method::POST, &format!("{}/mcp", lb.url())).await;
    assert_eq!(status, 502, "{body}");
    assert!(body.starts_with(&format!("balancer: {dying}: ")), "{body}");
    assert_eq!(taken.load(Ordering::SeqCst), 1);
    assert_eq!(lb.served(), [0, 0], "the POST went to one backend only");
    // The failed backend still takes connections; it is passed over.
    let (status, body) = send(reqwest::Method::POST, &format!("{}/mcp", lb.url())).await;
    assert_eq!((status, body.as_str()), (200, "live"));
    assert_eq!(taken.load(Ordering::SeqCst), 1);
    assert_eq!(lb.served(), [0, 1]);
}

#[tokio::test]
async fn a_get_a_backend_failed_goes_on_to_the_next() {
    let (dying, taken) = dying().await;
    let lb = Balancer::start([dying, live().await], Policy::Failover).await;
    let (status, body) = send(reqwest::Method::GET, &format!("{}/mcp", lb.url())).await;
    assert_eq!((status, body.as_str()), (200, "live"));
    assert_eq!(taken.load(Ordering::SeqCst), 1);
    assert_eq!(lb.served(), [0, 1]);
}

#[tokio::test]
async fn a_refusing_backend_is_skipped_and_with_none_left_each_is_named() {
    let refusing = gone().await;
    let lb = Balancer::start([refusing.clone(), live().await], Policy::Failover).await;
    let (status, body) = send(reqwest::Method::POST, &format!("{}/x", lb.url())).await;
    assert_eq!((status, body.as_str()), (200, "live"));
    assert_eq!(lb.served(), [0, 1]);
    let other = gone().await;
    let lb = Balancer::start([refusing.clone(), other.clone()], Policy::RoundRobin).await;
    let (status, body) = send(reqwest::Method::POST, &format!("{}/x", lb.url())).await;
    assert_eq!(status, 502, "{body}");
    assert!(
        body.starts_with("balancer: no backend took the request ("),
        "{body}"
    );
    assert!(body.contains(&format!("{refusing}: ")), "{body}");
    assert!(body.contains(&format!("{other}: ")), "{body}");
}
