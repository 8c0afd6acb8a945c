//! One scenario end to end: start the nodes (and use the run's Redis), connect the clients
//! spread over the nodes, publish from node a, inject the scenario's fault (a SIGKILLed
//! node, a Redis restart), watch presence after a kill, stop everything, count.
use super::account::{self, ClientLog};
use super::client::{self, Shared};
use super::fault::{ghost_bound, presence_online, restart_extra, Fault, GhostWatch};
use super::model::{ClusterReport, ClusterScenario, GhostSeries};
use super::nodes::{self, Node, NodeSpec, Redis};
use super::validity::{self, Inputs};
use super::{ClusterOptions, Kind};
use crate::bench::fanout::progress_bar;
use crate::sys::control;
use crate::sys::serve::Scratch;
use rtcheck_base::os::clock::{cores, cpu_seconds};
use rtcheck_base::os::signal::{self, interrupted};
use rtcheck_wire::stats::ServerStats;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const INTERRUPTED: &str =
    "interrupted: stopped the nodes, Redis and the clients, removed the temp files; no report";

fn check_interrupted() -> anyhow::Result<()> {
    signal::check_interrupted(INTERRUPTED)
}

/// Every listed scenario, in order. A scenario that cannot run becomes an invalid row
/// naming why; when none could run, the first error is the answer (one line, exit 2).
pub fn run(a: &ClusterOptions) -> anyhow::Result<ClusterReport> {
    super::validate(a)?;
    signal::install_interrupt_handler();
    let scratch = Scratch::new("cluster")?;
    let prefix = a.redis_prefix.clone().unwrap_or_else(super::unique_prefix);
    let a = &ClusterOptions {
        redis_prefix: Some(prefix.clone()),
        ..a.clone()
    };
    let mut redis = match a.scenarios.iter().any(|k| k.uses_redis()) {
        true => Some(Redis::open(a.redis.as_deref(), &scratch.0)?),
        false => None,
    };
    if let Some(r) = &redis {
        r.check_unused(&prefix)?;
    }
    let user = redis.as_ref().and_then(|r| r.user_url());
    let _clean = Cleanup(user.map(|u| (u.to_string(), prefix.clone())));
    let mut rows = Vec::new();
    let mut first_err = None;
    for &k in &a.scenarios {
        match run_one(k, a, redis.as_mut()) {
            Ok(r) => rows.push(r),
            Err(_) if interrupted() => return Err(signal::Interrupted(INTERRUPTED).into()),
            Err(e) => {
                rows.push(could_not_run(k, a, &e));
                first_err.get_or_insert(e);
            }
        }
        check_interrupted()?;
    }
    if let (Some(e), false) = (first_err, rows.iter().any(|r| r.checks.len() > 1)) {
        return Err(e);
    }
    validity::apply_single_delta(&mut rows);
    Ok(ClusterReport {
        command: "bench cluster".into(),
        nodes: a.nodes,
        connections: a.connections,
        rounds: a.rounds,
        size: a.size,
        rate: a.rate,
        redis: redis
            .as_ref()
            .map(|r| r.describe())
            .unwrap_or_else(|| "none (single only)".into()),
        presence_ttl_s: a.presence_ttl.as_secs_f64(),
        host_cores: cores(),
        valid: rows.iter().all(|r| r.valid),
        scenarios: rows,
        reference: [
            "redis-pubsub",
            "single-path",
            "presence-ttl",
            "loss-dup-order",
        ]
        .map(crate::evidence::reference)
        .to_vec(),
    })
}

/// Deletes a run's keys from the user's Redis when the run ends, however it ends (ours
/// is removed whole).
struct Cleanup(Option<(String, String)>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some((url, prefix)) = &self.0 {
            let _ = crate::sys::redis::delete_under(url, prefix);
        }
    }
}

/// The row of a scenario that failed before measuring anything.
fn could_not_run(k: Kind, a: &ClusterOptions, e: &anyhow::Error) -> ClusterScenario {
    let mut r = validity::analyze(
        k.name(),
        k.describe(),
        Inputs {
            refused: Some(format!("could not run: {e:#}")),
            ..empty_inputs(k, a)
        },
        0.0,
    );
    r.checks.retain(|c| c.name == "scenario ran");
    r
}

