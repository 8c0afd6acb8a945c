//! Running the sweep (I/O): virtual users on one connection each, the open-loop
//! scheduler, the metrics sampler, and the load generator's own CPU.
use super::analysis::{self, Raw};
use super::client::{self, Answer, ErrorKind, Target};
use super::conn::{self, Request, UserConn};
use super::model::Saturation;
use super::saturation;
use super::single;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug, Clone)]
pub struct Plan {
    pub request: Arc<Request>,
    pub step: Duration,
    pub timeout: Duration,
    /// Open loop: arrivals per second.
    pub rate: Option<f64>,
    pub metrics: Option<Arc<Target>>,
    pub threads: u32,
}

/// Back-off after a failed connect, so a dead target is not hammered in a spin.
const RECONNECT_PAUSE: Duration = Duration::from_millis(10);
/// Metrics scrape interval.
const SCRAPE_EVERY: Duration = Duration::from_millis(100);

/// Account for one finished attempt: `latency` from its start (or its schedule), `end`
/// the clock read when it finished (the body's end for an answer).
fn record(
    raw: &mut Raw,
    slice: usize,
    latency: Duration,
    end: Instant,
    r: Result<Answer, ErrorKind>,
) {
    let us = latency.as_micros().max(1) as u64;
    let _ = raw.latency_us.record(us.min(raw.latency_us.high()));
    raw.sum_latency_us += us as f64;
    let r = r.and_then(|a| client::check_status(a.status).map(|()| a));
    raw.record_slice(slice, us, r.is_ok());
    match r {
        Ok(a) => {
            raw.ok += 1;
            raw.body_bytes += a.body_bytes as u64;
            let gap = end.into_std().saturating_duration_since(a.head);
            let g = gap.as_micros().max(1) as u64;
            let _ = raw.gap_us.record(g.min(raw.gap_us.high()));
        }
        Err(e) => *raw.errors.entry(e.as_str().to_string()).or_default() += 1,
    }
}

/// A user's first connection, opened before the level's clock starts.
async fn first_conn(p: &Plan) -> Option<UserConn> {
    let timer = tokio::time::sleep(p.timeout);
    tokio::pin!(timer);
    conn::connect(&p.request, timer).await.ok()
}

/// Closed loop: send, wait for the answer, send again, until `deadline`. Two clock reads
/// per request (the answer's head and its end, which is the next request's start) and one
/// timer per user, moved forward per request. The users of one thread record into one
/// shared `Raw`: a histogram per user is 180 KB each, and recording into 2 x C of them
/// misses the cache on nearly every request.
async fn user(p: Arc<Plan>, raw: Rc<RefCell<Raw>>, start: Instant, deadline: Instant) -> f64 {
    let mut conn = first_conn(&p).await;
    tokio::time::sleep_until(start).await;
    let timer = tokio::time::sleep_until(start + p.timeout);
    tokio::pin!(timer);
    let mut t0 = Instant::now();
    let mut end = start;
    while t0 < deadline {
        raw.borrow_mut().started += 1;
        timer.as_mut().reset(t0 + p.timeout);
        let r = conn::attempt(&mut conn, &p.request, timer.as_mut()).await;
        end = Instant::now();
        let refused = matches!(r, Err(ErrorKind::Refused | ErrorKind::Connect));
        let slice = analysis::slice_of((end - start).as_secs_f64(), p.step.as_secs_f64());
        record(&mut raw.borrow_mut(), slice, end - t0, end, r);
        t0 = end;
        if refused {
            tokio::time::sleep(RECONNECT_PAUSE).await;
            t0 = Instant::now();
        }
    }
    (end - start).as_secs_f64()
}

/// One thread's share of a closed-loop level: its users' records and their summed
/// active time.
async fn thread_users(p: Arc<Plan>, share: u32, start: Instant, deadline: Instant) -> (Raw, f64) {
    let raw = Rc::new(RefCell::new(Raw::new(0)));
    let local = tokio::task::LocalSet::new();
    let users: Vec<_> = (0..share)
        .map(|_| local.spawn_local(user(p.clone(), raw.clone(), start, deadline)))
        .collect();
    let active = local
        .run_until(async {
            let mut active = 0.0;
            for u in users {
                // A user that panicked counts no active time: Little's law (over all C
                // users) then marks the level invalid.
                active += u.await.unwrap_or(0.0);
            }
            active
        })
        .await;
    drop(local);
    let raw = Rc::try_unwrap(raw).map_or_else(|rc| rc.borrow().clone(), RefCell::into_inner);
    (raw, active)
}

/// Closed loop: C users spread over `threads` OS threads, each a current-thread runtime
/// with its own epoll and timers (as wrk does): no work stealing and no cross-thread
/// wake-up per answer, which a shared multi-thread runtime pays on every request.
/// Returns each thread's records and its users' summed active time.
async fn closed_loop(p: &Arc<Plan>, c: u32, start: Instant, deadline: Instant) -> Vec<(Raw, f64)> {
    let n = p.threads.clamp(1, c);
    let mut done = Vec::new();
    for i in 0..n {
        // Users i, i + n, i + 2n, ... run on thread i.
        let share = (c - i).div_ceil(n);
        let p = p.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name(format!("rtcheck-load-{i}"))
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                let _ = tx.send(rt.block_on(thread_users(p, share, start, deadline)));
            });
        if spawned.is_ok() {
            done.push(rx);
        }
    }
    let mut all = Vec::new();
    for rx in done {
        // A thread that could not start its runtime sends nothing: its users are missing,
        // and Little's law (which counts all C users) marks the level invalid.
        if let Ok(r) = rx.await {
            all.push(r);
        }
    }
    all
}

