//! The reading of a sweep (pure): per-level numbers and validity, Little's law, the
//! knee, the order of reaction, and the Nagle stall as seen from the client.
use super::model::{Knee, Level, Reaction, Saturation, Slice};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// What the sweep recorded for one level.
#[derive(Debug, Clone)]
pub struct Raw {
    pub concurrency: u32,
    /// Latency of every completed attempt (answers and errors), microseconds.
    pub latency_us: Histogram<u64>,
    pub sum_latency_us: f64,
    pub ok: u64,
    pub errors: BTreeMap<String, u64>,
    /// Head-to-body-end time of answers, microseconds.
    pub gap_us: Histogram<u64>,
    pub body_bytes: u64,
    /// Attempts started by the users (must equal completions: nothing lost).
    pub started: u64,
    /// Mean active time of a user (closed loop) or the level's length (open loop), s.
    pub active_s: f64,
    pub cpu_s: f64,
    pub threads: u32,
    pub offered_rps: Option<f64>,
    pub saturation: Option<Saturation>,
    /// The level's step cut in SLICES by completion time: its spread (allocated on the
    /// first record, so an idle worker costs nothing).
    pub slices: Vec<SliceRaw>,
}

/// Equal parts of a level by completion time: a knee or a reaction counts only when it
/// stands outside the spread between them (the run-to-run noise, measured).
pub const SLICES: usize = 4;

/// One slice of a level: answers and their latency (2 significant digits suffice for a
/// spread; a timeout is at most 60 s).
#[derive(Debug, Clone)]
pub struct SliceRaw {
    pub ok: u64,
    pub latency_us: Histogram<u32>,
}

impl SliceRaw {
    fn new() -> SliceRaw {
        SliceRaw {
            ok: 0,
            latency_us: Histogram::new_with_bounds(1, 120_000_000, 2)
                .expect("static histogram bounds"),
        }
    }
}

/// The slice of a completion `done_s` into a level of `step_s`.
pub fn slice_of(done_s: f64, step_s: f64) -> usize {
    ((done_s / step_s.max(1e-9)) * SLICES as f64).clamp(0.0, (SLICES - 1) as f64) as usize
}

impl Raw {
    pub fn new(concurrency: u32) -> Raw {
        Raw {
            concurrency,
            latency_us: hist(),
            sum_latency_us: 0.0,
            ok: 0,
            errors: BTreeMap::new(),
            gap_us: hist(),
            body_bytes: 0,
            started: 0,
            active_s: 0.0,
            cpu_s: 0.0,
            threads: 1,
            offered_rps: None,
            saturation: None,
            slices: Vec::new(),
        }
    }

    /// Count one attempt in its slice (answers only count toward its throughput).
    pub fn record_slice(&mut self, slice: usize, us: u64, ok: bool) {
        if self.slices.is_empty() {
            self.slices = (0..SLICES).map(|_| SliceRaw::new()).collect();
        }
        let s = &mut self.slices[slice.min(SLICES - 1)];
        let _ = s.latency_us.record(us.clamp(1, s.latency_us.high()));
        s.ok += u64::from(ok);
    }

    pub fn merge(&mut self, o: &Raw) {
        let _ = self.latency_us.add(&o.latency_us);
        let _ = self.gap_us.add(&o.gap_us);
        self.sum_latency_us += o.sum_latency_us;
        self.ok += o.ok;
        for (k, v) in &o.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.body_bytes += o.body_bytes;
        self.started += o.started;
        if self.slices.is_empty() {
            self.slices = o.slices.clone();
        } else {
            for (a, b) in self.slices.iter_mut().zip(&o.slices) {
                a.ok += b.ok;
                let _ = a.latency_us.add(&b.latency_us);
            }
        }
    }

    pub fn completed(&self) -> u64 {
        self.ok + self.errors.values().sum::<u64>()
    }
}

/// 1 µs .. 1 hour, 3 significant digits.
pub fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds")
}

/// Delayed-ACK range on Linux (40 ms minimum, 200 ms maximum) with some slack.
pub const STALL_MIN_MS: f64 = 30.0;
pub const STALL_MAX_MS: f64 = 250.0;
/// Fewer completions than this in a level: its percentiles mean nothing.
pub const MIN_SAMPLES: u64 = 20;
/// Load generator CPU above this share of its threads: it may be the bottleneck.
pub const LOADGEN_CPU_MAX: f64 = 0.85;

