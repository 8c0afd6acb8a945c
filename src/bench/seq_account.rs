//! Per-client delivery accounting from seq numbers (evidence `loss-dup-order`): pure
//! functions over what one client received, so every verdict is unit-tested. Shared by
//! `verify delivery` and `bench cluster` (which adds its view across clients and nodes).
use serde::Serialize;
use std::collections::BTreeSet;

/// What one client saw, in arrival order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// Seq of every message, in arrival order (duplicates kept).
    pub seqs: Vec<u64>,
    /// Gap markers: inclusive ranges the server said it could not deliver.
    pub gaps: Vec<(u64, u64)>,
    /// The first seq the client expected (1 for a fresh client).
    pub first_expected: u64,
    /// The last seq the server had published when the client stopped (the span's end).
    pub last_published: u64,
    /// Reset markers received: the server's epoch changed (it restarted) or it no longer
    /// held the client's position; seqs after one belong to the new epoch.
    pub resets: u64,
}

/// The counts of one client, or summed over clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub received: u64,
    /// Span − unique: messages of the span never received.
    pub lost: u64,
    /// Lost and not covered by a gap marker: the loss nobody was told about.
    pub lost_silently: u64,
    /// Received more than once.
    pub duplicated: u64,
    /// Arrived with a seq below one already seen.
    pub out_of_order: u64,
    /// Messages of the span covered by gap markers.
    pub gaps: u64,
    /// The highest seq received (summed counts keep the highest): against what was
    /// published it shows a seq the server invented or rewrote ([`stream_invalid`]).
    #[serde(skip)]
    pub highest: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        // Saturating: a server's seq near u64::MAX makes a client's lost astronomical.
        self.received = self.received.saturating_add(o.received);
        self.lost = self.lost.saturating_add(o.lost);
        self.lost_silently = self.lost_silently.saturating_add(o.lost_silently);
        self.duplicated = self.duplicated.saturating_add(o.duplicated);
        self.out_of_order = self.out_of_order.saturating_add(o.out_of_order);
        self.gaps = self.gaps.saturating_add(o.gaps);
        self.highest = self.highest.max(o.highest);
    }
}

/// Why counts cannot describe what was published, if they cannot (issue 41 item 13): a
/// seq above the highest `published` was invented or rewritten by the server (a hub
/// writing `1000000 - seq` lost "0"); a stream where most seqs arrive below one already
/// received is not the publisher's order either (a hub writing `N - seq`). A replay that
/// lands after live messages (a resumed client catching up while the broadcast goes on)
/// is counted as out of order, not invalid: it is what verify delivery measures.
pub fn stream_invalid(c: &Counts, published: u64) -> Option<String> {
    if c.highest > published {
        return Some(format!(
            "invalid: a client received seq {} but only {published} were published: the server rewrote or invented seqs",
            c.highest
        ));
    }
    (c.out_of_order * 2 > c.received.max(1)).then(|| {
        format!(
            "invalid: {} of {} message(s) arrived with a seq below one already received: the server reordered or rewrote seqs",
            c.out_of_order, c.received
        )
    })
}

/// Count one client's trace. The span is `first_expected ..= last_published`; seqs
/// outside it are counted as received but not as part of the span.
pub fn count(t: &Trace) -> Counts {
    let (lo, hi) = (t.first_expected.max(1), t.last_published);
    let mut seen = BTreeSet::new();
    let mut c = Counts {
        received: t.seqs.len() as u64,
        ..Counts::default()
    };
    let mut max_seen = 0u64;
    for &s in &t.seqs {
        if !seen.insert(s) {
            c.duplicated += 1;
        } else if s < max_seen {
            c.out_of_order += 1;
        }
        max_seen = max_seen.max(s);
    }
    c.highest = max_seen;
    if hi < lo {
        return c;
    }
    // Counted from the ranges, never seq by seq: a server's seq near u64::MAX makes the
    // span astronomically long, and a loop over it would never end (issue 41).
    let gaps = merged(&t.gaps, lo, hi);
    let covered = |s: u64| gaps.iter().any(|&(a, b)| a <= s && s <= b);
    let got: Vec<u64> = seen.range(lo..=hi).copied().collect();
    let got_covered = got.iter().filter(|&&s| covered(s)).count() as u64;
    c.gaps = gaps.iter().map(|&(a, b)| b - a + 1).sum();
    c.lost = (hi - lo).saturating_add(1) - got.len() as u64;
    c.lost_silently = c.lost - (c.gaps - got_covered);
    c
}

