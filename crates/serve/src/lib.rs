//! rtcheck's embedded realtime server (`rtcheck serve`): WebSocket, SSE with resume,
//! polling, metrics and the control plane on one port, the raw-TCP floor, and (feature
//! `redis`) several nodes over one Redis. It speaks the formats of [`rtcheck_wire`] and
//! takes plain [`config::Options`]; the flags are the command layer's.
//!
//! Imports point one way (no module imports one that imports it back):
//! - leaves: [`ring`] (a round in every encoding, gap markers, and the pure replay and
//!   poll rules), [`sync`], [`io`], [`request`], [`ratelog`], [`access`], [`session`]
//!   (session-ack state), [`config`] with `cluster::config`, [`replay`] (a resume written
//!   in chunks under the replay budget, from a [`replay::Source`]);
//! - [`hub`]: registry and fan-out (connections, the ring, counters, the publisher), in
//!   parts each tested in-process. It owns the session state and sees a cluster only as
//!   a [`hub::Relay`];
//! - above it: [`resume`] (registering resuming clients, the WebSocket ack and resume
//!   messages), [`cluster`] (the Redis relay, behind the `redis` feature), [`app`] (hub and
//!   cluster together), [`metrics`], [`work`], [`routes`] (every endpoint in one table,
//!   which also answers 404 and 405), [`echo`], [`inbox`], [`garbage`], and [`server`]
//!   (listeners and connection tasks); this file starts and stops them.
pub mod access;
pub mod app;
pub mod cluster;
pub mod config;
pub mod echo;
pub mod garbage;
pub mod hub;
pub mod inbox;
pub mod io;
pub mod metrics;
pub mod ratelog;
pub mod replay;
pub mod request;
pub mod resume;
pub mod ring;
pub mod routes;
pub mod server;
pub mod session;
pub mod sync;
pub mod work;

use anyhow::Context;
use app::App;
use config::{Config, Options, Protocol};
use hub::Hub;
use rtcheck_wire::delivery::Delivery;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Run the server until SIGINT or SIGTERM: 128 + the signal, after closing every client.
pub fn run(a: Options) -> anyhow::Result<ExitCode> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cfg = Config::from_options(&a, cpus).map_err(anyhow::Error::msg)?;
    if a.control_token.is_some() {
        eprintln!("rtcheck serve: WARNING: --control-token is readable by any local user in /proc/PID/cmdline; use --control-token-file FILE or RTCHECK_CONTROL_TOKEN");
    }
    work::init(a.work_workers, a.split_writes);
    if a.exit_with_parent {
        rtcheck_base::os::child::exit_with_parent().context("--exit-with-parent")?;
    }
    let (soft, hard) = rtcheck_base::os::limits::raise_nofile().context("raising RLIMIT_NOFILE")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.workers)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let res = rt.block_on(serve(cfg, a.addr_file.as_deref(), (soft, hard)));
    // Tasks blocked on a stuck write (the C1 scenario) must not hold the exit.
    rt.shutdown_timeout(Duration::from_millis(100));
    // Stopped by a signal, like every other command: 128 + the signal (130 Ctrl-C, 143
    // SIGTERM), after the clean shutdown above.
    res.map(ExitCode::from)
}

fn bind(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    let sock = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }
    .with_context(|| format!("socket for {addr}"))?;
    sock.set_reuseaddr(true)?;
    sock.bind(addr).with_context(|| format!("bind {addr}"))?;
    // A large backlog: thousands of clients connect at once in benchmarks.
    sock.listen(8192).with_context(|| format!("listen {addr}"))
}

