//! `rtcheck bench fanout`: for each scenario, start the embedded server in its own process
//! (or use --server), start the load generator in another, drive both, and judge the result.
use super::model::{BenchReport, Check, ScenarioResult};
use super::publisher::PublishVia;
use super::scenario::{self, ForeignRun, Scenario};
use super::shape::{HubMemory, Memory};
use super::target::{self, Proto};
use super::validity::{self, Inputs};
use super::wire::{Event, LoadgenResult, CMD_CLOSE_SLOW, CMD_CUTOFF, CMD_PUBLISH, CMD_STOP};
use super::{check_interrupted, INTERRUPTED};
use crate::findings::Status;
use crate::sys::control;
use crate::sys::procwatch::{Sampler, ServerProcess};
use indicatif::{ProgressBar, ProgressStyle};
use rtcheck_base::os::child::ChildGuard;
use rtcheck_base::os::{clock, limits, signal};
use rtcheck_wire::stats::ServerStats;
use std::io::{BufRead, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What `bench fanout` runs (the command layer fills it from its flags).
#[derive(Debug, Clone)]
pub struct FanoutOptions {
    /// Clients.
    pub connections: u64,
    /// Messages per client (one per round).
    pub rounds: u64,
    /// Payload bytes per message (at least 16).
    pub size: u64,
    /// Rounds per second.
    pub rate: f64,
    /// Slow clients in C1, C2, C3 (default 50; with --server, none unless given).
    pub slow: Option<u64>,
    /// The listed scenarios (F is added first unless `no_floor`).
    pub scenario: scenario::ScenarioList,
    pub no_floor: bool,
    /// Another server to measure (ws(s)://HOST:PORT/PATH on loopback, or through
    /// `connect_to`) instead of scenarios.
    pub server: Option<String>,
    /// `--pid`: the server's processes to sample (empty: found by the listening port).
    pub pids: Vec<u32>,
    /// Longest wait for all clients to connect.
    pub connect_timeout: Duration,
    /// How long to wait past the last scheduled round for stragglers.
    pub drain: Duration,
    /// `--server` with `--scenario A,C`; empty: the one run with --slow slow clients.
    pub foreign: Vec<ForeignRun>,
    /// The foreign server's way to publish, and its message format.
    pub publish: PublishVia,
    pub message: Option<String>,
    pub subscribe: Option<String>,
    pub seq_path: Option<String>,
    pub ts_path: Option<String>,
    /// `-H 'Name: value'` for `--publish POST` (secrets: never printed, never on argv).
    pub headers: Vec<String>,
    /// `--transport sse`: the clients are SSE subscribers of `--server http://...`.
    pub sse: bool,
    /// `--connect-to`: where every socket goes (loopback) while `server` keeps its name.
    pub connect_to: Option<SocketAddr>,
    /// `--ca`: what wss:// and https:// clients trust beyond webpki's roots.
    pub ca: Option<std::path::PathBuf>,
    /// `--app-protocol` (None: detected from --server's URL) and `--channel`/`--event`.
    pub app_protocol: Option<rtcheck_wire::appproto::AppProtocol>,
    pub app_sub: rtcheck_wire::appproto::Subscribe,
    /// `connect_to` is `--server`'s own remote address, by `--allow-remote` (issue 37).
    pub remote: bool,
    /// `--shard I/N`: `connections` and `slow` are already this shard's share.
    pub shard: Option<super::shard::Shard>,
    /// `--start-at`: publishing (and watching) starts then, ns since the epoch.
    pub start_at_ns: Option<u64>,
    /// `--publisher-shard`: the one shard that publishes (default 1).
    pub publisher_shard: u32,
    /// `--coordinate redis://...` and its `--run-id`: barrier, start time, clock offsets.
    pub coordinate: Option<String>,
    pub run_id: String,
    /// `--source-ip`: local addresses the clients bind, round-robin.
    pub sources: super::target::Sources,
}

/// One run: a scenario on the embedded server, or a run on `--server`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Run {
    Embedded(Scenario),
    External(Option<ForeignRun>),
}

impl Run {
    fn scenario(self) -> Option<Scenario> {
        match self {
            Run::Embedded(s) => Some(s),
            Run::External(_) => None,
        }
    }

    fn foreign(self) -> Option<ForeignRun> {
        match self {
            Run::External(f) => f,
            Run::Embedded(_) => None,
        }
    }
}

pub const DEFAULT_SLOW: u64 = 50;

impl FanoutOptions {
    /// The runs in order: F first (added unless --no-floor), then the listed scenarios.
    pub fn scenarios(&self) -> Vec<Scenario> {
        let mut v = self.scenario.0.clone();
        if !self.no_floor && !v.contains(&Scenario::F) {
            v.insert(0, Scenario::F);
        }
        v
    }

    /// The runs: the scenarios, or the `--server` runs.
    pub fn runs(&self) -> Vec<Run> {
        match (&self.server, self.foreign.is_empty()) {
            (None, _) => self.scenarios().into_iter().map(Run::Embedded).collect(),
            (Some(_), true) => vec![Run::External(None)],
            (Some(_), false) => self
                .foreign
                .iter()
                .map(|f| Run::External(Some(*f)))
                .collect(),
        }
    }

    /// Slow clients in a run: C on `--server` has --slow or the default.
    pub fn slow_in(&self, run: Run) -> u64 {
        match run {
            Run::External(Some(ForeignRun::A)) => 0,
            Run::External(Some(ForeignRun::C)) => self.slow.unwrap_or(DEFAULT_SLOW),
            r => self.slow_for(r.scenario()),
        }
    }

    /// Slow clients for a scenario (None = --server run).
    pub fn slow_for(&self, sc: Option<Scenario>) -> u64 {
        match sc {
            Some(s) if s.has_slow_clients() => self.slow.unwrap_or(DEFAULT_SLOW),
            Some(_) => 0,
            None => self.slow.unwrap_or(0),
        }
    }
}

/// Longest planned publishing schedule (rounds / rate) a run may have: one hour.
pub const MAX_SCHEDULE_S: f64 = 3600.0;

/// The publishing schedule's flags, shared by `bench fanout` and `bench cluster`: rounds
/// (1 ..= `max_rounds`), payload size, rate, and rounds / rate within `max_schedule_s`.
pub fn check_schedule(
    rounds: u64,
    max_rounds: u64,
    size: u64,
    rate: f64,
    max_schedule_s: f64,
) -> anyhow::Result<()> {
    use rtcheck_base::units::out_of_bounds as oob;
    if rounds == 0 || rounds > max_rounds {
        anyhow::bail!(oob("--rounds", rounds, 1, max_rounds, ""));
    }
    let min = rtcheck_wire::payload::MIN_SIZE as u64;
    if size < min || size > 1 << 20 {
        // The payload carries seq and timestamp in its first 16 bytes.
        anyhow::bail!(oob("--size", size, min, 1 << 20, "bytes"));
    }
    if !(rate > 0.0 && rate <= 1000.0) {
        anyhow::bail!(oob("--rate", rate, "0 (excluded)", 1000, "rounds/s"));
    }
    // A tiny rate plans a run of years (and 1e-300 overflows the server's clock math).
    let schedule_s = rounds as f64 / rate;
    if !schedule_s.is_finite() || schedule_s > max_schedule_s {
        anyhow::bail!(
            "--rounds {rounds} at --rate {rate}: the run would take {schedule_s:.0} s; the bound is {max_schedule_s:.0} s (rounds / rate)"
        );
    }
    Ok(())
}

