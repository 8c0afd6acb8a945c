//! markdown rendering of bench results (for BENCHMARKS.md and PR comments).
use crate::bench::model::{BenchReport, IdleReport};
use crate::report::text::bench::{count, floor_ratio, ms, rss_growth};

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
    out.push_str("| scenario | p50 | p99 | p99.9 | max (ms) | > 100 ms | > 1 s | rounds | last client med / max | hub med / max | drops | removed | server RSS MB | RSS growth MB/s | server CPU s | client CPU s | p99 / F | p99.9 / F | valid |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for r in &rep.scenarios {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {}/{} | {} / {} | {} / {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} |\n",
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
            rss_growth(r),
            r.server_cpu_s.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into()),
            r.client_cpu_s,
            floor_ratio(r.p99_vs_floor),
            floor_ratio(r.p999_vs_floor),
            if r.valid { "yes" } else { "**INVALID**" }
        ));
    }
    out.push('\n');
    for r in &rep.scenarios {
        out.push_str(&format!("- **{}** ({}):", r.name, r.description));
        let mut items: Vec<String> = r
            .checks
            .iter()
            .filter(|c| c.status != crate::findings::Status::Pass)
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

#[cfg(test)]
mod tests {
    use crate::bench::model::BenchReport;
    use crate::bench::validity::{analyze, Inputs};
    use crate::bench::wire::{LoadgenResult, RoundStat};
    use rtcheck_wire::stats::ServerStats;

    /// One valid row (A) and one with an unexplained gap (C3).
    fn report() -> BenchReport {
        let round = |received, live| RoundStat {
            received,
            first_ms: 1.0,
            last_ms: 5.0,
            missing_removed: 0,
            missing_live: live,
        };
        let lg = |rounds: Vec<RoundStat>| LoadgenResult {
            connections: 10,
            connected: 10,
            rounds,
            cores: 2,
            cpu_run_s: 1.0,
            wall_run_s: 10.0,
            nodelay_checked: 10,
            p50_ms: 1.5,
            p99_ms: 4.0,
            p999_ms: 4.5,
            max_ms: 5.0,
            samples: 20,
            ..Default::default()
        };
        let s = ServerStats {
            rounds_sent: 2,
            nodelay: Some(true),
            hub_round_ms: vec![1.0, 2.0],
            ..Default::default()
        };
        let good = lg(vec![round(10, 0), round(10, 0)]);
        let gap = lg(vec![round(10, 0), round(7, 3)]);
        let inp = |name: &str, l| Inputs {
            name: name.into(),
            description: "d".into(),
            stall_expected: false,
            lg: l,
            server: Some(&s),
            server_cpu_start: Some(0.0),
            server_peak_rss: Some(9_000_000),
            rounds_total: 2,
            rate: 5.0,
            size: 1024,
            duration_s: 1.0,
            time_bound_s: 6.0,
            control: None,
        };
        let scenarios = vec![analyze(&inp("A", &good)), analyze(&inp("C3", &gap))];
        BenchReport {
            command: "bench fanout".into(),
            server: "embedded".into(),
            connections: 10,
            rounds: 2,
            size: 1024,
            rate: 5.0,
            slow: 0,
            host_cores: 2,
            valid: false,
            scenarios,
            app_protocol: None,
        }
    }

    #[test]
    fn invalid_rows_show_no_numbers() {
        let md = super::render(&report());
        let row = |name: &str| -> Vec<String> {
            let l = md
                .lines()
                .find(|l| l.starts_with(&format!("| {name} |")))
                .unwrap();
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        };
        let a = row("A");
        assert_eq!(
            (a[1].as_str(), a[3].as_str(), a[18].as_str()),
            ("1.5", "4.5", "yes")
        );
        let c3 = row("C3");
        assert_eq!((c3[1].as_str(), c3[3].as_str()), ("-", "-"));
        assert_eq!(c3[18], "**INVALID**");
        assert!(md.contains("3 samples unexplained"), "{md}");
        let text =
            crate::report::text::bench::render(&report(), &crate::report::Palette::plain(), false);
        let line = text.lines().find(|l| l.contains("C3 ")).unwrap();
        let cells: Vec<&str> = line.split(['│', '┆']).map(str::trim).collect();
        assert_eq!(cells[2], "INVALID", "{line}");
        assert!(
            cells[3..].iter().all(|c| c.is_empty() || *c == "-"),
            "{line}"
        );
        assert!(
            text.starts_with("rtcheck bench fanout: INVALID: 1 of"),
            "{text}"
        );
    }
}
