//! text rendering of `bench idle --server`: the verdict first, one table of what a
//! connection costs per variant (RSS and kernel socket memory apart, their sum,
//! connections per GB), then the prediction at N against the run at N, and the notes.
use super::table::{fit, Layout, Tone};
use super::wrap;
use crate::bench::conncost::{ConnCostReport, VariantResult};
use crate::report::Palette;

fn num(x: f64) -> String {
    crate::evidence::fmt_num(x.round())
}

fn kb(b: f64) -> String {
    format!("{:.1} KB", b / 1000.0)
}

fn row(r: &VariantResult) -> Vec<String> {
    let name = match (&r.negotiated, r.variant.name()) {
        (None, "deflate") => "deflate (declined)".to_string(),
        (_, n) => n.to_string(),
    };
    match &r.per_connection {
        None => vec![name, "INVALID".into(), "-".into(), "-".into(), "-".into()],
        Some(p) => vec![
            name,
            format!("{} B", num(p.total_bytes)),
            format!("{} B", num(p.rss_bytes)),
            format!("{} B", num(p.socket_bytes)),
            num(p.connections_per_gb),
        ],
    }
}

pub fn render(rep: &ConnCostReport, p: &Palette) -> String {
    let bad: Vec<&str> = rep
        .results
        .iter()
        .filter(|r| !r.valid)
        .map(|r| r.variant.name())
        .collect();
    let off: Vec<&str> = rep
        .results
        .iter()
        .filter(|r| r.prediction.is_some_and(|p| !p.within_goal))
        .map(|r| r.variant.name())
        .collect();
    let verdict = if bad.is_empty() && !off.is_empty() {
        format!(
            "every variant measured ({}); the prediction at {} misses by more than {}% for {}",
            rep.results.len(),
            num(rep.target as f64),
            crate::bench::conncost::GOAL_PCT,
            off.join(", ")
        )
    } else if bad.is_empty() {
        format!(
            "every variant measured ({}); each prediction at {} within {}%",
            rep.results.len(),
            num(rep.target as f64),
            crate::bench::conncost::GOAL_PCT
        )
    } else {
        format!("INVALID: {} (no figure for it)", bad.join(", "))
    };
    let mut out = super::verdict_line("rtcheck bench idle --server", &verdict, bad.is_empty(), p);
    out.push_str(&wrap(
        &format!(
            "{}: cost per connection ({}), from {} and {} connections; checked at {}",
            rep.server,
            rep.activity,
            num(rep.points[0] as f64),
            num(rep.points[1] as f64),
            num(rep.target as f64)
        ),
        p.width,
        "",
        "  ",
    ));
    if let Some(sp) = &rep.app_protocol {
        let line = format!("protocol spoken: {} ({})", sp.protocol, sp.why);
        out.push_str(&wrap(&line, p.width, "", "  "));
    }
    out.push('\n');
    let rows: Vec<Vec<String>> = rep.results.iter().map(row).collect();
    let tones: Vec<(usize, usize, Tone)> = rep
        .results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.per_connection.is_none())
        .map(|(i, _)| (i, 1, Tone::Bad))
        .collect();
    let header = ["variant", "per conn", "RSS", "socket mem", "conns/GB"];
    let layout = Layout {
        keep: &[0],
        right: &[1, 2, 3, 4],
        tones: &tones,
        colour: p.enabled,
        ..Default::default()
    };
    out.push_str(&fit(&header, &rows, p.width, &layout));
    out.push('\n');
    for r in &rep.results {
        out.push_str(&details(r, p.width));
    }
    let ids: Vec<&str> = rep.references.iter().map(|e| e.id.as_str()).collect();
    out.push_str(&wrap(
        &format!(
            "compare (rtcheck explain ID): {} (public reports, rtcheck's runs on known servers, the seed's Go figure)",
            ids.join(", ")
        ),
        p.width,
        "",
        "  ",
    ));
    out
}

/// A variant's processes, negotiation, fit error, prediction and notes.
fn details(r: &VariantResult, width: usize) -> String {
    let v = r.variant.name();
    let mut lines = vec![format!("measured {} ({})", r.url, r.found_by)];
    if let Some(e) = &r.negotiated {
        lines.push(format!("negotiated: {e}"));
    }
    if let Some(p) = &r.per_connection {
        lines.push(format!(
            "fds {:.2} per connection; fit error {}",
            p.fds,
            kb(p.error_bytes)
        ));
    }
    if let Some(pr) = &r.prediction {
        lines.push(format!(
            "at {}: predicted {}, measured {} ({:.1}% off; goal {}%)",
            num(pr.connections as f64),
            rtcheck_base::units::fmt_bytes(pr.predicted_bytes as u64),
            rtcheck_base::units::fmt_bytes(pr.measured_bytes as u64),
            pr.deviation_pct,
            crate::bench::conncost::GOAL_PCT
        ));
    }
    if r.received_per_client_per_s > 0.0 {
        lines.push(format!(
            "received {:.2} messages per client per second",
            r.received_per_client_per_s
        ));
    }
    lines.extend(r.notes.iter().cloned());
    let mut out = String::new();
    for l in lines {
        out.push_str(&wrap(&l, width, &format!("  {v}: "), "    "));
    }
    out
}
