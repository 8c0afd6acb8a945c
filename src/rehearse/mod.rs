//! `rtcheck rehearse` (issue 38): the deploy before it happens. N clients connect through
//! the user's path, settle, the user's restart hook runs, and the clients come back the
//! way the user's clients do while rtcheck measures the wave, the drain, the failed
//! connects, the host's accept queue, the server's process and every seq.
//!
//! - [`client`]: one client (tokio), [`h2sse`]: its SSE over HTTP/2 (`--http2`),
//!   [`policy`]: `--reconnect`, [`hook`]: the command; `--publish` is bench's publisher;
//! - pure: [`wave`] (connects per 100 ms and the times to 50/95/100 %), [`summary`]
//!   (clients to figures), [`verdict`] (findings); [`model`]: the report.
pub mod client;
pub mod h2sse;
pub mod hook;
pub mod model;
pub mod policy;
pub mod summary;
pub mod verdict;
pub mod wave;

use crate::bench::target::Target;
use model::{Listen, RehearseReport, Run, ServerSeries};
use policy::Reconnect;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a rehearsal needs (the command layer resolves the flags into it).
#[derive(Debug, Clone)]
pub struct Options {
    pub url_shown: String,
    pub target: Target,
    /// Where the server's process listens (the URL's address, or `--server-addr`).
    pub watch: std::net::SocketAddr,
    pub connections: u64,
    pub restart: String,
    pub restart_timeout: Duration,
    pub timeout: Duration,
    pub settle: Duration,
    pub grace: Duration,
    pub policies: Vec<Reconnect>,
    pub pids: Vec<u32>,
    pub decoder: crate::bench::template::Decoder,
    /// `--publish ws|'POST URL'`: rtcheck publishes the seqs (None: the hub does).
    pub publish: Option<crate::bench::publisher::Plan>,
    /// The library protocol on each WebSocket, what it subscribes to, and why.
    pub app: Option<(
        rtcheck_wire::appproto::AppProtocol,
        rtcheck_wire::appproto::Subscribe,
        crate::bench::appws::Spoken,
    )>,
    pub subscribe: Option<String>,
    pub ca: Option<std::path::PathBuf>,
    pub connect_timeout: Duration,
    /// SSE over HTTP/2 (`--http2`, https:// only).
    pub http2: bool,
    /// Prints progress lines on stderr.
    pub progress: bool,
}

/// Clients connecting at once before the restart (the restart's wave is never throttled).
const FIRST_CONNECTS: usize = 64;
/// The bound on the first connects (a server that never answers ends it).
const CONNECT_PHASE: Duration = Duration::from_secs(120);

use rtcheck_base::os::signal::check_interrupted;

/// What Ctrl-C (or SIGTERM) says: the run is given up, nothing keeps running.
const STOPPED: &str = "rehearse interrupted; the clients and the restart command were stopped";

