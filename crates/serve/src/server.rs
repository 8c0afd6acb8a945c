//! Listeners, the HTTP keep-alive loop (dispatching through `routes`), and the
//! per-connection tasks (WebSocket, SSE, raw floor).
use super::app::App;
use super::config::Strategy;
use super::hub::{CloseReason, Conn, Hub};
use super::inbox::{Inbox, ReadEnd};
use super::io::{self, ReadOutcome, WriteError};
use super::replay::{self, Replay};
use super::request::{self, ReadError};
use super::resume::{self, ResumeReply};
use super::ring::POLL_MAX;
use super::routes::{self, resume_position, Answer, Handler, Takeover};
use super::session::{self, Refused};
use super::{access, echo, work};
use rtcheck_wire::delivery::Delivery;
use rtcheck_wire::epoch::Position;
use rtcheck_wire::http::{self, Request};
use rtcheck_wire::transport::Transport;
use rtcheck_wire::ws;
use rtcheck_wire::ws::echo_close_code;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// Idle time allowed between requests on a keep-alive connection, and for a request head.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Best-effort time for a goodbye (close frame) at shutdown or after bad input.
const GOODBYE: Duration = Duration::from_millis(200);

/// Accept loop for the HTTP front (or the raw floor when `raw`).
pub async fn accept_loop(app: Arc<App>, listener: TcpListener, raw: bool) {
    let hub = &app.hub;
    let mut log = super::ratelog::RateLog::new(super::ratelog::EVERY);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = hub.shutdown_signalled() => return,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning, keep serving; counted,
                // and logged once per interval (it repeats 20 times a second).
                hub.counters.accept_error(&e);
                if let Some(n) = log.hit(std::time::Instant::now()) {
                    eprintln!(
                        "rtcheck serve: accept: {e}{} (rtcheck_accept_errors_total)",
                        log.suffix(n)
                    );
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Err(e) = tune(hub, &stream) {
            eprintln!("rtcheck serve: socket options: {e}");
            continue;
        }
        if raw {
            // Raw floor: the publisher writes directly; nothing to read.
            hub.register(stream, Transport::Raw);
        } else {
            tokio::spawn(handle_http(app.clone(), stream));
        }
    }
}

fn tune(hub: &Hub, s: &TcpStream) -> std::io::Result<()> {
    if s.set_nodelay(true).is_err() {
        hub.nodelay.store(false, Relaxed);
    }
    if let Some(n) = hub.cfg.sndbuf {
        socket2::SockRef::from(s).set_send_buffer_size(n)?;
    }
    Ok(())
}

pub(crate) async fn send(s: &TcpStream, bytes: &[u8]) -> bool {
    io::write_with_deadline(s, bytes, Some(REQUEST_TIMEOUT))
        .await
        .is_ok()
}

/// One HTTP connection: plain requests in a keep-alive loop, or one handed to an endpoint
/// that takes the connection over (the route table says which).
async fn handle_http(app: Arc<App>, stream: TcpStream) {
    // A long-lived WebSocket or SSE connection gets a task of its own, sized to its own
    // future: inside this one it held the keep-alive loop's state and every argument
    // twice (an async fn keeps its parameters beside the future it awaits). Issue 39:
    // 2,120 B instead of 2,776 per idle WebSocket's future in a debug build.
    let Some((stream, req, buf, t)) = keep_alive(&app, stream).await else {
        return;
    };
    match t {
        Takeover::Ws => drop(tokio::spawn(upgrade_ws(app, stream, req, buf))),
        Takeover::Sse => drop(tokio::spawn(serve_sse(app, stream, req))),
        t => take_over(app, stream, req, buf, t).await,
    }
}

