//! The WebSocket connection task: the handshake, registration (resume, session-ack), then
//! queued messages out, pings and pongs, client messages in, removal when silent or slow.
use super::super::app::App;
use super::super::config::{Config, Strategy};
use super::super::hub::{CloseReason, Conn, Hub};
use super::super::inbox::{Inbox, ReadEnd};
use super::super::io::{self, WriteError};
use super::super::replay::Replay;
use super::super::resume::{self, ResumeReply};
use super::super::routes::resume_position;
use super::super::session;
use super::{rearm, refuse, send, write_failure, write_next, write_replay, GOODBYE};
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::epoch::Position;
use rtcheck_wire::http::{self, Request};
use rtcheck_wire::transport::Transport;
use rtcheck_wire::ws;
use rtcheck_wire::ws::echo_close_code;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The client's handshake checked (RFC 6455 4.2.1): its Sec-WebSocket-Key, or the response
/// refusing it.
fn check_handshake(req: &Request) -> Result<&str, Vec<u8>> {
    const UPGRADE: [(&str, &str); 3] = [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Version", "13"),
    ];
    if !req.header_has("upgrade", "websocket") || !req.header_has("connection", "upgrade") {
        return Err(http::error_with(
            426,
            "WebSocket upgrade required (GET, HTTP/1.1, Upgrade: websocket, Sec-WebSocket-Version: 13, Sec-WebSocket-Key)",
            &UPGRADE,
        ));
    }
    if req.method != "GET" || !req.http11 {
        return Err(http::error(400, "a WebSocket handshake is an HTTP/1.1 GET"));
    }
    if req.header("sec-websocket-version").map(str::trim) != Some("13") {
        return Err(http::error_with(
            426,
            "unsupported Sec-WebSocket-Version (this server speaks 13)",
            &UPGRADE,
        ));
    }
    match req.header("sec-websocket-key").map(str::trim) {
        Some(k) if is_websocket_key(k) => Ok(k),
        _ => Err(http::error(
            400,
            "Sec-WebSocket-Key must be 16 bytes in base64",
        )),
    }
}

/// A base64 encoding of exactly 16 bytes: 22 significant characters, the last of which
/// carries no stray bits, then `==`.
fn is_websocket_key(k: &str) -> bool {
    let b = k.as_bytes();
    let b64 = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    b.len() == 24 && b[..22].iter().all(b64) && b"AQgw".contains(&b[21]) && &b[22..] == b"=="
}

/// Check the handshake and answer it: true once the 101 is sent.
pub(super) async fn accept_ws(hub: &Hub, stream: &TcpStream, req: Request) -> bool {
    let key = match check_handshake(&req) {
        Ok(k) => k,
        Err(resp) => {
            hub.counters.bad_requests.fetch_add(1, Relaxed);
            send(stream, &resp).await;
            return false;
        }
    };
    let cors = hub.cfg.cors.as_deref();
    if !super::access::origin_allowed(req.header("origin"), req.header("host"), cors) {
        hub.counters.bad_requests.fetch_add(1, Relaxed);
        hub.counters.refused_origin.fetch_add(1, Relaxed);
        let msg = "Origin is another site's: a WebSocket from it is refused (serve --cors ORIGIN allows one, --cors '*' any)";
        send(stream, &http::error(403, msg)).await;
        return false;
    }
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    // Nothing of the HTTP request may stay allocated for the connection's lifetime.
    drop(req);
    let resp = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    !hub.is_shutting_down() && send(stream, resp.as_bytes()).await
}

pub(super) async fn upgrade_ws(app: Arc<App>, stream: TcpStream, req: Request, leftover: Vec<u8>) {
    let hub = &app.hub;
    // Resume like SSE's Last-Event-ID: `/ws?since=SEQ&epoch=E`; an id that is not a
    // number is an unknown position (the whole ring after a gap marker), as for SSE.
    let since = resume_position(&req);
    let presented = req.query_param("session");
    // At --max-sessions a new session is refused before the handshake is answered.
    if let Err(r) = hub.sessions.check(presented.as_deref()) {
        refuse(hub, &stream, r).await;
        return;
    }
    if !accept_ws(hub, &stream, req).await {
        return;
    }
    let registered = match hub.cfg.delivery {
        Delivery::SessionAck => ws_session(hub, stream, since, presented.as_deref()).await,
        Delivery::SeqRing if since.is_none() => {
            let (conn, hello) = resume::register_ws(hub, stream);
            Some((conn, hello, Replay::default()))
        }
        Delivery::SeqRing | Delivery::Snapshot => {
            let extra = app.stream_after_pos(since.map(|p| p.seq)).await;
            let (conn, first) =
                hub.register_resume_with(stream, Transport::Websocket, since, &extra);
            // The hello, then a reset marker if the position was not this server's.
            let mut head = rtcheck_wire::epoch::ws_hello(first.epoch, first.latest);
            if let Some(r) = first.reset {
                head.extend_from_slice(&r.ws());
            }
            Some((conn, head, first.replay))
        }
    };
    let Some((conn, head, replay)) = registered else {
        return;
    };
    if !ws_replay(hub, &conn, &head, replay).await {
        hub.deregister(&conn, CloseReason::Peer, 0);
        return;
    }
    let (reason, in_flight) = ws_loop(&app, &conn, leftover).await;
    hub.deregister(&conn, reason, in_flight);
}

