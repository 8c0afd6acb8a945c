//! Pure accounting over what every client received (evidence `loss-dup-order`): per-client
//! seq → lost, lost silently, duplicates (and which node sent the second copy), one order
//! hash per client, latency from the scheduled time. Counting per client is
//! `bench::seq_account::count`; this adds the cluster's view across clients and nodes.
use crate::bench::seq_account::{self, Counts, Trace};
use crate::bench::stats::{self, Quantiles};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// One message as a client received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub seq: u64,
    /// The publisher's scheduled send time (from the payload), ns since the epoch.
    pub sched_ns: u64,
    pub recv_ns: u64,
    /// Index of the node that delivered it.
    pub node: usize,
}

/// One client's whole run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientLog {
    /// The node it connected to first.
    pub home: usize,
    pub arrivals: Vec<Arrival>,
    /// Gap markers received: inclusive seq ranges the cluster said it could not deliver.
    pub gaps: Vec<(u64, u64)>,
    pub reconnects: u64,
    /// Reset markers received (the cluster's epoch changed: its seqs start over), and
    /// where the first came: arrivals and gaps before those indexes are the old epoch's.
    pub resets: u64,
    pub reset_at: Option<(usize, usize)>,
    /// Connected at the start (before publishing began).
    pub connected: bool,
    pub error: Option<String>,
}

/// The cluster's counts over every client.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub clients: u64,
    /// The span counted: first and last seq.
    pub span: (u64, u64),
    /// Highest seq any client received (0: none).
    pub max_seen: u64,
    pub counts: Counts,
    /// Span (lo..=hi) length × clients.
    pub expected: u64,
    /// Distinct seqs of the span received, over clients.
    pub unique_in_span: u64,
    /// Received with a seq outside the span (another publisher, an earlier run).
    pub outside_span: u64,
    pub duplicates_by_node: BTreeMap<String, u64>,
    /// Messages received (duplicates included), by the node that delivered them.
    pub received_by_node: BTreeMap<String, u64>,
    pub clients_with_duplicates: u64,
    pub order_hash_agree: Option<bool>,
    pub distinct_orders: u64,
    pub reconnects: u64,
    /// Clients told of an epoch reset (a reset marker).
    pub told: u64,
    /// Arrivals whose seq a client already had with another scheduled time: one seq
    /// carrying two rounds (a seq reused, not a duplicate).
    pub seq_conflicts: u64,
    pub latency: Quantiles,
}

/// The span of seqs the run published: from the lowest seq any client saw to the highest
/// seen, extended to `published` messages when the tail reached nobody. Seqs are global
/// for the cluster, so a user's long-lived Redis may start above 1.
pub fn span(clients: &[ClientLog], published: u64) -> (u64, u64) {
    let seqs = clients
        .iter()
        .flat_map(|c| c.arrivals.iter().map(|a| a.seq));
    let (lo, hi) = seqs.fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s), hi.max(s)));
    if lo == u64::MAX {
        return (1, published);
    }
    let by_count = lo.saturating_add(published).saturating_sub(1);
    (lo, hi.max(by_count))
}

/// A run across an epoch reset, counted as one history: each told client's arrivals (and
/// gap markers) after its first reset marker belong to the new epoch and are shifted past
/// the old epoch's highest seq (over the told clients), and the old epoch's seqs it never
/// got are announced (the reset said so). A client never told keeps its seqs as they
/// came: the new epoch's reuse of old seqs then shows as silent loss and conflicts.
/// Returns the joined logs and the shift.
pub fn join_epochs(clients: &[ClientLog]) -> (Vec<ClientLog>, u64) {
    let old_max = |c: &ClientLog| {
        let n = c.reset_at.map_or(c.arrivals.len(), |r| r.0);
        c.arrivals[..n].iter().map(|a| a.seq).max()
    };
    let told = clients.iter().filter(|c| c.reset_at.is_some());
    let shift = match told.clone().filter_map(old_max).max() {
        Some(m) => m,
        None => clients.iter().filter_map(old_max).max().unwrap_or(0),
    };
    let joined = clients
        .iter()
        .map(|c| {
            let Some((at, g)) = c.reset_at else {
                return c.clone();
            };
            let mut j = c.clone();
            for a in &mut j.arrivals[at..] {
                a.seq += shift;
            }
            for gap in &mut j.gaps[g..] {
                *gap = (gap.0 + shift, gap.1 + shift);
            }
            let got = old_max(c).unwrap_or(0);
            if got < shift {
                j.gaps.push((got + 1, shift));
            }
            j
        })
        .collect();
    (joined, shift)
}

