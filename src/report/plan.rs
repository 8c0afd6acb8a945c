//! `rtcheck bench plan` as one [`Doc`]: the machine count first, then how each resource
//! (cpu, memory, ports) comes to its count, the bandwidth received and the notes. Written
//! once for text and markdown (the command has no html page).
use crate::bench::plan::Plan;
use crate::report::doc::{num, t, Block, Doc, Span, Tone, Verdict};
use rtcheck_base::units::{fmt_bytes, fmt_thousands};

pub fn plan_doc(p: &Plan) -> anyhow::Result<Doc> {
    let mut lines = resources(p);
    // Said in decimal units, not the JSON's bytes: not tagged with its path.
    let bandwidth = fmt_bytes(p.bytes_per_s as u64);
    lines.push(vec![t(format!("bandwidth received: {bandwidth}/s"))]);
    lines.extend(p.notes.iter().map(|n| vec![t(n)]));
    Ok(Doc {
        title: "rtcheck bench plan".into(),
        verdict: verdict(p),
        blocks: vec![Block::List(lines)],
        json: crate::report::json::render(p)?,
    })
}

/// The count and what binds it: information, neither good nor bad.
fn verdict(p: &Plan) -> Verdict {
    let i = &p.inputs;
    Verdict {
        text: vec![
            num("machines", fmt_thousands(p.machines)),
            t(format!(
                " load machine(s) for {} connections at {} msg/s each (bound by {})",
                fmt_thousands(i.connections),
                i.rate,
                p.bound_by
            )),
        ],
        tone: Tone::Plain,
    }
}

/// Each resource: what is needed, what one machine has, the machines that makes.
fn resources(p: &Plan) -> Vec<Vec<Span>> {
    let i = &p.inputs;
    vec![
        vec![
            t(format!(
                "cpu: {:.1} cores for {} msg/s x {:.2} us = ",
                p.cpu_cores_needed,
                fmt_thousands(p.messages_per_s.round() as u64),
                i.cpu_us_per_message
            )),
            num("machines_for_cpu", fmt_thousands(p.machines_for_cpu)),
            t(format!(" machine(s) of {} cores", i.cores)),
        ],
        vec![
            t(format!(
                "memory: {} at {:.0} B per connection = ",
                fmt_bytes(p.memory_bytes_needed as u64),
                i.rss_bytes_per_connection
            )),
            num("machines_for_memory", fmt_thousands(p.machines_for_memory)),
            t(format!(" machine(s) of {}", fmt_bytes(i.memory_bytes))),
        ],
        vec![
            t(format!(
                "ports: {} per source address x {} address(es) = ",
                fmt_thousands(i.ports_per_address),
                i.source_addresses
            )),
            num("machines_for_ports", fmt_thousands(p.machines_for_ports)),
            t(" machine(s)"),
        ],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plan::{plan, PlanInputs};
    use crate::report::doc::{markdown, text};

    /// The count first, each resource's sum after it, in text and markdown alike.
    #[test]
    fn the_count_comes_first_and_each_resource_says_how() {
        let p = plan(PlanInputs {
            connections: 1_000_000,
            rate: 1.0,
            size: 100,
            cpu_us_per_message: 4.0,
            rss_bytes_per_connection: 2048.0,
            figures_from: "flags".into(),
            cores: 8,
            memory_bytes: 16 << 30,
            ports_per_address: 28232,
            source_addresses: 8,
        });
        let d = plan_doc(&p).unwrap();
        let txt = text::render(&d, &crate::report::Palette::plain());
        let first = format!("{} load machine(s) for 1,000,000 connections", p.machines);
        assert!(txt.starts_with(&first), "{txt}");
        assert!(
            txt.contains("  - ports: 28,232 per source address x 8"),
            "{txt}"
        );
        assert!(txt.lines().all(|l| l.chars().count() <= 80), "{txt}");
        let md = markdown::render(&d);
        assert!(md.contains(&format!("**{first}")), "{md}");
        assert!(md.contains("- memory: "), "{md}");
    }
}
