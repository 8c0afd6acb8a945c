//! text rendering of choose results: the four questions, sizing, then the six must-haves.
use crate::choose::Recommendation;
use crate::evidence::fmt_num;
use crate::evidence::EvidenceRef;
use crate::report::Palette;
use rtcheck_base::units::fmt_bytes;
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::transport::Transport;

/// `evidence  ID  values`, the values wrapped in their own column (an id is never cut).
fn evidence_lines(s: &mut String, ev: &[EvidenceRef], p: &Palette) {
    let w = ev.iter().map(|e| e.id.len()).max().unwrap_or(0);
    let rest = " ".repeat(4 + 10 + w + 2);
    for (i, e) in ev.iter().enumerate() {
        let label = if i == 0 { "evidence" } else { "" };
        let first = format!("    {label:<9} {}  ", p.dim(&format!("{:<w$}", e.id)));
        s.push_str(&super::wrap_values(&e.value, p.width, &first, &rest));
    }
}

/// `text` wrapped to the palette's width under a hanging `indent`, dimmed as a whole.
fn dim_wrap(text: &str, p: &Palette, first: &str, indent: &str) -> String {
    p.dim(&super::wrap(text, p.width, first, indent))
}

use crate::choose::decide::fmt_ms as ms;

/// The recommendation in a few lines (the guided run): the verdict, then one line per
/// question with its decision. `rtcheck choose` prints the reasoning in full.
pub fn brief(r: &Recommendation, p: &Palette) -> String {
    let mut s = format!(
        "{} {}  {} {}  {} {}\n",
        p.dim("transport"),
        p.bold(r.transport.name()),
        p.dim("delivery"),
        p.bold(r.delivery.name()),
        p.dim("topology"),
        p.bold(r.topology.as_str())
    );
    for q in &r.reasons {
        let line = format!("{}: {}", q.answer, q.decision);
        let label = format!("  {:<5} ", q.id.to_uppercase());
        s.push_str(&super::wrap(&line, p.width, &label, "        "));
    }
    s
}

