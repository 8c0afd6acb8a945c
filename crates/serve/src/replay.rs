//! How a resume replay is written (issue 21 item 2). A replay used to be built whole (the
//! ring after the client's seq, about 1 MB for 1024 x 1 KiB) and held while a 30 s write
//! drained it, per client: 3,000 `Last-Event-ID: 0` clients took 2.57 GB. Now what a resume
//! owes is kept as a [`Replay`] of a few parts (ranges of the ring by seq, rounds of its
//! own, session entries still to encode), and it is written [`CHUNK`] bytes at a time, each
//! under `--write-deadline`, each holding a lease on one [`Budget`] shared by every client
//! (`--replay-budget`): a client waiting its turn holds almost nothing, and a round the ring
//! dropped meanwhile becomes a gap marker, never a silent skip. When no replay is in flight
//! after a flood, the heap is trimmed so RSS comes back.
use super::io::{self, WriteError};
use super::ring::{gap_marker, Round};
use super::sync::lock;
use bytes::Bytes;
use rtcheck_wire::epoch::Epoch;
use rtcheck_wire::stats::ReplayStats;
use rtcheck_wire::transport::Transport;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;
use tokio::net::TcpStream;

/// Bytes of one replay write.
pub const CHUNK: usize = 64 * 1024;
/// The write bound of a replay chunk when `--write-deadline 0` (never remove): a replay
/// holds the budget, so it is bounded anyway.
const NO_DEADLINE: Duration = Duration::from_secs(30);
/// Budget accounting unit (semaphore permits are counted in these).
const UNIT: u64 = 1024;
/// Leased bytes since the last heap trim that make one worth it when the budget empties.
const TRIM_AFTER: u64 = 4 << 20;

/// Replay bytes in flight over every client, bounded by `--replay-budget`.
#[derive(Debug)]
pub struct Budget {
    sem: tokio::sync::Semaphore,
    units: u64,
    pub bytes: u64,
    in_flight: AtomicU64,
    peak: AtomicU64,
    waits: AtomicU64,
    since_trim: AtomicU64,
    trims: AtomicU64,
}

/// Bytes of the budget held until dropped.
pub struct Lease<'a> {
    budget: &'a Budget,
    _permit: tokio::sync::SemaphorePermit<'a>,
    bytes: u64,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let b = self.budget;
        let left = b.in_flight.fetch_sub(self.bytes, Relaxed) - self.bytes;
        if left == 0 && b.since_trim.load(Relaxed) >= TRIM_AFTER {
            b.since_trim.store(0, Relaxed);
            b.trims.fetch_add(1, Relaxed);
            trim_soon();
        }
    }
}

impl Budget {
    pub fn new(bytes: u64) -> Budget {
        let units = (bytes / UNIT).max(1);
        Budget {
            sem: tokio::sync::Semaphore::new(units as usize),
            units,
            bytes,
            in_flight: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            since_trim: AtomicU64::new(0),
            trims: AtomicU64::new(0),
        }
    }

    /// Wait for `bytes` of the budget (all of it at most), first come first served.
    pub async fn lease(&self, bytes: usize) -> Lease<'_> {
        let units = (bytes as u64).div_ceil(UNIT).clamp(1, self.units);
        // Fewer than u32::MAX units: the budget is at most 64 GiB.
        let n = units as u32;
        let permit = match self.sem.try_acquire_many(n) {
            Ok(p) => p,
            Err(_) => {
                self.waits.fetch_add(1, Relaxed);
                self.sem
                    .acquire_many(n)
                    .await
                    .expect("the budget is never closed")
            }
        };
        let bytes = units * UNIT;
        let now = self.in_flight.fetch_add(bytes, Relaxed) + bytes;
        self.peak.fetch_max(now, Relaxed);
        self.since_trim.fetch_add(bytes, Relaxed);
        Lease {
            budget: self,
            _permit: permit,
            bytes,
        }
    }

    pub fn stats(&self) -> ReplayStats {
        ReplayStats {
            budget_bytes: self.bytes,
            in_flight_bytes: self.in_flight.load(Relaxed),
            peak_in_flight_bytes: self.peak.load(Relaxed),
            waits: self.waits.load(Relaxed),
            heap_trims: self.trims.load(Relaxed),
        }
    }
}

