//! The publisher: one round every 1/rate on a fixed schedule, until --rounds or shutdown.
use super::super::sync::lock;
use super::Hub;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

impl Hub {
    /// The publisher: one round every 1/rate on a fixed schedule (sleep until the
    /// scheduled instant; a late round is sent at once, stamped with its scheduled time).
    pub async fn publish(self: Arc<Self>) {
        if self.relay.get().is_some_and(|r| !r.publishes()) {
            return; // --no-publish: a relay-only node
        }
        if self.cfg.wait_start {
            let n = self.start_notify.notified();
            if !self.started.load(Relaxed) {
                tokio::select! {
                    _ = n => {}
                    _ = self.shutdown_signalled() => return,
                }
            }
        } else {
            self.started.store(true, Relaxed);
        }
        let start = tokio::time::Instant::now();
        let start_ns = rtcheck_base::os::clock::now_ns();
        self.publish_start_ns.store(start_ns, Relaxed);
        let period_ns = self.cfg.period.as_nanos() as u64;
        let mut seq = 1u64;
        loop {
            if lock(&self.rounds_total).is_some_and(|n| seq > n) {
                self.finished.store(true, Relaxed);
                return;
            }
            let offset = Duration::from_nanos((seq - 1) * period_ns);
            tokio::select! {
                _ = sleep_precisely_until(start + offset) => {}
                _ = self.shutdown_signalled() => return,
            }
            let ts = start_ns + offset.as_nanos() as u64;
            match self.relay.get() {
                // One path: the round comes back to every node, this one included.
                Some(r) => r.emit(ts),
                None => {
                    let round = self.round(seq, ts);
                    self.clone().deliver(round, true).await;
                }
            }
            seq += 1;
        }
    }

    pub fn start(&self, rounds: Option<u64>) -> bool {
        if self.started.swap(true, Relaxed) {
            return false;
        }
        if let Some(n) = rounds {
            *lock(&self.rounds_total) = (n > 0).then_some(n);
        }
        self.start_notify.notify_one();
        true
    }
}

/// The tokio timer has 1 ms granularity and fires late; sleep to ~1 ms before the
/// scheduled instant, then yield until it (costs < 1 ms of polling per round).
async fn sleep_precisely_until(due: tokio::time::Instant) {
    let coarse = due.checked_sub(Duration::from_millis(1)).unwrap_or(due);
    tokio::time::sleep_until(coarse).await;
    while tokio::time::Instant::now() < due {
        tokio::task::yield_now().await;
    }
}
