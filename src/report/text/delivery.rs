//! text rendering of `verify delivery`: the verdict first, then two lines per run
//! (80 columns), then the evidence.
use crate::delivery::DeliveryReport;
use crate::report::Palette;
use crate::units::fmt_bytes;

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
    out.push_str(&format!(
        "  {} client(s) per run over {}, {} msg/s of {} B, ring {} messages ({} B)\n\n",
        r.options.connections,
        r.options.transport,
        r.options.rate,
        r.options.size,
        r.options.ring_messages,
        r.options.ring_bytes()
    ));
    for run in &r.runs {
        let c = &run.counts;
        out.push_str(&format!(
            "{} {} {} {} (away {} ms): {}\n",
            p.status(run.status),
            run.delivery,
            run.disconnect,
            run.case,
            run.away_ms,
            run.verdict
        ));
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
        out.push_str(&format!(
            "  ring held by the server: {} in every encoding it keeps ({} of payload; choose's\n  sizing for max_disconnect: {})\n",
            fmt_bytes(ring),
            fmt_bytes(r.options.ring_bytes()),
            fmt_bytes(r.sizing.ring_bytes)
        ));
    }
    for f in r.findings.iter().filter(|f| f.reason.is_some()) {
        out.push_str(&format!(
            "{} {}: {}\n",
            p.status(f.status),
            f.id,
            f.reason.as_deref().unwrap_or("")
        ));
    }
    out.push_str(
        "\nevidence: seq-numbers (615 silent), ring-buffer (0 lost, 100 KB, 3 s), session-ack (83 KB\nper client per 3 s), session-expiry (830 MB at 10,000), loss-dup-order\n",
    );
    out
}