pub fn render(r: &Recommendation, p: &Palette) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{} {}  {} {}  {} {}\n\n",
        p.dim("transport"),
        p.bold(r.transport.name()),
        p.dim("delivery"),
        p.bold(r.delivery.name()),
        p.dim("topology"),
        p.bold(r.topology.as_str())
    ));
    for q in &r.reasons {
        s.push_str(&format!(
            "{}  {}\n",
            p.bold(&q.id.to_uppercase()),
            q.question
        ));
        s.push_str(&format!("    answer    {}\n", q.answer));
        s.push_str(&format!("    decision  {}\n", p.good(&q.decision)));
        s.push_str(&super::wrap(
            &q.detail,
            p.width,
            "    why       ",
            &" ".repeat(14),
        ));
        evidence_lines(&mut s, &q.evidence, p);
        if q.id == "q1" && !r.alternatives.is_empty() {
            // 77 columns: the figures keep their own column at 80.
            s.push_str(&format!(
                "    compare   {:<18} {:>9}  {:>10}  {:>9}  {:>10}\n",
                "option", "p50", "idle/min", "req/s", "open conns"
            ));
            for a in &r.alternatives {
                let mark = if a.recommended { "*" } else { " " };
                s.push_str(&format!(
                    "            {mark} {:<18} {:>9}  {:>10}  {:>9}  {:>10}\n",
                    a.label,
                    ms(a.delivery_p50_ms),
                    fmt_bytes(a.idle_bytes_per_client_minute),
                    fmt_num(a.requests_per_s.round()),
                    fmt_num(a.open_connections as f64)
                ));
            }
            let legend = format!(
                "* recommended (polling from 5s up, push below). p50 is the delivery delay, idle/min the bytes per idle client-minute. Polling: p50 about half the interval ({} ms at 1s, {} ms at 5s), idle bytes scaled from {}/min at 1s, requests/s = connections / interval.",
                fmt_num(crate::evidence::num("poll-1s", "delivery_p50")),
                fmt_num(crate::evidence::num("poll-5s", "delivery_p50")),
                fmt_bytes(crate::evidence::num("poll-1s", "idle_bytes_per_min") as u64),
            );
            let indent = " ".repeat(14);
            s.push_str(&dim_wrap(&legend, p, &indent, &format!("{indent}  ")));
        }
        s.push('\n');
    }

    let z = &r.sizing;
    let pr = &r.profile;
    // A snapshot on (re)connect replays nothing: no ring, no session to size.
    let snapshot = r.delivery == Delivery::Snapshot;
    let basis = if snapshot {
        "snapshot on (re)connect: nothing is replayed, so no ring buffer or session to size"
            .to_string()
    } else {
        format!(
            "max disconnect {} x {} msg/s = {} to replay, {} B each",
            rtcheck_base::units::fmt_duration(pr.max_disconnect),
            fmt_num(pr.rate),
            messages(z.messages_to_replay),
            fmt_num(pr.size as f64)
        )
    };
    s.push_str(&super::wrap(
        &basis,
        p.width,
        &format!("{}  ", p.bold("Sizing")),
        "        ",
    ));
    let used = |d: Delivery| if r.delivery == d { "your delivery" } else { "" };
    let rows = [
        (
            "ring buffer (seq-ring)".to_string(),
            "ring_bytes",
            z.ring_bytes,
            used(Delivery::SeqRing).to_string(),
        ),
        (
            "session per client (session-ack)".to_string(),
            "session_bytes_per_client",
            z.session_bytes_per_client,
            used(Delivery::SessionAck).to_string(),
        ),
        (
            format!("all {} sessions at once", fmt_num(pr.connections as f64)),
            "sessions_worst_case_bytes",
            z.sessions_worst_case_bytes,
            format!(
                "reference: {} clients = {}, so give sessions a TTL",
                fmt_num(crate::evidence::num("session-expiry", "clients")),
                fmt_bytes(crate::evidence::num("session-expiry", "bytes") as u64)
            ),
        ),
        (
            format!(
                "sessions per machine ({})",
                fmt_num(z.connections_per_machine as f64)
            ),
            "sessions_per_machine_bytes",
            z.sessions_per_machine_bytes,
            if z.durable_inbox && r.delivery == Delivery::SessionAck {
                format!(
                    "past the {} budget: a durable inbox (Q3)",
                    crate::choose::sizing::fmt_budget(z.session_budget_bytes)
                )
            } else if z.durable_inbox {
                format!(
                    "past the {} budget per machine",
                    crate::choose::sizing::fmt_budget(z.session_budget_bytes)
                )
            } else {
                format!(
                    "within the {} budget",
                    crate::choose::sizing::fmt_budget(z.session_budget_bytes)
                )
            },
        ),
        (
            format!(
                "RAM per machine ({} conns)",
                fmt_num(z.connections_per_machine as f64)
            ),
            "ram_bytes_per_machine",
            z.ram_bytes_per_machine,
            format!(
                "at {} per connection: {}",
                fmt_bytes(z.per_connection_bytes),
                if z.per_connection_source.is_empty() {
                    crate::choose::sizing::seed_source()
                } else {
                    z.per_connection_source.clone()
                }
            ),
        ),
    ];
    let rows: Vec<_> = rows
        .into_iter()
        .filter(|r| !snapshot || r.1 == "ram_bytes_per_machine")
        .collect();
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (label, key, bytes, note) in rows {
        let fig = crate::choose::sizing::fmt_figure(bytes, z.is_saturated(key));
        let head = format!("    {label:<w$}  {fig:>10}");
        // The note beside the figure when it fits, else wrapped under it.
        if head.chars().count() + 3 + note.chars().count() <= p.width || note.is_empty() {
            s.push_str(format!("{head}   {}", p.dim(&note)).trim_end());
            s.push('\n');
        } else {
            s.push_str(&format!("{head}\n"));
            s.push_str(&dim_wrap(&note, p, "      ", "      "));
        }
    }
    if r.transport == Transport::Polling {
        s.push_str(&dim_wrap("(polling holds no connection between requests; the RAM figure is what long-lived connections would cost)", p, "    ", "     "));
    }
    let ev: Vec<EvidenceRef> = z
        .evidence
        .iter()
        .filter(|e| !snapshot || e.id == "conn-ram")
        .cloned()
        .collect();
    evidence_lines(&mut s, &ev, p);
    s.push('\n');

    s.push_str(&format!(
        "{}\n",
        p.bold("Six must-haves (whatever the branch)")
    ));
    for m in &r.must_haves {
        let mark = if m.applies {
            p.good("[x]")
        } else {
            p.dim("[-]")
        };
        let first = format!("  {mark} {:<17} ", m.id);
        s.push_str(&super::wrap(&m.title, p.width, &first, &" ".repeat(24)));
        match &m.not_applicable {
            Some(na) => s.push_str(&dim_wrap(
                &format!("does not apply to polling: {na}"),
                p,
                "      ",
                "      ",
            )),
            None => {
                s.push_str(&super::wrap(&m.why, p.width, "      ", "      "));
                // The headline number in full; the scenarios behind it by id (`rtcheck evidence ID`).
                if let Some((first, rest)) = m.evidence.split_first() {
                    let mut line = format!("{}: {}", first.id, first.value);
                    if !rest.is_empty() {
                        let ids: Vec<&str> = rest.iter().map(|e| e.id.as_str()).collect();
                        line.push_str(&format!("; see also {}", ids.join(", ")));
                    }
                    s.push_str(&p.dim(&super::wrap_values(&line, p.width, "      ", "        ")));
                }
            }
        }
    }
    if !r.findings.is_empty() {
        s.push_str(&format!(
            "\n{}\n",
            p.bold("Delivery measured on loopback (verify delivery)")
        ));
        for f in &r.findings {
            s.push_str(&format!("  {} {}\n", p.status(f.status), f.id));
            s.push_str(&super::wrap(&f.observed, p.width, "      ", "      "));
        }
    }
    if !r.notes.is_empty() {
        s.push_str(&format!("\n{}\n", p.bold("Notes")));
        for n in &r.notes {
            s.push_str(&super::wrap_note(n, p.width, "  - ", "    "));
        }
    }
    s.push('\n');
    s.push_str(&dim_wrap("Numbers: Go 1.23 + gorilla/websocket in Docker on one host, no TLS (`rtcheck evidence ID`). Yours will differ; mechanisms and orders of magnitude do not.", p, "", ""));
    s
}

/// "1 message", "30 messages".
pub fn messages(n: u64) -> String {
    format!(
        "{} message{}",
        fmt_num(n as f64),
        if n == 1 { "" } else { "s" }
    )
}