pub fn validate(a: &FanoutOptions) -> anyhow::Result<()> {
    if a.connections == 0 {
        anyhow::bail!("--connections must be at least 1");
    }
    check_schedule(a.rounds, 1_000_000, a.size, a.rate, MAX_SCHEDULE_S)?;
    for run in a.runs() {
        let slow = a.slow_in(run);
        if slow > 0 && slow >= a.connections {
            anyhow::bail!(
                "--slow {slow} must be below --connections {}",
                a.connections
            );
        }
    }
    if let Some(s) = a.shard {
        if a.server.is_none() {
            anyhow::bail!("--shard goes with --server (each shard loads the same server)");
        }
        if a.coordinate.is_some() && a.start_at_ns.is_some() {
            anyhow::bail!(
                "--coordinate sets the start time itself: give it or --start-at, not both"
            );
        }
        if s.count > 1 && a.start_at_ns.is_none() && a.coordinate.is_none() {
            anyhow::bail!("--shard {s}: the shards start together only at --start-at TIME (unix seconds or RFC 3339), the same on every shard");
        }
        if a.publisher_shard == 0 || a.publisher_shard > s.count {
            anyhow::bail!(
                "--publisher-shard {}: must be 1..={} (one of the --shard {s} shards)",
                a.publisher_shard,
                s.count
            );
        }
    } else if a.start_at_ns.is_some() || a.coordinate.is_some() {
        anyhow::bail!("--start-at and --coordinate go with --shard I/N");
    }
    if let Some(at) = a.start_at_ns {
        let now = clock::now_ns();
        if at.saturating_add(1_000_000_000) < now || at > now.saturating_add(3_600_000_000_000) {
            anyhow::bail!(
                "--start-at: must be within the next hour (it is {:.0} s from now)",
                (at as f64 - now as f64) / 1e9
            );
        }
    }
    if !a.sources.0.is_empty() {
        let Some(to) = a.connect_to.or_else(|| {
            a.server
                .as_deref()
                .and_then(|u| target::parse(u, None).ok())
                .map(|t| t.addr)
        }) else {
            anyhow::bail!("--source-ip goes with --server (the embedded server is on loopback)");
        };
        if let Some(ip) = a.sources.0.iter().find(|ip| ip.is_ipv4() != to.is_ipv4()) {
            anyhow::bail!("--source-ip {ip}: not the address family of the target {to}");
        }
    }
    if a.server.is_none() && !a.pids.is_empty() {
        anyhow::bail!("--pid goes with --server (the server rtcheck did not start)");
    }
    if let Some(p) = a
        .pids
        .iter()
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).is_dir())
    {
        anyhow::bail!("--pid {p}: no such process");
    }
    let server_tls = match &a.server {
        Some(url) => validate_server(url, a)?,
        None if a.connect_to.is_some() || a.ca.is_some() => {
            anyhow::bail!("--connect-to and --ca go with --server (a foreign server)")
        }
        None => false,
    };
    if a.ca.is_some() && !server_tls && !a.publish.is_tls() {
        anyhow::bail!("--ca applies to wss:// and https://");
    }
    if a.ca.is_some() {
        crate::sys::tls::client_config(&trust(a), &[])?;
    }
    a.publish.post(a.connect_to, &trust(a))?;
    validate_publish(a)?;
    let (_, hard) = limits::raise_nofile_to_hard()?;
    limits::check_fd_budget(a.connections, hard)?;
    Ok(())
}

/// `--server URL`: its form for the transport, where it goes, and what may publish to
/// it; whether it is TLS.
fn validate_server(url: &str, a: &FanoutOptions) -> anyhow::Result<bool> {
    let t = target::parse(url, a.connect_to)?;
    let (want, form) = if a.sse {
        (
            Proto::Sse,
            "--transport sse: expected http(s)://HOST:PORT/PATH",
        )
    } else {
        (
            Proto::Ws,
            "expected ws(s)://HOST:PORT/PATH (or --transport sse)",
        )
    };
    if t.proto != want {
        anyhow::bail!("--server {}: {form}", rtcheck_base::redact::url(url));
    }
    if let (true, PublishVia::Post { url: post }) = (a.remote, &a.publish) {
        let (s, p) = (target::parse_url(url)?, target::parse_url(post)?);
        if !target::same_host_port(&s, &p) {
            anyhow::bail!(
                "--publish POST {}: with --allow-remote it goes to --server's host and port ({})",
                p.shown,
                s.authority
            );
        }
    }
    if t.tls && a.publish == PublishVia::Server {
        anyhow::bail!("--server {}: --publish server drives rtcheck's /control plane in plain HTTP; through TLS, publish with --publish ws or 'POST URL'", rtcheck_base::redact::url(url));
    }
    if a.connect_to.is_some() && !a.remote && a.publish == PublishVia::Server {
        anyhow::bail!("--connect-to: --publish server drives rtcheck's own /control plane, which is loopback-only and plain; publish with --publish ws or 'POST URL'");
    }
    Ok(t.tls)
}

/// The publishing flags: only with --server; a template that carries seq and ts (or the
/// paths to find them) and fits --size; headers only for POST, well-formed.
fn validate_publish(a: &FanoutOptions) -> anyhow::Result<()> {
    let foreign_flags = a.publish != PublishVia::Server
        || a.message.is_some()
        || a.subscribe.is_some()
        || a.seq_path.is_some()
        || a.app_protocol.is_some()
        || a.app_sub != Default::default()
        || !a.headers.is_empty();
    if a.server.is_none() && (foreign_flags || !a.foreign.is_empty()) {
        anyhow::bail!("--publish, --message, --subscribe, --seq-path, --ts-path, -H, --app-protocol, --channel and --event go with --server (a foreign server)");
    }
    if a.publish == PublishVia::Server && (a.message.is_some() || !a.headers.is_empty()) {
        anyhow::bail!("--message and -H are what rtcheck publishes: they need --publish ws or --publish 'POST URL'");
    }
    if !a.headers.is_empty() && !matches!(a.publish, PublishVia::Post { .. }) {
        anyhow::bail!("-H goes with --publish 'POST URL'");
    }
    if a.sse && a.publish == PublishVia::Ws {
        anyhow::bail!(
            "--transport sse: SSE clients cannot publish; use --publish 'POST URL' or server"
        );
    }
    if a.sse && (a.app_protocol.is_some() || a.app_sub != Default::default()) {
        anyhow::bail!(
            "--transport sse: --app-protocol, --channel and --event are for WebSocket clients"
        );
    }
    if a.sse && a.subscribe.is_some() {
        anyhow::bail!("--transport sse: an SSE client sends nothing after connecting; put the channel in the --server URL");
    }
    for h in &a.headers {
        super::publisher::parse_header(h).map_err(anyhow::Error::msg)?;
    }
    let (t, _) = super::template::message_and_decoder(
        a.message.as_deref(),
        a.seq_path.as_deref(),
        a.ts_path.as_deref(),
        a.sse,
    )
    .map_err(anyhow::Error::msg)?;
    if a.publish != PublishVia::Server && t.min_len() as u64 > a.size {
        anyhow::bail!(
            "--message: the template is up to {} bytes before padding, above --size {}",
            t.min_len(),
            a.size
        );
    }
    Ok(())
}

