//! One rehearsal client (tokio): connect over WebSocket or SSE through the user's path,
//! read until the server drops it, note the drain signal, come back by the policy and
//! resume (SSE `Last-Event-ID`, rtcheck's `?since=SEQ&epoch=E` after its hello), and
//! record every seq in arrival order per server epoch.
use super::policy::Reconnect;
use crate::bench::appws::Session;
use crate::bench::target::{Proto, Target};
use crate::sys::tls::{Stream, Tls};
use futures_util::{SinkExt, StreamExt};
use rtcheck_wire::appproto::{AppProtocol, Subscribe};
use rtcheck_wire::epoch::{self, Marker};
use rtcheck_wire::http::response::{self, Limits};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::{self, Message};

/// What every client shares.
pub struct Shared {
    pub target: Target,
    pub tls: Option<Tls>,
    pub decoder: crate::bench::template::Decoder,
    pub subscribe: Option<String>,
    pub policy: Reconnect,
    pub t0: Instant,
    /// Highest seq seen by any client, per epoch ([`epoch_key`]): what was published
    /// before a client came back, so what it gets at or below it is replay.
    pub highest: Mutex<HashMap<String, u64>>,
    /// Per connect attempt.
    pub connect_timeout: Duration,
    /// Clients dropped and not back yet (a client that gave up is not waited for).
    pub away: AtomicU64,
    /// Clients whose first connect is over (connected or failed).
    pub started: AtomicU64,
    /// Messages with a seq received, over every client (the end waits until it stops).
    pub received: AtomicU64,
    /// The seqs are rtcheck's publisher's, one history across the restart: a seq that
    /// goes back on a new connection is a replay, never a new epoch.
    pub one_history: bool,
    /// The library protocol spoken on each WebSocket (`--app-protocol`, or the URL's).
    pub app: Option<(AppProtocol, Subscribe)>,
    /// SSE over HTTP/2 (`--http2`; `tls` then offers h2 alone).
    pub h2: bool,
}

impl Shared {
    fn ms(&self) -> f64 {
        self.t0.elapsed().as_secs_f64() * 1000.0
    }
    fn see(&self, epoch: &str, seq: u64) {
        let mut h = self.highest.lock().unwrap_or_else(|e| e.into_inner());
        let e = h.entry(epoch.to_string()).or_insert(0);
        *e = (*e).max(seq);
    }
    fn snapshot(&self) -> HashMap<String, u64> {
        self.highest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// An epoch's key: its name, or for a server without epochs the segment's place (the
/// i-th run of the server, as each client saw it).
pub fn epoch_key(epoch: &str, i: usize) -> String {
    match epoch {
        "" => format!("#{i}"),
        e => e.to_string(),
    }
}

/// Why a connect attempt failed (the report's keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    Refused,
    Reset,
    Timeout,
    Http503,
    Http502,
    HttpOther,
    Eaddrnotavail,
    Other,
}

impl Cause {
    pub const ALL: [Cause; 8] = [
        Cause::Refused,
        Cause::Reset,
        Cause::Timeout,
        Cause::Http503,
        Cause::Http502,
        Cause::HttpOther,
        Cause::Eaddrnotavail,
        Cause::Other,
    ];
    pub fn key(self) -> &'static str {
        match self {
            Cause::Refused => "refused",
            Cause::Reset => "reset",
            Cause::Timeout => "timeout",
            Cause::Http503 => "http_503",
            Cause::Http502 => "http_502",
            Cause::HttpOther => "http_other",
            Cause::Eaddrnotavail => "eaddrnotavail",
            Cause::Other => "other",
        }
    }
    fn of_io(e: &std::io::Error) -> Cause {
        use std::io::ErrorKind as K;
        if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
            return Cause::Eaddrnotavail;
        }
        match e.kind() {
            K::ConnectionRefused => Cause::Refused,
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                Cause::Reset
            }
            K::TimedOut => Cause::Timeout,
            _ => Cause::Other,
        }
    }
    fn of_status(s: u16) -> Cause {
        match s {
            503 => Cause::Http503,
            502 => Cause::Http502,
            _ => Cause::HttpOther,
        }
    }
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// A WebSocket close frame with this code (1001 going away, 1012 service restart).
    Close(u16),
    /// The library protocol's own close (Socket.IO's disconnect packet, STOMP's ERROR,
    /// MQTT's DISCONNECT...): the server said it was ending the session.
    AppClose,
    /// The SSE body ended cleanly (chunked terminator, or EOF on a body until close).
    SseEnd,
    /// EOF without a close frame or a clean end.
    Eof,
    /// A socket error (reset).
    Reset,
    /// The run's stop.
    Stopped,
}

