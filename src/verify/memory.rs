//! memory: RSS per idle connection of the embedded server (`rtcheck serve` as a child, so
//! the load generator's own memory is not counted), WebSocket and SSE, each on a fresh
//! server. Plus kernel TCP memory from sockstat. Checked against the server's own client
//! counter and its descriptor count.
use super::server::Server;
use super::{sys, verification, Run};
use crate::evidence::fmt_num;
use crate::findings::Verification;
use crate::units::fmt_bytes;
use anyhow::{anyhow, bail, Context};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Ws,
    Sse,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Ws => "memory",
            Transport::Sse => "memory-sse",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Transport::Ws => "WebSocket",
            Transport::Sse => "SSE",
        }
    }
}

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
    write!(
        s,
        "GET /sse HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )?;
    // Read the response head only; the stream then stays idle and unread.
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b).context("SSE response")? == 0 {
            bail!("{addr}/sse closed before its response head");
        }
        head.push(b[0]);
        if head.len() > 8192 {
            bail!("{addr}/sse: response head over 8 KB");
        }
    }
    let line = String::from_utf8_lossy(&head);
    let code = line.split_whitespace().nth(1).unwrap_or("");
    if code != "200" {
        bail!(
            "{addr}/sse answered `{}`",
            line.lines().next().unwrap_or("").trim()
        );
    }
    Ok(Idle::Sse(s))
}

/// Bytes per connection from two RSS readings (never negative).
pub fn per_connection(before: u64, after: u64, n: u64) -> f64 {
    after.saturating_sub(before) as f64 / n.max(1) as f64
}

fn measure(run: &Run, t: Transport) -> anyhow::Result<Verification> {
    let started = Instant::now();
    let n = run.opts.connections;
    let budget = run.budget.within(Duration::from_secs(120));
    // One descriptor per client here (the server raises its own limit to the hard one).
    let (_, hard) = sys::nofile()?;
    let room = hard.saturating_sub(sys::open_fds("self")? + 64);
    if n > room {
        bail!("--connections {n}: needs {n} descriptors in this process, the open-files limit leaves {room}");
    }
    // Every client connects to one server address: one ephemeral port each.
    let (lo, hi) = sys::port_range()?;
    let ports = (hi - lo) as u64 + 1;
    if n + 1024 > ports {
        bail!("--connections {n}: needs {n} ephemeral ports toward one server address, the port range {lo}-{hi} has {ports}");
    }
    // Idle: no publishing; pings stay on (default 20 s) as in production, pong-wait long
    // enough that no client is removed during the run.
    let server = Server::start(
        &["--wait-start".into(), "--pong-wait".into(), "5m".into()],
        &budget,
    )?;
    let pid = server.pid();
    std::thread::sleep(Duration::from_millis(300));
    let rss0 = sys::rss_bytes(pid)?;
    let fds0 = sys::open_fds(&pid.to_string())?;
    let ss0 = sys::read_sockstat()?;
    let mut clients = Vec::with_capacity(n as usize);
    let t0 = Instant::now();
    for i in 0..n {
        if i % 250 == 0 {
            budget.check(t.name())?;
            run.progress.note(&format!(
                "{}: {} idle {} connections",
                t.name(),
                fmt_num(i as f64),
                t.label()
            ));
        }
        let c = match t {
            Transport::Ws => open_ws(server.addr),
            Transport::Sse => open_sse(server.addr),
        }
        .with_context(|| format!("connection {}", i + 1))?;
        clients.push(c);
    }
    let open_ms = t0.elapsed().as_millis();
    // Wait until the server counts them all (its own counter: the independent check).
    let mut stats = server.stats()?;
    let until = Instant::now() + Duration::from_secs(10);
    let count = |s: &super::server::Stats| match t {
        Transport::Ws => s.clients.ws,
        Transport::Sse => s.clients.sse,
    };
    while count(&stats) < n && Instant::now() < until {
        budget.check(t.name())?;
        std::thread::sleep(Duration::from_millis(50));
        stats = server.stats()?;
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss1 = sys::rss_bytes(pid)?;
    let fds1 = sys::open_fds(&pid.to_string())?;
    let ss1 = sys::read_sockstat()?;
    let stats = server.stats()?;
    drop(clients);
    drop(server);

    let per = per_connection(rss0, rss1, n);
    let kernel = ss1.mem_bytes().saturating_sub(ss0.mem_bytes());
    let reference = crate::evidence::num("conn-ram", "rss_per_conn");
    let mut problems = Vec::new();
    if count(&stats) != n {
        problems.push(format!(
            "the server counts {} {} clients, {} were opened",
            count(&stats),
            t.label(),
            n
        ));
    }
    if fds1.saturating_sub(fds0) < n {
        problems.push(format!(
            "the server's descriptors grew by {}, less than {n} connections",
            fds1.saturating_sub(fds0)
        ));
    }
    if stats.removed > 0 {
        problems.push(format!(
            "the server removed {} clients during the run",
            stats.removed
        ));
    }
    if rss1 <= rss0 {
        problems.push("RSS did not grow".into());
    }
    let details = vec![
        format!(
            "target: rtcheck serve (child pid {pid}, idle: --wait-start, ping 20 s); {} {} connections opened in {open_ms} ms",
            fmt_num(n as f64),
            t.label()
        ),
        format!(
            "server RSS {} -> {} (+{}); server's own stats: {} clients, rss {}",
            fmt_bytes(rss0),
            fmt_bytes(rss1),
            fmt_bytes(rss1.saturating_sub(rss0)),
            fmt_num(count(&stats) as f64),
            fmt_bytes(stats.rss_bytes)
        ),
        format!(
            "server descriptors {} -> {} (one per connection is normal, not a leak)",
            fmt_num(fds0 as f64),
            fmt_num(fds1 as f64)
        ),
        format!(
            "kernel TCP memory (sockstat mem, both loopback ends, namespace-wide): {} -> {} (+{}, {} per connection)",
            fmt_bytes(ss0.mem_bytes()),
            fmt_bytes(ss1.mem_bytes()),
            fmt_bytes(kernel),
            fmt_bytes(kernel / n.max(1))
        ),
        format!(
            "projected for 10,000: {} (reference {} with Go + gorilla)",
            fmt_bytes((per * 10_000.0) as u64),
            fmt_bytes(crate::evidence::num("conn-ram", "rss_10k") as u64)
        ),
    ];
    let valid = problems.is_empty();
    let verdict = if !valid {
        format!("invalid: {}", problems.join("; "))
    } else {
        format!(
            "{} per idle {} connection ({} for 10,000), {:.2}x the Go + gorilla reference {}: size memory per connection of your own server before load",
            fmt_bytes(per as u64),
            t.label(),
            fmt_bytes((per * 10_000.0) as u64),
            per / reference,
            fmt_bytes(reference as u64)
        )
    };
    Ok(verification(
        t.name(),
        Some(per.round()),
        "B",
        super::reference_for(t.name()),
        verdict,
        details,
        valid,
        started,
    ))
}

pub fn run(run: &Run) -> anyhow::Result<Vec<Verification>> {
    let mut out = Vec::new();
    for t in [Transport::Ws, Transport::Sse] {
        if !run.wants(t.name()) {
            continue;
        }
        let started = Instant::now();
        match measure(run, t) {
            Ok(v) => out.push(v),
            Err(e) if super::guard::interrupted() => return Err(e),
            Err(e) => out.push(verification(
                t.name(),
                None,
                "B",
                super::reference_for(t.name()),
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
}