/// What the TLS clients trust (`--ca`).
fn trust(a: &FanoutOptions) -> crate::sys::tls::Trust {
    crate::sys::tls::Trust::with_ca(a.ca.clone())
}

/// One TCP connect to --server (and its TLS handshake on wss/https) before anything
/// starts: a refused or unreachable server, or a certificate not trusted (the server's
/// or an https:// POST target's), is one line at once, not a report of nothing.
fn probe(url: &str, a: &FanoutOptions) -> anyhow::Result<()> {
    let s = super::publisher::Endpoint::new(url, a.connect_to, &trust(a))?;
    let addr = s.target.addr;
    let limit = a
        .connect_timeout
        .min(Duration::from_secs(5))
        .max(Duration::from_millis(100));
    let shown = rtcheck_base::redact::url(url);
    if let Some(p) = a.publish.post(a.connect_to, &trust(a))? {
        p.check_tls(limit)
            .map_err(|e| anyhow::anyhow!("--publish {}: {e}", a.publish.name()))?;
    }
    if s.tls.is_some() {
        return s
            .check_tls(limit)
            .map_err(|e| anyhow::anyhow!("--server {shown}: {e}"));
    }
    std::net::TcpStream::connect_timeout(&addr, limit)
        .map(drop)
        .map_err(|e| anyhow::anyhow!("--server {shown}: cannot connect to {addr}: {e}"))
}

/// With `--allow-remote`, what will be sent, said before anything is (issue 37): the
/// target (redacted) and its address, connections, rate, the runs' length and bound, and
/// the bytes planned. None on loopback.
pub fn remote_plan(a: &FanoutOptions) -> Option<String> {
    use rtcheck_base::units::{fmt_bytes, fmt_thousands};
    let (url, addr) = (a.server.as_deref()?, a.connect_to?);
    if !a.remote {
        return None;
    }
    let runs = a.runs().len() as u64;
    let schedule_s = a.rounds as f64 / a.rate;
    let bound_s = runs as f64 * (Schedule::new(a, a.slow.unwrap_or(0)).bound_s);
    // In u128, saturating: connections x rounds x size x runs overflows a u64; a plan
    // beyond what can be counted is shown saturated, never wrapped.
    let wide = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
    let (c, n, sz, r) = (
        u128::from(a.connections),
        u128::from(a.rounds),
        u128::from(a.size),
        u128::from(runs),
    );
    let published = match a.publish {
        PublishVia::Server => 0,
        _ => n.saturating_mul(sz).saturating_mul(r),
    };
    let received = c.saturating_mul(n).saturating_mul(sz).saturating_mul(r);
    let (planned, published) = (wide(received.saturating_add(published)), wide(published));
    Some(format!(
        "remote target {} ({addr}): {} connections, {} msg/s, {schedule_s:.0} s x {runs} run(s) \
         (bound {bound_s:.0} s); planned {} ({} x {} x {} B received, {} published); \
         Ctrl-C stops every connection",
        rtcheck_base::redact::url(url),
        fmt_thousands(a.connections),
        a.rate,
        fmt_bytes(planned),
        fmt_thousands(a.connections),
        fmt_thousands(a.rounds),
        fmt_thousands(a.size),
        fmt_bytes(published),
    ))
}

/// Run every scenario (or the one --server run) and judge each: the report every format
/// renders. Usage errors come before anything starts.
pub fn run(a: &FanoutOptions) -> anyhow::Result<BenchReport> {
    run_full(a).map(|(r, _)| r)
}

/// What a shard's result adds to a run: its histogram (V2 base64) and, coordinated, its
/// clock's offset.
pub type ShardExtra = (Option<String>, Option<super::shard::ClockOffset>);

/// [`run`], with each run's [`ShardExtra`].
pub fn run_full(a: &FanoutOptions) -> anyhow::Result<(BenchReport, Vec<ShardExtra>)> {
    validate(a)?;
    signal::install_interrupt_handler();
    let mut results = Vec::new();
    let mut hists = Vec::new();
    if let Some(url) = &a.server {
        probe(url, a)?;
    }
    for run in a.runs() {
        // Ctrl-C also reaches the children, whose exit then looks like a failure: the
        // interrupt is the cause to report.
        let (r, h) = match run_one(run, a) {
            Err(_) if signal::interrupted() => return Err(signal::Interrupted(INTERRUPTED).into()),
            r => r?,
        };
        results.push(r);
        hists.push(h);
        check_interrupted()?;
    }
    validity::apply_floor(&mut results, Scenario::F.name());
    let report = BenchReport {
        command: "bench fanout".into(),
        server: a.server.as_deref().map_or_else(
            || "embedded (rtcheck serve)".into(),
            rtcheck_base::redact::url,
        ),
        connections: a.connections,
        rounds: a.rounds,
        size: a.size,
        rate: a.rate,
        slow: a
            .slow
            .unwrap_or(if a.server.is_some() { 0 } else { DEFAULT_SLOW }),
        host_cores: clock::cores(),
        valid: results.iter().all(|r| r.valid),
        scenarios: results,
        app_protocol: spoken(a).map(|(_, s)| s),
    };
    Ok((report, hists))
}

/// `--coordinate`: connected, this host's clock against Redis's, and the correction
/// (us) its receivers add (its offset minus the publishing shard's).
#[cfg(feature = "redis")]
type Coord = (
    super::coordinate::Coordinator,
    super::shard::ClockOffset,
    i64,
);
#[cfg(not(feature = "redis"))]
type Coord = (NoRedis, super::shard::ClockOffset, i64);

/// Without the redis feature `--coordinate` is refused by the command layer.
#[cfg(not(feature = "redis"))]
pub struct NoRedis;
#[cfg(not(feature = "redis"))]
impl NoRedis {
    fn clear(&mut self) {}
}