/// A session-ack WebSocket client registered: its connection, its hello frame and its
/// replay; None when another client took the last place since the check (told 1013).
async fn ws_session(
    hub: &Hub,
    stream: TcpStream,
    since: Option<Position>,
    presented: Option<&str>,
) -> Option<(Arc<Conn>, Vec<u8>, Replay)> {
    let ack = session::ack_from(hub.epoch(), since);
    match resume::register(hub, stream, Transport::Websocket, presented, ack) {
        Ok((conn, replay, hello)) => {
            let head = ws::frame(ws::OP_TEXT, hello.json().as_bytes());
            Some((conn, head, replay))
        }
        // 1013 Try Again Later, best effort and briefly.
        Err((stream, _)) => {
            let close = ws::close_frame(ws::CLOSE_TRY_AGAIN);
            let _ = tokio::time::timeout(GOODBYE, io::write_all(&stream, &close)).await;
            None
        }
    }
}

/// The resume head of a WebSocket client: a gap marker as a text frame with the same
/// `{"from":A,"to":B}` as SSE's `event: gap`, then the ring's replay, in chunks under the
/// replay budget and the write deadline (super::replay). The connection was registered as
/// writing, so the publisher only queues until this is out.
async fn ws_replay(hub: &Hub, conn: &Conn, head: &[u8], replay: Replay) -> bool {
    let ok = write_replay(hub, conn, Transport::Websocket, head, replay)
        .await
        .is_ok();
    conn.done_writing();
    ok
}

/// Everything a WebSocket client does: receive queued messages (per-client strategy),
/// answer pings, get pinged, and be removed when silent or too slow.
async fn ws_loop(app: &App, conn: &Conn, leftover: Vec<u8>) -> (CloseReason, u64) {
    let hub = &*app.hub;
    let cfg = &hub.cfg;
    // With shards, a shard task writes to this socket: this task must not write.
    let writer = cfg.strategy == Strategy::PerClient;
    let gauge = &hub.counters.partial_frame_bytes;
    let mut inbox = match Inbox::new(leftover, cfg.max_message, gauge) {
        Ok(b) => b,
        Err(e) => return bad_input(conn, writer, e.close_code()).await,
    };
    let mut control = Pending::default();
    let mut live = Liveness::new(cfg, writer, Instant::now());
    let timer = tokio::time::sleep_until(Instant::now());
    tokio::pin!(timer);
    let mut armed: Option<Instant> = None;
    loop {
        let frames = &mut inbox.frames;
        if let Some(end) = answer_client(app, conn, writer, frames, &mut control).await {
            return end;
        }
        match write_next(hub, conn, Transport::Websocket, writer).await {
            Some(Ok(())) => continue,
            Some(Err(end)) => return end,
            None => {}
        }
        // One timer for ping, pong deadline and message deadline keeps the idle task small.
        let msg_dead = inbox.message_deadline(cfg.message_timeout);
        rearm(timer.as_mut(), &mut armed, live.wake_at(msg_dead));
        tokio::select! {
            _ = conn.notify.notified() => {}
            r = conn.stream.readable() => {
                if r.is_err() {
                    return (CloseReason::Peer, 0);
                }
                match inbox.read(&conn.stream) {
                    Ok(0) => {}
                    Ok(_) => live.last_in = Instant::now(),
                    Err(ReadEnd::Bad(e)) => return bad_input(conn, writer, e.close_code()).await,
                    Err(ReadEnd::Gone(r)) => return (r, 0),
                }
            }
            _ = &mut timer, if armed.is_some() => {
                armed = None;
                match live.due(Instant::now(), msg_dead) {
                    Due::Nothing => {}
                    Due::Ping => control.ping = true,
                    Due::PongTimeout => return (CloseReason::PongTimeout, 0),
                    Due::MessageTimeout => {
                        goodbye(conn, writer, &ws::close_frame(ws::CLOSE_POLICY)).await;
                        return (CloseReason::MessageTimeout, 0);
                    }
                }
            }
        }
    }
}

