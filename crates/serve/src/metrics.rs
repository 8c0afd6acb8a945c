//! `/metrics` of the embedded server: a hub [`Snapshot`] as Prometheus text (pure), written
//! through the one exposition writer ([`rtcheck_wire::prom`]).
use super::hub::Snapshot;
use rtcheck_wire::prom::{Exposition, Kind};
use rtcheck_wire::stats::{ClientCounts, SessionStats};

pub fn render(s: &Snapshot) -> String {
    let mut p = Exposition::new();
    connections(&mut p, s);
    delivery(&mut p, s);
    losses(&mut p, s);
    server_state(&mut p, s);
    p.histogram(
        "rtcheck_hub_round_seconds",
        "Time for the publisher to hand a round to every client.",
        &hub_round_buckets(s),
        s.hub_count,
        s.hub_sum_ms / 1e3,
    );
    process(&mut p, s);
    delivery_state(&mut p, s);
    p.finish()
}

/// One sample per push transport (polling is counted by requests, not connections).
fn by_transport(c: &ClientCounts) -> [(&'static str, u64); 3] {
    [("ws", c.ws), ("sse", c.sse), ("raw", c.raw)]
}

fn connections(p: &mut Exposition, s: &Snapshot) {
    let clients = s.stats.clients.unwrap_or_default();
    p.by_label(
        "rtcheck_connections",
        Kind::Gauge,
        "Open client connections by transport.",
        "transport",
        &by_transport(&clients),
    );
    p.counter(
        "rtcheck_poll_requests_total",
        "GET /poll requests served.",
        clients.poll,
    );
}

fn delivery(p: &mut Exposition, s: &Snapshot) {
    p.by_label(
        "rtcheck_messages_sent_total",
        Kind::Counter,
        "Messages fully written to clients, by transport.",
        "transport",
        &by_transport(&s.stats.messages_sent),
    );
    p.by_label(
        "rtcheck_bytes_sent_total",
        Kind::Counter,
        "Message bytes written to clients, by transport.",
        "transport",
        &by_transport(&s.bytes_sent),
    );
    p.counter(
        "rtcheck_rounds_sent_total",
        "Rounds published (one message to every client each).",
        s.stats.rounds_sent,
    );
}

fn losses(p: &mut Exposition, s: &Snapshot) {
    p.counter(
        "rtcheck_drops_total",
        "Messages not queued for a client because its queue was full (announced by a gap marker; under snapshot the client is removed).",
        s.stats.drops,
    );
    p.counter(
        "rtcheck_slow_clients_removed_total",
        "Clients removed by the server (write deadline, pong or TCP timeout, full queue under snapshot).",
        s.stats.removed,
    );
    p.counter(
        "rtcheck_missed_by_removed_total",
        "Messages removed clients never got (queued at removal plus published after).",
        s.stats.missed_by_removed,
    );
    let closed: Vec<(&str, u64)> = s
        .stats
        .closed
        .iter()
        .map(|(r, v)| (r.as_str(), *v))
        .collect();
    p.by_label(
        "rtcheck_connections_closed_total",
        Kind::Counter,
        "Closed client connections by reason.",
        "reason",
        &closed,
    );
}

fn server_state(p: &mut Exposition, s: &Snapshot) {
    let st = &s.stats;
    p.gauge(
        "rtcheck_partial_frame_bytes",
        "Bytes held in unfinished client frames and fragmented messages.",
        st.partial_frame_bytes,
    );
    p.counter(
        "rtcheck_echo_connections_total",
        "WebSocket connections accepted on /echo (off the fan-out path).",
        st.echo_connections,
    );
    p.by_label(
        "rtcheck_requests_refused_total",
        Kind::Counter,
        "Requests refused: a Host that is not this server's (421, DNS rebinding), an Origin of another site on /control/* or /ws (403).",
        "reason",
        &[("host", st.refused.host), ("origin", st.refused.origin)],
    );
    let r = &st.replay;
    for (name, kind, help, v) in [
        ("rtcheck_replay_budget_bytes", Kind::Gauge, "--replay-budget: resume replay (and /poll answer) bytes in flight over every client at most.", r.budget_bytes),
        ("rtcheck_replay_bytes_in_flight", Kind::Gauge, "Resume replay bytes leased now (chunks being written, poll answers being sent).", r.in_flight_bytes),
        ("rtcheck_replay_bytes_in_flight_peak", Kind::Gauge, "The most replay bytes in flight at once since start.", r.peak_in_flight_bytes),
        ("rtcheck_replay_waits_total", Kind::Counter, "Replay chunks and polls that waited for the budget.", r.waits),
        ("rtcheck_heap_trims_total", Kind::Counter, "Heap trims after replay floods (freed memory handed back to the OS).", r.heap_trims),
    ] {
        p.single(name, kind, help, v);
    }
    let a = &st.accept_errors;
    p.by_label(
        "rtcheck_accept_errors_total",
        Kind::Counter,
        "Failed accepts: emfile (this process at its open files limit), enfile (the system's), other.",
        "kind",
        &[("emfile", a.emfile), ("enfile", a.enfile), ("other", a.other)],
    );
    p.gauge(
        "rtcheck_max_queue_depth",
        "Largest per-client queue length seen.",
        st.max_queue_depth,
    );
}

/// Cumulative buckets in seconds (the hub keeps milliseconds).
fn hub_round_buckets(s: &Snapshot) -> Vec<(f64, u64)> {
    s.hub_buckets.iter().map(|(le, n)| (le / 1e3, *n)).collect()
}

fn process(p: &mut Exposition, s: &Snapshot) {
    p.gauge(
        "process_resident_memory_bytes",
        "Resident set size.",
        s.stats.rss_bytes,
    );
    p.gauge(
        "process_open_fds",
        "Open file descriptors.",
        s.stats.open_fds,
    );
    p.counter(
        "process_cpu_seconds_total",
        "User and system CPU time.",
        s.stats.cpu_seconds,
    );
}

/// Families of the ring and the sessions (`delivery_state`).
pub const METRIC_FAMILIES: usize = 16;

/// Ring and session families.
fn delivery_state(p: &mut Exposition, snap: &Snapshot) {
    let rows = ring_rows(snap)
        .into_iter()
        .chain(session_rows(&snap.stats.sessions));
    for (name, kind, help, v) in rows {
        p.single(name, kind, help, v);
    }
}

/// One single-value family: name, kind, help, value.
type Row = (&'static str, Kind, &'static str, u64);

/// The resume ring's families.
fn ring_rows(snap: &Snapshot) -> [Row; 2] {
    [
        (
            "rtcheck_ring_messages",
            Kind::Gauge,
            "Messages held in the resume ring.",
            snap.stats.ring_messages,
        ),
        (
            "rtcheck_ring_bytes",
            Kind::Gauge,
            "Bytes of the resume ring in every encoding it keeps (WebSocket, SSE, raw, JSON).",
            snap.stats.ring_bytes,
        ),
    ]
}

/// The sessions' families (session-ack): what they hold and use, then how many were
/// issued and refused at their caps.
fn session_rows(s: &SessionStats) -> impl Iterator<Item = Row> {
    session_use_rows(s).into_iter().chain(session_cap_rows(s))
}

/// Sessions held, their state, and what happened to their messages and acks.
fn session_use_rows(s: &SessionStats) -> [Row; 8] {
    [
        (
            "rtcheck_sessions",
            Kind::Gauge,
            "Sessions held (session-ack).",
            s.count,
        ),
        (
            "rtcheck_session_bytes",
            Kind::Gauge,
            "Bytes of session state held: unacked payload copies plus bookkeeping.",
            s.bytes,
        ),
        (
            "rtcheck_session_messages",
            Kind::Gauge,
            "Unacked messages held over every session.",
            s.messages,
        ),
        (
            "rtcheck_sessions_expired_total",
            Kind::Counter,
            "Sessions forgotten after --session-ttl away.",
            s.expired,
        ),
        (
            "rtcheck_session_resets_total",
            Kind::Counter,
            "Unknown or expired sessions presented: a new session with reset true.",
            s.resets,
        ),
        (
            "rtcheck_session_overflow_messages_total",
            Kind::Counter,
            "Messages dropped from full session queues, each reported in a gap marker.",
            s.overflow_messages,
        ),
        (
            "rtcheck_session_acks_total",
            Kind::Counter,
            "Acks applied.",
            s.acks,
        ),
        (
            "rtcheck_session_acks_ignored_total",
            Kind::Counter,
            "Acks ignored: a seq never sent, or no such session.",
            s.acks_ignored,
        ),
    ]
}

/// Sessions issued, the caps (--max-sessions, --session-memory) and the refusals.
fn session_cap_rows(s: &SessionStats) -> [Row; 6] {
    [
        (
            "rtcheck_sessions_created_total",
            Kind::Counter,
            "Sessions issued.",
            s.created,
        ),
        (
            "rtcheck_sessions_max",
            Kind::Gauge,
            "Sessions held at most (--max-sessions); beyond it new sessions are refused.",
            s.max,
        ),
        (
            "rtcheck_sessions_refused_total",
            Kind::Counter,
            "New sessions refused at --max-sessions (503 + Retry-After, WebSocket close 1013).",
            s.refused,
        ),
        (
            "rtcheck_session_memory_budget_bytes",
            Kind::Gauge,
            "--session-memory: sessions held at worst (away, queue full) stay within it.",
            s.memory_budget,
        ),
        (
            "rtcheck_sessions_max_by_memory",
            Kind::Gauge,
            "Sessions --session-memory holds at their worst (the cap is the lower of this and --max-sessions).",
            s.max_by_memory,
        ),
        (
            "rtcheck_sessions_refused_memory_total",
            Kind::Counter,
            "New sessions refused with --session-memory as the binding cap (also in rtcheck_sessions_refused_total).",
            s.refused_memory,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcheck_wire::stats::{AcceptErrors, Refusals, ReplayStats, ServerStats};
    use std::collections::BTreeMap;

    fn counts(ws: u64, sse: u64, poll: u64, raw: u64) -> ClientCounts {
        ClientCounts { ws, sse, poll, raw }
    }

    fn sample() -> Snapshot {
        let stats = ServerStats {
            rounds_sent: 7,
            rounds_total: Some(10),
            drops: 3,
            removed: 2,
            missed_by_removed: 11,
            clients: Some(counts(4, 5, 6, 1)),
            max_queue_depth: 9,
            rss_bytes: 1 << 20,
            cpu_seconds: 1.25,
            nodelay: Some(true),
            open_fds: 42,
            messages_sent: counts(28, 35, 0, 7),
            closed: BTreeMap::from([("eof".into(), 2), ("deadline".into(), 1)]),
            partial_frame_bytes: 12,
            echo_connections: 1,
            ring_messages: 3,
            ring_bytes: 4096,
            refused: Refusals { host: 2, origin: 1 },
            replay: ReplayStats {
                budget_bytes: 1 << 20,
                ..Default::default()
            },
            accept_errors: AcceptErrors {
                emfile: 4,
                enfile: 0,
                other: 0,
            },
            ..Default::default()
        };
        Snapshot {
            stats,
            hub_buckets: vec![(0.5, 1), (1.0, 5), (250.0, 7)],
            hub_count: 7,
            hub_sum_ms: 4.5,
            bytes_sent: counts(2800, 3500, 0, 700),
        }
    }

    /// Parse `name{labels} value` back into a map for the sample lines.
    fn samples(text: &str) -> BTreeMap<String, String> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let (k, v) = l.rsplit_once(' ').expect("sample line has a value");
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    #[test]
    fn every_family_has_help_type_and_parsed_values() {
        let text = render(&sample());
        let families = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
        // The delivery families: ring and sessions.
        let delivery = METRIC_FAMILIES;
        assert_eq!(families, 23 + delivery);
        assert_eq!(
            text.lines().filter(|l| l.starts_with("# HELP ")).count(),
            23 + delivery
        );
        let m = samples(&text);
        assert_eq!(m["rtcheck_connections{transport=\"sse\"}"], "5");
        assert_eq!(m["rtcheck_poll_requests_total"], "6");
        assert_eq!(m["rtcheck_bytes_sent_total{transport=\"raw\"}"], "700");
        assert_eq!(m["rtcheck_connections_closed_total{reason=\"eof\"}"], "2");
        assert_eq!(m["process_cpu_seconds_total"], "1.25");
        assert_eq!(m["process_resident_memory_bytes"], "1048576");
        assert_eq!(m["rtcheck_ring_bytes"], "4096");
        assert_eq!(m["rtcheck_sessions"], "0");
        assert_eq!(m["rtcheck_requests_refused_total{reason=\"host\"}"], "2");
        assert_eq!(m["rtcheck_accept_errors_total{kind=\"emfile\"}"], "4");
        assert_eq!(m["rtcheck_replay_budget_bytes"], "1048576");
    }

    #[test]
    fn the_hub_round_histogram_is_in_seconds_and_ends_with_inf_sum_count() {
        let text = render(&sample());
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("rtcheck_hub_round_seconds"))
            .collect();
        assert_eq!(
            lines,
            [
                "rtcheck_hub_round_seconds_bucket{le=\"0.0005\"} 1",
                "rtcheck_hub_round_seconds_bucket{le=\"0.001\"} 5",
                "rtcheck_hub_round_seconds_bucket{le=\"0.25\"} 7",
                "rtcheck_hub_round_seconds_bucket{le=\"+Inf\"} 7",
                "rtcheck_hub_round_seconds_sum 0.0045",
                "rtcheck_hub_round_seconds_count 7"
            ]
        );
    }
}
