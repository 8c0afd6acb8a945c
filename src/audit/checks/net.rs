//! Connection setup: ephemeral ports, TIME_WAIT, accept backlog, conntrack.
use super::CheckId;
use super::{n, pct, skipped, sysctl_fix, Draft, Meta, Workload};
use crate::audit::host::{Backlog, Host, PortRange};
use crate::evidence::num;
use crate::findings::{Finding, Status};
use crate::profile::Role;

pub const EPHEMERAL_PORTS: Meta = Meta {
    id: CheckId::EphemeralPorts,
    title: "Ephemeral ports per destination address (ip_local_port_range)",
    evidence: &["ephemeral-ports"],
    verify: Some("ephemeral-ports"),
    required: true,
    run: ephemeral_ports,
};

pub const TIME_WAIT: Meta = Meta {
    id: CheckId::TimeWait,
    title: "TIME_WAIT sockets now vs the ephemeral port range",
    evidence: &["tw-sockstat", "ephemeral-ports"],
    verify: Some("time-wait"),
    required: true,
    run: time_wait,
};

pub const SOMAXCONN: Meta = Meta {
    id: CheckId::Somaxconn,
    title: "Accept backlog (net.core.somaxconn, tcp_max_syn_backlog) vs a reconnect burst",
    evidence: &["ephemeral-ports"],
    verify: None,
    required: true,
    run: somaxconn,
};

pub const CONNTRACK: Meta = Meta {
    id: CheckId::Conntrack,
    title: "Connection tracking table (nf_conntrack_max)",
    evidence: &["ephemeral-ports"],
    verify: None,
    required: false,
    run: conntrack,
};

fn storm_text() -> String {
    format!(
        "a reconnect storm closes N and opens N inside TIME_WAIT's {} s: {} closed + {} opened gave {} failures",
        num("ephemeral-ports", "time_wait"),
        n(num("ephemeral-ports", "closed") as u64),
        n(num("ephemeral-ports", "opened") as u64),
        n(num("ephemeral-ports", "failed") as u64)
    )
}

const TW_REUSE_NOTE: &str = "net.ipv4.tcp_tw_reuse=1 lets a new outbound connection take a port still in TIME_WAIT (needs TCP timestamps; 2 = loopback only); it adds no ports: N open connections to one destination still need N ports, and it does nothing for inbound connections";

fn ephemeral_ports(w: &Workload, h: &Host) -> Finding {
    let outbound = w.connections;
    let expected_outbound = format!(
        "usable ports >= {} (2 x {} outbound per destination; fail below {})",
        n(2 * outbound),
        n(outbound),
        n(outbound)
    );
    let range = match &h.port_range {
        Ok(r) => *r,
        Err(e) => return skipped(&EPHEMERAL_PORTS, e.clone(), expected_outbound),
    };
    let (base, usable) = ports_seen(range, h);
    if w.role == Role::Server {
        return ports_server(base);
    }
    let status = ports_status(outbound, usable);
    // Issue 37: how many source addresses (`bench fanout --source-ip`, or the client's
    // own bind) carry this count with the storm's headroom at the current range.
    let sources = source_addresses_needed(outbound, usable);
    let (runtime, persistent) = sysctl_fix(
        "ports",
        &[("net.ipv4.ip_local_port_range", "10240 65535".to_string())],
    );
    base.status(status)
        .expected(expected_outbound)
        .rule(format!(
            "role {}: one ephemeral port per outbound connection to one destination address; fail when {} connections > {} usable ports; warn when 2 x connections > usable, because {}.",
            w.role.as_str(),
            n(outbound),
            n(usable),
            storm_text()
        ))
        .fix(
            ports_fix_summary(status, outbound, usable, sources),
            runtime,
            persistent,
        )
        .num("outbound", outbound as f64)
        .num("source_addresses_needed", sources as f64)
        .build()
}

