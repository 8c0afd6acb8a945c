//! Fan-out: one round to every client by the configured strategy (per-client queues,
//! with direct writes, or sequential shards), the raw-TCP floor, and the full-queue
//! policy applied ([`super::conn::FullQueue`]).
use super::super::config::Strategy;
use super::super::io;
use super::super::ring::Round;
use super::super::sync::lock;
use super::conn::{CloseReason, Conn, FullQueue, Item, Offer};
use super::Hub;
use bytes::Bytes;
use rtcheck_wire::transport::Transport;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

impl Hub {
    /// Hand one round to every client (and keep it in the ring when `ring`); the
    /// publisher's step, and the cluster relay's for each round that comes back.
    pub async fn deliver(self: Arc<Self>, round: Round, ring: bool) {
        if ring {
            let mut ring = lock(&self.ring);
            if ring.len() >= self.cfg.ring {
                ring.pop_front();
            }
            ring.push_back(round.clone());
        }
        self.sessions.publish(&round);
        let t0 = Instant::now();
        match self.cfg.strategy {
            Strategy::PerClient => self.clone().offer_all(&round).await,
            Strategy::Shards => self.clone().shard_pass(&round).await,
        }
        self.record_round(t0.elapsed().as_secs_f64() * 1e3);
        self.counters.rounds_sent.fetch_max(round.seq, Relaxed);
    }

    /// Per-client strategy: hand the round to every client; returns when all have it.
    /// Queue mode: enqueue (drop and count when full) and wake the client's task.
    /// Direct mode: one non-blocking write to each client whose task is idle, queueing
    /// only what does not fit; the pass is split over the worker threads.
    /// Raw clients always get one non-blocking write.
    pub(super) async fn offer_all(self: Arc<Self>, round: &Round) {
        let conns: Vec<Arc<Conn>> = lock(&self.conns).values().cloned().collect();
        let parts = if self.cfg.direct { self.cfg.workers } else { 1 };
        if parts <= 1 || conns.len() < 64 {
            self.offer_to(&conns, round);
            return;
        }
        let chunk = conns.len().div_ceil(parts);
        let conns = Arc::new(conns);
        let mut set = tokio::task::JoinSet::new();
        for k in 0..parts {
            let (hub, conns, round) = (self.clone(), conns.clone(), round.clone());
            set.spawn(async move {
                let lo = (k * chunk).min(conns.len());
                let hi = ((k + 1) * chunk).min(conns.len());
                hub.offer_to(&conns[lo..hi], &round);
            });
        }
        while set.join_next().await.is_some() {}
    }

    pub(super) fn offer_to(&self, conns: &[Arc<Conn>], round: &Round) {
        let mut failed = Vec::new();
        let remove_slow = FullQueue::of(self.cfg.delivery) == FullQueue::Remove;
        for c in conns {
            if round.seq <= c.skip_until.load(Relaxed) {
                continue;
            }
            match self.offer_one(c, round) {
                Offer::Done => {}
                Offer::Queued(depth) => {
                    self.counters
                        .max_queue_depth
                        .fetch_max(depth as u64, Relaxed);
                    c.notify.notify_one();
                }
                Offer::Dropped => {
                    self.counters.drops.fetch_add(1, Relaxed);
                    // Snapshot clients ignore seqs, so a marker would tell them nothing:
                    // remove the slow client; it reconnects to the latest state.
                    if remove_slow && c.transport != Transport::Raw {
                        failed.push((c.clone(), CloseReason::QueueFull, 0));
                    }
                }
                Offer::Failed(reason) => failed.push((c.clone(), reason, 1)),
            }
        }
        for (c, reason, in_flight) in failed {
            self.deregister(&c, reason, in_flight);
        }
    }

