//! text rendering of bench results: the verdict first, one compact table that fits the
//! width, then each scenario's checks that did not pass and its notes (`--explain`: every
//! check, the full tables). Invalid rows show "INVALID" instead of numbers.
use super::table::{fit, Layout, Tone};
use super::{fit_table, wrap};
use crate::bench::model::{BenchReport, IdleReport, ScenarioResult};
use crate::findings::Status;
use crate::report::Palette;

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

/// The ratio to the floor F, or "F noisy" when F measured a higher percentile than the
/// scenario it bounds: such a floor is noise at this size, and a ratio below 1 would read
/// as if the scenario beat what the host can do at best.
pub fn floor_ratio(v: Option<f64>) -> String {
    match v {
        Some(x) if x < 1.0 => "F noisy".into(),
        v => ratio(v),
    }
}

/// The verdict, the way the html page opens: every result valid, or which are not.
pub fn verdict(rep: &BenchReport) -> (bool, String) {
    let invalid: Vec<&str> = rep
        .scenarios
        .iter()
        .filter(|s| !s.valid)
        .map(|s| s.name.as_str())
        .collect();
    if rep.scenarios.is_empty() {
        (false, "INVALID: no scenario ran".into())
    } else if invalid.is_empty() {
        (
            true,
            format!("every result valid ({} scenarios)", rep.scenarios.len()),
        )
    } else {
        (
            false,
            format!(
                "INVALID: {} of {} scenarios ({}); their numbers are withheld",
                invalid.len(),
                rep.scenarios.len(),
                invalid.join(", ")
            ),
        )
    }
}

/// One compact row: latency, what reached the clients, and the ratio to F. An invalid
/// scenario shows no number at all.
fn compact_row(r: &ScenarioResult) -> Vec<String> {
    if !r.valid {
        let mut row = vec![r.name.clone(), "INVALID".into()];
        row.extend(std::iter::repeat_n("-".to_string(), 7));
        return row;
    }
    vec![
        r.name.clone(),
        ms(r.p50_ms),
        ms(r.p99_ms),
        ms(r.p999_ms),
        ms(r.max_ms),
        count(r.over_1s),
        format!("{}/{}", r.rounds_completed, r.rounds_total),
        count(r.drops),
        floor_ratio(r.p99_vs_floor),
    ]
}

const COMPACT: [&str; 9] = [
    "scenario", "p50", "p99", "p99.9", "max", ">1s", "rounds", "drops", "p99/F",
];

fn latency_row(r: &ScenarioResult) -> Vec<String> {
    if !r.valid {
        let mut row = vec![r.name.clone(), "INVALID".into()];
        row.extend(std::iter::repeat_n("-".to_string(), 9));
        return row;
    }
    vec![
        r.name.clone(),
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
        floor_ratio(r.p99_vs_floor),
        floor_ratio(r.p999_vs_floor),
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
        rss_growth(r),
        r.server_cpu_s
            .map(|x| format!("{x:.1}"))
            .unwrap_or_else(|| "-".into()),
        format!("{:.1}", r.client_cpu_s),
        ms(r.round_start_drift_max_ms),
    ]
}

/// The server's RSS growth while the run sent (MB/s), measured on its process.
pub fn rss_growth(r: &ScenarioResult) -> String {
    r.server_process
        .as_ref()
        .map(|p| format!("{:+.2}", p.rss_growth_mb_per_s))
        .unwrap_or_else(|| "-".into())
}

/// A floor that measured a higher p99 than a scenario it bounds: said once, in words.
fn noisy_floor(rep: &BenchReport) -> Option<String> {
    let f = rep.scenarios.iter().find(|s| s.name == "F" && s.valid)?;
    let below: Vec<&str> = rep
        .scenarios
        .iter()
        .filter(|s| s.valid && s.p99_vs_floor.is_some_and(|x| x < 1.0))
        .map(|s| s.name.as_str())
        .collect();
    (!below.is_empty()).then(|| {
        format!(
            "F noisy: the floor measured p99 {} ms, above {}; at this size the floor is noise, so no ratio to it is shown there. Re-run with more connections or rounds for a floor that bounds.",
            ms(f.p99_ms),
            below.join(", ")
        )
    })
}