/// Act on what the client sent and write what it is owed (pongs, our ping, a resume
/// message's answer); Some when the connection ends.
async fn answer_client(
    app: &App,
    conn: &Conn,
    writer: bool,
    frames: &mut Vec<ws::Inbound>,
    control: &mut Pending,
) -> Option<(CloseReason, u64)> {
    let hub = &*app.hub;
    if let Some(r) = handle_inbound(hub, conn, frames, control) {
        if let Some(code) = control.close.filter(|_| writer) {
            goodbye(conn, writer, &ws::close_frame(code)).await; // echo the close
        }
        return Some((r, 0));
    }
    if hub.is_shutting_down() {
        goodbye(conn, writer, &ws::close_frame(ws::CLOSE_GOING_AWAY)).await;
        return Some((CloseReason::Shutdown, 0));
    }
    if let Some(pos) = control.resume.take() {
        let extra = app.stream_after(pos.seq).await;
        control.replay = resume::ws_resume_reply(hub, conn, pos, &extra);
    }
    let r = write_control(hub, conn, control).await;
    r.err().map(|e| (write_failure(e), 0))
}

/// The control frames, then a resume message's replay in chunks. Not while the
/// publisher's partial write waits in the queue: that goes first.
async fn write_control(hub: &Hub, conn: &Conn, control: &mut Pending) -> Result<(), WriteError> {
    if !control.is_empty() && conn.try_begin_writing() {
        let c = control.take_bytes();
        let r = io::write_with_deadline(&conn.stream, &c, hub.cfg.write_deadline).await;
        conn.done_writing();
        r?;
    }
    if control.replay.is_some() && conn.try_begin_writing() {
        let (reset, replay) = control.replay.take().unwrap_or_default();
        // A reset marker first when the position was not this server's.
        let head = reset.map_or(Vec::new(), |r| r.ws());
        let r = write_replay(hub, conn, Transport::Websocket, &head, replay).await;
        conn.done_writing();
        r?;
    }
    Ok(())
}

/// A WebSocket client's liveness: our pings, its pong deadline (with shards, neither:
/// this task does not write).
#[derive(Debug)]
struct Liveness {
    ping: Option<Duration>,
    pong_wait: Option<Duration>,
    /// When the client last sent anything.
    last_in: Instant,
    next_ping: Option<Instant>,
}

/// What the timer found due.
#[derive(Debug, PartialEq, Eq)]
enum Due {
    Nothing,
    Ping,
    PongTimeout,
    MessageTimeout,
}

impl Liveness {
    fn new(cfg: &Config, writer: bool, now: Instant) -> Liveness {
        let ping = cfg.ping.filter(|_| writer);
        Liveness {
            ping,
            pong_wait: cfg.pong_wait.filter(|_| writer),
            last_in: now,
            next_ping: ping.map(|p| now + p),
        }
    }

    fn dead_at(&self) -> Option<Instant> {
        self.pong_wait.map(|w| self.last_in + w)
    }

    /// The earliest of the next ping, the pong deadline and the message deadline.
    fn wake_at(&self, msg_dead: Option<Instant>) -> Option<Instant> {
        [self.next_ping, self.dead_at(), msg_dead]
            .into_iter()
            .flatten()
            .min()
    }

    /// What is due at `now`: an unfinished message or silence end the connection; a
    /// ping due schedules the next.
    fn due(&mut self, now: Instant, msg_dead: Option<Instant>) -> Due {
        if msg_dead.is_some_and(|d| now >= d) {
            return Due::MessageTimeout;
        }
        if self.dead_at().is_some_and(|d| now >= d) {
            return Due::PongTimeout;
        }
        if self.next_ping.is_some_and(|p| now >= p) {
            self.next_ping = self.ping.map(|p| now + p);
            return Due::Ping;
        }
        Due::Nothing
    }
}

/// Control frames waiting for the socket, bounded whatever the client sends: a ping burst
/// collapses into pongs for its latest pings ([`ws::Pongs`]) however TCP split it.
#[derive(Debug, Default)]
struct Pending {
    /// Pongs for the latest unanswered pings.
    pongs: ws::Pongs,
    /// Our own keepalive ping is due.
    ping: bool,
    /// The client closed: the code to echo.
    close: Option<u16>,
    /// Frames answering a client message.
    extra: Vec<u8>,
    /// A resume message's answer (a reset marker, then the replay written in chunks).
    replay: Option<ResumeReply>,
    /// A resume message's position, to answer from the cluster's Redis ring.
    resume: Option<Position>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.pongs.is_empty() && !self.ping && self.extra.is_empty()
    }
    fn take_bytes(&mut self) -> Vec<u8> {
        let mut v = std::mem::take(&mut self.extra);
        self.pongs.drain_into(&mut v);
        if std::mem::take(&mut self.ping) {
            v.extend_from_slice(&ws::frame(ws::OP_PING, b""));
        }
        v
    }
}

