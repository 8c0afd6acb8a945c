//! markdown rendering of bench results (for BENCHMARKS.md and PR comments).
use crate::bench::model::{BenchReport, IdleReport};
use crate::report::text::bench::{count, ms, ratio};

pub fn render(rep: &BenchReport) -> String {
    let mut out = format!(
        "### rtcheck bench fanout\n\n{} connections, {} rounds x {} B at {}/s; server: {}; {} cores shared by server and load generator.\n\n",
        crate::evidence::fmt_num(rep.connections as f64),
        rep.rounds,
        rep.size,
        crate::evidence::fmt_num(rep.rate),
        rep.server,
        rep.host_cores
    );
    out.push_str("| scenario | p50 | p99 | p99.9 | max (ms) | > 100 ms | > 1 s | rounds | last client med / max | hub med / max | drops | removed | server RSS MB | server CPU s | client CPU s | p99 / F | p99.9 / F | valid |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for r in &rep.scenarios {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {}/{} | {} / {} | {} / {} | {} | {} | {} | {} | {:.1} | {} | {} | {} |\n",
            r.name,
            ms(r.p50_ms),
            ms(r.p99_ms),
            ms(r.p999_ms),
            ms(r.max_ms),
            count(r.over_100ms),
            count(r.over_1s),
            r.rounds_completed,
            r.rounds_total,
            ms(r.last_client_median_ms),
            ms(r.last_client_max_ms),
            ms(r.hub_median_ms),
            ms(r.hub_max_ms),
            count(r.drops),
            count(r.removed),
            r.server_rss_mb.map(|x| format!("{x:.0}")).unwrap_or_else(|| "-".into()),
            r.server_cpu_s.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into()),
            r.client_cpu_s,
            ratio(r.p99_vs_floor),
            ratio(r.p999_vs_floor),
            if r.valid { "yes" } else { "**INVALID**" }
        ));
    }
    out.push('\n');
    for r in &rep.scenarios {
        out.push_str(&format!("- **{}** ({}):", r.name, r.description));
        let mut items: Vec<String> = r
            .checks
            .iter()
            .filter(|c| c.status != crate::report::Status::Pass)
            .map(|c| format!("{} {}: {}", c.status.as_str(), c.name, c.detail))
            .collect();
        items.extend(r.notes.iter().cloned());
        if let Some(c) = r.checks.iter().find(|c| c.name == "samples accounted") {
            items.push(c.detail.clone());
        }
        out.push_str(&format!(" {}\n", items.join("; ")));
    }
    out
}

pub fn render_idle(rep: &IdleReport) -> String {
    let mut out = format!(
        "### rtcheck bench idle\n\n{} idle connections; target at most {} B RSS per WebSocket connection.\n\n| protocol | connected | RSS before | RSS after | per connection | valid |\n|---|---:|---:|---:|---:|---|\n",
        crate::evidence::fmt_num(rep.connections as f64),
        crate::evidence::fmt_num(rep.target_bytes_per_connection as f64)
    );
    for r in &rep.results {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.protocol,
            crate::evidence::fmt_num(r.connected as f64),
            crate::units::fmt_bytes(r.rss_before_bytes),
            crate::units::fmt_bytes(r.rss_after_bytes),
            r.bytes_per_connection
                .map(|b| format!("{b:.0} B"))
                .unwrap_or_else(|| "-".into()),
            if r.valid { "yes" } else { "**INVALID**" }
        ));
    }
    out.push_str(&format!(
        "\nSeed: {} ({})\n",
        rep.reference.claim, rep.reference.source
    ));
    out
}
