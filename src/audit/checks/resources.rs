//! Memory and CPU for the load.
use super::CheckId;
use super::{bytes, n, pct, skipped, Draft, Meta, Workload};
use crate::audit::host::Host;
use crate::evidence::{fmt_num, num};
use crate::findings::{Finding, Status};
use crate::profile::Loss;
use rtcheck_wire::transport::Transport;

pub const MEMORY: Meta = Meta {
    id: CheckId::Memory,
    title: "Memory for connections and delivery state",
    evidence: &["conn-ram", "ring-sizing"],
    verify: Some("memory"),
    required: true,
    run: memory,
};

pub const CPU: Meta = Meta {
    id: CheckId::Cpu,
    title: "CPUs usable for the fan-out load (affinity, cgroup quota)",
    evidence: &["cpu-baseline", "scenario-p1"],
    verify: None,
    required: true,
    run: cpu,
};

/// Delivery state from the profile's loss answer: (bytes, explanation, evidence ids).
pub fn delivery_state(w: &Workload) -> (u64, String, &'static [&'static str]) {
    let ring = (w.max_disconnect.as_secs_f64() * w.rate * w.size as f64).ceil() as u64;
    let per = format!(
        "{} s x {} msg/s x {}",
        fmt_num(w.max_disconnect.as_secs_f64()),
        fmt_num(w.rate),
        bytes(w.size)
    );
    match w.loss {
        Some(Loss::Shared) => (
            ring,
            format!("one shared ring = max_disconnect x rate x size = {per} = {}", bytes(ring)),
            &["ring-buffer"],
        ),
        Some(Loss::PerUser) => (
            ring.saturating_mul(w.connections),
            format!(
                "a session per user = {} x ({per}) = {} (sessions must expire: 10,000 disconnected clients held {})",
                n(w.connections),
                bytes(ring.saturating_mul(w.connections)),
                bytes(num("session-expiry", "bytes") as u64)
            ),
            &["session-ack", "session-expiry"],
        ),
        Some(Loss::Replaceable) => (0, "replaceable data: a snapshot on reconnect, no delivery state".into(), &[]),
        None => (0, "loss not set in the profile: no delivery state counted".into(), &[]),
    }
}

/// What the load needs in memory: connections plus delivery state, with its wording.
struct MemNeed {
    per_conn: u64,
    conn_bytes: u64,
    delivery: u64,
    total: u64,
    rule: String,
    evidence: &'static [&'static str],
}

impl MemNeed {
    fn of(w: &Workload) -> MemNeed {
        // Polling holds no connection between requests: the idle-WebSocket figure is not its.
        let polling = w.transport == Transport::Polling;
        let per_conn = match (&w.measured_per_conn, polling) {
            (_, true) => 0,
            (Some((b, _)), _) => *b,
            (None, _) => num("conn-ram", "rss_per_conn") as u64,
        };
        let conn_bytes = per_conn.saturating_mul(w.connections);
        let (delivery, delivery_txt, evidence) = delivery_state(w);
        let total = conn_bytes.saturating_add(delivery);
        let conn_txt = if polling {
            "0 for connections (transport polling: the measured per-connection RSS is an idle WebSocket's, goroutines and buffers included; a polling client holds at most an HTTP keep-alive connection between requests, which no measurement here sizes)".to_string()
        } else if let Some((_, variant)) = &w.measured_per_conn {
            format!(
                "{} {} connections x {} (measured on your server, its {variant} variant: the profile's memory_per_connection, from rtcheck bench idle --server) = {}",
                n(w.connections),
                w.transport.name(),
                bytes(per_conn),
                bytes(conn_bytes)
            )
        } else {
            format!(
                "{} {} connections x {} (the seed's Go + gorilla reference: idle connection RSS with default buffers, {} for 10,000; TLS and permessage-deflate not measured; measure yours: rtcheck bench idle --server URL --save PROFILE) = {}",
                n(w.connections),
                w.transport.name(),
                bytes(per_conn),
                bytes(num("conn-ram", "rss_10k") as u64),
                bytes(conn_bytes)
            )
        };
        let rule = format!(
            "need = {conn_txt} + delivery state: {delivery_txt}; total {}. Limit = the lower of MemAvailable and the cgroup limit. fail above the limit; warn above 50%.",
            bytes(total)
        );
        MemNeed {
            per_conn,
            conn_bytes,
            delivery,
            total,
            rule,
            evidence,
        }
    }
}

