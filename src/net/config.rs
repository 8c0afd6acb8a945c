//! `serve` flags and their validation into a [`Config`] (pure: tested without sockets).
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// One writer task per client with a bounded queue; drop and count when full.
    PerClient,
    /// --shards writer tasks, each writing sequentially to its clients (unsafe hub).
    Shards,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// HTTP front: /ws, /sse, /poll, /metrics, /healthz, /control on one port.
    Ws,
    /// Raw-TCP floor: length-prefixed frames, one non-blocking write per client per round.
    Raw,
}

/// `serve` flags, boxed so the CLI's command enum stays small.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Examples:
  127.0.0.1:8080, 1 KB at 5/s to every client:
    rtcheck serve

    rtcheck serve --rate 50 --size 256 --ping 20s --pong-wait 30s
    rtcheck serve --listen 127.0.0.1:0 --addr-file /tmp/addr --rounds 100
    curl -N -H 'Last-Event-ID: 10' http://127.0.0.1:8080/sse
    curl -s 'http://127.0.0.1:8080/poll?since=0'
    curl -s http://127.0.0.1:8080/metrics
  one node of several (docs/serve.md):
    rtcheck serve --redis redis://127.0.0.1:6379/ --node a

Payload: binary frame, bytes 0-7 seq (u64 LE), 8-15 scheduled send time (u64 LE, ns since
the Unix epoch), then padding; or JSON text with \"seq\" and \"ts\" (README: payload format).
Exit codes: 130 stopped by Ctrl-C, 143 by SIGTERM (after closing every client), 2 error.")]
pub struct ServeArgs {
    #[command(flatten)]
    pub flags: Box<ServeFlags>,
}

