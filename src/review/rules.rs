//! The review's rule checks as pure functions: the values a team declares, checked against
//! the measured rules of data/evidence.yaml, each returning the computed consequence.
use crate::evidence::{self, fmt_num};
use crate::findings::Status;
use rtcheck_base::units::fmt_bytes;
use std::collections::BTreeMap;
use std::time::Duration;

/// One rule applied to declared values: verdict, what the values mean, what the rule wants.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: Status,
    /// The computed consequence of the values ("queue 64 x 1 KB at 1,000 msg/s tolerates
    /// 64 ms of slowness").
    pub consequence: String,
    /// What the rule asks for.
    pub expected: String,
    pub numbers: BTreeMap<String, f64>,
}

impl Outcome {
    fn new(status: Status, consequence: String, expected: String) -> Outcome {
        Outcome {
            status,
            consequence,
            expected,
            numbers: BTreeMap::new(),
        }
    }
    fn num(mut self, k: &str, v: f64) -> Outcome {
        self.numbers.insert(k.to_string(), v);
        self
    }
}

/// Seconds as the articles print them: `64 ms`, `4.9 s`.
pub fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{} ms", fmt_num((s * 1000.0 * 1000.0).round() / 1000.0))
    } else {
        format!("{} s", fmt_num((s * 1000.0).round() / 1000.0))
    }
}

fn dur(d: Duration) -> String {
    secs(d.as_secs_f64())
}

/// Ping interval and pong wait: pong wait > ping, ping under the shortest idle timeout on
/// the path, and 20-30 s in production (evidence `ping-timing`).
pub fn ping(ping: Duration, pong_wait: Duration, idle_timeout: Option<Duration>) -> Outcome {
    let lo = evidence::num("ping-timing", "production_min");
    let hi = evidence::num("ping-timing", "production_max");
    let p = ping.as_secs_f64();
    let expected = format!(
        "pong wait > ping; ping < idle timeout of the path; ping {}-{} s in production",
        fmt_num(lo),
        fmt_num(hi)
    );
    let base = |st, msg: String| {
        Outcome::new(st, msg, expected.clone())
            .num("ping_s", p)
            .num("pong_wait_s", pong_wait.as_secs_f64())
    };
    if ping.is_zero() {
        return base(
            Status::Fail,
            "no ping: a vanished peer is never detected (TCP does not report it)".into(),
        );
    }
    if pong_wait <= ping {
        return base(
            Status::Fail,
            format!(
                "pong wait {} is not longer than the ping interval {}: healthy clients are closed before their pong can arrive",
                dur(pong_wait),
                dur(ping)
            ),
        );
    }
    if let Some(idle) = idle_timeout {
        if ping >= idle {
            return base(
                Status::Fail,
                format!(
                    "ping every {} does not beat the path's idle timeout of {}: the proxy cuts quiet connections first",
                    dur(ping),
                    dur(idle)
                ),
            )
            .num("idle_timeout_s", idle.as_secs_f64());
        }
    }
    let detect = format!("a dead peer is detected within about {}", dur(pong_wait));
    if p < lo {
        return base(
            Status::Warn,
            format!("{detect}, but mobile networks go silent 5-10 s: ping {} drops healthy mobile clients", dur(ping)),
        );
    }
    if p > hi {
        return base(
            Status::Warn,
            format!(
                "{detect}: slower than production's {}-{} s",
                fmt_num(lo),
                fmt_num(hi)
            ),
        );
    }
    base(Status::Pass, detect)
}

