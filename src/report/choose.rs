//! `rtcheck choose` as one [`Doc`]: the recommendation first, then each question with its
//! answer, decision, why and evidence, polling and push side by side (when both fit), the
//! sizing, the six must-haves, a verify run's findings and the notes. Written once for
//! text, markdown and html.
use crate::choose::sizing::{fmt_budget, fmt_figure, seed_source, Sizing};
use crate::choose::Recommendation;
use crate::evidence::{fmt_num, EvidenceRef};
use crate::report::doc::{
    num, strong, t, Block, Column, Doc, Item, Row, Span, Table, Tone, Verdict,
};
use rtcheck_base::units::{fmt_bytes, fmt_duration};
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::transport::Transport;

pub fn doc(r: &Recommendation) -> anyhow::Result<Doc> {
    let mut blocks = vec![Block::Section("Why".into())];
    for q in &r.reasons {
        blocks.push(Block::Item(Item {
            id: Some(format!("reason-{}", q.id)),
            tone: Tone::Plain,
            head: vec![strong(q.id.to_uppercase()), t(format!("  {}", q.question))],
            lines: vec![
                vec![t(format!("answer: {}", q.answer))],
                vec![t("decision: "), strong(&q.decision)],
                vec![t(format!("why: {}", q.detail))],
            ],
        }));
        blocks.extend(evidence(&format!("evidence-{}", q.id), &q.evidence));
        if q.id == "q1" {
            blocks.extend(alternatives(r));
        }
    }
    blocks.extend(sizing(r));
    blocks.extend(must_haves(r));
    if !r.findings.is_empty() {
        blocks.push(Block::Section(
            "Delivery measured on loopback (verify delivery)".into(),
        ));
        blocks.push(Block::Findings(r.findings.clone()));
    }
    if !r.notes.is_empty() {
        blocks.push(Block::Section("Notes".into()));
        blocks.extend(r.notes.iter().map(|n| Block::Para {
            id: None,
            spans: vec![t(format!("- {n}"))],
        }));
    }
    blocks.push(Block::Note(
        "Numbers: Go 1.23 + gorilla/websocket in Docker on one host, no TLS (`rtcheck evidence ID`). Yours will differ; mechanisms and orders of magnitude do not.".into(),
    ));
    Ok(Doc {
        title: "rtcheck choose".into(),
        verdict: verdict(r),
        blocks,
        json: crate::report::json::render(r)?,
    })
}

/// `websocket, delivery seq-ring, topology pubsub` (polling with its interval).
fn verdict(r: &Recommendation) -> Verdict {
    let poll = r
        .poll_interval_ms
        .map(|ms| {
            format!(
                " every {}",
                fmt_duration(std::time::Duration::from_millis(ms))
            )
        })
        .unwrap_or_default();
    Verdict {
        text: vec![
            strong(r.transport.name()),
            t(format!("{poll}, delivery ")),
            strong(r.delivery.name()),
            t(", topology "),
            strong(r.topology.as_str()),
        ],
        tone: Tone::Plain,
    }
}

/// The evidence behind a decision: id and the measured values (an id is never cut).
fn evidence(id: &str, ev: &[EvidenceRef]) -> Option<Block> {
    (!ev.is_empty()).then(|| {
        Block::Table(Table {
            id: id.into(),
            columns: vec![Column::text("evidence"), Column::text("measured")],
            rows: ev
                .iter()
                .map(|e| Row {
                    key: Some(e.id.clone()),
                    cells: vec![t(&e.id), t(&e.value)],
                })
                .collect(),
        })
    })
}

/// Q1 between 1 s and 60 s: polling and push side by side, with how the figures are made.
fn alternatives(r: &Recommendation) -> Vec<Block> {
    if r.alternatives.is_empty() {
        return vec![];
    }
    let rows = r
        .alternatives
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let p = |k: &str| format!("alternatives.{i}.{k}");
            let mark = if a.recommended { " *" } else { "" };
            Row {
                key: Some(a.transport.name().into()),
                cells: vec![
                    t(format!("{}{mark}", a.label)),
                    num(p("delivery_p50_ms"), fmt_num(a.delivery_p50_ms)),
                    num(
                        p("idle_bytes_per_client_minute"),
                        fmt_num(a.idle_bytes_per_client_minute as f64),
                    ),
                    num(p("requests_per_s"), fmt_num(a.requests_per_s.round())),
                    num(p("open_connections"), fmt_num(a.open_connections as f64)),
                ],
            }
        })
        .collect();
    let legend = format!(
        "* recommended (polling from 5s up, push below). p50 is the delivery delay, idle the bytes per idle client-minute. Polling: p50 about half the interval ({} ms at 1s, {} ms at 5s), idle bytes scaled from {}/min at 1s, requests/s = connections / interval.",
        fmt_num(crate::evidence::num("poll-1s", "delivery_p50")),
        fmt_num(crate::evidence::num("poll-5s", "delivery_p50")),
        fmt_bytes(crate::evidence::num("poll-1s", "idle_bytes_per_min") as u64),
    );
    vec![
        Block::Table(Table {
            id: "alternatives".into(),
            columns: vec![
                Column::text("option"),
                Column::num("p50", "ms"),
                Column::num("idle/min", "B"),
                Column::count("req/s"),
                Column::count("open conns"),
            ],
            rows,
        }),
        Block::Note(legend),
    ]
}

