//! serve's settings: the plain [`Options`] (what the flags give; [`Default`] is the flags'
//! defaults) validated into a [`Config`] (pure: tested without sockets or a command line).
use super::cluster::config::{ClusterConfig, ClusterOptions};
use super::session;
use rtcheck_base::names::Named;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How the publisher writes to its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// One writer task per client with a bounded queue; drop and count when full.
    PerClient,
    /// --shards writer tasks, each writing sequentially to its clients (unsafe hub).
    Shards,
}

impl Named for Strategy {
    const ALL: &'static [Strategy] = &[Strategy::PerClient, Strategy::Shards];
    fn name(self) -> &'static str {
        match self {
            Strategy::PerClient => "per-client",
            Strategy::Shards => "shards",
        }
    }
}

/// The front the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// HTTP front: /ws, /sse, /poll, /metrics, /healthz, /control on one port.
    Ws,
    /// Raw-TCP floor: length-prefixed frames, one non-blocking write per client per round.
    Raw,
}

impl Named for Protocol {
    const ALL: &'static [Protocol] = &[Protocol::Ws, Protocol::Raw];
    fn name(self) -> &'static str {
        match self {
            Protocol::Ws => "ws",
            Protocol::Raw => "raw",
        }
    }
}

/// `--ring`: a bare number is messages, a size with a unit is bytes of payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingSize {
    Messages(u64),
    Bytes(u64),
}

impl RingSize {
    /// Whole messages of `size` bytes (bytes are rounded up).
    pub fn messages(self, size: u64) -> u64 {
        match self {
            RingSize::Messages(n) => n,
            RingSize::Bytes(b) => b.div_ceil(size.max(1)),
        }
    }
}

pub fn parse_ring(s: &str) -> Result<RingSize, String> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse()
            .map(RingSize::Messages)
            .map_err(|_| format!("{t}: too large"));
    }
    rtcheck_base::units::parse_size(t).map(RingSize::Bytes)
}

/// What `rtcheck serve`'s flags give, before validation. [`Default`] holds the flags'
/// defaults, so a test or an embedding caller changes only what it needs.
#[derive(Debug, Clone)]
pub struct Options {
    pub listen: SocketAddr,
    /// Write the bound address(es) here atomically once accepting.
    pub addr_file: Option<PathBuf>,
    pub rate: f64,
    pub size: u64,
    /// 0 = until stopped.
    pub rounds: u64,
    pub wait_start: bool,
    pub text: bool,
    pub queue: usize,
    /// 0 = never (the same for the other durations below).
    pub write_deadline: Duration,
    pub ping: Duration,
    pub pong_wait: Duration,
    pub message_timeout: Duration,
    pub max_message: u64,
    pub ring: RingSize,
    pub delivery: rtcheck_wire::delivery::Delivery,
    pub session_ttl: Duration,
    pub session_queue: Option<usize>,
    pub max_sessions: usize,
    pub session_memory: Option<u64>,
    pub replay_budget: Option<u64>,
    pub work_workers: usize,
    pub split_writes: bool,
    pub cors: Option<String>,
    pub public_hosts: Vec<String>,
    pub sse_max_age: Duration,
    /// On SIGTERM/SIGINT: how long closing clients get to take their close frames.
    pub drain: Duration,
    pub control_token: Option<String>,
    pub control_token_file: Option<PathBuf>,
    pub exit_with_parent: bool,
    pub strategy: Strategy,
    pub shards: usize,
    pub sndbuf: Option<u64>,
    pub percopy: bool,
    pub garbage_mbps: u64,
    /// Runtime worker threads (None: one per CPU).
    pub workers: Option<usize>,
    pub protocol: Protocol,
    pub control_listen: SocketAddr,
    pub queue_only: bool,
    pub cluster: ClusterOptions,
}