async fn serve(
    mut cfg: Config,
    addr_file: Option<&Path>,
    nofile: (u64, u64),
) -> anyhow::Result<u8> {
    use tokio::signal::unix::{signal, SignalKind};
    // Install handlers before announcing the address, so a prompt SIGTERM is clean.
    let mut term = signal(SignalKind::terminate()).context("SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("SIGINT handler")?;

    let main = bind(cfg.listen)?;
    let main_addr = main.local_addr()?;
    let control = match cfg.control_listen {
        Some(a) => Some(bind(a)?),
        None => None,
    };
    let control_addr = control.as_ref().map(|l| l.local_addr()).transpose()?;
    // Decided before anyone can connect; a generated token is on disk before the addr file.
    let plan = access::plan(
        control_addr.unwrap_or(main_addr),
        cfg.control_token.as_deref(),
        addr_file,
    );
    let (policy, token_file) = access::resolve(plan)?;
    let access_line = access::describe(&policy, token_file.as_deref());
    let _token_file = access::TokenFile(token_file);
    cfg.access = policy;
    let hub = Hub::new(cfg.clone());
    // The cluster link first: resumes and rounds go through Redis from the first client on.
    let cluster = match cfg.cluster.clone() {
        Some(cc) => Some(cluster::start(&hub, cc).await?),
        None => None,
    };
    let app = Arc::new(App {
        hub: hub.clone(),
        cluster,
    });

    let raw = cfg.protocol == Protocol::Raw;
    tokio::spawn(server::accept_loop(app.clone(), main, raw));
    if let Some(l) = control {
        tokio::spawn(server::accept_loop(app.clone(), l, false));
    }
    let publisher = tokio::spawn(hub.clone().publish());
    if cfg.delivery == Delivery::SessionAck {
        let h = hub.clone();
        tokio::spawn(async move { h.sessions.expire_until(h.shutdown_signalled()).await });
    }
    if cfg.garbage_mbps > 0 {
        tokio::spawn(garbage::run(hub.clone(), cfg.garbage_mbps));
    }

    eprintln!(
        "{}",
        fit_lines(&banner(&cfg, main_addr, control_addr, nofile))
    );
    eprintln!("{}", fit_lines(&more_lines(&cfg, &access_line, &hub)));
    if let Some(p) = addr_file {
        let mut text = format!("{main_addr}\n");
        if let Some(c) = control_addr {
            text.push_str(&format!("{c}\n"));
        }
        rtcheck_base::outfile::write_atomic(p, text.as_bytes())
            .with_context(|| format!("--addr-file {}", p.display()))?;
    }

    let (sig, code) = tokio::select! {
        _ = term.recv() => ("SIGTERM", 128 + libc::SIGTERM as u8),
        _ = int.recv() => ("SIGINT", 128 + libc::SIGINT as u8),
    };
    stop(&app, publisher, sig, cfg.drain).await;
    Ok(code)
}

/// The startup lines after the banner: access, the cluster, the epoch, CORS.
fn more_lines(cfg: &Config, access_line: &str, hub: &Hub) -> String {
    let mut lines = vec![format!("  {access_line}")];
    if let Some(cc) = &cfg.cluster {
        lines.push(format!("  {}", cc.banner()));
        let argv: Vec<String> = std::env::args().collect();
        if let Some(w) = cluster::config::argv_warning(&cc.url, &argv) {
            lines.push(format!("  {w}"));
        }
    }
    lines.push(format!(
        "  epoch {} (ids SEQ@EPOCH; a resume from another gets a reset)",
        hub.epoch()
    ));
    if let Some(o) = &cfg.cors {
        lines.push(format!(
            "  CORS: Access-Control-Allow-Origin: {o} on /sse, /poll, /metrics"
        ));
    }
    lines.join("\n")
}

/// After a signal: close every client (they get `drain` to take their close frames; the
/// wait ends as soon as none is left), say goodbye to the cluster, and say what was sent.
async fn stop(app: &App, publisher: tokio::task::JoinHandle<()>, sig: &str, drain: Duration) {
    let hub = &app.hub;
    eprintln!(
        "rtcheck serve: {sig}: closing {} client(s)",
        hub.client_count()
    );
    hub.shutdown();
    publisher.abort();
    let deadline = tokio::time::Instant::now() + drain;
    while hub.client_count() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if let Some(c) = &app.cluster {
        cluster::farewell(c).await;
    }
    let left = hub.client_count();
    if left > 0 {
        let d = rtcheck_base::units::fmt_duration(drain);
        eprintln!("rtcheck serve: {left} client(s) still blocked after --drain {d}; closing them");
    }
    let s = hub.snapshot().stats;
    eprintln!(
        "rtcheck serve: stopped after {} round(s); drops {}, removed {}",
        s.rounds_sent, s.drops, s.removed
    );
}

fn banner(
    cfg: &Config,
    addr: SocketAddr,
    control: Option<SocketAddr>,
    (soft, hard): (u64, u64),
) -> String {
    let mut b = String::new();
    match cfg.protocol {
        Protocol::Ws => {
            b.push_str(&format!("rtcheck serve listening on http://{addr}\n"));
            let urls = [
                format!("ws://{addr}/ws"),
                format!("http://{addr}/sse"),
                format!("http://{addr}/poll?since=SEQ"),
                format!("http://{addr}/metrics"),
                format!("http://{addr}/healthz"),
                format!("http://{addr}/control/stats"),
                format!("ws://{addr}/echo"),
            ];
            b.push_str(&url_lines("  endpoints:", &urls));
        }
        Protocol::Raw => {
            b.push_str(&format!(
                "rtcheck serve (raw TCP floor: u32 LE length + payload frames) on {addr}\n"
            ));
            if let Some(c) = control {
                let urls = [
                    format!("http://{c}/metrics"),
                    format!("http://{c}/healthz"),
                    format!("http://{c}/control/stats"),
                ];
                b.push_str(&url_lines("  control:", &urls));
            }
        }
    }
    let deadline = cfg
        .write_deadline
        .map_or("none".into(), rtcheck_base::units::fmt_duration);
    // Two lines, each within 80 columns: what is published, then how it is written.
    b.push_str(&format!(
        "  publishing {} B at {}/s{}{}\n  strategy {}, queue {}\n  write deadline {}, threads {}\n",
        cfg.size,
        cfg.rate,
        cfg.rounds
            .map_or(String::new(), |n| format!(" for {n} rounds")),
        if cfg.wait_start {
            " after POST /control/start"
        } else {
            ""
        },
        match cfg.strategy {
            config::Strategy::PerClient if cfg.direct => {
                "per-client (direct write, then queue)".to_string()
            }
            config::Strategy::PerClient => "per-client (queue only)".to_string(),
            config::Strategy::Shards => format!("shards x{}", cfg.shards),
        },
        cfg.queue,
        deadline,
        cfg.workers
    ));
    if cfg.delivery == Delivery::SessionAck {
        b.push_str(&sessions_banner(cfg));
    }
    b.push_str(&format!(
        "  replay budget: {} in flight over all clients ({}); /poll: {}\n",
        rtcheck_base::units::fmt_bytes(cfg.replay_budget.bytes),
        cfg.replay_budget.source,
        rtcheck_base::units::fmt_bytes(ring::POLL_MAX as u64),
    ));
    b.push_str(&work::banner_line());
    b.push_str(&format!(
        "  open files limit: soft {soft}, hard {hard} (soft raised to hard at start)"
    ));
    if !addr.ip().is_loopback() {
        b.push_str("\n  WARNING: listening on a non-loopback address");
    }
    b
}

/// The banner's sessions lines: TTL, queue, both caps and what they hold at worst.
fn sessions_banner(cfg: &Config) -> String {
    let per = session::worst_session_bytes(cfg.session_queue, cfg.size);
    let by_memory =
        session::sessions_in_memory(cfg.session_memory.bytes, cfg.session_queue, cfg.size);
    let held = (cfg.max_sessions as u64).min(by_memory);
    format!(
        "  sessions: max {} (new ones then get 503 + Retry-After), ttl {}, queue {}\n  \
         session memory: {} ({})\n  \
         sessions at worst: {} ({held} x {}, away with full queues)\n",
        cfg.max_sessions,
        rtcheck_base::units::fmt_duration(cfg.session_ttl),
        cfg.session_queue,
        rtcheck_base::units::fmt_bytes(cfg.session_memory.bytes),
        cfg.session_memory.source,
        rtcheck_base::units::fmt_bytes(per * held),
        rtcheck_base::units::fmt_bytes(per),
    )
}

/// `head` then the URLs, wrapped between them (never inside one) within 80 columns.
fn url_lines(head: &str, urls: &[String]) -> String {
    let indent = " ".repeat(head.len());
    let mut out = String::new();
    let mut line = head.to_string();
    for u in urls {
        if line.len() > head.len() && line.len() + 2 + u.len() > 80 {
            out.push_str(&line);
            out.push('\n');
            line.clone_from(&indent);
        }
        line.push_str(if line.len() > head.len() { "  " } else { " " });
        line.push_str(u);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// The banner's width: it goes to a log as often as to a terminal, so 80 columns.
const BANNER_WIDTH: usize = 80;

/// Every line of `text` within [`BANNER_WIDTH`]: a longer one continues on lines indented
/// two more, broken after its last `, ` or `; ` that fits (an item such as `prefix blue:`
/// or a URL stays whole), else at its last space, and never inside a word.
fn fit_lines(text: &str) -> String {
    let mut out = Vec::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len() + 2;
        let mut rest = line.to_string();
        while rest.chars().count() > BANNER_WIDTH {
            let Some(at) = break_at(&rest, indent) else {
                break;
            };
            out.push(rest[..at].trim_end().to_string());
            rest = format!("{}{}", " ".repeat(indent), rest[at..].trim_start());
        }
        out.push(rest);
    }
    out.join("\n")
}

/// Where `line` breaks to fit: the byte after the last `, `/`; ` within the width, else
/// the last space; past the continuation `indent`, so every break makes progress.
fn break_at(line: &str, indent: usize) -> Option<usize> {
    let end = line
        .char_indices()
        .nth(BANNER_WIDTH)
        .map_or(line.len(), |(i, _)| i);
    let head = &line[..end];
    let after = |pat: &str| head.rfind(pat).map(|i| i + pat.len() - 1);
    let list = [after(", "), after("; ")].into_iter().flatten().max();
    let at = list.filter(|&i| i > indent).or_else(|| after(" "));
    at.filter(|&i| i > indent)
}

/// Keep the compiler honest about the shared Hub type being Send + Sync.
#[allow(dead_code)]
fn _hub_is_sync(h: Arc<Hub>) -> impl Send + Sync {
    h
}

#[cfg(test)]
mod banner_tests {
    use super::fit_lines;

    /// A long banner line breaks after a list separator within 80 columns, its items
    /// (`prefix blue:`, a URL) whole; a short one is left alone.
    #[test]
    fn long_banner_lines_break_between_items() {
        let url = "redis://127.0.0.1:6379/0";
        let line = format!(
            "  cluster: node a, redis {url}, prefix blue:, path naive (DEMONSTRATION ONLY: \
             own rounds also delivered locally = duplicates on this node), presence on"
        );
        let text = fit_lines(&format!("short\n{line}\n  replay budget: 8.4 MB in flight over all clients (--replay-budget); /poll: 65.5 KB"));
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert_eq!(text.lines().next(), Some("short"));
        assert!(
            text.contains("prefix blue:") && text.contains(url),
            "{text}"
        );
        assert!(text.contains("\n    /poll: 65.5 KB"), "{text}");
        let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&text)[1..words(&line).len() + 1], words(&line)[..]);
        // One word longer than the width: left whole, never cut.
        let long = format!("  {}", "x".repeat(90));
        assert_eq!(fit_lines(&long), long);
    }
}