/// The ping checked against the declared path's chain (issue 24): the rule of
/// `hops::chain` wants it at most half the tightest idle limit server data resets. A ping
/// that already fails keeps its verdict; one above the path's maximum is a warning naming
/// the binding hop and its setting, and one at or above the idle limit fails.
pub fn ping_on_path(base: Outcome, ping: Duration, c: &crate::hops::chain::Chain) -> Outcome {
    if base.status == Status::Fail {
        return base;
    }
    let (Some(max), Some(idle)) = (c.heartbeat_max_s, c.tightest_idle_s) else {
        return base;
    };
    let (hop, change) = idle_hop(c, idle);
    let p = ping.as_secs();
    let status = if p >= idle {
        Status::Fail
    } else if p > max {
        Status::Warn
    } else {
        return base.num("path_heartbeat_max_s", max as f64);
    };
    Outcome::new(
        status,
        format!(
            "ping every {} against the path {}: its tightest idle limit is {idle} s at {hop}, so the heartbeat must be at most {max} s{change}",
            dur(ping),
            c.path.join(" -> ")
        ),
        format!("{}; {}", base.expected, c.heartbeat_rule),
    )
    .num("ping_s", ping.as_secs_f64())
    .num("path_idle_s", idle as f64)
    .num("path_heartbeat_max_s", max as f64)
}

/// The hop of the tightest idle limit, and "; to raise it: SETTING" (last in a sentence,
/// so a command there prints on lines of its own).
pub fn idle_hop(c: &crate::hops::chain::Chain, idle: u64) -> (String, String) {
    c.transports
        .iter()
        .filter_map(|t| t.idle.as_ref())
        .find(|b| b.secs == idle)
        .map(|b| (b.hop.clone(), format!("; to raise it: {}", b.setting)))
        .unwrap_or_default()
}

/// Write deadline: a shared writer stalls deadline x slow clients (evidence
/// `write-deadline-1s`: 1 s x 5 slow clients = 5 s for a shard's 1,000 clients).
pub fn write_deadline(deadline: Duration, slow_per_writer: u64) -> Outcome {
    let stall = deadline.as_secs_f64() * slow_per_writer.max(1) as f64;
    // The evidence's bounds: the series measured 1 s (and 100 ms); above the ping's
    // production range a peer that stopped reading is already known dead by its pong.
    let measured = evidence::num("write-deadline-1s", "deadline");
    let hi = evidence::num("ping-timing", "production_max");
    let expected = format!(
        "a deadline on every write, in seconds from the network's p99 (measured: {} s; at most the {} s ping), and one writer per client (stall = deadline x slow clients per writer)",
        fmt_num(measured),
        fmt_num(hi)
    );
    if deadline.is_zero() {
        return Outcome::new(
            Status::Fail,
            format!(
                "no write deadline: one client that stops reading stops its writer forever (the hub stalled at round {})",
                fmt_num(evidence::num("write-deadline", "stalled_at_round"))
            ),
            expected,
        );
    }
    if deadline.as_secs_f64() > hi {
        return Outcome::new(
            Status::Fail,
            format!(
                "a {} write deadline is no network's p99: a client that stopped reading holds its writer {}{} (the series measured {} s; a dead peer's pong is missed within {} s)",
                dur(deadline),
                dur(deadline),
                if slow_per_writer > 1 {
                    format!(", {slow_per_writer} slow clients sharing it {}", secs(stall))
                } else {
                    String::new()
                },
                fmt_num(measured),
                fmt_num(hi)
            ),
            expected,
        )
        .num("stall_s", stall);
    }
    let o = if slow_per_writer > 1 {
        Outcome::new(
            Status::Warn,
            format!(
                "{} slow clients sharing a writer stall it {} x {} = {} for every client it serves",
                slow_per_writer,
                dur(deadline),
                slow_per_writer,
                secs(stall)
            ),
            expected,
        )
    } else {
        Outcome::new(
            Status::Pass,
            format!("a slow client costs only itself, at most {}", dur(deadline)),
            expected,
        )
    };
    o.num("stall_s", stall)
}

/// Seconds of slowness a per-client queue absorbs: queue x size / (rate x size).
pub fn queue_tolerance_s(queue_len: u64, size: u64, rate: f64) -> f64 {
    (queue_len as f64 * size as f64) / (rate * size as f64)
}

