//! The sweep's findings (pure): `littles-law`, `knee`, `nagle`.
use super::analysis;
use super::model::{Knee, Level};
use crate::evidence;
use crate::findings::{Finding, Fix, Status};

fn finding(
    id: &str,
    title: &str,
    status: Status,
    observed: String,
    expected: &str,
    rule: &str,
) -> Finding {
    Finding {
        location: None,
        id: id.into(),
        title: title.into(),
        status,
        observed,
        expected: expected.into(),
        rule: rule.into(),
        reason: None,
        evidence: Vec::new(),
        fix: Fix::default(),
        verify: None,
        verification: None,
        numbers: Default::default(),
    }
}

pub fn littles_law(levels: &[Level], tolerance: f64, closed_loop: bool) -> Finding {
    let rule = format!(
        "closed loop: mean latency = C / throughput (Little's law) within {tolerance}% at every level"
    );
    let mut f = finding(
        "littles-law",
        "Latency agrees with Little's law",
        Status::Pass,
        String::new(),
        "every level within the tolerance",
        &rule,
    );
    f.evidence = vec![
        evidence::reference("littles-law"),
        evidence::reference("littles-law-rows"),
    ];
    if !closed_loop {
        f.status = Status::Skip;
        f.reason = Some("open loop (--rate): the number in the system is not fixed".into());
        f.observed = "not checked in an open loop".into();
        return f;
    }
    let off: Vec<String> = levels
        .iter()
        .filter_map(|l| {
            let d = l.littles_law_diff_pct?;
            (d.abs() > tolerance).then(|| format!("C = {}: {d:+.1}%", l.concurrency))
        })
        .collect();
    let worst = levels
        .iter()
        .filter_map(|l| l.littles_law_diff_pct)
        .fold(0.0f64, |m, d| m.max(d.abs()));
    f.numbers.insert("worst_diff_pct".into(), worst);
    if off.is_empty() {
        f.observed = format!("every level within {worst:.1}% of C / throughput");
    } else {
        f.status = Status::Fail;
        f.observed = format!("off at {}: those levels are invalid", off.join(", "));
        f.fix.summary = "Time spent outside requests is a measurement mistake: a busy or paused load generator, reconnects after errors, or lost samples. Fix the client before reading the numbers.".into();
    }
    f
}

pub fn knee(k: Option<&Knee>, levels: &[Level]) -> Finding {
    let rule = format!(
        "knee: the first level after which throughput grows less than {:.0}% per step while p99 grows {}x or more, both outside the spread of the levels' {} slices (no later level's slowest slice {:.0}% above its fastest)",
        analysis::KNEE_GAIN * 100.0,
        analysis::KNEE_P99_FACTOR,
        analysis::SLICES,
        analysis::KNEE_GAIN * 100.0
    );
    let mut f = finding(
        "knee",
        "Where more clients only queue",
        Status::Pass,
        String::new(),
        "throughput grows with concurrency",
        &rule,
    );
    f.evidence = vec![
        evidence::reference("saturation-first"),
        evidence::reference("saturation-point"),
        evidence::reference("capacity-ceiling"),
        evidence::reference("throughput-alone"),
        evidence::reference("saturation-alert"),
        evidence::reference("closed-loop-queue"),
        evidence::reference("timeout-errors"),
    ];
    match k {
        None => {
            let top = levels.iter().rfind(|l| l.valid);
            f.observed = match top {
                Some(l) => format!(
                    "no knee up to C = {}: throughput still grows ({:.0} req/s)",
                    l.concurrency, l.throughput_rps
                ),
                None => "no valid level".into(),
            };
        }
        Some(k) => {
            f.status = Status::Warn;
            let at = levels.iter().find(|l| l.concurrency == k.concurrency);
            let (lo, hi) = at.map_or((k.throughput_rps, k.throughput_rps), |l| {
                l.throughput_range()
            });
            f.observed = format!(
                "knee at C = {} ({:.0} req/s, slices {lo:.0}-{hi:.0}; p99 {:.1} ms): to C = {} throughput {:+.1}%, p99 x{:.1}",
                k.concurrency, k.throughput_rps, k.p99_ms, k.last_concurrency, k.throughput_gain_pct, k.p99_factor
            );
            f.numbers.insert("concurrency".into(), k.concurrency as f64);
            f.numbers.insert("throughput_rps".into(), k.throughput_rps);
            f.numbers.insert("p99_factor".into(), k.p99_factor);
            f.fix.summary = knee_advice(k, at);
        }
    }
    f
}

