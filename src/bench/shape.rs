//! Pure: which of the seed's slow-client shapes a foreign hub showed in a C run (slow
//! clients among healthy ones), read from what the healthy clients received per round
//! and from the hub's own memory and fds (sys::procwatch).
//! C1 (no write deadline: the hub stops and healthy clients wait until the slow ones are
//! gone), C2 (a deadline: gaps of about the deadline times the slow clients sharing a
//! writer, then recovery, again and again), C3 (bounded per-client queues: slow clients
//! dropped or removed, memory flat, the others never wait), or unbounded buffering (the
//! others never wait either, but the hub's memory grows with what the slow clients cannot
//! take: the hidden cost). Latency alone never tells C3 from unbounded buffering: without
//! the hub's memory the verdict says so. Each verdict names its evidence id.
use super::wire::RoundStat;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeVerdict {
    /// `C1`, `C2`, `C3`, `unbounded` (buffering without bound) or `undetermined` (C3 or
    /// unbounded: the hub's memory was not measured, or too little was sent to tell).
    pub shape: String,
    pub verdict: String,
    pub evidence: String,
}

/// What the hub's own process showed over the publishing window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HubMemory {
    pub window_s: f64,
    pub rss_start_mb: f64,
    pub rss_end_mb: f64,
    pub growth_mb_per_s: f64,
    /// Open fds at the start minus at the time bound, less the healthy clients the hub
    /// closed: the slow clients it removed.
    pub slow_removed: u64,
}

/// The hub's memory, or why it was not read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Memory<'a> {
    Seen(HubMemory),
    Unseen(&'a str),
}

/// Growth smaller than this over the window is a runtime's own movement (heap, GC).
const NOISE_MB: f64 = 4.0;
/// What the kernel may hold between a hub and a client that never reads: the hub's send
/// buffer autotunes up to tcp_wmem's max (4 MB by default; on loopback's 64 KB MSS it
/// gets there fast), outside the hub's RSS.
const KERNEL_PER_CLIENT_MB: f64 = 4.0;
/// Growing: at least this share of one copy of every message (the seed's unbounded
/// queue held a copy per slow client: +1 MB/s each at 1 MB/s sent).
const HELD_SHARE: f64 = 0.5;

/// A round is held up when its last healthy client waited at least this long (ms), or
/// a live healthy client never got it: five periods, and never under 500 ms (a loaded
/// 2-core host's scheduling noise stays far below it).
pub fn stall_threshold_ms(rate: f64) -> f64 {
    (5000.0 / rate).max(500.0)
}

/// The shape of a C run; None without slow clients or without a received round.
/// `size` is the payload's bytes (what each slow client was sent per round).
pub fn classify(
    rounds: &[RoundStat],
    rate: f64,
    slow: u64,
    size: u64,
    mem: Memory,
) -> Option<ShapeVerdict> {
    if slow == 0 || rounds.iter().all(|r| r.received == 0) {
        return None;
    }
    let thr = stall_threshold_ms(rate);
    let held = |r: &RoundStat| r.missing_live > 0 || r.received == 0 || r.last_ms >= thr;
    let Some(k) = rounds.iter().position(held) else {
        let worst = rounds.iter().map(|r| r.last_ms).fold(0.0, f64::max);
        let healthy =
            format!("the healthy clients' slowest round took {worst:.0} ms (under {thr:.0} ms)");
        return Some(unheld(slow, rate, size, mem, &healthy));
    };
    let waited_s = rounds.iter().map(|r| r.last_ms).fold(0.0, f64::max) / 1000.0;
    // Recovered: some round after the first held one reached everyone in time.
    let recovered = rounds[k..].iter().any(|r| !held(r));
    if !recovered {
        return Some(ShapeVerdict {
            shape: "C1".into(),
            verdict: format!(
                "hub stopped at round {}: healthy clients waited {waited_s:.1} s (C1 shape: no write deadline)",
                k + 1
            ),
            evidence: "scenario-c1".into(),
        });
    }
    // Gaps: the extra wait of each held round's last client over one period.
    let period_ms = 1000.0 / rate;
    let mut gaps: Vec<f64> = rounds[k..]
        .iter()
        .filter(|r| held(r) && r.received > 0)
        .map(|r| (r.last_ms - period_ms).max(0.0) / 1000.0)
        .collect();
    gaps.sort_by(f64::total_cmp);
    let d = gaps.get(gaps.len() / 2).copied().unwrap_or(waited_s);
    Some(ShapeVerdict {
        shape: "C2".into(),
        verdict: format!(
            "hub gaps of ~{d:.1} s every round (C2 shape: a deadline of {d:.1} s, shared by {slow} slow clients); the first at round {}, the longest wait {waited_s:.1} s",
            k + 1
        ),
        evidence: "scenario-c2".into(),
    })
}