/// `--drain`'s default. 1 s left 308 of 10,000 clients on 2 loaded cores without their
/// close frame (BENCHMARKS.md, rehearse); the wait ends once every client is closed.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(5);

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            addr_file: None,
            rate: 5.0,
            size: 1024,
            rounds: 0,
            wait_start: false,
            text: false,
            queue: 64,
            write_deadline: Duration::from_secs(1),
            ping: Duration::from_secs(20),
            pong_wait: Duration::from_secs(30),
            message_timeout: Duration::from_secs(10),
            max_message: 64 * 1024,
            ring: RingSize::Messages(1024),
            delivery: rtcheck_wire::delivery::Delivery::SeqRing,
            session_ttl: Duration::from_secs(30),
            session_queue: None,
            max_sessions: 10_000,
            session_memory: None,
            replay_budget: None,
            work_workers: 8,
            split_writes: false,
            cors: None,
            public_hosts: Vec::new(),
            sse_max_age: Duration::ZERO,
            drain: DEFAULT_DRAIN,
            control_token: None,
            control_token_file: None,
            exit_with_parent: false,
            strategy: Strategy::PerClient,
            shards: 10,
            sndbuf: None,
            percopy: false,
            garbage_mbps: 0,
            workers: None,
            protocol: Protocol::Ws,
            control_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            queue_only: false,
            cluster: ClusterOptions::default(),
        }
    }
}

/// Validated settings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Config {
    pub listen: SocketAddr,
    pub control_listen: Option<SocketAddr>,
    pub period: Duration,
    pub rate: f64,
    pub size: usize,
    pub rounds: Option<u64>,
    pub wait_start: bool,
    pub text: bool,
    pub queue: usize,
    pub write_deadline: Option<Duration>,
    pub ping: Option<Duration>,
    pub pong_wait: Option<Duration>,
    pub message_timeout: Option<Duration>,
    pub max_message: usize,
    pub ring: usize,
    pub delivery: rtcheck_wire::delivery::Delivery,
    pub session_ttl: Duration,
    pub session_queue: usize,
    pub max_sessions: usize,
    /// `--session-memory`, or its default from MemAvailable.
    pub session_memory: MemBudget,
    /// `--replay-budget`, or its default.
    pub replay_budget: MemBudget,
    pub strategy: Strategy,
    pub shards: usize,
    pub sndbuf: Option<usize>,
    pub percopy: bool,
    pub garbage_mbps: u64,
    pub workers: usize,
    pub protocol: Protocol,
    /// Per-client strategy: the publisher tries one non-blocking write per client whose
    /// task is idle (split over the worker threads) and queues only what does not fit.
    pub direct: bool,
    pub cors: Option<String>,
    /// `--public-host`: names accepted in Host besides the loopback ones.
    pub public_hosts: Vec<String>,
    pub sse_max_age: Option<Duration>,
    /// `--drain`: the shutdown's wait for clients to take their close frames.
    pub drain: Duration,
    #[serde(skip)]
    pub control_token: Option<String>,
    /// Decided at start from the bound address (see [`super::access::plan`]).
    #[serde(skip)]
    pub access: super::access::Access,
    /// `--redis`: this node's cluster settings.
    pub cluster: Option<ClusterConfig>,
}

/// A memory budget and where its figure comes from (said in the startup lines).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemBudget {
    pub bytes: u64,
    pub source: String,
}

const MIB: u64 = 1 << 20;

impl MemBudget {
    fn given(bytes: u64, flag: &str) -> MemBudget {
        MemBudget {
            bytes,
            source: flag.to_string(),
        }
    }

    /// The sessions' default: a quarter of MemAvailable (at least 64 MiB), or 1 GiB when
    /// it cannot be read.
    pub fn sessions_default(available: Option<u64>) -> MemBudget {
        match available {
            Some(a) => MemBudget {
                bytes: (a / 4).max(64 * MIB),
                source: format!("1/4 of MemAvailable {}", rtcheck_base::units::fmt_bytes(a)),
            },
            None => MemBudget {
                bytes: 1 << 30,
                source: "MemAvailable unknown: 1 GiB".into(),
            },
        }
    }

    /// The replay default: 64 MiB, or 1/16 of MemAvailable when less (at least 4 MiB).
    pub fn replay_default(available: Option<u64>) -> MemBudget {
        let bytes = available.map_or(64 * MIB, |a| (a / 16).clamp(4 * MIB, 64 * MIB));
        MemBudget {
            bytes,
            source: "default".into(),
        }
    }
}

fn nonzero(d: Duration) -> Option<Duration> {
    (!d.is_zero()).then_some(d)
}