/// What to do past the knee, from what was measured: the concurrency and throughput where
/// it stopped growing, and the target's pool only when its metrics report one (a worker
/// count rtcheck cannot see is never assumed).
fn knee_advice(k: &Knee, at: Option<&Level>) -> String {
    let mut s = format!(
        "Measured: throughput stopped growing at C = {} ({:.0} req/s) while p99 went x{:.1} by C = {}: past that, added clients only queue. Alert before it on what you can see (in-flight requests above {} or throughput near {:.0} req/s for 5 minutes), then add capacity or make requests faster; read throughput with saturation beside it.",
        k.concurrency, k.throughput_rps, k.p99_factor, k.last_concurrency, k.concurrency, k.throughput_rps
    );
    match at.and_then(|l| l.saturation.as_ref()) {
        Some(sat) => {
            let pool = sat
                .workers
                .map(|w| format!(" of the {w:.0} workers it reports"))
                .unwrap_or_default();
            s.push_str(&format!(
                " At the knee the target's {} read {:.1} busy on average{pool}.",
                sat.metric, sat.busy_mean
            ));
        }
        None => s.push_str(
            " The target's worker count is not known (no --metrics): the advice stops at what the sweep measured.",
        ),
    }
    s
}

pub fn nagle(levels: &[Level]) -> Finding {
    let rule = format!(
        "tiny answers whose body arrives {}-{} ms after the head (the delayed-ACK timer) for most requests",
        analysis::STALL_MIN_MS,
        analysis::STALL_MAX_MS
    );
    let mut f = finding(
        "nagle",
        "No Nagle + delayed-ACK stall",
        Status::Pass,
        String::new(),
        "the body arrives with its head",
        &rule,
    );
    f.evidence = vec![
        evidence::reference("nagle-delayed-ack"),
        evidence::reference("self-nagle"),
        evidence::reference("nagle-40ms"),
        evidence::reference("fixed-cost-invisible"),
    ];
    match analysis::nagle_level(levels) {
        None => {
            let worst = levels.iter().map(|l| l.body_gap_p50_ms).fold(0.0, f64::max);
            f.observed = format!("median head-to-body gap at most {worst:.1} ms at every level");
        }
        Some(l) => {
            f.status = Status::Fail;
            f.observed = format!(
                "at C = {}: {:.0}% of answers ({:.0} B bodies) arrived {:.1} ms (median) after their head; p50 {:.1} ms",
                l.concurrency, l.body_gap_stalled_pct, l.body_bytes_mean, l.body_gap_p50_ms, l.p50_ms
            );
            f.numbers
                .insert("body_gap_p50_ms".into(), l.body_gap_p50_ms);
            f.fix.summary = "The SERVER writes header and body in two writes with Nagle on: set TCP_NODELAY on the server's sockets or write the response in one write. TCP_NODELAY on the client (rtcheck already sets it) cannot help: the server's second write waits for the client's delayed ACK.".into();
            f.fix.runtime = vec![
                "proof: rtcheck set TCP_NODELAY on its side and the body still waited for the delayed-ACK timer, so the wait is the server's second write".into(),
                "after the server fix, rerun with --concurrency 1: p50 and the head-to-body gap drop by about 40 ms".into(),
            ];
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::model::Saturation;

    fn k() -> Knee {
        Knee {
            concurrency: 4,
            throughput_rps: 1200.0,
            p99_ms: 3.0,
            last_concurrency: 32,
            throughput_gain_pct: 1.0,
            p99_factor: 8.0,
        }
    }

    #[test]
    fn knee_advice_says_what_was_measured_and_no_assumed_pool() {
        let a = knee_advice(&k(), None);
        assert!(a.contains("C = 4 (1200 req/s)"), "{a}");
        assert!(a.contains("x8.0 by C = 32"), "{a}");
        assert!(!a.contains("8 workers") && !a.contains("6 of 8"), "{a}");
        assert!(a.contains("worker count is not known"), "{a}");
        let mut l = crate::load::analysis::tests::lvl(4, 1200.0, 3.0);
        l.saturation = Some(Saturation {
            metric: "rtcheck_work_busy_workers".into(),
            busy_mean: 3.6,
            busy_max: 4.0,
            workers: Some(4.0),
            saturation_pct: Some(90.0),
            queue_max: None,
            samples: 10,
        });
        let a = knee_advice(&k(), Some(&l));
        assert!(
            a.contains("3.6 busy on average of the 4 workers it reports"),
            "{a}"
        );
    }
}