/// Hand freed memory back to the OS off the runtime's threads, one trim at a time (a
/// request while one runs makes it run once more).
fn trim_soon() {
    static RUNNING: AtomicBool = AtomicBool::new(false);
    static AGAIN: AtomicBool = AtomicBool::new(false);
    AGAIN.store(true, Relaxed);
    if RUNNING.swap(true, Relaxed) {
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        RUNNING.store(false, Relaxed);
        return;
    };
    rt.spawn_blocking(|| loop {
        while AGAIN.swap(false, Relaxed) {
            rtcheck_base::os::proc::trim_heap();
        }
        RUNNING.store(false, Relaxed);
        if !AGAIN.load(Relaxed) || RUNNING.swap(true, Relaxed) {
            return;
        }
    });
}

/// One part of a replay. Each keeps the epoch its seqs are numbered in: an epoch reset
/// while a replay waits its turn clears the ring (and refills it from seq 1), and the old
/// epoch's rounds are then said lost, never written as the new one's.
#[derive(Debug)]
enum Part {
    /// Seqs `from..=to` of `epoch`, contiguous, read from the hub's ring when written.
    Ring { epoch: Epoch, from: u64, to: u64 },
    /// A round of its own (a gap marker for a hole, a round only the cluster's Stream held).
    Round(Round),
    /// Entries `(seq, ts)` of `epoch` (a session's, the Stream's), encoded when written.
    Built(Epoch, VecDeque<(u64, u64)>),
}

/// What a resume owes, decided at registration: the lost range first (a gap marker), then
/// the parts in seq order.
#[derive(Debug, Default)]
pub struct Replay {
    gap: Option<(u64, u64)>,
    parts: VecDeque<Part>,
}

impl Replay {
    /// Nothing to replay, only maybe a gap marker.
    pub fn gap_only(gap: Option<(u64, u64)>) -> Replay {
        Replay {
            gap,
            parts: VecDeque::new(),
        }
    }

    /// A replay decided over (a view of) `ring`: the rounds the ring holds become ranges;
    /// the others (gap markers, Stream rounds) are kept as they are.
    pub fn from_ring(
        rounds: Vec<Round>,
        gap: Option<(u64, u64)>,
        ring: &VecDeque<Round>,
    ) -> Replay {
        let mut parts: VecDeque<Part> = VecDeque::new();
        for r in rounds {
            if !in_ring(ring, &r) {
                // Other rounds of data (the cluster's Stream) are encoded when written;
                // gap markers are kept as they are.
                match parts.back_mut() {
                    _ if !r.is_data() => parts.push_back(Part::Round(r)),
                    Some(Part::Built(e, b)) if *e == r.epoch => b.push_back((r.seq, r.ts)),
                    _ => parts.push_back(Part::Built(r.epoch, VecDeque::from([(r.seq, r.ts)]))),
                }
                continue;
            }
            match parts.back_mut() {
                Some(Part::Ring { epoch, to, .. }) if *epoch == r.epoch && *to + 1 == r.seq => {
                    *to = r.seq
                }
                _ => parts.push_back(Part::Ring {
                    epoch: r.epoch,
                    from: r.seq,
                    to: r.seq,
                }),
            }
        }
        Replay { gap, parts }
    }

