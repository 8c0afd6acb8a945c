//! One session's queue: its unacked messages (each a copy of the payload), the gap marker
//! an overflow leaves, and the bytes it holds. Pure bookkeeping; [`super::Sessions`] owns
//! the map, the caps and the counters.
use std::collections::VecDeque;
use std::time::Instant;

/// Per-entry bookkeeping beyond the payload (seq, ts, the payload's pointer and length).
pub(super) const ENTRY_OVERHEAD: usize = std::mem::size_of::<Entry>();
/// A session's fixed part: the struct, its id twice (map key and the conn index) and the
/// map slots.
pub(super) const SESSION_OVERHEAD: usize = std::mem::size_of::<Session>() + 2 * (32 + 48);

/// One unacked message. The session holds its own copy of the payload, as a server with
/// per-user data would; a replay re-encodes from it.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) seq: u64,
    pub(super) ts: u64,
    pub(super) payload: Box<[u8]>,
}

#[derive(Debug, Default)]
pub(super) struct Session {
    pub(super) queue: VecDeque<Entry>,
    /// Seqs dropped by overflow and not yet acked past: the next gap marker.
    pub(super) lost: Option<(u64, u64)>,
    pub(super) acked: u64,
    /// The last seq queued for this session (acks above it were never sent).
    pub(super) last_queued: u64,
    pub(super) conn: Option<u64>,
    /// When the client left (None while connected).
    pub(super) away_since: Option<Instant>,
    pub(super) bytes: usize,
}

impl Session {
    /// Queue a message, dropping the oldest when full; returns how many were dropped.
    pub(super) fn push(&mut self, seq: u64, ts: u64, payload: &[u8], cap: usize) -> u64 {
        let mut freed = 0;
        let mut dropped = 0;
        while self.queue.len() >= cap {
            let Some(e) = self.queue.pop_front() else {
                break;
            };
            freed += e.payload.len() + ENTRY_OVERHEAD;
            dropped += 1;
            self.lost = Some((self.lost.map_or(e.seq, |l| l.0), e.seq));
        }
        self.queue.push_back(Entry {
            seq,
            ts,
            payload: payload.into(),
        });
        self.last_queued = seq;
        let added = payload.len() + ENTRY_OVERHEAD;
        self.bytes = self.bytes + added - freed;
        dropped
    }

    /// Drop everything up to `seq`; returns the bytes freed.
    pub(super) fn ack(&mut self, seq: u64) -> usize {
        let mut freed = 0;
        while self.queue.front().is_some_and(|e| e.seq <= seq) {
            if let Some(e) = self.queue.pop_front() {
                freed += e.payload.len() + ENTRY_OVERHEAD;
            }
        }
        if self.queue.is_empty() {
            self.queue = VecDeque::new(); // an idle session holds no buffer
        }
        self.acked = self.acked.max(seq);
        if self.lost.is_some_and(|(_, b)| b <= self.acked) {
            self.lost = None;
        }
        self.bytes -= freed;
        freed
    }

    /// The gap marker still owed (beyond what the client acked).
    pub(super) fn gap(&self) -> Option<(u64, u64)> {
        let (a, b) = self.lost?;
        (b > self.acked).then(|| (a.max(self.acked + 1), b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(cap: usize, seqs: std::ops::RangeInclusive<u64>) -> (Session, u64) {
        let mut s = Session::default();
        let dropped = seqs.map(|q| s.push(q, q * 10, &[0u8; 40], cap)).sum();
        (s, dropped)
    }

    #[test]
    fn a_full_queue_drops_the_oldest_into_one_gap() {
        let (s, dropped) = filled(3, 1..=6);
        assert_eq!(dropped, 3);
        let seqs: Vec<u64> = s.queue.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [4, 5, 6]);
        assert_eq!(
            (s.lost, s.gap(), s.last_queued),
            (Some((1, 3)), Some((1, 3)), 6)
        );
        assert_eq!(s.bytes, 3 * (40 + ENTRY_OVERHEAD));
    }

    #[test]
    fn acks_free_bytes_and_shrink_the_gap_until_it_is_gone() {
        let (mut s, _) = filled(3, 1..=6);
        assert_eq!(s.ack(2), 0, "only lost seqs acked: nothing held is freed");
        assert_eq!(s.gap(), Some((3, 3)), "the marker starts after the ack");
        assert_eq!(s.ack(4), 40 + ENTRY_OVERHEAD);
        assert_eq!((s.lost, s.gap(), s.acked), (None, None, 4));
        s.ack(6);
        assert_eq!((s.queue.len(), s.queue.capacity(), s.bytes), (0, 0, 0));
        // An older ack after a newer one does not move `acked` back.
        s.ack(1);
        assert_eq!(s.acked, 6);
    }
}
