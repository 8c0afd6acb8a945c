//! The ring and its pure functions: a published [`Round`] in every encoding, gap markers,
//! and what a resume, a poll or a full queue is owed over a ring (which on a cluster node
//! may hold holes). A leaf: it knows the wire formats and nothing of the server, so every
//! rule here is tested on plain values.
use bytes::Bytes;
use rtcheck_wire::epoch::Epoch;
use rtcheck_wire::transport::Transport;
use rtcheck_wire::{payload, sse, ws};
use std::collections::{BTreeMap, VecDeque};

/// Bytes of messages one `/poll` answer carries (at least one message): the client polls
/// again from `latest` (`"more":true` says there is more).
pub const POLL_MAX: usize = 64 * 1024;

/// A gap marker on the wire, the same shape as a resume's: SSE `event: gap`, a WebSocket
/// text frame; both carry `{"from":A,"to":B}` (the inclusive range of lost seqs).
pub fn gap_marker(t: Transport, (a, b): (u64, u64)) -> Vec<u8> {
    let data = format!("{{\"from\":{a},\"to\":{b}}}");
    match t {
        Transport::Sse => format!("event: gap\ndata: {data}\n\n").into_bytes(),
        // Raw clients have no queue, so they never get one.
        Transport::Websocket | Transport::Raw => ws::frame(ws::OP_TEXT, data.as_bytes()),
        // A poll answer carries the marker's JSON as it is.
        Transport::Polling => data.into_bytes(),
    }
}

/// A published message in every encoding, built once per round.
#[derive(Debug, Clone)]
pub struct Round {
    pub seq: u64,
    pub ts: u64,
    /// The epoch its seq belongs to (the SSE id is `SEQ@EPOCH`).
    pub epoch: Epoch,
    /// WebSocket frame (header + binary or JSON payload).
    pub ws: Bytes,
    /// SSE event.
    pub sse: Bytes,
    /// Raw-TCP frame (length prefix + binary payload).
    pub raw: Bytes,
    /// JSON text payload (ring, /poll).
    pub json: Bytes,
}

impl Round {
    pub fn build(size: usize, text: bool, epoch: Epoch, seq: u64, ts: u64) -> Round {
        let json = payload::encode_text(size, seq, ts);
        let ws = if text {
            ws::frame(ws::OP_TEXT, json.as_bytes())
        } else {
            ws::frame(ws::OP_BINARY, &payload::encode(size, seq, ts))
        };
        Round {
            seq,
            ts,
            epoch,
            ws: Bytes::from(ws),
            sse: Bytes::from(sse::encode_event_in(epoch, seq, &json)),
            raw: Bytes::from(payload::encode_raw_frame(size, seq, ts)),
            json: Bytes::from(json),
        }
    }
    /// A round known by seq and time only (read from the cluster's Stream): a replay
    /// encodes it when it writes it, a poll when it carries it, in `epoch` (the one it was
    /// read in).
    pub fn stub(epoch: Epoch, seq: u64, ts: u64) -> Round {
        Round {
            seq,
            ts,
            epoch,
            ws: Bytes::new(),
            sse: Bytes::new(),
            raw: Bytes::new(),
            json: Bytes::new(),
        }
    }
    /// A round of data (not a gap marker, whose `ts` is 0).
    pub fn is_data(&self) -> bool {
        self.ts != 0
    }
    /// Bytes held for this round: every encoding (what a ring entry really costs).
    pub fn bytes(&self) -> u64 {
        (self.ws.len() + self.sse.len() + self.raw.len() + self.json.len()) as u64
    }
    pub fn for_transport(&self, t: Transport) -> &Bytes {
        match t {
            Transport::Websocket => &self.ws,
            Transport::Sse => &self.sse,
            Transport::Raw => &self.raw,
            Transport::Polling => &self.json,
        }
    }
}

