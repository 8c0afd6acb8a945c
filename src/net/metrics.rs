//! Prometheus text exposition of a hub [`Snapshot`] (pure).
use super::hub::Snapshot;
use std::fmt::Write;

pub fn render(s: &Snapshot) -> String {
    let mut o = String::with_capacity(4096);
    let mut metric = |name: &str, kind: &str, help: &str, rows: &[(String, String)]| {
        let _ = writeln!(o, "# HELP {name} {help}");
        let _ = writeln!(o, "# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(o, "{name}{labels} {v}");
        }
    };
    let one = |v: String| vec![(String::new(), v)];
    let by_transport = |ws: u64, sse: u64, raw: u64| {
        [("ws", ws), ("sse", sse), ("raw", raw)]
            .iter()
            .map(|(t, v)| (format!("{{transport=\"{t}\"}}"), v.to_string()))
            .collect::<Vec<_>>()
    };
    let c = &s.clients;
    metric(
        "rtcheck_connections",
        "gauge",
        "Open client connections by transport.",
        &by_transport(c.ws, c.sse, c.raw),
    );
    metric(
        "rtcheck_poll_requests_total",
        "counter",
        "GET /poll requests served.",
        &one(c.poll.to_string()),
    );
    let m = &s.messages_sent;
    metric(
        "rtcheck_messages_sent_total",
        "counter",
        "Messages fully written to clients, by transport.",
        &by_transport(m.ws, m.sse, m.raw),
    );
    let b = &s.bytes_sent;
    metric(
        "rtcheck_bytes_sent_total",
        "counter",
        "Message bytes written to clients, by transport.",
        &by_transport(b.ws, b.sse, b.raw),
    );
    metric(
        "rtcheck_rounds_sent_total",
        "counter",
        "Rounds published (one message to every client each).",
        &one(s.rounds_sent.to_string()),
    );
    metric(
        "rtcheck_drops_total",
        "counter",
        "Messages not queued for a client because its queue was full.",
        &one(s.drops.to_string()),
    );
    metric(
        "rtcheck_slow_clients_removed_total",
        "counter",
        "Clients removed by the server (write deadline or pong timeout).",
        &one(s.removed.to_string()),
    );
    metric(
        "rtcheck_missed_by_removed_total",
        "counter",
        "Messages removed clients never got (queued at removal plus published after).",
        &one(s.missed_by_removed.to_string()),
    );
    let closed: Vec<_> = s.closed.iter().collect();
    metric(
        "rtcheck_connections_closed_total",
        "counter",
        "Closed client connections by reason.",
        &closed
            .iter()
            .map(|(r, v)| (format!("{{reason=\"{r}\"}}"), v.to_string()))
            .collect::<Vec<_>>(),
    );
    metric(
        "rtcheck_partial_frame_bytes",
        "gauge",
        "Bytes held in unfinished client frames and fragmented messages.",
        &one(s.partial_frame_bytes.to_string()),
    );
    metric(
        "rtcheck_echo_connections_total",
        "counter",
        "WebSocket connections accepted on /echo (off the fan-out path).",
        &one(s.echo_connections.to_string()),
    );
    metric(
        "rtcheck_max_queue_depth",
        "gauge",
        "Largest per-client queue length seen.",
        &one(s.max_queue_depth.to_string()),
    );
    let mut rows: Vec<(String, String)> = s
        .hub_buckets
        .iter()
        .map(|(le, n)| (format!("_bucket{{le=\"{}\"}}", le / 1e3), n.to_string()))
        .collect();
    rows.push(("_bucket{le=\"+Inf\"}".into(), s.hub_count.to_string()));
    rows.push(("_sum".into(), format!("{}", s.hub_sum_ms / 1e3)));
    rows.push(("_count".into(), s.hub_count.to_string()));
    metric(
        "rtcheck_hub_round_seconds",
        "histogram",
        "Time for the publisher to hand a round to every client.",
        &rows,
    );
    metric(
        "process_resident_memory_bytes",
        "gauge",
        "Resident set size.",
        &one(s.rss_bytes.to_string()),
    );
    metric(
        "process_open_fds",
        "gauge",
        "Open file descriptors.",
        &one(s.open_fds.to_string()),
    );
    metric(
        "process_cpu_seconds_total",
        "counter",
        "User and system CPU time.",
        &one(format!("{}", s.cpu_seconds)),
    );
    o
}
