//! markdown rendering of a load sweep.
use crate::load::model::LoadReport;

pub fn render(r: &LoadReport) -> String {
    let mut s = format!(
        "# Load sweep: {} {}\n\n{} loop, latency from the {}, {} ms per level, timeout {} ms, client engine {}.\n\n",
        r.method,
        r.url,
        r.mode,
        r.latency_from,
        r.step_ms,
        r.timeout_ms,
        r.client_engine.as_str()
    );
    s.push_str("| C | req/s | p50 ms | p99 ms | max ms | errors | W = C/X ms | mean ms | saturation | loadgen CPU | valid |\n");
    s.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for l in &r.levels {
        s.push_str(&format!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}% | {} | {:.1} | {} | {:.0}% | {} |\n",
            l.concurrency,
            l.throughput_rps,
            l.p50_ms,
            l.p99_ms,
            l.max_ms,
            l.error_rate,
            l.littles_law_w_ms.map_or("-".into(), |w| format!("{w:.1}")),
            l.mean_ms,
            l.saturation
                .as_ref()
                .and_then(|x| x.saturation_pct)
                .map_or("-".into(), |p| format!("{p:.0}%")),
            l.loadgen_cpu_pct,
            if l.valid {
                "yes".to_string()
            } else {
                format!("no: {}", l.invalid.join("; "))
            }
        ));
    }
    s.push_str("\n## Findings\n\n");
    for f in &r.findings {
        s.push_str(&format!(
            "- **{}** `{}`: {}\n",
            f.status.as_str(),
            f.id,
            f.observed
        ));
    }
    s
}
