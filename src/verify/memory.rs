//! memory: RSS per idle connection of the embedded server (`rtcheck serve` as a child, so
//! the load generator's own memory is not counted), WebSocket and SSE, each on a fresh
//! server. Plus kernel TCP memory from sockstat. Checked against the server's own client
//! counter and its descriptor count.
use super::server::Server;
use super::{verification, Run};
use crate::evidence::fmt_num;
use crate::findings::Verification;
use anyhow::{anyhow, bail, Context};
use rtcheck_base::os::{deadline, limits, proc, signal};
use rtcheck_base::units::fmt_bytes;
use rtcheck_wire::http::client::{self, HeadError};
use rtcheck_wire::http::response::Limits;
use rtcheck_wire::stats::ServerStats;
use rtcheck_wire::transport::Transport;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite;

/// One kind of idle connection measured: its transport (the one type; its label is the
/// server's stats key), the check's id and how the output names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    pub transport: Transport,
    pub check: &'static str,
    pub shown: &'static str,
}

/// The kinds measured, in the order they run.
pub const MEASURED: [Measured; 2] = [
    Measured {
        transport: Transport::Websocket,
        check: "memory",
        shown: "WebSocket",
    },
    Measured {
        transport: Transport::Sse,
        check: "memory-sse",
        shown: "SSE",
    },
];

/// An idle client: held open, never read.
pub enum Idle {
    Ws(Box<tungstenite::WebSocket<TcpStream>>),
    Sse(TcpStream),
}

pub fn open_ws(addr: std::net::SocketAddr) -> anyhow::Result<Idle> {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let (ws, _) = tungstenite::client(format!("ws://{addr}/ws"), s)
        .map_err(|e| anyhow!("WebSocket handshake with {addr}/ws: {e}"))?;
    Ok(Idle::Ws(Box::new(ws)))
}

pub fn open_sse(addr: std::net::SocketAddr) -> anyhow::Result<Idle> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let host = addr.to_string();
    let accept = ("Accept", "text/event-stream");
    s.write_all(&client::head("GET", "/sse", &[("Host", &host), accept]))?;
    // Read the response head only, a byte at a time (nothing of the body is taken off
    // the socket); the stream then stays idle and unread.
    let deadline = Instant::now() + Duration::from_secs(5);
    let (head, _) =
        client::read_head(&mut s, Limits::head(8192), 1, deadline).map_err(|e| match e {
            HeadError::Closed => anyhow!("{addr}/sse closed before its response head"),
            HeadError::TooLarge(_) => anyhow!("{addr}/sse: response head over 8 KB"),
            e => anyhow!("{addr}/sse: {e}"),
        })?;
    if head.status != 200 {
        bail!(
            "{addr}/sse answered `{} {}`",
            head.status,
            head.reason.trim()
        );
    }
    Ok(Idle::Sse(s))
}

/// Bytes per connection from two RSS readings (never negative).
pub fn per_connection(before: u64, after: u64, n: u64) -> f64 {
    after.saturating_sub(before) as f64 / n.max(1) as f64
}

/// Fewest idle connections a run scaled down by the open-files limit averages over (a
/// smaller --connections by choice runs as asked).
const MIN_CONNECTIONS: u64 = 100;

fn measure(run: &Run, t: Measured) -> anyhow::Result<Verification> {
    let started = Instant::now();
    let budget = run.budget.within(Duration::from_secs(120));
    let (n, scaled) = check_room(run.opts.connections)?;
    // Idle: no publishing; pings stay on (default 20 s) as in production, pong-wait long
    // enough that no client is removed during the run.
    let server = Server::start(
        &["--wait-start".into(), "--pong-wait".into(), "5m".into()],
        &budget,
    )?;
    let pid = server.pid();
    std::thread::sleep(Duration::from_millis(300));
    let before = Reading::of(pid)?;
    let t0 = Instant::now();
    let clients = open_idle(run, t, &server, n, &budget)?;
    let open_ms = t0.elapsed().as_millis();
    wait_counted(&server, t, n, &budget)?;
    std::thread::sleep(Duration::from_millis(500));
    let after = Reading::of(pid)?;
    let stats = server.stats()?;
    drop(clients);
    drop(server);

    let per = per_connection(before.rss, after.rss, n);
    let reference = crate::evidence::num("conn-ram", "rss_per_conn");
    let problems = problems(t, n, &before, &after, &stats);
    let details = details(t, n, pid, open_ms, &before, &after, &stats);
    let valid = problems.is_empty();
    let verdict = if !valid {
        format!("invalid: {}", problems.join("; "))
    } else {
        format!(
            "{scaled}{} per idle {} connection ({} for 10,000), {:.2}x the Go + gorilla reference {}: size memory per connection of your own server before load",
            fmt_bytes(per as u64),
            t.shown,
            fmt_bytes((per * 10_000.0) as u64),
            per / reference,
            fmt_bytes(reference as u64)
        )
    };
    Ok(verification(
        t.check,
        Some(per.round()),
        "B",
        super::reference_for(t.check),
        verdict,
        details,
        valid,
        started,
    ))
}

