//! merge_change_streams: arrival order, a failing stream isolated, a
//! panicking stream isolated, and no task left behind when the consumer drops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use extpool_core::{ChangeEvent, ChangeKind, ExtensionError, ExtensionRegistry, Scope, ScopeLevel};
use futures::{StreamExt, stream};
use tokio::sync::mpsc;
use tokio_stream_shim::ReceiverStream;

use crate::support::{TestCap, cap};

/// A tiny receiver-to-stream adapter so the test controls when events arrive.
mod tokio_stream_shim {
    use futures::Stream;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::sync::mpsc;

    pub struct ReceiverStream<T>(pub mpsc::UnboundedReceiver<T>);

    impl<T> Stream for ReceiverStream<T> {
        type Item = T;
        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            self.0.poll_recv(cx)
        }
    }
}

type Feed = mpsc::UnboundedSender<Result<ChangeEvent, ExtensionError>>;

/// A capability whose single subscription is fed by the returned sender.
fn fed(id: &str) -> (Arc<TestCap>, Feed) {
    let (tx, rx) = mpsc::unbounded_channel();
    let slot = parking_lot::Mutex::new(Some(rx));
    let c = TestCap::new(id)
        .with_changes(move || slot.lock().take().map(|rx| ReceiverStream(rx).boxed()))
        .arc();
    (c, tx)
}

fn ev(id: &str, kind: ChangeKind) -> Result<ChangeEvent, ExtensionError> {
    Ok(ChangeEvent::new(id, kind, format!("mcp://{id}")))
}

#[tokio::test]
async fn events_come_out_in_arrival_order() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    let (a, ta) = fed("a");
    let (b, tb) = fed("b");
    reg.register(cap(a), ScopeLevel::Pool, &s, None).unwrap();
    reg.register(cap(b), ScopeLevel::Pool, &s, None).unwrap();
    let mut merged = reg.merge_change_streams(&s).unwrap();

    let order = [
        ("b", ChangeKind::ToolsChanged),
        ("a", ChangeKind::PromptsChanged),
        ("b", ChangeKind::ResourcesChanged),
    ];
    for (id, kind) in order {
        let tx = if id == "a" { &ta } else { &tb };
        tx.send(ev(id, kind)).unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), merged.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((got.capability_name.as_str(), got.kind), (id, kind));
    }
}

#[tokio::test]
async fn a_failing_stream_is_isolated() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    let failing = TestCap::new("failing")
        .with_changes(|| {
            Some(
                stream::iter(vec![
                    ev("failing", ChangeKind::ToolsChanged),
                    Err(ExtensionError::Unavailable {
                        capability: "failing".into(),
                        reason: "boom".into(),
                    }),
                    ev("failing", ChangeKind::SkillsChanged),
                ])
                .boxed(),
            )
        })
        .arc();
    let (good, tx) = fed("good");
    reg.register(cap(failing), ScopeLevel::Pool, &s, None)
        .unwrap();
    reg.register(cap(good), ScopeLevel::Pool, &s, None).unwrap();
    let mut merged = reg.merge_change_streams(&s).unwrap();

    let first = tokio::time::timeout(Duration::from_secs(5), merged.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.capability_name, "failing");
    // After its error the failing stream is dropped; the good one keeps flowing.
    for kind in [ChangeKind::ToolsChanged, ChangeKind::CommandsChanged] {
        tx.send(ev("good", kind)).unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), merged.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            got.capability_name, "good",
            "the event after the error must not appear"
        );
        assert_eq!(got.kind, kind);
    }
    drop(tx);
    assert!(
        tokio::time::timeout(Duration::from_secs(5), merged.next())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_panicking_stream_is_isolated() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    let panicking = TestCap::new("panicking")
        .with_changes(|| {
            Some(
                stream::poll_fn(
                    |_| -> std::task::Poll<Option<Result<ChangeEvent, ExtensionError>>> {
                        panic!("stream implementation bug")
                    },
                )
                .boxed(),
            )
        })
        .arc();
    let (good, tx) = fed("good");
    reg.register(cap(panicking), ScopeLevel::Pool, &s, None)
        .unwrap();
    reg.register(cap(good), ScopeLevel::Pool, &s, None).unwrap();
    let mut merged = reg.merge_change_streams(&s).unwrap();
    tx.send(ev("good", ChangeKind::ToolsChanged)).unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), merged.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.capability_name, "good");
}

/// Sets a flag when dropped: proves the task holding the stream was stopped.
/// Set, and its waiter woken, when the stream holding it is dropped.
struct DropFlag(Arc<AtomicBool>, Arc<tokio::sync::Notify>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
        // A stored permit: the waiter may start waiting after this.
        self.1.notify_one();
    }
}

#[tokio::test]
async fn dropping_the_merged_stream_stops_its_tasks() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let gone = Arc::new(tokio::sync::Notify::new());
    let woken = gone.clone();
    let endless = TestCap::new("endless")
        .with_changes(move || {
            let guard = DropFlag(flag.clone(), woken.clone());
            Some(
                stream::unfold(guard, |guard| async move {
                    tokio::task::yield_now().await;
                    Some((ev("endless", ChangeKind::ToolsChanged), guard))
                })
                .boxed(),
            )
        })
        .arc();
    reg.register(cap(endless), ScopeLevel::Pool, &s, None)
        .unwrap();
    let mut merged = reg.merge_change_streams(&s).unwrap();
    merged.next().await.unwrap();
    assert_eq!(merged.live_sources(), 1);
    assert!(!dropped.load(Ordering::SeqCst));
    drop(merged);
    // The aborted task drops its stream (and the guard) at its next yield point.
    tokio::time::timeout(Duration::from_secs(30), gone.notified())
        .await
        .expect("the source task kept running after the merged stream was dropped");
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn no_observable_capability_means_no_stream() {
    let reg = ExtensionRegistry::default();
    let s = Scope::pool("p");
    reg.register(cap(TestCap::new("plain").arc()), ScopeLevel::Pool, &s, None)
        .unwrap();
    reg.register(
        cap(TestCap::new("silent").with_changes(|| None).arc()),
        ScopeLevel::Pool,
        &s,
        None,
    )
    .unwrap();
    assert!(reg.merge_change_streams(&s).is_none());
}
