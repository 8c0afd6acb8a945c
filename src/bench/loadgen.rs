//! `rtcheck bench loadgen` (hidden): the load generator process. Opens N clients against
//! one server on loopback, records receive time - scheduled send time for every frame,
//! and reports to the orchestrator as JSON lines on stdout (see [`super::wire`]).
//! Runs in its own process so it stays under its own open-files limit and the server's
//! allocator and scheduler are not measured together with it.
use super::publisher::Endpoint;
use super::stats::{self, ClientSamples};
use super::target::Proto;
use super::wire::ScheduleSeen;
use super::wire::{Event, LoadgenResult, CMD_CLOSE_SLOW, CMD_CUTOFF, CMD_PUBLISH, CMD_STOP};
use crate::sys::tls::{Stream, Tls, Trust};
use futures_util::StreamExt;
use rtcheck_base::os::{clock, limits};
use rtcheck_wire::http::client as wire_client;
use rtcheck_wire::http::response::{self, Framing, Limits};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{watch, Semaphore};

/// What the load generator process does (`cmd::bench::LoadgenOptions` are its flags).
#[derive(Debug, Clone)]
pub struct LoadgenOptions {
    /// ws(s)://, tcp:// or http(s):// target (loopback, or any name with `connect_to`).
    pub url: String,
    pub connections: u64,
    /// Clients that connect with a small receive buffer and never read.
    pub slow: u64,
    /// Rounds expected (seq 1..=rounds); 0 = idle clients, nothing expected.
    pub rounds: u64,
    pub slow_rcvbuf: u32,
    /// Hard stop: the process ends by itself after this long even without a stop command.
    pub max_seconds: u64,
    pub connect_concurrency: usize,
    /// WebSocket read buffer per client.
    pub read_buffer: usize,
    /// Who publishes: the server itself, or rtcheck (`ws`, `POST URL`).
    pub publish: super::publisher::PublishVia,
    /// `--message` template (rtcheck's own text payload when None).
    pub message: Option<String>,
    /// Sent by every client (and the publisher) after connecting.
    pub subscribe: Option<String>,
    pub seq_path: Option<String>,
    pub ts_path: Option<String>,
    /// Message size and rounds per second for rtcheck's publisher.
    pub size: u64,
    pub rate: f64,
    /// `--connect-to`: where every socket goes, the URL keeping its name.
    pub connect_to: Option<SocketAddr>,
    /// `--ca`: what wss:// and https:// clients trust beyond webpki's roots.
    pub ca: Option<std::path::PathBuf>,
    /// The library protocol every WebSocket client and the publisher speak (resolved by
    /// the orchestrator: None is raw frames), with `--channel`/`--event`.
    pub app: Option<rtcheck_wire::appproto::AppProtocol>,
    pub app_sub: rtcheck_wire::appproto::Subscribe,
    /// A coordinated shard: added to every latency (us), its clock's offset to the
    /// publisher's (`bench::coordinate::correction_us`).
    pub clock_correction_us: i64,
    /// The correction's uncertainty (us): a corrected latency below 0 by more than this
    /// means the correction is wrong, and the run is invalid. None: not coordinated.
    pub clock_uncertainty_us: Option<u64>,
    /// `--source-ip`: local addresses the clients bind, round-robin (empty: the kernel's
    /// choice).
    pub sources: Vec<std::net::IpAddr>,
}

#[derive(Default)]
struct Counters {
    connected: AtomicU64,
    failed: AtomicU64,
    received: AtomicU64,
    complete: AtomicU64,
    removed: AtomicU64,
}

struct Cfg {
    proto: Proto,
    addr: SocketAddr,
    url: String,
    /// `url` fit for messages (the one redaction: userinfo and query values hidden).
    shown: String,
    path: String,
    /// The Host header (the URL's host, whatever `--connect-to` says).
    authority: String,
    /// wss:// and https://: set up once, a handshake per client.
    tls: Option<Tls>,
    /// The clients' URL resolved, for a `--publish ws` publisher.
    server: Endpoint,
    /// `--publish 'POST URL'`: its target, resolved and set up once.
    post: Option<Endpoint>,
    rounds: u64,
    slow_rcvbuf: u32,
    read_buffer: usize,
    decoder: super::template::Decoder,
    subscribe: Option<String>,
    app: Option<rtcheck_wire::appproto::AppProtocol>,
    app_sub: rtcheck_wire::appproto::Subscribe,
    /// `--source-ip`, and the next one to bind (round-robin over connects).
    sources: Vec<std::net::IpAddr>,
    next_source: std::sync::atomic::AtomicUsize,
    clock: ClockCorrection,
    /// The run's secrets (the URL's and the POST URL's secret values, the publisher's
    /// header values): masked in what a server says back (a close reason).
    secrets: Vec<String>,
}

/// What [`record`] adds to each latency (us) and how far below 0 a corrected latency may
/// fall within the correction's uncertainty.
#[derive(Debug, Clone, Copy, Default)]
struct ClockCorrection {
    add_us: i64,
    uncertainty_us: Option<u64>,
}

