//! The guided run's summary (issue 27, item 6): on one screen, each decision with its
//! one-line why, the sizing for the delivery chosen and the must-haves that apply. The
//! full reasoning stays `rtcheck choose --answers PROFILE` (report::choose).
//!
//! Not a `report::doc::Doc`, on purpose: this is an interactive screen, text only (no
//! markdown or html of it exists), printed between prompts, and the caller appends the
//! audit's verdict to it, so it has no verdict of its own to put first. Its layout is a
//! label, a decision and its why aligned in columns with no header or rule, each why
//! hanging under its own column so the whole recommendation fits one 24-line screen; a
//! Doc table is a headed, ruled table (and goes vertical when narrow), which would cost
//! the screen lines it needs. The recommendation's Doc is `report::choose`.
use super::wrap;
use crate::choose::{Recommendation, Topology};
use crate::evidence::{fmt_num, num};
use crate::report::Palette;
use rtcheck_base::units::{fmt_bytes, fmt_duration};
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::transport::Transport;

/// Column of the why: a label (`Q1`, `PATH`) and the decision before it.
const LABEL: usize = 6;

/// The summary, ending with nothing: the caller appends the audit's verdict.
pub fn summary(r: &Recommendation, p: &Palette) -> String {
    let mut s = format!(
        "{} {} + {} + {}\n",
        p.bold("Recommendation:"),
        p.bold(r.transport.name()),
        r.delivery.name(),
        r.topology.as_str()
    );
    let rows: Vec<(String, String, String)> = r
        .reasons
        .iter()
        .map(|q| (q.id.to_uppercase(), q.decision.clone(), why(r, &q.id)))
        .collect();
    // The decision column as wide as its longest entry that leaves the why 40 columns.
    let dw = rows
        .iter()
        .map(|(_, d, _)| d.chars().count())
        .filter(|n| LABEL + 2 + n + 2 + 40 <= p.width)
        .max()
        .unwrap_or(0);
    let indent = " ".repeat(2 + LABEL + dw + 2);
    for (label, decision, why) in &rows {
        let head = format!("  {label:<LABEL$}{decision:<dw$}  ");
        if head.chars().count() > indent.len() {
            // A decision too long for the column: alone on its line, the why under it.
            s.push_str(&format!("  {label:<LABEL$}{decision}\n"));
            s.push_str(&wrap(why, p.width, &indent, &indent));
        } else {
            s.push_str(&wrap(why, p.width, &head, &indent));
        }
    }
    s.push_str(&wrap(&sizing(r), p.width, "  SIZE  ", "        "));

    let applies: Vec<_> = r.must_haves.iter().filter(|m| m.applies).collect();
    s.push_str(&format!(
        "{}\n",
        p.bold(&format!(
            "Must-haves that apply ({} of {})",
            applies.len(),
            r.must_haves.len()
        ))
    ));
    let w = applies.iter().map(|m| m.id.len()).max().unwrap_or(0);
    for m in &applies {
        let first = format!("  {:<w$}  ", m.id);
        s.push_str(&wrap(&m.title, p.width, &first, &" ".repeat(w + 4)));
    }
    let skipped: Vec<&str> = r
        .must_haves
        .iter()
        .filter(|m| !m.applies)
        .map(|m| m.id.as_str())
        .collect();
    if !skipped.is_empty() {
        let line = format!(
            "not for {}: {} (no long-lived connection)",
            r.transport.name(),
            skipped.join(", ")
        );
        s.push_str(&p.dim(&wrap(&line, p.width, "  ", "    ")));
    }
    s
}

/// The one-line why of a decision: the consequence and its headline number.
fn why(r: &Recommendation, id: &str) -> String {
    let pr = &r.profile;
    match id {
        "q1" if r.transport == Transport::Polling => format!(
            "no long connection, heartbeat or reconnect; the delay is about half the interval ({} at 5 s)",
            ms(num("poll-5s", "delivery_p50"))
        ),
        "q1" => format!(
            "pushed in {} ms; polling every 1 s had a {} ms median delay",
            fmt_num(num("push-latency", "delivery_ms")),
            fmt_num(num("poll-1s", "delivery_p50"))
        ),
        "q2" => match r.transport {
            Transport::Websocket => format!(
                "dense or binary upstream: both ways on one connection, {}-{} B of framing",
                fmt_num(num("ws-framing", "framing_min")),
                fmt_num(num("ws-framing", "framing_max"))
            ),
            Transport::Sse => "upstream as POST; needs HTTP/2 at the edge and buffering off on every proxy".into(),
            _ => "upstream travels as ordinary requests".into(),
        },
        "q3" => match r.delivery {
            Delivery::Snapshot => {
                "newer replaces older: a full snapshot on (re)connect, no sequence numbers".into()
            }
            Delivery::SeqRing => {
                "seq in every payload, a ring buffer shared by all clients, a gap marker past it"
                    .into()
            }
            Delivery::SessionAck => {
                "a session per user with acks, dedup on the client, and a TTL on sessions".into()
            }
        },
        "q4" => match r.topology {
            Topology::SingleProcess => format!(
                "{} connections on one machine: one process is enough",
                fmt_num(pr.connections as f64)
            ),
            Topology::Pubsub => format!(
                "Redis pub/sub between the {} machines, one path per event (else {}% duplicates), presence by a TTL key",
                pr.machines,
                fmt_num(num("single-path", "duplicates"))
            ),
        },
        // The path's decision is the heartbeat; its why, the detail's first sentence.
        _ => r
            .reasons
            .iter()
            .find(|q| q.id == id)
            .map(|q| first_sentence(&q.detail))
            .unwrap_or_default(),
    }
}

