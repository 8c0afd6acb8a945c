//! The connections `bench idle --server` holds open against the user's server: blocking
//! handshakes (WebSocket, optionally offering permessage-deflate, or an SSE GET), then
//! one pump thread that reads what the server sends (so nothing piles up in the
//! server's send buffers and inflates its socket memory) and answers pings (a server
//! with a keepalive closes clients that never pong). Nothing is sent unasked.
use super::target::{Proto, Target};
use crate::sys::tls::{SyncStream, Tls};
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
}

/// The request head: the WebSocket upgrade (with the deflate offer or none), or an SSE GET.
pub fn request(t: &Target, key: &str, deflate: bool) -> String {
    let mut r = format!("GET {} HTTP/1.1\r\nHost: {}\r\n", t.path, t.authority);
    match t.proto {
        Proto::Sse => r.push_str("Accept: text/event-stream\r\nCache-Control: no-cache\r\n"),
        _ => {
            r.push_str("Upgrade: websocket\r\nConnection: Upgrade\r\n");
            r.push_str(&format!(
                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n"
            ));
            if deflate {
                r.push_str(&format!("Sec-WebSocket-Extensions: {DEFLATE_OFFER}\r\n"));
            }
        }
    }
    r.push_str("\r\n");
    r
}

/// Pure: the answer's head checked. Ok(extensions accepted) or why it is not a stream.
pub fn check_head(proto: Proto, head: &[u8], accept: &str) -> Result<Option<String>, String> {
    let mut hs = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut hs);
    match r.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err("the answer is not an HTTP response head".into()),
    }
    let code = r.code.unwrap_or(0);
    let header = |name: &str| {
        r.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
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

/// Read up to the end of the head (bounded in size; the socket's timeout bounds time).
fn read_head(io: &mut SyncStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(i + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(format!("response head over {MAX_HEAD} bytes"));
        }
        match io.read(&mut chunk) {
            Ok(0) => return Err("the server closed before answering".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("reading the answer: {e}")),
        }
    }
}

/// One connection: TCP, TLS when `tls`, the handshake, all within `limit`.
pub fn open(
    t: &Target,
    tls: Option<&Tls>,
    deflate: bool,
    limit: Duration,
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
    io.write_all(request(t, &key, deflate).as_bytes())
        .and_then(|_| io.flush())
        .map_err(|e| format!("sending the request: {e}"))?;
    let (head, rest) = read_head(&mut io)?;
    let extensions = check_head(t.proto, &head, &derive_accept_key(key.as_bytes()))?;
    io.tcp().set_nonblocking(true).map_err(|e| e.to_string())?;
    let dec = (t.proto != Proto::Sse).then(|| ws::Decoder::client(extensions.is_some()));
    Ok(Opened {
        conn: Conn {
            io,
            dec,
            pending: rest,
            closed: false,
        },
        extensions,
    })
}

impl Conn {
    /// Read what is there (at most 256 KiB a pass), answer pings, count.
    fn pump(&mut self, rx: &mut Rx) {
        if self.closed {
            return;
        }
        let mut buf = [0u8; 16 << 10];
        for _ in 0..16 {
            match self.io.read(&mut buf) {
                Ok(0) => {
                    self.closed = true;
                    rx.closed += 1;
                    return;
                }
                Ok(n) => {
                    rx.bytes += n as u64;
                    self.pending.extend_from_slice(&buf[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.closed = true;
                    rx.closed += 1;
                    return;
                }
            }
        }
        self.consume(rx);
    }

    fn consume(&mut self, rx: &mut Rx) {
        let Some(dec) = self.dec.as_mut() else {
            // SSE: count events (a blank line ends one), keep what may start the next end.
            let (ends, keep) = sse_event_ends(&self.pending);
            rx.messages += ends;
            self.pending.drain(..keep);
            return;
        };
        let mut out = Vec::new();
        match dec.decode(&self.pending, super::ws_client::MAX_MESSAGE, &mut out) {
            Ok(used) => {
                self.pending.drain(..used);
            }
            Err(_) => {
                self.closed = true;
                rx.closed += 1;
                return;
            }
        }
        for m in out {
            match m {
                ws::Inbound::Ping(p) => {
                    rx.pings += 1;
                    let pong = ws::client_frame(ws::OP_PONG, true, &p, [9, 8, 7, 6]);
                    let _ = self.io.write_all(&pong);
                    let _ = self.io.flush();
                }
                ws::Inbound::Text(_) | ws::Inbound::Binary(_) => rx.messages += 1,
                ws::Inbound::Close(_) => {
                    self.closed = true;
                    rx.closed += 1;
                }
                ws::Inbound::Pong => {}
            }
        }
    }
}

/// Connections held open, pumped by one thread until dropped.
pub struct Holder {
    conns: Arc<Mutex<Vec<Conn>>>,
    rx: Arc<Mutex<Rx>>,
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
        let stop = Arc::new(AtomicBool::new(false));
        let (c, r, s) = (conns.clone(), rx.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let mut got = Rx::default();
                for conn in c.lock().unwrap_or_else(|e| e.into_inner()).iter_mut() {
                    conn.pump(&mut got);
                }
                let mut total = r.lock().unwrap_or_else(|e| e.into_inner());
                total.bytes += got.bytes;
                total.messages += got.messages;
                total.pings += got.pings;
                total.closed += got.closed;
                drop(total);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Holder {
            conns,
            rx,
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
        assert!(request(&t, "k", true).contains(DEFLATE_OFFER));
        assert!(!request(&t, "k", false).contains("Extensions"));
        assert!(request(&target(Proto::Sse), "k", false).contains("text/event-stream"));
    }

    #[test]
    fn heads_are_judged() {
        let ok = b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: A\r\nSec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=12\r\n\r\n";
        assert_eq!(
            check_head(Proto::Ws, ok, "A").unwrap().as_deref(),
            Some("permessage-deflate; server_max_window_bits=12")
        );
        assert!(check_head(Proto::Ws, ok, "B").is_err());
        let plain = b"HTTP/1.1 101 OK\r\nSec-WebSocket-Accept: A\r\n\r\n";
        assert_eq!(check_head(Proto::Ws, plain, "A").unwrap(), None);
        let e = check_head(Proto::Ws, b"HTTP/1.1 404 Not Found\r\n\r\n", "A").unwrap_err();
        assert!(e.contains("404"), "{e}");
        let sse = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\n";
        assert_eq!(check_head(Proto::Sse, sse, "").unwrap(), None);
        let html = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
        assert!(check_head(Proto::Sse, html, "").is_err());
    }
}