/// Healthy clients never waited: C3 or unbounded buffering, told apart by the hub's
/// memory and removals only.
fn unheld(slow: u64, rate: f64, size: u64, mem: Memory, healthy: &str) -> ShapeVerdict {
    let v = |shape: &str, verdict: String, evidence: &str| ShapeVerdict {
        shape: shape.into(),
        verdict,
        evidence: evidence.into(),
    };
    let m = match mem {
        Memory::Unseen(why) => {
            return v(
                "undetermined",
                format!("{healthy}, but without the hub's memory this cannot be told apart from unbounded buffering (C3 needs slow clients dropped or removed and memory flat): {why}"),
                "queue-per-client",
            )
        }
        Memory::Seen(m) => m,
    };
    // What the slow clients were sent over the window (MB/s and MB).
    let offered = slow as f64 * rate * size as f64 / 1e6;
    let sent = offered * m.window_s;
    let grown = m.growth_mb_per_s * m.window_s;
    let memory = format!(
        "hub RSS {:.1} -> {:.1} MB over {:.0} s",
        m.rss_start_mb, m.rss_end_mb, m.window_s
    );
    // Removal is the bound showing itself: the slow clients' buffers went with them.
    if m.slow_removed * 2 >= slow {
        return v(
            "C3",
            format!("slow clients invisible (C3 shape): the hub removed {} of {slow} slow clients ({memory}); {healthy}", m.slow_removed.min(slow)),
            "scenario-c3",
        );
    }
    // Kept: at least one copy of each message they could not take (a hub that shares
    // one buffer among its clients keeps one; the seed's per-client copies kept all).
    let per_message = rate * size as f64 / 1e6;
    if grown >= NOISE_MB && m.growth_mb_per_s >= HELD_SHARE * per_message {
        return v(
            "unbounded",
            format!(
                "unbounded buffering: the hub's memory grew {:.1} MB/s (~{:.2} MB/s per slow client; {memory}) and it removed none of its {slow} slow clients, while {healthy}: the hidden cost. Bound each client's queue and drop or close a client that fills it",
                m.growth_mb_per_s,
                m.growth_mb_per_s / slow as f64,
            ),
            "queue-per-client",
        );
    }
    let kernel = slow as f64 * KERNEL_PER_CLIENT_MB;
    if sent >= kernel + 2.0 * NOISE_MB {
        return v(
            "C3",
            format!("slow clients invisible (C3 shape): the hub kept none of the {sent:.0} MB sent to {slow} slow clients ({memory}), so it drops what they cannot take; {healthy}"),
            "scenario-c3",
        );
    }
    v(
        "undetermined",
        format!("{healthy}, and the hub's memory stayed flat ({memory}), but its {slow} slow clients were sent only {sent:.1} MB, which socket buffers can hold, and none was removed: this cannot be told apart from unbounded buffering. Send them more (at least {:.0} MB: --rounds, --size or --slow)", kernel + 2.0 * NOISE_MB),
        "queue-per-client",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(last_ms: f64, missing: u64) -> RoundStat {
        RoundStat {
            received: 10 - missing,
            first_ms: 1.0,
            last_ms,
            missing_removed: 0,
            missing_live: missing,
        }
    }

    #[test]
    fn the_three_shapes() {
        let ok: Vec<_> = (0..20).map(|_| r(5.0, 0)).collect();
        let flat = HubMemory {
            window_s: 20.0,
            rss_start_mb: 60.0,
            rss_end_mb: 60.5,
            growth_mb_per_s: 0.02,
            slow_removed: 10,
        };
        let v = classify(&ok, 5.0, 10, 1024, Memory::Seen(flat)).unwrap();
        assert_eq!(
            (v.shape.as_str(), v.evidence.as_str()),
            ("C3", "scenario-c3")
        );
        assert!(v.verdict.starts_with("slow clients invisible (C3 shape)"));

        let mut stop = ok.clone();
        for (i, x) in stop.iter_mut().enumerate().skip(7) {
            *x = r(9000.0 - i as f64 * 200.0, 0);
        }
        let v = classify(&stop, 5.0, 10, 1024, Memory::Unseen("x")).unwrap();
        assert_eq!(v.shape, "C1");
        assert_eq!(
            v.verdict,
            "hub stopped at round 8: healthy clients waited 7.6 s (C1 shape: no write deadline)"
        );

        let gaps: Vec<_> = (0..20)
            .map(|i| if i % 4 == 1 { r(2200.0, 0) } else { r(5.0, 0) })
            .collect();
        let v = classify(&gaps, 5.0, 10, 1024, Memory::Unseen("x")).unwrap();
        assert_eq!(v.shape, "C2");
        assert!(v.verdict.starts_with("hub gaps of ~2.0 s every round (C2 shape: a deadline of 2.0 s, shared by 10 slow clients)"), "{}", v.verdict);

        assert_eq!(classify(&ok, 5.0, 0, 1024, Memory::Unseen("x")), None);
        assert_eq!(
            classify(&[r(0.0, 10)], 5.0, 3, 1024, Memory::Unseen("x")).map(|v| v.shape),
            None
        );
    }

    /// Healthy clients fine in all four: only the hub's memory and removals differ.
    #[test]
    fn c3_needs_the_hubs_memory() {
        let ok: Vec<_> = (0..200).map(|_| r(5.0, 0)).collect();
        // 10 slow clients x 50 rounds/s x 16 KB = 8.2 MB/s sent to them.
        let at = |growth: f64, removed: u64, window_s: f64| {
            Memory::Seen(HubMemory {
                window_s,
                rss_start_mb: 60.7,
                rss_end_mb: 60.7 + growth * window_s,
                growth_mb_per_s: growth,
                slow_removed: removed,
            })
        };
        // The ws README's broadcast: everything the slow clients could not take is kept.
        let v = classify(&ok, 50.0, 10, 16384, at(7.5, 0, 4.0)).unwrap();
        assert_eq!(v.shape, "unbounded", "{}", v.verdict);
        assert_eq!(v.evidence, "queue-per-client");
        assert!(
            v.verdict.starts_with(
                "unbounded buffering: the hub's memory grew 7.5 MB/s (~0.75 MB/s per slow client;"
            ),
            "{}",
            v.verdict
        );
        assert!(
            v.verdict.contains("hub RSS 60.7 -> 90.7 MB over 4 s"),
            "{}",
            v.verdict
        );
        // A hub sharing one buffer among clients keeps one copy: still unbounded.
        let v = classify(&ok, 50.0, 10, 16384, at(2.6, 1, 5.0)).unwrap();
        assert_eq!(v.shape, "unbounded", "{}", v.verdict);
        // Removed with the heap growing under load: the bound shows, C3.
        let v = classify(&ok, 50.0, 10, 16384, at(2.5, 11, 5.0)).unwrap();
        assert_eq!(v.shape, "C3", "{}", v.verdict);
        // Bounded with terminate-on-overflow: removed, memory flat.
        let v = classify(&ok, 50.0, 10, 16384, at(0.1, 10, 4.0)).unwrap();
        assert_eq!(v.shape, "C3", "{}", v.verdict);
        assert!(
            v.verdict.contains("removed 10 of 10 slow clients"),
            "{}",
            v.verdict
        );
        // Kept nothing of 66 MB (beyond 10 x 4 MB of send buffers), removed nobody: drops.
        let v = classify(&ok, 50.0, 10, 16384, at(0.1, 0, 8.0)).unwrap();
        assert_eq!(v.shape, "C3");
        assert!(
            v.verdict.contains("drops what they cannot take"),
            "{}",
            v.verdict
        );
        // 40 rounds of 400 B fit in socket buffers: nothing to tell.
        let v = classify(&ok[..40], 20.0, 10, 400, at(0.0, 0, 2.0)).unwrap();
        assert_eq!(v.shape, "undetermined", "{}", v.verdict);
        assert!(
            v.verdict.contains("Send them more (at least 48 MB"),
            "{}",
            v.verdict
        );
        // 33 MB could all sit in 10 send buffers: not enough to call it dropping.
        let v = classify(&ok, 50.0, 10, 16384, at(0.1, 0, 4.0)).unwrap();
        assert_eq!(v.shape, "undetermined", "{}", v.verdict);
        // Never C3 on latency alone.
        let v = classify(&ok, 50.0, 10, 16384, Memory::Unseen("no --pid")).unwrap();
        assert_eq!(v.shape, "undetermined");
        assert!(v
            .verdict
            .contains("cannot be told apart from unbounded buffering"));
        assert!(v.verdict.ends_with(": no --pid"), "{}", v.verdict);
        // A small growth is noise, whatever its share.
        let v = classify(&ok, 50.0, 1, 100, at(0.5, 0, 4.0)).unwrap();
        assert_eq!(v.shape, "undetermined", "{}", v.verdict);
    }
}