#[cfg(feature = "redis")]
fn coordinate(a: &FanoutOptions) -> anyhow::Result<Option<Coord>> {
    let Some(url) = &a.coordinate else {
        return Ok(None);
    };
    let mut c = super::coordinate::Coordinator::connect(url, &a.run_id)?;
    let own = c.clock()?;
    let publisher = c.publisher_offset(&own, publishes(a), a.connect_timeout)?;
    Ok(Some((
        c,
        own,
        super::coordinate::correction_us(&own, publisher),
    )))
}

#[cfg(not(feature = "redis"))]
fn coordinate(a: &FanoutOptions) -> anyhow::Result<Option<Coord>> {
    match a.coordinate {
        Some(_) => anyhow::bail!("--coordinate needs the redis feature"),
        None => Ok(None),
    }
}

#[cfg(feature = "redis")]
fn barrier(
    c: &mut super::coordinate::Coordinator,
    own: &super::shard::ClockOffset,
    a: &FanoutOptions,
) -> anyhow::Result<u64> {
    let n = a.shard.map_or(1, |s| s.count);
    c.barrier(own, n, publishes(a), a.connect_timeout)
}

#[cfg(not(feature = "redis"))]
fn barrier(
    _: &mut NoRedis,
    _: &super::shard::ClockOffset,
    _: &FanoutOptions,
) -> anyhow::Result<u64> {
    anyhow::bail!("--coordinate needs the redis feature")
}

/// Whether this process publishes: always unsharded; else only the publisher shard.
fn publishes(a: &FanoutOptions) -> bool {
    a.shard.is_none_or(|s| s.index == a.publisher_shard)
}

/// `--start-at` (or the coordinated start): wait (Ctrl-C still stops it) until the
/// shards' common start. A start already past by more than a second is an error: this
/// shard would miss rounds.
fn wait_start(at: Option<u64>) -> anyhow::Result<()> {
    let Some(at) = at else {
        return Ok(());
    };
    loop {
        let now = clock::now_ns();
        if now >= at {
            if now - at > 1_000_000_000 {
                anyhow::bail!(
                    "--start-at passed {:.1} s before this shard's clients were connected (start later, or raise --connect-timeout's share)",
                    (now - at) as f64 / 1e9
                );
            }
            return Ok(());
        }
        check_interrupted()?;
        std::thread::sleep(Duration::from_nanos((at - now).min(100_000_000)));
    }
}

use crate::sys::serve::{tail, Scratch};

pub fn progress_bar(len: u64, msg: String) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:32} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(msg);
    pb
}

/// The embedded server for one scenario, started with --wait-start.
pub struct Server {
    pub guard: ChildGuard,
    pub data: SocketAddr,
    pub control: SocketAddr,
    pub log: PathBuf,
}

pub fn start_server(flags: &[String], scratch: &Scratch, raw: bool) -> anyhow::Result<Server> {
    let want = if raw { 2 } else { 1 };
    let wait = rtcheck_base::os::deadline::Deadline::new(crate::sys::serve::START_WAIT);
    let c = crate::sys::serve::start(flags, &scratch.0, want, &wait)?;
    Ok(Server {
        data: c.addrs[0],
        control: c.addrs[want - 1],
        guard: c.guard,
        log: c.log,
    })
}

/// The load generator process and its event stream.
pub struct Loadgen {
    pub guard: ChildGuard,
    pub stdin: std::process::ChildStdin,
    pub events: mpsc::Receiver<Result<Event, String>>,
    pub log: PathBuf,
}

/// Environment variable carrying the target URL to the load generator: its userinfo
/// and query values may be secrets, and argv is in every `ps`.
pub const LOADGEN_URL_ENV: &str = "RTCHECK_LOADGEN_URL";

pub fn start_loadgen(url: &str, args: &[String], scratch: &Scratch) -> anyhow::Result<Loadgen> {
    start_loadgen_env(url, args, scratch, &[])
}

/// The load generator on `url` (passed in [`LOADGEN_URL_ENV`]) with extra environment
/// (the publisher's headers: never argv).
pub fn start_loadgen_env(
    url: &str,
    args: &[String],
    scratch: &Scratch,
    env: &[(&str, String)],
) -> anyhow::Result<Loadgen> {
    let log = scratch.0.join("loadgen.log");
    let logf = std::fs::File::create(&log)?;
    let mut cmd = Command::new(rtcheck_base::os::child::exe()?);
    cmd.args(["bench", "loadgen"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(logf));
    // Only what this run passes: an RTCHECK_PUBLISH in the user's environment must not
    // start a publisher in an idle or embedded run.
    cmd.env_remove(super::publisher::PUBLISH_ENV)
        .env_remove(super::publisher::HEADERS_ENV);
    cmd.env(LOADGEN_URL_ENV, url);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut guard = ChildGuard::spawn(cmd, "the load generator process")?;
    let stdin = guard.child.stdin.take().expect("piped stdin");
    let stdout = guard.child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let ev = serde_json::from_str::<Event>(&line)
                .map_err(|e| format!("load generator: unreadable line ({e}): {line:.80}"));
            if tx.send(ev).is_err() {
                return;
            }
        }
    });
    Ok(Loadgen {
        guard,
        stdin,
        events: rx,
        log,
    })
}

impl Loadgen {
    pub fn send(&mut self, cmd: &str) {
        let _ = writeln!(self.stdin, "{cmd}");
        let _ = self.stdin.flush();
    }

    /// Next event within `wait`; Ok(None) on timeout; error when the process is gone.
    pub fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Event>> {
        match self.events.recv_timeout(wait) {
            Ok(Ok(ev)) => Ok(Some(ev)),
            Ok(Err(e)) => Err(anyhow::anyhow!(e)),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(anyhow::anyhow!(
                "load generator exited: {}",
                tail(&self.log, 3)
            )),
        }
    }

    /// Wait until every client connected (or failed). Returns (connected, failed).
    pub fn wait_connected(
        &mut self,
        total: u64,
        limit: Duration,
        label: &str,
    ) -> anyhow::Result<(u64, u64)> {
        let pb = progress_bar(total, format!("{label}: connecting"));
        let until = Instant::now() + limit;
        let out = loop {
            check_interrupted()?;
            if Instant::now() > until {
                pb.finish_and_clear();
                anyhow::bail!(
                    "{label}: clients not connected within {} (raise --connect-timeout or lower --connections)",
                    rtcheck_base::units::fmt_duration(limit)
                );
            }
            match self.next(Duration::from_millis(100))? {
                Some(Event::Connecting { done, .. }) => pb.set_position(done),
                Some(Event::Connected {
                    connected, failed, ..
                }) => break (connected, failed),
                _ => {}
            }
        };
        pb.finish_and_clear();
        Ok(out)
    }

