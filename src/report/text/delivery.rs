//! text rendering of `verify delivery`: the verdict first, then two lines per run
//! (80 columns), then the evidence.
use crate::report::Palette;
use crate::verify::delivery::DeliveryReport;
use rtcheck_base::units::fmt_bytes;

pub fn render(r: &DeliveryReport, p: &Palette) -> String {
    let s = &r.summary;
    let head = format!(
        "verify delivery ({}): {} pass, {} warn, {} fail, {} skip in {:.1} s",
        r.target,
        s.pass,
        s.warn,
        s.fail,
        s.skip,
        r.duration_ms as f64 / 1000.0
    );
    let mut out = p.bold(&head) + "\n";
    let setup = match &r.options.foreign {
        Some(t) => format!(
            "{} clients per run over {}, {} msg/s x {} B published by rtcheck ({}), clients resume with {}",
            r.options.connections,
            crate::verify::delivery::transport_flag(r.options.transport),
            r.options.rate,
            r.options.size,
            t.publish,
            t.resume
        ),
        None => format!(
            "{} clients per run over {}, {} msg/s x {} B, ring {} messages ({} B)",
            r.options.connections,
            crate::verify::delivery::transport_flag(r.options.transport),
            r.options.rate,
            r.options.size,
            r.options.ring_messages,
            r.options.ring_bytes()
        ),
    };
    out.push_str(&crate::report::text::wrap(&setup, p.width, "  ", "  "));
    if let Some(sp) = r
        .options
        .foreign
        .as_ref()
        .and_then(|t| t.app_protocol.as_ref())
    {
        let line = format!("protocol spoken: {} ({})", sp.protocol, sp.why);
        out.push_str(&crate::report::text::wrap(&line, p.width, "  ", "  "));
    }
    if let Some(scope) = &r.options.scope {
        out.push_str(&crate::report::text::wrap(scope, p.width, "  ", "  "));
    }
    if let Some(s) = &r.publisher {
        let line = format!(
            "publisher: {} of {} sent, {} failed; timer late p99 {:.1} ms; the server held a send up to {:.0} ms",
            s.sent, s.timer_rounds, s.failed, s.timer_late_p99_ms, s.backlog_max_ms
        );
        out.push_str(&crate::report::text::wrap(&line, p.width, "  ", "  "));
    }
    if let Some(line) = server_line(r) {
        out.push_str(&crate::report::text::wrap(&line, p.width, "  ", "  "));
    }
    out.push('\n');
    for run in &r.runs {
        let c = &run.counts;
        // Wrapped to the width with a 4-column placeholder where the coloured status goes.
        let when = match run.case.as_str() {
            crate::verify::delivery::run::RESTART => {
                format!("resets {}/{}", run.resets, run.clients)
            }
            _ => format!("away {} ms", run.away_ms),
        };
        let line = format!(
            "{} {} {} ({when}): {}",
            run.delivery, run.disconnect, run.case, run.verdict
        );
        let wrapped = crate::report::text::wrap(&line, p.width, "____ ", "     ");
        out.push_str(&p.status(run.status));
        out.push_str(&wrapped[4..]);
        out.push_str(&p.dim(&format!(
            "     recv {} lost {} silent {} dup {} order {} gaps {} resume p50 {:.0} max {:.0} ms\n",
            c.received,
            c.lost,
            c.lost_silently,
            c.duplicated,
            c.out_of_order,
            c.gaps,
            run.resume_ms.p50,
            run.resume_ms.max
        )));
        if run.delivery == "session-ack" {
            out.push_str(&p.dim(&format!(
                "     session {} per client (choose: {}); x {} clients: {}\n",
                fmt_bytes(run.session_bytes_per_client),
                fmt_bytes(r.sizing.session_bytes_per_client),
                r.sizing.connections,
                fmt_bytes(run.sessions_worst_case_bytes)
            )));
        }
    }
    if let Some(ring) = r.runs.iter().map(|r| r.ring_bytes).max().filter(|&b| b > 0) {
        let line = format!(
            "ring held by the server: {} in every encoding it keeps ({} of payload; choose's sizing for max_disconnect: {})",
            fmt_bytes(ring),
            fmt_bytes(r.options.ring_bytes()),
            fmt_bytes(r.sizing.ring_bytes)
        );
        out.push_str(&crate::report::text::wrap(&line, p.width, "  ", "  "));
    }
    if let Some(line) = server_line(r) {
        out.push_str(&crate::report::text::wrap(&line, p.width, "  ", "  "));
    }
    out.push('\n');
    out.push_str(&crate::report::text::wrap(
        &evidence_line(),
        p.width,
        "",
        "  ",
    ));
    out
}

/// The seed's figures behind the verdicts, read from data/evidence.yaml.
fn evidence_line() -> String {
    use crate::evidence::{fmt_num, num};
    // The seed's round figures as the seed wrote them (100 KB, 830 MB), not fmt_bytes's 100.0 KB.
    let kb = |id, name| format!("{} KB", fmt_num(num(id, name) / 1e3));
    format!(
        "evidence: seq-numbers ({} silent), ring-buffer ({} lost, {}, {} s), session-ack ({} per client per {} s), session-expiry ({} MB at {}), loss-dup-order",
        fmt_num(num("seq-numbers", "lost_silently")),
        fmt_num(num("ring-buffer", "lost")),
        kb("ring-buffer", "ring_bytes"),
        fmt_num(num("ring-buffer", "disconnect")),
        kb("session-ack", "bytes_per_client"),
        fmt_num(num("session-ack", "disconnect")),
        fmt_num(num("session-expiry", "bytes") / 1e6),
        fmt_num(num("session-expiry", "clients")),
    )
}

/// A foreign server's own figures through the runs, or why there are none.
pub fn server_line(r: &DeliveryReport) -> Option<String> {
    match (&r.server_process, &r.server_unmeasured) {
        (Some(sp), _) => Some(sp.line()),
        (None, Some(why)) => Some(format!("server process not measured: {why}")),
        _ => None,
    }
}

#[cfg(test)]
mod evidence_tests {
    #[test]
    fn the_seed_figures_come_from_the_evidence_file() {
        let l = super::evidence_line();
        // The line the docs show, character for character.
        assert_eq!(
            l,
            "evidence: seq-numbers (615 silent), ring-buffer (0 lost, 100 KB, 3 s), session-ack (83 KB per client per 3 s), session-expiry (830 MB at 10,000), loss-dup-order"
        );
    }
}