#[derive(Default)]
struct ClientOut {
    slow: bool,
    samples: Vec<(u32, u32)>,
    removed: bool,
    nodelay: Option<bool>,
    rcvbuf: Option<u32>,
    error: Option<String>,
    undecodable: u64,
    /// The first frame that was not the payload, as `wire::shape` shows it.
    first_undecodable: Option<String>,
    /// The close frame the server ended this client with, as `ws_client::close_phrase`
    /// says it.
    close: Option<String>,
    beyond: u64,
    /// Frames past [`max_samples`]: with at most --rounds distinct seqs, repeats (a server
    /// replaying a seq for ever must not grow the load generator's memory).
    excess: u64,
    /// What the server actually sends: payload size range and the (seq, scheduled time)
    /// of the first and last frame, from which its real rate follows.
    sched: ScheduleSeen,
    clock: ClockCorrection,
    /// Corrected latencies below 0 (recorded as 1 us), and of them those below by more
    /// than the correction's uncertainty.
    below_zero: u64,
    below_uncertainty: u64,
}

/// The loadgen never outlives this, whatever --max-seconds says: 7 days.
pub const MAX_SECONDS_CAP: u64 = 7 * 24 * 3600;

/// When the hard stop falls: --max-seconds clamped to the cap, and Instant arithmetic that
/// cannot overflow (an unrepresentable instant falls back to the cap, then to now).
pub fn hard_stop_at(now: Instant, max_seconds: u64) -> Instant {
    let secs = max_seconds.min(MAX_SECONDS_CAP);
    now.checked_add(Duration::from_secs(secs))
        .or_else(|| now.checked_add(Duration::from_secs(MAX_SECONDS_CAP)))
        .unwrap_or(now)
}

/// Stop levels on the watch channel.
const RUN: u8 = 0;
const CLOSE_SLOW: u8 = 1;
const STOP: u8 = 2;

pub fn run(a: LoadgenOptions) -> anyhow::Result<std::process::ExitCode> {
    if a.slow > a.connections {
        anyhow::bail!("--slow {} exceeds --connections {}", a.slow, a.connections);
    }
    let cfg = Arc::new(config(&a)?);
    let (_, hard) = limits::raise_nofile_to_hard()?;
    limits::check_fd_budget(a.connections, hard)?;
    let cores = clock::cores();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores as usize)
        .enable_all()
        .build()?;
    let result = rt.block_on(drive(a, cfg, cores))?;
    emit(&Event::Result(Box::new(result)));
    // Sockets close with the runtime; do not wait for lingering tasks.
    rt.shutdown_timeout(Duration::from_millis(500));
    Ok(std::process::ExitCode::SUCCESS)
}

/// What every client shares: the target resolved, its TLS and the publisher's set up
/// once (`--ca` read here, before any async code), the decoder.
fn config(a: &LoadgenOptions) -> anyhow::Result<Cfg> {
    let trust = Trust::with_ca(a.ca.clone());
    let server = Endpoint::new(&a.url, a.connect_to, &trust)?;
    let post = a.publish.post(a.connect_to, &trust)?;
    let message = a.message.as_deref().map(super::template::Template::parse);
    let decoder = super::template::Decoder::from_flags(
        a.seq_path.as_deref(),
        a.ts_path.as_deref(),
        message.as_ref(),
    )
    .map_err(anyhow::Error::msg)?;
    let t = server.target.clone();
    Ok(Cfg {
        proto: t.proto,
        addr: t.addr,
        url: a.url.clone(),
        shown: rtcheck_base::redact::url(&a.url),
        path: t.path,
        authority: t.authority,
        tls: server.tls.clone(),
        server,
        post,
        rounds: a.rounds,
        slow_rcvbuf: a.slow_rcvbuf,
        read_buffer: a.read_buffer.max(1024),
        decoder,
        subscribe: a.subscribe.clone(),
        app: a
            .app
            .filter(|p| *p != rtcheck_wire::appproto::AppProtocol::Raw),
        app_sub: a.app_sub.clone(),
        sources: a.sources.clone(),
        next_source: Default::default(),
        clock: ClockCorrection {
            add_us: a.clock_correction_us,
            uncertainty_us: a.clock_uncertainty_us,
        },
        secrets: run_secrets(a),
    })
}

/// The run's secrets: the clients' URL's, the publisher's (`--publish 'POST URL'`), and
/// its headers' values (from [`super::publisher::HEADERS_ENV`]).
fn run_secrets(a: &LoadgenOptions) -> Vec<String> {
    let mut args = vec![a.url.clone()];
    if let super::publisher::PublishVia::Post { url } = &a.publish {
        args.push(url.clone());
    }
    let headers = std::env::var(super::publisher::HEADERS_ENV).unwrap_or_default();
    for h in headers.lines().filter(|l| !l.trim().is_empty()) {
        args.push("--header".into());
        args.push(h.to_string());
    }
    rtcheck_base::redact::secrets_in_args(&args)
}

fn emit(ev: &Event) {
    let mut out = std::io::stdout().lock();
    if let Ok(s) = serde_json::to_string(ev) {
        // A closed pipe means the orchestrator is gone; the stdin watcher stops us.
        let _ = writeln!(out, "{s}");
        let _ = out.flush();
    }
}