/// Open loop: requests arrive on a schedule; latency counts from the scheduled start,
/// so time waiting for a free connection is in it.
async fn open_worker(
    p: Arc<Plan>,
    start: Instant,
    rx: Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<Instant>>>,
) -> Raw {
    let slice = |at: Instant| analysis::slice_of((at - start).as_secs_f64(), p.step.as_secs_f64());
    let mut raw = Raw::new(0);
    let mut conn = first_conn(&p).await;
    let timer = tokio::time::sleep(p.timeout);
    tokio::pin!(timer);
    loop {
        let next = rx.lock().await.recv().await;
        let Some(scheduled) = next else { break };
        raw.started += 1;
        let due = scheduled + p.timeout;
        if Instant::now() >= due {
            // Waited out its whole timeout in the client's queue.
            let now = Instant::now();
            record(
                &mut raw,
                slice(scheduled),
                now - scheduled,
                now,
                Err(ErrorKind::Timeout),
            );
            continue;
        }
        timer.as_mut().reset(due);
        let r = conn::attempt(&mut conn, &p.request, timer.as_mut()).await;
        let end = Instant::now();
        record(&mut raw, slice(scheduled), end - scheduled, end, r);
    }
    raw
}

async fn open_loop(
    p: &Arc<Plan>,
    c: u32,
    rate: f64,
    start: Instant,
    deadline: Instant,
) -> (Vec<Raw>, f64) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let workers: Vec<_> = (0..c)
        .map(|_| tokio::spawn(open_worker(p.clone(), start, rx.clone())))
        .collect();
    // A tiny --rate is a period past any bound: capped, never a from_secs_f64 panic.
    let period = Duration::try_from_secs_f64(1.0 / rate)
        .unwrap_or(rtcheck_base::units::MAX_DURATION)
        .min(rtcheck_base::units::MAX_DURATION);
    let mut at = start;
    while at < deadline {
        tokio::time::sleep_until(at).await;
        if tx.send(at).is_err() {
            break;
        }
        at += period;
    }
    drop(tx);
    let mut raws = Vec::new();
    for w in workers {
        if let Ok(r) = w.await {
            raws.push(r);
        }
    }
    (raws, start.elapsed().as_secs_f64())
}

/// Scrape the target's metrics until `stop`; busy workers, pool size, queue length.
async fn sampler(
    t: Arc<Target>,
    timeout: Duration,
    start: Instant,
    stop: Arc<AtomicBool>,
) -> Option<Saturation> {
    let mut conn = single::connect(&t, timeout).await.ok();
    // Only the level's own span: users connecting beforehand are not load.
    tokio::time::sleep_until(start).await;
    let (mut n, mut sum, mut max, mut qmax) = (0u32, 0.0, 0.0f64, None::<f64>);
    let mut last = None;
    while !stop.load(Ordering::Relaxed) {
        if conn.is_none() {
            conn = single::connect(&t, timeout).await.ok();
        }
        if let Some(c) = conn.as_mut() {
            match single::fetch(c, &t, timeout).await {
                Ok((200, body)) => {
                    if let Some(s) = saturation::parse(&body) {
                        n += 1;
                        sum += s.busy;
                        max = max.max(s.busy);
                        if let Some(q) = s.queue {
                            qmax = Some(qmax.map_or(q, |m: f64| m.max(q)));
                        }
                        last = Some(s);
                    }
                }
                _ => conn = None,
            }
        }
        tokio::time::sleep(SCRAPE_EVERY).await;
    }
    let s = last?;
    let mean = sum / n as f64;
    Some(Saturation {
        metric: s.metric,
        busy_mean: (mean * 100.0).round() / 100.0,
        busy_max: max,
        workers: s.workers,
        saturation_pct: s.workers.map(|w| (mean / w * 1000.0).round() / 10.0),
        queue_max: qmax,
        samples: n,
    })
}

/// One level: C users (or an open loop capped at C connections) for one step.
pub async fn level(p: Arc<Plan>, c: u32) -> Raw {
    let stop = Arc::new(AtomicBool::new(false));
    // Connections open before the clock starts (bounded by one timeout).
    let start = Instant::now() + p.timeout.min(Duration::from_secs(2));
    let sampler = p
        .metrics
        .clone()
        .map(|m| tokio::spawn(sampler(m, p.timeout, start, stop.clone())));
    let deadline = start + p.step;
    let cpu0 = rtcheck_base::os::clock::cpu_seconds();
    let mut raw = Raw::new(c);
    match p.rate {
        None => {
            let mut active = 0.0;
            for (r, a) in closed_loop(&p, c, start, deadline).await {
                raw.merge(&r);
                active += a;
            }
            raw.active_s = active / c as f64;
        }
        Some(rate) => {
            let (raws, wall) = open_loop(&p, c, rate, start, deadline).await;
            raws.iter().for_each(|r| raw.merge(r));
            raw.active_s = wall;
            raw.offered_rps = Some(rate);
        }
    }
    // The pre-connect wait is idle time, not load: count CPU over the level's own span.
    raw.cpu_s = rtcheck_base::os::clock::cpu_seconds() - cpu0;
    raw.threads = p.threads;
    stop.store(true, Ordering::Relaxed);
    if let Some(s) = sampler {
        raw.saturation = s.await.ok().flatten();
    }
    raw
}