impl End {
    /// A signal a client can act on before the socket goes.
    pub fn is_drain(self) -> bool {
        matches!(
            self,
            End::Close(1001) | End::Close(1012) | End::SseEnd | End::AppClose
        )
    }
}

/// The seqs of one server epoch, in arrival order.
#[derive(Debug, Clone, Default)]
pub struct Segment {
    pub epoch: String,
    pub seqs: Vec<u64>,
    pub gaps: Vec<(u64, u64)>,
    /// A reset marker opened this segment: the previous epoch's tail was announced.
    pub told: bool,
}

/// What one client saw through the run.
#[derive(Debug, Clone, Default)]
pub struct ClientOut {
    pub connected_ms: Option<f64>,
    pub connect_error: Option<String>,
    /// Every drop: (when, how it ended, when the drain signal came).
    pub drops: Vec<(f64, End, Option<f64>)>,
    /// Every successful reconnect.
    pub backs: Vec<f64>,
    pub failed: HashMap<Cause, u64>,
    /// Gave up (EventSource after a non-200).
    pub gave_up: bool,
    pub segments: Vec<Segment>,
    pub replay_messages: u64,
    pub replay_bytes: u64,
    pub connected_at_end: bool,
    /// The protocol's reason for a drop, by the drop's index (an `AppClose`'s words).
    pub reasons: HashMap<usize, String>,
    /// Over HTTP/2: when the connection's GOAWAY came, by the index of its drop.
    pub goaways: HashMap<usize, f64>,
}

/// One open connection.
enum Conn {
    Ws(
        Box<tokio_tungstenite::WebSocketStream<Stream>>,
        Option<Box<Session>>,
    ),
    Sse {
        stream: Box<Stream>,
        body: Box<rtcheck_wire::sse::Stream>,
        pending: Vec<u8>,
        /// The body runs until the server closes (no length, not chunked): its EOF is
        /// the stream's end. A chunked body that stops without its last chunk did not end.
        until_close: bool,
    },
    H2(Box<super::h2sse::H2Sse>),
}

/// Resume state across connections.
#[derive(Default)]
struct Resume {
    sse_last_id: Option<String>,
    retry_ms: Option<u64>,
    ws_epoch: Option<String>,
    last_seq: u64,
    /// The publish time of `last_seq`'s message.
    last_ts: u64,
}

