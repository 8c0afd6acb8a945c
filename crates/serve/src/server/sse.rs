//! The SSE connection task: the head, a resume from Last-Event-ID (or a session's), then
//! live events and keepalive comments; the client sends nothing, EOF means it left.
use super::super::app::App;
use super::super::config::{Config, Strategy};
use super::super::hub::{CloseReason, Conn, Hub};
use super::super::io::{self, ReadOutcome, WriteError};
use super::super::replay::Replay;
use super::super::resume;
use super::super::session;
use super::{access, rearm, refuse, write_failure, write_next, write_replay};
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::epoch::Position;
use rtcheck_wire::http::Request;
use rtcheck_wire::transport::Transport;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// SSE: replay from Last-Event-ID out of the ring, then live events; comments as
/// keepalive. The client sends nothing after its request; EOF means it left.
pub(super) async fn serve_sse(app: Arc<App>, stream: TcpStream, req: Request) {
    let hub = &app.hub;
    // `SEQ@EPOCH` (our ids) or a bare seq; not a number: an unknown position, answered
    // with the whole ring after a gap marker.
    let last_id = req
        .header("last-event-id")
        .map(str::to_string)
        .or_else(|| req.query_param("last_event_id"))
        .map(|v| Position::parse(&v));
    let presented = req.query_param("session");
    if hub.is_shutting_down() {
        return;
    }
    drop(req);
    // At --max-sessions a new session is refused here, under the sessions' lock only
    // (registering would judge it under the hub's locks too); register still catches a race.
    if let Err(r) = hub.sessions.check(presented.as_deref()) {
        return refuse(hub, &stream, r).await;
    }
    if let Err(e) = sse_liveness(&stream, &hub.cfg) {
        eprintln!("rtcheck serve: SSE socket options: {e}");
    }
    let mut head = sse_head(hub.cfg.cors.as_deref());
    let (conn, replay) = if hub.cfg.delivery == Delivery::SessionAck {
        let ack = session::ack_from(hub.epoch(), last_id);
        let registered = resume::register(hub, stream, Transport::Sse, presented.as_deref(), ack);
        let (conn, replay, hello) = match registered {
            Ok(r) => r,
            Err((stream, r)) => return refuse(hub, &stream, r).await,
        };
        head.push_str(&hello.sse());
        (conn, replay)
    } else {
        if app.cluster.is_some() && last_id.is_some() {
            // The Stream read can wait on a slow Redis (up to its operation timeout): the
            // head goes first, so the client sees an answer, not a silent socket (as /ws's
            // 101 does).
            // A failed write is not judged here: the socket's next write fails too, and the
            // client is then deregistered with its close reason like any other.
            let r = io::write_with_deadline(&stream, head.as_bytes(), hub.cfg.write_deadline);
            let _ = r.await;
            head.clear();
        }
        let extra = app.stream_after_pos(last_id.map(|p| p.seq)).await;
        let (conn, first) = hub.register_resume_with(stream, Transport::Sse, last_id, &extra);
        // A reset marker first (after the head) if the position was not this server's.
        if let Some(r) = first.reset {
            head.push_str(&r.sse());
        }
        (conn, first.replay)
    };
    let (reason, in_flight) = sse_loop(hub, &conn, &head, replay).await;
    hub.deregister(&conn, reason, in_flight);
}

/// The SSE response head (with the CORS headers when `--cors`).
fn sse_head(cors: Option<&str>) -> String {
    let mut head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: keep-alive\r\nX-Accel-Buffering: no\r\n".to_string();
    for (k, v) in access::cors_headers(cors, "/sse") {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// An SSE client sends nothing after its request, so the server cannot wait for pongs:
/// the kernel bounds its liveness instead. Unacknowledged data (events, keepalive comments)
/// fails the socket after --pong-wait (TCP_USER_TIMEOUT), and TCP keepalive probes an idle
/// one within about --pong-wait. Either ends as ETIMEDOUT: closed reason `tcp_timeout`.
fn sse_liveness(s: &TcpStream, cfg: &Config) -> std::io::Result<()> {
    let Some(wait) = cfg.pong_wait else {
        return Ok(());
    };
    let sock = socket2::SockRef::from(s);
    sock.set_tcp_user_timeout(Some(wait))?;
    let second = Duration::from_secs(1);
    let ka = socket2::TcpKeepalive::new()
        .with_time((wait / 2).max(second))
        .with_interval((wait / 6).max(second))
        .with_retries(3);
    sock.set_tcp_keepalive(&ka)
}

/// Write the head and the replay, then live events and keepalive comments until the
/// client leaves, is removed, or its --sse-max-age is reached.
async fn sse_loop(hub: &Hub, conn: &Conn, head: &str, replay: Replay) -> (CloseReason, u64) {
    let cfg = &hub.cfg;
    let writer = cfg.strategy == Strategy::PerClient;
    // The head, the gap marker and the replay, in chunks under the replay budget and the
    // write deadline (super::replay).
    let r = write_replay(hub, conn, Transport::Sse, head.as_bytes(), replay).await;
    if let Err(e) = r {
        return (write_failure(e), 0);
    }
    conn.done_writing();
    let ping = cfg.ping.filter(|_| writer);
    let mut next_ping = ping.map(|p| Instant::now() + p);
    let timer = tokio::time::sleep_until(Instant::now());
    tokio::pin!(timer);
    let mut armed: Option<Instant> = None;
    let max_age = cfg.sse_max_age.map(|d| Instant::now() + d);
    loop {
        if hub.is_shutting_down() {
            return (CloseReason::Shutdown, 0);
        }
        if max_age.is_some_and(|t| Instant::now() >= t) {
            return (CloseReason::MaxAge, 0);
        }
        match write_next(hub, conn, Transport::Sse, writer).await {
            Some(Ok(())) => continue,
            Some(Err(end)) => return end,
            None => {}
        }
        rearm(timer.as_mut(), &mut armed, next_ping);
        tokio::select! {
            _ = conn.notify.notified() => {}
            _ = tokio::time::sleep_until(max_age.unwrap_or_else(Instant::now)), if max_age.is_some() => {}
            r = conn.stream.readable() => {
                let read = r.map_err(|_| CloseReason::Peer);
                if let Err(end) = read.and_then(|()| discard_input(&conn.stream)) {
                    return (end, 0);
                }
            }
            _ = &mut timer, if armed.is_some() => {
                armed = None;
                if let Err(e) = keepalive(hub, conn).await {
                    return (write_failure(e), 0);
                }
                next_ping = ping.map(|p| Instant::now() + p);
            }
        }
    }
}

/// Discard whatever the client sends; Err when it left (EOF) or its socket failed.
fn discard_input(s: &TcpStream) -> Result<(), CloseReason> {
    match io::read_available(s, 64 * 1024, |_| true) {
        Ok(ReadOutcome::Data(_)) => Ok(()),
        Ok(ReadOutcome::Eof) => Err(CloseReason::Peer),
        Err(e) => Err(CloseReason::from_io(&e)),
    }
}

/// A keepalive comment, skipped if messages are queued (they are written next).
async fn keepalive(hub: &Hub, conn: &Conn) -> Result<(), WriteError> {
    if conn.try_begin_writing() {
        let r = io::write_with_deadline(&conn.stream, b": ping\n\n", hub.cfg.write_deadline).await;
        conn.done_writing();
        r?;
    }
    Ok(())
}