/// A gap marker as a round (never kept in the ring): SSE `event: gap`, WebSocket text
/// frame, both `{"from":A,"to":B}` as on a resume.
pub fn gap_round(from: u64, to: u64) -> Round {
    let m = format!("{{\"from\":{from},\"to\":{to}}}");
    Round {
        seq: to,
        ts: 0,
        // A marker carries no id: its epoch is never written.
        epoch: Epoch::FOREIGN,
        ws: Bytes::from(ws::frame(ws::OP_TEXT, m.as_bytes())),
        sse: Bytes::from(format!("event: gap\ndata: {m}\n\n")),
        raw: Bytes::new(),
        json: Bytes::from(m),
    }
}

/// `rounds` (ascending seqs) with a gap marker between any two that are not adjacent.
pub fn with_hole_markers<'a>(rounds: impl IntoIterator<Item = &'a Round>) -> Vec<Round> {
    let mut out: Vec<Round> = Vec::new();
    let mut prev: Option<u64> = None;
    for r in rounds {
        if let Some(p) = prev.filter(|p| r.seq > p + 1) {
            out.push(gap_round(p + 1, r.seq - 1));
        }
        prev = Some(r.seq);
        out.push(r.clone());
    }
    out
}

/// Snapshot delivery: the latest message, unless the client already has it.
pub fn snapshot_replay(
    ring: &VecDeque<Round>,
    last_id: Option<u64>,
) -> (Vec<Round>, Option<(u64, u64)>) {
    let latest = ring.back().filter(|r| r.seq > last_id.unwrap_or(0));
    (latest.cloned().into_iter().collect(), None)
}

/// The seqs a full queue's marker covers after dropping round `seq`: from the queued
/// tail's next seq (or the marker's start, when drops already follow it) to `seq`. Not
/// from `seq` itself: a cluster gap round (seq = the end of its range) stands for every
/// seq after the tail.
pub fn dropped_range(tail_seq: u64, marked: Option<(u64, u64)>, seq: u64) -> (u64, u64) {
    (marked.map_or(tail_seq.saturating_add(1), |g| g.0), seq)
}

/// The first rounds whose JSON fits `max` bytes (at least one), and whether some were left.
/// A round not encoded yet (a stub) counts as `size`, what its JSON will take.
pub fn capped(served: Vec<&Round>, max: usize, size: usize) -> (Vec<&Round>, bool) {
    let mut bytes = 0;
    let n = served
        .iter()
        .position(|r| {
            bytes += r.json.len().max(size) + 1;
            bytes > max
        })
        .map_or(served.len(), |i| i.max(1));
    let more = n < served.len();
    let mut served = served;
    served.truncate(n);
    (served, more)
}

/// The local ring and the cluster's, by seq, without duplicates. Rounds of `extra` from
/// another epoch than `epoch` are left out: the cluster's ring was read before an epoch
/// reset that came while the client registered.
pub fn merge_rings(local: &VecDeque<Round>, extra: &[Round], epoch: Epoch) -> VecDeque<Round> {
    let ours = extra.iter().filter(|r| r.epoch == epoch);
    let mut m: BTreeMap<u64, Round> = ours.map(|r| (r.seq, r.clone())).collect();
    m.extend(local.iter().map(|r| (r.seq, r.clone())));
    m.into_values().collect()
}

