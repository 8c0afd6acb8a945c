//! One node's link to the cluster (feature `redis`): its Redis connections, its counters,
//! how the hub sees it ([`Relay`]), and what it reports (/healthz, /metrics).
use super::config::{redact, ClusterConfig};
use crate::hub::{Hub, Relay};
use crate::ring::Round;
use crate::sync::lock;
use rtcheck_wire::prom::{Exposition, Kind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One node's link to the cluster: its Redis connections and what it reports.
pub struct Cluster {
    pub cfg: ClusterConfig,
    pub client: ::redis::Client,
    pub con: ::redis::aio::ConnectionManager,
    /// The relay's subscription is live (and caught up).
    pub link_up: AtomicBool,
    /// The last heartbeat got its answers.
    pub cmd_up: AtomicBool,
    pub reconnects: AtomicU64,
    pub gap_messages: AtomicU64,
    pub publish_failures: AtomicU64,
    /// Unpublished rounds not yet reserved as a gap in the global seq (see
    /// [`store::publisher`]).
    pub unpublished: AtomicU64,
    /// The highest seq this node has delivered in its epoch (a publish never reuses one
    /// below it); 0 again after an epoch reset.
    pub last_seq: AtomicU64,
    /// The epoch and highest seq of this node's own publishes (the floor of the next one,
    /// with `last_seq`: its relay may lag its publishes).
    pub published: Mutex<(rtcheck_wire::epoch::Epoch, u64)>,
    /// Times this node moved to a new epoch (its clients each got a reset marker), and
    /// the last move: (from, to, when).
    pub epoch_resets: AtomicU64,
    pub last_reset: Mutex<
        Option<(
            rtcheck_wire::epoch::Epoch,
            rtcheck_wire::epoch::Epoch,
            std::time::Instant,
        )>,
    >,
    /// The cluster's epoch as the last heartbeat read it (0: Redis holds none).
    pub redis_epoch: AtomicU64,
    pub last_error: Mutex<String>,
    /// Stream cap: the node's --ring.
    pub ring: usize,
    /// Local client ids that Redis knows as present (the last heartbeat that answered).
    pub present: Mutex<std::collections::BTreeSet<u64>>,
    out: tokio::sync::mpsc::Sender<u64>,
    deliver_lock: tokio::sync::Mutex<()>,
}

/// Scheduled rounds waiting for their publish; more means Redis is too slow (counted).
const OUT_QUEUE: usize = 1024;

impl Cluster {
    /// A node's link, not yet started: the receiver takes the scheduled times the hub
    /// hands over ([`Cluster::emit`]) for the publisher.
    pub fn new(
        cfg: ClusterConfig,
        client: ::redis::Client,
        con: ::redis::aio::ConnectionManager,
        ring: usize,
    ) -> (Cluster, tokio::sync::mpsc::Receiver<u64>) {
        let (out, rx) = tokio::sync::mpsc::channel(OUT_QUEUE);
        let c = Cluster {
            cfg,
            client,
            con,
            link_up: AtomicBool::new(false),
            cmd_up: AtomicBool::new(true),
            reconnects: AtomicU64::new(0),
            gap_messages: AtomicU64::new(0),
            publish_failures: AtomicU64::new(0),
            unpublished: AtomicU64::new(0),
            last_seq: AtomicU64::new(0),
            published: Mutex::new((rtcheck_wire::epoch::Epoch::FOREIGN, 0)),
            epoch_resets: AtomicU64::new(0),
            last_reset: Mutex::new(None),
            redis_epoch: AtomicU64::new(0),
            last_error: Mutex::new(String::new()),
            ring,
            present: Mutex::new(Default::default()),
            out,
            deliver_lock: tokio::sync::Mutex::new(()),
        };
        (c, rx)
    }

    pub fn redis_up(&self) -> bool {
        self.link_up.load(Relaxed) && self.cmd_up.load(Relaxed)
    }

    /// The hub's publisher hands over the scheduled time of its next round.
    pub fn emit(&self, ts: u64) {
        if self.out.try_send(ts).is_err() {
            self.count_unpublished();
        }
    }

    /// A scheduled round that gets no seq: counted, and owed to the clients as a gap.
    pub fn count_unpublished(&self) {
        self.publish_failures.fetch_add(1, Relaxed);
        self.unpublished.fetch_add(1, Relaxed);
    }

    pub fn set_error(&self, e: impl std::fmt::Display) {
        *lock(&self.last_error) = e.to_string();
    }

    /// Hand a round to the hub, one at a time (relay and naive publisher alike).
    pub async fn deliver(&self, hub: &Arc<Hub>, round: Round, ring: bool) {
        let _one = self.deliver_lock.lock().await;
        hub.clone().deliver(round, ring).await;
    }
}

/// How the hub sees its relay.
impl Relay for Cluster {
    fn last_seq(&self) -> u64 {
        self.last_seq.load(Relaxed)
    }
    fn publishes(&self) -> bool {
        self.cfg.publish
    }
    fn emit(&self, ts: u64) {
        Cluster::emit(self, ts)
    }
    fn node(&self) -> String {
        self.cfg.node.clone()
    }
    fn redis_up(&self) -> bool {
        Cluster::redis_up(self)
    }
}

/// GET /healthz's body on a cluster node: it names Redis while it is down. Still 200 (the
/// caller's): every node loses the same Redis at once, and a 503 would make a load
/// balancer drain them all and meet a reconnect storm when Redis returns; the node keeps
/// its clients and catches them up from the Stream.
pub fn health(hub: &Hub, c: &Cluster) -> String {
    let epoch = hub.epoch();
    let redis_epoch = c.redis_epoch.load(Relaxed);
    if !c.redis_up() {
        return format!(
            "degraded: redis down (node {}, {}): serving local clients, reconnecting: {}",
            c.cfg.node,
            redact(&c.cfg.url),
            lock(&c.last_error)
        );
    }
    if redis_epoch != 0 && redis_epoch != epoch.0 {
        // Redis moved to another epoch this node has not heard a round of yet: its clients
        // are still on the old seqs (they get a reset marker with the first round).
        return format!(
            "degraded: epoch behind (node {}, redis up): the cluster is in epoch {}, this node's clients still in {epoch}; they get a reset marker with its first round",
            c.cfg.node,
            rtcheck_wire::epoch::Epoch(redis_epoch)
        );
    }
    format!(
        "ok (node {}, redis up, epoch {epoch}{})",
        c.cfg.node,
        last_reset(c)
    )
}

/// `; epoch reset from OLD N s ago (every client told)` for a minute after a reset: a
/// deploy that restarted Redis and the publisher shows in /healthz, not only in the log.
fn last_reset(c: &Cluster) -> String {
    match *lock(&c.last_reset) {
        Some((old, _, at)) if at.elapsed() < Duration::from_secs(60) => format!(
            "; epoch reset from {old} {} s ago, every client sent a reset marker",
            at.elapsed().as_secs()
        ),
        _ => String::new(),
    }
}

/// The cluster's /metrics families.
pub fn metrics(c: &Cluster) -> String {
    let rows = [
        (
            "rtcheck_redis_up",
            Kind::Gauge,
            "Whether this node reaches Redis (subscribed and answering).",
            c.redis_up() as u64,
        ),
        (
            "rtcheck_redis_reconnects_total",
            Kind::Counter,
            "Times the Redis link came back after a loss.",
            c.reconnects.load(Relaxed),
        ),
        (
            "rtcheck_redis_gap_messages_total",
            Kind::Counter,
            "Rounds sent to clients as gap markers: no longer in the Stream when the link came back, or never published.",
            c.gap_messages.load(Relaxed),
        ),
        (
            "rtcheck_epoch_resets_total",
            Kind::Counter,
            "Times this node moved to a new cluster epoch (Redis lost its seq counter, or seqs went backwards): every client sent a reset marker.",
            c.epoch_resets.load(Relaxed),
        ),
        (
            "rtcheck_redis_publish_failures_total",
            Kind::Counter,
            "Scheduled rounds this node could not publish (Redis down or too slow); clients get them as gap markers once Redis is back.",
            c.publish_failures.load(Relaxed),
        ),
    ];
    let mut p = Exposition::new();
    for (name, kind, help, v) in rows {
        p.single(name, kind, help, v);
    }
    p.finish()
}

/// Bounded exponential backoff for reconnects: 100 ms doubling to 2 s.
#[derive(Debug, Default)]
pub struct Backoff(u32);

impl Backoff {
    pub const MAX: Duration = Duration::from_secs(2);
    pub fn next_delay(&mut self) -> Duration {
        let d = Duration::from_millis(100) * 2u32.pow(self.0.min(5));
        self.0 += 1;
        d.min(Self::MAX)
    }
    /// Delays handed out since the last reset.
    pub fn attempts(&self) -> u32 {
        self.0
    }
    pub fn reset(&mut self) {
        self.0 = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_bounded() {
        let mut b = Backoff::default();
        let d: Vec<_> = (0..8).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(d, vec![100, 200, 400, 800, 1600, 2000, 2000, 2000]);
        b.reset();
        assert_eq!(b.next_delay().as_millis(), 100);
    }
}