async fn drive(a: LoadgenOptions, cfg: Arc<Cfg>, cores: u64) -> anyhow::Result<LoadgenResult> {
    let hard_stop = hard_stop_at(Instant::now(), a.max_seconds);
    let counters = Arc::new(Counters::default());
    let (stop_tx, stop_rx) = watch::channel(RUN);
    let sem = Arc::new(Semaphore::new(a.connect_concurrency.max(1)));
    let cpu0 = clock::cpu_seconds();
    let rss0 = rtcheck_base::os::proc::self_rss_bytes();
    let mut cmd_rx = read_commands();
    let (go_tx, publisher) = spawn_publisher(&a, &cfg, stop_rx.clone())?;
    let tasks: Vec<_> = (0..a.connections)
        .map(|i| {
            tokio::spawn(client(
                is_slow(i, a.connections, a.slow),
                cfg.clone(),
                counters.clone(),
                sem.clone(),
                stop_rx.clone(),
            ))
        })
        .collect();
    connect_phase(a.connections, &counters, &mut cmd_rx, hard_stop).await;
    let cpu1 = clock::cpu_seconds();
    let rss1 = rtcheck_base::os::proc::self_rss_bytes();
    let t_run = Instant::now();
    emit(&Event::Connected {
        connected: counters.connected.load(Relaxed),
        failed: counters.failed.load(Relaxed),
    });
    let cutoff = run_phase(&counters, &mut cmd_rx, &stop_tx, hard_stop, go_tx).await;
    let _ = stop_tx.send(STOP);
    let publisher = match publisher {
        Some(p) => tokio::time::timeout(Duration::from_secs(5), p)
            .await
            .ok()
            .and_then(Result::ok),
        None => None,
    };
    let cpu2 = clock::cpu_seconds();
    let wall = t_run.elapsed().as_secs_f64();
    let outs = collect(tasks).await;
    let mut r = summarize(&a, outs, cutoff, cores, cpu1 - cpu0, cpu2 - cpu1, wall);
    r.publisher = publisher;
    (r.rss_start_bytes, r.rss_connected_bytes) = (Some(rss0), Some(rss1));
    Ok(r)
}

type PublisherTask = Option<tokio::task::JoinHandle<super::wire::PublisherStat>>;

/// rtcheck's publisher (`--publish ws` / `POST`): connected now (a refused publisher is
/// an error before anything is measured), started by the `publish` command.
fn spawn_publisher(
    a: &LoadgenOptions,
    cfg: &Cfg,
    stop: watch::Receiver<u8>,
) -> anyhow::Result<(Option<tokio::sync::oneshot::Sender<()>>, PublisherTask)> {
    use super::publisher::{self, Plan, PublishVia};
    if a.publish == PublishVia::Server {
        return Ok((None, None));
    }
    let headers = std::env::var(publisher::HEADERS_ENV)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(publisher::parse_header)
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let plan = Plan {
        via: a.publish.clone(),
        ws_url: cfg.url.clone(),
        ws: cfg.server.clone(),
        post: cfg.post.clone(),
        message: super::template::Template::parse(
            a.message
                .as_deref()
                .unwrap_or(super::template::DEFAULT_MESSAGE),
        ),
        subscribe: a.subscribe.clone(),
        app: cfg.app.map(|p| (p, cfg.app_sub.clone())),
        headers,
        rounds: a.rounds,
        rate: a.rate,
        size: a.size as usize,
        redial: false,
    };
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let ready = match publisher::connect(&plan).await {
            Ok(r) => r,
            Err(e) => {
                return super::wire::PublisherStat {
                    via: plan.via.name(),
                    planned: plan.rounds,
                    first_error: Some(e),
                    ..Default::default()
                }
            }
        };
        if go_rx.await.is_err() {
            return super::wire::PublisherStat {
                via: plan.via.name(),
                planned: plan.rounds,
                ..Default::default()
            };
        }
        publisher::run(plan, ready, stop, STOP).await
    });
    Ok((Some(go_tx), Some(task)))
}

/// Commands from the orchestrator, one per stdin line; EOF (orchestrator gone) means stop.
fn read_commands() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (cmd_tx, cmd_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut line = String::new();
        loop {
            line.clear();
            match stdin.read_line(&mut line) {
                Ok(0) | Err(_) => {
                    let _ = cmd_tx.send(CMD_STOP.to_string());
                    return;
                }
                Ok(_) => {
                    if cmd_tx.send(line.trim().to_string()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    cmd_rx
}

/// Report connect progress until every client connected or failed (or stop, or the bound).
async fn connect_phase(
    total: u64,
    counters: &Counters,
    cmd_rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    hard_stop: Instant,
) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tick.tick().await;
        let done = counters.connected.load(Relaxed);
        let failed = counters.failed.load(Relaxed);
        if done + failed >= total {
            break;
        }
        emit(&Event::Connecting {
            done,
            failed,
            total,
        });
        if let Ok(c) = cmd_rx.try_recv() {
            if c == CMD_STOP {
                break;
            }
        }
        if Instant::now() > hard_stop {
            break;
        }
    }
}

/// Report progress until told to stop (or the hard bound); returns the cutoff round if
/// the orchestrator sent one. `close-slow` is passed on to the clients.
async fn run_phase(
    counters: &Counters,
    cmd_rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    stop_tx: &watch::Sender<u8>,
    hard_stop: Instant,
    mut go: Option<tokio::sync::oneshot::Sender<()>>,
) -> Option<u64> {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut cutoff: Option<u64> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                emit(&Event::Progress {
                    received: counters.received.load(Relaxed),
                    complete: counters.complete.load(Relaxed),
                    removed: counters.removed.load(Relaxed),
                });
                if Instant::now() > hard_stop { break; }
            }
            c = cmd_rx.recv() => match c.as_deref() {
                Some(CMD_CLOSE_SLOW) => { let _ = stop_tx.send(CLOSE_SLOW); }
                Some(CMD_STOP) | None => break,
                Some(CMD_PUBLISH) => {
                    if let Some(g) = go.take() {
                        let _ = g.send(());
                    }
                }
                Some(other) => {
                    if let Some(n) = other.strip_prefix(CMD_CUTOFF).and_then(|n| n.trim().parse().ok()) {
                        cutoff = Some(n);
                    }
                }
            }
        }
    }
    cutoff
}

