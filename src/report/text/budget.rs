//! text rendering of a latency budget: the verdict line first, then the hops.
use crate::budget::model::{BudgetReport, Live};
use crate::report::text::load::wrap;
use crate::report::Palette;

fn row(s: &mut String, label: &str, new: f64, reused: f64) {
    s.push_str(&format!(
        "  {label:<11} {:>9.1} ms  {:>9.1} ms\n",
        new, reused
    ));
}

fn live(s: &mut String, l: &Live, p: &Palette) {
    s.push_str(&format!(
        "\nLive ({} rounds, medians, TCP_NODELAY on the client):\n",
        l.rounds
    ));
    if let Some(why) = &l.invalid {
        s.push_str(&format!("  {} {why}\n", p.bad("INVALID:")));
        return;
    }
    // Right-aligned over "{:>7.1} ms", as the rows below print.
    s.push_str(&format!(
        "  {:<11} {:>10} {:>10}\n",
        "", "measured", "computed"
    ));
    let c = &l.computed;
    for (label, m, x) in [
        ("sequential", l.sequential_ms, c.sequential_ms),
        ("parallel", l.parallel_ms, c.parallel_ms),
        ("seq reused", l.sequential_reused_ms, c.sequential_reused_ms),
        ("par reused", l.parallel_reused_ms, c.parallel_reused_ms),
    ] {
        s.push_str(&format!("  {label:<11} {m:>7.1} ms {x:>7.1} ms\n"));
    }
    for h in &l.hops {
        s.push_str(&format!(
            "  {} {}: connect {:.1} ms, call {:.1} ms\n",
            p.dim("-"),
            h.name,
            h.rtt_ms,
            h.server_time_ms
        ));
    }
}

pub fn render(r: &BudgetReport, p: &Palette) -> String {
    let n = r.hops.len();
    let mut s = format!(
        "{n} hop{}: sequential {:.1} ms, parallel {:.1} ms (slowest hop {}, {:.1} ms)\n",
        if n == 1 { "" } else { "s" },
        r.sequential_ms,
        r.parallel_ms,
        p.bold(&r.slowest_hop.name),
        r.slowest_hop.ms
    );
    // Right-aligned over "{:>9.1} ms", as `row` prints.
    s.push_str(&format!(
        "\n  {:<11} {:>12}  {:>12}\n",
        "", "new conn", "reused"
    ));
    row(
        &mut s,
        "sequential",
        r.sequential_ms,
        r.sequential_reused_ms,
    );
    row(&mut s, "parallel", r.parallel_ms, r.parallel_reused_ms);
    s.push_str(&format!(
        "  as configured: sequential {:.1} ms, parallel {:.1} ms\n",
        r.as_configured.sequential_ms, r.as_configured.parallel_ms
    ));
    s.push_str(&format!(
        "  fan-out tail: {:.1}% of requests meet a hop at its p99 (1 - 0.99^{})\n",
        r.tail_amplification * 100.0,
        r.hops.len()
    ));
    if let Some(t) = &r.tail {
        s.push_str(&format!(
            "  at the p99 of {}: parallel {:.1} ms\n",
            t.hop, t.parallel_p99_ms
        ));
    }
    if let Some(d) = &r.deadline {
        s.push_str(&format!(
            "  deadline {:.0} ms: parallel {:.1} ms, p99 {:.1} ms\n    always cut: {}; tail cut: {}\n",
            d.deadline_ms,
            d.parallel_ms,
            d.parallel_p99_ms,
            list(&d.always_cut),
            list(&d.tail_cut)
        ));
    }
    if let Some(h) = &r.hedge {
        s.push_str(&format!(
            "  hedge after {:.0} ms: p99 {:.1} ms for at most {:.0}% extra calls\n",
            h.after_ms, h.parallel_p99_ms, h.extra_calls_max_pct
        ));
    }
    if let Some(l) = &r.live {
        live(&mut s, l, p);
    }
    for f in &r.findings {
        s.push_str(&format!("\n{} {}:\n", p.status(f.status), f.id));
        let text = format!("{}; expected {}", f.observed, f.expected);
        for line in wrap(&text, p.width.saturating_sub(4)) {
            s.push_str(&format!("  {line}\n"));
        }
    }
    s.push('\n');
    for line in wrap(&format!("model: {}", r.model), p.width.saturating_sub(2)) {
        s.push_str(&format!("{}\n", p.dim(&line)));
    }
    s
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}
