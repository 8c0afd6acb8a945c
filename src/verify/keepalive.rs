//! tcp-keepalive (dead peer) and read-deadline, against `rtcheck serve` as a child.
//!
//! Dead peer: a WebSocket client answers pings, then goes silent (stops reading and
//! answering) at a fixed phase after a pong; we time how long the server takes to close
//! it (seen from the client as FIN/RST: POLLRDHUP), and cross-check the server's
//! `removed` counter. The silent peer's kernel still ACKs, so TCP alone would never notice.
//!
//! Read deadline alone: server with `--ping 0 --pong-wait D` (no ping, remove a client
//! silent for D), and a healthy client that reads everything but sends nothing.
use super::server::Server;
use super::{verification, Run};
use crate::findings::Verification;
use crate::units::fmt_duration;
use anyhow::{anyhow, bail};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::{self, Message};

/// The silence starts this fraction of the ping interval after the last pong.
pub const SILENCE_PHASE: f64 = 0.6;

/// Detection time after silence if the server removes a peer `pong_wait` after its last
/// inbound frame, checking continuously (low) or only at its ping ticks (high).
pub fn predicted_detection(
    ping: Duration,
    pong_wait: Duration,
    since_last_pong: Duration,
) -> (f64, f64) {
    let low = (pong_wait.as_secs_f64() - since_last_pong.as_secs_f64()).max(0.0);
    (low, low + ping.as_secs_f64())
}

/// A read that returned without data: timeout, or EINTR (Ctrl-C; the loop then sees the flag).
fn is_timeout(e: &tungstenite::Error) -> bool {
    matches!(e, tungstenite::Error::Io(io) if matches!(io.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted))
}

fn connect(server: &Server) -> anyhow::Result<tungstenite::WebSocket<TcpStream>> {
    let s = TcpStream::connect_timeout(&server.addr, Duration::from_secs(2))?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let (ws, _) = tungstenite::client(format!("ws://{}/ws", server.addr), s)
        .map_err(|e| anyhow!("WebSocket handshake with {}/ws: {e}", server.addr))?;
    ws.get_ref()
        .set_read_timeout(Some(Duration::from_millis(10)))?;
    Ok(ws)
}

/// Peer-closed (FIN or RST) on a socket we no longer read.
fn peer_closed(fd: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r > 0 && (p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR)) != 0
}

fn dead_peer_server(run: &Run) -> anyhow::Result<Server> {
    let (ping, wait) = (run.opts.ping, run.opts.pong_wait);
    Server::start(
        &[
            "--wait-start".into(),
            "--ping".into(),
            fmt_duration(ping),
            "--pong-wait".into(),
            fmt_duration(wait),
        ],
        &run.budget,
    )
}

