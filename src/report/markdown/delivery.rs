//! markdown rendering of `verify delivery`: one table row per run.
use super::verify::cell;
use crate::verify::delivery::DeliveryReport;

pub fn render(r: &DeliveryReport) -> String {
    let mut s = format!("## rtcheck verify delivery ({})\n\n", r.target);
    s.push_str("| status | delivery | disconnect | case | away ms | received | lost | lost silently | duplicated | out of order | gaps | resume p50/max ms | session bytes/client | verdict |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for run in &r.runs {
        let c = &run.counts;
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0}/{:.0} | {} | {} |\n",
            run.status.as_str(),
            run.delivery,
            run.disconnect,
            run.case,
            run.away_ms,
            c.received,
            c.lost,
            c.lost_silently,
            c.duplicated,
            c.out_of_order,
            c.gaps,
            run.resume_ms.p50,
            run.resume_ms.max,
            run.session_bytes_per_client,
            cell(&run.verdict)
        ));
    }
    let z = &r.sizing;
    s.push_str(&format!(
        "\nchoose's sizing: ring {} B, session {} B per client, {} B for {} clients; the server's ring holds {} B (every encoding).\n",
        z.ring_bytes,
        z.session_bytes_per_client,
        z.sessions_worst_case_bytes,
        z.connections,
        r.runs.iter().map(|r| r.ring_bytes).max().unwrap_or(0)
    ));
    if let Some(line) = crate::report::text::delivery::server_line(r) {
        s.push_str(&format!("\n{line}\n"));
    }
    for f in r.findings.iter().filter(|f| f.reason.is_some()) {
        s.push_str(&format!(
            "\n- {} {}: {}\n",
            f.status.as_str(),
            f.id,
            cell(f.reason.as_deref().unwrap_or(""))
        ));
    }
    s
}