/// Every client's outcome; a task that does not stop within 5 s counts as an error.
async fn collect(tasks: Vec<tokio::task::JoinHandle<ClientOut>>) -> Vec<ClientOut> {
    let mut outs = Vec::with_capacity(tasks.len());
    for t in tasks {
        match tokio::time::timeout(Duration::from_secs(5), t).await {
            Ok(Ok(o)) => outs.push(o),
            _ => outs.push(ClientOut {
                error: Some("client task did not stop".into()),
                ..Default::default()
            }),
        }
    }
    outs
}

fn summarize(
    a: &LoadgenOptions,
    outs: Vec<ClientOut>,
    cutoff: Option<u64>,
    cores: u64,
    cpu_connect: f64,
    cpu_run: f64,
    wall: f64,
) -> LoadgenResult {
    let mut hist = stats::new_hist();
    let mut healthy = Vec::new();
    let mut r = LoadgenResult {
        clock_uncertainty_us: a.clock_uncertainty_us,
        connections: a.connections,
        slow: a.slow,
        cores,
        cutoff,
        cpu_connect_s: cpu_connect,
        cpu_run_s: cpu_run,
        wall_run_s: wall,
        ..Default::default()
    };
    for mut o in outs {
        if let Some(e) = &o.error {
            r.connect_failed += 1;
            if r.connect_errors.len() < 3 && !r.connect_errors.contains(e) {
                r.connect_errors.push(e.clone());
            }
            continue;
        }
        r.connected += 1;
        if let Some(nd) = o.nodelay {
            r.nodelay_checked += 1;
            if !nd {
                r.nodelay_off += 1;
            }
        }
        if o.slow {
            if let Some(b) = o.rcvbuf {
                r.slow_rcvbuf = Some(b as u64);
            }
            continue;
        }
        r.undecodable += o.undecodable;
        if r.first_undecodable.is_none() {
            r.first_undecodable = o.first_undecodable.take();
        }
        r.beyond_rounds += o.beyond;
        r.schedule.merge(&o.sched);
        // Frames past the per-client bound can only be repeats: counted as such.
        r.order_violations += stats::order_violations(&o.samples) + o.excess;
        r.duplicates += stats::duplicates(&o.samples) + o.excess;
        if o.removed {
            r.removed_healthy += 1;
            r.closed_by_frame += u64::from(o.close.is_some());
            if r.first_close.is_none() {
                r.first_close = o.close.take();
            }
        }
        r.below_zero += o.below_zero;
        r.below_uncertainty += o.below_uncertainty;
        let mut samples = o.samples;
        if let Some(c) = cutoff {
            let before = samples.len();
            samples.retain(|&(seq, _)| u64::from(seq) <= c);
            r.after_cutoff += (before - samples.len()) as u64;
        }
        for &(_, lat) in &samples {
            let _ = hist.record(u64::from(lat).max(1));
        }
        healthy.push(ClientSamples {
            samples,
            removed: o.removed,
        });
    }
    let q = stats::quantiles(&hist);
    r.samples = q.count;
    r.p50_ms = q.p50_ms;
    r.p99_ms = q.p99_ms;
    r.p999_ms = q.p999_ms;
    r.max_ms = q.max_ms;
    r.over_100ms = q.over_100ms;
    r.over_1s = q.over_1s;
    r.percentiles = stats::percentiles(&hist);
    r.rounds = stats::per_round(&healthy, a.rounds as usize);
    r.histogram = Some(super::shard::encode(&hist));
    raw_samples(&healthy);
    r
}

/// Test-only: with RTCHECK_TEST_RAW_SAMPLES=PATH every healthy latency (us) is written
/// there, one a line, so a test compares merged percentiles with the union of the raw
/// samples. Not a user feature: nothing documents it.
fn raw_samples(healthy: &[ClientSamples]) {
    let Some(path) = std::env::var_os("RTCHECK_TEST_RAW_SAMPLES") else {
        return;
    };
    let mut text = String::new();
    for c in healthy {
        for &(_, lat) in &c.samples {
            text.push_str(&format!("{}\n", u64::from(lat).max(1)));
        }
    }
    let _ = rtcheck_base::outfile::write_atomic(std::path::Path::new(&path), text.as_bytes());
}

/// Slow clients are spread so every shard of a sharded hub gets its share, whether the
/// server assigns shards in blocks of accept order or round-robin (k*step + k%10).
pub fn is_slow(i: u64, n: u64, slow: u64) -> bool {
    if slow == 0 || n == 0 {
        return false;
    }
    let step = n / slow;
    if step < 10 {
        return i.is_multiple_of(step.max(1)) && i / step.max(1) < slow;
    }
    let k = i / step;
    k < slow && i == k * step + k % 10
}