/// Every policy's rehearsal, in turn.
pub fn run(o: &Options) -> anyhow::Result<RehearseReport> {
    // Ctrl-C and SIGTERM end the run through its loops: the hook's group is killed.
    rtcheck_base::os::signal::install_interrupt_handler();
    let (_, hard) = rtcheck_base::os::limits::raise_nofile_to_hard()?;
    rtcheck_base::os::limits::check_fd_budget(o.connections, hard)?;
    let trust = crate::sys::tls::Trust::with_ca(o.ca.clone());
    let tls = match o.http2 {
        // h2 alone: a server that would only speak HTTP/1.1 is refused, not measured.
        true => Some(crate::sys::tls::Tls::new(&trust, &o.target.host, &["h2"])?),
        false => o.target.tls(&trust)?,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut runs = Vec::new();
    for (i, p) in o.policies.iter().enumerate() {
        if i > 0 {
            // The next rehearsal starts from a settled server.
            std::thread::sleep(o.settle);
        }
        check_interrupted(STOPPED)?;
        runs.push(rt.block_on(one(o, *p, tls.clone()))?);
    }
    rt.shutdown_timeout(Duration::from_millis(500));
    let mut findings = Vec::new();
    for r in &runs {
        findings.extend(verdict::judge(r));
    }
    let notes: Vec<String> = runs
        .iter()
        .flat_map(|r| r.notes.iter().map(move |n| format!("{}: {n}", r.name)))
        .collect();
    Ok(RehearseReport {
        command: "rehearse".into(),
        url: o.url_shown.clone(),
        transport: match o.target.proto {
            crate::bench::target::Proto::Ws => "websocket".into(),
            _ if o.http2 => "sse over http/2".into(),
            _ => "sse".into(),
        },
        app_protocol: o.app.as_ref().map(|a| a.2.clone()),
        connections: o.connections,
        valid: runs.iter().all(|r| r.valid),
        notes,
        runs,
        findings,
    })
}

fn say(o: &Options, s: &str) {
    if o.progress {
        eprintln!("rtcheck rehearse: {s}");
    }
}

/// One rehearsal under policy `p`.
async fn one(o: &Options, p: Reconnect, tls: Option<crate::sys::tls::Tls>) -> anyhow::Result<Run> {
    let sh = Arc::new(client::Shared {
        target: o.target.clone(),
        tls,
        decoder: o.decoder.clone(),
        subscribe: o.subscribe.clone(),
        policy: p,
        t0: Instant::now(),
        highest: Mutex::new(Default::default()),
        connect_timeout: o.connect_timeout,
        away: Default::default(),
        started: Default::default(),
        received: Default::default(),
        one_history: o.publish.is_some(),
        app: o.app.as_ref().map(|(p, sub, _)| (*p, sub.clone())),
        h2: o.http2,
    });
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(0u8);
    let sem = Arc::new(tokio::sync::Semaphore::new(FIRST_CONNECTS));
    let tasks: Vec<_> = (0..o.connections)
        .map(|_| tokio::spawn(client::run(sh.clone(), sem.clone(), stop_rx.clone())))
        .collect();
    say(
        o,
        &format!("{}: connecting {} client(s)", p.name(), o.connections),
    );
    // Connected: every client either connected or failed its first attempt.
    let connected = || tasks.iter().filter(|t| !t.is_finished()).count();
    let settle_until = Instant::now() + CONNECT_PHASE;
    while sh.started.load(Ordering::Relaxed) < o.connections && Instant::now() < settle_until {
        check_interrupted(STOPPED)?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Publishing from the settle on: the clients hold seqs before the restart.
    let publishing = start_publisher(o).await?;
    let settled = Instant::now() + o.settle;
    while Instant::now() < settled {
        check_interrupted(STOPPED)?;
        tokio::time::sleep(Duration::from_millis(50).min(o.settle)).await;
    }
    let before = connected() as u64;
    let sampler = Sampler::start(o.watch, o.pids.clone(), sh.t0);
    let netstat_before = crate::sys::netstat::read(std::path::Path::new("/proc"));
    let hook_ms = sh.t0.elapsed().as_secs_f64() * 1000.0;
    let away_at_restart = sh_away(&sh);
    say(
        o,
        &format!(
            "{}: {before} connected; running the restart command",
            p.name()
        ),
    );
    let (cmd, limit) = (o.restart.clone(), o.restart_timeout);
    // Dropped on every way out of here (an error, Ctrl-C): a hook still running is killed.
    let group = hook::Group::default();
    let g = group.clone();
    let hook_task = tokio::task::spawn_blocking(move || hook::run_in(&cmd, limit, &g));
    let timed_out = wait_wave(&sh, &hook_task, o).await;
    if rtcheck_base::os::signal::interrupted() {
        group.kill();
        let _ = stop_tx.send(2);
        check_interrupted(STOPPED)?;
    }
    let measured_ms = sh.t0.elapsed().as_secs_f64() * 1000.0 - hook_ms;
    let netstat_after = crate::sys::netstat::read(std::path::Path::new("/proc"));
    let published = stop_publisher(&sh, publishing).await;
    let _ = stop_tx.send(2);
    let mut clients = Vec::with_capacity(tasks.len());
    for t in tasks {
        clients.push(t.await.unwrap_or_default());
    }
    let hook = match hook_task.await {
        Ok(h) => h,
        Err(e) => anyhow::bail!("the restart command's thread: {e}"),
    };
    let server = sampler.finish(hook_ms);
    let mut run = summarize(
        o,
        p,
        clients,
        hook,
        (hook_ms, measured_ms, timed_out),
        server,
        (netstat_before, netstat_after),
        published,
    );
    run.away_at_restart = away_at_restart;
    if away_at_restart * 100 > run.connected.max(1) {
        run.valid = false;
        run.notes.push(format!(
            "{away_at_restart} client(s) were away when the restart began (dropped while settling: a server removing slow clients, or the host saturated): this is not a rehearsal of {} clients; fewer clients or a quieter host",
            o.connections
        ));
    }
    Ok(run)
}

type Publishing = Option<(
    tokio::sync::watch::Sender<u8>,
    tokio::task::JoinHandle<crate::bench::wire::PublisherStat>,
)>;

/// Connect rtcheck's publisher (`--publish`) and start its schedule.
async fn start_publisher(o: &Options) -> anyhow::Result<Publishing> {
    use crate::bench::publisher;
    let Some(plan) = &o.publish else {
        return Ok(None);
    };
    let ready = publisher::connect(plan)
        .await
        .map_err(|e| anyhow::anyhow!("--publish {}: {e}", plan.via.name()))?;
    let (tx, rx) = tokio::sync::watch::channel(0u8);
    Ok(Some((
        tx,
        tokio::spawn(publisher::run(plan.clone(), ready, rx, 1)),
    )))
}

/// Stop the publisher, then let what it published reach the clients: until nothing
/// arrived for 500 ms (at most 5 s), so the last seqs are not counted as lost.
async fn stop_publisher(
    sh: &client::Shared,
    p: Publishing,
) -> Option<crate::bench::wire::PublisherStat> {
    let (tx, task) = p?;
    let _ = tx.send(1);
    let stat = task.await.ok();
    let end = Instant::now() + Duration::from_secs(5);
    let (mut last, mut quiet) = (sh.received.load(Ordering::Relaxed), Instant::now());
    while Instant::now() < end && quiet.elapsed() < Duration::from_millis(500) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let n = sh.received.load(Ordering::Relaxed);
        if n != last {
            (last, quiet) = (n, Instant::now());
        }
    }
    stat
}

/// Wait until the command returned, every dropped client is back and nothing dropped
/// for `--grace`, or `--timeout` from the restart (true: the timeout ended it).
async fn wait_wave(
    sh: &client::Shared,
    hook: &tokio::task::JoinHandle<hook::HookRun>,
    o: &Options,
) -> bool {
    let deadline = Instant::now() + o.timeout;
    let mut quiet_since = Instant::now();
    let mut hook_done = false;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if !hook_done && hook.is_finished() {
            hook_done = true;
            quiet_since = Instant::now();
        }
        if sh_away(sh) > 0 {
            quiet_since = Instant::now();
        }
        if hook_done && quiet_since.elapsed() >= o.grace {
            return false;
        }
        if Instant::now() >= deadline {
            return true;
        }
        if rtcheck_base::os::signal::interrupted() {
            return false;
        }
    }
}

