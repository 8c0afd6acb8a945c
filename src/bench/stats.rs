//! Pure aggregation: latency histograms and per-round statistics.
use super::wire::{Percentile, RoundStat};
use hdrhistogram::Histogram;

/// Microsecond histogram from 1 us to 1 hour, 3 significant digits.
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds are valid")
}

/// Quantiles in ms of a us histogram; zeros when empty.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Quantiles {
    pub count: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    pub over_100ms: u64,
    pub over_1s: u64,
}

pub fn quantiles(h: &Histogram<u64>) -> Quantiles {
    if h.is_empty() {
        return Quantiles::default();
    }
    let ms = |us: u64| us as f64 / 1000.0;
    let above = |limit_us: u64| -> u64 {
        // Counts strictly above the limit, at histogram resolution.
        h.iter_recorded()
            .filter(|v| h.lowest_equivalent(v.value_iterated_to()) > limit_us)
            .map(|v| v.count_at_value())
            .sum()
    };
    Quantiles {
        count: h.len(),
        p50_ms: ms(h.value_at_quantile(0.50)),
        p99_ms: ms(h.value_at_quantile(0.99)),
        p999_ms: ms(h.value_at_quantile(0.999)),
        max_ms: ms(h.max()),
        over_100ms: above(100_000),
        over_1s: above(1_000_000),
    }
}

/// The percentiles the distribution plot shows (HdrHistogram's log-scaled axis).
pub const PERCENTILES: [f64; 9] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99];

/// Latency (ms) at each of `PERCENTILES`; empty when nothing was recorded.
pub fn percentiles(h: &Histogram<u64>) -> Vec<Percentile> {
    if h.is_empty() {
        return Vec::new();
    }
    PERCENTILES
        .iter()
        .map(|&p| Percentile {
            percentile: p,
            ms: h.value_at_quantile(p / 100.0) as f64 / 1000.0,
        })
        .collect()
}

/// What one healthy client saw: (seq, latency us) in arrival order, and whether the server
/// closed it.
#[derive(Debug, Clone, Default)]
pub struct ClientSamples {
    pub samples: Vec<(u32, u32)>,
    pub removed: bool,
}

/// Per-round counts over healthy clients for seq 1..=rounds. A client that received
/// nothing for a round is "missing"; it is attributed to removal when the server closed it
/// and it got no later round (a removed client stops receiving).
pub fn per_round(clients: &[ClientSamples], rounds: usize) -> Vec<RoundStat> {
    let mut out = vec![RoundStat::default(); rounds];
    let mut first = vec![u32::MAX; rounds];
    let mut last = vec![0u32; rounds];
    let mut got = vec![false; rounds];
    for c in clients {
        got.iter_mut().for_each(|g| *g = false);
        for &(seq, lat) in &c.samples {
            let i = seq as usize;
            if i == 0 || i > rounds || got[i - 1] {
                continue;
            }
            got[i - 1] = true;
            out[i - 1].received += 1;
            first[i - 1] = first[i - 1].min(lat);
            last[i - 1] = last[i - 1].max(lat);
        }
        for (i, g) in got.iter().enumerate() {
            if !*g {
                if c.removed {
                    out[i].missing_removed += 1;
                } else {
                    out[i].missing_live += 1;
                }
            }
        }
    }
    for i in 0..rounds {
        if out[i].received > 0 {
            out[i].first_ms = first[i] as f64 / 1000.0;
            out[i].last_ms = last[i] as f64 / 1000.0;
        }
    }
    out
}

/// Seq not strictly increasing within one client's arrivals.
pub fn order_violations(samples: &[(u32, u32)]) -> u64 {
    samples.windows(2).filter(|w| w[1].0 <= w[0].0).count() as u64
}

/// Frames whose seq the client had already received (a reorder is not one).
pub fn duplicates(samples: &[(u32, u32)]) -> u64 {
    let mut seqs: Vec<u32> = samples.iter().map(|s| s.0).collect();
    seqs.sort_unstable();
    seqs.windows(2).filter(|w| w[0] == w[1]).count() as u64
}

pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

pub fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_known_distribution() {
        let mut h = new_hist();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap(); // 1..1000 ms
        }
        let q = quantiles(&h);
        assert_eq!(q.count, 1000);
        assert!((q.p50_ms - 500.0).abs() < 1.0, "{q:?}");
        assert!((q.p99_ms - 990.0).abs() < 1.0, "{q:?}");
        assert!((q.max_ms - 1000.0).abs() < 1.0, "{q:?}");
        assert_eq!(q.over_100ms, 900);
        assert_eq!(q.over_1s, 0);
        assert_eq!(quantiles(&new_hist()), Quantiles::default());
        let p = percentiles(&h);
        assert_eq!(p.len(), PERCENTILES.len());
        assert!((p[0].ms - q.p50_ms).abs() < 1e-9 && (p[4].ms - q.p99_ms).abs() < 1e-9);
        assert!(p.windows(2).all(|w| w[0].ms <= w[1].ms));
        assert!(percentiles(&new_hist()).is_empty());
    }

    #[test]
    fn per_round_attributes_missing_samples() {
        let a = ClientSamples {
            samples: vec![(1, 1000), (2, 3000), (3, 2000)],
            removed: false,
        };
        let b = ClientSamples {
            samples: vec![(1, 5000), (3, 1000)],
            removed: false,
        };
        let gone = ClientSamples {
            samples: vec![(1, 7000)],
            removed: true,
        };
        let r = per_round(&[a, b, gone], 3);
        assert_eq!(r[0].received, 3);
        assert_eq!(r[0].first_ms, 1.0);
        assert_eq!(r[0].last_ms, 7.0);
        assert_eq!(
            (r[1].received, r[1].missing_live, r[1].missing_removed),
            (1, 1, 1)
        );
        assert_eq!(
            (r[2].received, r[2].missing_live, r[2].missing_removed),
            (2, 0, 1)
        );
    }

    #[test]
    fn order_and_median() {
        assert_eq!(
            order_violations(&[(1, 0), (2, 0), (2, 0), (1, 0), (5, 0)]),
            2
        );
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(max(&[1.0, 9.0, 3.0]), 9.0);
    }
}