    /// A session's unacked entries (seqs of `epoch`), encoded as they are written.
    pub fn built(epoch: Epoch, entries: Vec<(u64, u64)>, gap: Option<(u64, u64)>) -> Replay {
        let parts = match entries.is_empty() {
            true => VecDeque::new(),
            false => VecDeque::from([Part::Built(epoch, entries.into())]),
        };
        Replay { gap, parts }
    }

    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.gap.is_none() && self.parts.is_empty()
    }

    /// The next pieces for transport `t`, up to `limit` bytes (at least one piece):
    /// (pieces, the message pieces' lengths to count as sent).
    fn next_chunk(
        &mut self,
        ring: &Mutex<VecDeque<Round>>,
        t: Transport,
        enc: (usize, bool),
        limit: usize,
    ) -> (Vec<Bytes>, Vec<usize>) {
        let mut c = Chunk::default();
        if let Some(g) = self.gap.take() {
            c.marker(Bytes::from(gap_marker(t, g)));
        }
        while c.bytes < limit {
            let Some(part) = self.parts.front_mut() else {
                break;
            };
            if part.write(&mut c, ring, t, enc, limit) {
                self.parts.pop_front();
            }
        }
        (c.out, c.sent)
    }
}

/// The pieces of one write: markers and messages (only messages count as sent).
#[derive(Debug, Default)]
struct Chunk {
    out: Vec<Bytes>,
    sent: Vec<usize>,
    bytes: usize,
}

impl Chunk {
    fn marker(&mut self, b: Bytes) {
        self.bytes += b.len();
        self.out.push(b);
    }
    fn message(&mut self, b: Bytes) {
        self.sent.push(b.len());
        self.marker(b);
    }
}

impl Part {
    /// Add this part's next pieces to `c` up to `limit`; true once it is all written.
    fn write(
        &mut self,
        c: &mut Chunk,
        ring: &Mutex<VecDeque<Round>>,
        t: Transport,
        (size, text): (usize, bool),
        limit: usize,
    ) -> bool {
        match self {
            Part::Round(r) => {
                c.message(r.for_transport(t).clone());
                true
            }
            Part::Built(epoch, entries) => {
                while c.bytes < limit {
                    let Some((seq, ts)) = entries.pop_front() else {
                        break;
                    };
                    let r = Round::build(size, text, *epoch, seq, ts);
                    c.message(r.for_transport(t).clone());
                }
                entries.is_empty()
            }
            Part::Ring { epoch, from, to } => {
                let ring = lock(ring);
                let mut i = ring.partition_point(|r| r.seq < *from);
                // Dropped from the ring since the decision (or the ring is another
                // epoch's now): said, never skipped.
                let first = ring
                    .get(i)
                    .filter(|r| r.epoch == *epoch)
                    .map_or(u64::MAX, |r| r.seq);
                if first > *from {
                    let upto = (*to).min(first - 1);
                    c.marker(Bytes::from(gap_marker(t, (*from, upto))));
                    *from = upto + 1;
                }
                while c.bytes < limit && *from <= *to && i < ring.len() {
                    c.message(ring[i].for_transport(t).clone());
                    *from = ring[i].seq + 1;
                    i += 1;
                }
                *from > *to
            }
        }
    }
}

/// Is `r` the ring's own round (same bytes), not a copy or a round of the Stream?
fn in_ring(ring: &VecDeque<Round>, r: &Round) -> bool {
    !r.sse.is_empty()
        && ring
            .binary_search_by_key(&r.seq, |x| x.seq)
            .is_ok_and(|i| ring[i].sse.as_ptr() == r.sse.as_ptr())
}

/// Where a replay is written from: the hub's ring (read as each chunk is written), the
/// budget every client's replay shares, the payload's encoding, `--write-deadline`.
pub struct Source<'a> {
    pub ring: &'a Mutex<VecDeque<Round>>,
    pub budget: &'a Budget,
    pub size: usize,
    pub text: bool,
    pub deadline: Option<Duration>,
}

