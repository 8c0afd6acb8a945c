//! Prometheus text exposition of a hub [`Snapshot`] (pure).
use super::hub::Snapshot;
use rtcheck_wire::stats::ClientCounts;
use std::fmt::Write;

/// Label set (with braces, or a suffix such as `_bucket{...}`) and value of one sample.
type Rows = Vec<(String, String)>;

pub fn render(s: &Snapshot) -> String {
    let mut o = String::with_capacity(4096);
    connections(&mut o, s);
    delivery(&mut o, s);
    losses(&mut o, s);
    server_state(&mut o, s);
    hub_round_histogram(&mut o, s);
    process(&mut o, s);
    delivery_state(&mut o, s);
    o
}

/// One metric family: HELP, TYPE, then a line per row.
fn metric(o: &mut String, name: &str, kind: &str, help: &str, rows: &[(String, String)]) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
    for (labels, v) in rows {
        let _ = writeln!(o, "{name}{labels} {v}");
    }
}

/// A single unlabelled sample.
fn one(v: impl ToString) -> Rows {
    vec![(String::new(), v.to_string())]
}

/// One sample per push transport (polling is counted by requests, not connections).
fn by_transport(c: &ClientCounts) -> Rows {
    [("ws", c.ws), ("sse", c.sse), ("raw", c.raw)]
        .iter()
        .map(|(t, v)| (format!("{{transport=\"{t}\"}}"), v.to_string()))
        .collect()
}

fn connections(o: &mut String, s: &Snapshot) {
    metric(
        o,
        "rtcheck_connections",
        "gauge",
        "Open client connections by transport.",
        &by_transport(&s.stats.clients.unwrap_or_default()),
    );
    metric(
        o,
        "rtcheck_poll_requests_total",
        "counter",
        "GET /poll requests served.",
        &one(s.stats.clients.unwrap_or_default().poll),
    );
}

fn delivery(o: &mut String, s: &Snapshot) {
    metric(
        o,
        "rtcheck_messages_sent_total",
        "counter",
        "Messages fully written to clients, by transport.",
        &by_transport(&s.stats.messages_sent),
    );
    metric(
        o,
        "rtcheck_bytes_sent_total",
        "counter",
        "Message bytes written to clients, by transport.",
        &by_transport(&s.bytes_sent),
    );
    metric(
        o,
        "rtcheck_rounds_sent_total",
        "counter",
        "Rounds published (one message to every client each).",
        &one(s.stats.rounds_sent),
    );
}

fn losses(o: &mut String, s: &Snapshot) {
    metric(
        o,
        "rtcheck_drops_total",
        "counter",
        "Messages not queued for a client because its queue was full (announced by a gap marker; under snapshot the client is removed).",
        &one(s.stats.drops),
    );
    metric(
        o,
        "rtcheck_slow_clients_removed_total",
        "counter",
        "Clients removed by the server (write deadline, pong or TCP timeout, full queue under snapshot).",
        &one(s.stats.removed),
    );
    metric(
        o,
        "rtcheck_missed_by_removed_total",
        "counter",
        "Messages removed clients never got (queued at removal plus published after).",
        &one(s.stats.missed_by_removed),
    );
    let closed: Rows = s
        .stats
        .closed
        .iter()
        .map(|(r, v)| (format!("{{reason=\"{r}\"}}"), v.to_string()))
        .collect();
    metric(
        o,
        "rtcheck_connections_closed_total",
        "counter",
        "Closed client connections by reason.",
        &closed,
    );
}

fn server_state(o: &mut String, s: &Snapshot) {
    metric(
        o,
        "rtcheck_partial_frame_bytes",
        "gauge",
        "Bytes held in unfinished client frames and fragmented messages.",
        &one(s.stats.partial_frame_bytes),
    );
    metric(
        o,
        "rtcheck_echo_connections_total",
        "counter",
        "WebSocket connections accepted on /echo (off the fan-out path).",
        &one(s.stats.echo_connections),
    );
    let refused: Rows = [
        ("host", s.stats.refused.host),
        ("origin", s.stats.refused.origin),
    ]
    .iter()
    .map(|(r, v)| (format!("{{reason=\"{r}\"}}"), v.to_string()))
    .collect();
    metric(
        o,
        "rtcheck_requests_refused_total",
        "counter",
        "Requests refused: a Host that is not this server's (421, DNS rebinding), an Origin of another site on /control/* or /ws (403).",
        &refused,
    );
    let r = &s.stats.replay;
    for (name, kind, help, v) in [
        ("rtcheck_replay_budget_bytes", "gauge", "--replay-budget: resume replay (and /poll answer) bytes in flight over every client at most.", r.budget_bytes),
        ("rtcheck_replay_bytes_in_flight", "gauge", "Resume replay bytes leased now (chunks being written, poll answers being sent).", r.in_flight_bytes),
        ("rtcheck_replay_bytes_in_flight_peak", "gauge", "The most replay bytes in flight at once since start.", r.peak_in_flight_bytes),
        ("rtcheck_replay_waits_total", "counter", "Replay chunks and polls that waited for the budget.", r.waits),
        ("rtcheck_heap_trims_total", "counter", "Heap trims after replay floods (freed memory handed back to the OS).", r.heap_trims),
    ] {
        metric(o, name, kind, help, &one(v));
    }
    let a = &s.stats.accept_errors;
    let accept: Rows = [
        ("emfile", a.emfile),
        ("enfile", a.enfile),
        ("other", a.other),
    ]
    .iter()
    .map(|(k, v)| (format!("{{kind=\"{k}\"}}"), v.to_string()))
    .collect();
    metric(
        o,
        "rtcheck_accept_errors_total",
        "counter",
        "Failed accepts: emfile (this process at its open files limit), enfile (the system's), other.",
        &accept,
    );
    metric(
        o,
        "rtcheck_max_queue_depth",
        "gauge",
        "Largest per-client queue length seen.",
        &one(s.stats.max_queue_depth),
    );
}

