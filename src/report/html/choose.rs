//! HTML for `choose`: the recommendation first, then each answer with its decision and
//! evidence, polling and push side by side (when both fit), sizing, and the must-haves.
use super::{esc, evidence_list, notes, num, page, status};
use crate::choose::Recommendation;
use crate::findings::Status;

pub fn render(r: &Recommendation) -> anyhow::Result<String> {
    let json = crate::report::json::render(r)?;
    let poll = r
        .poll_interval_ms
        .map(|ms| format!(" every {ms} ms"))
        .unwrap_or_default();
    let verdict = format!(
        "{}{poll} + {} delivery + {}",
        r.transport.name(),
        r.delivery.name(),
        r.topology.as_str()
    );
    let mut b = String::from("<h2>Why</h2>\n");
    for q in &r.reasons {
        b.push_str(&format!(
            "<div class=\"card pass reason\" id=\"reason-{}\"><h3>{}</h3><p><b>{}</b> &rarr; {}</p><p>{}</p>{}</div>\n",
            esc(&q.id),
            esc(&q.question),
            esc(&q.answer),
            esc(&q.decision),
            esc(&q.detail),
            evidence_list(&q.evidence)
        ));
    }
    b.push_str(&alternatives(r));
    b.push_str(&sizing(r));
    b.push_str("<h2>Must-haves</h2>\n");
    for m in &r.must_haves {
        let st = if m.applies {
            Status::Warn
        } else {
            Status::Skip
        };
        b.push_str(&format!(
            "<div class=\"card {}\" id=\"must-{}\"><h3>{} {}</h3><p>{}</p>{}{}</div>\n",
            st.as_str(),
            esc(&m.id),
            status(st)
                .replace(">warn<", ">do<")
                .replace(">skip<", ">n/a<"),
            esc(&m.title),
            esc(&m.why),
            m.not_applicable
                .as_ref()
                .map(|n| format!("<p class=\"dim\">{}</p>", esc(n)))
                .unwrap_or_default(),
            evidence_list(&m.evidence)
        ));
    }
    if !r.findings.is_empty() {
        b.push_str("<h2>Delivery measured (verify delivery)</h2>\n");
        for f in &r.findings {
            b.push_str(&format!(
                "<div class=\"card {}\"><h3>{} {}</h3><p>{}</p></div>\n",
                f.status.as_str(),
                status(f.status),
                esc(&f.id),
                esc(&f.observed)
            ));
        }
    }
    b.push_str(&notes(&r.notes));
    Ok(page("rtcheck choose", &verdict, "", &b, &json))
}

fn alternatives(r: &Recommendation) -> String {
    if r.alternatives.is_empty() {
        return String::new();
    }
    let mut t = String::from("<h2>Polling and push side by side</h2>\n<table id=\"alternatives\"><tr><th></th><th>delivery p50 (ms)</th><th>idle B per client-minute</th><th>requests/s</th><th>open connections</th></tr>\n");
    for (i, a) in r.alternatives.iter().enumerate() {
        let p = |k: &str| format!("alternatives.{i}.{k}");
        let f = crate::evidence::fmt_num;
        t.push_str(&format!(
            "<tr{}><td>{}{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
            if a.recommended { " class=\"recommended\"" } else { "" },
            esc(&a.label),
            if a.recommended { " <b>(recommended)</b>" } else { "" },
            num(&p("delivery_p50_ms"), &f(a.delivery_p50_ms)),
            num(&p("idle_bytes_per_client_minute"), &f(a.idle_bytes_per_client_minute as f64)),
            num(&p("requests_per_s"), &f(a.requests_per_s)),
            num(&p("open_connections"), &f(a.open_connections as f64)),
        ));
    }
    t.push_str("</table>\n");
    t
}

fn sizing(r: &Recommendation) -> String {
    let s = &r.sizing;
    let rows = [
        (
            "connections per machine",
            "connections_per_machine",
            s.connections_per_machine,
        ),
        (
            "RSS per connection (reference, B)",
            "per_connection_bytes",
            s.per_connection_bytes,
        ),
        (
            "RAM per machine (B)",
            "ram_bytes_per_machine",
            s.ram_bytes_per_machine,
        ),
        (
            "messages to replay after a disconnect",
            "messages_to_replay",
            s.messages_to_replay,
        ),
        ("ring buffer (B)", "ring_bytes", s.ring_bytes),
        (
            "session per client (B)",
            "session_bytes_per_client",
            s.session_bytes_per_client,
        ),
        (
            "every session at once (B)",
            "sessions_worst_case_bytes",
            s.sessions_worst_case_bytes,
        ),
    ];
    let body: String = rows
        .iter()
        .map(|(label, key, v)| {
            format!(
                "<tr><th>{label}</th><td class=\"n\">{}</td></tr>",
                num(
                    &format!("sizing.{key}"),
                    &crate::evidence::fmt_num(*v as f64)
                )
            )
        })
        .collect();
    format!(
        "<h2>Sizing</h2>\n<table id=\"sizing\">{body}</table>\n{}",
        evidence_list(&s.evidence)
    )
}