/// `ip` is this host's: loopback, unspecified, or an address a socket can bind to here.
fn on_this_host(ip: std::net::IpAddr) -> bool {
    rtcheck_base::os::addr::is_loopback(ip)
        || ip.is_unspecified()
        || std::net::UdpSocket::bind((ip, 0)).is_ok()
}

/// Clients away now: dropped and not yet back (counted from the shared counters).
fn sh_away(sh: &client::Shared) -> u64 {
    sh.away.load(Ordering::Relaxed)
}

#[allow(clippy::too_many_arguments)]
fn summarize(
    o: &Options,
    p: Reconnect,
    clients: Vec<client::ClientOut>,
    hook: hook::HookRun,
    (hook_ms, measured_ms, timed_out): (f64, f64, bool),
    server: ServerSeries,
    (nb, na): (
        Result<crate::sys::netstat::ListenCounters, String>,
        Result<crate::sys::netstat::ListenCounters, String>,
    ),
    published: Option<crate::bench::wire::PublisherStat>,
) -> Run {
    let (clients, unowed, unconfirmed) = owed(o, clients, published.as_ref());
    let outages = summary::outages(&clients, hook_ms);
    let w = wave::measure(&outages);
    let connected = clients.iter().filter(|c| c.connected_ms.is_some()).count() as u64;
    let connect_errors = first_errors(&clients);
    let listen = listen_delta(o, nb, na);
    let delivery = summary::delivery(&clients);
    let mut notes = wave_notes(o, connected, &connect_errors, &w, timed_out);
    if let Some(p) = &published {
        notes.extend(publisher_notes(p, unowed, unconfirmed));
    }
    let publisher_ok = published.as_ref().is_none_or(|p| p.sent > 0);
    let (gave_up, dropped_before_restart) = dropouts(&clients, hook_ms);
    // No client dropped: nothing rehearsed (a failed command is its own failure).
    let rehearsed = w.dropped > 0 || !hook.ok;
    Run {
        name: p.name(),
        reconnect: p,
        connected,
        dropped_before_restart,
        away_at_restart: 0,
        connect_errors,
        first_drop_ms: outages
            .iter()
            .map(|x| x.dropped_ms - hook_ms)
            .reduce(f64::min),
        measured_ms,
        timed_out,
        drain: summary::drain(&clients, hook_ms, o.app.as_ref().map(|a| a.0), o.http2),
        back_50_ms: w.back_50_ms,
        back_95_ms: w.back_95_ms,
        back_100_ms: w.back_100_ms,
        peak_connects_per_s: w.peak_connects_per_s,
        lost_silently: delivery.lost_silently,
        gave_up,
        wave: w,
        failed_connects: summary::failed(&clients),
        listen,
        server,
        delivery,
        valid: connected > 0 && publisher_ok && rehearsed,
        notes,
        hook,
        publisher: published,
        unowed: unowed as u64,
        unconfirmed: unconfirmed as u64,
    }
}