/// fail above the limit, warn above half of it.
fn memory_status(need: u64, limit: u64) -> Status {
    if need > limit {
        Status::Fail
    } else if need.saturating_mul(2) > limit {
        Status::Warn
    } else {
        Status::Pass
    }
}

fn cgroup_text(h: &Host) -> String {
    match &h.cgroup_memory {
        Ok(c) => match c.limit {
            Some(l) => format!("cgroup v{} limit {} ({})", c.version, bytes(l), c.file),
            None => format!("no cgroup v{} limit ({})", c.version, c.file),
        },
        Err(e) => format!("cgroup limit unknown ({e})"),
    }
}

/// The fix: give the process twice the need, or need less.
fn memory_fix(d: Draft, status: Status, target: u64) -> Draft {
    let why = if status == Status::Pass {
        "Nothing to do.".to_string()
    } else {
        format!(
            "Give the process at least {} (2 x need), or need less: 1 KB buffers cost {} per connection, and delivery state needs a TTL.",
            bytes(target),
            bytes(num("conn-ram", "rss_per_conn_small_buffers") as u64)
        )
    };
    d.fix(
        why,
        vec![
            format!("sudo systemctl set-property SERVICE MemoryMax={target}"),
            format!("docker update --memory {target} --memory-swap {target} CONTAINER"),
        ],
        vec![
            format!("systemd unit, [Service]: MemoryMax={target}"),
            format!("compose: mem_limit: {target}; Kubernetes: resources.limits.memory: {target}"),
        ],
    )
}

fn memory(w: &Workload, h: &Host) -> Finding {
    let need = MemNeed::of(w);
    // The delivery state scales with rate x size: the basis is said when it counts.
    let basis = if need.delivery > 0 {
        format!(" ({})", w.basis())
    } else {
        String::new()
    };
    let expected = format!(
        "need {} <= 50% of the memory limit{basis}",
        bytes(need.total)
    );
    let mem = match &h.meminfo {
        Ok(m) => *m,
        Err(e) => return skipped(&MEMORY, e.clone(), expected),
    };
    let cg_limit = h.cgroup_memory.as_ref().ok().and_then(|c| c.limit);
    let limit = cg_limit.map_or(mem.available, |c| c.min(mem.available));
    let ratio = pct(need.total as f64, limit as f64);
    let status = memory_status(need.total, limit);
    let d = Draft::new(&MEMORY)
        .status(status)
        .observed(format!(
            "MemAvailable {} of {}; {}; limit used {}: need is {}% of it",
            bytes(mem.available),
            bytes(mem.total),
            cgroup_text(h),
            bytes(limit),
            ratio
        ))
        .expected(expected)
        .rule(need.rule.clone())
        .evidence(need.evidence);
    let mut d = memory_fix(d, status, need.total.saturating_mul(2))
        .num("connections", w.connections as f64)
        .num("per_connection_bytes", need.per_conn as f64)
        .num("connection_bytes", need.conn_bytes as f64)
        .num("delivery_bytes", need.delivery as f64)
        .num("need_bytes", need.total as f64)
        .num("mem_available", mem.available as f64)
        .num("limit_bytes", limit as f64)
        .num("ratio_pct", ratio);
    if let Some(c) = cg_limit {
        d = d.num("cgroup_limit", c as f64);
    }
    d.build()
}

/// Cores scenario P1 gave the reference server at the same load (GOMAXPROCS=2).
const P1_CORES: f64 = 2.0;

/// The reference fan-out scaled to this load (pure): CPUs it needs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CpuNeed {
    /// Messages per second pushed: connections x rate.
    load: f64,
    /// Average CPUs the reference server was busy, scaled (fail below).
    demand: f64,
    /// CPUs scenario P1 had, scaled (warn at or below).
    starved: f64,
    /// CPUs the reference server had, scaled.
    baseline: f64,
}

fn cpu_need(connections: u64, rate: f64) -> CpuNeed {
    let ref_busy = num("cpu-baseline", "cpu_seconds") / num("cpu-baseline", "run");
    let load = connections as f64 * rate;
    let scale = load / num("cpu-baseline", "messages_per_s");
    CpuNeed {
        load,
        demand: scale * ref_busy,
        starved: scale * P1_CORES,
        baseline: scale * num("cpu-baseline", "cores"),
    }
}