    /// Send stop and wait for the result.
    pub fn finish(&mut self, limit: Duration) -> anyhow::Result<LoadgenResult> {
        self.send(CMD_STOP);
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Some(Event::Result(r)) = self.next(Duration::from_millis(200))? {
                return Ok(*r);
            }
        }
        anyhow::bail!(
            "load generator gave no result within {}",
            rtcheck_base::units::fmt_duration(limit)
        )
    }
}

fn run_one(run: Run, a: &FanoutOptions) -> anyhow::Result<(ScenarioResult, ShardExtra)> {
    let (sc, foreign) = (run.scenario(), run.foreign());
    let name = run_name(run);
    let scratch = Scratch::new(&format!("bench-{name}"))?;
    let slow = a.slow_in(run);
    let (mut server, url, ctrl) = target(sc, a, &scratch)?;
    let sched = Schedule::new(a, slow);
    let mut coord = coordinate(a)?;
    let args = shard_args(a, slow, &sched, coord.as_ref());
    let mut lg = start_loadgen_env(&url, &args, &scratch, &loadgen_env(a))?;
    let (connected, _failed) = lg.wait_connected(a.connections, a.connect_timeout, &name)?;
    let start_at = match coord.as_mut() {
        Some((c, own, _)) => Some(barrier(c, own, a)?),
        None => a.start_at_ns,
    };
    // A server rtcheck did not start: its own process, watched from outside.
    let watch = sc.is_none().then(|| process_watch(ctrl, a));
    wait_start(start_at)?;
    let t_pub = mark(&watch);
    let (stats_before, control) = start_publishing(a, sc, &name, ctrl, &mut lg)?;
    let healthy = connected.saturating_sub(slow);
    let mut w = watch_rounds(a, &mut lg, ctrl, healthy, &sched, &name, &stats_before)?;
    let t_bound = mark(&watch);
    let (at_bound, cutoff) = stop_at_bound(a, &mut lg, ctrl, slow, &sched, &w.last)?;
    let final_stats = final_stats(ctrl, &mut w, cutoff);
    let duration_s = w.t0.elapsed().as_secs_f64();
    // Frames already in flight when the snapshot was taken still arrive.
    std::thread::sleep(Duration::from_millis(300));
    let result = lg.finish(Duration::from_secs(30))?;
    let cleanup = stop_processes(&mut lg, server.as_mut());
    let mut r = validity::analyze(&Inputs {
        name: name.clone(),
        description: description(sc, foreign, &url, a),
        // A foreign hub that waits on slow clients is C's result, not a failure.
        stall_expected: sc
            .map(|s| s.stall_expected())
            .unwrap_or(foreign == Some(ForeignRun::C)),
        lg: &result,
        server: final_stats.as_ref(),
        server_cpu_start: stats_before.as_ref().map(|s| s.cpu_seconds),
        server_peak_rss: w.peak_rss,
        rounds_total: a.rounds,
        rate: a.rate,
        size: a.size,
        duration_s,
        time_bound_s: sched.bound_s,
        control,
    });
    r.checks.push(cleanup);
    r.rounds_published_at_bound = at_bound.as_ref().map(|s| s.rounds_sent);
    let (from, to) = (t_pub.unwrap_or(0.0), t_bound.unwrap_or(f64::MAX));
    let seen = watch.map(|w| w.map(|s| s.finish(from, to, from + sched.schedule_s)));
    let mem = add_server_process(&mut r, seen, result.removed_healthy);
    let at_bound = at_bound.as_ref().map(|s| s.rounds_sent);
    add_run_notes(&mut r, (sc, foreign), a, (slow, at_bound), &result, mem);
    if let (Some((c, _, _)), true) = (coord.as_mut(), publishes(a)) {
        c.clear();
    }
    Ok((r, (result.histogram, coord.map(|(_, own, _)| own))))
}

/// The load generator's arguments; a coordinated shard's clock correction added (and
/// said when beyond the tolerance).
fn shard_args(
    a: &FanoutOptions,
    slow: u64,
    sched: &Schedule,
    coord: Option<&Coord>,
) -> Vec<String> {
    let mut args = loadgen_args(a, slow, sched);
    if let Some((_, own, correction)) = coord {
        args.extend(clock_args(own, *correction));
        if !own.within_tolerance {
            eprintln!("shard clock: offset to the coordinator {:.1} ms +/- {:.1} ms: beyond the tolerance, this shard's result will make the merge invalid", own.offset_ms, own.uncertainty_ms);
        }
    }
    args
}

/// The server's process found by its control address (or --pid), sampled from outside.
fn process_watch(ctrl: SocketAddr, a: &FanoutOptions) -> Result<Sampler, String> {
    crate::sys::procwatch::find(ctrl, &a.pids)
        .map(|t| crate::sys::procwatch::Sampler::start(t, Duration::from_millis(250)))
}

/// The load generator and the embedded server stopped; whether each ended cleanly.
fn stop_processes(lg: &mut Loadgen, server: Option<&mut Server>) -> Check {
    let lg_clean = lg.guard.wait_or_terminate(Duration::from_secs(5));
    let srv_clean = server.map(|s| s.guard.terminate(Duration::from_secs(5)).1);
    cleanup_check(lg_clean, srv_clean)
}

/// Start the rounds: a shard that does not publish only reads the stats before; rtcheck
/// publishing to a foreign server has no control plane to ask (its publisher starts now);
/// else the server's control plane starts them. The stats before, and what it said.
fn start_publishing(
    a: &FanoutOptions,
    sc: Option<Scenario>,
    name: &str,
    ctrl: SocketAddr,
    lg: &mut Loadgen,
) -> anyhow::Result<(Option<ServerStats>, Option<validity::ControlSeen>)> {
    if !publishes(a) {
        Ok((control::stats(ctrl).ok(), None))
    } else if a.publish != PublishVia::Server && sc.is_none() {
        lg.send(CMD_PUBLISH);
        Ok((None, None))
    } else {
        begin(sc.is_some(), name, ctrl, a.rounds)
    }
}

/// The server's stats after the run (else the last seen), its rounds clamped to the
/// cutoff; its RSS counted in the peak.
fn final_stats(ctrl: SocketAddr, w: &mut Watch, cutoff: u64) -> Option<ServerStats> {
    let mut stats = control::stats(ctrl).ok().or(w.last.take());
    if let Some(s) = stats.as_mut() {
        s.rounds_sent = s.rounds_sent.min(cutoff);
        w.peak_rss = Some(w.peak_rss.unwrap_or(0).max(s.rss_bytes));
    }
    stats
}

/// Pure: the run's name in the report: the scenario's, else the foreign run's.
fn run_name(run: Run) -> String {
    match run {
        Run::Embedded(s) => s.name().to_string(),
        Run::External(Some(f)) => f.name().to_string(),
        Run::External(None) => "external".into(),
    }
}