/// Pure: the clients with what rtcheck failed to publish (the hub down) taken out, owed
/// to no client; how many seqs that was, and how many sends over --publish ws just
/// before a failure are not known taken (still owed, lost when missed, counted apart).
fn owed(
    o: &Options,
    clients: Vec<client::ClientOut>,
    published: Option<&crate::bench::wire::PublisherStat>,
) -> (Vec<client::ClientOut>, usize, usize) {
    let unowed = published
        .map(|p| summary::unowed(&clients, &p.failed_seqs))
        .unwrap_or_default();
    let unconfirmed = match published {
        Some(p) if ws_publisher(o) => summary::unconfirmed(&clients, &p.failed_seqs).len(),
        _ => 0,
    };
    let n = unowed.len();
    (summary::without_unowed(clients, &unowed), n, unconfirmed)
}

/// Pure: clients that gave up reconnecting, and clients dropped before the restart.
fn dropouts(clients: &[client::ClientOut], hook_ms: f64) -> (u64, u64) {
    let gave_up = clients.iter().filter(|c| c.gave_up).count() as u64;
    let before = clients
        .iter()
        .filter(|c| c.drops.iter().any(|d| d.0 < hook_ms))
        .count() as u64;
    (gave_up, before)
}

/// Pure: the first three distinct connect errors.
fn first_errors(clients: &[client::ClientOut]) -> Vec<String> {
    let mut errors: Vec<String> = Vec::new();
    for e in clients.iter().filter_map(|c| c.connect_error.clone()) {
        if errors.len() < 3 && !errors.contains(&e) {
            errors.push(e);
        }
    }
    errors
}

/// Pure: the accept queue's overflows and drops during the run, from this host's
/// counters before and after; none when the server is elsewhere or a read failed.
fn listen_delta(
    o: &Options,
    nb: Result<crate::sys::netstat::ListenCounters, String>,
    na: Result<crate::sys::netstat::ListenCounters, String>,
) -> Listen {
    let unread = |error: String| Listen {
        listen_overflows: None,
        listen_drops: None,
        error: Some(error),
    };
    match (nb, na) {
        // This host's counters say nothing of a server elsewhere (--allow-remote).
        _ if !on_this_host(o.watch.ip()) => unread(format!(
            "the server {} is not on this host: this host's accept-queue counters are not its own (run rehearse on the server's host, or --server-addr)",
            o.watch
        )),
        (Ok(b), Ok(a)) => Listen {
            listen_overflows: Some(a.overflows.saturating_sub(b.overflows)),
            listen_drops: Some(a.drops.saturating_sub(b.drops)),
            error: None,
        },
        (Err(e), _) | (_, Err(e)) => unread(e),
    }
}