/// Act on decoded client frames; Some(reason) when the connection must end.
fn handle_inbound(
    hub: &Hub,
    conn: &Conn,
    inbound: &mut Vec<ws::Inbound>,
    control: &mut Pending,
) -> Option<CloseReason> {
    use ws::Inbound;
    let writer = hub.cfg.strategy == Strategy::PerClient;
    for m in inbound.drain(..) {
        match m {
            Inbound::Ping(p) if writer => control.pongs.push(p),
            Inbound::Ping(_) | Inbound::Pong => {}
            Inbound::Text(t) => {
                hub.counters.inbound_messages.fetch_add(1, Relaxed);
                // With a cluster the resume reads the Redis ring: answered by the loop.
                if let Some(since) = resume::cluster_resume_since(hub, conn, &t).filter(|_| writer)
                {
                    control.resume = Some(since);
                } else if let Some(r) = resume::on_ws_text(hub, conn, &t).filter(|_| writer) {
                    control.replay = Some(r);
                }
            }
            Inbound::Binary(_) => {
                hub.counters.inbound_messages.fetch_add(1, Relaxed);
            }
            Inbound::Close(code) => {
                control.close = Some(echo_close_code(code));
                return Some(CloseReason::Peer);
            }
        }
    }
    None
}

async fn bad_input(conn: &Conn, writer: bool, code: u16) -> (CloseReason, u64) {
    goodbye(conn, writer, &ws::close_frame(code)).await;
    (CloseReason::BadInput, 0)
}

/// A last frame, best effort and briefly. Skipped if a partly written message is queued
/// (the frame would land inside it); afterwards the publisher only queues. Never with
/// shards (`writer` false): a shard task may be in the middle of a write.
async fn goodbye(conn: &Conn, writer: bool, bytes: &[u8]) {
    if writer && conn.claim_for_goodbye() {
        let _ = tokio::time::timeout(GOODBYE, io::write_all(&conn.stream, bytes)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_keys_are_16_bytes_of_base64() {
        assert!(is_websocket_key("dGhlIHNhbXBsZSBub25jZQ=="));
        assert!(is_websocket_key("AAAAAAAAAAAAAAAAAAAAAA=="));
        assert!(!is_websocket_key("dGhlIHNhbXBsZSBub25jZR==")); // stray bits
        assert!(!is_websocket_key("dGhlIHNhbXBsZSBub25j")); // 15 bytes
        assert!(!is_websocket_key("dGhlIHNhbXBsZSBub25jZQ="));
        assert!(!is_websocket_key("dGhlIHNhbXBsZSBub25jZ!=="));
        assert!(!is_websocket_key(""));
    }

    #[test]
    fn close_codes_that_must_not_be_sent_are_not_echoed() {
        assert_eq!(echo_close_code(None), 1000);
        assert_eq!(echo_close_code(Some(1001)), 1001);
        assert_eq!(echo_close_code(Some(4000)), 4000);
        for bad in [0, 999, 1004, 1005, 1006, 1015, 2999, 5000] {
            assert_eq!(echo_close_code(Some(bad)), 1002, "{bad}");
        }
    }

    #[test]
    fn liveness_pings_on_schedule_and_ends_a_silent_or_stuck_client() {
        let opts = crate::config::Options::default(); // --ping 20s, --pong-wait 30s
        let cfg = Config::from_options_with(&opts, 1, None).unwrap();
        let (t0, s) = (Instant::now(), Duration::from_secs);
        let mut l = Liveness::new(&cfg, true, t0);
        assert_eq!(l.wake_at(None), Some(t0 + s(20)));
        assert_eq!(l.due(t0 + s(19), None), Due::Nothing);
        assert_eq!(l.due(t0 + s(20), None), Due::Ping);
        assert_eq!(l.next_ping, Some(t0 + s(40)));
        assert_eq!(
            l.wake_at(None),
            Some(t0 + s(30)),
            "the pong deadline is next"
        );
        assert_eq!(l.due(t0 + s(30), None), Due::PongTimeout);
        l.last_in = t0 + s(25);
        assert_eq!(l.due(t0 + s(30), None), Due::Nothing, "it spoke since");
        assert_eq!(l.due(t0 + s(30), Some(t0 + s(29))), Due::MessageTimeout);
        // With shards this task writes nothing: no ping, no pong deadline.
        assert_eq!(Liveness::new(&cfg, false, t0).wake_at(None), None);
    }
}
