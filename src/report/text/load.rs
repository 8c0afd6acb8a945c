//! text rendering of a load sweep: verdicts first, then the levels (80 columns).
use crate::load::model::{Level, LoadReport};
use crate::report::{Palette, Status};

fn row(l: &Level, p: &Palette) -> String {
    if !l.valid {
        return format!(
            "{:>5}  {} {}\n",
            l.concurrency,
            p.bad("INVALID:"),
            l.invalid.join("; ")
        );
    }
    let sat = l
        .saturation
        .as_ref()
        .map_or("-".to_string(), |s| match s.saturation_pct {
            Some(pct) => format!("{pct:.0}%"),
            None => format!("{:.1}", s.busy_mean),
        });
    format!(
        "{:>5} {:>8.1} {:>7.1} {:>7.1} {:>7.1} {:>6.2}% {:>7} {:>7.1} {:>5} {:>4.0}%\n",
        l.concurrency,
        l.throughput_rps,
        l.p50_ms,
        l.p99_ms,
        l.max_ms,
        l.error_rate,
        l.littles_law_w_ms.map_or("-".into(), |w| format!("{w:.1}")),
        l.mean_ms,
        sat,
        l.loadgen_cpu_pct
    )
}

pub fn render(r: &LoadReport, p: &Palette) -> String {
    let mut s = format!(
        "{} {} ({} loop, latency from the {}; {} levels x {:.1} s)\n",
        r.method,
        r.url,
        r.mode,
        r.latency_from,
        r.levels.len(),
        r.step_ms / 1000.0
    );
    for f in &r.findings {
        s.push_str(&format!(
            "{:<4} {:<11} {}\n",
            p.status(f.status),
            f.id,
            f.observed
        ));
    }
    s.push_str(&format!(
        "\n    C    req/s  p50 ms  p99 ms  max ms  errors  W=C/X  mean ms   sat  cpu\n{}\n{}\n",
        p.dim(&format!(
            "  errors at timeout {:.0} ms; W=C/X: Little's law, valid within {}% of mean",
            r.timeout_ms, r.littles_law_tolerance_pct
        )),
        p.dim("  sat: target's busy workers (--metrics); cpu: the load generator's")
    ));
    for l in &r.levels {
        s.push_str(&row(l, p));
    }
    let reacted: Vec<String> = r
        .order_of_reaction
        .iter()
        .map(|x| match x.concurrency {
            Some(c) => format!("{} at C = {c}", x.signal),
            None => format!("{}: not within the sweep", x.signal),
        })
        .collect();
    s.push_str(&format!("\norder of reaction: {}\n", reacted.join(", ")));
    for f in r.findings.iter().filter(|f| f.status >= Status::Warn) {
        s.push_str(&format!(
            "\n{} {}: {}\n",
            p.status(f.status),
            f.id,
            f.fix.summary
        ));
        for c in &f.fix.runtime {
            s.push_str(&format!("  {c}\n"));
        }
    }
    s
}
