//! The budget's findings: pure functions of the computed (and measured) report.
use super::model::{BudgetReport, Live};
use super::{live, plan};
use crate::evidence;
use crate::findings::{Finding, Fix, Status};

/// `latency-budget`: within the budget in sequence (pass), only in parallel (warn), or
/// not at all (fail), with each hop's connection setting.
pub fn budget_finding(r: &BudgetReport, budget_ms: f64) -> Finding {
    let c = &r.as_configured;
    let (mut status, observed) = if c.sequential_ms <= budget_ms {
        (Status::Pass, "within the budget even in sequence")
    } else if c.parallel_ms <= budget_ms {
        (
            Status::Warn,
            "over the budget in sequence, within it only in parallel",
        )
    } else {
        (Status::Fail, "over the budget even in parallel")
    };
    // Fan-out makes one hop's p99 common: over the budget there, a warning at least.
    let tail = r.tail.as_ref().filter(|t| t.parallel_p99_ms > budget_ms);
    if tail.is_some() {
        status = status.max(Status::Warn);
    }
    let tail_text = tail.map_or(String::new(), |t| {
        format!(
            "; at the p99 of {} the request takes {:.1} ms ({:.1}% of requests meet a p99)",
            t.hop,
            t.parallel_p99_ms,
            t.share * 100.0
        )
    });
    let mut f = Finding {
location: None,
        id: "latency-budget".into(),
        title: "The request fits its latency budget".into(),
        status,
        observed: format!(
            "{observed}: sequential {:.1} ms, parallel {:.1} ms (slowest hop {}){tail_text}",
            c.sequential_ms, c.parallel_ms, r.slowest_hop.name
        ),
        expected: format!("total <= {budget_ms:.1} ms"),
        rule: plan::MODEL.into(),
        reason: None,
        evidence: vec![
            evidence::reference("sequential-hops"),
            evidence::reference("fanout-slowest"),
            evidence::reference("connection-reuse"),
        ],
        fix: Fix {
            summary: "Call independent hops in parallel, reuse connections (pool, keep-alive), and give each call a deadline; speed up the slowest hop first.".into(),
            ..Default::default()
        },
        verify: None,
        verification: None,
        numbers: Default::default(),
    };
    f.numbers.insert("budget_ms".into(), budget_ms);
    f.numbers.insert("sequential_ms".into(), c.sequential_ms);
    f.numbers.insert("parallel_ms".into(), c.parallel_ms);
    f
}

/// `live-budget`: the measured totals against the model fed with the measured hops.
pub fn live_finding(l: &Live) -> Finding {
    let off = live::agrees(l, 25.0, 5.0);
    let (status, observed) = match &l.invalid {
        Some(why) => (Status::Fail, format!("invalid run: {why}")),
        None if off.is_empty() => (
            Status::Pass,
            "all four ways within 25% (or 5 ms) of the model".to_string(),
        ),
        None => (Status::Warn, off.join("; ")),
    };
    Finding {
location: None,
        id: "live-budget".into(),
        title: "Measured hops add up as the model says".into(),
        status,
        observed,
        expected: "measured within 25% or 5 ms of computed".into(),
        rule: plan::MODEL.into(),
        reason: None,
        evidence: vec![evidence::reference("self-nagle")],
        fix: Fix {
            summary: "A gap is the tool or server talking (Nagle, pool limits, queueing): find it before trusting the totals.".into(),
            ..Default::default()
        },
        verify: None,
        verification: None,
        numbers: Default::default(),
    }
}