/// A scenario's block: its checks (all under `explain`, else only those that did not
/// pass), its shape, its notes, and under `explain` the seed's figures.
fn scenario_block(r: &ScenarioResult, p: &Palette, explain: bool) -> String {
    let w = p.width;
    let failed: Vec<_> = r
        .checks
        .iter()
        .filter(|c| explain || c.status != Status::Pass)
        .collect();
    let mut out = String::new();
    let head = format!(
        "{} {}: {}",
        r.name,
        if r.valid { "valid" } else { "INVALID" },
        r.description
    );
    let head = wrap(&head, w, "", "  ");
    let styled = if r.valid {
        p.good("valid")
    } else {
        p.bad("INVALID")
    };
    let status_word = if r.valid { "valid" } else { "INVALID" };
    out.push_str(&head.replacen(
        &format!("{} {status_word}", r.name),
        &format!("{} {styled}", p.bold(&r.name)),
        1,
    ));
    // A C run on a foreign hub: the shape found is the verdict, before the checks.
    let shape = r.shape.as_ref().map(|v| v.verdict.as_str());
    if let Some(v) = &r.shape {
        out.push_str(&wrap(
            &format!("{} [evidence: {}]", v.verdict, v.evidence),
            w,
            "  shape ",
            "        ",
        ));
    }
    for c in failed {
        let st = c.status.as_str();
        let line = wrap(
            &format!("{}: {}", c.name, c.detail),
            w,
            &format!("  {st:5} "),
            "        ",
        );
        out.push_str(&line.replacen(st, &p.status(c.status), 1));
    }
    for n in r
        .notes
        .iter()
        .filter(|n| shape.is_none_or(|v| !n.starts_with(v)))
    {
        out.push_str(&wrap(n, w, "  note  ", "        "));
    }
    if explain {
        if let Some(e) = &r.reference {
            out.push_str(&wrap(
                &format!(
                    "{} ({}: Go + gorilla, 10,000 clients, 10 vCPU)",
                    e.claim, e.source
                ),
                w,
                "  seed  ",
                "        ",
            ));
        }
    }
    out
}

