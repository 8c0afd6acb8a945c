//! Listeners, the HTTP keep-alive loop (dispatching through `routes`), and what the
//! connection tasks share; the WebSocket task is [`ws`], the SSE task [`sse`].
mod sse;
mod ws;

use super::app::App;
use super::hub::{CloseReason, Conn, Hub};
use super::io::{self, WriteError};
use super::replay::{self, Replay};
use super::request::{self, ReadError};
use super::ring::POLL_MAX;
use super::routes::{self, Answer, Handler, Takeover};
use super::session::Refused;
use super::{access, echo, work};
use rtcheck_wire::http::{self, Request};
use rtcheck_wire::transport::Transport;
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
        Takeover::Ws => drop(tokio::spawn(ws::upgrade_ws(app, stream, req, buf))),
        Takeover::Sse => drop(tokio::spawn(sse::serve_sse(app, stream, req))),
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
        Takeover::Ws => ws::upgrade_ws(app, stream, req, buf).await,
        Takeover::Echo => {
            if ws::accept_ws(&app.hub, &stream, req).await {
                echo::run(&app.hub, &stream, buf).await;
            }
        }
        Takeover::Sse => sse::serve_sse(app, stream, req).await,
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

/// The close reason for a failed write.
pub(crate) fn write_failure(e: WriteError) -> CloseReason {
    CloseReason::from_write(e)
}

/// Per-client strategy (`writer`): write the next queued message, if any. None when
/// nothing is queued; an error ends the connection with that message in flight.
async fn write_next(
    hub: &Hub,
    conn: &Conn,
    t: Transport,
    writer: bool,
) -> Option<Result<(), (CloseReason, u64)>> {
    if !writer {
        return None;
    }
    let item = conn.pop()?;
    let wire = item.wire(t);
    let r = io::write_with_deadline(&conn.stream, &wire, hub.cfg.write_deadline).await;
    conn.done_writing();
    Some(match r {
        Ok(()) => {
            hub.counters.sent(t, item.bytes.len());
            Ok(())
        }
        Err(e) => Err((write_failure(e), 1)),
    })
}

/// Move a connection's one long-lived timer only when its deadline moves: a timer per
/// loop iteration would cost two timer-wheel lock round trips per message.
fn rearm(
    timer: std::pin::Pin<&mut tokio::time::Sleep>,
    armed: &mut Option<Instant>,
    wake_at: Option<Instant>,
) {
    if wake_at != *armed {
        if let Some(t) = wake_at {
            timer.reset(t);
        }
        *armed = wake_at;
    }
}
