//! Pure: which of the seed's slow-client shapes a foreign hub showed in a C run (slow
//! clients among healthy ones), read from what the healthy clients received per round.
//! C1 (no write deadline: the hub stops and healthy clients wait until the slow ones are
//! gone), C2 (a deadline: gaps of about the deadline times the slow clients sharing a
//! writer, then recovery, again and again), C3 (per-client queues: the slow clients are
//! invisible to the others). Each verdict names its evidence id (data/evidence.yaml).
use super::wire::RoundStat;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeVerdict {
    /// `C1`, `C2` or `C3`.
    pub shape: String,
    pub verdict: String,
    pub evidence: String,
}

/// A round is held up when its last healthy client waited at least this long (ms), or
/// a live healthy client never got it: five periods, and never under 500 ms (a loaded
/// 2-core host's scheduling noise stays far below it).
pub fn stall_threshold_ms(rate: f64) -> f64 {
    (5000.0 / rate).max(500.0)
}

/// The shape of a C run; None without slow clients or without a received round.
pub fn classify(rounds: &[RoundStat], rate: f64, slow: u64) -> Option<ShapeVerdict> {
    if slow == 0 || rounds.iter().all(|r| r.received == 0) {
        return None;
    }
    let thr = stall_threshold_ms(rate);
    let held = |r: &RoundStat| r.missing_live > 0 || r.received == 0 || r.last_ms >= thr;
    let Some(k) = rounds.iter().position(held) else {
        let worst = rounds.iter().map(|r| r.last_ms).fold(0.0, f64::max);
        return Some(ShapeVerdict {
            shape: "C3".into(),
            verdict: format!(
                "slow clients invisible (C3 shape): {slow} slow clients, and the healthy ones' slowest round took {worst:.0} ms (under {thr:.0} ms)"
            ),
            evidence: "scenario-c3".into(),
        });
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
        let v = classify(&ok, 5.0, 10).unwrap();
        assert_eq!(
            (v.shape.as_str(), v.evidence.as_str()),
            ("C3", "scenario-c3")
        );
        assert!(v.verdict.starts_with("slow clients invisible (C3 shape)"));

        let mut stop = ok.clone();
        for (i, x) in stop.iter_mut().enumerate().skip(7) {
            *x = r(9000.0 - i as f64 * 200.0, 0);
        }
        let v = classify(&stop, 5.0, 10).unwrap();
        assert_eq!(v.shape, "C1");
        assert_eq!(
            v.verdict,
            "hub stopped at round 8: healthy clients waited 7.6 s (C1 shape: no write deadline)"
        );

        let gaps: Vec<_> = (0..20)
            .map(|i| if i % 4 == 1 { r(2200.0, 0) } else { r(5.0, 0) })
            .collect();
        let v = classify(&gaps, 5.0, 10).unwrap();
        assert_eq!(v.shape, "C2");
        assert!(v.verdict.starts_with("hub gaps of ~2.0 s every round (C2 shape: a deadline of 2.0 s, shared by 10 slow clients)"), "{}", v.verdict);

        assert_eq!(classify(&ok, 5.0, 0), None);
        assert_eq!(classify(&[r(0.0, 10)], 5.0, 3).map(|v| v.shape), None);
    }
}
