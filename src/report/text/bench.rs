//! text rendering of `bench plan` (`bench fanout` and `bench idle` are
//! [`crate::report::doc::Doc`]s: [`crate::report::fanout`], [`crate::report::idle`]), and
//! the millisecond format bench reports share.
use crate::report::Palette;

pub fn ms(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x >= 100.0 => crate::evidence::fmt_num(x.round()),
        Some(x) => format!("{x:.1}"),
    }
}

/// `bench plan`: the machine count first, then each resource's count and the inputs.
pub fn render_plan(p: &crate::bench::plan::Plan, pal: &Palette) -> String {
    use rtcheck_base::units::{fmt_bytes, fmt_thousands};
    let i = &p.inputs;
    let mut out = format!(
        "{} load machine(s) for {} connections at {} msg/s each (bound by {})\n\n",
        fmt_thousands(p.machines),
        fmt_thousands(i.connections),
        i.rate,
        p.bound_by
    );
    let lines = [
        format!(
            "cpu: {:.1} cores for {} msg/s x {:.2} us = {} machine(s) of {} cores",
            p.cpu_cores_needed,
            fmt_thousands(p.messages_per_s.round() as u64),
            i.cpu_us_per_message,
            fmt_thousands(p.machines_for_cpu),
            i.cores
        ),
        format!(
            "memory: {} at {:.0} B per connection = {} machine(s) of {}",
            fmt_bytes(p.memory_bytes_needed as u64),
            i.rss_bytes_per_connection,
            fmt_thousands(p.machines_for_memory),
            fmt_bytes(i.memory_bytes)
        ),
        format!(
            "ports: {} per source address x {} address(es) = {} machine(s)",
            fmt_thousands(i.ports_per_address),
            i.source_addresses,
            fmt_thousands(p.machines_for_ports)
        ),
        format!("bandwidth received: {}/s", fmt_bytes(p.bytes_per_s as u64)),
    ];
    for l in lines.iter().chain(&p.notes) {
        out.push_str(&super::wrap(l, pal.width, "- ", "  "));
    }
    out
}
