//! `audit --watch DUR` and `--listen ADDR` (issue 28): the read-only audit again every
//! DUR until SIGINT/SIGTERM, each output rewritten atomically (temp file + rename, so
//! node_exporter's textfile collector never reads half a file), and optionally the last
//! audit's gauges served at `/metrics`. A run that fails (a vanished --procfs) is one line
//! on stderr and the loop goes on: `rtcheck_last_run_timestamp_seconds` then stops
//! advancing, which is what a dashboard alerts on.
use super::{once, render, AuditArgs};
use crate::cmd::baseline::Loaded;
use crate::cmd::Ctx;
use crate::findings::Outcome;
use crate::report::prometheus;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often `--listen` without `--watch` re-audits.
pub const LISTEN_EVERY: Duration = Duration::from_secs(15);
/// Shortest `--watch`: an audit takes milliseconds, but a tighter loop is a mistake.
pub const MIN_EVERY: Duration = Duration::from_secs(1);
/// Largest request head `/metrics` reads, and how long it waits for one.
const MAX_REQUEST: usize = 8 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Refuse what a watch cannot do, before anything runs.
fn validate(a: &AuditArgs) -> anyhow::Result<Duration> {
    if a.verify {
        anyhow::bail!(
            "--watch/--listen: --verify runs live experiments; a watch is the read-only audit"
        );
    }
    if a.baseline.write_baseline.is_some() {
        anyhow::bail!("--watch/--listen: --write-baseline is for one run");
    }
    let every = a.watch.unwrap_or(LISTEN_EVERY);
    if every < MIN_EVERY {
        anyhow::bail!(
            "--watch {}: at least 1s",
            rtcheck_base::units::fmt_duration(every)
        );
    }
    if let Some(addr) = a.listen {
        if !addr.ip().is_loopback() && !a.listen_public {
            anyhow::bail!(
                "--listen {addr}: not a loopback address; the gauges show this host's limits, \
                 add --listen-public to serve them there"
            );
        }
    }
    Ok(every)
}

pub fn run(a: &AuditArgs, base: &Loaded, ctx: Ctx) -> anyhow::Result<ExitCode> {
    let every = validate(a)?;
    // Bound before the first audit: a port in use is exit 2 at once.
    let listener = match a.listen {
        Some(addr) => {
            Some(TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("--listen {addr}: {e}"))?)
        }
        None => None,
    };
    rtcheck_base::os::signal::install_interrupt_handler();
    let metrics = Arc::new(Mutex::new(String::new()));
    if let Some(l) = listener {
        let m = Arc::clone(&metrics);
        let addr = l.local_addr()?;
        eprintln!("rtcheck: audit: serving /metrics on http://{addr}/metrics");
        std::thread::spawn(move || serve(l, m));
    }
    let mut runs = 0u64;
    loop {
        runs += 1;
        if let Err(e) = one_round(a, base, ctx, &metrics) {
            let e = rtcheck_base::escape::plain(&format!("{e:#}")).into_owned();
            eprintln!("rtcheck: audit --watch: run {runs}: {e}");
        }
        if sleep_unless_stopped(every) {
            break;
        }
    }
    eprintln!("rtcheck: audit --watch: stopped after {runs} runs");
    Ok(ExitCode::SUCCESS)
}

/// One audit: every output written (each atomically), the served gauges replaced.
fn one_round(
    a: &AuditArgs,
    base: &Loaded,
    ctx: Ctx,
    metrics: &Mutex<String>,
) -> anyhow::Result<()> {
    let (r, outcome, _) = once(a, base)?;
    if let Outcome::Nothing(why) = &outcome {
        anyhow::bail!("{why}");
    }
    let gauges = prometheus::render(&r, prometheus::unix_now());
    *metrics.lock().unwrap_or_else(|p| p.into_inner()) = gauges;
    a.out
        .emit_with(ctx.color, |f, p| render(&r, f, a.fail_on, p, a.explain))
}

/// Sleep `d` in short steps; true once SIGINT or SIGTERM arrived.
fn sleep_unless_stopped(d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if rtcheck_base::os::signal::interrupted() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
    }
    rtcheck_base::os::signal::interrupted()
}

