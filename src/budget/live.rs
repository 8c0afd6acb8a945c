//! `budget --live URL...`: the four ways (sequential / parallel x new / reused
//! connections) measured against real endpoints, each URL standing for one hop.
use super::model::{Computed, Hop, Live};
use super::plan;
use crate::load::client::{ErrorKind, Target};
use crate::load::conn::WireConn;
use crate::load::single;
use futures_util::future::join_all;
use std::time::{Duration, Instant};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn fail(t: &Target, e: ErrorKind) -> String {
    format!("{}: {}", t.url, e.as_str())
}

/// One round of the four ways. Reused connections are opened and warmed first.
async fn round(targets: &[Target], timeout: Duration) -> Result<[f64; 4], String> {
    let t0 = Instant::now();
    for t in targets {
        single::once(t, timeout).await.map_err(|e| fail(t, e))?;
    }
    let seq_new = ms(t0.elapsed());

    let t0 = Instant::now();
    for (t, r) in targets
        .iter()
        .zip(join_all(targets.iter().map(|t| single::once(t, timeout))).await)
    {
        r.map_err(|e| fail(t, e))?;
    }
    let par_new = ms(t0.elapsed());

    let mut conns = warm(targets, timeout).await?;
    let t0 = Instant::now();
    for (c, t) in conns.iter_mut().zip(targets) {
        single::request(c, t, timeout)
            .await
            .map_err(|e| fail(t, e))?;
    }
    let seq_reused = ms(t0.elapsed());

    let t0 = Instant::now();
    let calls = conns
        .iter_mut()
        .zip(targets)
        .map(|(c, t)| single::request(c, t, timeout));
    for (t, r) in targets.iter().zip(join_all(calls).await) {
        r.map_err(|e| fail(t, e))?;
    }
    let par_reused = ms(t0.elapsed());
    Ok([seq_new, par_new, seq_reused, par_reused])
}

async fn warm(targets: &[Target], timeout: Duration) -> Result<Vec<WireConn>, String> {
    let mut conns = Vec::with_capacity(targets.len());
    for t in targets {
        let mut c = single::connect(t, timeout).await.map_err(|e| fail(t, e))?;
        single::request(&mut c, t, timeout)
            .await
            .map_err(|e| fail(t, e))?;
        conns.push(c);
    }
    Ok(conns)
}

/// Per hop: connect time (about 1 RTT) and the time of a request on a warm connection
/// minus that RTT (the server's time), medians of `rounds`.
async fn measure_hop(t: &Target, rounds: u32, timeout: Duration) -> Result<Hop, String> {
    let (mut rtt, mut req) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t0 = Instant::now();
        let mut c = single::connect(t, timeout).await.map_err(|e| fail(t, e))?;
        rtt.push(ms(t0.elapsed()));
        single::request(&mut c, t, timeout)
            .await
            .map_err(|e| fail(t, e))?;
        let r = single::request(&mut c, t, timeout)
            .await
            .map_err(|e| fail(t, e))?;
        req.push(ms(r.total));
    }
    let rtt = median(&mut rtt);
    Ok(Hop {
        name: t.url.clone(),
        rtt_ms: rtt,
        server_time_ms: (median(&mut req) - rtt).max(0.0),
        p99_ms: None,
        reuse: false,
    })
}

/// Steps [`run`] takes: one per URL alone, then one per round.
pub fn steps(targets: &[Target], rounds: u32) -> u64 {
    targets.len() as u64 + u64::from(rounds)
}

/// Measure every way `rounds` times; an error anywhere makes the run invalid (no numbers
/// from a run that did not complete). `step` is called after each of [`steps`] (progress).
pub async fn run(targets: &[Target], rounds: u32, timeout: Duration, step: &dyn Fn()) -> Live {
    let mut hops = Vec::new();
    let mut ways: [Vec<f64>; 4] = Default::default();
    let mut invalid = None;
    for t in targets {
        let measured = measure_hop(t, rounds.min(5), timeout).await;
        step();
        match measured {
            Ok(h) => hops.push(h),
            Err(e) => {
                invalid = Some(e);
                break;
            }
        }
    }
    if invalid.is_none() {
        for _ in 0..rounds {
            let measured = round(targets, timeout).await;
            step();
            match measured {
                Ok(v) => (0..4).for_each(|i| ways[i].push(v[i])),
                Err(e) => {
                    invalid = Some(e);
                    break;
                }
            }
        }
    }
    let r1 = |x: f64| (x * 10.0).round() / 10.0;
    let mut m = ways.map(|mut w| r1(median(&mut w)));
    if invalid.is_some() {
        m = [0.0; 4];
    }
    let computed = Computed {
        sequential_ms: r1(plan::sequential(&hops, false)),
        parallel_ms: r1(plan::parallel(&hops, false)),
        sequential_reused_ms: r1(plan::sequential(&hops, true)),
        parallel_reused_ms: r1(plan::parallel(&hops, true)),
    };
    for h in &mut hops {
        h.rtt_ms = r1(h.rtt_ms);
        h.server_time_ms = r1(h.server_time_ms);
    }
    Live {
        urls: targets.iter().map(|t| t.url.clone()).collect(),
        rounds,
        sequential_ms: m[0],
        parallel_ms: m[1],
        sequential_reused_ms: m[2],
        parallel_reused_ms: m[3],
        hops,
        computed,
        tcp_nodelay: true,
        invalid,
    }
}

/// Measured within `pct` percent or `floor_ms` of computed, for all four ways.
pub fn agrees(l: &Live, pct: f64, floor_ms: f64) -> Vec<String> {
    let pairs = [
        ("sequential", l.sequential_ms, l.computed.sequential_ms),
        ("parallel", l.parallel_ms, l.computed.parallel_ms),
        (
            "sequential reused",
            l.sequential_reused_ms,
            l.computed.sequential_reused_ms,
        ),
        (
            "parallel reused",
            l.parallel_reused_ms,
            l.computed.parallel_reused_ms,
        ),
    ];
    pairs
        .iter()
        .filter(|(_, m, c)| (m - c).abs() > floor_ms.max(c * pct / 100.0))
        .map(|(n, m, c)| format!("{n}: measured {m:.1} ms, computed {c:.1} ms"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }
}