impl Config {
    /// What the session-ack state is built with.
    pub fn session_limits(&self) -> session::Limits {
        session::Limits {
            enabled: self.delivery == rtcheck_wire::delivery::Delivery::SessionAck,
            ttl: self.session_ttl,
            queue: self.session_queue,
            max: self.max_sessions,
            memory: self.session_memory.bytes,
            size: self.size,
            text: self.text,
        }
    }

    /// [`Config::from_options_with`] with MemAvailable read now.
    pub fn from_options(a: &Options, cpus: usize) -> Result<Config, String> {
        Config::from_options_with(a, cpus, rtcheck_base::os::proc::mem_available())
    }

    /// Validate the options; the memory budgets' defaults come from `available` (pure).
    pub fn from_options_with(
        a: &Options,
        cpus: usize,
        available: Option<u64>,
    ) -> Result<Config, String> {
        check_rates_and_sizes(a)?;
        let Counts {
            ring,
            session_queue,
            workers,
        } = counts(a, cpus)?;
        let (session_memory, replay_budget) = budgets(a, available, session_queue)?;
        let cluster = cluster(a)?;
        Ok(Config {
            listen: a.listen,
            control_listen: (a.protocol == Protocol::Raw).then_some(a.control_listen),
            period: Duration::from_secs_f64(1.0 / a.rate),
            rate: a.rate,
            size: a.size as usize,
            rounds: (a.rounds > 0).then_some(a.rounds),
            wait_start: a.wait_start,
            text: a.text,
            queue: a.queue,
            write_deadline: nonzero(a.write_deadline),
            ping: nonzero(a.ping),
            pong_wait: nonzero(a.pong_wait),
            message_timeout: nonzero(a.message_timeout),
            max_message: a.max_message as usize,
            ring,
            delivery: a.delivery,
            session_ttl: a.session_ttl,
            session_queue,
            max_sessions: a.max_sessions,
            session_memory,
            replay_budget,
            strategy: a.strategy,
            shards: a.shards,
            sndbuf: a.sndbuf.map(|s| s as usize),
            percopy: a.percopy,
            garbage_mbps: a.garbage_mbps,
            workers,
            protocol: a.protocol,
            direct: !a.queue_only,
            cors: a.cors.clone(),
            public_hosts: a.public_hosts.clone(),
            sse_max_age: nonzero(a.sse_max_age),
            drain: a.drain,
            control_token: super::access::token_from(
                a.control_token.as_deref(),
                a.control_token_file.as_deref(),
                std::env::var("RTCHECK_CONTROL_TOKEN").ok().as_deref(),
            )?,
            access: super::access::Access::Open,
            cluster,
        })
    }
}

use rtcheck_base::units::out_of_bounds as oob;

/// The sizes in messages and the threads, checked.
struct Counts {
    ring: usize,
    session_queue: usize,
    workers: usize,
}

fn counts(a: &Options, cpus: usize) -> Result<Counts, String> {
    let ring = a.ring.messages(a.size);
    if ring == 0 || ring > 1 << 20 {
        return Err(oob("--ring", ring, 1, 1 << 20, "messages"));
    }
    let session_queue = a.session_queue.unwrap_or(ring as usize);
    if session_queue == 0 || session_queue > 1 << 20 {
        let n = session_queue;
        return Err(oob("--session-queue", n, 1, 1 << 20, "messages"));
    }
    let workers = a.workers.unwrap_or(cpus.max(1));
    if workers == 0 || workers > 256 {
        return Err(oob("--threads", workers, 1, 256, ""));
    }
    Ok(Counts {
        ring: ring as usize,
        session_queue,
        workers,
    })
}

/// `--redis`'s settings, and the listeners it cannot work with.
fn cluster(a: &Options) -> Result<Option<ClusterConfig>, String> {
    let cluster = ClusterConfig::from_options(&a.cluster)?;
    if cluster.is_some() && a.protocol == Protocol::Raw {
        return Err("--redis works with the HTTP front, not --protocol raw".into());
    }
    if a.protocol == Protocol::Raw && a.control_listen == a.listen && a.listen.port() != 0 {
        return Err("--control-listen must differ from --listen with --protocol raw".into());
    }
    Ok(cluster)
}

