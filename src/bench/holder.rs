//! The connections `bench idle --server` holds open against the user's server: blocking
//! handshakes (WebSocket, optionally offering permessage-deflate, or an SSE GET), then
//! one pump thread that reads what the server sends (so nothing piles up in the
//! server's send buffers and inflates its socket memory) and answers pings (a server
//! with a keepalive closes clients that never pong). Nothing is sent unasked, except
//! where a library protocol is spoken (issue 42, `--app-protocol`): then each connection
//! completes the library's handshake before it counts as held and keeps its heartbeat
//! (answers the server's, sends its own when due), as the library's clients do, so the
//! server holds a session per connection and never drops one at ping + timeout.
use super::target::{Proto, Target};
use crate::sys::tls::{SyncStream, Tls};
use rtcheck_wire::appproto::{AppProtocol, Client, Event, Msg, Out, Subscribe};
use rtcheck_wire::http::client;
use rtcheck_wire::http::response::{Head, Limits};
use rtcheck_wire::ws;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A response head larger than this is not a WebSocket or SSE server's.
const MAX_HEAD: usize = 16 << 10;
/// The permessage-deflate offer a browser makes.
pub const DEFLATE_OFFER: &str = "permessage-deflate; client_max_window_bits";

/// One open connection.
pub struct Conn {
    io: SyncStream,
    /// WebSocket: its frame decoder; SSE: None.
    dec: Option<ws::Decoder>,
    pending: Vec<u8>,
    closed: bool,
    /// Why the connection ended (the first time), for the report.
    why: Option<String>,
    /// The library session on this connection, when one is spoken.
    app: Option<Session>,
    /// permessage-deflate with a library spoken: its messages are read, so inflated.
    inflate: Option<ws::Inflater>,
}

/// A library protocol's client on one held connection, its clock from the upgrade.
struct Session {
    client: Client,
    t0: Instant,
}

/// What `--app-protocol` asked the held connections to speak.
#[derive(Debug, Clone)]
pub struct App {
    pub protocol: AppProtocol,
    pub sub: Subscribe,
}

/// What a handshake answered.
pub struct Opened {
    pub conn: Conn,
    /// The Sec-WebSocket-Extensions the server accepted, as it wrote it.
    pub extensions: Option<String>,
}

/// What the held connections received so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rx {
    pub bytes: u64,
    /// WebSocket data messages, or SSE blank-line-ended events.
    pub messages: u64,
    pub pings: u64,
    /// Connections the server closed.
    pub closed: u64,
    /// The library's heartbeats the server sent (Engine.IO pings, SockJS `h`...).
    pub heartbeats: u64,
    /// What the clients sent the library after the handshake: answers the protocol
    /// owes (pongs) and their own heartbeats.
    pub beats_sent: u64,
}

impl Rx {
    fn add(&mut self, o: &Rx) {
        self.bytes += o.bytes;
        self.messages += o.messages;
        self.pings += o.pings;
        self.closed += o.closed;
        self.heartbeats += o.heartbeats;
        self.beats_sent += o.beats_sent;
    }
}

/// The request head: the WebSocket upgrade (with the deflate offer or none, and the
/// library's subprotocol when it has one), or an SSE GET.
pub fn request(t: &Target, key: &str, deflate: bool, subprotocol: Option<&str>) -> String {
    let mut h = vec![("Host", t.authority.as_str())];
    match t.proto {
        Proto::Sse => h.extend([
            ("Accept", "text/event-stream"),
            ("Cache-Control", "no-cache"),
        ]),
        _ => {
            h.extend([
                ("Upgrade", "websocket"),
                ("Connection", "Upgrade"),
                ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Key", key),
            ]);
            if deflate {
                h.push(("Sec-WebSocket-Extensions", DEFLATE_OFFER));
            }
            if let Some(p) = subprotocol {
                h.push(("Sec-WebSocket-Protocol", p));
            }
        }
    }
    // All parts are `&str`: the head is UTF-8.
    String::from_utf8_lossy(&client::head("GET", &t.path, &h)).into_owned()
}