/// The range, the reserved ports in it and tcp_tw_reuse, as observed and as numbers;
/// and the usable ports.
fn ports_seen(range: PortRange, h: &Host) -> (Draft<'static>, u64) {
    let (reserved, reserved_txt) = match &h.reserved_in_range {
        Ok(r) => (
            *r,
            format!("{} reserved in range (ip_local_reserved_ports)", n(*r)),
        ),
        Err(e) => (0, format!("reserved ports unknown ({e})")),
    };
    let usable = range.size().saturating_sub(reserved);
    let reuse = match &h.tcp_tw_reuse {
        Ok(v) => format!("tcp_tw_reuse {v}"),
        Err(_) => "tcp_tw_reuse unknown".into(),
    };
    let observed = format!(
        "ip_local_port_range {}-{} = {} ports, {reserved_txt}: {} usable; {reuse}",
        range.low,
        range.high,
        n(range.size()),
        n(usable)
    );
    let mut base = Draft::new(&EPHEMERAL_PORTS)
        .observed(observed)
        .num("range_low", range.low as f64)
        .num("range_high", range.high as f64)
        .num("range_size", range.size() as f64)
        .num("reserved", reserved as f64)
        .num("usable", usable as f64);
    if let Ok(v) = h.tcp_tw_reuse {
        base = base.num("tcp_tw_reuse", v as f64);
    }
    (base, usable)
}

/// A server takes no ephemeral port for inbound connections: its proxies do.
fn ports_server(base: Draft<'static>) -> Finding {
    base.status(Status::Pass)
        .expected("no ephemeral ports needed (role server)")
        .rule(format!(
            "role server: inbound connections all arrive on the listening port and take no ephemeral port. The ports run out on the proxy or load generator in front of it ({} per destination address by default; {}): audit that host with --role proxy or --role loadgen.",
            n(num("ephemeral-ports", "port_range") as u64),
            storm_text()
        ))
        .fix(
            format!("Nothing to do on a server. On its proxies and load generators: {TW_REUSE_NOTE}."),
            vec![],
            vec![],
        )
        .num("outbound", 0.0)
        .build()
}

/// Pure: fail when the connections exceed the usable ports, warn when a storm's twice
/// would.
fn ports_status(outbound: u64, usable: u64) -> Status {
    if outbound > usable {
        Status::Fail
    } else if 2 * outbound > usable {
        Status::Warn
    } else {
        Status::Pass
    }
}

/// Pure: what to do. A wider range (keeping below 10240 for listeners) helps up to its
/// size; beyond that only more destination addresses or source IPs do.
fn ports_fix_summary(status: Status, outbound: u64, usable: u64, sources: u64) -> String {
    let wide = 65535 - 10240 + 1;
    if status == Status::Pass {
        return format!("Nothing to do. {TW_REUSE_NOTE}.");
    }
    let summary = if 2 * outbound <= wide {
        format!(
            "Widen the range (reserve your listening ports with ip_local_reserved_ports first), or spread connections over more destination addresses or source IPs: each (source IP, destination IP, destination port) has its own range. {TW_REUSE_NOTE}."
        )
    } else {
        format!(
            "{} outbound connections (x2 for a storm) exceed even a 10240-65535 range ({} ports): spread them over several destination addresses (IPs or ports) or source IPs. {TW_REUSE_NOTE}.",
            n(outbound),
            n(wide)
        )
    };
    let spread = format!(
        " At this range {} outbound connections with a storm's headroom need {} source address(es) per destination (each brings its own {} ports; rtcheck bench fanout --source-ip A,B...).",
        n(outbound),
        n(sources),
        n(usable)
    );
    summary + &spread
}

/// Source addresses for `outbound` connections to one destination with a storm's
/// headroom (2x) when each address has `usable` ports; at least one.
pub fn source_addresses_needed(outbound: u64, usable: u64) -> u64 {
    (2 * outbound).div_ceil(usable.max(1)).max(1)
}