fn cpu(w: &Workload, h: &Host) -> Finding {
    if w.transport == Transport::Polling {
        return cpu_polling(w, h);
    }
    let need = cpu_need(w.connections, w.rate);
    let expected = format!(
        "usable CPUs > {} (fail below {}) {}",
        fmt_num(round2(need.starved)),
        fmt_num(round2(need.demand)),
        w.basis()
    );
    let affinity = h.affinity.as_ref().ok();
    let quota = h.cgroup_cpu.as_ref().ok().and_then(|c| c.cpus);
    let Some(usable) = usable_cpus(affinity.map(|a| a.count), quota) else {
        let e = h.affinity.as_ref().err().cloned().unwrap_or_default();
        return skipped(&CPU, e, expected);
    };
    let status = cpu_status(usable, &need);
    let want = cpu_want(&need);
    let (runtime, persistent) = cpu_fix_steps(want);
    let summary = if status == Status::Pass {
        "Nothing to do.".to_string()
    } else {
        format!("Give the process {want} CPUs (affinity and quota), or spread the connections over more machines. Make the runtime see them (e.g. GOMAXPROCS = usable CPUs).")
    };
    let mut d = Draft::new(&CPU)
        .status(status)
        .observed(cpu_observed(h, usable))
        .expected(expected)
        .rule(cpu_rule(w, &need))
        .fix(summary, runtime, persistent)
        .num("usable_cpus", round2(usable))
        .num("load_msgs_per_s", need.load)
        .num("demand_cpus", round2(need.demand))
        .num("starved_cpus", round2(need.starved))
        .num("baseline_cpus", round2(need.baseline));
    if let Some(a) = affinity {
        d = d.num("affinity_cpus", a.count as f64);
    }
    if let Some(q) = quota {
        d = d.num("quota_cpus", round2(q));
    }
    d.build()
}

/// CPUs the process may use: the smaller of affinity and cgroup quota, None when neither is known (pure).
fn usable_cpus(affinity: Option<u64>, quota: Option<f64>) -> Option<f64> {
    match (affinity, quota) {
        (Some(a), Some(q)) => Some((a as f64).min(q)),
        (Some(a), None) => Some(a as f64),
        (None, Some(q)) => Some(q),
        (None, None) => None,
    }
}

fn cpu_status(usable: f64, need: &CpuNeed) -> Status {
    if usable < need.demand {
        Status::Fail
    } else if usable <= need.starved {
        Status::Warn
    } else {
        Status::Pass
    }
}

/// CPUs to ask for: more than the starved ratio, at least 2, at most the reference ratio (pure).
fn cpu_want(need: &CpuNeed) -> u64 {
    ((need.starved.floor() + 1.0)
        .max(need.demand.ceil())
        .max(2.0))
    .min(need.baseline.ceil().max(2.0)) as u64
}

fn cpu_observed(h: &Host, usable: f64) -> String {
    let aff_txt = match &h.affinity {
        Ok(a) => format!("affinity {} ({} CPUs)", a.list, a.count),
        Err(e) => format!("affinity unknown ({e})"),
    };
    let q_txt = match &h.cgroup_cpu {
        Ok(c) => match c.cpus {
            Some(q) => format!(
                "cgroup v{} quota {} CPUs ({})",
                c.version,
                fmt_num(round2(q)),
                c.file
            ),
            None => format!("no cgroup v{} quota", c.version),
        },
        Err(e) => format!("cgroup quota unknown ({e})"),
    };
    format!("{aff_txt}; {q_txt}: {} usable", fmt_num(round2(usable)))
}

fn cpu_rule(w: &Workload, need: &CpuNeed) -> String {
    let ref_cores = num("cpu-baseline", "cores");
    format!(
        "load = {} connections x {} msg/s = {} msg/s. The reference server fanned out {} msg/s (10,000 clients x 5 rounds/s, derived) on {} cores, busy {} of them on average; scaled to this load: {} CPUs busy on average (fail below: queues grow without bound); with {} cores instead of {} at the reference load p50 rose +{}% and p99.9 +{}%, i.e. {} CPUs for this load (warn at or below). The reference tail had {} CPUs for this load.",
        n(w.connections),
        fmt_num(w.rate),
        n(need.load as u64),
        n(num("cpu-baseline", "messages_per_s") as u64),
        fmt_num(ref_cores),
        fmt_num(num("cpu-baseline", "cpu_seconds") / num("cpu-baseline", "run")),
        fmt_num(round2(need.demand)),
        fmt_num(P1_CORES),
        fmt_num(ref_cores),
        fmt_num(num("scenario-p1", "p50_increase")),
        fmt_num(num("scenario-p1", "p999_increase")),
        fmt_num(round2(need.starved)),
        fmt_num(round2(need.baseline))
    )
}