async fn client(
    slow: bool,
    cfg: Arc<Cfg>,
    counters: Arc<Counters>,
    sem: Arc<Semaphore>,
    stop: watch::Receiver<u8>,
) -> ClientOut {
    let mut out = ClientOut {
        slow,
        samples: Vec::with_capacity(if slow { 0 } else { cfg.rounds as usize }),
        clock: cfg.clock,
        ..Default::default()
    };
    let permit = sem.acquire().await;
    let stream = match connect_tcp(&cfg, slow, &mut out).await {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(e);
            counters.failed.fetch_add(1, Relaxed);
            return out;
        }
    };
    let res = match cfg.proto {
        Proto::Ws => ws_session(stream, slow, &cfg, &counters, permit, stop, &mut out).await,
        Proto::Raw => {
            drop(permit);
            counters.connected.fetch_add(1, Relaxed);
            raw_session(stream, slow, &cfg, &counters, stop, &mut out).await
        }
        Proto::Sse => sse_session(stream, slow, &cfg, &counters, permit, stop, &mut out).await,
    };
    if let Err(e) = res {
        out.error = Some(e);
        counters.failed.fetch_add(1, Relaxed);
    }
    out
}

/// Linux's IP_BIND_ADDRESS_NO_PORT on `sock` (best effort: without it a bind to port
/// 0 takes a port from the range at bind time, about half of it per address).
fn bind_address_no_port(sock: &tokio::net::TcpSocket) {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: a socket this function borrows (open for the call) and an int option value
    // with its exact size.
    let _ = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

/// TCP (and TLS on wss/https) to the target: a slow client's small window is set on the
/// TCP socket before connect, under TLS as without.
async fn connect_tcp(cfg: &Cfg, slow: bool, out: &mut ClientOut) -> Result<Stream, String> {
    let sock = if cfg.addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()
    } else {
        tokio::net::TcpSocket::new_v6()
    }
    .map_err(|e| format!("socket: {e}"))?;
    if slow {
        // Before connect, so the window is small from the SYN on.
        sock.set_recv_buffer_size(cfg.slow_rcvbuf)
            .map_err(|e| format!("SO_RCVBUF: {e}"))?;
        out.rcvbuf = sock.recv_buffer_size().ok();
    }
    sock.set_nodelay(true)
        .map_err(|e| format!("TCP_NODELAY: {e}"))?;
    if !cfg.sources.is_empty() {
        // Port 0 chosen at connect, not at bind (IP_BIND_ADDRESS_NO_PORT): the kernel
        // then picks per (source, destination), so each address has its whole range.
        let i = cfg.next_source.fetch_add(1, Relaxed) % cfg.sources.len();
        let from = SocketAddr::new(cfg.sources[i], 0);
        bind_address_no_port(&sock);
        sock.bind(from)
            .map_err(|e| format!("bind {from} (--source-ip): {e}"))?;
    }
    let s = tokio::time::timeout(Duration::from_secs(10), sock.connect(cfg.addr))
        .await
        .map_err(|_| format!("{}: connect timed out after 10s", cfg.addr))?
        .map_err(|e| format!("{}: connect: {e}", cfg.addr))?;
    // Read back: what the kernel actually has, not what we asked for.
    out.nodelay = s.nodelay().ok();
    tokio::time::timeout(Duration::from_secs(10), Stream::over(s, cfg.tls.as_ref()))
        .await
        .map_err(|_| format!("{}: TLS handshake timed out after 10s", cfg.addr))?
        .map_err(|e| {
            let why = cfg.tls.as_ref().map_or(e.to_string(), |t| {
                t.explain(&e, cfg.addr, Duration::from_secs(10))
            });
            format!("{}: TLS handshake: {why}", cfg.addr)
        })
}

/// Record one payload. Hot path: decode, clock read, push.
#[inline]
fn record(
    out: &mut ClientOut,
    counters: &Counters,
    rounds: u64,
    payload: &[u8],
    decoded: Option<(u64, u64)>,
) {
    let len = payload.len();
    let Some((seq, sched)) = decoded else {
        out.undecodable += 1;
        if out.first_undecodable.is_none() {
            out.first_undecodable = Some(super::wire::shape(payload));
        }
        return;
    };
    out.sched.see(len as u64, seq, sched);
    // Signed, the clock correction added before anything is clamped: a receiver whose
    // clock is behind the publisher's reads a negative raw latency that the correction
    // brings back (issue: clamping first lost it).
    let raw_us = (i128::from(clock::now_ns()) - i128::from(sched)) / 1000;
    let lat = raw_us + i128::from(out.clock.add_us);
    if lat < 0 {
        out.below_zero += 1;
        if out
            .clock
            .uncertainty_us
            .is_some_and(|u| -lat > i128::from(u))
        {
            out.below_uncertainty += 1;
        }
    }
    let lat_us = lat.clamp(1, i128::from(u32::MAX)) as u32;
    counters.received.fetch_add(1, Relaxed);
    if seq == 0 || seq > rounds {
        out.beyond += 1;
        return;
    }
    if out.samples.len() as u64 >= max_samples(rounds) {
        out.excess += 1;
        return;
    }
    out.samples.push((seq as u32, lat_us));
    if seq == rounds {
        counters.complete.fetch_add(1, Relaxed);
    }
}

/// Samples one client keeps: every round twice over (duplicates stay visible), no more.
fn max_samples(rounds: u64) -> u64 {
    rounds.saturating_mul(2).saturating_add(16)
}

async fn wait_level(stop: &mut watch::Receiver<u8>, level: u8) {
    loop {
        if *stop.borrow_and_update() >= level {
            return;
        }
        if stop.changed().await.is_err() {
            return;
        }
    }
}

fn mark_removed(out: &mut ClientOut, counters: &Counters, stop: &watch::Receiver<u8>) {
    if *stop.borrow() < STOP {
        out.removed = true;
        counters.removed.fetch_add(1, Relaxed);
    }
}