fn time_wait(w: &Workload, h: &Host) -> Finding {
    let expected = if w.role == Role::Server {
        "no ephemeral port held by inbound TIME_WAIT (role server)".to_string()
    } else {
        "TIME_WAIT <= 50% of the usable port range".to_string()
    };
    let (ss, range) = match (&h.sockstat, &h.port_range) {
        (Ok(s), Ok(r)) => (*s, *r),
        (Err(e), _) | (_, Err(e)) => return skipped(&TIME_WAIT, e.clone(), expected),
    };
    let usable = range
        .size()
        .saturating_sub(*h.reserved_in_range.as_ref().unwrap_or(&0));
    let ratio = pct(ss.tcp_tw as f64, usable as f64);
    // Decide on exact integers; the rounded percentage is for display only. A server's
    // inbound connections take no ephemeral port (ephemeral-ports passes it for that
    // reason), so their TIME_WAIT cannot exhaust the range: the same rule for both checks.
    let server = w.role == Role::Server;
    let status = if !server && ss.tcp_tw.saturating_mul(2) > usable {
        Status::Warn
    } else {
        Status::Pass
    };
    let side = if server {
        " role server: TIME_WAIT of inbound connections sits on the listening port, not on an ephemeral port, so it cannot exhaust the range: pass whatever the ratio (as ephemeral-ports). Outbound connections from this host (database, Redis) do use the range: the first command below shows their destinations. The ports run out on the proxy or load generator: audit it with --role proxy or --role loadgen."
    } else {
        ""
    };
    let (runtime, mut persistent) = sysctl_fix("tw", &[("net.ipv4.tcp_tw_reuse", "1".to_string())]);
    let mut runtime: Vec<String> = runtime;
    runtime.insert(
        0,
        "ss -Htan state time-wait | awk '{print $4}' | sort | uniq -c | sort -rn | head   # which destinations".to_string(),
    );
    persistent.push("reuse connections (HTTP keep-alive, pools) and let the client close first, so TIME_WAIT lands where ports are plentiful".to_string());
    Draft::new(&TIME_WAIT)
        .status(status)
        .observed(format!(
            "{} sockets in TIME_WAIT (net/sockstat tw), {} TCP in use; {}% of {} usable ports",
            n(ss.tcp_tw),
            n(ss.tcp_inuse),
            ratio,
            n(usable)
        ))
        .expected(expected)
        .rule(format!(
            "TIME_WAIT lasts {} s and keeps its port; for outbound connections (roles proxy, loadgen) warn above 50% of the usable range, since a reconnect storm of this workload ({} connections) needs the rest. sockstat counts every destination together, so this is an upper bound for one destination (the first command below splits it).{side}",
            num("ephemeral-ports", "time_wait"),
            n(w.connections)
        ))
        .fix(
            if status == Status::Pass {
                "Nothing to do now; watch tw in /proc/net/sockstat on the client or load-balancer side during a reconnect.".to_string()
            } else {
                format!("Find who closes first and to which destination; reuse connections. {TW_REUSE_NOTE}.")
            },
            runtime,
            persistent,
        )
        .num("time_wait", ss.tcp_tw as f64)
        .num("tcp_inuse", ss.tcp_inuse as f64)
        .num("usable", usable as f64)
        .num("ratio_pct", ratio)
        .build()
}

fn somaxconn(w: &Workload, h: &Host) -> Finding {
    let burst = w.connections.min(65535);
    let expected = format!("somaxconn and tcp_max_syn_backlog >= {}", n(burst));
    if w.role == Role::Loadgen {
        return somaxconn_loadgen(h);
    }
    let (smc, syn) = match (&h.somaxconn, &h.tcp_max_syn_backlog) {
        (Ok(a), Ok(b)) => (*a, *b),
        (Err(e), _) | (_, Err(e)) => return skipped(&SOMAXCONN, e.clone(), expected),
    };
    let expected = match &h.backlogs {
        Ok(v) if !v.is_empty() => format!(
            "somaxconn, tcp_max_syn_backlog and the server's listen backlog >= {}",
            n(burst)
        ),
        _ => expected,
    };
    // The server's own listeners: their effective backlog is min(listen arg, somaxconn
    // at listen time); raising somaxconn later does not reach a socket already listening.
    let short: Vec<&Backlog> = h
        .backlogs
        .as_ref()
        .map(|v| v.iter().filter(|b| b.backlog < burst).collect())
        .unwrap_or_default();
    let status = if smc < burst || syn < burst || !short.is_empty() {
        Status::Warn
    } else {
        Status::Pass
    };
    let (runtime, persistent) = backlog_fix_lines(burst, (smc, syn), !short.is_empty());
    let mut d = Draft::new(&SOMAXCONN)
        .status(status)
        .observed(backlog_observed(smc, syn, &h.backlogs))
        .expected(expected)
        .rule(format!(
            "after a restart or network blip every client reconnects at once ({} connections, capped at 65,535); handshakes beyond the SYN and accept queues are dropped and retried seconds later (SYN retransmits start at 1 s and double); warn when either queue is smaller than the burst. In the evidence {}.",
            n(w.connections),
            storm_text()
        ))
        .fix(
            backlog_fix_summary(status, short.first().map(|b| b.backlog)),
            runtime,
            persistent,
        )
        .num("somaxconn", smc as f64)
        .num("tcp_max_syn_backlog", syn as f64)
        .num("burst", burst as f64);
    if let Some(low) = h
        .backlogs
        .as_ref()
        .ok()
        .and_then(|v| v.iter().map(|b| b.backlog).min())
    {
        d = d.num("listen_backlog", low as f64);
    }
    d.build()
}