/// Pure: the load generator's environment. What may hold secrets (a POST URL's query,
/// header values) goes there, not in its arguments. A shard that does not publish only
/// receives (the server or the publisher shard sends every round).
fn loadgen_env(a: &FanoutOptions) -> Vec<(&'static str, String)> {
    let via = if publishes(a) {
        &a.publish
    } else {
        &PublishVia::Server
    };
    let mut env = vec![(super::publisher::PUBLISH_ENV, via.arg())];
    if !a.headers.is_empty() {
        env.push((super::publisher::HEADERS_ENV, a.headers.join("\n")));
    }
    env
}

/// Pure: a coordinated shard's clock arguments. The correction is its own offset minus
/// the publisher's: its uncertainty is this shard's bound plus the publisher's, which is
/// not shared but must be within the tolerance (else the merge is invalid anyway).
fn clock_args(own: &super::shard::ClockOffset, correction: i64) -> [String; 4] {
    let uncertainty_us =
        ((own.uncertainty_ms + super::coordinate::TOLERANCE_MS) * 1000.0).ceil() as u64;
    [
        "--clock-correction-us".to_string(),
        correction.to_string(),
        "--clock-uncertainty-us".to_string(),
        uncertainty_us.to_string(),
    ]
}

/// Pure: what the run is, as the report describes it (the URL redacted).
fn description(
    sc: Option<Scenario>,
    foreign: Option<ForeignRun>,
    url: &str,
    a: &FanoutOptions,
) -> String {
    match (sc, foreign) {
        (Some(s), _) => s.describe().to_string(),
        (None, Some(f)) => format!(
            "{} (server {}, published via {})",
            f.describe(),
            rtcheck_base::redact::url(url),
            a.publish.name()
        ),
        (None, None) => format!("external server {}", rtcheck_base::redact::url(url)),
    }
}

/// The notes a result gets from what ran: the library's own queue when clients were
/// slow, C's shape on a foreign hub (with the memory seen, or why not), the scenario's
/// reference and shape notes (`at_bound`: rounds published at the time bound).
fn add_run_notes(
    r: &mut ScenarioResult,
    (sc, foreign): (Option<Scenario>, Option<ForeignRun>),
    a: &FanoutOptions,
    (slow, at_bound): (u64, Option<u64>),
    result: &super::wire::LoadgenResult,
    mem: Option<HubMemory>,
) {
    let queue = spoken(a).and_then(|(p, _)| super::appws::userland_queue(p));
    if let Some(q) = queue.filter(|_| slow > 0) {
        r.notes.push(q.to_string());
    }
    if foreign == Some(ForeignRun::C) {
        let why = r.server_unmeasured.clone().unwrap_or_default();
        let mem = mem.map_or(Memory::Unseen(&why), Memory::Seen);
        add_shape(r, &result.rounds, a, mem);
    }
    if let Some(s) = sc {
        r.reference = s.evidence().map(crate::evidence::reference);
        add_shape_notes(s, r, a, at_bound);
    }
}

/// Where the load goes: the scenario's own embedded server (started here), or `--server`.
/// Returns the server guard (None for an external one), the load URL and the control address.
fn target(
    sc: Option<Scenario>,
    a: &FanoutOptions,
    scratch: &Scratch,
) -> anyhow::Result<(Option<Server>, String, SocketAddr)> {
    let Some(s) = sc else {
        let url = a.server.clone().unwrap_or_default();
        let addr = target::parse(&url, a.connect_to)?.addr;
        return Ok((None, url, addr));
    };
    let mut flags = vec![
        "--wait-start".to_string(),
        "--rounds".into(),
        a.rounds.to_string(),
        "--rate".into(),
        a.rate.to_string(),
        "--size".into(),
        a.size.to_string(),
    ];
    flags.extend(s.server_flags());
    let srv = start_server(&flags, scratch, s.is_floor())?;
    let url = if s.is_floor() {
        format!("tcp://{}", srv.data)
    } else {
        format!("ws://{}/ws", srv.data)
    };
    let c = srv.control;
    Ok((Some(srv), url, c))
}

/// The run's timing: publishing schedule, drain, slow-client release, and the time bound.
struct Schedule {
    schedule_s: f64,
    drain_s: f64,
    slow_release_s: f64,
    bound_s: f64,
}

impl Schedule {
    fn new(a: &FanoutOptions, slow: u64) -> Schedule {
        let drain_s = a.drain.as_secs_f64();
        let slow_release_s = if slow > 0 { 1.5 } else { 0.0 };
        let schedule_s = a.rounds as f64 / a.rate;
        Schedule {
            schedule_s,
            drain_s,
            slow_release_s,
            bound_s: schedule_s + drain_s + slow_release_s,
        }
    }
}

/// The library protocol the clients speak on --server (WebSocket only), and why.
fn spoken(
    a: &FanoutOptions,
) -> Option<(rtcheck_wire::appproto::AppProtocol, super::appws::Spoken)> {
    match &a.server {
        Some(url) if !a.sse => super::appws::resolve(a.app_protocol, url),
        _ => None,
    }
}

/// The load generator's flags; the URL goes in [`LOADGEN_URL_ENV`].
fn loadgen_args(a: &FanoutOptions, slow: u64, sched: &Schedule) -> Vec<String> {
    let mut v = vec![
        "--size".to_string(),
        a.size.to_string(),
        "--rate".into(),
        a.rate.to_string(),
    ];
    for (flag, val) in [
        ("--message", &a.message),
        ("--subscribe", &a.subscribe),
        ("--seq-path", &a.seq_path),
        ("--ts-path", &a.ts_path),
    ] {
        if let Some(x) = val {
            v.extend([flag.to_string(), x.clone()]);
        }
    }
    v.extend([
        "--connections".to_string(),
        a.connections.to_string(),
        "--slow".into(),
        slow.to_string(),
        "--rounds".into(),
        a.rounds.to_string(),
        "--max-seconds".into(),
        ((sched.bound_s + a.connect_timeout.as_secs_f64() + 30.0) as u64).to_string(),
    ]);
    if let Some((p, _)) = spoken(a) {
        v.extend(["--app-protocol".to_string(), p.name().to_string()]);
        for (flag, val) in [
            ("--channel", &a.app_sub.channel),
            ("--event", &a.app_sub.event),
        ] {
            if let Some(x) = val {
                v.extend([flag.to_string(), x.clone()]);
            }
        }
    }
    match (a.connect_to, a.remote) {
        (Some(to), true) => v.extend(["--remote-addr".to_string(), to.to_string()]),
        (Some(to), false) => v.extend(["--connect-to".to_string(), to.to_string()]),
        (None, _) => {}
    }
    if let Some(ca) = &a.ca {
        v.extend(["--ca".to_string(), ca.display().to_string()]);
    }
    if !a.sources.0.is_empty() {
        v.extend(["--source-ip".to_string(), a.sources.arg()]);
    }
    v
}