/// Per-client queue (evidence `queue-per-client`): bounded, and long enough for the
/// slowness the team decided to tolerate.
pub fn queue(queue_len: u64, size: u64, rate: f64, needed: Option<Duration>) -> Outcome {
    let expected = match needed {
        Some(n) => format!("bounded, tolerating at least {}", dur(n)),
        None => "bounded (drop or disconnect when full)".to_string(),
    };
    if queue_len == 0 {
        let growth = size as f64 * rate;
        return Outcome::new(
            Status::Fail,
            format!(
                "unbounded queue: grows {}/s per slow client (measured {}/s)",
                fmt_bytes(growth as u64),
                fmt_bytes(evidence::num("queue-per-client", "unbounded_growth") as u64)
            ),
            expected,
        )
        .num("growth_bytes_per_s", growth);
    }
    let tol = queue_tolerance_s(queue_len, size, rate);
    let msg = format!(
        "queue {} x {} at {} msg/s tolerates {} of slowness",
        fmt_num(queue_len as f64),
        fmt_bytes(size),
        fmt_num(rate),
        secs(tol)
    );
    let status = match needed {
        Some(n) if tol < n.as_secs_f64() => Status::Fail,
        _ => Status::Pass,
    };
    let msg = match needed {
        Some(n) if status == Status::Fail => format!(
            "{msg}, less than the {} asked (needs {})",
            dur(n),
            fmt_num((n.as_secs_f64() * rate).ceil())
        ),
        _ => msg,
    };
    Outcome::new(status, msg, expected).num("tolerance_s", tol)
}

/// Bytes a replay ring needs: rate x max disconnect x size (evidence `ring-sizing`).
pub fn ring_needed(rate: f64, max_disconnect: Duration, size: u64) -> f64 {
    rate * max_disconnect.as_secs_f64() * size as f64
}

/// Replay ring of the seq-ring design: it must hold the longest disconnect that must not
/// lose data, or clients get a GAP.
pub fn ring(ring_bytes: u64, rate: f64, max_disconnect: Duration, size: u64) -> Outcome {
    let need = ring_needed(rate, max_disconnect, size);
    let holds = ring_bytes as f64 / (rate * size as f64);
    let expected = format!(
        ">= rate x max disconnect x size = {} msg/s x {} x {} = {}",
        fmt_num(rate),
        dur(max_disconnect),
        fmt_bytes(size),
        fmt_bytes(need.ceil() as u64)
    );
    let msg = format!(
        "ring {} holds {} of messages at {} msg/s",
        fmt_bytes(ring_bytes),
        secs(holds),
        fmt_num(rate)
    );
    let (status, msg) = if (ring_bytes as f64) < need {
        (
            Status::Fail,
            format!("{msg}: a client away {} gets a GAP", dur(max_disconnect)),
        )
    } else {
        (Status::Pass, msg)
    };
    Outcome::new(status, msg, expected)
        .num("ring_needed_bytes", need)
        .num("ring_holds_s", holds)
}

/// Worst-case session memory: sessions x rate x size x TTL (what a session accumulates
/// while its client is away).
pub fn session_memory(sessions: u64, rate: f64, size: u64, ttl: Duration) -> f64 {
    sessions as f64 * rate * size as f64 * ttl.as_secs_f64()
}

/// Session TTL and cap of the session-ack design (evidence `session-expiry`: 10,000
/// disconnected clients held 830 MB).
pub fn session(
    ttl: Duration,
    cap: Option<u64>,
    connections: u64,
    rate: f64,
    size: u64,
    max_disconnect: Duration,
) -> Outcome {
    let sessions = cap.unwrap_or(connections);
    let expected = format!(
        "a TTL of at least the max disconnect ({}), and a cap on retained sessions",
        dur(max_disconnect)
    );
    if ttl.is_zero() {
        return Outcome::new(
            Status::Fail,
            format!(
                "sessions never expire: memory grows without bound ({} clients held {})",
                fmt_num(evidence::num("session-expiry", "clients")),
                fmt_bytes(evidence::num("session-expiry", "bytes") as u64)
            ),
            expected,
        );
    }
    let mem = session_memory(sessions, rate, size, ttl);
    let worst = format!(
        "worst case {} sessions x {} msg/s x {} x {} = {}",
        fmt_num(sessions as f64),
        fmt_num(rate),
        fmt_bytes(size),
        dur(ttl),
        fmt_bytes(mem as u64)
    );
    let (status, msg) = if ttl < max_disconnect {
        (
            Status::Fail,
            format!(
                "TTL {} is shorter than the {} disconnect that must not lose data; {worst}",
                dur(ttl),
                dur(max_disconnect)
            ),
        )
    } else if cap.is_none() {
        (Status::Warn, format!("no cap: {worst}"))
    } else {
        (Status::Pass, worst)
    };
    Outcome::new(status, msg, expected).num("worst_case_bytes", mem)
}