/// A load generator accepts no connections: the backlog is the server's matter.
fn somaxconn_loadgen(h: &Host) -> Finding {
    Draft::new(&SOMAXCONN)
        .status(Status::Pass)
        .observed(match (&h.somaxconn, &h.tcp_max_syn_backlog) {
            (Ok(a), Ok(b)) => format!("somaxconn {}, tcp_max_syn_backlog {}", n(*a), n(*b)),
            _ => "not needed".into(),
        })
        .expected("no accept queue needed (role loadgen)")
        .rule("role loadgen: a load generator does not accept connections; the accept backlog matters on the server it targets.")
        .fix("Nothing to do on a load generator.", vec![], vec![])
        .build()
}

/// Pure: the two queues and, when read, the server's listening sockets.
fn backlog_observed(smc: u64, syn: u64, backlogs: &Result<Vec<Backlog>, String>) -> String {
    let mut observed = format!(
        "net.core.somaxconn {}, net.ipv4.tcp_max_syn_backlog {}",
        n(smc),
        n(syn)
    );
    match backlogs {
        Ok(v) if v.is_empty() => observed.push_str("; the process listens on no TCP socket"),
        Ok(v) => {
            let each: Vec<String> = v
                .iter()
                .map(|b| {
                    format!(
                        "{} backlog {} ({} queued)",
                        b.local,
                        n(b.backlog),
                        n(b.queued)
                    )
                })
                .collect();
            observed.push_str(&format!("; listening: {}", each.join(", ")));
        }
        Err(_) => {}
    }
    observed
}

/// Pure: the runtime and persistent lines raising both queues to the burst (never
/// lowering them), and the server's listen backlog first when it is `short`.
fn backlog_fix_lines(
    burst: u64,
    (smc, syn): (u64, u64),
    short: bool,
) -> (Vec<String>, Vec<String>) {
    let (runtime, mut persistent) = sysctl_fix(
        "backlog",
        &[
            ("net.core.somaxconn", burst.max(smc).to_string()),
            ("net.ipv4.tcp_max_syn_backlog", burst.max(syn).to_string()),
        ],
    );
    persistent.push(
        "the listen() backlog is capped by somaxconn: pass a large backlog (nginx `listen ... backlog=N`; Go uses somaxconn)".into(),
    );
    if short {
        persistent.insert(
            0,
            format!(
                "the server's listen backlog is below {}: raise it in the server (nginx `listen ... backlog={}`; Python websockets.serve(..., backlog={}); Node server.listen({{backlog: {}}})) and restart it, after somaxconn",
                n(burst),
                burst,
                burst,
                burst
            ),
        );
    }
    (runtime, persistent)
}

/// Pure: the fix's summary (`short`: the first listener's backlog below the burst).
fn backlog_fix_summary(status: Status, short: Option<u64>) -> String {
    match (status, short) {
        (Status::Pass, _) => "Nothing to do.".to_string(),
        (_, Some(b)) => format!(
            "The server listens with a backlog below the burst ({}): raise its listen backlog, and both queues, to the burst size.",
            n(b)
        ),
        _ => "Raise both queues to the burst size.".to_string(),
    }
}