#[derive(Debug, Clone, Copy)]
pub struct Opts {
    pub timeout_ms: f64,
    pub littles_tolerance_pct: f64,
    pub closed_loop: bool,
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Numbers and validity of one level.
pub fn level(raw: &Raw, o: &Opts) -> Level {
    let completed = raw.completed();
    let errors: u64 = raw.errors.values().sum();
    let active = raw.active_s.max(1e-9);
    let mean_ms = if completed > 0 {
        raw.sum_latency_us / completed as f64 / 1000.0
    } else {
        0.0
    };
    let all_rps = completed as f64 / active;
    let w = (o.closed_loop && completed > 0).then(|| raw.concurrency as f64 / all_rps * 1000.0);
    let diff = w.map(|w| (mean_ms - w) / w * 100.0);
    let cpu_pct = raw.cpu_s / active * 100.0;
    let stalled = raw
        .gap_us
        .iter_recorded()
        .filter(|v| {
            let m = ms(v.value_iterated_to());
            (STALL_MIN_MS..=STALL_MAX_MS).contains(&m)
        })
        .map(|v| v.count_at_value())
        .sum::<u64>();
    let mut invalid = Vec::new();
    if completed < MIN_SAMPLES {
        invalid.push(format!("{completed} completions, fewer than {MIN_SAMPLES}"));
    }
    if raw.started != completed {
        invalid.push(format!(
            "{} attempts started, {completed} accounted for",
            raw.started
        ));
    }
    if let Some(d) = diff.filter(|d| d.abs() > o.littles_tolerance_pct) {
        invalid.push(format!(
            "Little's law off by {d:+.1}% (tolerance {}%): the users spent time outside their requests",
            o.littles_tolerance_pct
        ));
    }
    if raw.cpu_s / active >= LOADGEN_CPU_MAX * raw.threads as f64 {
        invalid.push(format!(
            "load generator CPU {cpu_pct:.0}% of {} thread(s): it may be the bottleneck",
            raw.threads
        ));
    }
    Level {
        concurrency: raw.concurrency,
        throughput_rps: r2(raw.ok as f64 / active),
        p50_ms: r2(ms(raw.latency_us.value_at_quantile(0.5))),
        p99_ms: r2(ms(raw.latency_us.value_at_quantile(0.99))),
        max_ms: r2(ms(raw.latency_us.max())),
        mean_ms: r2(mean_ms),
        requests: completed,
        errors,
        error_rate: if completed > 0 {
            r2(errors as f64 / completed as f64 * 100.0)
        } else {
            0.0
        },
        errors_by_kind: raw.errors.clone(),
        timeout_ms: o.timeout_ms,
        littles_law_w_ms: w.map(r2),
        littles_law_diff_pct: diff.map(r2),
        offered_rps: raw.offered_rps,
        body_gap_p50_ms: r2(ms(raw.gap_us.value_at_quantile(0.5))),
        body_gap_stalled_pct: if raw.ok > 0 {
            r2(stalled as f64 / raw.ok as f64 * 100.0)
        } else {
            0.0
        },
        body_bytes_mean: if raw.ok > 0 {
            r2(raw.body_bytes as f64 / raw.ok as f64)
        } else {
            0.0
        },
        loadgen_cpu_pct: r2(cpu_pct),
        loadgen_threads: raw.threads,
        active_s: r2(raw.active_s),
        saturation: raw.saturation.clone(),
        slices: slices(raw),
        valid: invalid.is_empty(),
        invalid,
    }
}

/// Throughput and p99 of each slice with enough answers to read a p99 from.
fn slices(raw: &Raw) -> Vec<Slice> {
    let span = raw.active_s.max(1e-9) / SLICES as f64;
    raw.slices
        .iter()
        .filter(|s| s.ok * SLICES as u64 >= MIN_SAMPLES)
        .map(|s| Slice {
            throughput_rps: r2(s.ok as f64 / span),
            p99_ms: r2(s.latency_us.value_at_quantile(0.99) as f64 / 1000.0),
        })
        .collect()
}

/// Mean busy workers over the pool size that counts as saturated.
pub const SATURATED: f64 = 0.9;
/// Throughput grows less than this fraction from one level to the next: flat.
pub const KNEE_GAIN: f64 = 0.10;
/// ...while p99 grows by at least this factor over the sweep after it.
pub const KNEE_P99_FACTOR: f64 = 1.5;

/// The first valid level after which throughput grows less than 10% per step while p99
/// multiplies (x1.5 or more by the last level): more clients only queue. Each claim must
/// stand outside the levels' measured spread (their slices): a later level whose slowest
/// slice beats this one's fastest by 10% means the flat step was a dip (noise), not a
/// plateau; and the last level's p99 must be above every slice of this one's.
pub fn knee(levels: &[Level]) -> Option<Knee> {
    let v: Vec<&Level> = levels.iter().filter(|l| l.valid).collect();
    let last = v.last()?;
    for (i, w) in v.windows(2).enumerate() {
        let (a, b) = (w[0], w[1]);
        if a.throughput_rps <= 0.0 || b.concurrency <= a.concurrency {
            continue;
        }
        let gain = b.throughput_rps / a.throughput_rps - 1.0;
        let p99_factor = last.p99_ms / a.p99_ms.max(1e-3);
        let a_fastest = a.throughput_range().1;
        let recovered = v[i + 1..]
            .iter()
            .any(|l| l.throughput_range().0 > a_fastest * (1.0 + KNEE_GAIN));
        let tail_outside = last.p99_range().0 > a.p99_range().1;
        if gain < KNEE_GAIN && p99_factor >= KNEE_P99_FACTOR && !recovered && tail_outside {
            return Some(Knee {
                concurrency: a.concurrency,
                throughput_rps: a.throughput_rps,
                p99_ms: a.p99_ms,
                last_concurrency: last.concurrency,
                throughput_gain_pct: r2((last.throughput_rps / a.throughput_rps - 1.0) * 100.0),
                p99_factor: r2(p99_factor),
            });
        }
    }
    None
}

/// The seed's order of reaction on this target: saturation, latency, throughput, errors.
pub fn order_of_reaction(levels: &[Level], knee: Option<&Knee>) -> Vec<Reaction> {
    let v: Vec<&Level> = levels.iter().filter(|l| l.valid).collect();
    let first = |f: &dyn Fn(&Level) -> bool| v.iter().find(|l| f(l)).map(|l| l.concurrency);
    let base_p99 = v.first().map_or(0.0, |l| l.p99_ms);
    let base_p99_max = v.first().map_or(0.0, |l| l.p99_range().1);
    let mut out = vec![
        Reaction {
            signal: "saturation".into(),
            concurrency: first(&|l| {
                l.saturation
                    .as_ref()
                    .and_then(|s| s.workers.map(|w| s.busy_mean >= SATURATED * w))
                    .unwrap_or(false)
            }),
            rule: format!(
                "first level with {:.0}% of the workers busy on average (needs --metrics)",
                SATURATED * 100.0
            ),
        },
        Reaction {
            signal: "latency".into(),
            concurrency: first(&|l| {
                l.p99_ms > KNEE_P99_FACTOR * base_p99 && l.p99_range().0 > base_p99_max
            }),
            rule: format!(
                "first level with p99 over {KNEE_P99_FACTOR}x the first level's and above every slice of it (outside the measured spread)"
            ),
        },
        Reaction {
            signal: "throughput".into(),
            concurrency: knee.and_then(|k| {
                v.iter()
                    .find(|l| l.concurrency > k.concurrency)
                    .map(|l| l.concurrency)
            }),
            rule: format!(
                "first level past the knee (less than {:.0}% more throughput)",
                KNEE_GAIN * 100.0
            ),
        },
        Reaction {
            signal: "errors".into(),
            concurrency: first(&|l| l.errors > 0),
            rule: "first level with any error (depends on --timeout)".into(),
        },
    ];
    // Stable: signals that reacted at the same level keep the seed's order.
    out.sort_by_key(|r| r.concurrency.unwrap_or(u32::MAX));
    out
}

/// Nagle + delayed ACK seen from the client: tiny answers whose body arrives 30-250 ms
/// after their head, for most requests of some level.
pub fn nagle_level(levels: &[Level]) -> Option<&Level> {
    levels
        .iter()
        .find(|l| l.valid && l.body_bytes_mean < 1400.0 && l.body_gap_stalled_pct >= 50.0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn lvl(c: u32, rps: f64, p99: f64) -> Level {
        let mut raw = Raw::new(c);
        for _ in 0..100 {
            raw.latency_us.record((p99 * 1000.0) as u64).unwrap();
            raw.gap_us.record(50).unwrap();
        }
        raw.ok = 100;
        raw.started = 100;
        raw.sum_latency_us = 100.0 * p99 * 1000.0;
        raw.active_s = 100.0 / rps;
        raw.body_bytes = 300;
        let mut l = level(
            &raw,
            &Opts {
                timeout_ms: 500.0,
                littles_tolerance_pct: 1000.0,
                closed_loop: true,
            },
        );
        l.throughput_rps = rps;
        l
    }

    #[test]
    fn littles_law_and_validity() {
        // C = 8, 100 answers of 24 ms in 0.3 s: 333 req/s, W = 24 ms: agrees.
        let mut raw = Raw::new(8);
        for _ in 0..100 {
            raw.latency_us.record(24_000).unwrap();
        }
        raw.ok = 100;
        raw.started = 100;
        raw.sum_latency_us = 100.0 * 24_000.0;
        raw.active_s = 0.3;
        raw.threads = 2;
        let o = Opts {
            timeout_ms: 500.0,
            littles_tolerance_pct: 5.0,
            closed_loop: true,
        };
        let l = level(&raw, &o);
        assert_eq!(l.littles_law_w_ms, Some(24.0));
        assert!(l.valid, "{:?}", l.invalid);
        assert!((l.p50_ms - 24.0).abs() < 0.1, "{}", l.p50_ms);
        // The users spent half their time outside requests: W = 48, mean 24: invalid.
        raw.active_s = 0.6;
        let l = level(&raw, &o);
        assert!(
            !l.valid && l.invalid[0].contains("Little"),
            "{:?}",
            l.invalid
        );
        // A lost attempt, a busy generator, too few samples.
        raw.active_s = 0.3;
        raw.started = 101;
        raw.cpu_s = 0.6;
        let l = level(&raw, &o);
        assert_eq!(l.invalid.len(), 2, "{:?}", l.invalid);
        assert!(l.invalid[1].contains("load generator"));
        raw.ok = 5;
        assert!(level(&raw, &o).invalid[0].contains("fewer than"));
    }

    #[test]
    fn the_seeds_sweep_has_its_knee_at_8() {
        // Seed 001: (C, req/s, p99 ms); p99 at C = 64 near 500.
        let rows = [
            (1, 38.0, 31.0),
            (2, 80.0, 31.0),
            (4, 160.0, 31.0),
            (8, 325.0, 31.0),
            (12, 347.0, 60.0),
            (16, 350.0, 90.0),
            (32, 349.0, 200.0),
            (64, 352.0, 484.0),
        ];
        let levels: Vec<Level> = rows.iter().map(|&(c, x, p)| lvl(c, x, p)).collect();
        let k = knee(&levels).unwrap();
        assert_eq!(k.concurrency, 8);
        assert_eq!(k.last_concurrency, 64);
        assert!((k.throughput_gain_pct - 8.3).abs() < 0.1, "{k:?}");
        assert!((k.p99_factor - 15.6).abs() < 0.1, "{k:?}");
        let order = order_of_reaction(&levels, Some(&k));
        let at = |s: &str| order.iter().find(|r| r.signal == s).unwrap().concurrency;
        assert_eq!(at("latency"), Some(12));
        assert_eq!(at("throughput"), Some(12));
        assert_eq!(at("errors"), None);
        assert_eq!(order.last().unwrap().concurrency, None);
    }

    /// A level read from 4 slices: throughput and p99 their means.
    pub fn noisy(c: u32, rps: [f64; 4], p99: [f64; 4]) -> Level {
        let mean = |v: [f64; 4]| v.iter().sum::<f64>() / 4.0;
        let mut l = lvl(c, mean(rps), mean(p99));
        l.slices = rps
            .iter()
            .zip(p99)
            .map(|(&throughput_rps, p99_ms)| Slice {
                throughput_rps,
                p99_ms,
            })
            .collect();
        l
    }

    /// Issue 22's single-threaded Node sweep: C = 8 dipped, C = 16-32 came back above
    /// C = 4 by more than its spread, and C = 2's p99 (0.2 -> 0.4 ms) sits inside C = 1's
    /// slices. Read without the spread, both were reported (knee at 4, latency at 2).
    #[test]
    fn noise_makes_no_knee_and_no_reaction() {
        // (C, slice throughputs, slice p99s): C = 2 -> 4 grows 12%, C = 8 dips, C = 16-32
        // are above C = 4's fastest slice by more than 10%.
        let rows = [
            (1, [8800.0, 9100.0, 9000.0, 9100.0], [0.15, 0.2, 0.45, 0.2]),
            (
                2,
                [9800.0, 10000.0, 10200.0, 10000.0],
                [0.3, 0.4, 0.35, 0.5],
            ),
            (
                4,
                [11000.0, 11200.0, 11400.0, 11200.0],
                [0.4, 0.6, 0.5, 0.45],
            ),
            (8, [8800.0, 9100.0, 9200.0, 8900.0], [0.9, 1.1, 1.0, 1.0]),
            (
                16,
                [12700.0, 13300.0, 13000.0, 13000.0],
                [1.8, 2.2, 2.0, 2.0],
            ),
            (
                32,
                [12900.0, 13500.0, 13200.0, 13200.0],
                [3.6, 4.4, 4.0, 4.0],
            ),
        ];
        let levels: Vec<Level> = rows.iter().map(|&(c, r, p)| noisy(c, r, p)).collect();
        let k = knee(&levels).expect("the real plateau at 16-32");
        assert_eq!(k.concurrency, 16, "{k:?}");
        let order = order_of_reaction(&levels, Some(&k));
        let at = |s: &str| order.iter().find(|r| r.signal == s).unwrap().concurrency;
        assert_eq!(at("latency"), Some(8));
        // The same means without their slices: C = 2's p99 (0.39 ms against 0.25 ms) is
        // over 1.5x, the old reading's reaction from noise. (The old knee, at the dip
        // after C = 4, is gone with or without slices: C = 16 came back above it.)
        let bare: Vec<Level> = levels
            .iter()
            .cloned()
            .map(|mut l| {
                l.slices.clear();
                l
            })
            .collect();
        let order = order_of_reaction(&bare, None);
        assert_eq!(
            order
                .iter()
                .find(|r| r.signal == "latency")
                .unwrap()
                .concurrency,
            Some(2)
        );
    }

    /// A plateau whose tail does not rise above the knee level's own slices is no knee;
    /// the seed's sweep with tight slices keeps its knee at 8.
    #[test]
    fn a_knee_stands_only_outside_the_spread() {
        let flat_tail = [
            (1, [95.0, 100.0, 105.0, 100.0], [10.0, 11.0, 30.0, 12.0]),
            (2, [100.0, 101.0, 99.0, 100.0], [12.0, 13.0, 12.0, 28.0]),
            (4, [99.0, 100.0, 101.0, 100.0], [15.0, 20.0, 25.0, 16.0]),
        ];
        let levels: Vec<Level> = flat_tail.iter().map(|&(c, r, p)| noisy(c, r, p)).collect();
        assert!(knee(&levels).is_none(), "{:?}", knee(&levels));
        let t = |x: f64| [x * 0.98, x, x * 1.02, x];
        let p = |x: f64| [x * 0.95, x, x * 1.05, x];
        let seed = [
            (1, 38.0, 31.0),
            (2, 80.0, 31.0),
            (4, 160.0, 31.0),
            (8, 325.0, 31.0),
            (12, 347.0, 60.0),
            (16, 350.0, 90.0),
            (32, 349.0, 200.0),
            (64, 352.0, 484.0),
        ];
        let levels: Vec<Level> = seed.iter().map(|&(c, x, q)| noisy(c, t(x), p(q))).collect();
        assert_eq!(knee(&levels).unwrap().concurrency, 8);
    }

    #[test]
    fn slices_cover_the_step_and_merge() {
        assert_eq!(slice_of(0.0, 5.0), 0);
        assert_eq!(slice_of(1.3, 5.0), 1);
        assert_eq!(slice_of(4.99, 5.0), 3);
        assert_eq!(slice_of(7.0, 5.0), 3);
        let mut a = Raw::new(2);
        a.record_slice(0, 1000, true);
        let mut b = Raw::new(0);
        b.record_slice(0, 3000, true);
        b.record_slice(3, 3000, false);
        a.merge(&b);
        assert_eq!(a.slices[0].ok, 2);
        assert_eq!(a.slices[3].ok, 0);
        assert_eq!(a.slices[3].latency_us.len(), 1);
    }

    #[test]
    fn no_knee_while_throughput_grows() {
        let levels: Vec<Level> = [(1, 50.0, 20.0), (2, 100.0, 20.0), (4, 199.0, 21.0)]
            .iter()
            .map(|&(c, x, p)| lvl(c, x, p))
            .collect();
        assert!(knee(&levels).is_none());
    }

    #[test]
    fn nagle_needs_most_bodies_late() {
        let mut l = lvl(1, 15.0, 62.0);
        assert!(nagle_level(std::slice::from_ref(&l)).is_none());
        l.body_gap_stalled_pct = 95.0;
        assert!(nagle_level(std::slice::from_ref(&l)).is_some());
        l.body_bytes_mean = 64_000.0;
        assert!(nagle_level(std::slice::from_ref(&l)).is_none());
    }
}
