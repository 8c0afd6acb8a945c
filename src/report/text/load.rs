//! text rendering of a load sweep: verdicts first, then the levels (80 columns).
use crate::findings::Status;
use crate::load::model::{Level, LoadReport};
use crate::report::Palette;

fn row(l: &Level, p: &Palette) -> String {
    if !l.valid {
        let mut s = format!("{:>5}  {}\n", l.concurrency, p.bad("INVALID:"));
        for line in wrap(&l.invalid.join("; "), 70) {
            s.push_str(&format!("{:9}{line}\n", ""));
        }
        return s;
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
        "{} {}\n{} loop, latency from the {}; {} level(s) x {:.1} s\n\n",
        r.method,
        r.url,
        r.mode,
        r.latency_from,
        r.levels.len(),
        r.step_ms / 1000.0
    );
    for f in &r.findings {
        let mut lines = wrap(&f.observed, 62).into_iter();
        let first = lines.next().unwrap_or_default();
        s.push_str(&format!("{:<4} {:<11} {first}\n", p.status(f.status), f.id));
        for l in lines {
            s.push_str(&format!("{:17}{l}\n", ""));
        }
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
    s.push_str("\norder of reaction on this target:\n");
    for x in &r.order_of_reaction {
        let at = x
            .concurrency
            .map_or("not within the sweep".into(), |c| format!("C = {c}"));
        s.push_str(&format!("  {:<11} {at}\n", x.signal));
    }
    for f in r.findings.iter().filter(|f| f.status >= Status::Warn) {
        s.push_str(&format!("\n{} {}:\n", p.status(f.status), f.id));
        // A command stays on one line to be copied, even past the width; prose wraps.
        let runtime = f.fix.runtime.iter().flat_map(|c| {
            if crate::report::is_shell_command(c) {
                vec![format!("- {c}")]
            } else {
                wrap(&format!("- {c}"), p.width.saturating_sub(4))
            }
        });
        for line in wrap(&f.fix.summary, p.width.saturating_sub(4))
            .into_iter()
            .chain(runtime)
        {
            s.push_str(&format!("  {line}\n"));
        }
    }
    s
}

/// `text` as lines of at most `width` columns (the shared policy: `report::text::wrap`).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    super::wrap(text, width, "", "")
        .lines()
        .map(str::to_string)
        .collect()
}
