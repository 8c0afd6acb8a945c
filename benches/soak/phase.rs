//! One phase of the soak: a `serve` child (`--wait-start`), its baseline (RSS, open fds),
//! the counting clients connected before publishing starts, the adversarial ones during
//! it, the server sampled while it runs, then the drain and the wait for fds to return.
use super::clients::{self, Ctx, Kind, Knobs, Outcome};
use super::hist::Hist;
use anyhow::{anyhow, bail, Context};
use rtcheck::sys::{control, serve};
use rtcheck_base::os::deadline::Deadline;
use rtcheck_base::os::signal::{interrupted, Interrupted};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What a phase runs: the server's flags and the client mix.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: &'static str,
    pub flags: Vec<String>,
    pub mix: Vec<(Kind, usize)>,
    pub session_ack: bool,
    pub rounds: u64,
    pub knobs: Knobs,
    /// How long sessions may outlive their clients (session-ack; zero otherwise).
    pub session_ttl: Duration,
    pub progress: bool,
}

/// The server as sampled: baseline, peak, after everyone left.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub rss_base: u64,
    pub rss_peak: u64,
    pub rss_after: u64,
    pub fds_base: u64,
    pub fds_peak: u64,
    pub fds_after: u64,
    /// Seconds after the last client left until fds were back at the baseline (None: not
    /// within [`FDS_BACK`]).
    pub fds_back_s: Option<f64>,
    pub stats_start: serde_json::Value,
    pub stats_end: serde_json::Value,
}

/// What a phase measured.
pub struct Measured {
    pub spec: Spec,
    pub outcomes: Vec<(Kind, Outcome)>,
    pub server: Samples,
    /// Wall time of publishing, the generator's CPU over it, the server's.
    pub publish_s: f64,
    pub gen_cpu_s: f64,
    pub server_cpu_s: f64,
    pub gen_rss_peak: u64,
    pub lateness: (u64, f64, f64, f64),
    pub loop_lag: (u64, f64, f64, f64),
}

/// The bound on fds coming back once every client left.
pub const FDS_BACK: Duration = Duration::from_secs(60);
/// Counting clients must all connect within this.
const CONNECT_WAIT: Duration = Duration::from_secs(180);
/// After the last round, counting clients get this long to read up to it.
const DRAIN: Duration = Duration::from_secs(30);

pub fn run(spec: Spec) -> anyhow::Result<Measured> {
    let scratch = serve::Scratch::new("soak")?;
    let mut srv = serve::start(
        &spec.flags,
        &scratch.0,
        1,
        &Deadline::new(Duration::from_secs(60)),
    )?;
    let (addr, pid) = (srv.addrs[0], srv.guard.pid());
    let mut s = Samples {
        stats_start: stats(addr)?,
        ..Samples::default()
    };
    s.fds_base = settled_fds(pid)?;
    s.rss_base = rss(pid)?;
    s.rss_peak = s.rss_base;
    s.fds_peak = s.fds_base;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let (go_tx, go) = watch::channel(false);
    let (stop_tx, stop) = watch::channel(false);
    let (abort_tx, abort) = watch::channel(false);
    let ctx = Arc::new(Ctx {
        addr,
        end: spec.rounds,
        knobs: spec.knobs,
        session_ack: spec.session_ack,
        go,
        stop,
        abort,
        t0: Instant::now(),
        ready: 0.into(),
        received: 0.into(),
        connects: 0.into(),
        lateness: Hist::default(),
    });
    let loop_lag = Arc::new(Hist::default());
    rt.spawn(watch_loop_lag(loop_lag.clone(), ctx.abort.clone()));

    let result = drive(&rt, &ctx, &spec, &mut srv, &mut s, &go_tx, &stop_tx);
    let _ = abort_tx.send(true);
    let (outcomes, publish) = match result {
        Ok(x) => x,
        Err(e) => {
            rt.shutdown_timeout(Duration::from_secs(3));
            return Err(e);
        }
    };
    let outcomes = collect(&rt, outcomes)?;
    rt.shutdown_timeout(Duration::from_secs(3));
    after(&spec, addr, pid, &mut s)?;
    drop(srv);
    let (publish_s, gen_cpu_s, gen_rss_peak) = publish;
    let server_cpu_s = cpu(&s.stats_end) - cpu(&s.stats_start);
    Ok(Measured {
        outcomes,
        server: s,
        publish_s,
        gen_cpu_s,
        server_cpu_s,
        gen_rss_peak,
        lateness: ctx.lateness.summary(),
        loop_lag: loop_lag.summary(),
        spec,
    })
}

type Handles = Vec<(Kind, tokio::task::JoinHandle<Outcome>)>;