/// Cumulative buckets in seconds (the hub keeps milliseconds), then +Inf, sum and count.
fn hub_round_rows(s: &Snapshot) -> Rows {
    let mut rows: Rows = s
        .hub_buckets
        .iter()
        .map(|(le, n)| (format!("_bucket{{le=\"{}\"}}", le / 1e3), n.to_string()))
        .collect();
    rows.push(("_bucket{le=\"+Inf\"}".into(), s.hub_count.to_string()));
    rows.push(("_sum".into(), format!("{}", s.hub_sum_ms / 1e3)));
    rows.push(("_count".into(), s.hub_count.to_string()));
    rows
}

fn hub_round_histogram(o: &mut String, s: &Snapshot) {
    metric(
        o,
        "rtcheck_hub_round_seconds",
        "histogram",
        "Time for the publisher to hand a round to every client.",
        &hub_round_rows(s),
    );
}

fn process(o: &mut String, s: &Snapshot) {
    metric(
        o,
        "process_resident_memory_bytes",
        "gauge",
        "Resident set size.",
        &one(s.stats.rss_bytes),
    );
    metric(
        o,
        "process_open_fds",
        "gauge",
        "Open file descriptors.",
        &one(s.stats.open_fds),
    );
    metric(
        o,
        "process_cpu_seconds_total",
        "counter",
        "User and system CPU time.",
        &one(s.stats.cpu_seconds),
    );
}

/// Families [`delivery_state`] renders.
pub const METRIC_FAMILIES: usize = 16;

/// Ring and session families for `/metrics`.
fn delivery_state(o: &mut String, snap: &Snapshot) {
    let s = &snap.stats.sessions;
    let rows: [(&str, &str, &str, u64); METRIC_FAMILIES] = [
        (
            "rtcheck_ring_messages",
            "gauge",
            "Messages held in the resume ring.",
            snap.stats.ring_messages,
        ),
        (
            "rtcheck_ring_bytes",
            "gauge",
            "Bytes of the resume ring in every encoding it keeps (WebSocket, SSE, raw, JSON).",
            snap.stats.ring_bytes,
        ),
        (
            "rtcheck_sessions",
            "gauge",
            "Sessions held (session-ack).",
            s.count,
        ),
        (
            "rtcheck_session_bytes",
            "gauge",
            "Bytes of session state held: unacked payload copies plus bookkeeping.",
            s.bytes,
        ),
        (
            "rtcheck_session_messages",
            "gauge",
            "Unacked messages held over every session.",
            s.messages,
        ),
        (
            "rtcheck_sessions_expired_total",
            "counter",
            "Sessions forgotten after --session-ttl away.",
            s.expired,
        ),
        (
            "rtcheck_session_resets_total",
            "counter",
            "Unknown or expired sessions presented: a new session with reset true.",
            s.resets,
        ),
        (
            "rtcheck_session_overflow_messages_total",
            "counter",
            "Messages dropped from full session queues, each reported in a gap marker.",
            s.overflow_messages,
        ),
        (
            "rtcheck_session_acks_total",
            "counter",
            "Acks applied.",
            s.acks,
        ),
        (
            "rtcheck_session_acks_ignored_total",
            "counter",
            "Acks ignored: a seq never sent, or no such session.",
            s.acks_ignored,
        ),
        (
            "rtcheck_sessions_created_total",
            "counter",
            "Sessions issued.",
            s.created,
        ),
        (
            "rtcheck_sessions_max",
            "gauge",
            "Sessions held at most (--max-sessions); beyond it new sessions are refused.",
            s.max,
        ),
        (
            "rtcheck_sessions_refused_total",
            "counter",
            "New sessions refused at --max-sessions (503 + Retry-After, WebSocket close 1013).",
            s.refused,
        ),
        (
            "rtcheck_session_memory_budget_bytes",
            "gauge",
            "--session-memory: sessions held at worst (away, queue full) stay within it.",
            s.memory_budget,
        ),
        (
            "rtcheck_sessions_max_by_memory",
            "gauge",
            "Sessions --session-memory holds at their worst (the cap is the lower of this and --max-sessions).",
            s.max_by_memory,
        ),
        (
            "rtcheck_sessions_refused_memory_total",
            "counter",
            "New sessions refused with --session-memory as the binding cap (also in rtcheck_sessions_refused_total).",
            s.refused_memory,
        ),
    ];
    for (name, kind, help, v) in rows {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
    }
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
    fn hub_round_rows_are_in_seconds_and_end_with_inf_sum_count() {
        let rows = hub_round_rows(&sample());
        let keys: Vec<&str> = rows.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "_bucket{le=\"0.0005\"}",
                "_bucket{le=\"0.001\"}",
                "_bucket{le=\"0.25\"}",
                "_bucket{le=\"+Inf\"}",
                "_sum",
                "_count"
            ]
        );
        assert_eq!(rows[3].1, "7");
        assert_eq!(rows[4].1, "0.0045");
    }
}
