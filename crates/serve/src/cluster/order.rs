//! What a node's relay hears from Redis and the rules it must never get wrong, pure: the
//! channel's messages and Stream ids parsed, which rounds a hole is filled with, and
//! whether a heard round is delivered, skipped or starts a new epoch. The I/O is in
//! `store`.
use rtcheck_wire::epoch::Epoch;

/// The seq in a Stream id `SEQ-0`.
pub fn entry_seq(id: &str) -> Option<u64> {
    id.split('-').next()?.parse().ok()
}

/// A round from the channel: `SEQ TS NODE EPOCH` (no epoch: the receiver's, as written
/// before epochs or by a test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heard<'a> {
    pub seq: u64,
    pub ts: u64,
    pub node: &'a str,
    pub epoch: Option<Epoch>,
}

pub fn parse_message(m: &[u8]) -> Option<Heard<'_>> {
    let s = std::str::from_utf8(m).ok()?;
    let mut it = s.split(' ');
    let seq = it.next()?.parse().ok()?;
    let ts = it.next()?.parse().ok()?;
    let node = it.next()?;
    let epoch = it.next().map(Epoch::parse);
    Some(Heard {
        seq,
        ts,
        node,
        epoch,
    })
}

/// `gap FROM TO NODE EPOCH` from the channel: seqs a publisher reserved for unpublished
/// rounds (as a [`Heard`]: `seq` FROM, `ts` TO).
pub fn parse_unpublished(m: &[u8]) -> Option<Heard<'_>> {
    let s = std::str::from_utf8(m).ok()?.strip_prefix("gap ")?;
    let mut it = s.split(' ');
    let from: u64 = it.next()?.parse().ok()?;
    let to: u64 = it.next()?.parse().ok()?;
    let node = it.next()?;
    let epoch = it.next().map(Epoch::parse);
    (from <= to).then_some(Heard {
        seq: from,
        ts: to,
        node,
        epoch,
    })
}

/// What to hand the clients for seqs `from..=to` given what the Stream still holds
/// (`have`, ascending): each held round, and a gap marker for each missing run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Deliver(u64, u64),
    Gap(u64, u64),
}

pub fn plan_fill(from: u64, to: u64, have: &[(u64, u64)]) -> Vec<Step> {
    let mut out = Vec::new();
    let mut next = from;
    for &(seq, ts) in have.iter().filter(|(s, _)| (from..=to).contains(s)) {
        if seq < next {
            continue;
        }
        if seq > next {
            out.push(Step::Gap(next, seq - 1));
        }
        out.push(Step::Deliver(seq, ts));
        next = seq + 1;
    }
    if next <= to {
        out.push(Step::Gap(next, to));
    }
    out
}

/// What a relay does with a round it hears, given its epoch and the last seq it
/// delivered in it. Pure: the rules a relay must never get wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heed {
    /// Deliver it, after filling `from..seq` from the Stream when `from < seq`.
    Deliver { from: u64 },
    /// Already delivered (a catch-up and the channel overlap).
    Skip,
    /// Another epoch, or a different round under a seq already delivered: the seqs start
    /// over. Reset, then deliver from seq 1 of the epoch.
    Reset,
}

/// `known`: whether the node's ring holds round `seq` with the same `ts` (None: not held).
pub fn heed(ours: Epoch, last: u64, h: &Heard, known: Option<bool>) -> Heed {
    if h.epoch.is_some_and(|e| e != ours) {
        return Heed::Reset;
    }
    if last != 0 && h.seq <= last {
        // A seq going backwards is never "already delivered" unless it is the same round.
        return match known {
            Some(false) => Heed::Reset,
            _ => Heed::Skip,
        };
    }
    Heed::Deliver {
        from: if last == 0 { h.seq } else { last + 1 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_messages_and_stream_ids_parse() {
        let h = |seq, ts, epoch| Heard {
            seq,
            ts,
            node: "a",
            epoch,
        };
        assert_eq!(parse_message(b"7 123 a"), Some(h(7, 123, None)));
        assert_eq!(
            parse_message(b"7 123 a 00000000000000ab"),
            Some(h(7, 123, Some(Epoch(0xab))))
        );
        assert_eq!(parse_message(b"7 x a"), None);
        assert_eq!(parse_message(b"7 1"), None);
        assert_eq!(entry_seq("42-0"), Some(42));
        assert_eq!(entry_seq("x-0"), None);
        assert_eq!(parse_unpublished(b"gap 3 7 a"), Some(h(3, 7, None)));
        assert_eq!(
            parse_unpublished(b"gap 3 7 a 00000000000000ab"),
            Some(h(3, 7, Some(Epoch(0xab))))
        );
        assert_eq!(parse_unpublished(b"gap 7 3 a"), None);
        assert_eq!(parse_unpublished(b"3 7 a"), None);
        assert_eq!(parse_message(b"gap 3 7 a"), None);
    }

    #[test]
    fn a_new_epoch_or_a_seq_going_backwards_is_a_reset_never_already_delivered() {
        let (e, other) = (Epoch(1), Epoch(2));
        let h = |seq, epoch| Heard {
            seq,
            ts: seq * 10,
            node: "a",
            epoch,
        };
        // In order, or after a hole (filled first), or the first round a node hears.
        assert_eq!(heed(e, 4, &h(5, Some(e)), None), Heed::Deliver { from: 5 });
        assert_eq!(heed(e, 4, &h(9, None), None), Heed::Deliver { from: 5 });
        assert_eq!(heed(e, 0, &h(9, Some(e)), None), Heed::Deliver { from: 9 });
        // The same round again (catch-up and channel overlap): skipped.
        assert_eq!(heed(e, 9, &h(7, Some(e)), Some(true)), Heed::Skip);
        assert_eq!(heed(e, 9, &h(7, Some(e)), None), Heed::Skip);
        // Another epoch (Redis lost its counter; seq 3 of it is a new round): a reset.
        assert_eq!(heed(e, 200, &h(3, Some(other)), None), Heed::Reset);
        assert_eq!(heed(e, 2, &h(300, Some(other)), None), Heed::Reset);
        // A different round under a seq already delivered: a reset, not a skip.
        assert_eq!(heed(e, 200, &h(3, Some(e)), Some(false)), Heed::Reset);
    }

    #[test]
    fn fill_delivers_what_the_stream_holds_and_marks_the_rest() {
        use Step::*;
        assert_eq!(
            plan_fill(5, 9, &[(5, 50), (6, 60), (9, 90)]),
            vec![Deliver(5, 50), Deliver(6, 60), Gap(7, 8), Deliver(9, 90)]
        );
        assert_eq!(plan_fill(5, 9, &[]), vec![Gap(5, 9)]);
        assert_eq!(
            plan_fill(5, 9, &[(8, 80), (9, 90)]),
            vec![Gap(5, 7), Deliver(8, 80), Deliver(9, 90)]
        );
        assert_eq!(plan_fill(5, 9, &[(5, 50)]), vec![Deliver(5, 50), Gap(6, 9)]);
        assert_eq!(
            plan_fill(5, 6, &[(4, 40), (5, 50), (6, 60), (7, 70)]),
            vec![Deliver(5, 50), Deliver(6, 60)]
        );
    }
}