/// Connect, publish, sample, stop, drain. Returns the task handles and (publishing wall
/// seconds, generator CPU seconds over them, generator RSS peak).
fn drive(
    rt: &tokio::runtime::Runtime,
    ctx: &Arc<Ctx>,
    spec: &Spec,
    srv: &mut serve::ServeChild,
    s: &mut Samples,
    go: &watch::Sender<bool>,
    stop: &watch::Sender<bool>,
) -> anyhow::Result<(Handles, (f64, f64, u64))> {
    let handles = spawn_all(rt, ctx, spec)?;
    // Everyone counting is in: seq 1 is owed to all of them.
    control::start(ctx.addr, spec.rounds)?;
    let _ = go.send(true);
    let publish = sample_until_published(ctx, spec, srv, s)?;
    let _ = stop.send(true);
    // Counting clients read up to the last round; the others leave now.
    let t_drain = Instant::now();
    while handles.iter().any(|(k, h)| k.counts() && !h.is_finished()) && t_drain.elapsed() < DRAIN {
        if interrupted() {
            return Err(Interrupted("soak interrupted").into());
        }
        s.rss_peak = s.rss_peak.max(rss(srv.guard.pid())?);
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok((handles, publish))
}

/// Spawn every client, the counting kinds first and in batches of 250 (the server's
/// accept queue and ours stay small), and wait until every counting one is connected.
fn spawn_all(rt: &tokio::runtime::Runtime, ctx: &Arc<Ctx>, spec: &Spec) -> anyhow::Result<Handles> {
    let counting: usize = spec
        .mix
        .iter()
        .filter(|(k, _)| k.counts())
        .map(|(_, n)| n)
        .sum();
    let order = spec
        .mix
        .iter()
        .filter(|(k, _)| k.counts())
        .chain(spec.mix.iter().filter(|(k, _)| !k.counts()));
    let mut handles: Handles = Vec::new();
    let t0 = Instant::now();
    for &(kind, n) in order {
        for _ in 0..n {
            let i = handles.len();
            handles.push((kind, rt.spawn(clients::run(ctx.clone(), kind, i))));
            if kind.counts() && (i + 1).is_multiple_of(250) {
                wait_for(t0, "connecting", || {
                    ctx.ready.load(Relaxed) + 250 > i as u64
                })?;
            }
        }
    }
    wait_for(t0, "connecting", || {
        ctx.ready.load(Relaxed) >= counting as u64
    })
    .map_err(|e| {
        anyhow!(
            "{e}: {} of {counting} counting clients connected",
            ctx.ready.load(Relaxed)
        )
    })?;
    if spec.progress {
        eprintln!(
            "[{}] {counting} counting clients connected in {:.1} s; publishing {} rounds",
            spec.name,
            t0.elapsed().as_secs_f64(),
            spec.rounds
        );
    }
    Ok(handles)
}

/// Sample the server (RSS every 250 ms; fds and stats every second) until it published
/// the last round. Returns (wall seconds, generator CPU seconds, generator RSS peak).
fn sample_until_published(
    ctx: &Ctx,
    spec: &Spec,
    srv: &mut serve::ServeChild,
    s: &mut Samples,
) -> anyhow::Result<(f64, f64, u64)> {
    let (addr, pid) = (ctx.addr, srv.guard.pid());
    let (t0, cpu0) = (Instant::now(), rtcheck_base::os::clock::cpu_seconds());
    let limit = Duration::from_secs_f64(spec.rounds as f64 / rate(spec)) + Duration::from_secs(120);
    let (mut gen_rss, mut last_progress, mut tick) = (0, Instant::now(), Instant::now());
    loop {
        if interrupted() {
            return Err(Interrupted("soak interrupted").into());
        }
        if let Some(st) = srv.guard.try_exited() {
            bail!(
                "the server exited ({st}) during the soak: {}",
                serve::tail(&srv.log, 3)
            );
        }
        s.rss_peak = s.rss_peak.max(rss(pid)?);
        gen_rss = gen_rss.max(rtcheck_base::os::proc::self_rss_bytes());
        if tick.elapsed() >= Duration::from_secs(1) {
            tick = Instant::now();
            s.fds_peak = s.fds_peak.max(fds(pid)?);
            let st = stats(addr)?;
            if spec.progress && last_progress.elapsed() >= Duration::from_secs(15) {
                last_progress = Instant::now();
                progress(spec, t0, ctx, &st, s);
            }
            if st["finished"] == true || st["rounds_sent"].as_u64().unwrap_or(0) >= spec.rounds {
                let cpu = rtcheck_base::os::clock::cpu_seconds() - cpu0;
                return Ok((t0.elapsed().as_secs_f64(), cpu, gen_rss));
            }
        }
        if t0.elapsed() > limit {
            bail!(
                "publishing {} rounds took over {} s",
                spec.rounds,
                limit.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Join every task (abort has been sent: they leave within a few seconds).
fn collect(rt: &tokio::runtime::Runtime, handles: Handles) -> anyhow::Result<Vec<(Kind, Outcome)>> {
    rt.block_on(async {
        let mut out = Vec::with_capacity(handles.len());
        for (k, h) in handles {
            match tokio::time::timeout(Duration::from_secs(15), h).await {
                Ok(Ok(o)) => out.push((k, o)),
                Ok(Err(e)) => return Err(anyhow!("a {} client failed: {e}", k.name())),
                Err(_) => return Err(anyhow!("a {} client did not leave within 15 s", k.name())),
            }
        }
        Ok(out)
    })
}

/// Every client left: wait for fds to come back to the baseline, sessions to expire,
/// RSS to settle; the final stats.
fn after(spec: &Spec, addr: std::net::SocketAddr, pid: u32, s: &mut Samples) -> anyhow::Result<()> {
    let t = Instant::now();
    loop {
        s.fds_after = fds(pid)?;
        if s.fds_after <= s.fds_base {
            s.fds_back_s = Some(t.elapsed().as_secs_f64());
            break;
        }
        if t.elapsed() > FDS_BACK || interrupted() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Anonymous sessions outlive their clients by the TTL; then their memory is given back.
    let until = Instant::now() + spec.session_ttl * 2 + Duration::from_secs(10);
    loop {
        let st = stats(addr)?;
        let held = st["sessions"]["count"].as_u64().unwrap_or(0);
        if held == 0 || Instant::now() > until || interrupted() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // RSS after: the lowest of a few samples over 3 s (trims run when budgets empty).
    s.rss_after = u64::MAX;
    for _ in 0..6 {
        s.rss_after = s.rss_after.min(rss(pid)?);
        std::thread::sleep(Duration::from_millis(500));
    }
    s.stats_end = stats(addr)?;
    if interrupted() {
        return Err(Interrupted("soak interrupted").into());
    }
    Ok(())
}

fn progress(spec: &Spec, t0: Instant, ctx: &Ctx, st: &serde_json::Value, s: &Samples) {
    let (_, _, p99, max) = ctx.lateness.summary();
    eprintln!(
        "[{}] {:>4.0} s: round {}/{}, server clients ws {} sse {}, sessions {}, removed {}, drops {}; received {}, connects {}; healthy lateness p99 {p99:.0} ms (max {max:.0}); server RSS {:.1} MiB (peak {:.1}), fds {}",
        spec.name,
        t0.elapsed().as_secs_f64(),
        st["rounds_sent"],
        spec.rounds,
        st["clients"]["ws"],
        st["clients"]["sse"],
        st["sessions"]["count"],
        st["removed"],
        st["drops"],
        ctx.received.load(Relaxed),
        ctx.connects.load(Relaxed),
        st["rss_bytes"].as_f64().unwrap_or(0.0) / 1048576.0,
        s.rss_peak as f64 / 1048576.0,
        st["open_fds"],
    );
}

/// Every 50 ms, how late the generator's runtime wakes a timer: its own overload shows
/// here (a healthy client that falls behind while this stays low is the server's).
async fn watch_loop_lag(h: Arc<Hist>, mut abort: watch::Receiver<bool>) {
    let tick = Duration::from_millis(50);
    loop {
        let t = Instant::now();
        tokio::select! {
            _ = tokio::time::sleep(tick) => h.record(t.elapsed().saturating_sub(tick)),
            _ = abort.changed() => return,
        }
    }
}

fn wait_for(t0: Instant, what: &str, mut ok: impl FnMut() -> bool) -> anyhow::Result<()> {
    while !ok() {
        if interrupted() {
            return Err(Interrupted("soak interrupted").into());
        }
        if t0.elapsed() > CONNECT_WAIT {
            bail!("{what}: over {} s", CONNECT_WAIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn rate(spec: &Spec) -> f64 {
    let i = spec
        .flags
        .iter()
        .position(|f| f == "--rate")
        .expect("--rate is passed");
    spec.flags[i + 1].parse().expect("a number")
}

fn stats(addr: std::net::SocketAddr) -> anyhow::Result<serde_json::Value> {
    let (status, body) = control::request(addr, "GET", "/control/stats")?;
    if status != 200 {
        bail!("{addr}/control/stats: HTTP {status}");
    }
    serde_json::from_str(&body).map_err(|e| anyhow!("{addr}/control/stats: {e}"))
}

fn cpu(st: &serde_json::Value) -> f64 {
    st["cpu_seconds"].as_f64().unwrap_or(0.0)
}

fn rss(pid: u32) -> anyhow::Result<u64> {
    rtcheck_base::os::proc::rss_of(pid)
}

fn fds(pid: u32) -> anyhow::Result<u64> {
    rtcheck_base::os::proc::open_fds(&pid.to_string())
}

/// The fd count once two readings 200 ms apart agree (a control request may be closing).
fn settled_fds(pid: u32) -> anyhow::Result<u64> {
    let mut prev = fds(pid)?;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(200));
        let now = fds(pid)?;
        if now == prev {
            return Ok(now);
        }
        prev = now;
    }
    Ok(prev)
}