/// The replay basis, the figures (bytes exact beside their readable size), then what each
/// figure is measured against. A snapshot on (re)connect replays nothing: RAM only.
fn sizing(r: &Recommendation) -> Vec<Block> {
    let z = &r.sizing;
    let pr = &r.profile;
    let snapshot = r.delivery == Delivery::Snapshot;
    let basis = if snapshot {
        vec![t(
            "snapshot on (re)connect: nothing is replayed, so no ring buffer or session to size",
        )]
    } else {
        vec![
            t(format!(
                "max disconnect {} x {} msg/s = ",
                fmt_duration(pr.max_disconnect),
                fmt_num(pr.rate)
            )),
            num(
                "sizing.messages_to_replay",
                fmt_num(z.messages_to_replay as f64),
            ),
            t(format!(
                " message{} to replay, {} B each",
                if z.messages_to_replay == 1 { "" } else { "s" },
                fmt_num(pr.size as f64)
            )),
        ]
    };
    let mut v = vec![
        Block::Section("Sizing".into()),
        Block::Para {
            id: Some("sizing-basis".into()),
            spans: basis,
        },
        Block::Table(Table {
            id: "sizing".into(),
            columns: vec![
                Column::text("figure"),
                Column::text("size"),
                Column::num("exact", "B"),
            ],
            rows: figures(r)
                .into_iter()
                .filter(|f| !snapshot || f.1 == "ram_bytes_per_machine")
                .map(|(label, key, bytes)| figure(z, label, key, bytes))
                .collect(),
        }),
    ];
    v.extend(
        sizing_notes(r)
            .into_iter()
            .map(|spans| Block::Para { id: None, spans }),
    );
    if r.transport == Transport::Polling {
        v.push(Block::Note("(polling holds no connection between requests; the RAM figure is what long-lived connections would cost)".into()));
    }
    let ev: Vec<EvidenceRef> = z
        .evidence
        .iter()
        .filter(|e| !snapshot || e.id == "conn-ram")
        .cloned()
        .collect();
    v.extend(evidence("evidence-sizing", &ev));
    v
}

/// Label, JSON key under `sizing`, bytes.
fn figures(r: &Recommendation) -> Vec<(String, &'static str, u64)> {
    let z = &r.sizing;
    let yours = |d: Delivery| if r.delivery == d { ", yours" } else { "" };
    let cpm = fmt_num(z.connections_per_machine as f64);
    vec![
        (
            format!("ring buffer (seq-ring{})", yours(Delivery::SeqRing)),
            "ring_bytes",
            z.ring_bytes,
        ),
        (
            format!(
                "session per client (session-ack{})",
                yours(Delivery::SessionAck)
            ),
            "session_bytes_per_client",
            z.session_bytes_per_client,
        ),
        (
            format!(
                "all {} sessions at once",
                fmt_num(r.profile.connections as f64)
            ),
            "sessions_worst_case_bytes",
            z.sessions_worst_case_bytes,
        ),
        (
            format!("sessions per machine ({cpm})"),
            "sessions_per_machine_bytes",
            z.sessions_per_machine_bytes,
        ),
        (
            format!("RAM per machine ({cpm} conns)"),
            "ram_bytes_per_machine",
            z.ram_bytes_per_machine,
        ),
    ]
}

/// A saturated figure shows no number: it has none (the JSON holds u64::MAX).
fn figure(z: &Sizing, label: String, key: &str, bytes: u64) -> Row {
    let saturated = z.is_saturated(key);
    Row {
        key: Some(key.into()),
        cells: vec![
            t(label),
            t(fmt_figure(bytes, saturated)),
            match saturated {
                true => t("-"),
                false => num(format!("sizing.{key}"), fmt_num(bytes as f64)),
            },
        ],
    }
}

