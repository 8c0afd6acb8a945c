//! The budget arithmetic (pure). A call on a new connection costs about 2 RTT (TCP
//! handshake, then request and answer) plus the server's time; on a reused connection
//! about 1 RTT plus the server's time. Sequential calls add up; parallel calls wait for
//! the slowest.
use super::model::*;

pub const MODEL: &str = "new connection = 2 x RTT + server time, reused = 1 x RTT + server time; sequential = sum, parallel = slowest; tail share = 1 - 0.99^n";

/// One hop's cost in ms at a given server time.
pub fn hop_cost(h: &Hop, reused: bool, server_ms: f64) -> f64 {
    let trips = if reused { 1.0 } else { 2.0 };
    trips * h.rtt_ms + server_ms
}

pub fn typical(h: &Hop, reused: bool) -> f64 {
    hop_cost(h, reused, h.server_time_ms)
}

fn at_p99(h: &Hop, reused: bool) -> f64 {
    hop_cost(h, reused, h.p99_ms.unwrap_or(h.server_time_ms))
}

fn sum(v: impl Iterator<Item = f64>) -> f64 {
    v.sum()
}

fn max(v: impl Iterator<Item = f64>) -> f64 {
    v.fold(0.0, f64::max)
}

pub fn sequential(hops: &[Hop], reused: bool) -> f64 {
    sum(hops.iter().map(|h| typical(h, reused)))
}

pub fn parallel(hops: &[Hop], reused: bool) -> f64 {
    max(hops.iter().map(|h| typical(h, reused)))
}

/// The chance that a fan-out to `n` hops meets at least one of them at its p99.
pub fn tail_amplification(n: usize) -> f64 {
    1.0 - 0.99f64.powi(n as i32)
}

pub fn slowest(hops: &[Hop]) -> SlowestHop {
    let mut best = SlowestHop {
        name: String::new(),
        ms: f64::NEG_INFINITY,
    };
    for h in hops {
        let c = typical(h, false);
        if c > best.ms {
            best = SlowestHop {
                name: h.name.clone(),
                ms: c,
            };
        }
    }
    best
}

pub fn configured(hops: &[Hop]) -> Configured {
    Configured {
        sequential_ms: sum(hops.iter().map(|h| typical(h, h.reuse))),
        parallel_ms: max(hops.iter().map(|h| typical(h, h.reuse))),
    }
}

/// The parallel request when its worst hop is at its p99 (the others typical), as
/// configured. None when no hop has a p99.
pub fn tail(hops: &[Hop]) -> Option<Tail> {
    let typical_max = configured(hops).parallel_ms;
    let worst = hops
        .iter()
        .filter(|h| h.p99_ms.is_some())
        .max_by(|a, b| at_p99(a, a.reuse).total_cmp(&at_p99(b, b.reuse)))?;
    Some(Tail {
        parallel_p99_ms: at_p99(worst, worst.reuse).max(typical_max),
        share: tail_amplification(hops.len()),
        hop: worst.name.clone(),
    })
}

/// Per-call deadline: every call is abandoned at `d` ms (the caller answers without it).
pub fn deadline(hops: &[Hop], d: f64) -> Deadline {
    let p99_max = max(hops.iter().map(|h| at_p99(h, h.reuse)));
    Deadline {
        deadline_ms: d,
        parallel_ms: configured(hops).parallel_ms.min(d),
        parallel_p99_ms: p99_max.min(d),
        always_cut: hops
            .iter()
            .filter(|h| typical(h, h.reuse) > d)
            .map(|h| h.name.clone())
            .collect(),
        tail_cut: hops
            .iter()
            .filter(|h| typical(h, h.reuse) <= d && at_p99(h, h.reuse) > d)
            .map(|h| h.name.clone())
            .collect(),
    }
}

/// Hedging: when a call has not answered after `after` ms a second one is sent and the
/// first answer wins. A hop's tail becomes min(its p99, after + its typical time); the
/// price is the share of calls slower than `after`, bounded from the two known points.
pub fn hedge(hops: &[Hop], after: f64) -> Hedge {
    let hedged = |h: &Hop| at_p99(h, h.reuse).min(after + typical(h, h.reuse));
    let typical_max = configured(hops).parallel_ms;
    let extra = hops
        .iter()
        .map(|h| {
            if after >= at_p99(h, h.reuse) {
                1.0
            } else if after >= typical(h, h.reuse) {
                50.0
            } else {
                100.0
            }
        })
        .fold(0.0, f64::max);
    Hedge {
        after_ms: after,
        parallel_p99_ms: max(hops.iter().map(hedged)).max(typical_max),
        extra_calls_max_pct: extra,
    }
}