impl std::ops::Deref for ServeArgs {
    type Target = ServeFlags;
    fn deref(&self) -> &ServeFlags {
        &self.flags
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct ServeFlags {
    /// Address to listen on (loopback by default; other addresses only when given).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Write the bound address(es) to this file atomically once accepting.
    #[arg(long, value_name = "PATH")]
    pub addr_file: Option<PathBuf>,
    /// Messages per second sent to every client.
    #[arg(long, default_value_t = 5.0)]
    pub rate: f64,
    /// Payload bytes per message (minimum 16).
    #[arg(long, default_value = "1024", value_parser = parse_size)]
    pub size: u64,
    /// Stop publishing after N messages (0 = until stopped).
    #[arg(long, default_value_t = 0)]
    pub rounds: u64,
    /// Do not publish until POST /control/start.
    #[arg(long)]
    pub wait_start: bool,
    /// Send JSON text frames ({"seq","ts"}) on /ws instead of binary frames.
    #[arg(long)]
    pub text: bool,
    /// Per-client queue length; when full the message is dropped and counted.
    #[arg(long, default_value_t = 64)]
    pub queue: usize,
    /// Remove a client whose write takes longer than this (0 = never).
    #[arg(long, default_value = "1s", value_parser = crate::units::parse_duration)]
    pub write_deadline: Duration,
    /// WebSocket ping interval (SSE: comment keepalive) (0 = off).
    #[arg(long, default_value = "20s", value_parser = crate::units::parse_duration)]
    pub ping: Duration,
    /// Remove a WebSocket client silent for this long (0 = never).
    #[arg(long, default_value = "30s", value_parser = crate::units::parse_duration)]
    pub pong_wait: Duration,
    /// Time a client may take to complete a WebSocket message it began (0 = no bound);
    /// slower closes it with 1008, so dripped partial frames cannot hold memory.
    #[arg(long, default_value = "10s", value_parser = crate::units::parse_duration)]
    pub message_timeout: Duration,
    /// Largest inbound WebSocket message; larger closes that client with 1009.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    pub max_message: u64,
    /// Ring kept for resume (Last-Event-ID, /ws?since=, /poll): messages (1024) or bytes
    /// of payload (100KiB: rounded up to whole messages of --size).
    #[arg(long, default_value = "1024", value_parser = super::session::parse_ring)]
    pub ring: super::session::RingSize,
    /// What a reconnecting client gets: seq-ring (replay after its seq from the ring, or
    /// a gap marker), session-ack (a session per client with acks, see README), or
    /// snapshot (the latest message first, then live).
    #[arg(long, value_enum, default_value_t = super::session::Delivery::SeqRing)]
    pub delivery: super::session::Delivery,
    /// session-ack: forget a disconnected client's session after this long (a stated
    /// default: serve has no profile; verify delivery passes the profile's max_disconnect).
    #[arg(long, default_value = "30s", value_parser = crate::units::parse_duration)]
    pub session_ttl: Duration,
    /// session-ack: unacked messages a session holds (default: the ring's messages); beyond
    /// it the oldest go and the client gets a gap marker for them on reconnect.
    #[arg(long, value_name = "N")]
    pub session_queue: Option<usize>,
    /// session-ack: sessions held at most (connected or away); beyond it a new session is
    /// refused (503 + Retry-After; WebSocket close 1013), a returning one never is.
    /// Measured: 10000 sessions held 953 MB after 3s away at 30 msg/s x 1KiB (docs/delivery.md).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_sessions: usize,
    /// session-ack: memory the sessions may hold at their worst (each away with a full
    /// queue); a new session beyond it is refused like one beyond --max-sessions (default:
    /// a quarter of MemAvailable at start).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub session_memory: Option<u64>,
    /// Resume replay (Last-Event-ID, /ws?since=, /poll) bytes in flight over all clients;
    /// beyond it replays wait their turn (default: 64MiB, or 1/16 of MemAvailable if less).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub replay_budget: Option<u64>,
    /// Workers in the /work?ms=N pool (capacity = workers / work time).
    #[arg(long = "workers", default_value_t = 8, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub work_workers: usize,
    /// Answer /work with header and body in two writes and Nagle on (no TCP_NODELAY):
    /// reproduces the Nagle + delayed-ACK stall.
    #[arg(long)]
    pub split_writes: bool,
    /// Send Access-Control-Allow-Origin: ORIGIN on /sse, /poll and /metrics, and accept
    /// WebSocket handshakes from it (`*` for any site). Without it a browser page on another
    /// host than the one it asked for is refused /ws with 403 (cross-site WebSocket hijacking).
    #[arg(long, value_name = "ORIGIN", value_parser = super::access::parse_origin)]
    pub cors: Option<String>,
    /// A name this server is reached by (repeatable), beyond the loopback names (localhost,
    /// 127.x, [::1]). A request whose Host is none of them is refused with 421 (DNS
    /// rebinding); off loopback Host is checked only when this is given (docs/serve.md).
    #[arg(long = "public-host", value_name = "NAME", value_parser = super::access::parse_public_host)]
    pub public_hosts: Vec<String>,
    /// Close each SSE stream after this long (0 = never): EventSource then reconnects with
    /// Last-Event-ID (what `probe --browser` measures).
    #[arg(long, default_value = "0s", value_parser = crate::units::parse_duration)]
    pub sse_max_age: Duration,
    /// Require `Authorization: Bearer TOKEN` on /control/*. Off loopback without it, a
    /// token is generated and written to <addr-file>.token, or /control/* is refused.
    /// Deprecated on the command line (any local user reads it in /proc/PID/cmdline): use
    /// --control-token-file or the environment variable RTCHECK_CONTROL_TOKEN.
    #[arg(long, value_name = "TOKEN", value_parser = parse_token)]
    pub control_token: Option<String>,
    /// Read the control token from FILE (its first line; keep it mode 0600).
    #[arg(long, value_name = "FILE", conflicts_with = "control_token")]
    pub control_token_file: Option<std::path::PathBuf>,
    /// Exit when the parent process dies (prctl PR_SET_PDEATHSIG).
    #[arg(long)]
    pub exit_with_parent: bool,

    // Scenario knobs for `bench fanout`: unsafe on purpose, hidden.
    #[arg(long, value_enum, default_value_t = Strategy::PerClient, hide = true)]
    pub strategy: Strategy,
    #[arg(long, default_value_t = 10, hide = true)]
    pub shards: usize,
    #[arg(long, value_parser = parse_size, hide = true)]
    pub sndbuf: Option<u64>,
    #[arg(long, hide = true)]
    pub percopy: bool,
    #[arg(long, default_value_t = 0, hide = true)]
    pub garbage_mbps: u64,
    /// Runtime worker threads (default: one per CPU).
    #[arg(long = "threads", hide = true)]
    pub workers: Option<usize>,
    #[arg(long, value_enum, default_value_t = Protocol::Ws, hide = true)]
    pub protocol: Protocol,
    #[arg(long, default_value = "127.0.0.1:0", hide = true)]
    pub control_listen: SocketAddr,
    /// Per-client strategy without the direct-write pass: the publisher only enqueues and
    /// every message goes through the client's task (like a Go channel per client).
    #[arg(long, hide = true)]
    pub queue_only: bool,

    #[command(flatten)]
    pub cluster: super::cluster::ClusterFlags,
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
    pub delivery: super::session::Delivery,
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
    #[serde(skip)]
    pub control_token: Option<String>,
    /// Decided at start from the bound address (see [`super::access::plan`]).
    #[serde(skip)]
    pub access: super::access::Access,
    /// `--redis`: this node's cluster settings.
    pub cluster: Option<super::cluster::ClusterConfig>,
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
                source: format!("1/4 of MemAvailable {}", crate::units::fmt_bytes(a)),
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
    /// [`Config::from_args_with`] with MemAvailable read now.
    pub fn from_args(a: &ServeFlags, cpus: usize) -> Result<Config, String> {
        Config::from_args_with(a, cpus, super::sys::mem_available())
    }

    /// Validate the flags; the memory budgets' defaults come from `available` (pure).
    pub fn from_args_with(
        a: &ServeFlags,
        cpus: usize,
        available: Option<u64>,
    ) -> Result<Config, String> {
        if !(a.rate > 0.0 && a.rate <= 10_000.0) {
            return Err(oob("--rate", a.rate, "0 (excluded)", 10_000, "messages/s"));
        }
        if a.size < 16 || a.size > 16 << 20 {
            return Err(oob("--size", a.size, 16, 16 << 20, "bytes"));
        }
        if a.queue == 0 || a.queue > 1 << 20 {
            return Err(oob("--queue", a.queue, 1, 1 << 20, "messages"));
        }
        let ring = a.ring.messages(a.size);
        if ring == 0 || ring > 1 << 20 {
            return Err(oob("--ring", ring, 1, 1 << 20, "messages"));
        }
        let session_queue = a.session_queue.unwrap_or(ring as usize);
        if session_queue == 0 || session_queue > 1 << 20 {
            return Err(oob(
                "--session-queue",
                session_queue,
                1,
                1 << 20,
                "messages",
            ));
        }
        if a.max_sessions == 0 || a.max_sessions > 1_000_000 {
            return Err(oob(
                "--max-sessions",
                a.max_sessions,
                1,
                1_000_000,
                "sessions",
            ));
        }
        let session_memory = match a.session_memory {
            Some(b) => MemBudget::given(b, "--session-memory"),
            None => MemBudget::sessions_default(available),
        };
        let worst = super::session::worst_session_bytes(session_queue, a.size as usize);
        if session_memory.bytes < worst || session_memory.bytes > 1 << 40 {
            return Err(format!(
                "--session-memory {}: out of bounds {} (one session at worst: --session-queue {session_queue} x --size {}) ..= 1 TiB",
                crate::units::fmt_bytes(session_memory.bytes),
                crate::units::fmt_bytes(worst),
                a.size
            ));
        }
        let replay_budget = match a.replay_budget {
            Some(b) => MemBudget::given(b, "--replay-budget"),
            None => MemBudget::replay_default(available),
        };
        if replay_budget.bytes < 64 * 1024 || replay_budget.bytes > 64 << 30 {
            return Err(oob(
                "--replay-budget",
                replay_budget.bytes,
                "64KiB",
                "64GiB",
                "bytes",
            ));
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
        let workers = a.workers.unwrap_or(cpus.max(1));
        if workers == 0 || workers > 256 {
            return Err(oob("--threads", workers, 1, 256, ""));
        }
        if a.garbage_mbps > 10_000 {
            return Err(format!("--garbage-mbps {}: at most 10000", a.garbage_mbps));
        }
        if let Some(s) = a.sndbuf {
            if !(1024..=64 << 20).contains(&s) {
                return Err(oob("--sndbuf", s, 1024, 64 << 20, "bytes"));
            }
        }
        let cluster = super::cluster::ClusterConfig::from_flags(&a.cluster)?;
        if cluster.is_some() && a.protocol == Protocol::Raw {
            return Err("--redis works with the HTTP front, not --protocol raw".into());
        }
        if a.protocol == Protocol::Raw && a.control_listen == a.listen && a.listen.port() != 0 {
            return Err("--control-listen must differ from --listen with --protocol raw".into());
        }
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
            ring: ring as usize,
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

use crate::units::out_of_bounds as oob;
pub use crate::units::parse_size;

/// A bearer token: 8 to 256 characters that are safe in a header (token68, RFC 9110 11.2).
pub fn parse_token(s: &str) -> Result<String, String> {
    let ok = (8..=256).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b));
    if ok {
        Ok(s.to_string())
    } else {
        Err("expected 8-256 characters of A-Z a-z 0-9 - . _ ~ + / =".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: ServeArgs,
    }

    fn cfg(args: &[&str]) -> Result<Config, String> {
        let t = T::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        Config::from_args(&t.a.flags, 2)
    }

    #[test]
    fn defaults_are_the_safe_ones() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.queue, 64);
        assert_eq!(c.write_deadline, Some(Duration::from_secs(1)));
        assert_eq!(c.ping, Some(Duration::from_secs(20)));
        assert_eq!(c.pong_wait, Some(Duration::from_secs(30)));
        assert_eq!(c.message_timeout, Some(Duration::from_secs(10)));
        assert_eq!(c.max_message, 65536);
        assert_eq!(c.size, 1024);
        assert_eq!(c.period, Duration::from_millis(200));
        assert_eq!(c.strategy, Strategy::PerClient);
        assert_eq!(c.workers, 2);
        assert_eq!(c.rounds, None);
        assert!(c.control_listen.is_none());
        assert!(c.direct);
        assert!(!cfg(&["--queue-only"]).unwrap().direct);
    }

    #[test]
    fn scenario_knobs() {
        let c = cfg(&[
            "--strategy",
            "shards",
            "--write-deadline",
            "0",
            "--sndbuf",
            "4096",
            "--threads",
            "1",
            "--rounds",
            "100",
            "--protocol",
            "raw",
        ])
        .unwrap();
        assert_eq!(c.strategy, Strategy::Shards);
        assert_eq!(c.write_deadline, None);
        assert_eq!(c.sndbuf, Some(4096));
        assert_eq!(c.workers, 1);
        assert_eq!(c.rounds, Some(100));
        assert!(c.control_listen.is_some());
    }

    #[test]
    fn bad_values_name_the_flag() {
        assert!(cfg(&["--size", "8"]).unwrap_err().contains("--size"));
        assert!(cfg(&["--rate", "0"]).unwrap_err().contains("--rate"));
        assert!(cfg(&["--queue", "0"]).unwrap_err().contains("--queue"));
        assert!(cfg(&["--size", "1XB"]).unwrap_err().contains("unit"));
        assert!(cfg(&["--listen", "nope"]).is_err());
        assert!(cfg(&["--control-token", "short"]).is_err());
        assert!(cfg(&["--control-token", "has space in it"]).is_err());
        assert!(cfg(&["--cors", "https://a.com/x"]).is_err());
        let c = cfg(&[
            "--cors",
            "https://a.com",
            "--control-token",
            "0123456789abcdef",
        ])
        .unwrap();
        assert_eq!(c.cors.as_deref(), Some("https://a.com"));
        assert_eq!(c.control_token.as_deref(), Some("0123456789abcdef"));
    }

    #[test]
    fn ring_in_messages_or_bytes_and_session_flags() {
        assert_eq!(cfg(&[]).unwrap().ring, 1024);
        assert_eq!(
            cfg(&["--ring", "100KiB", "--size", "1KiB"]).unwrap().ring,
            100
        );
        assert_eq!(
            cfg(&["--ring", "100KB", "--size", "1KiB"]).unwrap().ring,
            98
        );
        assert_eq!(cfg(&["--ring", "64"]).unwrap().ring, 64);
        assert!(cfg(&["--ring", "0"]).unwrap_err().contains("--ring"));
        assert!(cfg(&["--ring", "lots"]).is_err());
        let c = cfg(&["--delivery", "session-ack", "--ring", "50"]).unwrap();
        assert_eq!(c.delivery, super::super::session::Delivery::SessionAck);
        assert_eq!(
            (c.session_queue, c.session_ttl),
            (50, Duration::from_secs(30))
        );
        assert!(cfg(&["--session-ttl", "0"])
            .unwrap_err()
            .contains("--session-ttl"));
        assert!(cfg(&["--session-queue", "0"])
            .unwrap_err()
            .contains("--session-queue"));
        assert_eq!(cfg(&[]).unwrap().max_sessions, 10_000);
        assert_eq!(cfg(&["--max-sessions", "5"]).unwrap().max_sessions, 5);
        for bad in ["0", "1000001"] {
            let e = cfg(&["--max-sessions", bad]).unwrap_err();
            assert!(e.contains("--max-sessions") && !e.contains('\n'), "{e}");
        }
        assert!(cfg(&["--max-sessions", "many"]).is_err());
    }

    #[test]
    fn memory_budgets_default_from_mem_available_or_a_fixed_figure() {
        let t = T::try_parse_from(["x"]).unwrap();
        let c = Config::from_args_with(&t.a.flags, 2, Some(8 << 30)).unwrap();
        assert_eq!(c.session_memory.bytes, 2 << 30);
        assert!(
            c.session_memory
                .source
                .contains("1/4 of MemAvailable 8.6 GB"),
            "{c:?}"
        );
        assert_eq!(c.replay_budget.bytes, 64 << 20);
        let c = Config::from_args_with(&t.a.flags, 2, Some(256 << 20)).unwrap();
        assert_eq!(
            (c.session_memory.bytes, c.replay_budget.bytes),
            (64 << 20, 16 << 20)
        );
        let c = Config::from_args_with(&t.a.flags, 2, None).unwrap();
        assert_eq!(
            (c.session_memory.bytes, c.replay_budget.bytes),
            (1 << 30, 64 << 20)
        );
        let c = cfg(&["--session-memory", "64MiB", "--replay-budget", "1MiB"]).unwrap();
        assert_eq!(
            (c.session_memory.bytes, c.replay_budget.bytes),
            (64 << 20, 1 << 20)
        );
        assert_eq!(c.session_memory.source, "--session-memory");
        // Less than one session at worst (1024 x 1 KiB), or a replay budget of nothing.
        let e = cfg(&["--session-memory", "1MiB"]).unwrap_err();
        assert!(
            e.contains("--session-memory") && e.contains("one session"),
            "{e}"
        );
        assert!(cfg(&["--session-memory", "1MiB", "--session-queue", "64"]).is_ok());
        assert!(cfg(&["--replay-budget", "1KiB"])
            .unwrap_err()
            .contains("--replay-budget"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4KB"), Ok(4000));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999999GB").is_err());
    }
}