/// A poll's answer over `ring`: (latest, oldest, gap, messages). `latest` is the highest
/// seq served (the ring's last: a round is in the ring while it is still being handed out,
/// and `since=latest` must not get it again); `gap` says seqs `since+1 .. oldest-1` are
/// not held. The messages stop before a hole in the ring (a cluster node's ring can have
/// one), so the next poll from `latest` gets the hole as its gap. Snapshot delivery serves
/// only the latest state, with the gap flag saying it skipped some.
pub fn poll_view(
    ring: &VecDeque<Round>,
    since: u64,
    snapshot: bool,
) -> (u64, Option<u64>, bool, Vec<&Round>) {
    let back = ring.back().map(|r| r.seq);
    if snapshot {
        let gap = back.is_some_and(|o| o > since.saturating_add(1));
        let served = ring.back().filter(|r| r.seq > since).into_iter().collect();
        return (back.unwrap_or(0), back, gap, served);
    }
    let after: Vec<&Round> = ring.iter().filter(|r| r.seq > since).collect();
    let next = after.first().map(|r| r.seq);
    let gap = next.is_some_and(|n| n > since.saturating_add(1));
    let contiguous = after
        .windows(2)
        .position(|w| w[1].seq > w[0].seq + 1)
        .map_or(after.len(), |i| i + 1);
    let served = after[..contiguous].to_vec();
    let latest = match contiguous < after.len() {
        true => served.last().map_or(0, |r| r.seq),
        false => back.unwrap_or(0),
    };
    let oldest = if gap {
        next
    } else {
        ring.front().map(|r| r.seq)
    };
    (latest, oldest, gap, served)
}