/// The keep-alive loop; the request and what was read past it when an endpoint takes
/// the connection over.
async fn keep_alive(
    app: &Arc<App>,
    stream: TcpStream,
) -> Option<(TcpStream, Request, Vec<u8>, Takeover)> {
    let mut buf = Vec::new();
    let Ok(local) = stream.local_addr() else {
        return None;
    };
    // Its own handle: a poll's budget lease borrows it while `app` may be handed on.
    let hub = app.hub.clone();
    loop {
        let req = next_request(&hub, &stream, &mut buf, local).await?;
        let keep = req.keep_alive();
        let cors = access::cors_headers(hub.cfg.cors.as_deref(), &req.path);
        // A CORS preflight is answered for every browser-readable path, before the table.
        let route = match req.method == "OPTIONS" && !cors.is_empty() {
            true => None,
            false => Some(routes::lookup(&req.method, &req.path)),
        };
        // A poll answer is replay too: its bytes (body and response) count in the budget
        // until sent.
        let _lease = match route {
            Some(Ok(Handler::Answer(Answer::Poll))) => Some(hub.replay.lease(2 * POLL_MAX).await),
            _ => None,
        };
        let reply = match route {
            None => Reply::new(200, "text/plain", String::new()),
            Some(Err(r)) => Reply {
                allow: r.allow,
                ..Reply::new(r.status, r.content_type, r.body)
            },
            Some(Ok(Handler::Answer(a))) => {
                let (status, ctype, body) = routes::answer(app, &req, a).await;
                Reply::new(status, ctype, body)
            }
            Some(Ok(Handler::Takeover(Takeover::Work))) => {
                match work::serve(&stream, &req, keep).await {
                    true => continue,
                    false => return None,
                }
            }
            Some(Ok(Handler::Takeover(t))) => return Some((stream, req, buf, t)),
        };
        if !respond(&stream, &req, keep, &cors, reply).await {
            return None;
        }
    }
}

/// The next request, read, counted, its body discarded, and past the access rules; None
/// when the connection ends (after an answer saying why, when there is one).
async fn next_request(
    hub: &Hub,
    stream: &TcpStream,
    buf: &mut Vec<u8>,
    local: std::net::SocketAddr,
) -> Option<Request> {
    let req = match request::read_request(stream, buf, REQUEST_TIMEOUT).await {
        Ok(r) => r,
        Err(ReadError::Bad(e)) => {
            hub.counters.bad_requests.fetch_add(1, Relaxed);
            send(stream, &http::error(e.status, &e.msg)).await;
            return None;
        }
        Err(_) => return None,
    };
    hub.counters.http_requests.fetch_add(1, Relaxed);
    if let Err((status, msg)) = read_body(stream, buf, &req).await {
        if status != 0 {
            hub.counters.bad_requests.fetch_add(1, Relaxed);
            send(stream, &http::error(status, &msg)).await;
        }
        return None;
    }
    if let Err((status, msg)) = gate(hub, &req, local) {
        send(stream, &http::error(status, msg)).await;
        return None;
    }
    let listen = hub.cfg.control_listen.unwrap_or(hub.cfg.listen);
    if access::is_control(&req.path, listen) {
        if let Err((status, msg)) = access::check(&hub.cfg.access, req.header("authorization")) {
            hub.counters.bad_requests.fetch_add(1, Relaxed);
            let extra = [("WWW-Authenticate", "Bearer")];
            let resp = http::error_with(status, msg, &extra[..(status == 401) as usize]);
            send(stream, &resp).await;
            return None;
        }
    }
    Some(req)
}

/// Hand the connection to an endpoint that keeps it (a stream, the echo).
async fn take_over(app: Arc<App>, stream: TcpStream, req: Request, buf: Vec<u8>, t: Takeover) {
    match t {
        Takeover::Ws => upgrade_ws(app, stream, req, buf).await,
        Takeover::Echo => {
            if accept_ws(&app.hub, &stream, req).await {
                echo::run(&app.hub, &stream, buf).await;
            }
        }
        Takeover::Sse => serve_sse(app, stream, req).await,
        // Served in the keep-alive loop (it may keep the connection).
        Takeover::Work => {}
    }
}

