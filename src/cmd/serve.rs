//! `rtcheck serve`: its flags, turned into the embedded server's plain
//! [`Options`](rtcheck_serve::config::Options), then [`rtcheck_serve::run`].
use super::named;
use rtcheck_base::units::{parse_duration, parse_size};
use rtcheck_serve::access::parse_token;
use rtcheck_serve::cluster::config::{self as cluster, ClusterOptions, PathMode, PresenceMode};
use rtcheck_serve::config::{Options, Protocol, RingSize, Strategy};
use rtcheck_wire::delivery::Delivery;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
    #[arg(long, default_value_t = 0, value_parser = crate::cmd::parse_count0)]
    pub rounds: u64,
    /// Do not publish until POST /control/start.
    #[arg(long)]
    pub wait_start: bool,
    /// Send JSON text frames ({"seq","ts"}) on /ws instead of binary frames.
    #[arg(long)]
    pub text: bool,
    /// Per-client queue length; when full the message is dropped and counted.
    #[arg(long, default_value_t = 64, value_parser = crate::cmd::parse_count_usize)]
    pub queue: usize,
    /// Remove a client whose write takes longer than this (0 = never).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub write_deadline: Duration,
    /// WebSocket ping interval (SSE: comment keepalive) (0 = off).
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub ping: Duration,
    /// Remove a WebSocket client silent for this long (0 = never).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub pong_wait: Duration,
    /// Time a client may take to complete a WebSocket message it began (0 = no bound);
    /// slower closes it with 1008, so dripped partial frames cannot hold memory.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub message_timeout: Duration,
    /// Largest inbound WebSocket message; larger closes that client with 1009.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    pub max_message: u64,
    /// Ring kept for resume (Last-Event-ID, /ws?since=, /poll): messages (1024) or bytes
    /// of payload (100KiB: rounded up to whole messages of --size).
    #[arg(long, default_value = "1024", value_parser = rtcheck_serve::config::parse_ring)]
    pub ring: RingSize,
    /// What a reconnecting client gets: seq-ring (replay after its seq from the ring, or
    /// a gap marker), session-ack (a session per client with acks, see README), or
    /// snapshot (the latest message first, then live).
    #[arg(long, default_value = "seq-ring", value_parser = named::<Delivery>())]
    pub delivery: Delivery,
    /// session-ack: forget a disconnected client's session after this long (a stated
    /// default: serve has no profile; verify delivery passes the profile's max_disconnect).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub session_ttl: Duration,
    /// session-ack: unacked messages a session holds (default: the ring's messages); beyond
    /// it the oldest go and the client gets a gap marker for them on reconnect.
    #[arg(long, value_name = "N", value_parser = crate::cmd::parse_count_usize)]
    pub session_queue: Option<usize>,
    /// session-ack: sessions held at most (connected or away); beyond it a new session is
    /// refused (503 + Retry-After; WebSocket close 1013), a returning one never is.
    /// Measured: 10000 sessions held 953 MB after 3s away at 30 msg/s x 1KiB (docs/delivery.md).
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = crate::cmd::parse_count_usize)]
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
    #[arg(long, value_name = "ORIGIN", value_parser = rtcheck_serve::access::parse_origin)]
    pub cors: Option<String>,
    /// A name this server is reached by (repeatable), beyond the loopback names (localhost,
    /// 127.x, [::1]). A request whose Host is none of them is refused with 421 (DNS
    /// rebinding); off loopback Host is checked only when this is given (docs/serve.md).
    #[arg(long = "public-host", value_name = "NAME", value_parser = rtcheck_serve::access::parse_public_host)]
    pub public_hosts: Vec<String>,
    /// Close each SSE stream after this long (0 = never): EventSource then reconnects with
    /// Last-Event-ID (what `probe --browser` measures).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub sse_max_age: Duration,
    /// On SIGTERM/SIGINT, how long clients get to take their close frames (WebSocket
    /// 1001) before serve exits anyway; it exits as soon as every client is closed.
    #[arg(long, value_name = "DUR", default_value = "5s", value_parser = parse_duration)]
    pub drain: Duration,
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
    #[arg(long, default_value = "per-client", value_parser = named::<Strategy>(), hide = true)]
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
    #[arg(long, default_value = "ws", value_parser = named::<Protocol>(), hide = true)]
    pub protocol: Protocol,
    #[arg(long, default_value = "127.0.0.1:0", hide = true)]
    pub control_listen: SocketAddr,
    /// Per-client strategy without the direct-write pass: the publisher only enqueues and
    /// every message goes through the client's task (like a Go channel per client).
    #[arg(long, hide = true)]
    pub queue_only: bool,

    #[command(flatten)]
    pub cluster: ClusterFlags,
}

