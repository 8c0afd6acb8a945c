//! HTML for `bench idle`: RSS per idle connection per protocol, and the server's RSS
//! against connections while they connected.
use super::plot::{self, Series};
use super::{esc, notes, num, page};
use crate::bench::model::IdleReport;

pub fn render(rep: &IdleReport) -> anyhow::Result<String> {
    let json = crate::report::json::render(rep)?;
    let (verdict, class) = if rep.valid {
        ("every result valid".to_string(), "")
    } else {
        ("INVALID: see the rows marked invalid".to_string(), "bad")
    };
    let mut b = format!(
        "<p>{} idle clients per protocol; target at most {} B per connection. Reference ({}): {}: {}</p>\n",
        num("connections", &crate::evidence::fmt_num(rep.connections as f64)),
        num("target_bytes_per_connection", &rep.target_bytes_per_connection.to_string()),
        esc(&rep.reference.id),
        esc(&rep.reference.value),
        esc(&rep.reference.claim)
    );
    b.push_str("<table id=\"idle\"><tr><th>protocol</th><th>connected</th><th>RSS before (B)</th><th>RSS after (B)</th><th>B per connection</th></tr>\n");
    for (i, r) in rep.results.iter().enumerate() {
        let p = |k: &str| format!("results.{i}.{k}");
        if !r.valid {
            b.push_str(&format!(
                "<tr class=\"invalid\"><td>{}</td><td colspan=\"4\">{}</td></tr>\n",
                esc(&r.protocol),
                esc(&r.notes.join("; "))
            ));
            continue;
        }
        b.push_str(&format!(
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
            esc(&r.protocol),
            num(&p("connected"), &r.connected.to_string()),
            num(&p("rss_before_bytes"), &r.rss_before_bytes.to_string()),
            num(&p("rss_after_bytes"), &r.rss_after_bytes.to_string()),
            r.bytes_per_connection
                .map(|v| num(&p("bytes_per_connection"), &format!("{v:.0}")))
                .unwrap_or_else(|| "-".into()),
        ));
    }
    b.push_str("</table>\n");
    let series: Vec<Series> = rep
        .results
        .iter()
        .filter(|r| r.valid && !r.samples.is_empty())
        .map(|r| Series {
            name: &r.protocol,
            color: if r.protocol == "sse" {
                plot::GREEN_
            } else {
                plot::BLUE_
            },
            points: r
                .samples
                .iter()
                .map(|s| Some((s.connections as f64, s.rss_bytes as f64 / 1e6)))
                .collect(),
        })
        .collect();
    if series.is_empty() {
        b.push_str("<div class=\"invalid\">no valid RSS samples to plot</div>\n");
    } else {
        b.push_str(&plot::xy(
            "rss",
            "server RSS (MB) against connected clients, sampled while they connected",
            ("connections", "RSS (MB)"),
            plot::Y::Value,
            &series,
            true,
        ));
    }
    for r in &rep.results {
        b.push_str(&notes(&r.notes));
    }
    Ok(page("rtcheck bench idle", &verdict, class, &b, &json))
}