/// Pure: the answer's head checked. Ok(extensions accepted) or why it is not a stream.
pub fn check_head(proto: Proto, head: &Head, accept: &str) -> Result<Option<String>, String> {
    let code = head.status;
    let header = |name: &str| head.header(name).map(str::to_string);
    match proto {
        Proto::Sse => {
            let ct = header("content-type").unwrap_or_default();
            if code != 200 || !ct.to_ascii_lowercase().starts_with("text/event-stream") {
                return Err(format!(
                    "HTTP {code} with Content-Type {ct:?}, not an event stream"
                ));
            }
            Ok(None)
        }
        _ => {
            if code != 101 {
                return Err(format!("HTTP {code} to the WebSocket upgrade"));
            }
            if header("sec-websocket-accept").as_deref() != Some(accept) {
                return Err("101 with a wrong Sec-WebSocket-Accept".into());
            }
            Ok(header("sec-websocket-extensions").filter(|e| !e.is_empty()))
        }
    }
}

/// Read the head (bounded in size, and in time by `limit`) with the wire client's loop.
fn read_head(io: &mut SyncStream, limit: Duration) -> Result<(Head, Vec<u8>), String> {
    let deadline = Instant::now() + limit;
    client::read_head(io, Limits::head(MAX_HEAD), 2048, deadline).map_err(|e| match e {
        client::HeadError::Closed => "the server closed before answering".into(),
        client::HeadError::TooLarge(_) => format!("response head over {MAX_HEAD} bytes"),
        client::HeadError::Bad(e) => format!("the answer is not an HTTP response head ({e})"),
        client::HeadError::Timeout => "no answer within the time limit".into(),
        client::HeadError::Io(e) => format!("reading the answer: {e}"),
        client::HeadError::Stopped => "stopped".into(),
    })
}

/// One connection: TCP, TLS when `tls`, the handshake, then the library's session when
/// `app` names one, each step within `limit`.
pub fn open(
    t: &Target,
    tls: Option<&Tls>,
    deflate: bool,
    limit: Duration,
    app: Option<&App>,
) -> Result<Opened, String> {
    use tokio_tungstenite::tungstenite::handshake::{client::generate_key, derive_accept_key};
    let tcp = std::net::TcpStream::connect_timeout(&t.addr, limit)
        .map_err(|e| format!("connect to {}: {e}", t.addr))?;
    let _ = tcp.set_nodelay(true);
    tcp.set_read_timeout(Some(limit))
        .map_err(|e| e.to_string())?;
    tcp.set_write_timeout(Some(limit))
        .map_err(|e| e.to_string())?;
    let mut io = SyncStream::over(tcp, tls, limit).map_err(|e| match tls {
        Some(tls) => format!("TLS handshake: {}", tls.explain(&e, t.addr, limit)),
        None => e.to_string(),
    })?;
    let key = generate_key();
    let sub = app.and_then(|a| a.protocol.subprotocol());
    io.write_all(request(t, &key, deflate, sub).as_bytes())
        .and_then(|_| io.flush())
        .map_err(|e| format!("sending the request: {e}"))?;
    let (head, rest) = read_head(&mut io, limit)?;
    let extensions = check_head(t.proto, &head, &derive_accept_key(key.as_bytes()))?;
    let dec = (t.proto != Proto::Sse).then(|| ws::Decoder::client(extensions.is_some()));
    let mut conn = Conn {
        io,
        dec,
        pending: rest,
        closed: false,
        why: None,
        app: None,
        inflate: None,
    };
    if let Some(a) = app.filter(|_| t.proto != Proto::Sse) {
        let client = Client::new(a.protocol, &t.path, a.sub.clone());
        conn.inflate = extensions.is_some().then(ws::Inflater::default);
        conn.setup(client, limit)
            .map_err(|e| format!("{} session setup: {e}", a.protocol.name()))?;
    }
    conn.io
        .tcp()
        .set_nonblocking(true)
        .map_err(|e| e.to_string())?;
    Ok(Opened { conn, extensions })
}

/// What the server's messages did to a connection.
#[derive(Debug, Default)]
struct Seen {
    /// The library's session is set up (connected, subscribed where asked).
    ready: bool,
    /// The connection ended, and why.
    ended: Option<String>,
}

impl Conn {
    /// The connection ended: counted once, its first reason kept.
    fn end(&mut self, rx: &mut Rx, why: String) {
        if !self.closed {
            self.closed = true;
            rx.closed += 1;
            self.why = Some(why);
        }
    }

