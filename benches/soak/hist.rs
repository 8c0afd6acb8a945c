//! A lock-free latency histogram for thousands of client tasks: half-octave buckets of
//! microseconds (each bucket's upper edge is sqrt(2) times the previous), an exact max.
//! Quantiles are reported as the upper edge of their bucket (at most 41 % high).
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

pub const BUCKETS: usize = 64;

pub struct Hist {
    counts: [AtomicU64; BUCKETS],
    max_us: AtomicU64,
}

impl Default for Hist {
    fn default() -> Hist {
        Hist {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            max_us: AtomicU64::new(0),
        }
    }
}

/// Pure: the bucket of `us` (0 for 0-1 us; then two per doubling).
pub fn bucket(us: u64) -> usize {
    let b = 64 - us.leading_zeros() as usize; // bits: 0 for 0, 1 for 1, ...
    let half = b >= 2 && us & (1 << (b - 2)) != 0; // the upper half of the octave
    (2 * b + half as usize).min(BUCKETS - 1)
}

/// Pure: the largest value of bucket `i` in us (the inverse of [`bucket`]).
pub fn upper_edge(i: usize) -> u64 {
    if i < 2 {
        return 0;
    }
    let b = i / 2;
    let base = 1u64 << (b - 1);
    match (i % 2 == 1, b >= 2) {
        (false, true) => base + (base >> 1) - 1,
        _ => (base << 1) - 1,
    }
}

/// Pure: the `q` quantile (0..=1) of bucket `counts`, as an upper edge in us.
pub fn quantile(counts: &[u64], q: f64) -> u64 {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return 0;
    }
    let rank = ((n as f64 * q).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    for (i, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return upper_edge(i);
        }
    }
    upper_edge(counts.len() - 1)
}

impl Hist {
    pub fn record(&self, d: Duration) {
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        self.counts[bucket(us)].fetch_add(1, Relaxed);
        self.max_us.fetch_max(us, Relaxed);
    }

    /// (samples, p50, p99, max) in ms.
    pub fn summary(&self) -> (u64, f64, f64, f64) {
        let c: Vec<u64> = self.counts.iter().map(|a| a.load(Relaxed)).collect();
        let ms = |us: u64| us as f64 / 1000.0;
        let max = self.max_us.load(Relaxed);
        (
            c.iter().sum(),
            ms(quantile(&c, 0.5).min(max)),
            ms(quantile(&c, 0.99).min(max)),
            ms(max),
        )
    }
}