fn conntrack(w: &Workload, h: &Host) -> Finding {
    let flows = w.connections * w.fds_per_connection();
    let expected = format!(
        "nf_conntrack_max >= {} (fail below {})",
        n(2 * flows),
        n(flows)
    );
    let ct = match &h.conntrack {
        Ok(Some(c)) => *c,
        Ok(None) => {
            return skipped(
                &CONNTRACK,
                format!(
                    "nf_conntrack is not loaded ({} absent): connections are not tracked, nothing to size",
                    h.conntrack_file
                ),
                expected,
            )
        }
        Err(e) => return skipped(&CONNTRACK, e.clone(), expected),
    };
    let status = if ct.max < flows {
        Status::Fail
    } else if ct.max < 2 * flows {
        Status::Warn
    } else {
        Status::Pass
    };
    let count = ct
        .count
        .map(|c| format!(", {} tracked now", n(c)))
        .unwrap_or_default();
    let (runtime, mut persistent) = sysctl_fix(
        "conntrack",
        &[(
            "net.netfilter.nf_conntrack_max",
            (2 * flows).max(ct.max).to_string(),
        )],
    );
    persistent.push(
        "echo nf_conntrack | sudo tee /etc/modules-load.d/nf_conntrack.conf   # so the sysctl exists when sysctl.d is applied".into(),
    );
    let mut d = Draft::new(&CONNTRACK)
        .status(status)
        .observed(format!("nf_conntrack_max {}{count}", n(ct.max)))
        .expected(expected)
        .rule(format!(
            "one entry per tracked flow ({} for {} connections{}); a full table drops new connections (\"nf_conntrack: table full, dropping packet\"). fail below the flows; warn below 2x, because {} and closed flows keep their entries through TIME_WAIT.",
            n(flows),
            n(w.connections),
            if w.fds_per_connection() == 2 { ", client and upstream side" } else { "" },
            storm_text()
        ))
        .fix(
            if status == Status::Pass {
                "Nothing to do.".to_string()
            } else {
                "Raise nf_conntrack_max, or exempt the service port from tracking (iptables -t raw ... -j NOTRACK).".to_string()
            },
            runtime,
            persistent,
        )
        .num("max", ct.max as f64)
        .num("flows", flows as f64);
    if let Some(c) = ct.count {
        d = d.num("count", c as f64);
    }
    d.build()
}

#[cfg(test)]
mod source_tests {
    use crate::findings::Status;

    /// Fail past the usable ports, warn past half of them (a storm's twice).
    #[test]
    fn ports_status_and_fix_follow_the_storm_headroom() {
        use super::{backlog_fix_summary, ports_fix_summary, ports_status};
        assert_eq!(ports_status(28_233, 28_232), Status::Fail);
        assert_eq!(ports_status(14_117, 28_232), Status::Warn);
        assert_eq!(ports_status(14_116, 28_232), Status::Pass);
        let s = ports_fix_summary(Status::Warn, 20_000, 28_232, 2);
        assert!(s.starts_with("Widen the range"), "{s}");
        assert!(s.contains("need 2 source address(es)"), "{s}");
        let s = ports_fix_summary(Status::Fail, 60_000, 28_232, 5);
        assert!(s.contains("exceed even a 10240-65535 range"), "{s}");
        assert!(ports_fix_summary(Status::Pass, 10, 28_232, 1).starts_with("Nothing to do."));
        assert!(backlog_fix_summary(Status::Warn, Some(511)).contains("(511)"));
        assert_eq!(
            backlog_fix_summary(Status::Warn, None),
            "Raise both queues to the burst size."
        );
    }

    #[test]
    fn source_addresses_cover_twice_the_count() {
        // 28,232 ports (the default range): 10,000 fit one; 100,000 need 8.
        assert_eq!(super::source_addresses_needed(10_000, 28_232), 1);
        assert_eq!(super::source_addresses_needed(100_000, 28_232), 8);
        assert_eq!(super::source_addresses_needed(1_200, 700), 4);
        assert_eq!(super::source_addresses_needed(5, 0), 10);
    }
}