/// Gap ranges clipped to `lo..=hi`, sorted and merged (no seq counted twice).
fn merged(gaps: &[(u64, u64)], lo: u64, hi: u64) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = gaps
        .iter()
        .map(|&(a, b)| (a.max(lo), b.min(hi)))
        .filter(|&(a, b)| a <= b)
        .collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// A client across a server restart: `before` in the old epoch, whose span ends at `a_end`
/// (the last seq the old instance was seen to publish, over every client of the run), and
/// `after` in the new one, whose span starts at 1 (a new epoch owes its client every seq:
/// the seqs it had kept are the old epoch's). `told`: the client got a reset marker (or a
/// session reset); the old epoch's seqs it never got are then announced as lost, not
/// silent. Without it, the new epoch's seqs the server skipped are lost silently.
pub fn count_restart(before: &Trace, after: &Trace, a_end: u64, told: bool) -> Counts {
    let mut b = before.clone();
    b.last_published = a_end.max(before.seqs.iter().copied().max().unwrap_or(0));
    let got = before.seqs.iter().copied().max().unwrap_or(0);
    if told && got < b.last_published {
        b.gaps.push((got + 1, b.last_published));
    }
    // The new epoch from 1 up to what its stream was owed: the highest seq received, or
    // more when it ended early (the caller's `last_published`).
    let a = Trace {
        first_expected: 1,
        last_published: after
            .seqs
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(after.last_published),
        ..after.clone()
    };
    let mut c = count(&b);
    c.add(&count(&a));
    c
}

/// The control without seq numbers: a client that only counts messages cannot tell what
/// it missed, so everything lost is lost silently and it sees no gap.
pub fn count_without_seq(t: &Trace) -> Counts {
    let with = count(&Trace {
        gaps: Vec::new(),
        ..t.clone()
    });
    Counts {
        lost_silently: with.lost,
        gaps: 0,
        ..with
    }
}

