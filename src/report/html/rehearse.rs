//! HTML page of `rtcheck rehearse`: the verdict, the wave plotted per 100 ms (one line
//! per reconnect policy), the server's RSS through it, the figures and the findings.
use super::plot::{self, Series, Y};
use super::{esc, page};
use crate::findings::Finding;
use crate::rehearse::model::RehearseReport;
use crate::report::text::rehearse::{figures, verdict};

const COLORS: [plot::RGBColor; 4] = [plot::BLUE_, plot::RED_, plot::GREEN_, plot::GREY_];

pub fn render(r: &RehearseReport, thresholds: &[Finding]) -> anyhow::Result<String> {
    let (v, good) = verdict(r, thresholds);
    let wave: Vec<Series> = r
        .runs
        .iter()
        .enumerate()
        .map(|(i, run)| Series {
            name: &run.name,
            color: COLORS[i % COLORS.len()],
            points: run
                .wave
                .connects_per_100ms
                .iter()
                .enumerate()
                .map(|(b, n)| Some((b as f64 * 100.0, *n as f64)))
                .collect(),
        })
        .collect();
    let rss: Vec<Series> = r
        .runs
        .iter()
        .enumerate()
        .map(|(i, run)| Series {
            name: &run.name,
            color: COLORS[i % COLORS.len()],
            points: run.server.series.iter().map(|p| Some((p.0, p.1))).collect(),
        })
        .collect();
    let mut body = format!(
        "<p>{} {} client(s) on <code>{}</code></p>\n",
        r.connections,
        esc(&r.transport),
        esc(&r.url)
    );
    body.push_str(&plot::xy(
        "wave",
        "reconnects per 100 ms, from the first drop",
        ("ms after the first drop", "connects per 100 ms"),
        Y::Count,
        &wave,
        false,
    ));
    if r.runs.iter().any(|x| !x.server.series.is_empty()) {
        body.push_str(&plot::xy(
            "rss",
            "server RSS through the rehearsal",
            ("ms after the restart began", "RSS MB"),
            Y::Value,
            &rss,
            false,
        ));
    }
    body.push_str("<table><tr><th>figure</th>");
    for run in &r.runs {
        body.push_str(&format!("<th>{}</th>", esc(&run.name)));
    }
    body.push_str("</tr>\n");
    for (label, vals) in figures(&r.runs) {
        body.push_str(&format!("<tr><td>{}</td>", esc(label)));
        for v in vals {
            body.push_str(&format!("<td>{}</td>", esc(&v)));
        }
        body.push_str("</tr>\n");
    }
    body.push_str(
        "</table>\n<table><tr><th>status</th><th>id</th><th>observed</th><th>fix</th></tr>\n",
    );
    for f in r.findings.iter().chain(thresholds) {
        body.push_str(&format!(
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
            super::status(f.status),
            esc(&f.id),
            esc(&f.observed),
            esc(if f.status == crate::findings::Status::Pass {
                ""
            } else {
                &f.fix.summary
            })
        ));
    }
    body.push_str("</table>\n");
    for run in r.runs.iter().filter(|x| !x.hook.ok) {
        body.push_str(&format!(
            "<p>The restart command <code>{}</code> failed:</p><pre>{}</pre>\n",
            esc(&run.hook.command),
            esc(&run.hook.output)
        ));
    }
    let json = serde_json::to_string(r)?;
    Ok(page(
        "rtcheck rehearse",
        &v,
        if good { "" } else { "bad" },
        &body,
        &json,
    ))
}
