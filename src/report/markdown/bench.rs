//! markdown rendering of `bench plan` (`bench fanout` and `bench idle` are
//! [`crate::report::doc::Doc`]s: [`crate::report::fanout`], [`crate::report::idle`]).

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
