//! text rendering of `rtcheck rehearse`: the verdict, each run's figures side by side
//! (one column per reconnect policy), the findings with their fixes, a failed hook's output.
use crate::findings::{Finding, Status};
use crate::rehearse::model::{RehearseReport, Run};
use crate::report::output::Palette;
use crate::report::text::{fit_table, verdict_line, wrap, wrap_command};

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.0} ms"))
}

fn count(v: u64) -> String {
    rtcheck_base::units::fmt_thousands(v)
}

/// The figures of every run: (label, one value per run). Shared by markdown and HTML.
pub fn figures(runs: &[Run]) -> Vec<(&'static str, Vec<String>)> {
    let col = |f: &dyn Fn(&Run) -> String| runs.iter().map(f).collect::<Vec<_>>();
    let mut rows = vec![
        ("connected", col(&|r| count(r.connected))),
        ("away at restart", col(&|r| count(r.away_at_restart))),
        (
            "restart command",
            col(&|r| match r.hook.ok {
                true => format!("ok, {:.0} ms", r.hook.took_ms),
                false => "FAILED".into(),
            }),
        ),
        ("dropped", col(&|r| count(r.wave.dropped))),
        (
            "drain signal",
            col(&|r| format!("{} of {}", r.drain.signalled(), r.wave.dropped)),
        ),
        ("drain lead p50", col(&|r| ms(r.drain.lead_p50_ms))),
        (
            "back",
            col(&|r| format!("{} of {}", r.wave.back, r.wave.dropped)),
        ),
        ("back 50 %", col(&|r| ms(r.back_50_ms))),
        ("back 95 %", col(&|r| ms(r.back_95_ms))),
        ("back 100 %", col(&|r| ms(r.back_100_ms))),
        (
            "peak connects/s",
            col(&|r| format!("{:.0}", r.peak_connects_per_s)),
        ),
        (
            "mean connects/s",
            col(&|r| format!("{:.0}", r.wave.mean_connects_per_s)),
        ),
        (
            "in busiest 100 ms",
            col(&|r| format!("{:.0} %", r.wave.in_peak_100ms_pct)),
        ),
        ("downtime p50", col(&|r| ms(r.wave.downtime_p50_ms))),
        ("downtime max", col(&|r| ms(r.wave.downtime_max_ms))),
        (
            "failed connects",
            col(&|r| {
                let v: Vec<String> = r
                    .failed_connects
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect();
                if v.is_empty() {
                    "0".into()
                } else {
                    v.join(", ")
                }
            }),
        ),
        (
            "ListenOverflows",
            col(&|r| r.listen.listen_overflows.map_or("-".into(), count)),
        ),
        (
            "ListenDrops",
            col(&|r| r.listen.listen_drops.map_or("-".into(), count)),
        ),
        (
            "server RSS peak",
            col(&|r| {
                r.server
                    .rss_peak_mb
                    .map_or("-".into(), |v| format!("{v:.1} MB"))
            }),
        ),
        (
            "server fds peak",
            col(&|r| r.server.fds_peak.map_or("-".into(), count)),
        ),
        (
            "replayed",
            col(&|r| {
                format!(
                    "{} msgs, {}",
                    count(r.delivery.replay_messages),
                    rtcheck_base::units::fmt_bytes(r.delivery.replay_bytes)
                )
            }),
        ),
        ("lost", col(&|r| count(r.delivery.lost))),
        ("lost silently", col(&|r| count(r.delivery.lost_silently))),
        ("duplicated", col(&|r| count(r.delivery.duplicated))),
        ("out of order", col(&|r| count(r.delivery.out_of_order))),
    ];
    // --http2: the GOAWAY before the stream's end (not measured over HTTP/1.1).
    if runs.iter().any(|r| r.drain.goaway.is_some()) {
        rows.push((
            "GOAWAY first",
            col(&|r| match r.drain.goaway {
                Some(g) => format!(
                    "{g} of {}, {}",
                    r.wave.dropped,
                    ms(r.drain.goaway_lead_p50_ms)
                ),
                None => "-".into(),
            }),
        ));
    }
    // --publish: what rtcheck sent the hub, and what failed (owed to no client).
    if runs.iter().any(|r| r.publisher.is_some()) {
        rows.push((
            "published",
            col(&|r| match &r.publisher {
                Some(p) => format!("{} sent, {} failed", count(p.sent), count(p.failed)),
                None => "-".into(),
            }),
        ));
        // --publish ws: written just before a failure, received by none; still owed.
        if runs.iter().any(|r| r.unconfirmed > 0) {
            rows.push(("unconfirmed", col(&|r| count(r.unconfirmed))));
        }
    }
    rows
}

/// The one-line verdict.
pub fn verdict(r: &RehearseReport, thresholds: &[Finding]) -> (String, bool) {
    let all = r.findings.iter().chain(thresholds);
    let fails = all.clone().filter(|f| f.status == Status::Fail).count();
    let warns = all.filter(|f| f.status == Status::Warn).count();
    if !r.valid {
        return (format!("invalid: {}", r.notes.join("; ")), false);
    }
    match (fails, warns) {
        (0, 0) => ("the clients survived the restart".into(), true),
        (0, w) => (format!("survived, {w} warning(s)"), true),
        (f, _) => (format!("{f} failure(s)"), false),
    }
}

pub fn render(r: &RehearseReport, thresholds: &[Finding], p: &Palette) -> String {
    let (v, good) = verdict(r, thresholds);
    let mut out = verdict_line("rtcheck rehearse", &v, good, p);
    out.push_str(&wrap(
        &format!(
            "{} {} client(s) on {}",
            count(r.connections),
            r.transport,
            r.url
        ),
        p.width,
        "",
        "  ",
    ));
    let mut header = vec!["figure"];
    header.extend(r.runs.iter().map(|x| x.name.as_str()));
    let rows: Vec<Vec<String>> = figures(&r.runs)
        .into_iter()
        .map(|(l, vals)| std::iter::once(l.to_string()).chain(vals).collect())
        .collect();
    out.push('\n');
    out.push_str(&fit_table(&header, &rows, p.width, &[]));
    for run in r.runs.iter().filter(|x| !x.hook.ok) {
        out.push('\n');
        out.push_str(&wrap_command(
            &format!("$ {}", run.hook.command),
            p.width,
            "",
            "  ",
        ));
        let lines: Vec<&str> = run.hook.output.lines().collect();
        for l in &lines[lines.len().saturating_sub(20)..] {
            out.push_str(&wrap(l, p.width, "  | ", "  | "));
        }
    }
    out.push('\n');
    for f in r.findings.iter().chain(thresholds) {
        let st = match f.status {
            Status::Pass => p.good("pass"),
            Status::Fail => p.bad("FAIL"),
            Status::Warn => p.bad("warn"),
            _ => p.dim("skip"),
        };
        let line = wrap(
            &format!("{} {}", f.id, f.observed),
            p.width.saturating_sub(5),
            "",
            "     ",
        );
        out.push_str(&format!("{st} {line}"));
        if !f.fix.summary.is_empty() && f.status != Status::Pass {
            out.push_str(&wrap(
                &format!("fix: {}", f.fix.summary),
                p.width,
                "     ",
                "     ",
            ));
            for c in &f.fix.runtime {
                out.push_str(&wrap_command(c, p.width, "     ", "       "));
            }
        }
    }
    for n in &r.notes {
        out.push_str(&wrap(&format!("note: {n}"), p.width, "", "  "));
    }
    out
}
