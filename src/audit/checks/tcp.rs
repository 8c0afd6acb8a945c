//! TCP buffers and liveness: tcp-wmem, tcp-keepalive.
use super::{bytes, n, pct, skipped, sysctl_fix, Draft, Meta, Workload};
use crate::audit::host::Host;
use crate::evidence::{fmt_num, num};
use crate::findings::{Finding, Status};
use crate::profile::Transport;

pub const TCP_WMEM: Meta = Meta {
    id: "tcp-wmem",
    title: "Kernel send buffers: tcp_wmem max x connections vs memory and tcp_mem",
    evidence: &["kernel-sndbuf"],
    verify: Some("tcp-wmem"),
    run: tcp_wmem,
};

pub const TCP_KEEPALIVE: Meta = Meta {
    id: "tcp-keepalive",
    title: "How long TCP alone takes to notice a dead peer (keepalive)",
    evidence: &["ping-pong", "ping-timing"],
    verify: Some("tcp-keepalive"),
    run: tcp_keepalive,
};

/// Above this, TCP keepalive is too slow to rely on (warn).
pub const KEEPALIVE_WARN_S: u64 = 300;

fn tcp_wmem(w: &Workload, h: &Host) -> Finding {
    let wmem = match &h.tcp_wmem {
        Ok(v) => *v,
        Err(e) => {
            return skipped(
                &TCP_WMEM,
                e.clone(),
                "worst case <= tcp_mem max and <= 50% of MemAvailable",
            )
        }
    };
    let conns = w.connections;
    let worst = wmem[2].saturating_mul(conns);
    let tcp_mem_max = h
        .tcp_mem
        .as_ref()
        .ok()
        .map(|m| m[2].saturating_mul(h.page_size));
    let avail = h.meminfo.as_ref().ok().map(|m| m.available);
    // What the kernel can actually pin: tcp_mem caps all TCP buffers together.
    let pinned = tcp_mem_max.map_or(worst, |m| worst.min(m));
    let over_cap = tcp_mem_max.is_some_and(|m| worst > m);
    let status = match avail {
        Some(a) if pinned > a => Status::Fail,
        Some(a) if pinned.saturating_mul(2) > a => Status::Warn,
        _ if over_cap => Status::Warn,
        _ => Status::Pass,
    };
    let events_dead = wmem[2] / w.size.max(1);
    let mut observed = format!(
        "tcp_wmem {} {} {} (max {}); worst case {} x {} = {}",
        wmem[0],
        wmem[1],
        wmem[2],
        bytes(wmem[2]),
        bytes(wmem[2]),
        n(conns),
        bytes(worst)
    );
    match (&h.tcp_mem, tcp_mem_max) {
        (Ok(m), Some(b)) => {
            observed.push_str(&format!("; tcp_mem max {} pages = {}", n(m[2]), bytes(b)))
        }
        (Err(e), _) => observed.push_str(&format!("; tcp_mem unknown ({e})")),
        _ => {}
    }
    match (&h.meminfo, avail) {
        (Ok(_), Some(a)) => observed.push_str(&format!("; MemAvailable {}", bytes(a))),
        (Err(e), _) => observed.push_str(&format!("; MemAvailable unknown ({e})")),
        _ => {}
    }
    // Suggest a max that fits the smaller of tcp_mem and half of MemAvailable.
    let budget = match (tcp_mem_max, avail) {
        (Some(m), Some(a)) => m.min(a / 2),
        (Some(m), None) => m,
        (None, Some(a)) => a / 2,
        (None, None) => worst,
    };
    let suggested = ((budget / conns.max(1)) / 4096 * 4096).clamp(16384, wmem[2].max(16384));
    let (runtime, mut persistent) = sysctl_fix(
        "wmem",
        &[(
            "net.ipv4.tcp_wmem",
            format!("{} {} {}", wmem[0], wmem[1].min(suggested), suggested),
        )],
    );
    persistent.push("in the application: a write deadline, a bounded per-client queue, and acks/sequence numbers for delivery (a successful write is not delivery)".into());
    let mut d = Draft::new(&TCP_WMEM)
        .status(status)
        .observed(observed)
        .expected("worst case <= tcp_mem max and <= 50% of MemAvailable (fail above MemAvailable)")
        .rule(format!(
            "a client that stops reading lets the kernel queue up to tcp_wmem max on its socket: worst case = max x {} connections. tcp_mem caps all TCP buffers together, and past it every socket on the host is under memory pressure. fail when the kernel can pin more than MemAvailable; warn above 50% of it or when the worst case exceeds tcp_mem. A successful write proves nothing: up to {} messages of {} can be \"written\" into one dead connection (the kernel swallowed {} and {} events into a dead connection).",
            n(conns),
            n(events_dead),
            bytes(w.size),
            bytes(num("kernel-sndbuf", "bytes_accepted") as u64),
            fmt_num(num("kernel-sndbuf", "events_written_dead"))
        ))
        .fix(
            if status == Status::Pass {
                "Nothing to do on the host; the application still needs write deadlines and acks.".to_string()
            } else {
                format!(
                    "Lower tcp_wmem max to {} (fits {} connections in {}), or set SO_SNDBUF per socket in the server.",
                    bytes(suggested),
                    n(conns),
                    bytes(budget)
                )
            },
            runtime,
            persistent,
        )
        .num("wmem_max", wmem[2] as f64)
        .num("connections", conns as f64)
        .num("worst_case_bytes", worst as f64)
        .num("events_per_dead_connection", events_dead as f64);
    if let Some(m) = tcp_mem_max {
        d = d.num("tcp_mem_max_bytes", m as f64);
    }
    if let Some(a) = avail {
        d = d
            .num("mem_available", a as f64)
            .num("pinned_pct_of_available", pct(pinned as f64, a as f64));
    }
    d.build()
}