/// Run one client until `stop` says 2. `stop`: 0 connecting, 1 measuring, 2 stop.
pub async fn run(
    sh: Arc<Shared>,
    permit: Arc<tokio::sync::Semaphore>,
    mut stop: watch::Receiver<u8>,
) -> ClientOut {
    let mut out = ClientOut::default();
    let mut res = Resume::default();
    let first = first_connect(&sh, &res, &permit).await;
    sh.started.fetch_add(1, Relaxed);
    let mut conn = match first {
        Ok(c) => c,
        Err(e) => {
            out.connect_error = Some(e);
            return out;
        }
    };
    out.connected_ms = Some(sh.ms());
    let mut snapshot = HashMap::new();
    loop {
        let (end, why) = read(&sh, &mut conn, &mut out, &mut res, &snapshot, &mut stop).await;
        if end.0 == End::Stopped {
            out.connected_at_end = true;
            return out;
        }
        if let Some(why) = why {
            out.reasons.insert(out.drops.len(), why);
        }
        if let Conn::H2(h) = &conn {
            if let Some(g) = h.goaway {
                out.goaways.insert(out.drops.len(), g);
            }
        }
        out.drops.push((sh.ms(), end.0, end.1));
        sh.away.fetch_add(1, Relaxed);
        let mut attempt = 0u32;
        conn = loop {
            let wait = sh
                .policy
                .delay(attempt, super::policy::draw(), res.retry_ms);
            attempt = attempt.saturating_add(1);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = wait_stop(&mut stop) => return out,
            }
            // What anyone had seen before this attempt began: a message no later than
            // that was sent before this connection existed, so it can only be a
            // replay. Taken once connected instead, a live broadcast another client
            // read first (a busy hub or a busy rtcheck, at scale) counted as one.
            let seen_before = sh.snapshot();
            let tried = tokio::select! {
                r = connect(&sh, &res) => r,
                _ = wait_stop(&mut stop) => return out,
            };
            match tried {
                Ok(c) => {
                    snapshot = seen_before;
                    break c;
                }
                Err((cause, _)) => {
                    *out.failed.entry(cause).or_insert(0) += 1;
                    let status =
                        matches!(cause, Cause::Http503 | Cause::Http502 | Cause::HttpOther);
                    if status && sh.policy.gives_up_on_status() {
                        out.gave_up = true;
                        sh.away.fetch_sub(1, Relaxed);
                        return out;
                    }
                }
            }
        };
        out.backs.push(sh.ms());
        sh.away.fetch_sub(1, Relaxed);
    }
}

/// Bytes a WebSocket client reads at once.
const READ_BUFFER: usize = 8 * 1024;

/// Attempts at the first connect: a server with a short backlog refuses part of a
/// connect burst, which is not what is rehearsed (that is the restart's wave).
const FIRST_ATTEMPTS: u32 = 5;

/// The first connection, retried a few times (100 ms, 200 ms ... apart).
async fn first_connect(
    sh: &Shared,
    res: &Resume,
    permit: &tokio::sync::Semaphore,
) -> Result<Conn, String> {
    let mut last = String::new();
    for attempt in 0..FIRST_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
        }
        let _p = permit.acquire().await;
        match connect(sh, res).await {
            Ok(c) => return Ok(c),
            Err((_, e)) => last = e,
        }
    }
    Err(last)
}

async fn wait_stop(stop: &mut watch::Receiver<u8>) {
    loop {
        if *stop.borrow_and_update() >= 2 || stop.changed().await.is_err() {
            return;
        }
    }
}

/// TCP, TLS, then the WebSocket handshake or the SSE request and its 200 head.
async fn connect(sh: &Shared, res: &Resume) -> Result<Conn, (Cause, String)> {
    let t = &sh.target;
    let limit = sh.connect_timeout;
    let attempt = async {
        let tcp = tokio::net::TcpStream::connect(t.addr)
            .await
            .map_err(|e| (Cause::of_io(&e), format!("{}: connect: {e}", t.addr)))?;
        let _ = tcp.set_nodelay(true);
        let stream = Stream::over(tcp, sh.tls.as_ref())
            .await
            .map_err(|e| (Cause::of_io(&e), format!("{}: TLS: {e}", t.addr)))?;
        match t.proto {
            Proto::Ws => ws_open(sh, stream, res).await,
            _ if sh.h2 => {
                use super::h2sse::Failed;
                super::h2sse::open(stream, &t.authority, &t.path, res.sse_last_id.as_deref())
                    .await
                    .map(|h| Conn::H2(Box::new(h)))
                    .map_err(|e| match e {
                        Failed::Status(s) => (Cause::of_status(s), format!("SSE answered {s}")),
                        Failed::Broken(m) => (Cause::Reset, m),
                        Failed::Other(m) => (Cause::Other, m),
                    })
            }
            _ => sse_open(sh, stream, res).await,
        }
    };
    match tokio::time::timeout(limit, attempt).await {
        Ok(r) => r,
        Err(_) => Err((
            Cause::Timeout,
            format!("{}: no connection within {limit:?}", t.addr),
        )),
    }
}

