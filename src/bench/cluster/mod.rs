//! `rtcheck bench cluster` (issue 13): the same load over one node and over 2..4 nodes
//! through Redis, and what a naive second path, a killed node and a Redis restart do to
//! latency, loss, duplicates, order and presence (evidence redis-pubsub, single-path,
//! presence-ttl, loss-dup-order).
//!
//! - [`account`]: pure per-client counting and the cluster's tally (unit-tested).
//! - [`client`]: one client thread (WebSocket, resume on another node).
//! - [`nodes`]: the node processes and the Redis the run uses (its URL is checked here by
//!   [`parse_redis_url`], pure, in every build).
//! - [`run`]: one scenario end to end (its fault and the presence watch after a kill in
//!   `fault`); [`validity`]: its checks (pure).
//!
//! `nodes` and `run` need the `redis` feature; the rest (flags, model, pure parts) is in
//! every build, so the reports and `bench cluster`'s flags are too.
pub mod account;
pub mod client;
#[cfg(feature = "redis")]
mod fault;
pub mod model;
#[cfg(feature = "redis")]
pub mod nodes;
#[cfg(feature = "redis")]
pub mod run;
pub mod validity;

use anyhow::{anyhow, bail};
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Single,
    Naive,
    OnePath,
    NodeKill,
    RedisRestart,
    DeployRestart,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Single,
        Kind::Naive,
        Kind::OnePath,
        Kind::NodeKill,
        Kind::RedisRestart,
        Kind::DeployRestart,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Single => "single",
            Kind::Naive => "naive",
            Kind::OnePath => "one-path",
            Kind::NodeKill => "node-kill",
            Kind::RedisRestart => "redis-restart",
            Kind::DeployRestart => "redis-publisher-restart",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Kind::Single => "one node, no Redis: the baseline",
            Kind::Naive => "DEMONSTRATION: the publishing node also delivers locally (--path naive)",
            Kind::OnePath => "every event takes one path: publisher -> Redis -> every node",
            Kind::NodeKill => {
                "one path; SIGKILL one node mid-run: its clients resume on the others; presence ttl vs events"
            }
            Kind::RedisRestart => "one path; Redis stopped and started again mid-run",
            Kind::DeployRestart => {
                "one path; Redis (no persistence) and the publishing node restarted together mid-run, as a deploy does: a new epoch, every client reset"
            }
        }
    }

    pub fn uses_redis(self) -> bool {
        self != Kind::Single
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s.trim())
    }
}

/// `--scenario a,b`: names in the order given, no repeats.
pub fn parse_scenarios(s: &str) -> Result<Vec<Kind>, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let k = Kind::parse(part).ok_or_else(|| {
            format!(
                "unknown scenario `{}` (expected {})",
                part.trim(),
                Kind::ALL.map(|k| k.name()).join(", ")
            )
        })?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        return Err("no scenario given".into());
    }
    Ok(out)
}

/// What `bench cluster` runs (the command layer fills it from its flags).
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub nodes: u64,
    pub connections: u64,
    pub rounds: u64,
    pub size: u64,
    pub rate: f64,
    /// The user's Redis (loopback); None: rtcheck starts redis-server itself.
    pub redis: Option<String>,
    /// `--redis-prefix` of the nodes; None: one unique to this run.
    pub redis_prefix: Option<String>,
    pub scenarios: Vec<Kind>,
    pub presence_ttl: Duration,
    pub connect_timeout: Duration,
    /// How long to wait past the last scheduled round for stragglers.
    pub drain: Duration,
}

pub const NODES_MIN: u64 = 2;
pub const NODES_MAX: u64 = 4;
/// Client threads in this process: one each.
pub const CONNECTIONS_MAX: u64 = 2000;
/// Longest publishing schedule (rounds / rate) a run may have.
pub const MAX_SCHEDULE_S: f64 = 600.0;

/// A key prefix no other run uses: `rtcheck-bench-PID-RANDOM:`.
pub fn unique_prefix() -> String {
    let r = rtcheck_base::os::random::hex(6);
    format!("rtcheck-bench-{}-{r}:", std::process::id())
}