async fn ws_session<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    slow: bool,
    cfg: &Cfg,
    counters: &Counters,
    permit: Result<tokio::sync::SemaphorePermit<'_>, tokio::sync::AcquireError>,
    mut stop: watch::Receiver<u8>,
    out: &mut ClientOut,
) -> Result<(), String> {
    use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
    use tokio_tungstenite::tungstenite::Message;
    let largest_send = cfg.subscribe.as_ref().map_or(0, String::len);
    let wcfg: WebSocketConfig =
        super::ws_client::config(largest_send).read_buffer_size(cfg.read_buffer);
    let (mut ws, _) = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::client_async_with_config(cfg.url.as_str(), stream, Some(wcfg)),
    )
    .await
    .map_err(|_| format!("{}: WebSocket handshake timed out after 10s", cfg.shown))?
    .map_err(|e| format!("{}: WebSocket handshake: {e}", cfg.shown))?;
    let mut app = match cfg.app {
        Some(p) => {
            let mut s = super::appws::Session::new(p, &cfg.url, cfg.app_sub.clone());
            super::appws::handshake(&mut ws, &mut s, Duration::from_secs(10))
                .await
                .map_err(|e| format!("{}: {e}", cfg.shown))?;
            Some(s)
        }
        None => None,
    };
    drop(permit);
    use futures_util::SinkExt;
    if let Some(sub) = &cfg.subscribe {
        // Join the room or channel, as the app's own clients do (slow ones too).
        ws.send(Message::text(sub.clone()))
            .await
            .map_err(|e| format!("{}: subscribe: {e}", cfg.shown))?;
    }
    counters.connected.fetch_add(1, Relaxed);
    if slow {
        // Never read: the server's writes pile up in our 2 KB window and its send buffer.
        // A library's heartbeat is still kept (written blind): slow at the socket, not
        // dropped by the library's own timeout.
        return match app {
            Some(s) => slow_app_session(ws, s, &mut stop).await,
            None => {
                wait_level(&mut stop, CLOSE_SLOW).await;
                Ok(())
            }
        };
    }
    if let Some(s) = app.as_mut() {
        return app_session(ws, s, cfg, counters, stop, out).await;
    }
    loop {
        tokio::select! {
            biased;
            m = ws.next() => match m {
                Some(Ok(Message::Binary(b))) => {
                    record(out, counters, cfg.rounds, &b, cfg.decoder.decode_binary(&b))
                }
                // A gap marker (the server dropped messages for this client) is not a
                // payload: the missing seqs show as drops in the server's counters.
                // (Checked by its prefix first: a payload is not parsed twice.)
                Some(Ok(Message::Text(t))) if t.as_str().starts_with("{\"from\"") && rtcheck_wire::epoch::parse_gap(t.as_str()).is_some() => {}
                // The server's hello (`{"epoch":..,"latest":..}`, first on every /ws) or a
                // reset marker: not payloads either.
                Some(Ok(Message::Text(t))) if rtcheck_wire::epoch::parse_marker(t.as_str()).is_some() => {}
                Some(Ok(Message::Text(t))) => {
                    record(out, counters, cfg.rounds, t.as_bytes(), cfg.decoder.decode(t.as_bytes(), None))
                }
                Some(Ok(Message::Close(c))) => {
                    out.close = Some(super::ws_client::close_phrase(c.as_ref(), &cfg.secrets));
                    mark_removed(out, counters, &stop);
                    return Ok(());
                }
                None | Some(Err(_)) => {
                    mark_removed(out, counters, &stop);
                    return Ok(());
                }
                Some(Ok(_)) => {}
            },
            r = stop.changed() => {
                if r.is_err() || *stop.borrow() >= STOP {
                    return Ok(());
                }
            }
        }
    }
}