async fn ws_open(sh: &Shared, stream: Stream, res: &Resume) -> Result<Conn, (Cause, String)> {
    let t = &sh.target;
    let scheme = if t.tls { "wss" } else { "ws" };
    let mut path = t.path.clone();
    // rtcheck's resume, only toward a server that said hello with an epoch.
    if let Some(e) = &res.ws_epoch {
        let sep = if path.contains('?') { '&' } else { '?' };
        path = format!("{path}{sep}since={}&epoch={e}", res.last_seq);
    }
    let url = format!("{scheme}://{}{path}", t.authority);
    let largest = sh.subscribe.as_ref().map_or(0, String::len);
    // tungstenite reads into 128 KiB per connection by default: 256 MB for 2,000 clients
    // of rtcheck's own, measured in BENCHMARKS.md; the messages here are small.
    let cfg = crate::bench::ws_client::config(largest).read_buffer_size(READ_BUFFER);
    let req = ws_request(&url, sh.app.as_ref().map(|a| a.0))?;
    let (mut ws, _) = tokio_tungstenite::client_async_with_config(req, stream, Some(cfg))
        .await
        .map_err(|e| match e {
            tungstenite::Error::Http(r) => (
                Cause::of_status(r.status().as_u16()),
                format!("WebSocket upgrade answered {}", r.status()),
            ),
            tungstenite::Error::Io(e) => (Cause::of_io(&e), format!("WebSocket handshake: {e}")),
            tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
                (Cause::Reset, "closed during the WebSocket handshake".into())
            }
            e => (Cause::Other, format!("WebSocket handshake: {e}")),
        })?;
    // The library's session (connect, subscribe) before the client counts as back.
    let app = match &sh.app {
        Some((p, sub)) => {
            let mut s = Session::new(*p, &url, sub.clone());
            crate::bench::appws::handshake(&mut ws, &mut s, sh.connect_timeout)
                .await
                .map_err(|e| (Cause::Other, e))?;
            Some(Box::new(s))
        }
        None => None,
    };
    if let Some(s) = &sh.subscribe {
        ws.send(Message::text(s.clone()))
            .await
            .map_err(|e| (Cause::Reset, format!("subscribe: {e}")))?;
    }
    Ok(Conn::Ws(Box::new(ws), app))
}

/// The upgrade request, asking for the protocol's WebSocket subprotocol if it has one
/// (MQTT's `mqtt`, STOMP's `v12.stomp`...: its servers refuse an upgrade without it).
fn ws_request(
    url: &str,
    p: Option<AppProtocol>,
) -> Result<tungstenite::handshake::client::Request, (Cause, String)> {
    use tungstenite::client::IntoClientRequest;
    let mut r = url
        .into_client_request()
        .map_err(|e| (Cause::Other, format!("WebSocket request: {e}")))?;
    if let Some(sp) = p.and_then(AppProtocol::subprotocol) {
        r.headers_mut().insert(
            "Sec-WebSocket-Protocol",
            tungstenite::http::HeaderValue::from_static(sp),
        );
    }
    Ok(r)
}

async fn sse_open(sh: &Shared, mut stream: Stream, res: &Resume) -> Result<Conn, (Cause, String)> {
    use rtcheck_wire::http::client;
    let t = &sh.target;
    let mut headers = vec![
        ("Host", t.authority.as_str()),
        ("Accept", "text/event-stream"),
        ("Cache-Control", "no-cache"),
    ];
    if let Some(id) = &res.sse_last_id {
        headers.push(("Last-Event-ID", id.as_str()));
    }
    let req = client::head("GET", &t.path, &headers);
    let io = |e: std::io::Error| (Cause::of_io(&e), format!("{}: {e}", t.addr));
    stream.write_all(&req).await.map_err(io)?;
    stream.flush().await.map_err(io)?;
    let mut got = Vec::with_capacity(512);
    let mut buf = vec![0u8; 8192];
    let (h, pending) = loop {
        let n = stream.read(&mut buf).await.map_err(io)?;
        if n == 0 {
            return Err((Cause::Reset, "closed before the response head".into()));
        }
        match client::feed(&mut got, &buf[..n], Limits::head(16 * 1024)) {
            Ok(Some(done)) => break done,
            Ok(None) => {}
            Err(e) => return Err((Cause::Other, format!("response head: {e}"))),
        }
    };
    if h.status != 200 {
        return Err((
            Cause::of_status(h.status),
            format!("SSE answered {}", h.status),
        ));
    }
    let framing = h
        .framing(false)
        .map_err(|e| (Cause::Other, format!("response head: {e}")))?;
    let body = rtcheck_wire::sse::Stream::new(framing, rtcheck_wire::sse::Parser::new(1 << 20));
    Ok(Conn::Sse {
        stream: Box::new(stream),
        body: Box::new(body),
        pending,
        until_close: framing == response::Framing::Close,
    })
}