/// The text report: the verdict first, the set-up, one compact table that fits the width,
/// then per scenario what did not pass and its notes. `explain` adds the full latency and
/// server tables, every check and the seed's figures.
pub fn render(rep: &BenchReport, p: &Palette, explain: bool) -> String {
    let w = p.width;
    let (ok, verdict) = verdict(rep);
    let mut out = super::verdict_line("rtcheck bench fanout", &verdict, ok, p);
    out.push_str(&wrap(
        &format!(
            "{} connections, {} rounds x {} B at {}/s, server {}, {} cores (server and load generator share them)",
            crate::evidence::fmt_num(rep.connections as f64),
            rep.rounds,
            crate::evidence::fmt_num(rep.size as f64),
            crate::evidence::fmt_num(rep.rate),
            rep.server,
            rep.host_cores
        ),
        w,
        "",
        "  ",
    ));
    if let Some(sp) = &rep.app_protocol {
        let line = format!("protocol spoken: {} ({})", sp.protocol, sp.why);
        out.push_str(&wrap(&line, w, "", "  "));
    }
    out.push_str("\nlatency in ms (receive - scheduled send, healthy clients)\n");
    let rows: Vec<Vec<String>> = rep.scenarios.iter().map(compact_row).collect();
    out.push_str(&fit_table(&COMPACT, &rows, w, &[0]));
    out.push('\n');
    if let Some(n) = noisy_floor(rep) {
        out.push_str(&wrap(&n, w, "", "  "));
    }
    if explain {
        let rows: Vec<Vec<String>> = rep.scenarios.iter().map(latency_row).collect();
        let header = [
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
        ];
        out.push_str("\nlatency in full (ms)\n");
        out.push_str(&fit_table(&header, &rows, w, &[0]));
        out.push('\n');
        let rows: Vec<Vec<String>> = rep.scenarios.iter().map(server_row).collect();
        let header = [
            "scenario",
            "hub med/max ms",
            "drops",
            "removed",
            "server peak RSS MB",
            "RSS growth MB/s",
            "server CPU s",
            "client CPU s",
            "start drift max ms",
        ];
        out.push_str("\nserver and hosts\n");
        out.push_str(&fit_table(&header, &rows, w, &[0]));
        out.push('\n');
    }
    for r in &rep.scenarios {
        out.push('\n');
        out.push_str(&scenario_block(r, p, explain));
    }
    if !explain {
        out.push('\n');
        out.push_str(&wrap(
            "Every check, the full latency and server tables and the seed's figures: --explain.",
            w,
            "",
            "",
        ));
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A real 60-client run of every scenario (its floor F is noisy: C3, G1, G3 beat it).
    fn small() -> BenchReport {
        let text = include_str!("../../../tests/fixtures/bench/fanout-small.json");
        serde_json::from_str(text).unwrap()
    }

    fn plain(width: usize) -> Palette {
        Palette {
            width,
            ..Palette::plain()
        }
    }

    #[test]
    fn fanout_text_opens_with_the_verdict_and_fits_the_width() {
        let rep = small();
        for (width, explain) in [(80, false), (80, true), (120, false), (120, true)] {
            let text = render(&rep, &plain(width), explain);
            println!("{text}");
            assert!(
                text.starts_with("rtcheck bench fanout: every result valid (8 scenarios)\n"),
                "{text}"
            );
            let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > width).collect();
            assert!(wide.is_empty(), "{width}: {wide:#?}");
            // Passing checks only under --explain.
            let passes = text.lines().filter(|l| l.starts_with("  pass ")).count();
            assert_eq!(passes > 0, explain, "{text}");
            // The noisy floor is said, never shown as a ratio below 1.
            assert!(text.contains("F noisy"), "{text}");
            assert!(!text.contains("x0."), "{text}");
        }
    }

    /// A run that spoke a library protocol says which and why, under the setup line,
    /// within the width.
    #[test]
    fn the_protocol_spoken_is_said() {
        let mut rep = small();
        assert!(!render(&rep, &plain(80), false).contains("protocol spoken"));
        rep.app_protocol = Some(crate::bench::appws::Spoken {
            protocol: "socketio".into(),
            why: "the query names Engine.IO (EIO=4)".into(),
        });
        let text = render(&rep, &plain(80), false);
        let line = text
            .lines()
            .find(|l| l.starts_with("protocol spoken: "))
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(
            line,
            "protocol spoken: socketio (the query names Engine.IO (EIO=4))"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }

    #[test]
    fn failed_checks_are_shown_and_invalid_rows_withhold_numbers() {
        let mut rep = small();
        let c1 = rep.scenarios.iter_mut().find(|s| s.name == "C1").unwrap();
        c1.valid = false;
        c1.checks[0].status = Status::Fail;
        c1.checks[0].detail = "0 samples".into();
        rep.valid = false;
        let text = render(&rep, &plain(80), false);
        assert!(
            text.starts_with("rtcheck bench fanout: INVALID: 1 of 8 scenarios (C1)"),
            "{text}"
        );
        assert!(
            text.contains("  fail  samples received: 0 samples"),
            "{text}"
        );
        let row = text.lines().find(|l| l.starts_with("│ C1 ")).unwrap();
        assert!(row.contains("INVALID") && !row.contains("10/10"), "{row}");
    }
}
