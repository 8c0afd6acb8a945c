//! markdown rendering of `bench plan` and `bench idle` (`bench fanout` is a
//! [`crate::report::doc::Doc`]: [`crate::report::fanout`]).
use crate::bench::model::IdleReport;

/// `bench plan` as a table.
pub fn render_plan(p: &crate::bench::plan::Plan) -> String {
    let i = &p.inputs;
    let mut out = format!(
        "### rtcheck bench plan\n\n**{} load machine(s)** for {} connections at {} msg/s each (bound by {}).\n\n| resource | needed | per machine | machines |\n|---|---:|---:|---:|\n",
        p.machines, i.connections, i.rate, p.bound_by
    );
    out.push_str(&format!(
        "| cpu | {:.1} cores | {} cores | {} |\n| memory | {:.0} B | {} B | {} |\n| ports | {} | {} | {} |\n\n",
        p.cpu_cores_needed,
        i.cores,
        p.machines_for_cpu,
        p.memory_bytes_needed,
        i.memory_bytes,
        p.machines_for_memory,
        i.connections,
        i.ports_per_address * i.source_addresses,
        p.machines_for_ports
    ));
    for n in &p.notes {
        out.push_str(&format!("- {n}\n"));
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
            rtcheck_base::units::fmt_bytes(r.rss_before_bytes),
            rtcheck_base::units::fmt_bytes(r.rss_after_bytes),
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
