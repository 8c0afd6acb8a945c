//! The reconnect wave, pure: from when each client dropped and came back, the connects
//! per 100 ms, their peak and mean, the time until 50 / 95 / 100 % were back, how
//! synchronised they came, and each client's downtime.
use serde::Serialize;

/// The width of one bucket of the wave.
pub const BUCKET_MS: f64 = 100.0;

/// One client's outage: ms since the run's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outage {
    pub dropped_ms: f64,
    /// None: not back by the end.
    pub back_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Wave {
    /// Clients that dropped after the restart began.
    pub dropped: u64,
    pub back: u64,
    pub never_back: u64,
    /// From the first drop until 50 / 95 / 100 % of the dropped clients were back (null:
    /// that share never came back).
    pub back_50_ms: Option<f64>,
    pub back_95_ms: Option<f64>,
    pub back_100_ms: Option<f64>,
    /// The busiest 100 ms of reconnects, as a rate.
    pub peak_connects_per_s: f64,
    /// Reconnects over the wave's span (first to last reconnect's bucket).
    pub mean_connects_per_s: f64,
    /// Share of the reconnects that landed in the busiest 100 ms: 100 is every client at
    /// once, about 100 / buckets an even spread.
    pub in_peak_100ms_pct: f64,
    pub downtime_p50_ms: Option<f64>,
    pub downtime_p95_ms: Option<f64>,
    pub downtime_max_ms: Option<f64>,
    /// Successful reconnects per 100 ms from the first drop (the plot).
    pub connects_per_100ms: Vec<u64>,
}

/// The `q` quantile (0..=1) of sorted values, nearest rank.
fn rank(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[i])
}

/// The wave of `outages` (one per dropped client).
pub fn measure(outages: &[Outage]) -> Wave {
    let dropped = outages.len() as u64;
    let start = outages
        .iter()
        .map(|o| o.dropped_ms)
        .fold(f64::INFINITY, f64::min);
    let mut backs: Vec<f64> = outages.iter().filter_map(|o| o.back_ms).collect();
    backs.sort_by(f64::total_cmp);
    let back = backs.len() as u64;
    // The k-th client back, k = ceil(share x dropped): null when fewer came back.
    let share = |q: f64| -> Option<f64> {
        let k = ((q * dropped as f64).ceil() as usize).max(1);
        backs.get(k - 1).map(|b| (b - start).max(0.0))
    };
    let mut down: Vec<f64> = outages
        .iter()
        .filter_map(|o| o.back_ms.map(|b| (b - o.dropped_ms).max(0.0)))
        .collect();
    down.sort_by(f64::total_cmp);
    let mut buckets: Vec<u64> = Vec::new();
    for b in &backs {
        let i = ((b - start).max(0.0) / BUCKET_MS) as usize;
        if buckets.len() <= i {
            buckets.resize(i + 1, 0);
        }
        buckets[i] += 1;
    }
    let peak = buckets.iter().copied().max().unwrap_or(0);
    let first = buckets.iter().position(|&c| c > 0).unwrap_or(0);
    let span_s = (buckets.len().saturating_sub(first)) as f64 * BUCKET_MS / 1000.0;
    Wave {
        dropped,
        back,
        never_back: dropped - back,
        back_50_ms: share(0.5),
        back_95_ms: share(0.95),
        back_100_ms: (back == dropped && dropped > 0)
            .then(|| share(1.0))
            .flatten(),
        peak_connects_per_s: peak as f64 * 1000.0 / BUCKET_MS,
        mean_connects_per_s: if span_s > 0.0 {
            back as f64 / span_s
        } else {
            0.0
        },
        in_peak_100ms_pct: if back > 0 {
            peak as f64 * 100.0 / back as f64
        } else {
            0.0
        },
        downtime_p50_ms: rank(&down, 0.5),
        downtime_p95_ms: rank(&down, 0.95),
        downtime_max_ms: down.last().copied(),
        connects_per_100ms: buckets,
    }
}

/// Lockstep: most of a wave in a few buckets (a fixed delay brings every client back
/// in the same 100 ms). A quarter of the reconnects in one 100 ms, with more than ten
/// clients, is a storm, not a spread.
pub fn synchronised(w: &Wave) -> bool {
    w.back > 10 && w.in_peak_100ms_pct >= 25.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(d: f64, b: Option<f64>) -> Outage {
        Outage {
            dropped_ms: d,
            back_ms: b,
        }
    }

    #[test]
    fn a_fixed_delay_wave_lands_in_one_bucket() {
        // 20 clients dropped at 1000 ms, all back at 2003..2040 ms.
        let v: Vec<Outage> = (0..20)
            .map(|i| o(1000.0, Some(2003.0 + i as f64 * 2.0)))
            .collect();
        let w = measure(&v);
        assert_eq!((w.dropped, w.back, w.never_back), (20, 20, 0));
        assert_eq!(w.peak_connects_per_s, 200.0);
        assert_eq!(w.in_peak_100ms_pct, 100.0);
        assert!(synchronised(&w));
        assert_eq!(w.back_50_ms, Some(1021.0));
        assert_eq!(w.back_100_ms, Some(1041.0));
        assert_eq!(w.connects_per_100ms.iter().sum::<u64>(), 20);
        assert_eq!(w.downtime_max_ms, Some(1041.0));
    }

    #[test]
    fn a_spread_wave_is_not_lockstep_and_missing_clients_leave_nulls() {
        // 40 clients, one back every 100 ms; 2 never back.
        let mut v: Vec<Outage> = (0..40)
            .map(|i| o(0.0, Some(50.0 + i as f64 * 100.0)))
            .collect();
        v.push(o(0.0, None));
        v.push(o(0.0, None));
        let w = measure(&v);
        assert_eq!((w.dropped, w.back, w.never_back), (42, 40, 2));
        assert_eq!(w.peak_connects_per_s, 10.0);
        assert!(!synchronised(&w));
        assert!((w.mean_connects_per_s - 10.0).abs() < 1e-9, "{w:?}");
        // 95 % of 42 is 40 clients: the last one back.
        assert_eq!(w.back_95_ms, Some(3950.0));
        assert_eq!(w.back_100_ms, None);
    }

    #[test]
    fn no_drop_is_no_wave() {
        let w = measure(&[]);
        assert_eq!((w.dropped, w.back), (0, 0));
        assert_eq!(w.back_50_ms, None);
        assert_eq!(w.peak_connects_per_s, 0.0);
        assert!(w.connects_per_100ms.is_empty());
    }
}