/// The ring after `id`, and the lost range before its first round. A ring is contiguous
/// on one node, but a cluster node's ring (or the Stream) holds holes where rounds were
/// marked as gaps or never published: each hole gets an inline gap marker, so a resume
/// never skips a seq silently.
pub fn replay_after(ring: &VecDeque<Round>, id: u64) -> (Vec<Round>, Option<(u64, u64)>) {
    let after = ring.iter().filter(|r| r.seq > id);
    let gap = match ring.iter().find(|r| r.seq > id) {
        Some(o) if o.seq > id.saturating_add(1) => Some((id + 1, o.seq - 1)),
        _ => None,
    };
    (with_hole_markers(after), gap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(seqs: std::ops::RangeInclusive<u64>) -> VecDeque<Round> {
        seqs.map(|s| Round::build(64, false, Epoch(1), s, s * 100))
            .collect()
    }

    #[test]
    fn replay_from_inside_the_ring() {
        let (r, gap) = replay_after(&ring(5..=10), 7);
        assert_eq!(r.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![8, 9, 10]);
        assert_eq!(gap, None);
        let (r, gap) = replay_after(&ring(5..=10), 4);
        assert_eq!(r.len(), 6);
        assert_eq!(gap, None);
    }

    #[test]
    fn rounds_of_another_epoch_never_join_the_ring() {
        let local = ring(5..=6);
        let stale: Vec<Round> = (3..=4)
            .map(|s| Round::build(64, false, Epoch(2), s, s))
            .collect();
        let fresh: Vec<Round> = ring(3..=4).into_iter().collect();
        assert_eq!(merge_rings(&local, &stale, Epoch(1)).len(), 2);
        assert_eq!(merge_rings(&local, &fresh, Epoch(1)).len(), 4);
    }

    #[test]
    fn a_full_queues_marker_covers_every_seq_after_the_tail() {
        // 7 queued last; 8 dropped, then 9: one marker 8..=9.
        assert_eq!(dropped_range(7, None, 8), (8, 8));
        assert_eq!(dropped_range(7, Some((8, 8)), 9), (8, 9));
        // A cluster gap round for 8..=12 (its seq is 12) dropped first: 8..=12, not 12..=12.
        assert_eq!(dropped_range(7, None, 12), (8, 12));
    }

    #[test]
    fn replay_reports_lost_range() {
        let (r, gap) = replay_after(&ring(5..=10), 1);
        assert_eq!(r.len(), 6);
        assert_eq!(gap, Some((2, 4)));
        let (r, gap) = replay_after(&ring(5..=10), 10);
        assert!(r.is_empty());
        assert_eq!(gap, None); // A client's Last-Event-ID is any u64: the largest is "nothing newer", not a gap.
        let (r, gap) = replay_after(&ring(5..=10), u64::MAX);
        assert!(r.is_empty());
        assert_eq!(gap, None);
    }

    #[test]
    fn a_hole_in_the_ring_is_never_skipped_silently() {
        let holed: VecDeque<Round> = ring(1..=5).into_iter().chain(ring(10..=12)).collect();
        let (r, gap) = replay_after(&holed, 3);
        assert_eq!(gap, None);
        let seqs: Vec<u64> = r.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, vec![4, 5, 9, 10, 11, 12]);
        assert_eq!(&r[2].json[..], br#"{"from":6,"to":9}"#);
        // Resuming inside the hole: the rest of the hole first, as a gap.
        let (r, gap) = replay_after(&holed, 7);
        assert_eq!(gap, Some((8, 9)));
        assert_eq!(r.len(), 3);
        // Polls stop before the hole; the next one from `latest` gets it as its gap.
        let (latest, oldest, gap, served) = poll_view(&holed, 3, false);
        assert_eq!((latest, oldest, gap, served.len()), (5, Some(1), false, 2));
        let (latest, oldest, gap, served) = poll_view(&holed, 5, false);
        assert_eq!((latest, oldest, gap, served.len()), (12, Some(10), true, 3));
        let whole = ring(5..=10);
        let (latest, oldest, gap, served) = poll_view(&whole, 1, false);
        assert_eq!((latest, oldest, gap, served.len()), (10, Some(5), true, 6));
        let (latest, _, gap, served) = poll_view(&whole, 20, false);
        assert_eq!((latest, gap, served.len()), (10, false, 0));
    }

    #[test]
    fn a_poll_answer_is_capped_in_bytes_but_carries_at_least_one_message() {
        let r = ring(1..=100);
        let all: Vec<&Round> = r.iter().collect();
        let one = r[0].json.len() + 1;
        let (served, more) = capped(all.clone(), 10 * one, 0);
        assert_eq!((served.len(), more), (10, true));
        let (served, more) = capped(all.clone(), 1000 * one, 0);
        assert_eq!((served.len(), more), (100, false));
        let stubs: Vec<Round> = (1..=100).map(|s| Round::stub(Epoch(1), s, s)).collect();
        let (served, _) = capped(stubs.iter().collect(), 10 * 65, 64);
        assert_eq!(served.len(), 10, "a stub counts as its JSON to come");
        let (served, more) = capped(all, 1, 0);
        assert_eq!(
            (served.len(), more),
            (1, true),
            "a message larger than the cap"
        );
    }

    #[test]
    fn round_encodings_agree() {
        let r = Round::build(1024, false, Epoch(0xab), 3, 77);
        // ws: 4-byte header for 1024 B, then the binary payload.
        assert_eq!(r.ws.len(), 1028);
        assert_eq!(payload::decode(&r.ws[4..]), Some((3, 77)));
        assert_eq!(payload::decode(&r.raw[4..]), Some((3, 77)));
        assert_eq!(
            payload::decode_text(std::str::from_utf8(&r.json).unwrap()),
            Some((3, 77))
        );
        assert!(r
            .sse
            .starts_with(b"id: 3@00000000000000ab\ndata: {\"seq\":3,"));
        assert!(r.sse.ends_with(b"\n\n"));
    }

    #[test]
    fn gap_markers_match_the_resume_ones() {
        let g = gap_round(3, 7);
        assert_eq!(&g.sse[..], b"event: gap\ndata: {\"from\":3,\"to\":7}\n\n");
        assert_eq!(&g.json[..], b"{\"from\":3,\"to\":7}");
        assert_eq!(g.seq, 7);
        assert_eq!(gap_marker(Transport::Sse, (3, 7)), g.sse.to_vec());
        assert_eq!(gap_marker(Transport::Websocket, (3, 7)), g.ws.to_vec());
    }

    #[test]
    fn snapshot_delivery_sends_the_latest_unless_the_client_has_it() {
        let r = ring(3..=5);
        assert_eq!(snapshot_replay(&r, None).0[0].seq, 5);
        assert_eq!(snapshot_replay(&r, Some(2)).0[0].seq, 5);
        assert!(snapshot_replay(&r, Some(5)).0.is_empty());
    }
}