/// One received payload: its seq and epoch, counted and kept.
fn record(sh: &Shared, seen: &mut Seen<'_>, (seq, ts, epoch): (u64, u64, String), bytes: usize) {
    let out = &mut *seen.out;
    let new_epoch = out.segments.last().is_none_or(|s| s.epoch != epoch);
    // Without an epoch, seqs that go back on a new connection mean a restarted publisher;
    // so does the last seq again with another publish time (the new history had just
    // reached it: a different message, at scale, where the wave is long).
    let again = seq == seen.res.last_seq && ts != seen.res.last_ts;
    let went_back = epoch.is_empty()
        && !sh.one_history
        && seen.fresh
        && out
            .segments
            .last()
            .is_some_and(|s| s.seqs.iter().max().is_some_and(|&m| seq < m || again));
    if new_epoch || went_back {
        out.segments.push(Segment {
            epoch: epoch.clone(),
            ..Segment::default()
        });
    }
    seen.fresh = false;
    let key = epoch_key(&epoch, out.segments.len().saturating_sub(1));
    if seq <= seen.snapshot.get(&key).copied().unwrap_or(0) {
        out.replay_messages += 1;
        out.replay_bytes += bytes as u64;
    }
    if let Some(s) = out.segments.last_mut() {
        s.seqs.push(seq);
    }
    seen.res.last_seq = seq;
    seen.res.last_ts = ts;
    sh.see(&key, seq);
    sh.received.fetch_add(1, Relaxed);
}

/// Read until the connection ends or the run stops: how it ended, when a drain signal
/// came (ms), and the protocol's reason when it closed the session itself.
async fn read(
    sh: &Shared,
    conn: &mut Conn,
    out: &mut ClientOut,
    res: &mut Resume,
    snapshot: &HashMap<String, u64>,
    stop: &mut watch::Receiver<u8>,
) -> ((End, Option<f64>), Option<String>) {
    let mut seen = Seen {
        out,
        res,
        snapshot,
        fresh: true,
    };
    match conn {
        Conn::Ws(ws, None) => (read_ws(sh, ws, &mut seen, stop).await, None),
        Conn::Ws(ws, Some(app)) => read_app(sh, ws, app, &mut seen, stop).await,
        Conn::Sse {
            stream,
            body,
            pending,
            until_close,
        } => {
            let (end, at) = read_sse(sh, stream, body, pending, &mut seen, stop).await;
            // EOF in the middle of a chunked or sized body: cut, not ended.
            let end = match end == End::SseEnd && !*until_close && !body.ended() {
                true => (End::Eof, None),
                false => (end, at),
            };
            (end, None)
        }
        Conn::H2(h) => (read_h2(sh, h, &mut seen, stop).await, None),
    }
}

/// What a connection's reader updates.
struct Seen<'a> {
    out: &'a mut ClientOut,
    res: &'a mut Resume,
    snapshot: &'a HashMap<String, u64>,
    /// Nothing received on this connection yet.
    fresh: bool,
}

