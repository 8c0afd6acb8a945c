//! The hub: registered clients, the message ring, counters, and the publisher with its
//! fan-out strategies (per-client queues, sequential shards, raw-TCP floor). It imports
//! nothing above it: the session-ack state is a leaf it owns (`session`), a cluster plugs
//! in as a [`Relay`], and the WebSocket resume messages, routes and the cluster's reads
//! live above it (`crate::resume`, `routes`, `cluster`).
//!
//! In parts, each tested in-process (`tests`): [`conn`] (a client, its queue and the
//! full-queue policy), [`registry`], [`fanout`], [`publisher`], [`resume`] (what a
//! resuming client is owed), [`poll`] (/poll's view), [`counters`] (stats and metrics).
pub mod conn;
pub mod counters;
mod fanout;
mod poll;
mod publisher;
mod registry;
mod resume;
#[cfg(test)]
pub(crate) mod tests;

pub use conn::{CloseReason, Conn, FullQueue, Item};
pub use counters::{Counters, HubTimes, Snapshot, HUB_BUCKETS_MS};
pub use resume::Resumed;

use super::config::Config;
use super::replay;
use super::ring::Round;
use super::session::Sessions;
use super::sync::lock;
use counters::Removed;
use rtcheck_wire::epoch::Epoch;
use rtcheck_wire::transport::Transport;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::Notify;

/// What the hub asks of a cluster relay (`serve --redis`), which plugs in above it: the
/// relay gives each round a global seq and hands it back through [`Hub::deliver`].
pub trait Relay: Send + Sync {
    /// The highest seq this node delivered in its epoch (a gap marker's end included:
    /// a marker never enters the ring).
    fn last_seq(&self) -> u64;
    /// False for a relay-only node (`--no-publish`): the hub schedules no rounds.
    fn publishes(&self) -> bool;
    /// Take the scheduled time of the next round, to publish it.
    fn emit(&self, ts: u64);
    /// The node's name and whether it reaches Redis, for the stats.
    fn node(&self) -> String;
    fn redis_up(&self) -> bool;
}

pub struct Hub {
    pub cfg: Config,
    /// This instance's epoch (a cluster's: set from Redis, changed when Redis lost the
    /// seq counter). Changed only under the ring's lock, with the ring cleared.
    epoch: AtomicU64,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    ring: Mutex<VecDeque<Round>>,
    pub counters: Counters,
    removed: Mutex<Removed>,
    times: Mutex<HubTimes>,
    publish_start_ns: AtomicU64,
    rounds_total: Mutex<Option<u64>>,
    started: AtomicBool,
    start_notify: Notify,
    finished: AtomicBool,
    shutting_down: AtomicBool,
    shutdown_notify: Notify,
    pub nodelay: AtomicBool,
    /// `serve --redis`: rounds go out through Redis and come back through the relay.
    pub relay: OnceLock<Arc<dyn Relay>>,
    /// Session-ack state (empty in the other delivery modes).
    pub sessions: Sessions,
    /// Resume replay bytes in flight over every client (`--replay-budget`).
    pub replay: replay::Budget,
}

impl Hub {
    pub fn new(cfg: Config) -> Arc<Hub> {
        let rounds = cfg.rounds;
        let sessions = Sessions::new(&cfg.session_limits());
        let replay = replay::Budget::new(cfg.replay_budget.bytes);
        Arc::new(Hub {
            sessions,
            replay,
            cfg,
            epoch: AtomicU64::new(Epoch::random().0),
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            ring: Mutex::new(VecDeque::new()),
            counters: Counters::default(),
            removed: Mutex::new(Removed::default()),
            times: Mutex::new(HubTimes::default()),
            publish_start_ns: AtomicU64::new(0),
            rounds_total: Mutex::new(rounds),
            started: AtomicBool::new(false),
            start_notify: Notify::new(),
            finished: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            shutdown_notify: Notify::new(),
            nodelay: AtomicBool::new(true),
            relay: OnceLock::new(),
        })
    }

    /// The epoch seqs are numbered in now.
    pub fn epoch(&self) -> Epoch {
        Epoch(self.epoch.load(Relaxed))
    }

    /// A round of this server's payload in its epoch.
    pub fn round(&self, seq: u64, ts: u64) -> Round {
        Round::build(self.cfg.size, self.cfg.text, self.epoch(), seq, ts)
    }

    /// The highest seq this server holds: its ring's last (merged with the cluster's when
    /// given), or a cluster node's last delivery (a gap marker never enters the ring).
    pub(super) fn latest_held(&self, ring: &VecDeque<Round>) -> u64 {
        let back = ring.back().map_or(0, |r| r.seq);
        back.max(self.relay.get().map_or(0, |r| r.last_seq()))
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Relaxed)
    }

    /// Resolves once shutdown begins.
    pub async fn shutdown_signalled(&self) {
        let n = self.shutdown_notify.notified();
        if self.is_shutting_down() {
            return;
        }
        n.await
    }

    /// Ask every connection to close and stop the publisher and the listeners.
    pub fn shutdown(&self) {
        self.shutting_down.store(true, Relaxed);
        self.shutdown_notify.notify_waiters();
        let conns: Vec<_> = lock(&self.conns).values().cloned().collect();
        for c in conns {
            c.notify.notify_one();
            if c.transport == Transport::Raw {
                self.deregister(&c, CloseReason::Shutdown, 0);
            }
        }
    }
}