    /// Everything under the client's queue lock, so it is atomic with its task's writes
    /// and with [`Hub::deregister`] (whose accounting reads `last_offered`).
    pub(super) fn offer_one(&self, c: &Conn, round: &Round) -> Offer {
        let mut q = lock(&c.queue);
        if q.closed {
            return Offer::Done;
        }
        c.last_offered.store(round.seq, Relaxed);
        let mut bytes = self.bytes_for(round, c.transport);
        if c.transport == Transport::Raw {
            return match c.stream.try_write(&bytes) {
                Ok(n) if n == bytes.len() => {
                    self.counters.sent(Transport::Raw, n);
                    Offer::Done
                }
                // A partial frame would corrupt the stream: remove the client.
                Ok(_) => Offer::Failed(CloseReason::WriteDeadline),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Offer::Dropped,
                Err(_) => Offer::Failed(CloseReason::Peer),
            };
        }
        if self.cfg.direct && q.items.is_empty() && !q.writing {
            match c.stream.try_write(&bytes) {
                Ok(n) if n == bytes.len() => {
                    self.counters.sent(c.transport, n);
                    return Offer::Done;
                }
                Ok(n) => {
                    // The message is counted once, when its task finishes the rest.
                    self.counters.bytes_sent[c.transport as usize].fetch_add(n as u64, Relaxed);
                    bytes = bytes.slice(n..);
                }
                // WouldBlock or an error: the task writes (or fails) later.
                Err(_) => {}
            }
        }
        let item = Item {
            seq: round.seq,
            bytes,
            gap_after: None,
        };
        q.offer(item, self.cfg.queue, FullQueue::of(self.cfg.delivery))
    }

    pub(super) fn bytes_for(&self, round: &Round, t: Transport) -> Bytes {
        let b = round.for_transport(t);
        if self.cfg.percopy {
            // G1: a fresh allocation and copy per client per round.
            Bytes::copy_from_slice(b)
        } else {
            b.clone()
        }
    }

    /// Shards strategy (unsafe hub, C1/C2): --shards tasks each write the round to their
    /// clients one after another; the round ends when every shard has finished.
    pub(super) async fn shard_pass(self: Arc<Self>, round: &Round) {
        let n = self.cfg.shards;
        let mut shards: Vec<Vec<Arc<Conn>>> = vec![Vec::new(); n];
        let mut raw = Vec::new();
        {
            let conns = lock(&self.conns);
            for (i, c) in conns.values().enumerate() {
                c.last_offered.store(round.seq, Relaxed);
                if round.seq <= c.skip_until.load(Relaxed) {
                    continue;
                }
                if c.transport == Transport::Raw {
                    raw.push(c.clone());
                } else {
                    shards[i % n].push(c.clone());
                }
            }
        }
        self.offer_to(&raw, round);
        let mut set = tokio::task::JoinSet::new();
        for shard in shards.into_iter().filter(|s| !s.is_empty()) {
            let hub = self.clone();
            let round = round.clone();
            set.spawn(async move {
                for c in shard {
                    let bytes = hub.bytes_for(&round, c.transport);
                    let r = match hub.write_queued(&c).await {
                        Ok(()) => {
                            io::write_with_deadline(&c.stream, &bytes, hub.cfg.write_deadline).await
                        }
                        Err(e) => Err(e),
                    };
                    match r {
                        Ok(()) => hub.counters.sent(c.transport, bytes.len()),
                        Err(io::WriteError::Timeout) => {
                            hub.deregister(&c, CloseReason::WriteDeadline, 1)
                        }
                        Err(io::WriteError::Io(e)) => {
                            hub.deregister(&c, CloseReason::from_io(&e), 1)
                        }
                    }
                }
            });
        }
        while set.join_next().await.is_some() {}
    }

    /// Shards strategy: what is queued for a client (markers of a live epoch reset; no
    /// writer task pops its queue) goes out before the round it precedes, so the new
    /// epoch's seqs never arrive without the reset that explains them.
    pub(super) async fn write_queued(&self, c: &Conn) -> Result<(), io::WriteError> {
        while let Some(item) = c.pop() {
            let wire = item.wire(c.transport);
            let r = io::write_with_deadline(&c.stream, &wire, self.cfg.write_deadline).await;
            c.done_writing();
            r?;
            // Counted as the per-client writer counts what it pops.
            self.counters.sent(c.transport, item.bytes.len());
        }
        Ok(())
    }
}