/// The sizing that concerns the delivery chosen, on the profile's numbers.
fn sizing(r: &Recommendation) -> String {
    let (z, pr) = (&r.sizing, &r.profile);
    let fig = |key: &str, b: u64| crate::choose::sizing::fmt_figure(b, z.is_saturated(key));
    let replay = format!(
        "{} x {} msg/s = {}",
        fmt_duration(pr.max_disconnect),
        fmt_num(pr.rate),
        messages(z.messages_to_replay)
    );
    let delivery = match r.delivery {
        Delivery::Snapshot => "a snapshot on each (re)connect, no replay buffer".to_string(),
        Delivery::SeqRing => format!(
            "ring buffer {} ({replay} of {} B)",
            fig("ring_bytes", z.ring_bytes),
            fmt_num(pr.size as f64)
        ),
        Delivery::SessionAck if z.durable_inbox => format!(
            "{} per disconnected session ({replay}), {} a machine: past the {} budget, so a durable inbox (a table or a stream, fetched on reconnect)",
            fig("session_bytes_per_client", z.session_bytes_per_client),
            fig("sessions_per_machine_bytes", z.sessions_per_machine_bytes),
            crate::choose::sizing::fmt_budget(z.session_budget_bytes)
        ),
        Delivery::SessionAck => format!(
            "{} per disconnected session ({replay}), {} if all {} disconnect at once",
            fig("session_bytes_per_client", z.session_bytes_per_client),
            fig("sessions_worst_case_bytes", z.sessions_worst_case_bytes),
            fmt_num(pr.connections as f64)
        ),
    };
    if r.transport == Transport::Polling {
        return delivery;
    }
    // Measured on the user's server (profile memory_per_connection) or the seed's figure.
    let whose = match z.per_connection_source.starts_with("measured") {
        true => "measured on your server",
        false => "reference host",
    };
    format!(
        "{delivery}; RAM {} per machine ({} connections at {} each, {whose})",
        fig("ram_bytes_per_machine", z.ram_bytes_per_machine),
        fmt_num(z.connections_per_machine as f64),
        fmt_bytes(z.per_connection_bytes)
    )
}

/// Up to the first ". " (the sentence, without its full stop).
fn first_sentence(text: &str) -> String {
    let end = text.find(". ").unwrap_or(text.len());
    text[..end].trim_end_matches('.').to_string()
}

fn ms(v: f64) -> String {
    crate::choose::decide::fmt_ms(v)
}

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

/// "1 message", "30 messages".
pub fn messages(n: u64) -> String {
    format!(
        "{} message{}",
        fmt_num(n as f64),
        if n == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Loss, Profile, Upstream};
    use std::time::Duration;

    fn rec(loss: Loss, machines: u64, visible_ms: u64) -> Recommendation {
        let p = Profile {
            visible_within: Some(Duration::from_millis(visible_ms)),
            upstream: Some(Upstream::Sparse),
            loss: Some(loss),
            machines,
            connections: 20_000,
            path: Some(vec![crate::hops::chain::PathEntry::new("nginx")]),
            ..Profile::default()
        };
        crate::choose::decide(&p).unwrap()
    }

    #[test]
    fn one_screen_with_each_decision_its_why_and_the_must_haves_that_apply() {
        let r = rec(Loss::PerUser, 3, 200);
        let s = summary(&r, &Palette::new(false));
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.len() <= 24, "one screen: {s}");
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{s}");
        assert!(lines[0].starts_with("Recommendation: sse + session-ack + pubsub"));
        let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
        for want in [
            "Q1 push",
            "Q2 sse",
            "HTTP/2 at the edge and buffering off on every proxy",
            "Q3 session-ack",
            "Q4 pubsub Redis pub/sub between the 3 machines, one path per event",
            "presence by a TTL key",
            "PATH heartbeat every",
            "614.4 MB if all 20,000 disconnect",
            "Must-haves that apply (6 of 6)",
            "write-deadline",
            "proxy-config",
        ] {
            assert!(flat.contains(want), "{want}: {s}");
        }
    }

    #[test]
    fn the_recap_keeps_a_space_after_every_label() {
        let r = rec(Loss::PerUser, 3, 200);
        let s = brief(&r, &Palette::new(false));
        assert!(s.contains("  PATH  nginx"), "{s}");
        assert!(s.contains("  Q1    "), "{s}");
        assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
    }

    #[test]
    fn polling_says_which_must_haves_do_not_apply_and_sizes_no_ring() {
        let r = rec(Loss::Replaceable, 1, 10 * 60_000);
        let s = summary(&r, &Palette::new(false));
        let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("Recommendation: polling + snapshot + single-process"));
        assert!(flat.contains("no replay buffer"), "{s}");
        assert!(!flat.contains("RAM"), "polling holds no connection: {s}");
        assert!(flat.contains("not for polling: write-deadline"), "{s}");
        let applies = r.must_haves.iter().filter(|m| m.applies).count();
        assert!(flat.contains(&format!("Must-haves that apply ({applies} of 6)")));
    }
}