/// A one-response answer: status, content type, body, and `Allow` for a 405.
struct Reply {
    status: u16,
    content_type: &'static str,
    body: String,
    allow: Option<String>,
}

impl Reply {
    fn new(status: u16, content_type: &'static str, body: String) -> Reply {
        Reply {
            status,
            content_type,
            body,
            allow: None,
        }
    }
}

/// Send a one-response answer; false when the connection must end (an error, or the
/// client asked for it).
async fn respond(
    stream: &TcpStream,
    req: &Request,
    keep: bool,
    cors: &[(&'static str, &str)],
    r: Reply,
) -> bool {
    // After an error, close: the client may be confused about framing.
    let keep = keep && r.status < 400;
    let retry = (r.status == 503)
        .then(|| routes::retry_after(&r.body))
        .flatten();
    let mut extra = cors.to_vec();
    if let Some(s) = &retry {
        extra.push(("Retry-After", s));
    }
    if let Some(a) = &r.allow {
        extra.push(("Allow", a));
    }
    if req.method == "OPTIONS" && !cors.is_empty() {
        extra.extend(PREFLIGHT);
    }
    let mut resp = http::response_with(r.status, r.content_type, r.body.as_bytes(), keep, &extra);
    if req.method == "HEAD" {
        // Same headers (Content-Length included), no body: keep-alive framing holds.
        resp.truncate(resp.len() - r.body.len());
    }
    send(stream, &resp).await && keep
}

/// The access rules before any route: a Host that is not this server's is refused (421:
/// a DNS-rebinding page), and so is a `/control/*` request from another site's page
/// (403: browsers send Origin on every POST, even `no-cors`). Counted by reason.
fn gate(hub: &Hub, req: &Request, local: std::net::SocketAddr) -> Result<(), (u16, &'static str)> {
    let host = req.header("host");
    if !access::host_allowed(host, local, &hub.cfg.public_hosts) {
        hub.counters.refused_host.fetch_add(1, Relaxed);
        return Err((
            421,
            "Host is not a name of this server (DNS rebinding?); serve --public-host NAME adds one",
        ));
    }
    if req.path.starts_with("/control/") && !access::control_origin_ok(req.header("origin"), host) {
        hub.counters.refused_origin.fetch_add(1, Relaxed);
        return Err((
            403,
            "/control/* is refused to pages of other sites (a request with an Origin)",
        ));
    }
    Ok(())
}

/// Check the request's framing and discard its body (answering `Expect: 100-continue`).
/// Err((status, why)) ends the connection; status 0 means the peer went away.
async fn read_body(s: &TcpStream, buf: &mut Vec<u8>, req: &Request) -> Result<(), (u16, String)> {
    if !req.host_ok() {
        return Err((
            400,
            "an HTTP/1.1 request needs exactly one Host header".into(),
        ));
    }
    if req.header("transfer-encoding").is_some() {
        return Err((501, "Transfer-Encoding is not supported".into()));
    }
    let n = req.content_length().map_err(|m| (400, m))?;
    if n > http::MAX_BODY as u64 {
        return Err((413, "body too large".into()));
    }
    match req.header("expect").map(str::trim) {
        None => {}
        // Ask for the body only when one is announced.
        Some(e) if e.eq_ignore_ascii_case("100-continue") => {
            let go_on = n == 0 || send(s, b"HTTP/1.1 100 Continue\r\n\r\n").await;
            if !go_on {
                return Err((0, String::new()));
            }
        }
        Some(e) => return Err((417, format!("unsupported Expect `{e}`"))),
    }
    if n > 0 {
        request::discard_body(s, buf, n as usize, REQUEST_TIMEOUT)
            .await
            .map_err(|_| (0, String::new()))?;
    }
    Ok(())
}

/// CORS preflight answers for the browser-readable endpoints.
const PREFLIGHT: [(&str, &str); 3] = [
    ("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS"),
    (
        "Access-Control-Allow-Headers",
        "Last-Event-ID, Cache-Control",
    ),
    ("Access-Control-Max-Age", "600"),
];

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
async fn accept_ws(hub: &Hub, stream: &TcpStream, req: Request) -> bool {
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

async fn upgrade_ws(app: Arc<App>, stream: TcpStream, req: Request, leftover: Vec<u8>) {
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

/// A new session refused at `--max-sessions`: 503 with Retry-After (counted in
/// `sessions.refused`).
async fn refuse(hub: &Hub, stream: &TcpStream, r: Refused) {
    let secs = r.0.to_string();
    let msg = hub.sessions.refusal_message(r);
    send(
        stream,
        &http::error_with(503, &msg, &[("Retry-After", &secs)]),
    )
    .await;
}

/// Write `head` then a replay to a registered client, counting what it sent (super::replay).
async fn write_replay(
    hub: &Hub,
    conn: &Conn,
    t: Transport,
    head: &[u8],
    replay: Replay,
) -> Result<(), WriteError> {
    let src = hub.replay_source();
    let sent = |n| hub.counters.sent(t, n);
    replay::write(&src, &conn.stream, t, head, replay, sent).await
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
    let s = &conn.stream;
    // With shards, a shard task writes to this socket: this task must not write.
    let writer = cfg.strategy == Strategy::PerClient;
    let ping = cfg.ping.filter(|_| writer);
    let pong_wait = cfg.pong_wait.filter(|_| writer);
    let gauge = &hub.counters.partial_frame_bytes;
    let mut inbox = match Inbox::new(leftover, cfg.max_message, gauge) {
        Ok(b) => b,
        Err(e) => return bad_input(conn, writer, e.close_code()).await,
    };
    let mut control = Pending::default();
    let mut last_in = Instant::now();
    let mut next_ping = ping.map(|p| Instant::now() + p);
    // One long-lived timer, re-armed only when its deadline moves: creating a timer per
    // loop iteration would cost two timer-wheel lock round trips per message.
    let timer = tokio::time::sleep_until(Instant::now());
    tokio::pin!(timer);
    let mut armed: Option<Instant> = None;
    loop {
        if let Some(r) = handle_inbound(hub, conn, &mut inbox.frames, &mut control) {
            if let Some(code) = control.close.filter(|_| writer) {
                goodbye(conn, writer, &ws::close_frame(code)).await; // echo the close
            }
            return (r, 0);
        }
        if hub.is_shutting_down() {
            goodbye(conn, writer, &ws::close_frame(ws::CLOSE_GOING_AWAY)).await;
            return (CloseReason::Shutdown, 0);
        }
        if let Some(pos) = control.resume.take() {
            let extra = app.stream_after(pos.seq).await;
            control.replay = resume::ws_resume_reply(hub, conn, pos, &extra);
        }
        // Not while the publisher's partial write waits in the queue: that goes first.
        if !control.is_empty() && conn.try_begin_writing() {
            let c = control.take_bytes();
            let r = io::write_with_deadline(s, &c, cfg.write_deadline).await;
            conn.done_writing();
            if let Err(e) = r {
                return (write_failure(e), 0);
            }
        }
        // A resume message's replay, after the control frames, in chunks.
        if control.replay.is_some() && conn.try_begin_writing() {
            let (reset, replay) = control.replay.take().unwrap_or_default();
            // A reset marker first when the position was not this server's.
            let head = reset.map_or(Vec::new(), |r| r.ws());
            let r = write_replay(hub, conn, Transport::Websocket, &head, replay).await;
            conn.done_writing();
            if let Err(e) = r {
                return (write_failure(e), 0);
            }
        }
        if writer {
            if let Some(item) = conn.pop() {
                let wire = item.wire(Transport::Websocket);
                let r = io::write_with_deadline(s, &wire, cfg.write_deadline).await;
                conn.done_writing();
                match r {
                    Ok(()) => hub.counters.sent(Transport::Websocket, item.bytes.len()),
                    Err(e) => return (write_failure(e), 1),
                }
                continue;
            }
        }
        // One timer for ping, pong deadline and message deadline keeps the idle task small.
        let dead_at = pong_wait.map(|w| last_in + w);
        let msg_dead = inbox.message_deadline(cfg.message_timeout);
        let wake_at = [next_ping, dead_at, msg_dead].into_iter().flatten().min();
        if wake_at != armed {
            if let Some(t) = wake_at {
                timer.as_mut().reset(t);
            }
            armed = wake_at;
        }
        tokio::select! {
            _ = conn.notify.notified() => {}
            r = s.readable() => {
                if r.is_err() {
                    return (CloseReason::Peer, 0);
                }
                match inbox.read(s) {
                    Ok(0) => {}
                    Ok(_) => last_in = Instant::now(),
                    Err(ReadEnd::Bad(e)) => return bad_input(conn, writer, e.close_code()).await,
                    Err(ReadEnd::Gone(r)) => return (r, 0),
                }
            }
            _ = &mut timer, if armed.is_some() => {
                armed = None;
                let now = Instant::now();
                if msg_dead.is_some_and(|d| now >= d) {
                    goodbye(conn, writer, &ws::close_frame(ws::CLOSE_POLICY)).await;
                    return (CloseReason::MessageTimeout, 0);
                }
                if dead_at.is_some_and(|d| now >= d) {
                    return (CloseReason::PongTimeout, 0);
                }
                if next_ping.is_some_and(|p| now >= p) {
                    control.ping = true;
                    next_ping = ping.map(|p| now + p);
                }
            }
        }
    }
}

/// The close reason for a failed write.
pub(crate) fn write_failure(e: WriteError) -> CloseReason {
    CloseReason::from_write(e)
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

/// SSE: replay from Last-Event-ID out of the ring, then live events; comments as
/// keepalive. The client sends nothing after its request; EOF means it left.
async fn serve_sse(app: Arc<App>, stream: TcpStream, req: Request) {
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
fn sse_liveness(s: &TcpStream, cfg: &super::config::Config) -> std::io::Result<()> {
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

async fn sse_loop(hub: &Hub, conn: &Conn, head: &str, replay: Replay) -> (CloseReason, u64) {
    let cfg = &hub.cfg;
    let s = &conn.stream;
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
        if writer {
            if let Some(item) = conn.pop() {
                let wire = item.wire(Transport::Sse);
                let r = io::write_with_deadline(s, &wire, cfg.write_deadline).await;
                conn.done_writing();
                match r {
                    Ok(()) => hub.counters.sent(Transport::Sse, item.bytes.len()),
                    Err(e) => return (write_failure(e), 1),
                }
                continue;
            }
        }
        if next_ping != armed {
            if let Some(t) = next_ping {
                timer.as_mut().reset(t);
            }
            armed = next_ping;
        }
        tokio::select! {
            _ = conn.notify.notified() => {}
            _ = tokio::time::sleep_until(max_age.unwrap_or_else(Instant::now)), if max_age.is_some() => {}
            r = s.readable() => {
                if r.is_err() {
                    return (CloseReason::Peer, 0);
                }
                // Discard whatever the client sends; EOF means it left.
                match io::read_available(s, 64 * 1024, |_| true) {
                    Ok(ReadOutcome::Data(_)) => {}
                    Ok(ReadOutcome::Eof) => return (CloseReason::Peer, 0),
                    Err(e) => return (CloseReason::from_io(&e), 0),
                }
            }
            _ = &mut timer, if armed.is_some() => {
                armed = None;
                // Skip this keepalive if messages are queued: they are written next.
                if conn.try_begin_writing() {
                    let r = io::write_with_deadline(s, b": ping\n\n", cfg.write_deadline).await;
                    conn.done_writing();
                    if let Err(e) = r {
                        return (write_failure(e), 0);
                    }
                }
                next_ping = ping.map(|p| Instant::now() + p);
            }
        }
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
}
