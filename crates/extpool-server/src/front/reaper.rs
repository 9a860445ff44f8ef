//! The one reaper: ends what has been idle for `--session-idle-timeout` —
//! MCP sessions with no request or stream open ([`crate::held::live`]), and
//! durable sessions whose endpoint has none (their view and per-session
//! servers close; their record stays in the store and opens again on its
//! next request).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};

use crate::shared::Shared;

/// How often the reaper looks: a quarter of the idle timeout, within
/// these bounds, so a session ends at most a quarter late.
const LOOK_AT_LEAST: Duration = Duration::from_millis(50);
const LOOK_AT_MOST: Duration = Duration::from_secs(30);

/// Runs until the gateway stops.
pub(crate) async fn run(shared: Arc<Shared>) {
    let every = (shared.front.live.idle() / 4).clamp(LOOK_AT_LEAST, LOOK_AT_MOST);
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = shared.front.stop.cancelled() => return,
        }
        let now = Instant::now();
        let expired = shared.front.live.expire(now);
        let mut ended = expired.len() as u64;
        for (endpoint, _) in expired {
            tracing::debug!(endpoint = %endpoint, "MCP session idle for {:?}: its slot is freed", shared.front.live.idle());
        }
        if let Some(sessions) = &shared.sessions {
            ended += sessions.close_idle(&shared, now).await;
        }
        shared.ops.metrics.expired(ended);
        shared.front.live.count_expired(ended);
    }
}