/// Presence by alive keys (evidence `presence-ttl`): a TTL longer than the refresh, and
/// ghosts of a dead node vanish after the TTL.
pub fn presence(ttl: Duration, refresh: Duration) -> Outcome {
    let expected = format!(
        "alive key with a TTL longer than its refresh (measured EX {} s)",
        fmt_num(evidence::num("presence-ttl", "ttl"))
    );
    if ttl.is_zero() {
        return Outcome::new(
            Status::Fail,
            "no TTL: a dead node leaves ghost users forever".into(),
            expected,
        );
    }
    if refresh.is_zero() || refresh >= ttl {
        return Outcome::new(
            Status::Fail,
            format!(
                "refresh every {} with TTL {}: live users flicker offline between refreshes",
                dur(refresh),
                dur(ttl)
            ),
            expected,
        );
    }
    Outcome::new(
        Status::Pass,
        format!("a dead node's users show online for at most {}", dur(ttl)),
        expected,
    )
    .num("ghost_s", ttl.as_secs_f64())
}

/// Requests reaching the downstream for one failing call: tries ^ layers.
pub fn retry_hits(layers: u64, tries: u64) -> f64 {
    (tries.max(1) as f64).powf(layers as f64)
}

/// Retry layers (evidence `retry-amplification`: 3 layers x 3 tries = 27 hits).
pub fn retries(layers: u64, tries: u64) -> Outcome {
    let hits = retry_hits(layers, tries);
    let expected = "one retry layer, with an absolute deadline passed down".to_string();
    let msg = format!(
        "{layers} layer{} of {tries} tr{} = {} hits downstream per failing request",
        if layers == 1 { "" } else { "s" },
        if tries == 1 { "y" } else { "ies" },
        fmt_num(hits)
    );
    let status = if layers > 1 {
        Status::Fail
    } else {
        Status::Pass
    };
    Outcome::new(status, msg, expected).num("downstream_hits", hits)
}