/// Round to 0.1 ms: the model is not more precise than that, and the JSON stays readable.
fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Every computed figure for `hops` (non-empty, validated by the caller).
pub fn compute(hops: Vec<Hop>, deadline_ms: Option<f64>, hedge_ms: Option<f64>) -> BudgetReport {
    let mut slowest_hop = slowest(&hops);
    slowest_hop.ms = r1(slowest_hop.ms);
    let c = configured(&hops);
    BudgetReport {
        kind: "budget".into(),
        sequential_ms: r1(sequential(&hops, false)),
        parallel_ms: r1(parallel(&hops, false)),
        sequential_reused_ms: r1(sequential(&hops, true)),
        parallel_reused_ms: r1(parallel(&hops, true)),
        slowest_hop,
        tail_amplification: (tail_amplification(hops.len()) * 1e4).round() / 1e4,
        as_configured: Configured {
            sequential_ms: r1(c.sequential_ms),
            parallel_ms: r1(c.parallel_ms),
        },
        tail: tail(&hops),
        deadline: deadline_ms.map(|d| deadline(&hops, d)),
        hedge: hedge_ms.map(|a| hedge(&hops, a)),
        budget_ms: None,
        live: None,
        findings: Vec::new(),
        model: MODEL.into(),
        hops,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(name: &str, rtt: f64, server: f64) -> Hop {
        Hop {
            name: name.into(),
            rtt_ms: rtt,
            server_time_ms: server,
            p99_ms: None,
            reuse: false,
        }
    }

    /// Within `pct` percent of the seed's figure.
    fn near(got: f64, seed: f64, pct: f64) -> bool {
        ((got - seed) / seed).abs() * 100.0 <= pct
    }

    /// The seed's backends: ~24 ms RTT, and about 18 ms of server and stack time per call
    /// (fitted: the article's four totals give 15-24 ms of residual per hop).
    fn four_fast() -> Vec<Hop> {
        ["a", "b", "c", "d"].map(|n| hop(n, 24.0, 18.0)).to_vec()
    }

    #[test]
    fn four_fast_hops_match_the_seed() {
        let r = compute(four_fast(), None, None);
        // Seed 004: sequential 261 ms, parallel ~63 ms (new connections).
        assert!(near(r.sequential_ms, 261.0, 5.0), "{}", r.sequential_ms);
        assert!(near(r.parallel_ms, 63.0, 5.0), "{}", r.parallel_ms);
        // Reuse: 163 ms instead of 268 for the 4 calls.
        assert!(near(r.sequential_reused_ms, 163.0, 5.0));
        assert!(near(r.sequential_ms, 268.0, 5.0));
        // Parallel is about one hop: more than 4 times less than sequential.
        assert!(r.sequential_ms / r.parallel_ms >= 3.9);
        assert_eq!(r.parallel_reused_ms, 42.0);
    }

    #[test]
    fn one_slow_hop_is_the_parallel_total() {
        let mut hops = four_fast();
        hops[3].server_time_ms += 100.0;
        hops[3].name = "slow".into();
        let r = compute(hops, None, None);
        // Seed 004: 368 ms in sequence, 172 ms in parallel = the slowest hop.
        assert!(near(r.sequential_ms, 368.0, 5.0), "{}", r.sequential_ms);
        assert!(near(r.parallel_ms, 172.0, 5.0), "{}", r.parallel_ms);
        assert_eq!(r.slowest_hop.name, "slow");
        assert_eq!(r.slowest_hop.ms, r.parallel_ms);
    }

    #[test]
    fn tail_amplification_is_one_minus_099_to_the_n() {
        assert!((tail_amplification(1) - 0.01).abs() < 1e-12);
        assert!((tail_amplification(4) - 0.039404).abs() < 1e-6);
        assert!((tail_amplification(100) - 0.633968).abs() < 1e-6);
        assert_eq!(compute(four_fast(), None, None).tail_amplification, 0.0394);
    }

    #[test]
    fn configured_uses_each_hops_reuse() {
        let mut hops = four_fast();
        hops[0].reuse = true;
        let c = configured(&hops);
        assert_eq!(c.sequential_ms, 42.0 + 3.0 * 66.0);
        assert_eq!(c.parallel_ms, 66.0);
    }

    #[test]
    fn deadlines_cap_and_name_the_cut_hops() {
        let mut hops = four_fast();
        hops[1].p99_ms = Some(200.0);
        hops[2].server_time_ms = 150.0;
        let d = deadline(&hops, 100.0);
        assert_eq!(d.parallel_ms, 100.0);
        assert_eq!(d.always_cut, vec!["c".to_string()]);
        assert_eq!(d.tail_cut, vec!["b".to_string()]);
        assert_eq!(d.parallel_p99_ms, 100.0);
        let t = tail(&hops).unwrap();
        assert_eq!(t.hop, "b");
        assert_eq!(t.parallel_p99_ms, 248.0);
    }

    #[test]
    fn hedging_cuts_the_tail_at_a_price() {
        let mut hops = four_fast();
        hops[0].p99_ms = Some(300.0); // 348 ms at p99 on a new connection
        let h = hedge(&hops, 100.0);
        // Second call at 100 ms answers after 66 more: 166 instead of 348.
        assert_eq!(h.parallel_p99_ms, 166.0);
        assert_eq!(h.extra_calls_max_pct, 50.0);
        assert_eq!(hedge(&hops, 400.0).extra_calls_max_pct, 1.0);
        assert_eq!(hedge(&hops, 400.0).parallel_p99_ms, 348.0);
        assert_eq!(hedge(&hops, 10.0).extra_calls_max_pct, 100.0);
    }
}