/// A slow client of a library protocol: never reads, sends the library's heartbeat.
async fn slow_app_session<S: AsyncRead + AsyncWrite + Unpin>(
    mut ws: tokio_tungstenite::WebSocketStream<S>,
    mut s: super::appws::Session,
    stop: &mut watch::Receiver<u8>,
) -> Result<(), String> {
    use futures_util::SinkExt;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = wait_level(stop, CLOSE_SLOW) => return Ok(()),
            _ = tick.tick() => {
                if let Some(b) = s.blind_due() {
                    // The server reads (only its writes to us are stuck): bounded anyway.
                    let sent = tokio::time::timeout(Duration::from_secs(5), ws.send(b)).await;
                    if !matches!(sent, Ok(Ok(()))) {
                        wait_level(stop, CLOSE_SLOW).await;
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// A healthy client of a library protocol: payloads unwrapped and recorded, the
/// library's heartbeat answered (and sent, where the client pings).
async fn app_session<S: AsyncRead + AsyncWrite + Unpin>(
    mut ws: tokio_tungstenite::WebSocketStream<S>,
    s: &mut super::appws::Session,
    cfg: &Cfg,
    counters: &Counters,
    mut stop: watch::Receiver<u8>,
    out: &mut ClientOut,
) -> Result<(), String> {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        let mut owed = Vec::new();
        tokio::select! {
            biased;
            m = ws.next() => match m {
                Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => {
                    let h = s.on_message(&m);
                    for p in &h.payloads {
                        record(out, counters, cfg.rounds, p, cfg.decoder.decode(p, None));
                    }
                    owed = h.replies;
                    if h.closed.is_some() {
                        mark_removed(out, counters, &stop);
                        return Ok(());
                    }
                }
                Some(Ok(Message::Close(c))) => {
                    out.close = Some(super::ws_client::close_phrase(c.as_ref(), &cfg.secrets));
                    mark_removed(out, counters, &stop);
                    return Ok(());
                }
                None | Some(Err(_)) => {
                    mark_removed(out, counters, &stop);
                    return Ok(());
                }
                Some(Ok(_)) => {}
            },
            _ = tick.tick() => owed.extend(s.due()),
            r = stop.changed() => {
                if r.is_err() || *stop.borrow() >= STOP {
                    return Ok(());
                }
            }
        }
        for m in owed {
            if ws.send(m).await.is_err() {
                mark_removed(out, counters, &stop);
                return Ok(());
            }
        }
    }
}

async fn raw_session<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    slow: bool,
    cfg: &Cfg,
    counters: &Counters,
    mut stop: watch::Receiver<u8>,
    out: &mut ClientOut,
) -> Result<(), String> {
    if slow {
        let _keep = stream;
        wait_level(&mut stop, CLOSE_SLOW).await;
        return Ok(());
    }
    let mut rd = tokio::io::BufReader::with_capacity(cfg.read_buffer, stream);
    let mut body = vec![0u8; 1 << 16];
    loop {
        tokio::select! {
            biased;
            r = read_raw_frame(&mut rd, &mut body) => match r {
                Ok(n) => record(out, counters, cfg.rounds, &body[..n], rtcheck_wire::payload::decode(&body[..n])),
                Err(_) => {
                    mark_removed(out, counters, &stop);
                    return Ok(());
                }
            },
            r = stop.changed() => {
                if r.is_err() || *stop.borrow() >= STOP {
                    return Ok(());
                }
            }
        }
    }
}

async fn read_raw_frame<S: AsyncRead + Unpin>(
    rd: &mut tokio::io::BufReader<S>,
    body: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut len = [0u8; 4];
    rd.read_exact(&mut len).await?;
    let n = u32::from_le_bytes(len) as usize;
    if n > 16 << 20 {
        return Err(std::io::Error::other("raw frame longer than 16 MiB"));
    }
    if n > body.len() {
        body.resize(n, 0);
    }
    rd.read_exact(&mut body[..n]).await?;
    Ok(n)
}

/// Read the SSE response head (bounded in size and time); 200 or an error naming the
/// status line. Returns how the body is framed and the bytes after the head.
async fn sse_head<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut [u8],
    cfg: &Cfg,
) -> Result<(Framing, Vec<u8>), String> {
    let mut head = Vec::with_capacity(512);
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(buf))
            .await
            .map_err(|_| format!("{}: no SSE response within 10s", cfg.shown))?
            .map_err(|e| format!("{}: read: {e}", cfg.shown))?;
        if n == 0 {
            return Err(format!("{}: closed before the response head", cfg.shown));
        }
        let (h, rest) = match wire_client::feed(&mut head, &buf[..n], Limits::head(16 * 1024)) {
            Ok(Some(h)) => h,
            Ok(None) => continue,
            Err(response::Error::HeadTooLarge(_)) => {
                return Err(format!("{}: response head over 16 KiB", cfg.shown))
            }
            Err(e) => return Err(format!("{}: {e}", cfg.shown)),
        };
        if h.status != 200 {
            let line = String::from_utf8_lossy(&head);
            let line = line.lines().next().unwrap_or("");
            return Err(format!("{}: SSE status: {line}", cfg.shown));
        }
        let framing = h
            .framing(false)
            .map_err(|e| format!("{}: {e}", cfg.shown))?;
        return Ok((framing, rest));
    }
}