    /// Read what is there (at most 256 KiB a pass), answer pings, count; then the
    /// library's own heartbeat when one is due.
    fn pump(&mut self, rx: &mut Rx) {
        if self.closed {
            return;
        }
        let mut buf = [0u8; 16 << 10];
        let mut gone = None;
        for _ in 0..16 {
            match self.io.read(&mut buf) {
                Ok(0) => {
                    gone = Some("the server closed the connection".to_string());
                    break;
                }
                Ok(n) => {
                    rx.bytes += n as u64;
                    self.pending.extend_from_slice(&buf[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    gone = Some(format!("reading: {e}"));
                    break;
                }
            }
        }
        // What came before the end is counted (a server's last message, its close).
        let seen = self.consume(rx);
        if let Some(why) = seen.ended.or(gone) {
            return self.end(rx, why);
        }
        let due = self.app.as_mut().and_then(|a| {
            let now = a.t0.elapsed().as_secs_f64();
            a.client.due(now)
        });
        if let Some(o) = due {
            rx.beats_sent += 1;
            self.send(o);
        }
    }

    /// A library message, masked, written (a heartbeat or an answer: small, so the
    /// socket's send buffer takes it whole).
    fn send(&mut self, o: Out) {
        let f = match o {
            Out::Text(t) => ws::client_frame(ws::OP_TEXT, true, t.as_bytes(), [9, 8, 7, 6]),
            Out::Binary(b) => ws::client_frame(ws::OP_BINARY, true, &b, [9, 8, 7, 6]),
        };
        let _ = self.io.write_all(&f);
        let _ = self.io.flush();
    }

    /// The complete messages in `pending`, handled in order.
    fn consume(&mut self, rx: &mut Rx) -> Seen {
        let Some(dec) = self.dec.as_mut() else {
            // SSE: count events (a blank line ends one), keep what may start the next end.
            let (ends, keep) = sse_event_ends(&self.pending);
            rx.messages += ends;
            self.pending.drain(..keep);
            return Seen::default();
        };
        let mut out = Vec::new();
        let max = super::ws_client::MAX_MESSAGE;
        match dec.decode_messages(&self.pending, max, &mut out) {
            Ok(used) => {
                self.pending.drain(..used);
            }
            Err(e) => {
                return Seen {
                    ended: Some(format!("the server's frames: {e}")),
                    ..Seen::default()
                }
            }
        }
        let mut seen = Seen::default();
        for m in out {
            let s = self.on_message(m, rx);
            seen.ready |= s.ready;
            if s.ended.is_some() {
                seen.ended = s.ended;
                break;
            }
        }
        seen
    }

    fn on_message(&mut self, m: ws::Message, rx: &mut Rx) -> Seen {
        let (text, data) = match m.inbound {
            ws::Inbound::Ping(p) => {
                rx.pings += 1;
                let pong = ws::client_frame(ws::OP_PONG, true, &p, [9, 8, 7, 6]);
                let _ = self.io.write_all(&pong);
                let _ = self.io.flush();
                return Seen::default();
            }
            ws::Inbound::Pong => return Seen::default(),
            ws::Inbound::Close(code) => {
                let code = code.map_or("none".into(), |c| c.to_string());
                return Seen {
                    ended: Some(format!("close frame, code {code}")),
                    ..Seen::default()
                };
            }
            ws::Inbound::Text(d) => (true, d),
            ws::Inbound::Binary(d) => (false, d),
        };
        if self.app.is_none() {
            rx.messages += 1;
            return Seen::default();
        }
        let data = match (m.compressed, self.inflate.as_mut()) {
            (true, Some(inf)) => match inf.inflate(&data, super::ws_client::MAX_MESSAGE) {
                Ok(d) => d,
                Err(e) => {
                    return Seen {
                        ended: Some(format!("a compressed message: {e}")),
                        ..Seen::default()
                    }
                }
            },
            _ => data,
        };
        self.on_library(text, &data, rx)
    }

    /// One data message through the library's client: payloads counted, heartbeats
    /// counted and answered, the session's setup and its end noticed.
    fn on_library(&mut self, text: bool, data: &[u8], rx: &mut Rx) -> Seen {
        let Some(a) = self.app.as_mut() else {
            return Seen::default();
        };
        let s = String::from_utf8_lossy(data);
        let msg = if text {
            Msg::Text(&s)
        } else {
            Msg::Binary(data)
        };
        let mut seen = Seen::default();
        let mut replies = Vec::new();
        for e in a.client.on_message(msg) {
            seen.ready |= a.client.ready_on(&e);
            match e {
                Event::Payload(_) => rx.messages += 1,
                Event::Heartbeat => rx.heartbeats += 1,
                Event::Reply(o) => replies.push(o),
                Event::Closed(why) => seen.ended = Some(why),
                _ => {}
            }
        }
        rx.beats_sent += replies.len() as u64;
        for o in replies {
            self.send(o);
        }
        seen
    }

    /// The library's handshake on the fresh connection (still blocking, reads bounded
    /// by the socket's timeout): its first messages, then the server's read and answered
    /// until the session is set up, all within `limit`.
    fn setup(&mut self, mut client: Client, limit: Duration) -> Result<(), String> {
        let until = Instant::now() + limit;
        let first = client.start();
        let ready = client.ready_at_start();
        self.app = Some(Session {
            client,
            t0: Instant::now(),
        });
        for o in first {
            self.send(o);
        }
        if ready {
            return Ok(());
        }
        // The handshake's own messages are not the measured traffic.
        let mut rx = Rx::default();
        let mut buf = [0u8; 4096];
        loop {
            let seen = self.consume(&mut rx);
            if let Some(why) = seen.ended {
                return Err(why);
            }
            if seen.ready {
                return Ok(());
            }
            // Each read waits only what is left of `limit`: the socket's own timeout is the
            // whole limit, which a read begun late would add to the time already spent.
            let Some(left) = left(until, Instant::now()) else {
                return Err(format!(
                    "not set up within {}",
                    rtcheck_base::units::fmt_duration(limit)
                ));
            };
            self.io
                .tcp()
                .set_read_timeout(Some(left))
                .map_err(|e| e.to_string())?;
            match self.io.read(&mut buf) {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                // The time is up (checked above on the next round) or a signal came.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::Interrupted
                            | std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(format!("reading: {e}")),
            }
        }
    }
}

/// What is left until `until`, as a socket timeout (never zero, which means "none"); None
/// once it has passed.
fn left(until: Instant, now: Instant) -> Option<Duration> {
    let d = until.checked_duration_since(now)?;
    (!d.is_zero()).then_some(d)
}

/// Connections held open, pumped by one thread until dropped.
pub struct Holder {
    conns: Arc<Mutex<Vec<Conn>>>,
    rx: Arc<Mutex<Rx>>,
    /// Why the first connection that ended did.
    first_end: Arc<Mutex<Option<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Default for Holder {
    fn default() -> Self {
        Holder::new()
    }
}

impl Holder {
    pub fn new() -> Holder {
        let conns: Arc<Mutex<Vec<Conn>>> = Arc::default();
        let rx: Arc<Mutex<Rx>> = Arc::default();
        let first_end: Arc<Mutex<Option<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (c, r, s, f) = (conns.clone(), rx.clone(), stop.clone(), first_end.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let mut got = Rx::default();
                for conn in c.lock().unwrap_or_else(|e| e.into_inner()).iter_mut() {
                    conn.pump(&mut got);
                    if let Some(why) = conn.why.take() {
                        f.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert(why);
                    }
                }
                r.lock().unwrap_or_else(|e| e.into_inner()).add(&got);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Holder {
            conns,
            rx,
            first_end,
            stop,
            thread: Some(thread),
        }
    }

    pub fn len(&self) -> u64 {
        self.conns.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn rx(&self) -> Rx {
        *self.rx.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why the first connection that ended did, if one has.
    pub fn first_end(&self) -> Option<String> {
        self.first_end
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Open until `total` are held, on `workers` threads, within `limit` in all.
    /// Returns the extensions the first new connection got; the first error stops it.
    pub fn fill(
        &self,
        total: u64,
        workers: usize,
        open_one: &(dyn Fn() -> Result<Opened, String> + Sync),
        limit: Duration,
    ) -> Result<Option<String>, String> {
        let need = total.saturating_sub(self.len());
        let until = Instant::now() + limit;
        let ext: Mutex<Option<Option<String>>> = Mutex::new(None);
        let err: Mutex<Option<String>> = Mutex::new(None);
        let left = std::sync::atomic::AtomicU64::new(need);
        std::thread::scope(|s| {
            for _ in 0..workers.max(1) {
                s.spawn(|| loop {
                    if err.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
                        return;
                    }
                    if left
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                        .is_err()
                    {
                        return;
                    }
                    if super::check_interrupted().is_err() {
                        let mut e = err.lock().unwrap_or_else(|e| e.into_inner());
                        e.get_or_insert_with(|| "interrupted".into());
                        return;
                    }
                    if Instant::now() > until {
                        let mut e = err.lock().unwrap_or_else(|e| e.into_inner());
                        e.get_or_insert_with(|| {
                            format!(
                                "not all connected within {} (--connect-timeout)",
                                rtcheck_base::units::fmt_duration(limit)
                            )
                        });
                        return;
                    }
                    match open_one() {
                        Ok(o) => {
                            ext.lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert(o.extensions);
                            self.conns
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(o.conn);
                        }
                        Err(e) => {
                            err.lock()
                                .unwrap_or_else(|x| x.into_inner())
                                .get_or_insert(e);
                            return;
                        }
                    }
                });
            }
        });
        if let Some(e) = err.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(e);
        }
        Ok(ext
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .flatten())
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // Close politely where it costs nothing: a WebSocket Close, then the FIN on drop.
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        for c in conns.iter_mut().filter(|c| c.dec.is_some() && !c.closed) {
            let close = ws::client_frame(ws::OP_CLOSE, true, &1000u16.to_be_bytes(), [1, 2, 3, 4]);
            let _ = c.io.write_all(&close);
        }
        conns.clear();
    }
}

/// Events ended in `text` (a blank line: LF LF, CRLF CRLF or CR CR, as SSE allows all
/// three line ends), counted left to right without overlap so that the chunked
/// encoding's CRLF after an event is not one more; and where the unfinished tail
/// starts: the line ends after the last event's (at most 3 bytes, a blank line's start).
fn sse_event_ends(text: &[u8]) -> (u64, usize) {
    let (mut n, mut i, mut after) = (0, 0, 0);
    while i < text.len() {
        let rest = &text[i..];
        let len = if rest.starts_with(b"\r\n\r\n") {
            4
        } else if rest.starts_with(b"\n\n") || rest.starts_with(b"\r\r") {
            2
        } else {
            i += 1;
            continue;
        };
        n += 1;
        i += len;
        after = i;
    }
    let eols = text[after..]
        .iter()
        .rev()
        .take(3)
        .take_while(|&&b| b == b'\r' || b == b'\n')
        .count();
    (n, text.len() - eols)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(proto: Proto) -> Target {
        Target {
            proto,
            tls: false,
            host: "127.0.0.1".into(),
            authority: "127.0.0.1:8080".into(),
            addr: "127.0.0.1:8080".parse().unwrap(),
            path: "/ws".into(),
        }
    }

    #[test]
    fn setup_reads_wait_only_what_is_left_of_the_limit() {
        let now = Instant::now();
        let until = now + Duration::from_secs(5);
        assert_eq!(left(until, now), Some(Duration::from_secs(5)));
        assert_eq!(
            left(until, now + Duration::from_secs(4)),
            Some(Duration::from_secs(1))
        );
        // Zero would be no timeout at all: the time is up instead.
        assert_eq!(left(until, until), None);
        assert_eq!(left(until, until + Duration::from_millis(1)), None);
    }

    /// The next whole message a client sent (masked frames, as a server reads them).
    fn client_text(s: &mut std::net::TcpStream, pending: &mut Vec<u8>) -> String {
        let mut dec = ws::Decoder::default();
        let mut out = Vec::new();
        let mut buf = [0u8; 1024];
        loop {
            let used = dec.decode(pending, 1 << 16, &mut out).unwrap();
            pending.drain(..used);
            if let Some(ws::Inbound::Text(t)) = out.pop() {
                return String::from_utf8(t).unwrap();
            }
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "the client closed");
            pending.extend_from_slice(&buf[..n]);
        }
    }

    /// An Engine.IO v4 server written from the protocol's spec, on loopback: the held
    /// connection answers the open packet with the connect packet, counts only once the
    /// server confirms, answers the ping with a pong, and counts the event as a message.
    #[test]
    fn a_socketio_session_is_set_up_and_its_heartbeat_kept() {
        use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let (mut head, mut b) = (Vec::new(), [0u8; 1]);
            while !head.ends_with(b"\r\n\r\n") {
                s.read_exact(&mut b).unwrap();
                head.push(b[0]);
            }
            let head = String::from_utf8(head).unwrap();
            let key = head
                .lines()
                .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
                .unwrap();
            let accept = derive_accept_key(key.trim().as_bytes());
            let send = |s: &mut std::net::TcpStream, t: &str| {
                s.write_all(&ws::frame(ws::OP_TEXT, t.as_bytes())).unwrap()
            };
            s.write_all(format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n").as_bytes()).unwrap();
            send(
                &mut s,
                r#"0{"sid":"a","pingInterval":1000,"pingTimeout":1000}"#,
            );
            let mut pending = Vec::new();
            let connect = client_text(&mut s, &mut pending);
            send(&mut s, r#"40{"sid":"b"}"#);
            send(&mut s, "2");
            let pong = client_text(&mut s, &mut pending);
            send(&mut s, r#"42["message",{"seq":1}]"#);
            // Held until the client leaves.
            let mut b = [0u8; 256];
            while s.read(&mut b).is_ok_and(|n| n > 0) {}
            (connect, pong)
        });
        let t = Target {
            path: "/socket.io/?EIO=4&transport=websocket".into(),
            addr,
            ..target(Proto::Ws)
        };
        let app = App {
            protocol: AppProtocol::SocketIo,
            sub: Subscribe::default(),
        };
        let o = open(&t, None, false, Duration::from_secs(20), Some(&app)).unwrap();
        let h = Holder::new();
        h.conns.lock().unwrap().push(o.conn);
        let until = Instant::now() + Duration::from_secs(30);
        while (h.rx().heartbeats, h.rx().messages) != (1, 1) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let rx = h.rx();
        assert_eq!(
            (rx.heartbeats, rx.messages, rx.beats_sent),
            (1, 1, 1),
            "{rx:?}"
        );
        assert_eq!(rx.closed, 0, "{rx:?}");
        drop(h);
        assert_eq!(server.join().unwrap(), ("40".into(), "3".into()));
    }

    #[test]
    fn sse_events_end_at_lf_crlf_and_cr_blank_lines_across_reads() {
        assert_eq!(sse_event_ends(b"data: a\n\ndata: b\n\n").0, 2);
        assert_eq!(sse_event_ends(b"data: a\r\n\r\ndata: b\r\n\r\n").0, 2);
        assert_eq!(sse_event_ends(b"data: a\r\rdata: b\r\r").0, 2);
        // Chunked: the CRLF closing a chunk after an event's end is not an event.
        assert_eq!(
            sse_event_ends(b"data: a\r\n\r\n\r\n9\r\ndata: b\n\n\r\n").0,
            2
        );
        // An end split over two reads is counted once, in the second.
        let mut pending = Vec::new();
        let mut total = 0;
        for read in [&b"data: a\r\n"[..], b"\r", b"\ndata: b\r\n\r", b"\n"] {
            pending.extend_from_slice(read);
            let (n, keep) = sse_event_ends(&pending);
            total += n;
            pending.drain(..keep);
            assert!(pending.len() <= 3, "{pending:?}");
        }
        assert_eq!(total, 2);
    }

    #[test]
    fn the_deflate_offer_is_made_only_when_asked() {
        let t = target(Proto::Ws);
        assert!(request(&t, "k", true, None).contains(DEFLATE_OFFER));
        assert!(!request(&t, "k", false, None).contains("Extensions"));
        assert!(!request(&t, "k", false, None).contains("Protocol:"));
        let stomp = request(&t, "k", false, Some("v12.stomp"));
        assert!(
            stomp.contains("Sec-WebSocket-Protocol: v12.stomp\r\n"),
            "{stomp}"
        );
        assert!(request(&target(Proto::Sse), "k", false, None).contains("text/event-stream"));
    }

    #[test]
    fn heads_are_judged() {
        let check = |proto, raw: &[u8], accept| {
            let (h, _) = rtcheck_wire::http::response::parse_head(raw, Limits::head(MAX_HEAD))
                .unwrap()
                .unwrap();
            check_head(proto, &h, accept)
        };
        let ok = b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: A\r\nSec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=12\r\n\r\n";
        assert_eq!(
            check(Proto::Ws, ok, "A").unwrap().as_deref(),
            Some("permessage-deflate; server_max_window_bits=12")
        );
        assert!(check(Proto::Ws, ok, "B").is_err());
        let plain = b"HTTP/1.1 101 OK\r\nSec-WebSocket-Accept: A\r\n\r\n";
        assert_eq!(check(Proto::Ws, plain, "A").unwrap(), None);
        let e = check(Proto::Ws, b"HTTP/1.1 404 Not Found\r\n\r\n", "A").unwrap_err();
        assert!(e.contains("404"), "{e}");
        let sse = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\n";
        assert_eq!(check(Proto::Sse, sse, "").unwrap(), None);
        let html = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
        assert!(check(Proto::Sse, html, "").is_err());
    }
}
