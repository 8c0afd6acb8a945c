//! TCP buffers and liveness: tcp-wmem, tcp-keepalive.
use super::CheckId;
use super::{bytes, n, pct, skipped, sysctl_fix, Draft, Meta, Workload};
use crate::audit::host::Host;
use crate::evidence::{fmt_num, num};
use crate::findings::{Finding, Status};
use rtcheck_wire::transport::Transport;
use std::time::Duration;

pub const TCP_WMEM: Meta = Meta {
    id: CheckId::TcpWmem,
    title: "Kernel send buffers: tcp_wmem max x connections vs memory and tcp_mem",
    evidence: &["kernel-sndbuf"],
    verify: Some("tcp-wmem"),
    required: true,
    run: tcp_wmem,
};

pub const TCP_KEEPALIVE: Meta = Meta {
    id: CheckId::TcpKeepalive,
    title: "How long TCP alone takes to notice a dead peer (keepalive)",
    evidence: &["ping-pong", "ping-timing"],
    verify: Some("tcp-keepalive"),
    required: true,
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
    let status = wmem_status(worst, pinned, tcp_mem_max, avail);
    let events_dead = wmem[2] / w.size.max(1);
    let budget = wmem_budget(tcp_mem_max, avail, worst);
    let suggested = suggested_sndbuf(budget, conns, wmem[2]);
    let (runtime, persistent) = wmem_fix_steps(wmem, suggested);
    let mut d = Draft::new(&TCP_WMEM)
        .status(status)
        .observed(wmem_observed(wmem, conns, worst, h, tcp_mem_max, avail))
        .expected("worst case <= tcp_mem max and <= 50% of MemAvailable (fail above MemAvailable)")
        .rule(wmem_rule(w, conns, events_dead))
        .fix(
            wmem_fix_summary(status, suggested, conns, budget),
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

/// tcp-wmem verdict (pure): fail when the kernel can pin more than MemAvailable,
/// warn above half of it or when the worst case exceeds tcp_mem.
fn wmem_status(worst: u64, pinned: u64, tcp_mem_max: Option<u64>, avail: Option<u64>) -> Status {
    let over_cap = tcp_mem_max.is_some_and(|m| worst > m);
    match avail {
        Some(a) if pinned > a => Status::Fail,
        Some(a) if pinned.saturating_mul(2) > a => Status::Warn,
        _ if over_cap => Status::Warn,
        _ => Status::Pass,
    }
}

/// The bytes the send buffers may take: the smaller of tcp_mem and half of MemAvailable (pure).
fn wmem_budget(tcp_mem_max: Option<u64>, avail: Option<u64>, worst: u64) -> u64 {
    match (tcp_mem_max, avail) {
        (Some(m), Some(a)) => m.min(a / 2),
        (Some(m), None) => m,
        (None, Some(a)) => a / 2,
        (None, None) => worst,
    }
}

/// A per-socket send buffer that fits `budget` over `conns`, in whole pages,
/// never below 16 KiB nor above the current max (pure).
fn suggested_sndbuf(budget: u64, conns: u64, wmem_max: u64) -> u64 {
    ((budget / conns.max(1)) / 4096 * 4096).clamp(16384, wmem_max.max(16384))
}

fn wmem_observed(
    wmem: [u64; 3],
    conns: u64,
    worst: u64,
    h: &Host,
    tcp_mem_max: Option<u64>,
    avail: Option<u64>,
) -> String {
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
    observed
}

fn wmem_rule(w: &Workload, conns: u64, events_dead: u64) -> String {
    format!(
        "a client that stops reading lets the kernel queue up to tcp_wmem max on its socket: worst case = max x {} connections. tcp_mem caps all TCP buffers together, and past it every socket on the host is under memory pressure. fail when the kernel can pin more than MemAvailable; warn above 50% of it or when the worst case exceeds tcp_mem. A successful write proves nothing: up to {} messages of {} can be \"written\" into one dead connection (the kernel swallowed {} and {} events into a dead connection).",
        n(conns),
        n(events_dead),
        bytes(w.size),
        bytes(num("kernel-sndbuf", "bytes_accepted") as u64),
        fmt_num(num("kernel-sndbuf", "events_written_dead"))
    )
}

/// Runtime and persistent steps: SO_SNDBUF first, the host-wide sysctl, then the app.
fn wmem_fix_steps(wmem: [u64; 3], suggested: u64) -> (Vec<String>, Vec<String>) {
    let (runtime, mut persistent) = sysctl_fix(
        "wmem",
        &[(
            "net.ipv4.tcp_wmem",
            format!("{} {} {}", wmem[0], wmem[1].min(suggested), suggested),
        )],
    );
    persistent.insert(
        0,
        format!(
            "in the server (per socket, preferred): setsockopt(SO_SNDBUF, {suggested}) on each client connection; the host keeps its tcp_wmem for other flows"
        ),
    );
    persistent.push("in the application: a write deadline, a bounded per-client queue, and acks/sequence numbers for delivery (a successful write is not delivery)".into());
    (runtime, persistent)
}

fn wmem_fix_summary(status: Status, suggested: u64, conns: u64, budget: u64) -> String {
    if status == Status::Pass {
        return "Nothing to do on the host; the application still needs write deadlines and acks."
            .to_string();
    }
    format!(
        "Prefer SO_SNDBUF on the server's client sockets (e.g. {}): it bounds only them. Lowering tcp_wmem max to {} host-wide (fits {} connections in {}) also caps every other TCP flow on the host near {} at 100 ms RTT.",
        bytes(suggested),
        bytes(suggested),
        n(conns),
        bytes(budget),
        mbit_at_rtt(suggested, 0.1)
    )
}

/// Who notices a dead peer under this profile, and the verdict that follows (pure).
fn keepalive_verdict(w: &Workload, detect: u64) -> (Status, String) {
    let bound = Duration::from_secs(KEEPALIVE_WARN_S);
    match (w.transport, w.ping) {
        (Transport::Polling, _) => (
            Status::Pass,
            "Transport polling: nothing is pushed, so a client that dies simply stops asking, and a keep-alive connection it leaves ends at the server's idle timeout; TCP keepalive does not decide when a dead client is noticed: pass whatever it is".into(),
        ),
        (t, Some(p)) if p <= bound => (
            Status::Pass,
            format!(
                "The server sends its own heartbeat ({} every {}), under the {KEEPALIVE_WARN_S} s bound: it notices a dead peer, not TCP keepalive: pass whatever keepalive is",
                heartbeat(t),
                rtcheck_base::units::fmt_duration(p)
            ),
        ),
        (t, ping) => {
            let why = match ping {
                Some(p) => format!(
                    "The server's heartbeat every {} is above the bound",
                    rtcheck_base::units::fmt_duration(p)
                ),
                None => format!(
                    "The profile names no server heartbeat (set `ping:` when the server sends a {})",
                    heartbeat(t)
                ),
            };
            let status = if detect > KEEPALIVE_WARN_S {
                Status::Warn
            } else {
                Status::Pass
            };
            (
                status,
                format!(
                    "{why}, so only TCP keepalive notices a dead peer: warn above {KEEPALIVE_WARN_S} s"
                ),
            )
        }
    }
}

fn heartbeat(t: Transport) -> &'static str {
    match t {
        Transport::Sse => "SSE comment line",
        _ => "WebSocket ping",
    }
}

fn keepalive_expected(w: &Workload) -> String {
    match (w.transport, w.ping) {
        (Transport::Polling, _) => "nothing (polling pushes nothing to a dead client)".to_string(),
        (_, Some(p)) if p.as_secs() <= KEEPALIVE_WARN_S => format!(
            "a server heartbeat under {KEEPALIVE_WARN_S} s (profile: every {})",
            rtcheck_base::units::fmt_duration(p)
        ),
        _ => format!("dead peer noticed within {KEEPALIVE_WARN_S} s"),
    }
}

/// The application heartbeat to advise, per transport.
fn heartbeat_advice(t: Transport) -> String {
    let (lo, hi) = (
        fmt_num(num("ping-timing", "production_min")),
        fmt_num(num("ping-timing", "production_max")),
    );
    // SSE has no pong: its heartbeat is a comment line whose write fails on a dead peer.
    match t {
        Transport::Sse => format!(
            "SSE: send a comment line (`: ping`) every {lo}-{hi} s and drop the client when the write fails"
        ),
        _ => format!(
            "WebSocket: ping every {lo}-{hi} s and drop the peer after a missed pong (ping {} s + pongWait {} s detected a dead peer in {} s)",
            fmt_num(num("ping-timing", "ping")),
            fmt_num(num("ping-timing", "pong_wait")),
            fmt_num(num("ping-timing", "detected"))
        ),
    }
}

fn keepalive_summary(w: &Workload, status: Status, detect: u64, app: &str) -> String {
    match (status, w.transport) {
        (_, Transport::Polling) => "Nothing to do for polling.".to_string(),
        (Status::Warn, _) => format!(
            "TCP alone needs {} to drop a vanished peer. {app}; then say so in the profile (`ping:`). Lowering keepalive only helps sockets that enable SO_KEEPALIVE.",
            human_secs(detect)
        ),
        _ if w.ping.is_some() => "Nothing to do: the server's heartbeat notices dead peers.".to_string(),
        _ => format!("Keepalive is tuned; the application still needs its own heartbeat. {app}."),
    }
}

fn tcp_keepalive(w: &Workload, h: &Host) -> Finding {
    let expected = keepalive_expected(w);
    let ka = match &h.keepalive {
        Ok(k) => *k,
        Err(e) => return skipped(&TCP_KEEPALIVE, e.clone(), expected),
    };
    let detect = ka
        .time_s
        .saturating_add(ka.intvl_s.saturating_mul(ka.probes));
    let (status, decision) = keepalive_verdict(w, detect);
    let app = heartbeat_advice(w.transport);
    let (runtime, mut persistent) = sysctl_fix(
        "keepalive",
        &[
            ("net.ipv4.tcp_keepalive_time", "60".to_string()),
            ("net.ipv4.tcp_keepalive_intvl", "10".to_string()),
            ("net.ipv4.tcp_keepalive_probes", "6".to_string()),
        ],
    );
    if w.transport != Transport::Polling {
        persistent.push(format!("in the application: {app}"));
    }
    let mut d = Draft::new(&TCP_KEEPALIVE)
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
            "TCP does not report a vanished peer; keepalive notices it after time + intvl x probes (7,200 + 75 x 9 s by default; Go's default keepalive needed {} s). {decision}.",
            fmt_num(num("ping-pong", "go_keepalive_detect"))
        ))
        .fix(keepalive_summary(w, status, detect, &app), runtime, persistent)
        .num("time_s", ka.time_s as f64)
        .num("intvl_s", ka.intvl_s as f64)
        .num("probes", ka.probes as f64)
        .num("detect_s", detect as f64);
    if let Some(p) = w.ping {
        d = d.num("ping_s", p.as_secs_f64());
    }
    d.build()
}