/// Pure: what the wave says of the run itself: nothing rehearsed (no client connected),
/// nothing dropped, or clients still away at --timeout.
fn wave_notes(
    o: &Options,
    connected: u64,
    connect_errors: &[String],
    w: &wave::Wave,
    timed_out: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    if connected == 0 {
        notes.push(format!(
            "no client connected before the restart ({}): nothing was rehearsed",
            connect_errors.join("; ")
        ));
    } else if w.dropped == 0 {
        notes.push(format!(
            "{}; no client dropped after the restart began, within the window",
            model::NOTHING_REHEARSED
        ));
    }
    if timed_out && w.never_back > 0 {
        notes.push(format!(
            "ended at --timeout {} with {} client(s) still away; what was measured is kept",
            rtcheck_base::units::fmt_duration(o.timeout),
            w.never_back
        ));
    }
    notes
}

/// rtcheck publishes over a WebSocket of its own (no acknowledgement of what it sent).
fn ws_publisher(o: &Options) -> bool {
    matches!(
        o.publish.as_ref().map(|p| &p.via),
        Some(crate::bench::publisher::PublishVia::Ws)
    )
}

/// What the publisher did, said: nothing delivered (the counts mean nothing), or the
/// publishes that failed (the hub down) and so are owed to no client, and the sends
/// before them over a WebSocket not known taken (still owed).
fn publisher_notes(
    p: &crate::bench::wire::PublisherStat,
    unowed: usize,
    unconfirmed: usize,
) -> Vec<String> {
    let first = p
        .first_error
        .as_deref()
        .map(|e| format!(" (first: {})", e.trim_start_matches("publisher: ")))
        .unwrap_or_default();
    if p.sent == 0 {
        return vec![format!(
            "the publisher ({}) delivered nothing to the hub{first}: no delivery was measured",
            p.via
        )];
    }
    if p.failed == 0 {
        return Vec::new();
    }
    let mut notes = vec![format!(
        "{} of {} publish(es) failed while the hub was down{first}; {unowed} that no client received are owed to none",
        p.failed,
        p.failed + p.sent
    )];
    if unconfirmed > 0 {
        notes.push(format!(
            "{unconfirmed} message(s) written without error just before a send failed reached no client (unconfirmed): sent into a socket whose hub died, not known whether the hub took them; still owed, so counted in lost"
        ));
    }
    notes
}

/// The server's process sampled every 200 ms on a thread: by `--pid`, else the listener
/// on the target's port, found again after a restart (a new process).
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<ServerSeries>>,
}

impl Sampler {
    fn start(addr: std::net::SocketAddr, pids: Vec<u32>, t0: Instant) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let (ready, first) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || sample_loop(addr, &pids, t0, &s2, ready));
        // The first reading is the "before": taken before the restart command runs.
        let _ = first.recv_timeout(Duration::from_secs(5));
        Sampler {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self, hook_ms: f64) -> ServerSeries {
        self.stop.store(true, Ordering::Relaxed);
        let mut s = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_else(|| empty_series(Some("the sampler stopped".into())));
        (s.rss_before_mb, s.fds_before) = before(&s.series, hook_ms);
        for p in &mut s.series {
            p.0 -= hook_ms;
        }
        s
    }
}

/// The "before": the last reading taken before the restart command started (ms since
/// t0 < `hook_ms`), none when the process was first read after it.
fn before(series: &[(f64, f64, u64)], hook_ms: f64) -> (Option<f64>, Option<u64>) {
    series
        .iter()
        .rfind(|p| p.0 < hook_ms)
        .map_or((None, None), |p| (Some(p.1), Some(p.2)))
}