async fn sse_session<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    slow: bool,
    cfg: &Cfg,
    counters: &Counters,
    permit: Result<tokio::sync::SemaphorePermit<'_>, tokio::sync::AcquireError>,
    mut stop: watch::Receiver<u8>,
    out: &mut ClientOut,
) -> Result<(), String> {
    let req = wire_client::head(
        "GET",
        &cfg.path,
        &[
            ("Host", cfg.authority.as_str()),
            ("Accept", "text/event-stream"),
            ("Cache-Control", "no-cache"),
        ],
    );
    stream
        .write_all(&req)
        .await
        .map_err(|e| format!("{}: write request: {e}", cfg.shown))?;
    // Over TLS the request may still sit in rustls' buffer: reads never flush it.
    stream
        .flush()
        .await
        .map_err(|e| format!("{}: write request: {e}", cfg.shown))?;
    let mut buf = vec![0u8; cfg.read_buffer];
    let (framing, rest) = sse_head(&mut stream, &mut buf, cfg).await?;
    drop(permit);
    counters.connected.fetch_add(1, Relaxed);
    if slow {
        wait_level(&mut stop, CLOSE_SLOW).await;
        return Ok(());
    }
    let parser = rtcheck_wire::sse::Parser::new(1 << 20);
    let mut body = rtcheck_wire::sse::Stream::new(framing, parser);
    let mut events = Vec::new();
    let mut feed = |bytes: &[u8], out: &mut ClientOut| -> Result<(), String> {
        body.feed(bytes, &mut events)
            .map_err(|e| format!("{}: {e}", cfg.shown))?;
        for ev in events.drain(..) {
            // Named events (`gap`) are not payloads; a gap shows as missing seqs.
            if ev.event.is_some() {
                continue;
            }
            record(
                out,
                counters,
                cfg.rounds,
                ev.data.as_bytes(),
                cfg.decoder.decode(ev.data.as_bytes(), ev.id.as_deref()),
            );
        }
        Ok(())
    };
    feed(&rest, out)?;
    loop {
        tokio::select! {
            biased;
            r = stream.read(&mut buf) => match r {
                Ok(0) | Err(_) => {
                    mark_removed(out, counters, &stop);
                    return Ok(());
                }
                Ok(n) => feed(&buf[..n], out)?,
            },
            r = stop.changed() => {
                if r.is_err() || *stop.borrow() >= STOP {
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(rounds: u64, slow: u64) -> LoadgenOptions {
        LoadgenOptions {
            url: "ws://127.0.0.1:1/ws".into(),
            connections: 3,
            slow,
            rounds,
            slow_rcvbuf: 2048,
            max_seconds: 1,
            connect_concurrency: 1,
            read_buffer: 4096,
            publish: super::super::publisher::PublishVia::Server,
            message: None,
            subscribe: None,
            seq_path: None,
            ts_path: None,
            size: 64,
            rate: 5.0,
            connect_to: None,
            clock_correction_us: 0,
            clock_uncertainty_us: None,
            sources: Vec::new(),
            ca: None,
            app: None,
            app_sub: Default::default(),
        }
    }

    /// A server replaying one seq for ever: the client keeps at most twice --rounds
    /// samples, the rest counted as repeats (issue 41: bounded memory).
    #[test]
    fn a_replayed_seq_flood_keeps_a_bounded_sample_list() {
        let counters = Counters {
            connected: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            received: AtomicU64::new(0),
            complete: AtomicU64::new(0),
            removed: AtomicU64::new(0),
        };
        let mut out = ClientOut::default();
        let now = clock::now_ns();
        for _ in 0..100_000 {
            record(&mut out, &counters, 10, b"x", Some((1, now)));
        }
        assert_eq!(out.samples.len() as u64, max_samples(10));
        assert_eq!(out.excess, 100_000 - max_samples(10));
        // A receiver 50 ms behind the publisher reads the payload "from the future": the
        // +50 ms correction is added signed, before clamping, giving back ~latency.
        let ahead = clock::now_ns() + 50_000_000;
        let mut out = ClientOut {
            clock: ClockCorrection {
                add_us: 60_000,
                uncertainty_us: Some(2_000),
            },
            ..Default::default()
        };
        record(&mut out, &counters, 10, b"x", Some((1, ahead)));
        let lat = out.samples[0].1;
        assert!((9_000..=10_000 + 60_000).contains(&lat), "{lat}");
        assert_eq!(out.below_zero, 0);
        // Still below 0 after the correction: counted; beyond the uncertainty, flagged.
        out.clock.add_us = 0;
        record(&mut out, &counters, 10, b"x", Some((2, ahead)));
        assert_eq!((out.below_zero, out.below_uncertainty), (1, 1));
        assert_eq!(out.samples[1].1, 1);
    }

    #[test]
    fn summary_leaves_out_rounds_after_the_cutoff_and_slow_clients() {
        let healthy = ClientOut {
            samples: vec![(1, 1000), (2, 2000), (3, 30_000_000)],
            nodelay: Some(true),
            ..Default::default()
        };
        let slow = ClientOut {
            slow: true,
            nodelay: Some(true),
            rcvbuf: Some(4608),
            ..Default::default()
        };
        let failed = ClientOut {
            error: Some("connect: refused".into()),
            ..Default::default()
        };
        let r = summarize(
            &args(3, 1),
            vec![healthy, slow, failed],
            Some(2),
            2,
            0.1,
            0.2,
            3.0,
        );
        assert_eq!((r.connected, r.connect_failed), (2, 1));
        assert_eq!(r.connect_errors, vec!["connect: refused".to_string()]);
        assert_eq!(r.samples, 2, "seq 3 began after the cutoff");
        assert_eq!(r.after_cutoff, 1);
        assert_eq!(r.max_ms, 2.0);
        assert_eq!(r.rounds[2].received, 0);
        assert_eq!(r.rounds[2].missing_live, 1);
        assert_eq!(r.slow_rcvbuf, Some(4608));
        assert_eq!((r.nodelay_checked, r.nodelay_off), (2, 0));
    }

    #[test]
    fn slow_clients_spread_evenly() {
        for (n, s) in [
            (1000u64, 50u64),
            (2000, 50),
            (10000, 50),
            (300, 50),
            (100, 100),
            (7, 3),
        ] {
            let slow: Vec<u64> = (0..n).filter(|&i| is_slow(i, n, s)).collect();
            assert_eq!(slow.len() as u64, s, "n={n} s={s}");
        }
        // Round-robin over 10 shards and blocks of n/10 both get 5 each.
        let slow: Vec<u64> = (0..2000).filter(|&i| is_slow(i, 2000, 50)).collect();
        for shard in 0..10 {
            assert_eq!(slow.iter().filter(|&&i| i % 10 == shard).count(), 5);
            assert_eq!(slow.iter().filter(|&&i| i / 200 == shard).count(), 5);
        }
    }

    #[test]
    fn hard_stop_is_capped_and_never_overflows() {
        let now = Instant::now();
        assert_eq!(hard_stop_at(now, 5), now + Duration::from_secs(5));
        let cap = now + Duration::from_secs(MAX_SECONDS_CAP);
        assert_eq!(hard_stop_at(now, MAX_SECONDS_CAP + 1), cap);
        assert_eq!(hard_stop_at(now, u64::MAX), cap);
    }
}