/// One descriptor per client here (the server raises its own limit to the hard one), and
/// one ephemeral port each toward the one server address. A low open-files limit (ulimit
/// -n 1024) scales the run down: returns the connections to open and the note a valid
/// verdict starts with ("" when it runs as asked). Too few to average over is an error.
fn check_room(asked: u64) -> anyhow::Result<(u64, String)> {
    let (_, hard) = limits::nofile()?;
    let room = limits::socket_room(hard, proc::open_fds("self")?);
    let n = asked.min(room);
    if n < asked && n < MIN_CONNECTIONS {
        bail!("--connections {asked}: needs {MIN_CONNECTIONS} descriptors at least in this process, the open-files limit (hard {hard}) leaves {room}");
    }
    let (lo, hi) = proc::port_range()?;
    let ports = (hi - lo) as u64 + 1;
    if n + 1024 > ports {
        bail!("--connections {n}: needs {n} ephemeral ports toward one server address, the port range {lo}-{hi} has {ports}");
    }
    let scaled = if n < asked {
        format!(
            "scaled down to {} of {} connections (the open-files limit, hard {}, leaves {} descriptors here): ",
            fmt_num(n as f64),
            fmt_num(asked as f64),
            fmt_num(hard as f64),
            fmt_num(room as f64)
        )
    } else {
        String::new()
    };
    Ok((n, scaled))
}

/// The server's memory and descriptors, and kernel TCP memory, read from outside it.
struct Reading {
    rss: u64,
    fds: u64,
    ss: proc::Sockstat,
}

impl Reading {
    fn of(pid: u32) -> anyhow::Result<Reading> {
        Ok(Reading {
            rss: proc::rss_of(pid)?,
            fds: proc::open_fds(&pid.to_string())?,
            ss: proc::read_sockstat()?,
        })
    }
}

fn open_idle(
    run: &Run,
    t: Measured,
    server: &Server,
    n: u64,
    budget: &deadline::Deadline,
) -> anyhow::Result<Vec<Idle>> {
    let mut clients = Vec::with_capacity(n as usize);
    for i in 0..n {
        if i % 250 == 0 {
            budget.check(t.check)?;
            run.progress.note(&format!(
                "{}: {} idle {} connections",
                t.check,
                fmt_num(i as f64),
                t.shown
            ));
        }
        let c = match t.transport {
            Transport::Websocket => open_ws(server.addr),
            Transport::Sse => open_sse(server.addr),
            // Not idle connections: a poll holds none, the raw floor has no handshake.
            Transport::Polling | Transport::Raw => bail!("no idle {} connection", t.shown),
        }
        .with_context(|| format!("connection {}", i + 1))?;
        clients.push(c);
    }
    Ok(clients)
}

/// The server's own count of clients of this transport.
fn counted(t: Measured, s: &ServerStats) -> u64 {
    s.clients_of(t.transport.label())
}

/// Wait (up to 10 s) until the server counts them all: its own counter is the
/// independent check.
fn wait_counted(
    server: &Server,
    t: Measured,
    n: u64,
    budget: &deadline::Deadline,
) -> anyhow::Result<()> {
    let mut stats = server.stats()?;
    let until = Instant::now() + Duration::from_secs(10);
    while counted(t, &stats) < n && Instant::now() < until {
        budget.check(t.check)?;
        std::thread::sleep(Duration::from_millis(50));
        stats = server.stats()?;
    }
    Ok(())
}

/// What makes the reading invalid: a client count, descriptors or RSS that do not match
/// `n` connections, or clients removed during the run.
fn problems(
    t: Measured,
    n: u64,
    before: &Reading,
    after: &Reading,
    stats: &ServerStats,
) -> Vec<String> {
    let mut problems = Vec::new();
    if n == 0 {
        problems.push("no connection was opened: nothing to average".into());
    }
    if counted(t, stats) != n {
        problems.push(format!(
            "the server counts {} {} clients, {} were opened",
            counted(t, stats),
            t.shown,
            n
        ));
    }
    let grew = after.fds.saturating_sub(before.fds);
    if grew < n {
        problems.push(format!(
            "the server's descriptors grew by {grew}, less than {n} connections"
        ));
    }
    if stats.removed > 0 {
        problems.push(format!(
            "the server removed {} clients during the run",
            stats.removed
        ));
    }
    if after.rss <= before.rss {
        problems.push("RSS did not grow".into());
    }
    problems
}