fn empty_series(error: Option<String>) -> ServerSeries {
    ServerSeries {
        found_by: Vec::new(),
        samples: 0,
        rss_before_mb: None,
        rss_peak_mb: None,
        rss_end_mb: None,
        fds_before: None,
        fds_peak: None,
        series: Vec::new(),
        error,
    }
}

/// Readings at most (10 minutes at 5 a second).
const MAX_SAMPLES: usize = 3000;

fn sample_loop(
    addr: std::net::SocketAddr,
    pids: &[u32],
    t0: Instant,
    stop: &AtomicBool,
    ready: std::sync::mpsc::Sender<()>,
) -> ServerSeries {
    use crate::sys::procwatch;
    let mut out = empty_series(None);
    let mut target: Option<procwatch::Target> = None;
    let mut last_error = None;
    while !stop.load(Ordering::Relaxed) && out.series.len() < MAX_SAMPLES {
        if target.is_none() {
            match procwatch::find(addr, pids) {
                Ok(t) => {
                    if !out.found_by.contains(&t.found_by) {
                        out.found_by.push(t.found_by.clone());
                    }
                    target = Some(t);
                }
                Err(e) => last_error = Some(e),
            }
        }
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        if let Some(t) = &target {
            match procwatch::read(&t.pids, ms / 1000.0) {
                // A process on its way out reads as 0 B and 0 fds: gone, not a figure.
                Ok(s) if s.rss_bytes == 0 => target = None,
                Ok(s) => {
                    let mb = s.rss_bytes as f64 / 1e6;
                    out.series.push((ms, mb, s.fds));
                }
                // Gone (restarted): found again on the next turn.
                Err(e) => {
                    last_error = Some(e);
                    target = None;
                }
            }
        }
        let _ = ready.send(());
        std::thread::sleep(Duration::from_millis(200));
    }
    out.samples = out.series.len() as u64;
    out.rss_end_mb = out.series.last().map(|p| p.1);
    out.rss_peak_mb = out.series.iter().map(|p| p.1).reduce(f64::max);
    out.fds_peak = out.series.iter().map(|p| p.2).max();
    if out.series.is_empty() {
        out.error = last_error;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Connect errors: the first three distinct ones, in order.
    #[test]
    fn first_errors_are_distinct_and_at_most_three() {
        let c = |e: &str| client::ClientOut {
            connect_error: Some(e.into()),
            ..Default::default()
        };
        let clients = ["a", "a", "b", "c", "d"].map(c);
        assert_eq!(first_errors(&clients), ["a", "b", "c"]);
    }

    #[test]
    fn unconfirmed_sends_are_their_own_note_not_a_part_of_the_failed() {
        let p = crate::bench::wire::PublisherStat {
            via: "ws".into(),
            sent: 90,
            failed: 10,
            ..Default::default()
        };
        let n = publisher_notes(&p, 8, 3);
        assert_eq!(n.len(), 2, "{n:?}");
        assert!(n[0].contains("10 of 100 publish(es) failed"), "{n:?}");
        assert!(
            n[1].starts_with("3 message(s) written without error"),
            "{n:?}"
        );
        assert!(n[1].contains("unconfirmed") && n[1].contains("counted in lost"));
        assert!(!n[1].contains("of the"), "{n:?}");
        assert_eq!(publisher_notes(&p, 8, 0).len(), 1);
    }

    #[test]
    fn only_this_hosts_addresses_are_on_this_host() {
        assert!(on_this_host("127.0.0.1".parse().unwrap()));
        assert!(on_this_host("::1".parse().unwrap()));
        // TEST-NET-3: never a local address.
        assert!(!on_this_host("203.0.113.7".parse().unwrap()));
    }

    #[test]
    fn the_before_reading_precedes_the_restart_or_is_none() {
        let s = [(100.0, 10.0, 5), (300.0, 11.0, 6), (600.0, 50.0, 9)];
        assert_eq!(before(&s, 400.0), (Some(11.0), Some(6)));
        assert_eq!(before(&s, 50.0), (None, None));
        assert_eq!(before(&[], 50.0), (None, None));
    }
}