fn empty_inputs(k: Kind, a: &ClusterOptions) -> Inputs {
    Inputs {
        kind: k,
        nodes: if k == Kind::Single { 1 } else { a.nodes },
        tally: account::Tally::default(),
        connected: 0,
        connect_errors: vec![],
        published: 0,
        rounds: a.rounds,
        publish_failures: 0,
        cpu_s: 0.0,
        wall_s: 0.0,
        cores: cores(),
        nodes_clean: true,
        leftover: vec![],
        ghosts: vec![],
        events: vec![],
        refused: None,
        presence_ttl_s: a.presence_ttl.as_secs_f64(),
    }
}

/// The clients of one cluster: threads, their shared counters, their bound.
struct Clients {
    shared: Arc<Shared>,
    handles: Vec<std::thread::JoinHandle<ClientLog>>,
}

impl Clients {
    /// Client i starts on node i mod n.
    fn spawn(n: u64, addrs: &[SocketAddr], until: Instant) -> anyhow::Result<Clients> {
        let shared = Arc::new(Shared::default());
        let mut handles = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            let (sh, addrs) = (shared.clone(), addrs.to_vec());
            let home = i % addrs.len();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("cluster-client-{i}"))
                    .stack_size(256 << 10)
                    .spawn(move || client::run(home, &addrs, &sh, until))?,
            );
        }
        Ok(Clients { shared, handles })
    }

    /// Wait until every client connected or failed; (connected, first errors).
    fn wait_connected(&self, limit: Duration, label: &str) -> anyhow::Result<u64> {
        let total = self.handles.len() as u64;
        let pb = progress_bar(total, format!("{label}: connecting"));
        let until = Instant::now() + limit;
        loop {
            check_interrupted()?;
            let (ok, failed) = (
                self.shared.connected_now.load(SeqCst),
                self.shared.failed.load(SeqCst),
            );
            pb.set_position(ok + failed);
            if ok + failed >= total || Instant::now() > until {
                pb.finish_and_clear();
                return Ok(ok);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn finish(self) -> Vec<ClientLog> {
        self.shared.stop.store(true, SeqCst);
        self.handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| ClientLog {
                    error: Some("client thread panicked".into()),
                    ..ClientLog::default()
                })
            })
            .collect()
    }
}

/// One counter from a node's /metrics (Prometheus text: `name value`).
pub fn metric(addr: SocketAddr, name: &str) -> Option<u64> {
    let (code, body) = control::request(addr, "GET", "/metrics").ok()?;
    parse_metric(&body, name).filter(|_| code == 200)
}

pub fn parse_metric(body: &str, name: &str) -> Option<u64> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

fn spec_for(k: Kind, a: &ClusterOptions, redis: Option<&Redis>) -> NodeSpec {
    NodeSpec {
        redis: redis.filter(|_| k.uses_redis()).map(|r| r.url()),
        path: if k == Kind::Naive {
            "naive"
        } else {
            "one-path"
        },
        presence: "ttl",
        presence_ttl: a.presence_ttl,
        publish: true,
        rounds: a.rounds,
        rate: a.rate,
        size: a.size,
        redis_prefix: a.redis_prefix.clone().unwrap_or_default(),
    }
}