async fn read_ws(
    sh: &Shared,
    ws: &mut tokio_tungstenite::WebSocketStream<Stream>,
    seen: &mut Seen<'_>,
    stop: &mut watch::Receiver<u8>,
) -> (End, Option<f64>) {
    loop {
        let m = tokio::select! {
            m = ws.next() => m,
            _ = wait_stop(stop) => return (End::Stopped, None),
        };
        match m {
            Some(Ok(Message::Close(c))) => {
                let code = c.map_or(1005, |f| u16::from(f.code));
                let at = sh.ms();
                // The server closes the socket after its close frame: wait for it (bounded).
                let _ = tokio::time::timeout(Duration::from_secs(5), async {
                    while let Some(Ok(_)) = ws.next().await {}
                })
                .await;
                return (End::Close(code), Some(at));
            }
            None => return (End::Eof, None),
            Some(Err(tungstenite::Error::ConnectionClosed)) => return (End::Eof, None),
            Some(Err(_)) => return (End::Reset, None),
            Some(Ok(Message::Text(t))) => {
                let s = t.as_str();
                if s.starts_with("{\"from\"") {
                    if let Some(g) = epoch::parse_gap(s) {
                        if let Some(seg) = seen.out.segments.last_mut() {
                            seg.gaps.push(g);
                        }
                        continue;
                    }
                }
                match epoch::parse_marker(s) {
                    Some(Marker::Hello { epoch, .. }) => {
                        seen.res.ws_epoch = Some(epoch.to_string());
                        continue;
                    }
                    Some(Marker::Reset { epoch, .. }) => {
                        let e = epoch.to_string();
                        seen.res.ws_epoch = Some(e.clone());
                        seen.out.segments.push(Segment {
                            epoch: e,
                            told: true,
                            ..Segment::default()
                        });
                        continue;
                    }
                    None => {}
                }
                if let Some((seq, ts)) = sh.decoder.decode(s.as_bytes(), None) {
                    let e = seen.res.ws_epoch.clone().unwrap_or_default();
                    record(sh, seen, (seq, ts, e), s.len());
                }
            }
            Some(Ok(Message::Binary(b))) => {
                if let Some((seq, ts)) = sh.decoder.decode_binary(&b) {
                    let e = seen.res.ws_epoch.clone().unwrap_or_default();
                    record(sh, seen, (seq, ts, e), b.len());
                }
            }
            Some(Ok(_)) => {}
        }
    }
}

/// A WebSocket of a library protocol: its messages unwrapped to the payload (seq
/// accounting as on a raw socket), its heartbeat answered and sent, its own close named.
async fn read_app(
    sh: &Shared,
    ws: &mut tokio_tungstenite::WebSocketStream<Stream>,
    app: &mut Session,
    seen: &mut Seen<'_>,
    stop: &mut watch::Receiver<u8>,
) -> ((End, Option<f64>), Option<String>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        let m = tokio::select! {
            m = ws.next() => m,
            _ = tick.tick() => {
                if let Some(b) = app.due() {
                    if ws.send(b).await.is_err() {
                        return ((End::Reset, None), None);
                    }
                }
                continue;
            }
            _ = wait_stop(stop) => return ((End::Stopped, None), None),
        };
        let m = match m {
            Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => m,
            Some(Ok(Message::Close(c))) => {
                let code = c.map_or(1005, |f| u16::from(f.code));
                let at = sh.ms();
                drain_socket(ws).await;
                return ((End::Close(code), Some(at)), None);
            }
            Some(Ok(_)) => continue,
            None | Some(Err(tungstenite::Error::ConnectionClosed)) => {
                return ((End::Eof, None), None)
            }
            Some(Err(_)) => return ((End::Reset, None), None),
        };
        let h = app.on_message(&m);
        for r in h.replies {
            if ws.send(r).await.is_err() {
                return ((End::Reset, None), None);
            }
        }
        for p in &h.payloads {
            if let Some((seq, ts)) = sh.decoder.decode(p, None) {
                let e = seen.res.ws_epoch.clone().unwrap_or_default();
                record(sh, seen, (seq, ts, e), p.len());
            }
        }
        if let Some(why) = h.closed {
            let at = sh.ms();
            drain_socket(ws).await;
            return ((End::AppClose, Some(at)), Some(why));
        }
    }
}

