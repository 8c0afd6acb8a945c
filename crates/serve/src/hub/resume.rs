//! What a resuming client is owed, decided from the ring atomically with registration:
//! a reset marker, the lost range, the rounds after its position (written in chunks by
//! `crate::replay`).
use super::super::replay::{self, Replay};
use super::super::ring::{gap_round, merge_rings, replay_after, snapshot_replay, Round};
use super::super::sync::lock;
use super::conn::Conn;
use super::Hub;
use rtcheck_wire::epoch::{self, Epoch, Position, Reset};
use rtcheck_wire::transport::Transport;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::net::TcpStream;

/// What a resuming client gets first ([`Hub::register_resume_with`]).
#[derive(Debug)]
pub struct Resumed {
    /// The epoch and latest seq when it registered (its hello).
    pub epoch: Epoch,
    pub latest: u64,
    /// Its position was from another epoch or beyond the server's: a reset marker first.
    pub reset: Option<Reset>,
    /// Then the lost range (a gap marker) and the rounds after the position, written in
    /// chunks under the replay budget (super::replay).
    pub replay: Replay,
}

impl Hub {
    /// Register a resuming client (`pos`: where it says it is; None: a fresh client) and
    /// return what it gets first: a reset marker when `pos` is from another epoch or
    /// beyond what the server holds ([`epoch::decide`]), the lost range if the ring no
    /// longer reaches back that far, and the ring after the position (from its start after
    /// a reset), merged with `extra`, rounds from the cluster's Redis ring. Snapshot
    /// delivery sends the latest state first. Atomic with respect to the publisher:
    /// nothing is missed, and rounds already in the replay are not offered again. The
    /// connection starts as "writing" so the publisher queues (never writes directly)
    /// until the task has sent the head and the replay.
    pub fn register_resume_with(
        &self,
        stream: TcpStream,
        transport: Transport,
        pos: Option<Position>,
        extra: &[Round],
    ) -> (Arc<Conn>, Resumed) {
        let snapshot = self.cfg.delivery == rtcheck_wire::delivery::Delivery::Snapshot;
        self.register_with(stream, transport, |local| {
            let merged;
            let ring = if extra.is_empty() {
                local
            } else {
                merged = merge_rings(local, extra, self.epoch());
                &merged
            };
            let latest = self.latest_held(ring);
            let resume = pos.map(|p| epoch::decide(p, self.epoch(), latest));
            let (replay, gap) = match resume.map(|r| r.since()) {
                since if snapshot => snapshot_replay(ring, since),
                Some(id) => {
                    let (mut r, gap) = replay_after(ring, id);
                    r.extend(self.tail_gap(ring, id, u64::MAX));
                    (r, gap)
                }
                None => (Vec::new(), None),
            };
            let skip = replay.last().map_or(0, |r| r.seq);
            let reset = resume.and_then(|r| r.reset());
            let first = Resumed {
                epoch: self.epoch(),
                latest,
                reset,
                // Held as ranges of the ring, written in chunks (super::replay).
                replay: Replay::from_ring(replay, gap, local),
            };
            (first, skip)
        })
    }

    /// Where a replay is written from: the ring, the budget, the encoding and the
    /// write bound (super::replay).
    pub fn replay_source(&self) -> replay::Source<'_> {
        replay::Source {
            ring: &self.ring,
            budget: &self.replay,
            size: self.cfg.size,
            text: self.cfg.text,
            deadline: self.cfg.write_deadline,
        }
    }

    /// A replay decided outside registration, held as ranges of the ring where it can be.
    pub fn plan(&self, rounds: Vec<Round>, gap: Option<(u64, u64)>) -> Replay {
        Replay::from_ring(rounds, gap, &lock(&self.ring))
    }

    /// The ring after `since` up to `upto` (a WebSocket resume message: what the client
    /// missed before it joined at `upto`), and the lost range if the ring is too short.
    /// `extra`: rounds from the cluster's Redis ring, merged by seq.
    pub fn replay_between(
        &self,
        since: u64,
        upto: u64,
        extra: &[Round],
    ) -> (Vec<Round>, Option<(u64, u64)>) {
        let local = lock(&self.ring);
        // The tail gap is judged on the ring that is replayed (merged with the cluster's
        // when given), or a hole would be marked twice, the second time out of order.
        let (mut replay, gap) = if extra.is_empty() {
            let (mut r, g) = replay_after(&local, since);
            r.extend(self.tail_gap(&local, since, upto));
            (r, g)
        } else {
            let merged = merge_rings(&local, extra, self.epoch());
            let (mut r, g) = replay_after(&merged, since);
            r.extend(self.tail_gap(&merged, since, upto));
            (r, g)
        };
        drop(local);
        replay.retain(|r| r.seq <= upto);
        (replay, gap.filter(|g| g.0 <= upto))
    }

    /// A cluster node whose last delivery was a gap marker (the Stream no longer held the
    /// rounds, or they were never published) holds nothing after its ring's last round: a
    /// resume after `since` is owed that gap too, up to `upto`.
    pub(super) fn tail_gap(&self, ring: &VecDeque<Round>, since: u64, upto: u64) -> Option<Round> {
        let last = self.relay.get()?.last_seq().min(upto);
        // `since` is the client's: u64::MAX owes nothing (and must not wrap to 0).
        let from = since.max(ring.back().map_or(0, |r| r.seq)).checked_add(1)?;
        (last >= from).then(|| gap_round(from, last))
    }

    /// The oldest seq in the local ring.
    pub fn ring_oldest(&self) -> Option<u64> {
        lock(&self.ring).front().map(|r| r.seq)
    }
}