fn tcp_keepalive(w: &Workload, h: &Host) -> Finding {
    let expected = format!(
        "dead peer noticed within {} s, and an application ping",
        KEEPALIVE_WARN_S
    );
    let ka = match &h.keepalive {
        Ok(k) => *k,
        Err(e) => return skipped(&TCP_KEEPALIVE, e.clone(), expected),
    };
    let detect = ka
        .time_s
        .saturating_add(ka.intvl_s.saturating_mul(ka.probes));
    let ping = format!(
        "ping {} s + pongWait {} s detected a dead peer in {} s; mobile networks go silent 5-10 s, so production uses {}-{} s",
        fmt_num(num("ping-timing", "ping")),
        fmt_num(num("ping-timing", "pong_wait")),
        fmt_num(num("ping-timing", "detected")),
        fmt_num(num("ping-timing", "production_min")),
        fmt_num(num("ping-timing", "production_max"))
    );
    let (status, summary) = if w.transport == Transport::Polling {
        (
            Status::Pass,
            "polling holds no idle connection between requests: a dead client simply stops asking"
                .to_string(),
        )
    } else if detect > KEEPALIVE_WARN_S {
        (
            Status::Warn,
            format!(
                "TCP alone needs {} to drop a vanished peer: the application must ping ({} {ping}). Lowering keepalive only helps sockets that enable SO_KEEPALIVE.",
                human_secs(detect),
                if w.transport == Transport::Sse { "SSE: a comment line as heartbeat;" } else { "WebSocket ping/pong;" }
            ),
        )
    } else {
        (
            Status::Pass,
            format!("keepalive is tuned; the application still needs its own ping: {ping}"),
        )
    };
    let (runtime, mut persistent) = sysctl_fix(
        "keepalive",
        &[
            ("net.ipv4.tcp_keepalive_time", "60".to_string()),
            ("net.ipv4.tcp_keepalive_intvl", "10".to_string()),
            ("net.ipv4.tcp_keepalive_probes", "6".to_string()),
        ],
    );
    persistent.push(format!(
        "in the application: ping every {}-{} s, drop the peer after a missed pong",
        fmt_num(num("ping-timing", "production_min")),
        fmt_num(num("ping-timing", "production_max"))
    ));
    Draft::new(&TCP_KEEPALIVE)
        .status(status)
        .observed(format!(
            "tcp_keepalive_time {} s + intvl {} s x probes {} = {} s",
            ka.time_s,
            ka.intvl_s,
            ka.probes,
            n(detect)
        ))
        .expected(expected)
        .rule(format!(
            "TCP does not report a vanished peer; keepalive notices it after time + intvl x probes (7,200 + 75 x 9 s by default). warn above {} s ({} transport). Measured: {ping}; Go's default keepalive needed {} s.",
            KEEPALIVE_WARN_S,
            w.transport.as_str(),
            fmt_num(num("ping-pong", "go_keepalive_detect"))
        ))
        .fix(summary, runtime, persistent)
        .num("time_s", ka.time_s as f64)
        .num("intvl_s", ka.intvl_s as f64)
        .num("probes", ka.probes as f64)
        .num("detect_s", detect as f64)
        .build()
}

/// "7,875 s (2 h 11 min)": seconds as measured plus a human reading.
fn human_secs(s: u64) -> String {
    if s < 120 {
        return format!("{s} s");
    }
    let (h, m) = (s / 3600, (s % 3600) / 60);
    if h == 0 {
        format!("{} s ({m} min)", n(s))
    } else {
        format!("{} s ({h} h {m} min)", n(s))
    }
}
