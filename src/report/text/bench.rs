//! text rendering of bench results: one latency table, one server table, then each
//! scenario's checks and notes. Invalid rows show "invalid" instead of numbers.
use crate::bench::model::{BenchReport, IdleReport, ScenarioResult};
use crate::report::{Palette, Status};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};

pub fn ms(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x >= 100.0 => crate::evidence::fmt_num(x.round()),
        Some(x) => format!("{x:.1}"),
    }
}

pub fn count(v: Option<u64>) -> String {
    v.map(|x| crate::evidence::fmt_num(x as f64))
        .unwrap_or_else(|| "-".into())
}

pub fn ratio(v: Option<f64>) -> String {
    v.map(|x| format!("x{x:.2}")).unwrap_or_else(|| "-".into())
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(header.iter().map(Cell::new).collect::<Vec<_>>());
    t
}

fn right(t: &mut Table, from: usize) {
    let n = t.column_count();
    for i in from..n {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

fn latency_row(r: &ScenarioResult, p: &Palette) -> Vec<String> {
    let name = if r.valid {
        r.name.clone()
    } else {
        format!("{} {}", r.name, p.bad("INVALID"))
    };
    vec![
        name,
        ms(r.p50_ms),
        ms(r.p99_ms),
        ms(r.p999_ms),
        ms(r.max_ms),
        count(r.over_100ms),
        count(r.over_1s),
        format!("{}/{}", r.rounds_completed, r.rounds_total),
        format!(
            "{} / {}",
            ms(r.last_client_median_ms),
            ms(r.last_client_max_ms)
        ),
        ratio(r.p99_vs_floor),
        ratio(r.p999_vs_floor),
    ]
}

fn server_row(r: &ScenarioResult) -> Vec<String> {
    vec![
        r.name.clone(),
        format!("{} / {}", ms(r.hub_median_ms), ms(r.hub_max_ms)),
        count(r.drops),
        count(r.removed),
        r.server_rss_mb
            .map(|x| format!("{x:.0}"))
            .unwrap_or_else(|| "-".into()),
        r.server_cpu_s
            .map(|x| format!("{x:.1}"))
            .unwrap_or_else(|| "-".into()),
        format!("{:.1}", r.client_cpu_s),
        ms(r.round_start_drift_max_ms),
    ]
}

pub fn render(rep: &BenchReport, p: &Palette) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{}: {} connections, {} rounds x {} B at {}/s, server {}, {} cores (server and load generator share them)\n\n",
        p.bold("rtcheck bench fanout"),
        crate::evidence::fmt_num(rep.connections as f64),
        rep.rounds,
        rep.size,
        crate::evidence::fmt_num(rep.rate),
        rep.server,
        rep.host_cores
    ));
    let mut t = table(&[
        "scenario",
        "p50",
        "p99",
        "p99.9",
        "max",
        ">100ms",
        ">1s",
        "rounds",
        "last client med/max",
        "p99/F",
        "p99.9/F",
    ]);
    for r in &rep.scenarios {
        t.add_row(latency_row(r, p));
    }
    right(&mut t, 1);
    out.push_str("latency (ms, receive time - scheduled send time, healthy clients)\n");
    out.push_str(&t.to_string());
    out.push_str("\n\n");
    let mut t = table(&[
        "scenario",
        "hub med/max ms",
        "drops",
        "removed",
        "server peak RSS MB",
        "server CPU s",
        "client CPU s",
        "start drift max ms",
    ]);
    for r in &rep.scenarios {
        t.add_row(server_row(r));
    }
    right(&mut t, 1);
    out.push_str("server and hosts\n");
    out.push_str(&t.to_string());
    out.push_str("\n\n");
    for r in &rep.scenarios {
        out.push_str(&format!(
            "{} {}: {}\n",
            p.bold(&r.name),
            if r.valid {
                p.good("valid")
            } else {
                p.bad("INVALID")
            },
            r.description
        ));
        // A C run on a foreign hub: the shape found is the verdict, before the checks.
        let shape = r.shape.as_ref().map(|v| v.verdict.as_str());
        if let Some(v) = &r.shape {
            out.push_str(&format!(
                "  {} {} [evidence: {}]\n",
                p.bold("shape"),
                v.verdict,
                v.evidence
            ));
        }
        for c in &r.checks {
            out.push_str(&format!(
                "  {:5} {}: {}\n",
                p.status(c.status),
                c.name,
                c.detail
            ));
        }
        for n in r
            .notes
            .iter()
            .filter(|n| shape.is_none_or(|v| !n.starts_with(v)))
        {
            out.push_str(&format!("  note  {n}\n"));
        }
        if let Some(e) = &r.reference {
            out.push_str(&format!(
                "  seed  {} ({}: Go + gorilla, 10,000 clients, 10 vCPU)\n",
                e.claim, e.source
            ));
        }
    }
    let invalid = rep.scenarios.iter().filter(|r| !r.valid).count();
    if invalid > 0 {
        out.push_str(&format!(
            "\n{}\n",
            p.bad(&format!(
                "{invalid} scenario(s) invalid: their numbers are withheld (see the checks above)"
            ))
        ));
    }
    out
}

pub fn render_idle(rep: &IdleReport, p: &Palette) -> String {
    let mut out = format!(
        "{}: server RSS per idle connection, {} connections (target: at most {} B per WebSocket)\n\n",
        p.bold("rtcheck bench idle"),
        crate::evidence::fmt_num(rep.connections as f64),
        crate::evidence::fmt_num(rep.target_bytes_per_connection as f64)
    );
    let mut t = table(&[
        "protocol",
        "connected",
        "RSS before",
        "RSS after",
        "per connection",
        "status",
    ]);
    for r in &rep.results {
        let status = match r.bytes_per_connection {
            None => p.bad("invalid"),
            Some(b) if r.protocol == "ws" && b > rep.target_bytes_per_connection as f64 => {
                p.status(Status::Fail)
            }
            Some(_) => p.status(Status::Pass),
        };
        t.add_row(vec![
            r.protocol.clone(),
            crate::evidence::fmt_num(r.connected as f64),
            crate::units::fmt_bytes(r.rss_before_bytes),
            crate::units::fmt_bytes(r.rss_after_bytes),
            r.bytes_per_connection
                .map(|b| format!("{:.0} B", b))
                .unwrap_or_else(|| "-".into()),
            status,
        ]);
    }
    right(&mut t, 1);
    out.push_str(&t.to_string());
    out.push('\n');
    for r in &rep.results {
        for n in &r.notes {
            out.push_str(&format!("  {}: {n}\n", r.protocol));
        }
    }
    out.push_str(&format!(
        "  seed  {} ({})\n",
        rep.reference.claim, rep.reference.source
    ));
    out
}