/// `redis://[user[:password]@]HOST[:PORT][/DB]` on loopback: the address, and the URL
/// without its password (for reports).
pub fn parse_redis_url(url: &str) -> anyhow::Result<(SocketAddr, String)> {
    let rest = url.strip_prefix("redis://").ok_or_else(|| {
        anyhow!(
            "--redis {}: expected redis://HOST:PORT (no TLS)",
            rtcheck_base::redact::url(url)
        )
    })?;
    let hostpart = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let hostport = hostpart.split(['/', '?']).next().unwrap_or("");
    let with_port = if hostport
        .rsplit_once(':')
        .is_some_and(|(h, _)| !h.is_empty() && (!h.contains(':') || h.ends_with(']')))
    {
        hostport.to_string()
    } else {
        format!("{hostport}:6379")
    };
    let addr = rtcheck_base::os::addr::parse_host_port(&with_port).ok_or_else(|| {
        anyhow!(
            "--redis {}: host must be a loopback IP or localhost with a port",
            rtcheck_base::redact::url(url)
        )
    })?;
    if !rtcheck_base::os::addr::is_loopback(addr.ip()) {
        bail!(
            "--redis {}: {} is not a loopback address; load goes only to 127.0.0.0/8 or ::1",
            rtcheck_base::redact::url(url),
            addr.ip()
        );
    }
    Ok((addr, rtcheck_base::redact::url(url)))
}

pub fn validate(a: &ClusterOptions) -> anyhow::Result<()> {
    use rtcheck_base::units::out_of_bounds as oob;
    if !(NODES_MIN..=NODES_MAX).contains(&a.nodes) {
        anyhow::bail!(oob("--nodes", a.nodes, NODES_MIN, NODES_MAX, ""));
    }
    if a.connections < a.nodes || a.connections > CONNECTIONS_MAX {
        anyhow::bail!(oob(
            "--connections",
            a.connections,
            a.nodes,
            CONNECTIONS_MAX,
            "(at least one client per node)"
        ));
    }
    crate::bench::fanout::check_schedule(a.rounds, 100_000, a.size, a.rate, MAX_SCHEDULE_S)?;
    let ttl = a.presence_ttl.as_secs_f64();
    if !(1.0..=60.0).contains(&ttl) {
        anyhow::bail!(oob("--presence-ttl", format!("{ttl} s"), "1 s", "60 s", ""));
    }
    if let Some(url) = &a.redis {
        parse_redis_url(url)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ClusterOptions {
        ClusterOptions {
            nodes: 3,
            connections: 30,
            rounds: 50,
            size: 256,
            rate: 20.0,
            redis: None,
            redis_prefix: None,
            scenarios: Kind::ALL.to_vec(),
            presence_ttl: Duration::from_secs(3),
            connect_timeout: Duration::from_secs(30),
            drain: Duration::from_secs(3),
        }
    }

    #[test]
    fn scenario_lists_parse_in_order_without_repeats() {
        assert_eq!(
            parse_scenarios("one-path,naive,one-path").unwrap(),
            [Kind::OnePath, Kind::Naive]
        );
        assert_eq!(
            parse_scenarios(&Kind::ALL.map(|k| k.name()).join(","))
                .unwrap()
                .len(),
            6
        );
        let e = parse_scenarios("single,bogus").unwrap_err();
        assert!(
            e.contains("unknown scenario `bogus`") && e.contains("node-kill"),
            "{e}"
        );
        assert!(parse_scenarios(",").is_err());
    }

    #[test]
    fn redis_urls_are_loopback_and_shown_without_password() {
        let (a, s) = parse_redis_url("redis://127.0.0.1:6390").unwrap();
        assert_eq!((a.port(), s.as_str()), (6390, "redis://127.0.0.1:6390"));
        let (a, _) = parse_redis_url("redis://localhost").unwrap();
        assert_eq!(a.port(), 6379);
        let (a, s) = parse_redis_url("redis://u:secret@[::1]:7000/2").unwrap();
        assert_eq!(a.port(), 7000);
        assert!(!s.contains("secret") && s.contains("u:***"), "{s}");
        for bad in [
            "http://127.0.0.1:1",
            "redis://10.1.1.1:6379",
            "redis://example.com:6379",
        ] {
            assert!(parse_redis_url(bad).is_err(), "{bad}");
        }
        let e = parse_redis_url("redis://:pw@10.0.0.1:1")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("pw@") && e.contains("loopback"), "{e}");
    }

    #[test]
    fn bounds_are_one_line_errors() {
        assert!(validate(&opts()).is_ok());
        for (n, ok) in [(1, false), (2, true), (4, true), (5, false), (9, false)] {
            let r = validate(&ClusterOptions { nodes: n, ..opts() });
            assert_eq!(r.is_ok(), ok, "nodes {n}");
            if let Err(e) = r {
                assert!(e.to_string().contains("--nodes") && !e.to_string().contains('\n'));
            }
        }
        let e = validate(&ClusterOptions {
            connections: 2,
            ..opts()
        })
        .unwrap_err();
        assert!(e.to_string().contains("--connections"), "{e}");
        let e = validate(&ClusterOptions {
            rounds: 100_000,
            rate: 1.0,
            ..opts()
        })
        .unwrap_err();
        assert!(e.to_string().contains("the bound is 600 s"), "{e}");
        let e = validate(&ClusterOptions {
            redis: Some("redis://10.0.0.1:6379".into()),
            ..opts()
        })
        .unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
    }
}