/// p50 and max of a set of durations in ms (0 for none).
pub fn p50_max(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    (s[(s.len() - 1) / 2], s[s.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(seqs: &[u64], gaps: &[(u64, u64)], hi: u64) -> Trace {
        Trace {
            seqs: seqs.to_vec(),
            gaps: gaps.to_vec(),
            first_expected: 1,
            last_published: hi,
            resets: 0,
        }
    }

    #[test]
    fn complete_stream_has_no_loss() {
        let c = count(&trace(&[1, 2, 3, 4], &[], 4));
        assert_eq!(c.received, 4);
        assert_eq!(
            (c.lost, c.lost_silently, c.duplicated, c.out_of_order),
            (0, 0, 0, 0)
        );
    }

    #[test]
    fn loss_inside_a_gap_marker_is_not_silent() {
        let c = count(&trace(&[1, 2, 6, 7], &[(3, 5)], 7));
        assert_eq!((c.lost, c.lost_silently, c.gaps), (3, 0, 3));
        let c = count(&trace(&[1, 2, 6, 7], &[(3, 4)], 7));
        assert_eq!((c.lost, c.lost_silently, c.gaps), (3, 1, 2));
    }

    #[test]
    fn duplicates_and_reordering_are_counted_once_each() {
        let c = count(&trace(&[1, 2, 3, 2, 3, 5, 4], &[], 5));
        assert_eq!(c.received, 7);
        assert_eq!(c.duplicated, 2);
        assert_eq!(c.out_of_order, 1); // 4 after 5; the duplicates are not reorders
        assert_eq!(c.lost, 0);
    }

    #[test]
    fn tail_not_received_is_lost_and_span_respects_first_expected() {
        let c = count(&trace(&[1, 2], &[], 4));
        assert_eq!((c.lost, c.lost_silently), (2, 2));
        let t = Trace {
            seqs: vec![10, 11],
            gaps: vec![],
            first_expected: 10,
            last_published: 11,
            resets: 0,
        };
        assert_eq!(count(&t).lost, 0);
        // An empty span (nothing published yet) counts nothing as lost.
        assert_eq!(count(&trace(&[], &[], 0)).lost, 0);
    }

    #[test]
    fn a_restart_is_counted_per_epoch_and_a_reset_marks_the_old_epochs_rest() {
        // Old epoch: 1..=5 received, the old server was seen up to 7.
        let before = trace(&[1, 2, 3, 4, 5], &[], 0);
        // New epoch, resumed right: the ring from 1 after the reset marker.
        let after = Trace {
            resets: 1,
            ..trace(&[1, 2, 3, 4], &[], 0)
        };
        let c = count_restart(&before, &after, 7, true);
        assert_eq!((c.received, c.lost, c.lost_silently, c.gaps), (9, 2, 0, 2));
        // Not told: the old epoch's tail is lost silently.
        let c = count_restart(&before, &after, 7, false);
        assert_eq!((c.lost, c.lost_silently), (2, 2));
        // The old bug: the new server resumed "after 5", its 1..=5 skipped without a word.
        let skipped = trace(&[6, 7, 8], &[], 0);
        let c = count_restart(&before, &skipped, 5, false);
        assert_eq!((c.lost, c.lost_silently, c.duplicated), (5, 5, 0));
        // The new ring no longer starting at 1: its gap marker covers the rest.
        let trimmed = trace(&[4, 5], &[(1, 3)], 0);
        let c = count_restart(&before, &trimmed, 5, true);
        assert_eq!((c.lost, c.lost_silently, c.gaps), (3, 0, 3));
        // The new epoch's stream ended early, at 4 of the 6 published: 5 and 6 are lost.
        let ended = Trace {
            resets: 1,
            ..trace(&[1, 2, 3, 4], &[], 6)
        };
        let c = count_restart(&before, &ended, 7, true);
        assert_eq!((c.received, c.lost, c.lost_silently), (9, 4, 2));
    }

    /// A seq near u64::MAX (a hostile server) is counted at once, not seq by seq; and
    /// overlapping gap markers count each seq once.
    #[test]
    fn an_astronomical_span_is_counted_without_walking_it() {
        let c = count(&trace(&[1, 2, u64::MAX], &[(5, u64::MAX - 1)], u64::MAX));
        assert_eq!(c.received, 3);
        assert_eq!(c.lost, u64::MAX - 3);
        assert_eq!(c.gaps, u64::MAX - 5);
        assert_eq!(c.lost_silently, 2); // 3 and 4
        let c = count(&trace(&[1, 6], &[(2, 4), (3, 5), (5, 5)], 6));
        assert_eq!((c.lost, c.lost_silently, c.gaps), (4, 0, 4));
    }

    #[test]
    fn a_rewritten_or_invented_seq_makes_the_stream_invalid() {
        // An honest stream of 31 published.
        let ok = count(&trace(&(1..=31).collect::<Vec<_>>(), &[], 31));
        assert_eq!(stream_invalid(&ok, 31), None);
        // `1000000 - seq`: every seq above what was published (and descending).
        let seqs: Vec<u64> = (1..=31).map(|s| 1_000_000 - s).collect();
        let hi = *seqs.iter().max().unwrap();
        let rewritten = count(&trace(&seqs, &[], hi));
        let why = stream_invalid(&rewritten, 31).unwrap();
        assert!(why.contains("seq 999999 but only 31"), "{why}");
        // Phantoms among real ones: the highest gives them away, summed over clients too.
        let mut sum = ok;
        sum.add(&count(&trace(&[1, 2, 4981, 3], &[], 4981)));
        assert!(stream_invalid(&sum, 31).unwrap().contains("4981"));
        // Within range but mostly against the publisher's order (`N - seq`).
        let reversed = count(&trace(&[4, 3, 2, 1], &[], 4));
        assert!(stream_invalid(&reversed, 4)
            .unwrap()
            .contains("3 of 4 message(s)"));
        // A replay landing after live messages is out of order, measured, not invalid.
        let replay = count(&trace(&[1, 2, 5, 6, 3, 4], &[], 6));
        assert_eq!(replay.out_of_order, 2);
        assert_eq!(stream_invalid(&replay, 6), None);
        // Duplicates are not a rewrite.
        let dup = count(&trace(&[1, 2, 2, 3], &[], 3));
        assert_eq!(stream_invalid(&dup, 3), None);
    }

    #[test]
    fn control_without_seq_makes_every_loss_silent() {
        let c = count_without_seq(&trace(&[1, 2, 6, 7], &[(3, 5)], 7));
        assert_eq!((c.lost, c.lost_silently, c.gaps), (3, 3, 0));
    }

    #[test]
    fn sums_and_percentiles() {
        let mut a = count(&trace(&[1, 3], &[], 3));
        a.add(&count(&trace(&[1, 1], &[], 2)));
        assert_eq!((a.received, a.lost, a.duplicated), (4, 2, 1));
        assert_eq!(p50_max(&[]), (0.0, 0.0));
        assert_eq!(p50_max(&[5.0, 1.0, 3.0]), (3.0, 5.0));
        assert_eq!(p50_max(&[2.0, 1.0]), (1.0, 2.0));
    }
}