/// The throughput one flow gets when its send buffer caps the bytes in flight:
/// buffer / RTT, e.g. 233,472 B at 100 ms = about 18.7 Mbit/s.
pub(crate) fn mbit_at_rtt(buffer: u64, rtt_s: f64) -> String {
    format!("{:.1} Mbit/s", buffer as f64 * 8.0 / rtt_s / 1e6)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wmem_status_weighs_pinned_bytes_against_memory_and_tcp_mem() {
        assert_eq!(wmem_status(10, 10, None, Some(9)), Status::Fail);
        assert_eq!(wmem_status(10, 10, None, Some(19)), Status::Warn);
        assert_eq!(wmem_status(10, 10, None, Some(20)), Status::Pass);
        // Capped by tcp_mem: pinned is small, but the worst case exceeds the cap.
        assert_eq!(wmem_status(100, 5, Some(5), Some(1000)), Status::Warn);
        assert_eq!(wmem_status(10, 10, None, None), Status::Pass);
    }

    #[test]
    fn suggested_sndbuf_fits_the_budget_in_pages_within_bounds() {
        assert_eq!(wmem_budget(Some(100), Some(60), 7), 30);
        assert_eq!(wmem_budget(None, None, 7), 7);
        // 1 GiB over 1,000 connections = 1,073,741 B, rounded down to pages.
        assert_eq!(suggested_sndbuf(1 << 30, 1000, 4 << 20), 1_073_152);
        assert_eq!(suggested_sndbuf(0, 1000, 4 << 20), 16384);
        assert_eq!(suggested_sndbuf(1 << 40, 1, 65536), 65536);
    }
}