/// After a close, read until the server closes the socket (bounded: 5 s).
async fn drain_socket(ws: &mut tokio_tungstenite::WebSocketStream<Stream>) {
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}

/// An SSE stream over HTTP/2: its DATA parsed as events, the connection's GOAWAY noted
/// when its task says it came (no timer) and looked for on every frame; END_STREAM is
/// the stream's clean end.
async fn read_h2(
    sh: &Shared,
    h: &mut super::h2sse::H2Sse,
    seen: &mut Seen<'_>,
    stop: &mut watch::Receiver<u8>,
) -> (End, Option<f64>) {
    let mut events = Vec::new();
    loop {
        let chunk = tokio::select! {
            c = h.body.data() => c,
            _ = super::h2sse::goaway(&mut h.goaway_seen) => {
                h.goaway.get_or_insert(sh.ms());
                continue;
            }
            _ = wait_stop(stop) => return (End::Stopped, None),
        };
        h.note_goaway(sh.ms());
        let bytes = match chunk {
            Some(Ok(b)) => b,
            None => return (End::SseEnd, Some(sh.ms())),
            Some(Err(_)) => return (End::Reset, None),
        };
        let _ = h.body.flow_control().release_capacity(bytes.len());
        if h.parser.feed(&bytes, &mut events).is_err() {
            return (End::Reset, None);
        }
        if let Some(r) = h.parser.retry_ms() {
            seen.res.retry_ms = Some(r);
        }
        for ev in events.drain(..) {
            sse_event(sh, seen, ev);
        }
        if let Some(id) = h.parser.last_id() {
            seen.res.sse_last_id = Some(id.to_string());
        }
    }
}

async fn read_sse(
    sh: &Shared,
    stream: &mut Stream,
    body: &mut rtcheck_wire::sse::Stream,
    pending: &mut Vec<u8>,
    seen: &mut Seen<'_>,
    stop: &mut watch::Receiver<u8>,
) -> (End, Option<f64>) {
    let mut events = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut bytes = std::mem::take(pending);
    loop {
        if body.feed(&bytes, &mut events).is_err() {
            return (End::Reset, None);
        }
        if let Some(r) = body.retry_ms() {
            seen.res.retry_ms = Some(r);
        }
        for ev in events.drain(..) {
            sse_event(sh, seen, ev);
        }
        if let Some(id) = body.last_id() {
            seen.res.sse_last_id = Some(id.to_string());
        }
        if body.ended() {
            return (End::SseEnd, Some(sh.ms()));
        }
        let n = tokio::select! {
            r = stream.read(&mut buf) => r,
            _ = wait_stop(stop) => return (End::Stopped, None),
        };
        match n {
            Ok(0) => return (End::SseEnd, Some(sh.ms())),
            Ok(n) => bytes = buf[..n].to_vec(),
            Err(_) => return (End::Reset, None),
        }
    }
}

fn sse_event(sh: &Shared, seen: &mut Seen<'_>, ev: rtcheck_wire::sse::Event) {
    match ev.event.as_deref() {
        Some("reset") => {
            if let Some(Marker::Reset { epoch, .. }) = epoch::parse_marker(&ev.data) {
                seen.out.segments.push(Segment {
                    epoch: epoch.to_string(),
                    told: true,
                    ..Segment::default()
                });
            }
        }
        Some("gap") => {
            if let (Some(g), Some(seg)) = (epoch::parse_gap(&ev.data), seen.out.segments.last_mut())
            {
                seg.gaps.push(g);
            }
        }
        Some(_) => {}
        None => {
            let id = ev.id.as_deref().and_then(rtcheck_wire::sse::seq_id);
            let epoch = id.and_then(|(_, e)| e).unwrap_or("").to_string();
            if let Some((seq, ts)) = sh.decoder.decode(ev.data.as_bytes(), ev.id.as_deref()) {
                record(sh, seen, (seq, ts, epoch), ev.data.len());
            }
        }
    }
}