/// What the session figures are measured against and where the per-connection RAM comes from.
fn sizing_notes(r: &Recommendation) -> Vec<Vec<Span>> {
    let z = &r.sizing;
    let budget = fmt_budget(z.session_budget_bytes);
    let source = if z.per_connection_source.is_empty() {
        seed_source()
    } else {
        z.per_connection_source.clone()
    };
    let ram = vec![
        t("RAM at "),
        num(
            "sizing.per_connection_bytes",
            fmt_num(z.per_connection_bytes as f64),
        ),
        t(format!(" B per connection: {source}")),
    ];
    if r.delivery == Delivery::Snapshot {
        return vec![ram];
    }
    let sessions = match (z.durable_inbox, r.delivery == Delivery::SessionAck) {
        (true, true) => {
            format!("sessions per machine: past the {budget} budget: a durable inbox (Q3)")
        }
        (true, false) => format!("sessions per machine: past the {budget} budget per machine"),
        (false, _) => format!("sessions per machine: within the {budget} budget"),
    };
    vec![
        vec![t(format!(
            "all sessions at once: reference {} clients = {}, so give sessions a TTL",
            fmt_num(crate::evidence::num("session-expiry", "clients")),
            fmt_bytes(crate::evidence::num("session-expiry", "bytes") as u64)
        ))],
        vec![t(sessions)],
        ram,
    ]
}

/// Each must-have: applies or not, its why (or why not), its headline number.
fn must_haves(r: &Recommendation) -> Vec<Block> {
    let mut v = vec![Block::Section(
        "Six must-haves (whatever the branch)".into(),
    )];
    for m in &r.must_haves {
        let mark = if m.applies { "[x] " } else { "[-] " };
        let why = match &m.not_applicable {
            Some(na) => format!("does not apply to polling: {na}"),
            None => m.why.clone(),
        };
        let mut text = format!(": {}. {why}", m.title.trim_end_matches('.'));
        // The headline number in full; the scenarios behind it by id (`rtcheck evidence ID`).
        if let (None, Some((first, rest))) = (&m.not_applicable, m.evidence.split_first()) {
            text.push_str(&format!(" ({}: {}", first.id, first.value));
            if !rest.is_empty() {
                let ids: Vec<&str> = rest.iter().map(|e| e.id.as_str()).collect();
                text.push_str(&format!("; see also {}", ids.join(", ")));
            }
            text.push(')');
        }
        v.push(Block::Para {
            id: Some(format!("must-{}", m.id)),
            spans: vec![t(mark), strong(&m.id), t(text)],
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Loss, Profile, Upstream};
    use crate::report::doc;

    fn rec(visible_ms: u64, upstream: Upstream, loss: Loss) -> Recommendation {
        let p = Profile {
            visible_within: Some(std::time::Duration::from_millis(visible_ms)),
            upstream: Some(upstream),
            loss: Some(loss),
            ..Profile::default()
        };
        crate::choose::decide(&p).unwrap()
    }

    #[test]
    fn one_doc_carries_the_decisions_sizing_and_must_haves() {
        let r = rec(5_000, Upstream::Sparse, Loss::Shared);
        let d = doc(&r).unwrap();
        let p = crate::report::Palette::plain();
        let text = doc::text::render(&d, &p);
        assert!(text.starts_with(r.transport.name()), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        for q in &r.reasons {
            assert!(text.contains(&q.decision), "{}: {text}", q.id);
        }
        for m in &r.must_haves {
            assert!(text.contains(&m.id), "{}: {text}", m.id);
        }
        let ring = fmt_num(r.sizing.ring_bytes as f64);
        assert!(text.contains(&ring), "{ring}: {text}");
        let md = doc::markdown::render(&d);
        assert!(md.contains("| option | p50 (ms) |"), "{md}");
        let page = doc::html::render(&d);
        assert!(page.contains("id=\"reason-q1\""), "{page}");
        assert!(page.contains("data-path=\"sizing.ring_bytes\""), "{page}");
    }

    #[test]
    fn a_snapshot_sizes_only_ram() {
        let r = rec(600_000, Upstream::None, Loss::Replaceable);
        assert_eq!(r.delivery, Delivery::Snapshot);
        let text = doc::text::render(&doc(&r).unwrap(), &crate::report::Palette::plain());
        assert!(text.contains("RAM per machine"), "{text}");
        assert!(!text.contains("ring buffer ("), "{text}");
    }
}