/// Write `head` then the replay to `stream`, chunk by chunk under the budget and the
/// write deadline; `sent` is told each message's bytes once written. The connection was
/// registered as writing: the publisher queues its live rounds meanwhile.
pub async fn write(
    src: &Source<'_>,
    stream: &TcpStream,
    t: Transport,
    head: &[u8],
    mut replay: Replay,
    mut sent: impl FnMut(usize),
) -> Result<(), WriteError> {
    let deadline = Some(src.deadline.unwrap_or(NO_DEADLINE));
    let enc = (src.size, src.text);
    let mut head = head;
    loop {
        let (pieces, written) = replay.next_chunk(src.ring, t, enc, CHUNK);
        if pieces.is_empty() && head.is_empty() {
            return Ok(());
        }
        let len = head.len() + pieces.iter().map(|p| p.len()).sum::<usize>();
        let lease = src.budget.lease(len).await;
        let mut buf = Vec::with_capacity(len);
        buf.extend_from_slice(head);
        for p in &pieces {
            buf.extend_from_slice(p);
        }
        drop(pieces);
        head = &[];
        io::write_with_deadline(stream, &buf, deadline).await?;
        drop(buf);
        drop(lease);
        written.into_iter().for_each(&mut sent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(seqs: std::ops::RangeInclusive<u64>) -> VecDeque<Round> {
        in_epoch(Epoch(1), seqs)
    }

    fn in_epoch(e: Epoch, seqs: std::ops::RangeInclusive<u64>) -> VecDeque<Round> {
        seqs.map(|s| Round::build(64, false, e, s, s * 100))
            .collect()
    }

    /// Everything a replay writes for SSE, as (ids, gap markers).
    fn drain(
        mut r: Replay,
        ring: &Mutex<VecDeque<Round>>,
        limit: usize,
    ) -> (Vec<u64>, Vec<String>, usize) {
        let (mut ids, mut gaps, mut chunks) = (Vec::new(), Vec::new(), 0);
        loop {
            let (pieces, _) = r.next_chunk(ring, Transport::Sse, (64, false), limit);
            if pieces.is_empty() {
                return (ids, gaps, chunks);
            }
            chunks += 1;
            for p in pieces {
                let s = String::from_utf8(p.to_vec()).unwrap();
                match s.strip_prefix("id: ") {
                    Some(rest) => {
                        ids.push(rest.split(['\n', '@']).next().unwrap().parse().unwrap())
                    }
                    None => gaps.push(s.lines().nth(1).unwrap().to_string()),
                }
            }
        }
    }

    #[test]
    fn ring_rounds_are_held_as_ranges_and_written_in_chunks() {
        let local = rounds(5..=40);
        let decided: Vec<Round> = local.iter().filter(|r| r.seq > 9).cloned().collect();
        let r = Replay::from_ring(decided, Some((2, 4)), &local);
        assert_eq!(r.parts.len(), 1, "one range: {:?}", r.parts);
        let ring = Mutex::new(local);
        let (ids, gaps, chunks) = drain(r, &ring, 1000);
        assert_eq!(ids, (10..=40).collect::<Vec<_>>());
        assert_eq!(gaps, ["data: {\"from\":2,\"to\":4}"]);
        assert!(
            chunks >= 3,
            "written in pieces of about 1000 bytes: {chunks}"
        );
    }

    #[test]
    fn rounds_the_ring_dropped_meanwhile_become_a_gap_marker() {
        let local = rounds(5..=20);
        let decided: Vec<Round> = local.iter().cloned().collect();
        let r = Replay::from_ring(decided, None, &local);
        // The publisher moved on: 5..=11 are gone before the replay is written.
        let ring = Mutex::new(rounds(12..=30));
        let (ids, gaps, _) = drain(r, &ring, 64 * 1024);
        assert_eq!(gaps, ["data: {\"from\":5,\"to\":11}"]);
        assert_eq!(
            ids,
            (12..=20).collect::<Vec<_>>(),
            "up to what was decided only"
        );
        // All gone.
        let local = rounds(1..=3);
        let r = Replay::from_ring(local.iter().cloned().collect(), None, &local);
        let (ids, gaps, _) = drain(r, &Mutex::new(rounds(10..=12)), 64 * 1024);
        assert!(ids.is_empty());
        assert_eq!(gaps, ["data: {\"from\":1,\"to\":3}"]);
    }

    #[test]
    fn an_epoch_reset_meanwhile_makes_the_old_epochs_rounds_a_gap_never_the_new_ones() {
        let local = rounds(5..=20);
        let r = Replay::from_ring(local.iter().cloned().collect(), None, &local);
        // Reset before the replay is written: the ring holds the new epoch's 1..=30.
        let ring = Mutex::new(in_epoch(Epoch(2), 1..=30));
        let (ids, gaps, _) = drain(r, &ring, 64 * 1024);
        assert!(
            ids.is_empty(),
            "the new epoch's seqs are other rounds: {ids:?}"
        );
        assert_eq!(gaps, ["data: {\"from\":5,\"to\":20}"]);
        // Stream rounds and session entries are written in the epoch they were read in.
        let stubs = vec![Round::stub(Epoch(7), 3, 30), Round::stub(Epoch(7), 4, 40)];
        let r = Replay::from_ring(stubs, None, &VecDeque::new());
        let (pieces, _) = r_chunk(r, &ring);
        assert!(
            pieces[0].starts_with("id: 3@0000000000000007\n"),
            "{}",
            pieces[0]
        );
        let s = Replay::built(Epoch(7), vec![(5, 50)], None);
        let (pieces, _) = r_chunk(s, &ring);
        assert!(
            pieces[0].starts_with("id: 5@0000000000000007\n"),
            "{}",
            pieces[0]
        );
    }

    /// The first chunk for SSE, as text.
    fn r_chunk(mut r: Replay, ring: &Mutex<VecDeque<Round>>) -> (Vec<String>, Vec<usize>) {
        let (pieces, sent) = r.next_chunk(ring, Transport::Sse, (64, false), 64 * 1024);
        let text = pieces
            .iter()
            .map(|p| String::from_utf8(p.to_vec()).unwrap());
        (text.collect(), sent)
    }

    #[test]
    fn rounds_of_its_own_and_session_entries_keep_their_order() {
        let local = rounds(1..=5);
        let mut decided: Vec<Round> = local.iter().take(2).cloned().collect();
        decided.push(super::super::ring::gap_round(3, 3));
        decided.push(Round::stub(Epoch(1), 9, 900)); // a Stream round, not the ring's
        decided.push(Round::build(64, false, Epoch(1), 10, 1000)); // a copy, not the ring's
        let r = Replay::from_ring(decided, None, &local);
        assert_eq!(r.parts.len(), 3, "ring 1..=2, the gap, 9 and 10 to encode");
        let ring = Mutex::new(local);
        let (ids, gaps, _) = drain(r, &ring, 64 * 1024);
        assert_eq!(
            (ids, gaps),
            (
                vec![1, 2, 9, 10],
                vec!["data: {\"from\":3,\"to\":3}".to_string()]
            )
        );
        let s = Replay::built(Epoch(1), vec![(7, 70), (8, 80)], Some((5, 6)));
        let (ids, gaps, _) = drain(s, &ring, 64 * 1024);
        assert_eq!((ids, gaps.len()), (vec![7, 8], 1));
        assert!(Replay::gap_only(None).is_empty());
    }

    #[tokio::test]
    async fn the_budget_bounds_bytes_in_flight_first_come_first_served() {
        let b = std::sync::Arc::new(Budget::new(128 * 1024));
        let l1 = b.lease(100 * 1024).await;
        assert_eq!(b.stats().in_flight_bytes, 100 * 1024);
        let b2 = b.clone();
        let waiter = tokio::spawn(async move {
            let _l = b2.lease(64 * 1024).await;
            b2.stats().in_flight_bytes
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "over the budget: waits");
        drop(l1);
        assert_eq!(waiter.await.unwrap(), 64 * 1024);
        let s = b.stats();
        assert_eq!(
            (s.in_flight_bytes, s.waits, s.peak_in_flight_bytes),
            (0, 1, 100 * 1024)
        );
        // A lease larger than the budget takes all of it, never deadlocks.
        let l = b.lease(10 << 20).await;
        assert_eq!(b.stats().in_flight_bytes, 128 * 1024);
        drop(l);
    }
}