/// One scenario: its nodes up, the clients connected, the fault played while the
/// publisher runs, then everything stopped and accounted ([`settle`]).
fn run_one(
    k: Kind,
    a: &ClusterOptions,
    mut redis: Option<&mut Redis>,
) -> anyhow::Result<ClusterScenario> {
    if let Some(why) = cannot_run(k, redis.as_deref()) {
        return Ok(could_not_run(k, a, &anyhow::anyhow!(why)));
    }
    let scratch = Scratch::new(&format!("cluster-{}", k.name()))?;
    let n = if k == Kind::Single { 1 } else { a.nodes };
    let spec = spec_for(k, a, redis.as_deref());
    let mut nodes = nodes::start(&spec, n as usize, &scratch)?;
    let addrs: Vec<SocketAddr> = nodes.iter().map(|n| n.addr).collect();
    let schedule = Duration::from_secs_f64(a.rounds as f64 / a.rate);
    let clients = Clients::spawn(a.connections, &addrs, Instant::now() + life(k, a, schedule))?;
    let connected = clients.wait_connected(a.connect_timeout, k.name())?;
    let mut events = Vec::new();
    if k == Kind::NodeKill {
        events.extend(wait_presence(addrs[0], connected));
    }
    let t0 = Instant::now();
    let cpu0 = cpu_seconds();
    control::start(addrs[0], a.rounds)?;
    let mut fault = Fault::for_kind(k, schedule, &spec, &scratch);
    let last_stats = watch(
        k,
        a,
        &mut nodes,
        redis.as_deref_mut(),
        &clients.shared,
        &mut fault,
        &mut events,
        t0,
    )?;
    let (wall_s, cpu_s) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let ran = Ran {
        clients,
        fault,
        addrs,
        connected,
        events,
        last_stats,
        wall_s,
        cpu_s,
        t0,
    };
    settle(k, a, ran, &mut nodes, redis.as_deref(), &scratch)
}

/// What one scenario's run leaves to account.
struct Ran {
    clients: Clients,
    fault: Fault,
    /// The nodes' addresses as started (the publisher is the first).
    addrs: Vec<SocketAddr>,
    connected: u64,
    events: Vec<String>,
    last_stats: Option<ServerStats>,
    wall_s: f64,
    cpu_s: f64,
    t0: Instant,
}

/// After the run: the clients' logs, what was published, the ghosts a killed node left,
/// every node stopped and its port checked; then the scenario judged.
fn settle(
    k: Kind,
    a: &ClusterOptions,
    r: Ran,
    nodes: &mut [Node],
    redis: Option<&Redis>,
    scratch: &Scratch,
) -> anyhow::Result<ClusterScenario> {
    let logs = r.clients.finish();
    let publish_failures = redis_publish_failures(k, r.addrs[0]);
    let published = published_in_run(k, a.rounds, r.last_stats.as_ref(), publish_failures);
    let ghosts = match r.fault {
        Fault::Kill { watch, .. } => kill_ghosts(watch, a, redis, scratch)?,
        _ => Vec::new(),
    };
    let nodes_clean = nodes::stop_all(nodes);
    let leftover = nodes::still_listening(&r.addrs);
    let (tally, connect_errors) = account_logs(k, logs, published, nodes);
    let inp = Inputs {
        tally,
        connected: r.connected,
        connect_errors,
        published,
        publish_failures,
        cpu_s: r.cpu_s,
        wall_s: r.wall_s,
        nodes_clean,
        leftover,
        ghosts,
        events: r.events,
        ..empty_inputs(k, a)
    };
    let elapsed = r.t0.elapsed().as_secs_f64();
    Ok(validity::analyze(k.name(), k.describe(), inp, elapsed))
}

/// The clients' logs as one history accounted per node against what was published,
/// and their first three errors.
fn account_logs(
    k: Kind,
    logs: Vec<ClientLog>,
    published: u64,
    nodes: &[Node],
) -> (account::Tally, Vec<String>) {
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let (logs, span) = history(k, logs, published);
    let errors = logs
        .iter()
        .filter_map(|l| l.error.clone())
        .take(3)
        .collect();
    (account::tally(&logs, span, &names), errors)
}

/// Pure: why a scenario cannot run here: a restart stops and starts Redis, which only
/// the redis-server rtcheck started may be.
fn cannot_run(k: Kind, redis: Option<&Redis>) -> Option<String> {
    let restarts = matches!(k, Kind::RedisRestart | Kind::DeployRestart);
    (restarts && !matches!(redis, Some(Redis::Ours(_)))).then(|| {
        format!(
            "{} stops and starts Redis: it needs the redis-server rtcheck starts (run without --redis)",
            k.name()
        )
    })
}

/// Publishes to Redis that failed, as the first node counted them (none without Redis).
fn redis_publish_failures(k: Kind, addr: SocketAddr) -> u64 {
    match k.uses_redis() {
        true => metric(addr, "rtcheck_redis_publish_failures_total").unwrap_or(0),
        false => 0,
    }
}

