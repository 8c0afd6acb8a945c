//! The hub's counters, round times and the point-in-time view read by /control/stats
//! and /metrics.
use super::super::ring::Round;
use super::super::sync::lock;
use super::conn::CloseReason;
use super::Hub;
use rtcheck_wire::stats::{AcceptErrors, ClientCounts, Refusals, ServerStats};
use rtcheck_wire::transport::Transport;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Upper bounds (ms) of the hub round time histogram.
pub const HUB_BUCKETS_MS: [f64; 14] = [
    0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0,
];

/// Round times kept for /control/stats (a day at 1/s); the histogram keeps counting.
pub(super) const MAX_ROUND_TIMES: usize = 100_000;

#[derive(Debug, Default)]
pub struct Counters {
    /// Per transport, indexed by `Transport as usize` (polling's stay 0: polls are
    /// counted in `polls`).
    pub sent: [AtomicU64; 4],
    pub bytes_sent: [AtomicU64; 4],
    pub accepted: [AtomicU64; 4],
    pub closed: [AtomicU64; CloseReason::ALL.len()],
    /// Gauge: bytes of unfinished client frames and fragmented messages held.
    pub partial_frame_bytes: AtomicU64,
    /// WebSocket connections accepted on /echo (off the fan-out path).
    pub echo_connections: AtomicU64,
    pub drops: AtomicU64,
    pub max_queue_depth: AtomicU64,
    pub rounds_sent: AtomicU64,
    pub polls: AtomicU64,
    pub http_requests: AtomicU64,
    pub bad_requests: AtomicU64,
    pub inbound_messages: AtomicU64,
    /// Requests refused for their Host (DNS rebinding) or Origin (cross-site).
    pub refused_host: AtomicU64,
    pub refused_origin: AtomicU64,
    /// Failed accepts by [`AcceptErrors`] kind.
    pub accept_errors: [AtomicU64; 3],
}

impl Counters {
    /// Count a failed accept: EMFILE (this process's fd limit), ENFILE (the system's), other.
    pub fn accept_error(&self, e: &std::io::Error) {
        let i = match e.raw_os_error() {
            Some(libc::EMFILE) => 0,
            Some(libc::ENFILE) => 1,
            _ => 2,
        };
        self.accept_errors[i].fetch_add(1, Relaxed);
    }
    pub fn sent(&self, t: Transport, bytes: usize) {
        self.sent[t as usize].fetch_add(1, Relaxed);
        self.bytes_sent[t as usize].fetch_add(bytes as u64, Relaxed);
    }
}

#[derive(Debug, Default)]
pub(super) struct Removed {
    pub(super) count: u64,
    /// Σ (in-flight at removal − last seq offered); missed = base + count × rounds_sent.
    pub(super) base: i64,
}

#[derive(Debug, Default)]
pub struct HubTimes {
    pub round_ms: Vec<f64>,
    pub buckets: [u64; HUB_BUCKETS_MS.len()],
    pub count: u64,
    pub sum_ms: f64,
}

/// A point-in-time view: the `/control/stats` contract, and what only `/metrics` shows.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub stats: ServerStats,
    /// The round time histogram: (upper bound in ms, rounds), count, sum.
    pub hub_buckets: Vec<(f64, u64)>,
    pub hub_count: u64,
    pub hub_sum_ms: f64,
    pub bytes_sent: ClientCounts,
}

impl Hub {
    pub fn snapshot(&self) -> Snapshot {
        let c = &self.counters;
        let times = lock(&self.times);
        let per = |a: &[AtomicU64; 4]| ClientCounts {
            ws: a[Transport::Websocket as usize].load(Relaxed),
            sse: a[Transport::Sse as usize].load(Relaxed),
            poll: 0,
            raw: a[Transport::Raw as usize].load(Relaxed),
        };
        Snapshot {
            stats: self.stats(&times, per(&c.sent)),
            hub_buckets: HUB_BUCKETS_MS
                .iter()
                .copied()
                .zip(times.buckets.iter().copied())
                .collect(),
            hub_count: times.count,
            hub_sum_ms: times.sum_ms,
            bytes_sent: per(&c.bytes_sent),
        }
    }

    /// Connected clients by transport; polls are counted by request.
    pub(super) fn clients(&self) -> ClientCounts {
        let mut clients = ClientCounts::default();
        for c in lock(&self.conns).values() {
            match c.transport {
                Transport::Websocket => clients.ws += 1,
                Transport::Sse => clients.sse += 1,
                Transport::Raw => clients.raw += 1,
                // Polls hold no connection.
                Transport::Polling => {}
            }
        }
        clients.poll = self.counters.polls.load(Relaxed);
        clients
    }

    pub(super) fn stats(&self, times: &HubTimes, messages_sent: ClientCounts) -> ServerStats {
        let c = &self.counters;
        let rounds_sent = c.rounds_sent.load(Relaxed);
        let (removed, missed) = {
            let r = lock(&self.removed);
            let m = r.base + (r.count * rounds_sent) as i64;
            (r.count, m.max(0) as u64)
        };
        let (ring_messages, ring_bytes) = {
            let ring = lock(&self.ring);
            (ring.len() as u64, ring.iter().map(Round::bytes).sum())
        };
        ServerStats {
            rounds_sent,
            rounds_total: *lock(&self.rounds_total),
            hub_round_ms: times.round_ms.clone(),
            publish_start_ns: self.publish_start_ns.load(Relaxed),
            drops: c.drops.load(Relaxed),
            removed,
            missed_by_removed: missed,
            clients: Some(self.clients()),
            max_queue_depth: c.max_queue_depth.load(Relaxed),
            rss_bytes: rtcheck_base::os::proc::self_rss_bytes(),
            cpu_seconds: rtcheck_base::os::clock::cpu_seconds(),
            nodelay: Some(self.nodelay.load(Relaxed)),
            open_fds: rtcheck_base::os::proc::self_open_fds(),
            finished: self.finished.load(Relaxed),
            messages_sent,
            closed: CloseReason::ALL
                .iter()
                .map(|r| (r.name().to_string(), c.closed[*r as usize].load(Relaxed)))
                .collect(),
            partial_frame_bytes: c.partial_frame_bytes.load(Relaxed),
            echo_connections: c.echo_connections.load(Relaxed),
            node: self.relay.get().map(|r| r.node()),
            redis_up: self.relay.get().map(|r| r.redis_up()),
            ring_messages,
            ring_bytes,
            sessions: self.sessions.stats(),
            refused: Refusals {
                host: c.refused_host.load(Relaxed),
                origin: c.refused_origin.load(Relaxed),
            },
            accept_errors: AcceptErrors {
                emfile: c.accept_errors[0].load(Relaxed),
                enfile: c.accept_errors[1].load(Relaxed),
                other: c.accept_errors[2].load(Relaxed),
            },
            replay: self.replay.stats(),
        }
    }

    pub(super) fn record_round(&self, ms: f64) {
        let mut t = lock(&self.times);
        if t.round_ms.len() < MAX_ROUND_TIMES {
            // Nanosecond resolution is plenty and keeps the JSON readable.
            t.round_ms.push((ms * 1e6).round() / 1e6);
        }
        for (i, b) in HUB_BUCKETS_MS.iter().enumerate() {
            if ms <= *b {
                t.buckets[i] += 1;
            }
        }
        t.count += 1;
        t.sum_ms += ms;
    }
}