/// Pool sizes: per-instance pools multiply by the instance count (evidence
/// `per-instance-multiplied`), and a common client default is 5 (`shared-pool`).
pub fn pool(pool_size: u64, instances: u64, downstream_max: Option<u64>) -> Outcome {
    let total = pool_size.saturating_mul(instances.max(1));
    let expected =
        "pool x instances within the downstream's limit; size chosen by a sweep".to_string();
    let msg = format!(
        "{pool_size} per instance x {} instances = {total} connections downstream",
        instances.max(1)
    );
    let default = evidence::num("shared-pool", "default_pool") as u64;
    let o = match downstream_max {
        Some(max) if total > max => Outcome::new(
            Status::Fail,
            format!("{msg}, over its limit of {max}"),
            expected,
        ),
        _ if pool_size == default => Outcome::new(
            Status::Warn,
            format!("{msg}; {default} is a common library default, not a size chosen on purpose"),
            expected,
        ),
        _ => Outcome::new(Status::Pass, msg, expected),
    };
    o.num("total_connections", total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::num;

    fn s(v: f64) -> Duration {
        Duration::from_secs_f64(v)
    }

    #[test]
    fn the_ping_is_checked_against_the_declared_path() {
        let path: Vec<String> = ["cloudflare", "aws-alb", "nginx"]
            .map(String::from)
            .to_vec();
        let c = crate::hops::chain::compute(&path, &Default::default()).unwrap();
        let check =
            |p: u64| ping_on_path(ping(s(p as f64), s(p as f64 + 10.0), None), s(p as f64), &c);
        assert_eq!(check(25).status, Status::Pass);
        assert_eq!(
            check(30).status,
            Status::Pass,
            "exactly half the ALB's 60 s"
        );
        let w = check(45);
        assert_eq!(w.status, Status::Warn);
        assert!(w.consequence.contains("aws-alb"), "{}", w.consequence);
        assert_eq!(
            check(60).status,
            Status::Fail,
            "the 60 s ping racing the 60 s ALB"
        );
        // A ping that fails on its own keeps its reason.
        let f = ping_on_path(ping(s(25.0), s(20.0), None), s(25.0), &c);
        assert!(f.consequence.contains("pong wait"), "{}", f.consequence);
    }

    #[test]
    fn ping_boundaries_from_the_evidence() {
        let lo = num("ping-timing", "production_min");
        let hi = num("ping-timing", "production_max");
        // The measured setting (5 s / 8 s) works but is too eager for mobile networks.
        let measured = ping(
            s(num("ping-timing", "ping")),
            s(num("ping-timing", "pong_wait")),
            None,
        );
        assert_eq!(measured.status, Status::Warn, "{measured:?}");
        assert_eq!(ping(s(lo), s(lo + 1.0), None).status, Status::Pass);
        assert_eq!(ping(s(hi), s(hi + 1.0), None).status, Status::Pass);
        assert_eq!(ping(s(hi + 1.0), s(hi + 5.0), None).status, Status::Warn);
        // Pong wait equal to the ping interval breaks the rule; one ms more passes.
        assert_eq!(ping(s(lo), s(lo), None).status, Status::Fail);
        assert_eq!(ping(s(lo), s(lo + 0.001), None).status, Status::Pass);
        // Ping at the idle timeout fails; just under passes.
        assert_eq!(ping(s(hi), s(hi + 5.0), Some(s(hi))).status, Status::Fail);
        assert_eq!(
            ping(s(hi - 0.001), s(hi + 5.0), Some(s(hi))).status,
            Status::Pass
        );
        assert_eq!(ping(Duration::ZERO, s(1.0), None).status, Status::Fail);
    }

    #[test]
    fn write_deadline_stall_is_deadline_times_slow_clients() {
        let d = s(num("write-deadline-1s", "deadline"));
        let five = num("write-deadline-1s", "stall_5_slow");
        let o = write_deadline(d, (five / d.as_secs_f64()) as u64);
        assert_eq!(o.status, Status::Warn);
        assert!((o.numbers["stall_s"] - five).abs() < 1e-9, "{o:?}");
        assert!(o.consequence.contains("= 5 s"), "{}", o.consequence);
        assert_eq!(write_deadline(d, 1).status, Status::Pass);
        assert_eq!(write_deadline(Duration::ZERO, 1).status, Status::Fail);
        // Seconds, not minutes: above the ping's production range it is no deadline.
        let hi = num("ping-timing", "production_max");
        assert_eq!(write_deadline(s(hi), 1).status, Status::Pass);
        let ten_min = write_deadline(s(600.0), 1);
        assert_eq!(ten_min.status, Status::Fail, "{ten_min:?}");
        assert!(
            ten_min
                .consequence
                .starts_with("a 600 s write deadline is no network's p99"),
            "{}",
            ten_min.consequence
        );
    }

    #[test]
    fn queue_tolerance_matches_the_article() {
        // 256 x 1 KB at 1,000 msg/s = 0.256 s, printed as 0.3 s in the article.
        let t = queue_tolerance_s(num("queue-per-client", "queue_len") as u64, 1000, 1000.0);
        assert!(
            (t - num("queue-per-client", "tolerance")).abs() < 0.05,
            "{t}"
        );
        let o = queue(64, 1000, 1000.0, None);
        assert_eq!(
            o.consequence,
            "queue 64 x 1.0 KB at 1,000 msg/s tolerates 64 ms of slowness"
        );
        assert_eq!(o.status, Status::Pass);
        // Boundary: tolerating exactly what is asked passes, 1 ms more fails.
        assert_eq!(queue(64, 1000, 1000.0, Some(s(0.064))).status, Status::Pass);
        let short = queue(64, 1000, 1000.0, Some(s(0.065)));
        assert_eq!(short.status, Status::Fail);
        assert!(
            short.consequence.contains("needs 65"),
            "{}",
            short.consequence
        );
        let unbounded = queue(0, 1000, 1000.0, None);
        assert_eq!(unbounded.status, Status::Fail);
        assert_eq!(
            unbounded.numbers["growth_bytes_per_s"],
            num("queue-per-client", "unbounded_growth")
        );
    }

    #[test]
    fn ring_must_hold_rate_times_disconnect_times_size() {
        let d = s(num("ring-sizing", "disconnect"));
        let need = ring_needed(10.0, d, 1024);
        assert!((need - 30_720.0).abs() < 1e-6);
        assert_eq!(ring(30_720, 10.0, d, 1024).status, Status::Pass);
        assert_eq!(ring(30_719, 10.0, d, 1024).status, Status::Fail);
        // The measured 100 KB ring covers the 3 s disconnect at up to ~32 msg/s of 1 KB.
        let measured = num("ring-sizing", "ring_bytes") as u64;
        assert_eq!(ring(measured, 32.0, d, 1024).status, Status::Pass);
        assert_eq!(ring(measured, 33.0, d, 1024).status, Status::Fail);
    }

    #[test]
    fn session_worst_case_memory_reproduces_830_mb() {
        let clients = num("session-expiry", "clients") as u64;
        let per_client = num("session-ack", "bytes_per_client");
        let away = s(num("session-ack", "disconnect"));
        // 83 KB per client per 3 s is a rate x size of 27,666 B/s.
        let bps = per_client / away.as_secs_f64();
        let mem = session_memory(clients, bps, 1, away);
        assert!((mem - num("session-expiry", "bytes")).abs() < 1.0, "{mem}");
        assert_eq!(
            session(away, Some(clients), clients, 10.0, 1024, away).status,
            Status::Pass
        );
        assert_eq!(
            session(away, None, clients, 10.0, 1024, away).status,
            Status::Warn
        );
        let short = session(
            away - Duration::from_millis(1),
            Some(1),
            clients,
            10.0,
            1024,
            away,
        );
        assert_eq!(short.status, Status::Fail);
        assert_eq!(
            session(Duration::ZERO, None, clients, 10.0, 1024, away).status,
            Status::Fail
        );
    }

    #[test]
    fn presence_ttl_longer_than_refresh() {
        let ttl = s(num("presence-ttl", "ttl"));
        let o = presence(ttl, s(1.0));
        assert_eq!(o.status, Status::Pass);
        assert!(o.consequence.contains("at most 3 s"), "{}", o.consequence);
        assert_eq!(presence(ttl, ttl).status, Status::Fail);
        assert_eq!(presence(Duration::ZERO, s(1.0)).status, Status::Fail);
    }

    #[test]
    fn three_layers_of_three_tries_is_27() {
        assert_eq!(retry_hits(3, 3), num("retry-amplification", "hits"));
        let o = retries(3, 3);
        assert_eq!(o.status, Status::Fail);
        assert!(o.consequence.contains("27 hits"), "{}", o.consequence);
        assert_eq!(retries(1, 3).status, Status::Pass);
        assert_eq!(retries(2, 1).status, Status::Fail);
    }

    #[test]
    fn pools_multiply_by_instances() {
        let per = num("per-instance-multiplied", "quota") as u64;
        let eff = num("per-instance-multiplied", "effective") as u64;
        let n = eff / per;
        assert_eq!(pool(per, n, Some(eff)).status, Status::Pass);
        assert_eq!(pool(per, n, Some(eff - 1)).status, Status::Fail);
        let d = num("shared-pool", "default_pool") as u64;
        assert_eq!(pool(d, 1, None).status, Status::Warn);
        assert_eq!(pool(d + 1, 1, None).status, Status::Pass);
    }
}