/// FNV-1a over the seqs: cheap, stable across runs and platforms.
pub fn order_hash(seqs: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for s in seqs {
        for b in s.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// First copies in arrival order.
fn first_copies(c: &ClientLog) -> Vec<u64> {
    let mut seen = HashSet::new();
    c.arrivals
        .iter()
        .filter(|a| seen.insert(a.seq))
        .map(|a| a.seq)
        .collect()
}

/// Do all clients agree on the order of the messages they all received? (agree, number of
/// distinct orders). Restricting to the common set keeps a loss from reading as disorder.
pub fn order_agreement(clients: &[ClientLog]) -> (Option<bool>, u64) {
    let firsts: Vec<Vec<u64>> = clients.iter().map(first_copies).collect();
    let mut common: Option<BTreeSet<u64>> = None;
    for f in &firsts {
        let s: BTreeSet<u64> = f.iter().copied().collect();
        common = Some(match common {
            None => s,
            Some(c) => c.intersection(&s).copied().collect(),
        });
    }
    let common = common.unwrap_or_default();
    let hashes: BTreeSet<u64> = firsts
        .iter()
        .map(|f| {
            let v: Vec<u64> = f.iter().copied().filter(|s| common.contains(s)).collect();
            order_hash(&v)
        })
        .collect();
    let agree = (clients.len() >= 2).then_some(hashes.len() <= 1);
    (agree, hashes.len() as u64)
}

/// Second (and later) copies, by the node that delivered them.
pub fn duplicates_by_node(c: &ClientLog, names: &[String], out: &mut BTreeMap<String, u64>) {
    let mut seen = HashSet::new();
    for a in &c.arrivals {
        if !seen.insert(a.seq) {
            let name = names.get(a.node).cloned().unwrap_or_else(|| "?".into());
            *out.entry(name).or_default() += 1;
        }
    }
}

/// Count everything over `clients` for the span `lo..=hi`; `names` are the node names.
pub fn tally(clients: &[ClientLog], (lo, hi): (u64, u64), names: &[String]) -> Tally {
    let mut t = Tally {
        clients: clients.len() as u64,
        span: (lo, hi),
        max_seen: clients
            .iter()
            .flat_map(|c| c.arrivals.iter().map(|a| a.seq))
            .max()
            .unwrap_or(0),
        ..Tally::default()
    };
    let mut hist = stats::new_hist();
    for c in clients {
        let seqs: Vec<u64> = c.arrivals.iter().map(|a| a.seq).collect();
        let counts = seq_account::count(&Trace {
            seqs,
            gaps: c.gaps.clone(),
            first_expected: lo,
            last_published: hi,
            resets: 0,
        });
        t.counts.add(&counts);
        if counts.duplicated > 0 {
            t.clients_with_duplicates += 1;
        }
        let firsts = first_copies(c);
        let inside = firsts.iter().filter(|&&s| s >= lo && s <= hi).count() as u64;
        t.unique_in_span += inside;
        t.outside_span += firsts.len() as u64 - inside;
        duplicates_by_node(c, names, &mut t.duplicates_by_node);
        for a in &c.arrivals {
            let name = names.get(a.node).cloned().unwrap_or_else(|| "?".into());
            *t.received_by_node.entry(name).or_default() += 1;
        }
        t.reconnects += c.reconnects;
        t.told += u64::from(c.resets > 0);
        let mut sched: std::collections::HashMap<u64, u64> = Default::default();
        for a in &c.arrivals {
            if *sched.entry(a.seq).or_insert(a.sched_ns) != a.sched_ns {
                t.seq_conflicts += 1;
            }
        }
        let mut seen = HashSet::new();
        for a in c.arrivals.iter().filter(|a| seen.insert(a.seq)) {
            let us = a.recv_ns.saturating_sub(a.sched_ns) / 1000;
            let _ = hist.record(us.clamp(1, 3_600_000_000));
        }
    }
    t.expected = if hi >= lo {
        (hi - lo + 1) * t.clients
    } else {
        0
    };
    (t.order_hash_agree, t.distinct_orders) = order_agreement(clients);
    t.latency = stats::quantiles(&hist);
    t
}

/// Where the identity fails: every message of the span is received once or lost, and every
/// received message is a first copy in the span, a duplicate, or outside the span.
pub fn identity_gap(t: &Tally) -> Option<String> {
    let c = &t.counts;
    if t.unique_in_span + c.lost != t.expected {
        return Some(format!(
            "{} expected, {} received once + {} lost",
            t.expected, t.unique_in_span, c.lost
        ));
    }
    if t.unique_in_span + c.duplicated + t.outside_span != c.received {
        return Some(format!(
            "{} received, {} first copies + {} duplicates + {} outside the span",
            c.received, t.unique_in_span, c.duplicated, t.outside_span
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(node_seqs: &[(usize, u64)]) -> ClientLog {
        ClientLog {
            arrivals: node_seqs
                .iter()
                .map(|&(node, seq)| Arrival {
                    seq,
                    sched_ns: seq * 1_000_000,
                    recv_ns: seq * 1_000_000 + 2_000_000,
                    node,
                })
                .collect(),
            connected: true,
            ..Default::default()
        }
    }

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn one_path_counts_nothing_lost_or_doubled() {
        let c = vec![
            log(&[(0, 1), (0, 2), (0, 3)]),
            log(&[(1, 1), (1, 2), (1, 3)]),
        ];
        let t = tally(&c, span(&c, 3), &names());
        assert_eq!(
            (t.counts.received, t.counts.lost, t.counts.duplicated),
            (6, 0, 0)
        );
        assert_eq!(t.expected, 6);
        assert_eq!(t.order_hash_agree, Some(true));
        assert!(t.duplicates_by_node.is_empty());
        assert_eq!(identity_gap(&t), None);
        assert!((t.latency.p50_ms - 2.0).abs() < 0.01, "{:?}", t.latency);
        assert_eq!(t.latency.count, 6, "first copies only");
    }

    #[test]
    fn naive_duplicates_are_charged_to_the_node_that_sent_the_second_copy() {
        // Client on the publishing node a: local copy, then the copy back from Redis.
        let c = vec![
            log(&[(0, 1), (0, 1), (0, 2), (0, 2)]),
            log(&[(1, 1), (1, 2)]),
        ];
        let t = tally(&c, span(&c, 2), &names());
        assert_eq!(t.counts.duplicated, 2);
        assert_eq!(t.duplicates_by_node, BTreeMap::from([("a".to_string(), 2)]));
        assert_eq!(t.clients_with_duplicates, 1);
        assert_eq!(
            t.order_hash_agree,
            Some(true),
            "duplicates are not disorder"
        );
        assert_eq!(identity_gap(&t), None);
        assert_eq!(t.latency.count, 4);
    }

    #[test]
    fn loss_gaps_and_order_across_clients() {
        // Client 2 resumed on node a after its node died: a gap marker covers 3..=4.
        let mut moved = log(&[(1, 1), (1, 2), (0, 5), (0, 6)]);
        moved.gaps = vec![(3, 4)];
        moved.reconnects = 1;
        let c = vec![log(&[(0, 1), (0, 2), (0, 3), (0, 4), (0, 5)]), moved];
        let t = tally(&c, span(&c, 6), &names());
        assert_eq!(
            (t.counts.lost, t.counts.lost_silently, t.counts.gaps),
            (3, 1, 2)
        );
        assert_eq!(t.reconnects, 1);
        assert_eq!(t.order_hash_agree, Some(true), "losses are not disorder");
        assert_eq!(identity_gap(&t), None);
        let swapped = vec![log(&[(0, 1), (0, 2)]), log(&[(1, 2), (1, 1)])];
        let t = tally(&swapped, span(&swapped, 2), &names());
        assert_eq!((t.order_hash_agree, t.distinct_orders), (Some(false), 2));
        assert_eq!(order_agreement(&swapped[..1]).0, None);
    }

    #[test]
    fn span_starts_at_the_lowest_seq_and_covers_the_published_count() {
        let c = vec![log(&[(0, 1001), (0, 1002)])];
        assert_eq!(span(&c, 5), (1001, 1005));
        assert_eq!(span(&c, 1), (1001, 1002));
        assert_eq!(span(&[], 4), (1, 4));
        let t = tally(&c, (1001, 1005), &names());
        assert_eq!((t.counts.lost, t.expected), (3, 5));
        let t = tally(&c, (1002, 1002), &names());
        assert_eq!(t.outside_span, 1);
        assert_eq!(identity_gap(&t), None);
        let broken = Tally { expected: 4, ..t };
        assert!(identity_gap(&broken).unwrap().contains("4 expected"));
    }

    #[test]
    fn an_epoch_reset_is_one_history_only_for_the_clients_told() {
        // Old epoch up to 5; the new one from 1 (another round under seq 1..).
        let new_round = |seq: u64| Arrival {
            seq,
            sched_ns: 9_000_000_000 + seq,
            recv_ns: 9_000_000_100 + seq,
            node: 1,
        };
        let mut told = log(&[(1, 1), (1, 2), (1, 3), (1, 4)]);
        told.reset_at = Some((4, 0));
        told.resets = 1;
        told.arrivals.extend((1..=3).map(new_round));
        let mut full = log(&[(1, 1), (1, 2), (1, 3), (1, 4), (1, 5)]);
        full.reset_at = Some((5, 0));
        full.resets = 1;
        full.arrivals.extend((1..=3).map(new_round));
        full.gaps = vec![];
        let (joined, shift) = join_epochs(&[told.clone(), full.clone()]);
        assert_eq!(shift, 5);
        assert_eq!(joined[0].gaps, vec![(5, 5)], "the old tail, announced");
        let t = tally(&joined, (1, 8), &names());
        assert_eq!((t.counts.lost, t.counts.lost_silently), (1, 0));
        assert_eq!((t.told, t.seq_conflicts), (2, 0));
        // The bug: no reset marker, the relay resumed "after 5" and skipped the new 1..=5.
        let mut untold = log(&[(1, 1), (1, 2), (1, 3), (1, 4), (1, 5)]);
        untold.arrivals.extend((6..=8).map(new_round));
        let (joined, shift) = join_epochs(&[untold]);
        assert_eq!(shift, 8);
        let t = tally(&joined, (1, 8 + 8), &names());
        assert_eq!((t.counts.lost_silently, t.told), (8, 0));
        // The publisher's clients: one seq, two rounds.
        let mut twice = log(&[(0, 1), (0, 2)]);
        twice.arrivals.extend((1..=2).map(new_round));
        let t = tally(&[twice], (1, 2), &names());
        assert_eq!(t.seq_conflicts, 2);
    }

    #[test]
    fn order_hash_is_order_sensitive() {
        assert_ne!(order_hash(&[1, 2]), order_hash(&[2, 1]));
        assert_eq!(order_hash(&[1, 2, 3]), order_hash(&[1, 2, 3]));
    }
}