/// Pure: how long the clients may live: connecting, the schedule, a restart's extra, the
/// drain, the ghosts' watch, and 30 s to spare.
fn life(k: Kind, a: &ClusterOptions, schedule: Duration) -> Duration {
    a.connect_timeout
        + schedule
        + restart_extra(k, schedule)
        + a.drain
        + ghost_bound(a.presence_ttl)
        + Duration::from_secs(30)
}

/// After a kill: the presence series seen, and the same kill with `--presence events`
/// watched as long (until it cleared, at least the presence TTL, 2 s more).
fn kill_ghosts(
    watch: GhostWatch,
    a: &ClusterOptions,
    redis: Option<&Redis>,
    scratch: &Scratch,
) -> anyhow::Result<Vec<GhostSeries>> {
    let series = watch.series(1.0);
    let window = series
        .cleared_after_s
        .map(|c| c + 2.0)
        .unwrap_or(0.0)
        .max(a.presence_ttl.as_secs_f64() + 2.0);
    let events = events_ghosts(a, redis, Duration::from_secs_f64(window), scratch)?;
    Ok(vec![series, events])
}

/// Pure: the clients' logs as one history and the seq span to account: a deploy
/// restart's two epochs joined (the new one's seqs after the old one's highest).
fn history(k: Kind, logs: Vec<ClientLog>, published: u64) -> (Vec<ClientLog>, (u64, u64)) {
    match k {
        Kind::DeployRestart => {
            let (joined, shift) = account::join_epochs(&logs);
            let lo = account::span(&joined, 0).0;
            (joined, (lo, shift + published))
        }
        _ => {
            let span = account::span(&logs, published);
            (logs, span)
        }
    }
}