/// The sampler's clock now (a mark in the run), None without a sampler or a reading.
fn mark(watch: &Option<Result<Sampler, String>>) -> Option<f64> {
    match watch {
        Some(Ok(s)) => s.now().map(|x| x.t_s),
        _ => None,
    }
}

/// The server's own figures go in the report (or why there are none): peak RSS and CPU
/// where its control plane gave none, the readings as a note. Returns what the shape
/// needs: memory over the publishing window and the slow clients it removed (open fds
/// at the start minus at the time bound, less the healthy clients it closed).
fn add_server_process(
    r: &mut ScenarioResult,
    seen: Option<Result<ServerProcess, String>>,
    removed_healthy: u64,
) -> Option<HubMemory> {
    match seen? {
        Err(why) => {
            r.notes.push(format!("server process not measured: {why}"));
            r.server_unmeasured = Some(why);
            None
        }
        Ok(p) => {
            r.notes.push(p.line());
            r.server_rss_mb = r.server_rss_mb.or(Some(p.rss_peak_mb));
            r.server_cpu_s = r.server_cpu_s.or(Some(p.cpu_s));
            let m = p.measured().then(|| HubMemory {
                window_s: p.growth_window_s,
                rss_start_mb: p.rss_start_mb,
                rss_end_mb: p.rss_start_mb + p.rss_growth_mb_per_s * p.growth_window_s,
                growth_mb_per_s: p.rss_growth_mb_per_s,
                slow_removed: p
                    .fds_start
                    .saturating_sub(p.fds_end)
                    .saturating_sub(removed_healthy),
            });
            if m.is_none() {
                r.server_unmeasured = Some(format!(
                    "{} readings over {:.1} s of the server's process: too few",
                    p.samples, p.window_s
                ));
            }
            r.server_process = Some(p);
            m
        }
    }
}

/// A C run on `--server` gets its shape verdict, first among its notes, with the seed's
/// row for that shape as its reference. An invalid run gets none: no figure.
fn add_shape(
    r: &mut ScenarioResult,
    rounds: &[super::wire::RoundStat],
    a: &FanoutOptions,
    mem: Memory,
) {
    if !r.valid {
        return;
    }
    if let Some(v) = super::shape::classify(rounds, a.rate, r.slow_clients, a.size, mem) {
        r.notes
            .insert(0, format!("{} [evidence: {}]", v.verdict, v.evidence));
        r.reference = Some(crate::evidence::reference(&v.evidence));
        r.shape = Some(v);
    }
}

/// Stats before publishing, then start it. Embedded servers wait for the start and must
/// answer both; another server may already be publishing and may have no stats: what its
/// control plane said is kept for the report.
fn begin(
    embedded: bool,
    name: &str,
    ctrl: SocketAddr,
    rounds: u64,
) -> anyhow::Result<(Option<ServerStats>, Option<validity::ControlSeen>)> {
    let stats_before = control::stats(ctrl).ok();
    if embedded && stats_before.is_none() {
        anyhow::bail!("{name}: server at {ctrl} has no /control/stats");
    }
    let started = control::start(ctrl, rounds);
    if embedded {
        started?;
        return Ok((stats_before, None));
    }
    let seen = validity::ControlSeen {
        start: started.map_err(|e| refusal(&format!("{e:#}"))),
        rounds_before: stats_before.as_ref().map(|s| s.rounds_sent),
    };
    Ok((stats_before, Some(seen)))
}

/// "HTTP 404" out of control::start's error (`ADDR/control/start: HTTP 404: body line`),
/// else the error itself.
fn refusal(e: &str) -> String {
    match e.split_once(": HTTP ") {
        Some((_, rest)) => format!("HTTP {}", rest.split(':').next().unwrap_or(rest).trim()),
        None => e.to_string(),
    }
}

/// What watching the rounds left: when it started, peak server RSS, last stats read.
struct Watch {
    t0: Instant,
    peak_rss: Option<u64>,
    last: Option<ServerStats>,
}

/// Follow the rounds until the schedule and drain are over or every healthy client has
/// the last round (or was removed).
fn watch_rounds(
    a: &FanoutOptions,
    lg: &mut Loadgen,
    ctrl: SocketAddr,
    healthy: u64,
    sched: &Schedule,
    name: &str,
    stats_before: &Option<ServerStats>,
) -> anyhow::Result<Watch> {
    let mut w = Watch {
        t0: Instant::now(),
        peak_rss: stats_before.as_ref().map(|s| s.rss_bytes),
        last: stats_before.clone(),
    };
    let pb = progress_bar(a.rounds, format!("{name}: rounds"));
    let (mut complete, mut removed) = (0u64, 0u64);
    // /control/stats costs the server a walk of /proc/self/fd (about 8 ms at 10,000
    // connections), so it is polled once a second: enough for peak RSS, small perturbation.
    let mut next_poll = Instant::now() + Duration::from_secs(1);
    loop {
        check_interrupted()?;
        if w.t0.elapsed().as_secs_f64() > sched.schedule_s + sched.drain_s {
            break;
        }
        if Instant::now() >= next_poll {
            next_poll = Instant::now() + Duration::from_secs(1);
            if let Ok(s) = control::stats(ctrl) {
                w.peak_rss = Some(w.peak_rss.unwrap_or(0).max(s.rss_bytes));
                w.last = Some(s);
            }
        }
        if let Some(Event::Progress {
            received,
            complete: c,
            removed: r,
        }) = lg.next(Duration::from_millis(50))?
        {
            complete = c;
            removed = r;
            pb.set_position((received / healthy.max(1)).min(a.rounds));
        }
        // A healthy client that got the last round proves the last round was published.
        if complete > 0 && complete + removed >= healthy {
            break;
        }
    }
    pb.finish_and_clear();
    Ok(w)
}

/// Snapshot the hub at the time bound, tell the load generator the cutoff, then release
/// the slow clients. Returns the snapshot and the cutoff round.
fn stop_at_bound(
    a: &FanoutOptions,
    lg: &mut Loadgen,
    ctrl: SocketAddr,
    slow: u64,
    sched: &Schedule,
    last: &Option<ServerStats>,
) -> anyhow::Result<(Option<ServerStats>, u64)> {
    // Where the hub stood at the time bound, before anything was released.
    let at_bound = control::stats(ctrl)
        .ok()
        .or_else(|| last.clone())
        .map(|mut s| {
            s.rounds_sent = s.rounds_sent.min(a.rounds);
            s
        });
    // The round in progress at the bound counts; rounds begun later (C1: the hub catching
    // up once the slow clients are closed) are outside the measurement window.
    // A server's rounds_sent is a peer's claim: clamp it, never let it overflow.
    let cutoff = at_bound
        .as_ref()
        .map(|s| cutoff_after(s.rounds_sent, a.rounds))
        .unwrap_or(a.rounds);
    lg.send(&format!("{CMD_CUTOFF} {cutoff}"));
    if slow > 0 {
        // As in the seed: closing the slow clients at the end releases stuck writers, and
        // what they then deliver (20 s late in C1) is part of the result.
        lg.send(CMD_CLOSE_SLOW);
        let until = Instant::now() + Duration::from_secs_f64(sched.slow_release_s);
        while Instant::now() < until {
            check_interrupted()?;
            let _ = lg.next(Duration::from_millis(100))?;
        }
    }
    Ok((at_bound, cutoff))
}

