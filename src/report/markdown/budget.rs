//! markdown rendering of a latency budget.
use crate::budget::model::BudgetReport;

pub fn render(r: &BudgetReport) -> String {
    let mut s =
        String::from("# Latency budget\n\n| way | new connection | reused |\n|---|---:|---:|\n");
    s.push_str(&format!(
        "| sequential | {:.1} ms | {:.1} ms |\n| parallel | {:.1} ms | {:.1} ms |\n\n",
        r.sequential_ms, r.sequential_reused_ms, r.parallel_ms, r.parallel_reused_ms
    ));
    s.push_str(&format!(
        "Slowest hop: **{}** ({:.1} ms). Fan-out tail: {:.2}% of requests meet a hop at its p99.\n\n",
        r.slowest_hop.name,
        r.slowest_hop.ms,
        r.tail_amplification * 100.0
    ));
    s.push_str("| hop | RTT | server time | p99 | reuse |\n|---|---:|---:|---:|---|\n");
    for h in &r.hops {
        s.push_str(&format!(
            "| {} | {:.1} ms | {:.1} ms | {} | {} |\n",
            h.name,
            h.rtt_ms,
            h.server_time_ms,
            h.p99_ms.map_or("-".into(), |p| format!("{p:.1} ms")),
            if h.reuse { "yes" } else { "no" }
        ));
    }
    if let Some(l) = &r.live {
        s.push_str("\n## Live\n\n");
        match &l.invalid {
            Some(why) => s.push_str(&format!("Invalid run: {why}\n")),
            None => {
                s.push_str("| way | measured | computed |\n|---|---:|---:|\n");
                let c = &l.computed;
                for (n, m, x) in [
                    ("sequential", l.sequential_ms, c.sequential_ms),
                    ("parallel", l.parallel_ms, c.parallel_ms),
                    (
                        "sequential reused",
                        l.sequential_reused_ms,
                        c.sequential_reused_ms,
                    ),
                    (
                        "parallel reused",
                        l.parallel_reused_ms,
                        c.parallel_reused_ms,
                    ),
                ] {
                    s.push_str(&format!("| {n} | {m:.1} ms | {x:.1} ms |\n"));
                }
            }
        }
    }
    if !r.findings.is_empty() {
        s.push_str("\n## Findings\n\n");
        for f in &r.findings {
            s.push_str(&format!(
                "- **{}** `{}`: {}\n",
                f.status.as_str(),
                f.id,
                f.observed
            ));
        }
    }
    s.push_str(&format!("\nModel: {}\n", r.model));
    s
}
