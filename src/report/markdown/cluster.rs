//! markdown rendering of `bench cluster` (for docs, BENCHMARKS.md and PR comments).
use crate::bench::cluster::model::ClusterReport;
use crate::report::text::bench::ms;
use crate::report::text::cluster::{dups, ghosts, order};

fn delta(v: Option<f64>) -> String {
    v.map(|x| format!("{x:+.1}")).unwrap_or_else(|| "-".into())
}

pub fn render(rep: &ClusterReport) -> String {
    let mut out = format!(
        "### rtcheck bench cluster\n\n{} nodes, {} clients spread over them, {} rounds x {} B at {}/s from node a; Redis: {}; presence TTL {} s; {} cores shared by nodes, Redis and clients.\n\n",
        rep.nodes,
        rep.connections,
        rep.rounds,
        rep.size,
        crate::evidence::fmt_num(rep.rate),
        rep.redis,
        crate::evidence::fmt_num(rep.presence_ttl_s),
        rep.host_cores
    );
    out.push_str("| scenario | nodes | p50 | p99 | p99.9 (ms) | p50 / p99 vs single | received | lost (silent, gap-reported) | duplicates (by node) | order | ghosts | valid |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|\n");
    for r in &rep.scenarios {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} / {} | {} | {} ({}, {}) | {} | {} | {} | {} |\n",
            r.name,
            r.nodes,
            ms(r.p50_ms),
            ms(r.p99_ms),
            ms(r.p999_ms),
            delta(r.delta_p50_ms),
            delta(r.delta_p99_ms),
            r.received,
            r.lost,
            r.lost_silently,
            r.gap_reported,
            dups(r),
            order(r),
            ghosts(r),
            if r.valid { "yes" } else { "**INVALID**" }
        ));
    }
    out.push('\n');
    for r in &rep.scenarios {
        let mut items: Vec<String> = r
            .checks
            .iter()
            .filter(|c| c.status != crate::findings::Status::Pass)
            .map(|c| format!("{} {}: {}", c.status.as_str(), c.name, c.detail))
            .collect();
        items.extend(r.notes.iter().cloned());
        out.push_str(&format!(
            "- **{}** ({}): {}\n",
            r.name,
            r.description,
            items.join("; ")
        ));
    }
    let cited = crate::report::text::cluster::sources(rep);
    out.push_str(&format!("\nThe article ({cited}): "));
    let seed: Vec<String> = rep
        .reference
        .iter()
        .map(|e| format!("`{}` {}", e.id, e.claim))
        .collect();
    out.push_str(&seed.join(" "));
    out.push('\n');
    out
}