fn dead_peer(run: &Run, server: Server) -> anyhow::Result<Verification> {
    let started = Instant::now();
    let (ping, wait) = (run.opts.ping, run.opts.pong_wait);
    let budget = run.budget.within(ping * 2 + wait + Duration::from_secs(10));
    let mut ws = connect(&server)?;
    let connected = Instant::now();
    let mut pings = 0u32;
    let mut last_pong: Option<Instant> = None;
    run.progress.note(&format!(
        "tcp-keepalive: waiting for a ping (every {})",
        fmt_duration(ping)
    ));
    let silence_at = loop {
        budget.check("tcp-keepalive")?;
        if let Some(lp) = last_pong {
            let at = lp + ping.mul_f64(SILENCE_PHASE);
            if Instant::now() >= at {
                break at;
            }
        } else if connected.elapsed() > ping + wait + Duration::from_secs(2) {
            bail!(
                "no ping from the server within {}",
                fmt_duration(ping + wait)
            );
        }
        match ws.read() {
            Ok(Message::Ping(_)) => {
                // The pong is queued by read(); flush sends it now.
                ws.flush().map_err(|e| anyhow!("sending pong: {e}"))?;
                pings += 1;
                last_pong = Some(Instant::now());
            }
            Ok(Message::Close(_)) => {
                bail!("the server closed a healthy peer before it went silent")
            }
            Ok(_) => {}
            Err(e) if is_timeout(&e) => {}
            Err(e) => bail!("reading from the server before the silence: {e}"),
        }
    };
    let since_pong = silence_at - last_pong.unwrap_or(silence_at);
    let silent = Instant::now();
    run.progress.note(&format!(
        "tcp-keepalive: peer silent, pong-wait {}",
        fmt_duration(wait)
    ));
    // From now on nothing is read and no pong is sent.
    let fd = ws.get_ref().as_raw_fd();
    let give_up = silent + ping + wait + Duration::from_secs(2);
    let detected = loop {
        budget.check("tcp-keepalive")?;
        if peer_closed(fd) {
            break Some(Instant::now());
        }
        if Instant::now() > give_up {
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The server's own counter: it removed the peer (not a crash, not our socket).
    std::thread::sleep(Duration::from_millis(100));
    let removed = server.stats().map(|s| s.removed);
    drop(ws);
    drop(server);

    let (low, high) = predicted_detection(ping, wait, since_pong);
    let ref_s = crate::evidence::num("ping-timing", "detected");
    let mut details = vec![
        format!(
            "target: rtcheck serve --ping {} --pong-wait {}; {pings} ping(s) answered, then silent {:.2} s after the last pong",
            fmt_duration(ping),
            fmt_duration(wait),
            since_pong.as_secs_f64()
        ),
        format!(
            "expected {low:.2}..{high:.2} s: pong-wait after the last pong, at most one ping interval later"
        ),
        "the silent peer's kernel still ACKs: TCP alone never reports it (Go's default keepalive needed 150 s)".into(),
    ];
    match &removed {
        Ok(r) => details.push(format!("server stats: removed = {r}")),
        Err(e) => details.push(format!("server stats unreadable: {e}")),
    }
    let Some(at) = detected else {
        return Ok(verification(
            "tcp-keepalive",
            None,
            "s",
            super::reference_for("tcp-keepalive"),
            format!(
                "invalid: the server did not close the silent peer within {}",
                fmt_duration(ping + wait + Duration::from_secs(2))
            ),
            details,
            false,
            started,
        ));
    };
    let measured = (at - silent).as_secs_f64();
    let removed_ok = matches!(removed, Ok(r) if r >= 1);
    let valid = removed_ok;
    let verdict = if !valid {
        "invalid: the connection closed but the server did not count a removal".to_string()
    } else if measured >= low - 0.25 && measured <= high + 0.25 {
        format!(
            "confirms: the server noticed the silent peer after {measured:.2} s (pong-wait {} after the last pong); reference {ref_s} s at 5 s/8 s",
            fmt_duration(wait)
        )
    } else {
        format!(
            "differs: {measured:.2} s is outside the expected {low:.2}..{high:.2} s; reference {ref_s} s at 5 s/8 s"
        )
    };
    Ok(verification(
        "tcp-keepalive",
        Some(measured),
        "s",
        super::reference_for("tcp-keepalive"),
        verdict,
        details,
        valid,
        started,
    ))
}

fn read_deadline_server(run: &Run) -> anyhow::Result<Server> {
    Server::start(
        &[
            "--wait-start".into(),
            "--ping".into(),
            "0".into(),
            "--pong-wait".into(),
            fmt_duration(run.opts.read_deadline),
        ],
        &run.budget,
    )
}

fn read_deadline(run: &Run, server: Server) -> anyhow::Result<Verification> {
    let started = Instant::now();
    let d = run.opts.read_deadline;
    let budget = run.budget.within(d * 2 + Duration::from_secs(10));
    let mut ws = connect(&server)?;
    let connected = Instant::now();
    run.progress.note(&format!(
        "read-deadline: a healthy quiet client, deadline {}",
        fmt_duration(d)
    ));
    // Healthy: reads all the time (would answer any ping at once). Quiet: sends nothing.
    let mut max_gap = Duration::ZERO;
    let mut last_read = Instant::now();
    let give_up = connected + d * 2 + Duration::from_secs(2);
    let mut how = "";
    let closed = loop {
        budget.check("read-deadline")?;
        let r = ws.read();
        let now = Instant::now();
        max_gap = max_gap.max(now - last_read);
        last_read = now;
        match r {
            Ok(Message::Ping(_)) => {
                ws.flush().map_err(|e| anyhow!("sending pong: {e}"))?;
            }
            Ok(Message::Close(_)) => {
                how = "close frame";
                break Some(now);
            }
            Ok(_) => {}
            Err(e) if is_timeout(&e) => {}
            Err(tungstenite::Error::ConnectionClosed) | Err(tungstenite::Error::AlreadyClosed) => {
                how = "connection closed";
                break Some(now);
            }
            Err(tungstenite::Error::Io(_)) | Err(tungstenite::Error::Protocol(_)) => {
                how = "connection reset";
                break Some(now);
            }
            Err(e) => bail!("reading from the server: {e}"),
        }
        if now > give_up {
            break None;
        }
    };
    std::thread::sleep(Duration::from_millis(100));
    let removed = server.stats().map(|s| s.removed);
    drop(ws);
    drop(server);
    let ref_d = crate::evidence::num("read-deadline-alone", "deadline");
    let mut details = vec![
        format!(
            "target: rtcheck serve --ping 0 --pong-wait {} (a read deadline, no ping); the client read continuously (longest gap {} ms) and sent nothing",
            fmt_duration(d),
            max_gap.as_millis()
        ),
    ];
    match &removed {
        Ok(r) => details.push(format!("server stats: removed = {r}")),
        Err(e) => details.push(format!("server stats unreadable: {e}")),
    }
    let healthy = max_gap < Duration::from_millis(500);
    let Some(at) = closed else {
        let waited = (Instant::now() - connected).as_secs_f64();
        return Ok(verification(
            "read-deadline",
            Some(waited),
            "s",
            super::reference_for("read-deadline"),
            format!(
                "differs: the quiet client was still connected after {waited:.1} s (deadline {})",
                fmt_duration(d)
            ),
            details,
            healthy,
            started,
        ));
    };
    let measured = (at - connected).as_secs_f64();
    details.push(format!("closed by the server: {how}"));
    let valid = healthy && matches!(removed, Ok(r) if r >= 1);
    let target = d.as_secs_f64();
    let verdict = if !valid {
        if healthy {
            "invalid: the connection closed but the server did not count a removal".into()
        } else {
            format!(
                "invalid: the client stalled {} ms, so it was not healthy",
                max_gap.as_millis()
            )
        }
    } else if (measured - target).abs() <= 0.05 * target + 0.25 {
        format!(
            "confirms: a healthy but quiet client was closed after {measured:.2} s, its deadline {}; pair a read deadline with ping (reference {ref_d} s)",
            fmt_duration(d)
        )
    } else {
        format!(
            "differs: closed after {measured:.2} s, deadline {}",
            fmt_duration(d)
        )
    };
    Ok(verification(
        "read-deadline",
        Some(measured),
        "s",
        super::reference_for("read-deadline"),
        verdict,
        details,
        valid,
        started,
    ))
}

/// Both halves mostly wait, so they run side by side. The servers are started here, on
/// the calling thread, because the children's death signal follows the spawning thread.
pub fn run(run: &Run) -> anyhow::Result<Vec<Verification>> {
    type Setup = fn(&Run) -> anyhow::Result<Server>;
    type Measure = fn(&Run, Server) -> anyhow::Result<Verification>;
    let parts: [(&str, Setup, Measure); 2] = [
        ("tcp-keepalive", dead_peer_server, dead_peer),
        ("read-deadline", read_deadline_server, read_deadline),
    ];
    let started = Instant::now();
    let mut ready = Vec::new();
    let mut failed = Vec::new();
    for (name, setup, measure) in parts {
        if !run.wants(name) {
            continue;
        }
        match setup(run) {
            Ok(server) => ready.push((name, server, measure)),
            Err(e) if super::guard::interrupted() => return Err(e),
            Err(e) => failed.push((name, Err(e))),
        }
    }
    let results: Vec<(&str, anyhow::Result<Verification>)> = std::thread::scope(|sc| {
        let handles: Vec<_> = ready
            .into_iter()
            .map(|(name, server, measure)| (name, sc.spawn(move || measure(run, server))))
            .collect();
        handles
            .into_iter()
            .map(|(name, h)| {
                let r = h
                    .join()
                    .unwrap_or_else(|_| Err(anyhow!("{name}: the measuring thread panicked")));
                (name, r)
            })
            .collect()
    });
    let mut out = Vec::new();
    for (name, r) in results.into_iter().chain(failed) {
        match r {
            Ok(v) => out.push(v),
            Err(e) if super::guard::interrupted() => return Err(e),
            Err(e) => out.push(verification(
                name,
                None,
                "s",
                super::reference_for(name),
                format!("invalid: {e:#}"),
                vec![],
                false,
                started,
            )),
        }
    }
    // Report order: dead peer first.
    out.sort_by_key(|v| v.name != "tcp-keepalive");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prediction_window() {
        // Reference 5 s / 8 s, silent 3 s after the pong: 5 s (checked continuously) to 10 s.
        let (lo, hi) = predicted_detection(
            Duration::from_secs(5),
            Duration::from_secs(8),
            Duration::from_secs(3),
        );
        assert!((lo - 5.0).abs() < 1e-9 && (hi - 10.0).abs() < 1e-9);
        let (lo, _) = predicted_detection(
            Duration::from_secs(5),
            Duration::from_secs(1),
            Duration::from_secs(3),
        );
        assert_eq!(lo, 0.0);
    }
}