/// Before a kill: wait (up to 5 s) until presence counts every client, so ghosts measure
/// the kill and not a slow start; a note when it never did.
fn wait_presence(addr: SocketAddr, connected: u64) -> Option<String> {
    let until = Instant::now() + Duration::from_secs(5);
    let mut last = None;
    while Instant::now() < until && !interrupted() {
        last = presence_online(addr);
        if last == Some(connected) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(format!(
        "before the kill /presence said {} online for {connected} connected clients",
        last.map(|v| v.to_string())
            .unwrap_or_else(|| "nothing".into())
    ))
}

/// Follow the run until node a published every round and deliveries went quiet (or the
/// time bound), acting the fault on time. Returns node a's last stats.
#[allow(clippy::too_many_arguments)]
fn watch(
    k: Kind,
    a: &ClusterOptions,
    nodes: &mut [Node],
    mut redis: Option<&mut Redis>,
    sh: &Shared,
    fault: &mut Fault,
    events: &mut Vec<String>,
    t0: Instant,
) -> anyhow::Result<Option<ServerStats>> {
    let schedule = Duration::from_secs_f64(a.rounds as f64 / a.rate);
    // Recovery (resume, reconnect with backoff) may deliver in bursts: a longer quiet.
    let quiet = if matches!(k, Kind::NodeKill | Kind::RedisRestart | Kind::DeployRestart) {
        Duration::from_secs(2)
    } else {
        Duration::from_millis(500)
    };
    let pb = progress_bar(a.rounds, format!("{}: rounds", k.name()));
    let (mut done, mut last_recv, mut last_change) = (false, 0u64, Instant::now());
    let mut next_stats = Instant::now();
    loop {
        check_interrupted()?;
        let t = t0.elapsed();
        fault.step(t, nodes, redis.as_deref_mut(), sh, events)?;
        pb.set_position(((t.as_secs_f64() * a.rate) as u64).min(a.rounds));
        if Instant::now() >= next_stats {
            next_stats = Instant::now() + Duration::from_millis(250);
            done = control::stats(nodes[0].addr).is_ok_and(|s| s.finished);
        }
        let recv = sh.received.load(SeqCst);
        if recv != last_recv {
            (last_recv, last_change) = (recv, Instant::now());
        }
        let settled = done && last_change.elapsed() >= quiet;
        let pending = fault.pending(a.presence_ttl);
        let limit = schedule + restart_extra(k, schedule) + a.drain + ghost_bound(a.presence_ttl);
        if (settled && !pending) || t > limit {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    pb.finish_and_clear();
    Ok(control::stats(nodes[0].addr).ok())
}

/// Rounds node a published in this run. Alone: its rounds_sent. In a cluster rounds_sent
/// is the highest global seq (a long-lived Redis continues from earlier runs) and naive
/// counts a round twice, so: the rounds its schedule handed over (all, once finished)
/// minus those it counted as not published.
pub fn published_in_run(k: Kind, rounds: u64, stats: Option<&ServerStats>, failures: u64) -> u64 {
    match (k, stats) {
        (_, None) => 0,
        (Kind::Single, Some(s)) => s.rounds_sent.min(rounds),
        (_, Some(s)) if s.finished => rounds.saturating_sub(failures),
        (_, Some(_)) => 0,
    }
}

/// The same kill with `--presence events` (join/leave over pub/sub): idle clients, no
/// publishing, presence watched for `window` after the kill.
fn events_ghosts(
    a: &ClusterOptions,
    redis: Option<&Redis>,
    window: Duration,
    scratch: &Scratch,
) -> anyhow::Result<GhostSeries> {
    let dir = Scratch(scratch.0.join("events"));
    std::fs::create_dir_all(&dir.0)?;
    let spec = NodeSpec {
        presence: "events",
        publish: false,
        ..spec_for(Kind::NodeKill, a, redis)
    };
    let mut nodes = nodes::start(&spec, a.nodes as usize, &dir)?;
    let addrs: Vec<SocketAddr> = nodes.iter().map(|n| n.addr).collect();
    let until = Instant::now() + a.connect_timeout + window + Duration::from_secs(30);
    let clients = Clients::spawn(a.connections, &addrs, until)?;
    let connected = clients.wait_connected(a.connect_timeout, "node-kill (events)")?;
    let _ = wait_presence(addrs[0], connected);
    let mut w = GhostWatch::new("events");
    nodes.last_mut().expect("at least two nodes").kill();
    w.kill_at = Instant::now();
    while w.kill_at.elapsed() < window {
        check_interrupted()?;
        w.sample(addrs[0], &clients.shared);
        std::thread::sleep(Duration::from_millis(20));
    }
    clients.finish();
    nodes::stop_all(&mut nodes);
    Ok(w.series(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A restart needs the Redis rtcheck started; other scenarios run on any.
    #[test]
    fn restarts_need_rtchecks_own_redis() {
        let why = cannot_run(Kind::RedisRestart, None).unwrap();
        assert!(why.contains("run without --redis"), "{why}");
        assert!(cannot_run(Kind::DeployRestart, None).is_some());
        assert_eq!(cannot_run(Kind::OnePath, None), None);
    }

    #[test]
    fn metrics_counters_are_read_by_exact_name() {
        let body = "# HELP x\nrtcheck_redis_publish_failures_total 2\nrtcheck_redis_publish_failures_total_x 9\n";
        assert_eq!(
            parse_metric(body, "rtcheck_redis_publish_failures_total"),
            Some(2)
        );
        assert_eq!(parse_metric(body, "rtcheck_redis_up"), None);
        assert_eq!(ghost_bound(Duration::from_secs(3)), Duration::from_secs(11));
    }

    #[test]
    fn published_counts_this_run_not_the_global_seq() {
        let s = |sent, finished| ServerStats {
            rounds_sent: sent,
            finished,
            ..ServerStats::default()
        };
        // A Redis that served earlier runs: the highest seq is far above the rounds.
        assert_eq!(
            published_in_run(Kind::OnePath, 60, Some(&s(238, true)), 2),
            58
        );
        assert_eq!(
            published_in_run(Kind::Naive, 60, Some(&s(120, true)), 0),
            60
        );
        assert_eq!(
            published_in_run(Kind::OnePath, 60, Some(&s(30, false)), 0),
            0
        );
        assert_eq!(
            published_in_run(Kind::Single, 60, Some(&s(60, true)), 0),
            60
        );
        assert_eq!(published_in_run(Kind::Single, 60, None, 0), 0);
    }
}
