//! text rendering of `bench plan` and `bench idle` (`bench fanout` is a
//! [`crate::report::doc::Doc`]: [`crate::report::fanout`]), and the millisecond format
//! bench reports share.
use super::table::{fit, Layout, Tone};
use super::wrap;
use crate::bench::model::IdleReport;
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

pub fn render_idle(rep: &IdleReport, p: &Palette) -> String {
    let invalid: Vec<&str> = rep
        .results
        .iter()
        .filter(|r| !r.valid)
        .map(|r| r.protocol.as_str())
        .collect();
    let over: Vec<&str> = rep
        .results
        .iter()
        .filter(|r| {
            r.protocol == "ws"
                && r.bytes_per_connection
                    .is_some_and(|b| b > rep.target_bytes_per_connection as f64)
        })
        .map(|r| r.protocol.as_str())
        .collect();
    let (ok, verdict) = if rep.valid && invalid.is_empty() && !over.is_empty() {
        (
            false,
            format!(
                "every result valid ({} protocols); {} fail: over the target",
                rep.results.len(),
                over.join(", ")
            ),
        )
    } else if rep.valid && invalid.is_empty() {
        (
            true,
            format!("every result valid ({} protocols)", rep.results.len()),
        )
    } else if invalid.is_empty() {
        (false, "INVALID: see the notes".to_string())
    } else {
        (
            false,
            format!("INVALID: {} (no number shown for it)", invalid.join(", ")),
        )
    };
    let mut out = super::verdict_line("rtcheck bench idle", &verdict, ok, p);
    out.push_str(&wrap(
        &format!(
            "server RSS per idle connection, {} connections (target: at most {} B per WebSocket)",
            crate::evidence::fmt_num(rep.connections as f64),
            crate::evidence::fmt_num(rep.target_bytes_per_connection as f64)
        ),
        p.width,
        "",
        "  ",
    ));
    out.push('\n');
    let mut rows = Vec::new();
    let mut tones = Vec::new();
    for (n, r) in rep.results.iter().enumerate() {
        let (status, tone) = match r.bytes_per_connection {
            None => ("invalid", Tone::Bad),
            Some(b) if r.protocol == "ws" && b > rep.target_bytes_per_connection as f64 => {
                ("fail", Tone::Bad)
            }
            Some(_) => ("pass", Tone::Good),
        };
        tones.push((n, 5, tone));
        rows.push(vec![
            r.protocol.clone(),
            crate::evidence::fmt_num(r.connected as f64),
            rtcheck_base::units::fmt_bytes(r.rss_before_bytes),
            rtcheck_base::units::fmt_bytes(r.rss_after_bytes),
            r.bytes_per_connection
                .map(|b| format!("{} B", crate::evidence::fmt_num(b.round())))
                .unwrap_or_else(|| "-".into()),
            status.to_string(),
        ]);
    }
    let header = [
        "protocol",
        "connected",
        "RSS before",
        "RSS after",
        "per connection",
        "status",
    ];
    let layout = Layout {
        keep: &[0],
        right: &[1, 2, 3, 4, 5],
        tones: &tones,
        colour: p.enabled,
        ..Default::default()
    };
    out.push_str(&fit(&header, &rows, p.width, &layout));
    out.push('\n');
    for r in &rep.results {
        for n in &r.notes {
            out.push_str(&wrap(n, p.width, &format!("  {}: ", r.protocol), "    "));
        }
    }
    out.push_str(&wrap(
        &format!("{} ({})", rep.reference.claim, rep.reference.source),
        p.width,
        "  seed  ",
        "        ",
    ));
    out
}