/// The cluster flags of `serve` (flattened into its flags).
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterFlags {
    /// Join a cluster through Redis (redis://HOST:PORT/): rounds travel over a Redis
    /// channel, the ring is a Redis Stream, presence is kept in Redis. A URL with a
    /// password belongs in RTCHECK_REDIS_URL (argv is readable in /proc/PID/cmdline).
    #[arg(
        long,
        value_name = "URL",
        env = crate::sys::serve::REDIS_URL_ENV,
        hide_env_values = true,
        help_heading = "Cluster (several nodes over Redis)"
    )]
    pub redis: Option<String>,
    /// This node's name (letters, digits, `.`, `_`, `-`; default node-PID).
    #[arg(
        long,
        value_name = "NAME",
        requires = "redis",
        help_heading = "Cluster (several nodes over Redis)"
    )]
    pub node: Option<String>,
    /// The path of a published round: one-path, or naive (DEMONSTRATION ONLY: duplicates
    /// on the publishing node).
    #[arg(long, default_value = "one-path", value_parser = named::<PathMode>(), requires = "redis", help_heading = "Cluster (several nodes over Redis)")]
    pub path: PathMode,
    /// Presence: ttl (alive keys) or events (DEMONSTRATION: join/leave, ghosts).
    #[arg(long, default_value = "ttl", value_parser = named::<PresenceMode>(), requires = "redis", help_heading = "Cluster (several nodes over Redis)")]
    pub presence: PresenceMode,
    /// TTL of a client's alive key; the heartbeat refreshes it every TTL/3.
    #[arg(long, default_value = "3s", value_parser = parse_duration, requires = "redis", help_heading = "Cluster (several nodes over Redis)")]
    pub presence_ttl: Duration,
    /// Prefix of every Redis key and channel of this cluster (nodes of one cluster share
    /// it; another cluster on the same Redis needs its own).
    #[arg(long, value_name = "PREFIX", default_value = cluster::DEFAULT_PREFIX, value_parser = cluster::parse_prefix, requires = "redis", help_heading = "Cluster (several nodes over Redis)")]
    pub redis_prefix: String,
    /// Relay only: do not publish rounds from this node.
    #[arg(
        long,
        requires = "redis",
        help_heading = "Cluster (several nodes over Redis)"
    )]
    pub no_publish: bool,
}

impl ServeArgs {
    /// The flags as the server's plain options (validated by the server).
    pub fn options(&self) -> Options {
        let f = &*self.flags;
        Options {
            listen: f.listen,
            addr_file: f.addr_file.clone(),
            rate: f.rate,
            size: f.size,
            rounds: f.rounds,
            wait_start: f.wait_start,
            text: f.text,
            queue: f.queue,
            write_deadline: f.write_deadline,
            ping: f.ping,
            pong_wait: f.pong_wait,
            message_timeout: f.message_timeout,
            max_message: f.max_message,
            ring: f.ring,
            delivery: f.delivery,
            session_ttl: f.session_ttl,
            session_queue: f.session_queue,
            max_sessions: f.max_sessions,
            session_memory: f.session_memory,
            replay_budget: f.replay_budget,
            work_workers: f.work_workers,
            split_writes: f.split_writes,
            cors: f.cors.clone(),
            public_hosts: f.public_hosts.clone(),
            sse_max_age: f.sse_max_age,
            drain: f.drain,
            control_token: f.control_token.clone(),
            control_token_file: f.control_token_file.clone(),
            exit_with_parent: f.exit_with_parent,
            strategy: f.strategy,
            shards: f.shards,
            sndbuf: f.sndbuf,
            percopy: f.percopy,
            garbage_mbps: f.garbage_mbps,
            workers: f.workers,
            protocol: f.protocol,
            control_listen: f.control_listen,
            queue_only: f.queue_only,
            cluster: f.cluster.options(),
        }
    }
}

impl ClusterFlags {
    fn options(&self) -> ClusterOptions {
        ClusterOptions {
            redis: self.redis.clone(),
            node: self.node.clone(),
            path: self.path,
            presence: self.presence,
            presence_ttl: self.presence_ttl,
            redis_prefix: self.redis_prefix.clone(),
            no_publish: self.no_publish,
        }
    }
}

pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    // Said here, like every feature left out, rather than by the server's own refusal.
    #[cfg(not(feature = "redis"))]
    if a.cluster.redis.is_some() {
        return Err(super::feature_off("serve --redis", "redis"));
    }
    rtcheck_serve::run(a.options())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use rtcheck_serve::cluster::config::{ClusterConfig, PathMode};
    use rtcheck_serve::config::{Config, Strategy};
    use std::time::Duration;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: ServeArgs,
    }

    fn parse(args: &[&str]) -> Result<T, String> {
        T::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .map_err(|e| e.to_string())
    }

    fn cfg(args: &[&str]) -> Result<Config, String> {
        Config::from_options(&parse(args)?.a.options(), 2)
    }

    fn cluster(args: &[&str]) -> Result<Option<ClusterConfig>, String> {
        ClusterConfig::from_options(&parse(args)?.a.options().cluster)
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
        assert_eq!(c.drain, rtcheck_serve::config::DEFAULT_DRAIN);
        assert_eq!(c.drain, Duration::from_secs(5));
        let d = cfg(&["--drain", "30s"]).unwrap().drain;
        assert_eq!(d, Duration::from_secs(30));
        assert!(parse(&["--drain", "soon"]).is_err());
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
        assert_eq!(c.delivery, Delivery::SessionAck);
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
        let c = Config::from_options_with(&t.a.options(), 2, Some(8 << 30)).unwrap();
        assert_eq!(c.session_memory.bytes, 2 << 30);
        assert!(
            c.session_memory
                .source
                .contains("1/4 of MemAvailable 8.6 GB"),
            "{c:?}"
        );
        assert_eq!(c.replay_budget.bytes, 64 << 20);
        let c = Config::from_options_with(&t.a.options(), 2, Some(256 << 20)).unwrap();
        assert_eq!(
            (c.session_memory.bytes, c.replay_budget.bytes),
            (64 << 20, 16 << 20)
        );
        let c = Config::from_options_with(&t.a.options(), 2, None).unwrap();
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
    #[test]
    fn flags_validate_into_a_config() {
        assert!(cluster(&[]).unwrap().is_none());
        let c = cluster(&["--redis", "redis://127.0.0.1:6379/", "--node", "a"])
            .unwrap()
            .unwrap();
        assert_eq!((c.node.as_str(), c.path), ("a", PathMode::OnePath));
        assert_eq!(c.ttl, Duration::from_secs(3));
        assert_eq!(c.heartbeat, Duration::from_secs(1));
        assert!(c.publish);
        assert_eq!(c.keys.seq, "rtcheck:seq");
        assert_eq!(c.keys.alive, "rtcheck:alive:");
        let c = cluster(&["--redis", "redis://h/", "--redis-prefix", "blue:"])
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                c.keys.ring.as_str(),
                c.keys.rounds.as_str(),
                c.keys.epoch.as_str()
            ),
            ("blue:ring", "blue:rounds", "blue:epoch")
        );
        assert!(c.banner().contains("prefix blue:"), "{}", c.banner());
        for bad in ["", "a*", "a b", "x[1]"] {
            assert!(
                cluster(&["--redis", "redis://h/", "--redis-prefix", bad]).is_err(),
                "{bad}"
            );
        }
        assert!(
            cluster(&["--redis-prefix", "a:"]).is_err(),
            "--redis-prefix without --redis"
        );
        let e = cluster(&["--redis", "nope://x"]).unwrap_err();
        assert!(e.starts_with("--redis nope://x:"), "{e}");
        assert!(cluster(&["--redis", "redis://h/", "--node", "a b"]).is_err());
        assert!(cluster(&["--redis", "redis://h/", "--presence-ttl", "10ms"]).is_err());
        assert!(cluster(&["--node", "a"]).is_err(), "--node without --redis");
        assert!(
            cluster(&["--path", "naive"]).is_err(),
            "--path without --redis"
        );
        assert!(cluster(&["--presence", "events"]).is_err());
        let c = cluster(&["--redis", "redis://h/", "--path", "naive", "--no-publish"])
            .unwrap()
            .unwrap();
        assert!(c.banner().contains("DEMONSTRATION"));
        assert!(c.banner().contains("not publishing"));
    }
}