/// The bounds of the flags that need nothing else to be judged.
fn check_rates_and_sizes(a: &Options) -> Result<(), String> {
    if !(a.rate > 0.0 && a.rate <= 10_000.0) {
        return Err(oob("--rate", a.rate, "0 (excluded)", 10_000, "messages/s"));
    }
    if a.size < 16 || a.size > 16 << 20 {
        return Err(oob("--size", a.size, 16, 16 << 20, "bytes"));
    }
    if a.queue == 0 || a.queue > 1 << 20 {
        return Err(oob("--queue", a.queue, 1, 1 << 20, "messages"));
    }
    if a.max_sessions == 0 || a.max_sessions > 1_000_000 {
        let n = a.max_sessions;
        return Err(oob("--max-sessions", n, 1, 1_000_000, "sessions"));
    }
    if a.session_ttl.is_zero() || a.session_ttl > Duration::from_secs(86_400) {
        return Err("--session-ttl: must be more than 0 and at most 1day".into());
    }
    if a.max_message < 125 || a.max_message > 64 << 20 {
        return Err(oob("--max-message", a.max_message, 125, 64 << 20, "bytes"));
    }
    if a.shards == 0 || a.shards > 1024 {
        return Err(oob("--shards", a.shards, 1, 1024, ""));
    }
    if a.garbage_mbps > 10_000 {
        return Err(format!("--garbage-mbps {}: at most 10000", a.garbage_mbps));
    }
    match a.sndbuf {
        Some(s) if !(1024..=64 << 20).contains(&s) => {
            Err(oob("--sndbuf", s, 1024, 64 << 20, "bytes"))
        }
        _ => Ok(()),
    }
}

/// The session memory and the replay budget: given, or sized to the machine.
fn budgets(
    a: &Options,
    available: Option<u64>,
    session_queue: usize,
) -> Result<(MemBudget, MemBudget), String> {
    let session_memory = match a.session_memory {
        Some(b) => MemBudget::given(b, "--session-memory"),
        None => MemBudget::sessions_default(available),
    };
    let worst = session::worst_session_bytes(session_queue, a.size as usize);
    if session_memory.bytes < worst || session_memory.bytes > 1 << 40 {
        return Err(format!(
            "--session-memory {}: out of bounds {} (one session at worst: --session-queue {session_queue} x --size {}) ..= 1 TiB",
            rtcheck_base::units::fmt_bytes(session_memory.bytes),
            rtcheck_base::units::fmt_bytes(worst),
            a.size
        ));
    }
    let replay_budget = match a.replay_budget {
        Some(b) => MemBudget::given(b, "--replay-budget"),
        None => MemBudget::replay_default(available),
    };
    if replay_budget.bytes < 64 * 1024 || replay_budget.bytes > 64 << 30 {
        let b = replay_budget.bytes;
        return Err(oob("--replay-budget", b, "64KiB", "64GiB", "bytes"));
    }
    Ok((session_memory, replay_budget))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(o: Options) -> Result<Config, String> {
        Config::from_options_with(&o, 2, None)
    }

    #[test]
    fn ring_sizes_are_messages_or_bytes() {
        assert_eq!(parse_ring("1024"), Ok(RingSize::Messages(1024)));
        assert_eq!(parse_ring("100KiB").unwrap().messages(1024), 100);
        assert!(parse_ring("x").is_err());
    }

    #[test]
    fn defaults_validate() {
        let c = cfg(Options::default()).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!((c.queue, c.ring, c.workers), (64, 1024, 2));
        assert_eq!(c.period, Duration::from_millis(200));
    }

    #[test]
    fn out_of_bounds_options_name_their_flag() {
        let bad = |o: Options, flag: &str| {
            let e = cfg(o).unwrap_err();
            assert!(e.contains(flag) && !e.contains('\n'), "{flag}: {e}");
        };
        bad(
            Options {
                size: 8,
                ..Default::default()
            },
            "--size",
        );
        bad(
            Options {
                rate: 0.0,
                ..Default::default()
            },
            "--rate",
        );
        bad(
            Options {
                queue: 0,
                ..Default::default()
            },
            "--queue",
        );
        bad(
            Options {
                shards: 0,
                ..Default::default()
            },
            "--shards",
        );
        bad(
            Options {
                session_ttl: Duration::ZERO,
                ..Default::default()
            },
            "--session-ttl",
        );
    }
}