/// Runtime and persistent steps that give the process `want` CPUs.
fn cpu_fix_steps(want: u64) -> (Vec<String>, Vec<String>) {
    let last = want.saturating_sub(1);
    (
        vec![
            format!("sudo taskset -apc 0-{last} PID"),
            format!(
                "sudo systemctl set-property SERVICE CPUQuota={}%",
                want * 100
            ),
            format!("docker update --cpus {want} CONTAINER"),
        ],
        vec![
            format!(
                "systemd unit, [Service]: CPUQuota={}% and CPUAffinity=0-{last}",
                want * 100
            ),
            format!("Kubernetes: resources.limits.cpu: {want}"),
        ],
    )
}

/// Polling is one request per client per interval, not a push fan-out: the reference
/// (a WebSocket fan-out) does not size it, so only usable CPUs are checked.
fn cpu_polling(w: &Workload, h: &Host) -> Finding {
    let expected = "usable CPUs >= 1".to_string();
    let usable = match (&h.affinity, h.cgroup_cpu.as_ref().ok().and_then(|c| c.cpus)) {
        (Ok(a), Some(q)) => (a.count as f64).min(q),
        (Ok(a), None) => a.count as f64,
        (Err(_), Some(q)) => q,
        (Err(e), None) => return skipped(&CPU, e.clone(), expected),
    };
    let status = if usable < 1.0 {
        Status::Warn
    } else {
        Status::Pass
    };
    Draft::new(&CPU)
        .status(status)
        .observed(format!("{} usable CPUs", fmt_num(round2(usable))))
        .expected(expected)
        .rule(format!(
            "transport polling: {} clients each send one request per interval; the measured fan-out ({} msg/s pushed to 10,000 clients) does not apply and no measurement here sizes polling, so only usable CPUs are checked: warn below 1. Size it with a load test at your poll interval.",
            n(w.connections),
            n(num("cpu-baseline", "messages_per_s") as u64)
        ))
        .fix(
            if status == Status::Pass {
                "Nothing to do; size the poll rate with a load test.".to_string()
            } else {
                "Give the process at least 1 CPU (cgroup quota).".to_string()
            },
            vec![],
            vec![],
        )
        .num("usable_cpus", round2(usable))
        .build()
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(demand: f64, starved: f64, baseline: f64) -> CpuNeed {
        CpuNeed {
            load: 0.0,
            demand,
            starved,
            baseline,
        }
    }

    #[test]
    fn usable_cpus_is_the_smaller_of_affinity_and_quota() {
        assert_eq!(usable_cpus(Some(8), Some(2.5)), Some(2.5));
        assert_eq!(usable_cpus(Some(2), Some(4.0)), Some(2.0));
        assert_eq!(usable_cpus(None, Some(1.5)), Some(1.5));
        assert_eq!(usable_cpus(None, None), None);
    }

    #[test]
    fn cpu_status_and_want_follow_demand_starved_and_baseline() {
        let n = need(1.2, 3.0, 12.0);
        assert_eq!(cpu_status(1.0, &n), Status::Fail);
        assert_eq!(cpu_status(3.0, &n), Status::Warn);
        assert_eq!(cpu_status(3.5, &n), Status::Pass);
        assert_eq!(cpu_want(&n), 4);
        // Never below 2, never above the (rounded-up) reference ratio.
        assert_eq!(cpu_want(&need(0.1, 0.2, 0.8)), 2);
        assert_eq!(cpu_want(&need(5.0, 9.5, 6.2)), 7);
    }

    #[test]
    fn cpu_need_scales_linearly_with_load() {
        let a = cpu_need(1000, 1.0);
        let b = cpu_need(2000, 1.0);
        assert_eq!(b.load, 2000.0);
        assert!((b.demand - 2.0 * a.demand).abs() < 1e-9);
        assert!((b.starved - 2.0 * a.starved).abs() < 1e-9);
        assert!((b.baseline - 2.0 * a.baseline).abs() < 1e-9);
    }
}