/// Did both children leave cleanly? `server_clean` is None for an external server.
fn cleanup_check(lg_clean: bool, server_clean: Option<bool>) -> Check {
    let clean = lg_clean && server_clean != Some(false);
    Check {
        name: "cleanup".into(),
        status: if clean { Status::Pass } else { Status::Warn },
        detail: format!(
            "load generator {}; {}",
            if lg_clean {
                "exited by itself"
            } else {
                "had to be killed"
            },
            match server_clean {
                None => "external server: not ours to stop",
                Some(true) => "server exited on SIGTERM",
                Some(false) => "server had to be killed (SIGKILL)",
            }
        ),
    }
}

/// Last round inside the measurement window: the one in progress at the bound counts. The
/// server's count is a peer's claim, so it is clamped and cannot overflow.
pub fn cutoff_after(rounds_sent: u64, rounds: u64) -> u64 {
    rounds_sent.min(rounds).saturating_add(1).min(rounds)
}

/// What each scenario is meant to show, said plainly next to its numbers.
fn add_shape_notes(
    s: Scenario,
    r: &mut ScenarioResult,
    a: &FanoutOptions,
    sent_at_bound: Option<u64>,
) {
    match s {
        Scenario::C1 => {
            let hub_max = r.hub_max_ms.unwrap_or(0.0);
            let stalled_at_bound = sent_at_bound.is_some_and(|n| n < r.rounds_total);
            if stalled_at_bound || hub_max >= 1000.0 || r.rounds_completed < r.rounds_total {
                r.notes.push(format!(
                    "stall shown: the hub had published {} of {} rounds at the time bound (hub max {} ms); closing the slow clients released it, as in the seed, and {} of {} rounds then reached every healthy client",
                    sent_at_bound.map(|n| n.to_string()).unwrap_or_else(|| "?".into()),
                    r.rounds_total,
                    crate::evidence::fmt_num(hub_max.round()),
                    r.rounds_completed,
                    r.rounds_total
                ));
            } else {
                r.notes.push("no stall observed: every round completed in time (buffers larger than the seed's, too few rounds to fill them, or fewer slow clients than shards)".into());
            }
        }
        Scenario::C2 => r.notes.push(format!(
            "the 1 s deadline bounds each stall: {} slow clients over 10 shards wait up to about {} s per shard before removal; rounds sent late carry their scheduled time, so every one counts its full delay until the hub has caught up (the seed's hub skipped rounds instead: 67 of 100)",
            a.slow_for(Some(s)),
            a.slow_for(Some(s)).div_ceil(10)
        )),
        Scenario::C3 => r.notes.push(
            "per-client queues: a slow client fills only its own queue; the others never wait".into(),
        ),
        Scenario::G1 | Scenario::G3 => r.notes.push(
            "Rust has no GC: the 100 MB/s background allocation costs allocator CPU and cache, not stop-the-world pauses or mark assists; compare with A".into(),
        ),
        Scenario::P1 => r
            .notes
            .push("the server runs on 1 tokio worker thread: every writer queues on one core".into()),
        Scenario::F => r.notes.push(
            "the floor: no WebSocket framing, no per-client tasks; what this host can do at best".into(),
        ),
        Scenario::A => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoff_survives_a_hostile_rounds_sent() {
        assert_eq!(cutoff_after(u64::MAX, 100), 100);
        assert_eq!(cutoff_after(3, 100), 4);
        assert_eq!(cutoff_after(100, 100), 100);
        assert_eq!(cutoff_after(0, 5), 1);
    }

    #[test]
    fn schedule_and_cleanup_pieces() {
        let a = FanoutOptions {
            connections: 2000,
            rounds: 100,
            size: 1024,
            rate: 5.0,
            slow: Some(3),
            scenario: scenario::ScenarioList(vec![Scenario::A]),
            no_floor: false,
            server: None,
            pids: vec![],
            connect_timeout: Duration::from_secs(60),
            drain: Duration::from_secs(5),
            foreign: vec![],
            publish: PublishVia::Server,
            message: None,
            subscribe: None,
            seq_path: None,
            ts_path: None,
            headers: vec![],
            sse: false,
            connect_to: None,
            ca: None,
            app_protocol: None,
            app_sub: Default::default(),
            remote: false,
            shard: None,
            start_at_ns: None,
            publisher_shard: 1,
            coordinate: None,
            run_id: String::new(),
            sources: Default::default(),
        };
        let s = Schedule::new(&a, 3);
        assert!((s.schedule_s - 20.0).abs() < 1e-9);
        assert!((s.bound_s - (20.0 + a.drain.as_secs_f64() + 1.5)).abs() < 1e-9);
        assert_eq!(Schedule::new(&a, 0).slow_release_s, 0.0);
        let args = loadgen_args(&a, 3, &s);
        let at = |k: &str| args[args.iter().position(|x| x == k).unwrap() + 1].clone();
        assert_eq!((at("--slow"), at("--rounds")), ("3".into(), "100".into()));
        // A POST URL may carry a token in its query: it goes in the environment.
        assert!(!args.iter().any(|x| x == "--publish"), "{args:?}");
        // So may the target URL (userinfo, query): it goes in RTCHECK_LOADGEN_URL.
        assert!(!args.iter().any(|x| x == "--url"), "{args:?}");
        assert_eq!(cleanup_check(true, Some(true)).status, Status::Pass);
        assert_eq!(cleanup_check(true, None).status, Status::Pass);
        assert!(cleanup_check(true, None)
            .detail
            .contains("not ours to stop"));
        assert_eq!(cleanup_check(false, None).status, Status::Warn);
        let c = cleanup_check(true, Some(false));
        assert_eq!(c.status, Status::Warn);
        assert!(c.detail.contains("SIGKILL"), "{}", c.detail);
        // The planned bytes of a huge remote run saturate, never overflow (debug panic).
        let huge = FanoutOptions {
            connections: u64::MAX / 2,
            rounds: u64::MAX / 2,
            size: u64::MAX / 2,
            server: Some("wss://example.com/ws".into()),
            connect_to: Some("192.0.2.1:443".parse().unwrap()),
            remote: true,
            ..a
        };
        assert!(remote_plan(&huge).is_some());
    }
}