fn details(
    t: Measured,
    n: u64,
    pid: u32,
    open_ms: u128,
    before: &Reading,
    after: &Reading,
    stats: &ServerStats,
) -> Vec<String> {
    let (rss0, rss1) = (before.rss, after.rss);
    let (m0, m1) = (before.ss.mem_bytes(), after.ss.mem_bytes());
    let kernel = m1.saturating_sub(m0);
    let per = per_connection(rss0, rss1, n);
    vec![
        format!(
            "target: rtcheck serve (child pid {pid}, idle: --wait-start, ping 20 s); {} {} connections opened in {open_ms} ms",
            fmt_num(n as f64),
            t.shown
        ),
        format!(
            "server RSS {} -> {} (+{}); server's own stats: {} clients, rss {}",
            fmt_bytes(rss0),
            fmt_bytes(rss1),
            fmt_bytes(rss1.saturating_sub(rss0)),
            fmt_num(counted(t, stats) as f64),
            fmt_bytes(stats.rss_bytes)
        ),
        format!(
            "server descriptors {} -> {} (one per connection is normal, not a leak)",
            fmt_num(before.fds as f64),
            fmt_num(after.fds as f64)
        ),
        format!(
            "kernel TCP memory (sockstat mem, both loopback ends, namespace-wide): {} -> {} (+{}, {} per connection)",
            fmt_bytes(m0),
            fmt_bytes(m1),
            fmt_bytes(kernel),
            fmt_bytes(kernel / n.max(1))
        ),
        format!(
            "projected for 10,000: {} (reference {} with Go + gorilla)",
            fmt_bytes((per * 10_000.0) as u64),
            fmt_bytes(crate::evidence::num("conn-ram", "rss_10k") as u64)
        ),
    ]
}

pub fn run(run: &Run) -> anyhow::Result<Vec<Verification>> {
    let mut out = Vec::new();
    for t in MEASURED {
        if !run.wants(t.check) {
            continue;
        }
        let started = Instant::now();
        match measure(run, t) {
            Ok(v) => out.push(v),
            Err(e) if signal::interrupted() => return Err(e),
            Err(e) => out.push(verification(
                t.check,
                None,
                "B",
                super::reference_for(t.check),
                format!("invalid: {e:#}"),
                vec![],
                false,
                started,
            )),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_connection_never_negative() {
        assert_eq!(per_connection(1000, 28_000, 1), 27_000.0);
        assert_eq!(per_connection(5000, 4000, 10), 0.0);
        assert_eq!(per_connection(0, 100, 0), 100.0);
    }

    #[test]
    fn the_reading_is_checked_against_the_server_count() {
        let r = |rss, fds| Reading {
            rss,
            fds,
            ss: Default::default(),
        };
        let stats = |ws: u64, removed: u64| -> ServerStats {
            serde_json::from_value(
                serde_json::json!({"clients": {"ws": ws, "sse": 0}, "removed": removed}),
            )
            .unwrap()
        };
        let ok = problems(MEASURED[0], 10, &r(1000, 5), &r(9000, 15), &stats(10, 0));
        assert!(ok.is_empty(), "{ok:?}");
        let p = problems(MEASURED[1], 10, &r(1000, 5), &r(9000, 15), &stats(10, 0));
        assert!(p[0].contains("counts 0 SSE clients"), "{p:?}");
        let p = problems(MEASURED[0], 10, &r(1000, 5), &r(900, 9), &stats(10, 2));
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("descriptors grew by 4"), "{p:?}");
        assert!(p[1].contains("removed 2 clients"), "{p:?}");
        assert_eq!(p[2], "RSS did not grow");
        // Zero connections: the server counts 0 of 0 and RSS grew, yet nothing was measured.
        let p = problems(MEASURED[0], 0, &r(1000, 5), &r(9000, 5), &stats(0, 0));
        assert_eq!(p, ["no connection was opened: nothing to average"]);
        let d = details(
            MEASURED[0],
            10,
            7,
            3,
            &r(1000, 5),
            &r(9000, 15),
            &stats(10, 0),
        );
        assert!(
            d[0].contains("child pid 7") && d[2].contains("5 -> 15"),
            "{d:?}"
        );
    }
}