/// Connections `/metrics` holds at once. Past it the oldest one still open is closed to
/// make room: a scraper sends its request at once and is gone within a second, so the
/// oldest is an idle or slowloris peer, and a scrape always gets a slot.
const MAX_CONNS: usize = 64;
/// Stack of a connection's thread: it parses one request head and writes one answer.
const CONN_STACK: usize = 64 * 1024;

/// The open connections, oldest first (a clone of each socket, to close it from here).
#[derive(Default)]
struct Open {
    next: u64,
    conns: std::collections::VecDeque<(u64, TcpStream)>,
}

/// Answer scrapes concurrently (issue 41 item 15: one idle connection held a serial
/// listener's scrape for 5 s): a thread per connection, the head within REQUEST_TIMEOUT
/// in all (not per read: a byte every few seconds does not hold it), at most MAX_CONNS
/// open; for as long as the process lives.
fn serve(l: TcpListener, metrics: Arc<Mutex<String>>) {
    let open = Arc::new(Mutex::new(Open::default()));
    for conn in l.incoming() {
        let Ok(mut s) = conn else { continue };
        let Some(id) = admit(&open, &s) else { continue };
        let (metrics, open2) = (Arc::clone(&metrics), Arc::clone(&open));
        let spawned = std::thread::Builder::new()
            .stack_size(CONN_STACK)
            .spawn(move || {
                let _ = answer(&mut s, &metrics);
                let mut o = open2.lock().unwrap_or_else(|p| p.into_inner());
                o.conns.retain(|(i, _)| *i != id);
            });
        if spawned.is_err() {
            let mut o = open.lock().unwrap_or_else(|p| p.into_inner());
            o.conns.retain(|(i, _)| *i != id);
        }
    }
}

/// Register a connection, closing the oldest open one when MAX_CONNS are; None when its
/// socket cannot be cloned (out of descriptors: it is dropped, the listener goes on).
fn admit(open: &Mutex<Open>, s: &TcpStream) -> Option<u64> {
    let clone = s.try_clone().ok()?;
    let mut o = open.lock().unwrap_or_else(|p| p.into_inner());
    while o.conns.len() >= MAX_CONNS {
        if let Some((_, oldest)) = o.conns.pop_front() {
            let _ = oldest.shutdown(std::net::Shutdown::Both);
        }
    }
    let id = o.next;
    o.next += 1;
    o.conns.push_back((id, clone));
    Some(id)
}

/// Read one request head (bounded in size and in total time) and answer it: GET /metrics
/// is the gauges as they are now, anything else 404 or 405; before the first audit, 503.
fn answer(s: &mut TcpStream, metrics: &Mutex<String>) -> std::io::Result<()> {
    s.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    // The one request-head parser (the server's: RFC 9112 rules, its own size bounds).
    let req = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        s.set_read_timeout(Some(left))?;
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        match rtcheck_wire::http::parse_head(&buf) {
            Ok(Some((req, _))) => break req,
            Ok(None) if buf.len() < MAX_REQUEST => continue,
            _ => return reply(s, 400, "text/plain", "bad request\n"),
        }
    };
    let body = metrics.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let (method, path) = (req.method, req.path);
    match (method.as_str(), path.as_str()) {
        ("GET" | "HEAD", "/metrics") if body.is_empty() => {
            reply(s, 503, "text/plain", "no audit yet\n")
        }
        ("GET", "/metrics") => reply(s, 200, rtcheck_wire::prom::CONTENT_TYPE, &body),
        ("HEAD", "/metrics") => reply(s, 200, rtcheck_wire::prom::CONTENT_TYPE, ""),
        (_, "/metrics") => reply(s, 405, "text/plain", "GET only\n"),
        _ => reply(s, 404, "text/plain", "only /metrics\n"),
    }
}

fn reply(s: &mut TcpStream, status: u16, ctype: &str, body: &str) -> std::io::Result<()> {
    s.write_all(&rtcheck_wire::http::response(
        status,
        ctype,
        body.as_bytes(),
        false,
    ))?;
    s.flush()
}
