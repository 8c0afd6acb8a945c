//! Listeners, HTTP routing, and the per-connection tasks (WebSocket, SSE, raw floor).
use super::config::Strategy;
use super::http::{self, ReadError, Request};
use super::hub::{CloseReason, Conn, Hub, Transport};
use super::io::{self, ReadOutcome, WriteError};
use super::{metrics, wsframe};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// Idle time allowed between requests on a keep-alive connection, and for a request head.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Best-effort time for a goodbye (close frame) at shutdown or after bad input.
const GOODBYE: Duration = Duration::from_millis(200);
/// Bound on control frames (pongs) waiting to be written to one client.
const MAX_PENDING_CONTROL: usize = 4096;

/// Accept loop for the HTTP front (or the raw floor when `raw`).
pub async fn accept_loop(hub: Arc<Hub>, listener: TcpListener, raw: bool) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = hub.shutdown_signalled() => return,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning, keep serving.
                eprintln!("rtcheck serve: accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Err(e) = tune(&hub, &stream) {
            eprintln!("rtcheck serve: socket options: {e}");
            continue;
        }
        if raw {
            // Raw floor: the publisher writes directly; nothing to read.
            hub.register(stream, Transport::Raw);
        } else {
            tokio::spawn(handle_http(hub.clone(), stream));
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

async fn send(s: &TcpStream, bytes: &[u8]) -> bool {
    io::write_with_deadline(s, bytes, Some(REQUEST_TIMEOUT))
        .await
        .is_ok()
}

/// One HTTP connection: plain requests in a keep-alive loop, or an upgrade to a stream.
async fn handle_http(hub: Arc<Hub>, stream: TcpStream) {
    let mut buf = Vec::new();
    loop {
        let req = match http::read_request(&stream, &mut buf, REQUEST_TIMEOUT).await {
            Ok(r) => r,
            Err(ReadError::Bad(msg)) => {
                hub.counters.bad_requests.fetch_add(1, Relaxed);
                send(&stream, &http::error(400, &msg)).await;
                return;
            }
            Err(_) => return,
        };
        hub.counters.http_requests.fetch_add(1, Relaxed);
        let keep = req.keep_alive();
        match req.content_length() {
            Ok(0) => {}
            Ok(n) if n <= http::MAX_BODY => {
                if http::discard_body(&stream, &mut buf, n, REQUEST_TIMEOUT)
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Ok(_) => {
                send(&stream, &http::error(413, "body too large")).await;
                return;
            }
            Err(msg) => {
                send(&stream, &http::error(501, &msg)).await;
                return;
            }
        }
        match req.path.as_str() {
            "/ws" => return upgrade_ws(hub, stream, req, buf).await,
            "/sse" => return serve_sse(hub, stream, req).await,
            "/work" if super::work::serve(&stream, &req, keep).await => continue,
            "/work" => return,
            _ => {}
        }
        let (status, ctype, body) = route(&hub, &req);
        // After an error, close: the client may be confused about framing.
        let keep = keep && status < 400;
        let mut resp = http::response(status, ctype, body.as_bytes(), keep);
        if req.method == "HEAD" {
            // Same headers (Content-Length included), no body: keep-alive framing holds.
            resp.truncate(resp.len() - body.len());
        }
        if !send(&stream, &resp).await || !keep {
            return;
        }
    }
}

/// Plain (non-streaming) endpoints: `(status, content type, body)`.
fn route(hub: &Hub, req: &Request) -> (u16, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    const JSON: &str = "application/json";
    let get = req.method == "GET" || req.method == "HEAD";
    match (req.path.as_str(), get) {
        ("/healthz", true) => (200, TEXT, "ok".into()),
        ("/metrics", true) => (
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            metrics::render(&hub.snapshot()) + &super::work::metrics(),
        ),
        ("/poll", true) => match req.query_param("since").map(str::parse::<u64>) {
            Some(Ok(since)) => {
                hub.counters.polls.fetch_add(1, Relaxed);
                (200, JSON, hub.poll_json(since))
            }
            _ => (400, TEXT, "/poll needs ?since=SEQ (an unsigned integer)\n".into()),
        },
        ("/control/stats", true) => (
            200,
            JSON,
            serde_json::to_string(&hub.snapshot()).unwrap_or_else(|_| "{}".into()),
        ),
        ("/control/start", false) if req.method == "POST" => {
            let rounds = match req.query_param("rounds").map(str::parse::<u64>) {
                None => None,
                Some(Ok(n)) => Some(n),
                Some(Err(_)) => {
                    return (400, TEXT, "rounds must be an unsigned integer\n".into());
                }
            };
            if hub.start(rounds) {
                (200, JSON, "{\"started\":true}".into())
            } else {
                (409, JSON, "{\"started\":false,\"error\":\"already started\"}".into())
            }
        }
        ("/healthz" | "/metrics" | "/poll" | "/control/stats" | "/control/start", _) => {
            (405, TEXT, "method not allowed\n".into())
        }
        _ => (
            404,
            TEXT,
            "not found; endpoints: /ws /sse /poll?since=SEQ /metrics /healthz /control/stats /control/start\n"
                .into(),
        ),
    }
}

async fn upgrade_ws(hub: Arc<Hub>, stream: TcpStream, req: Request, leftover: Vec<u8>) {
    let key = req.header("sec-websocket-key").map(str::trim);
    let ok = req.method == "GET"
        && req.header_has("upgrade", "websocket")
        && req.header_has("connection", "upgrade")
        && req.header("sec-websocket-version").map(str::trim) == Some("13");
    let Some(key) = key.filter(|_| ok) else {
        hub.counters.bad_requests.fetch_add(1, Relaxed);
        send(
            &stream,
            &http::error(426, "WebSocket upgrade required (GET, Upgrade: websocket, Sec-WebSocket-Version: 13, Sec-WebSocket-Key)"),
        )
        .await;
        return;
    };
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    // Nothing of the HTTP request may stay allocated for the connection's lifetime.
    drop(req);
    let leftover = if leftover.is_empty() {
        Vec::new()
    } else {
        leftover
    };
    let resp = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    if hub.is_shutting_down() || !send(&stream, resp.as_bytes()).await {
        return;
    }
    let conn = hub.register(stream, Transport::Ws);
    let (reason, in_flight) = ws_loop(&hub, &conn, leftover).await;
    hub.deregister(&conn, reason, in_flight);
}

/// Everything a WebSocket client does: receive queued messages (per-client strategy),
/// answer pings, get pinged, and be removed when silent or too slow.
async fn ws_loop(hub: &Hub, conn: &Conn, mut inbuf: Vec<u8>) -> (CloseReason, u64) {
    let cfg = &hub.cfg;
    let s = &conn.stream;
    // With shards, a shard task writes to this socket: this task must not write.
    let writer = cfg.strategy == Strategy::PerClient;
    let ping = cfg.ping.filter(|_| writer);
    let pong_wait = cfg.pong_wait.filter(|_| writer);
    let mut dec = wsframe::Decoder::default();
    let mut inbound = Vec::new();
    let mut control: Vec<u8> = Vec::new();
    let mut last_in = Instant::now();
    let mut next_ping = ping.map(|p| Instant::now() + p);
    // One long-lived timer, re-armed only when its deadline moves: creating a timer per
    // loop iteration would cost two timer-wheel lock round trips per message.
    let timer = tokio::time::sleep_until(Instant::now());
    tokio::pin!(timer);
    let mut armed: Option<Instant> = None;

    // Frames the client sent together with its handshake.
    if !inbuf.is_empty() {
        match dec.decode(&inbuf, cfg.max_message, &mut inbound) {
            Ok(n) => {
                inbuf.drain(..n);
            }
            Err(e) => return bad_input(conn, writer, e.close_code()).await,
        }
    }
    loop {
        if let Some(r) = handle_inbound(hub, &mut inbound, &mut control) {
            if r == CloseReason::Peer && !control.is_empty() {
                goodbye(conn, writer, &control).await; // echo the close
            }
            return (r, 0);
        }
        if hub.is_shutting_down() {
            goodbye(
                conn,
                writer,
                &wsframe::close_frame(wsframe::CLOSE_GOING_AWAY),
            )
            .await;
            return (CloseReason::Shutdown, 0);
        }
        // Not while the publisher's partial write waits in the queue: that goes first.
        if !control.is_empty() && conn.try_begin_writing() {
            let c = std::mem::take(&mut control);
            let r = io::write_with_deadline(s, &c, cfg.write_deadline).await;
            conn.done_writing();
            match r {
                Ok(()) => {}
                Err(WriteError::Timeout) => return (CloseReason::WriteDeadline, 0),
                Err(WriteError::Io(_)) => return (CloseReason::Peer, 0),
            }
        }
        if writer {
            if let Some(item) = conn.pop() {
                let r = io::write_with_deadline(s, &item.bytes, cfg.write_deadline).await;
                conn.done_writing();
                match r {
                    Ok(()) => hub.counters.sent(Transport::Ws, item.bytes.len()),
                    Err(WriteError::Timeout) => return (CloseReason::WriteDeadline, 1),
                    Err(WriteError::Io(_)) => return (CloseReason::Peer, 1),
                }
                continue;
            }
        }
        // One timer for both ping and pong deadline keeps the idle task small.
        let dead_at = pong_wait.map(|w| last_in + w);
        let wake_at = match (next_ping, dead_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
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
                let mut err = None;
                let out = io::read_available(s, 64 * 1024, |b| {
                    inbuf.extend_from_slice(b);
                    match dec.decode(&inbuf, cfg.max_message, &mut inbound) {
                        Ok(n) => { inbuf.drain(..n); true }
                        Err(e) => { err = Some(e); false }
                    }
                });
                if inbuf.is_empty() {
                    inbuf = Vec::new(); // idle clients hold no read buffer
                }
                if let Some(e) = err {
                    return bad_input(conn, writer, e.close_code()).await;
                }
                match out {
                    Ok(ReadOutcome::Data(n)) => if n > 0 { last_in = Instant::now() },
                    Ok(ReadOutcome::Eof) | Err(_) => return (CloseReason::Peer, 0),
                }
            }
            _ = &mut timer, if armed.is_some() => {
                armed = None;
                let now = Instant::now();
                if dead_at.is_some_and(|d| now >= d) {
                    return (CloseReason::PongTimeout, 0);
                }
                if next_ping.is_some_and(|p| now >= p) {
                    control.extend_from_slice(&wsframe::frame(wsframe::OP_PING, b""));
                    next_ping = ping.map(|p| now + p);
                }
            }
        }
    }
}

/// Act on decoded client frames; Some(reason) when the connection must end.
fn handle_inbound(
    hub: &Hub,
    inbound: &mut Vec<wsframe::Inbound>,
    control: &mut Vec<u8>,
) -> Option<CloseReason> {
    use wsframe::Inbound;
    let writer = hub.cfg.strategy == Strategy::PerClient;
    for m in inbound.drain(..) {
        match m {
            Inbound::Ping(p) if writer => {
                control.extend_from_slice(&wsframe::frame(wsframe::OP_PONG, &p))
            }
            Inbound::Ping(_) | Inbound::Pong => {}
            Inbound::Text(_) | Inbound::Binary(_) => {
                hub.counters.inbound_messages.fetch_add(1, Relaxed);
            }
            Inbound::Close(code) => {
                control.clear();
                if writer {
                    control.extend_from_slice(&wsframe::close_frame(echo_close_code(code)));
                }
                return Some(CloseReason::Peer);
            }
        }
    }
    if control.len() > MAX_PENDING_CONTROL {
        // A ping flood that outruns our pongs.
        return Some(CloseReason::BadInput);
    }
    None
}

async fn bad_input(conn: &Conn, writer: bool, code: u16) -> (CloseReason, u64) {
    goodbye(conn, writer, &wsframe::close_frame(code)).await;
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
async fn serve_sse(hub: Arc<Hub>, stream: TcpStream, req: Request) {
    if req.method != "GET" {
        send(&stream, &http::error(405, "GET /sse")).await;
        return;
    }
    let last_id = match req
        .header("last-event-id")
        .or_else(|| req.query_param("last_event_id"))
        .map(|v| v.trim().parse::<u64>())
    {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(_)) => {
            hub.counters.bad_requests.fetch_add(1, Relaxed);
            send(
                &stream,
                &http::error(400, "Last-Event-ID must be an unsigned integer (a seq)"),
            )
            .await;
            return;
        }
    };
    if hub.is_shutting_down() {
        return;
    }
    drop(req);
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: keep-alive\r\nX-Accel-Buffering: no\r\n\r\n";
    let (conn, replay, gap) = hub.register_sse(stream, last_id);
    let (reason, in_flight) = sse_loop(&hub, &conn, head, replay, gap).await;
    hub.deregister(&conn, reason, in_flight);
}

async fn sse_loop(
    hub: &Hub,
    conn: &Conn,
    head: &str,
    replay: Vec<super::hub::Round>,
    gap: Option<(u64, u64)>,
) -> (CloseReason, u64) {
    let cfg = &hub.cfg;
    let s = &conn.stream;
    let writer = cfg.strategy == Strategy::PerClient;
    let mut first = head.as_bytes().to_vec();
    if let Some((a, b)) = gap {
        first.extend_from_slice(
            format!("event: gap\ndata: {{\"from\":{a},\"to\":{b}}}\n\n").as_bytes(),
        );
    }
    for r in &replay {
        first.extend_from_slice(&r.sse);
    }
    match io::write_with_deadline(s, &first, Some(REQUEST_TIMEOUT)).await {
        Ok(()) => {
            for r in &replay {
                hub.counters.sent(Transport::Sse, r.sse.len());
            }
        }
        Err(_) => return (CloseReason::Peer, 0),
    }
    drop(first);
    conn.done_writing();
    let ping = cfg.ping.filter(|_| writer);
    let mut next_ping = ping.map(|p| Instant::now() + p);
    let timer = tokio::time::sleep_until(Instant::now());
    tokio::pin!(timer);
    let mut armed: Option<Instant> = None;
    loop {
        if hub.is_shutting_down() {
            return (CloseReason::Shutdown, 0);
        }
        if writer {
            if let Some(item) = conn.pop() {
                let r = io::write_with_deadline(s, &item.bytes, cfg.write_deadline).await;
                conn.done_writing();
                match r {
                    Ok(()) => hub.counters.sent(Transport::Sse, item.bytes.len()),
                    Err(WriteError::Timeout) => return (CloseReason::WriteDeadline, 1),
                    Err(WriteError::Io(_)) => return (CloseReason::Peer, 1),
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
            r = s.readable() => {
                if r.is_err() {
                    return (CloseReason::Peer, 0);
                }
                // Discard whatever the client sends; EOF means it left.
                match io::read_available(s, 64 * 1024, |_| true) {
                    Ok(ReadOutcome::Data(_)) => {}
                    Ok(ReadOutcome::Eof) | Err(_) => return (CloseReason::Peer, 0),
                }
            }
            _ = &mut timer, if armed.is_some() => {
                armed = None;
                // Skip this keepalive if messages are queued: they are written next.
                if conn.try_begin_writing() {
                    let r = io::write_with_deadline(s, b": ping\n\n", cfg.write_deadline).await;
                    conn.done_writing();
                    match r {
                        Ok(()) => {}
                        Err(WriteError::Timeout) => return (CloseReason::WriteDeadline, 0),
                        Err(WriteError::Io(_)) => return (CloseReason::Peer, 0),
                    }
                }
                next_ping = ping.map(|p| Instant::now() + p);
            }
        }
    }
}

/// The close code to answer a client's close with (RFC 6455 7.4): its own code when that may
/// be sent on the wire, 1000 for an empty close, 1002 for a code that must never be sent
/// (1005, 1006, 1015, below 1000, unassigned).
pub fn echo_close_code(code: Option<u16>) -> u16 {
    match code {
        None => wsframe::CLOSE_NORMAL,
        Some(c @ (1000..=1003 | 1007..=1011 | 3000..=4999)) => c,
        Some(_) => 1002,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
