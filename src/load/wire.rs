//! HTTP/1.1 on the wire for the sweep's hot loop (pure): the request encoded once, and a
//! response reader fed the bytes as they arrive. Heads and chunk sizes are parsed by
//! httparse (hyper's parser); the framing follows RFC 9112 section 6.3. Why not hyper's
//! client here: its dispatcher (a channel, a oneshot and a body channel per request) cost
//! 4.5-5.5 us of user CPU per request against wrk's 1.1 on this host, so the load
//! generator, not the target, set the ceiling (docs/load.md). `--engine hyper` keeps it.
use super::client::Target;
use bytes::{BufMut, Bytes, BytesMut};

/// Largest response head accepted.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most response headers accepted.
const MAX_HEADERS: usize = 100;
/// Largest trailer section accepted (after a chunked body).
const MAX_TRAILERS: usize = 16 * 1024;

/// Methods that carry no body unless one is given.
fn bodyless(m: &http::Method) -> bool {
    use http::Method as M;
    [M::GET, M::HEAD, M::DELETE, M::OPTIONS, M::TRACE, M::CONNECT].contains(m)
}

/// The request's bytes, encoded once per sweep. Host comes from the URL unless the user
/// gave one; Content-Length from the body unless the user gave framing headers.
pub fn encode(t: &Target) -> Bytes {
    use http::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
    let has = |n: &http::header::HeaderName| t.headers.iter().any(|(k, _)| k == n);
    let mut b = BytesMut::with_capacity(128 + t.body.len());
    b.put_slice(t.method.as_str().as_bytes());
    b.put_u8(b' ');
    b.put_slice(
        t.path_uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .as_bytes(),
    );
    b.put_slice(b" HTTP/1.1\r\n");
    let mut header = |k: &[u8], v: &[u8]| {
        b.put_slice(k);
        b.put_slice(b": ");
        b.put_slice(v);
        b.put_slice(b"\r\n");
    };
    if !has(&HOST) {
        header(b"host", t.host_value.as_bytes());
    }
    for (k, v) in &t.headers {
        header(k.as_str().as_bytes(), v.as_bytes());
    }
    let framed = has(&CONTENT_LENGTH) || has(&TRANSFER_ENCODING);
    if !framed && (!t.body.is_empty() || !bodyless(&t.method)) {
        header(b"content-length", t.body.len().to_string().as_bytes());
    }
    b.put_slice(b"\r\n");
    b.put_slice(&t.body);
    b.freeze()
}

/// How the body after a head ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    None,
    Length(u64),
    Chunked,
    /// Read until the server closes (no length given).
    Close,
}

/// A parsed final (non-1xx) response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub framing: Framing,
    /// The server will close (or may: HTTP/1.0 without keep-alive): do not reuse.
    pub close: bool,
    /// Bytes of `buf` the head used.
    pub len: usize,
}

/// Why bytes are not an acceptable answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    Malformed,
    TooLarge,
    /// 101 Switching Protocols: not an answer this loop can use.
    Upgrade,
}

fn has_token(v: &[u8], token: &str) -> bool {
    std::str::from_utf8(v).is_ok_and(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
}

fn content_length(v: &[u8], seen: Option<u64>) -> Result<u64, WireError> {
    let s = std::str::from_utf8(v)
        .map_err(|_| WireError::Malformed)?
        .trim();
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return Err(WireError::Malformed);
    }
    let n: u64 = s.parse().map_err(|_| WireError::Malformed)?;
    // Repeated Content-Length headers must agree (RFC 9110 8.6).
    match seen {
        Some(m) if m != n => Err(WireError::Malformed),
        _ => Ok(n),
    }
}

/// Parse one response head at the start of `buf`: `Ok(None)` when more bytes are needed.
/// 1xx interim heads come back as they are (status < 200) for the caller to skip.
pub fn parse_head(buf: &[u8], head_request: bool) -> Result<Option<Head>, WireError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut headers);
    let len = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => return Err(WireError::TooLarge),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(WireError::TooLarge),
        Err(_) => return Err(WireError::Malformed),
    };
    let status = r.code.ok_or(WireError::Malformed)?;
    let http10 = r.version == Some(0);
    let (mut length, mut chunked, mut te, mut close, mut keep) = (None, false, false, false, false);
    for h in r.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = Some(content_length(h.value, length)?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            te = true;
            // Only the last coding decides whether the body is chunked.
            chunked = std::str::from_utf8(h.value)
                .ok()
                .and_then(|s| s.rsplit(',').next())
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            close |= has_token(h.value, "close");
            keep |= has_token(h.value, "keep-alive");
        }
    }
    if status == 101 {
        return Err(WireError::Upgrade);
    }
    let framing = match status {
        100..=199 | 204 | 304 => Framing::None,
        _ if head_request => Framing::None,
        _ if te && chunked => Framing::Chunked,
        _ if te => Framing::Close,
        _ => length.map_or(Framing::Close, Framing::Length),
    };
    let close = framing == Framing::Close || close || (http10 && !keep);
    Ok(Some(Head {
        status,
        framing,
        close,
        len,
    }))
}

/// Where a body reader stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Body bytes left (a Content-Length body or the current chunk).
    Data(u64),
    ChunkSize,
    /// The CRLF after a chunk's data.
    ChunkEnd,
    Trailers(usize),
    UntilClose,
    Done,
}

/// Counts a body's bytes as they arrive, without keeping them.
#[derive(Debug, Clone, Copy)]
pub struct Body {
    state: State,
    chunked: bool,
    pub bytes: u64,
}

impl Body {
    pub fn new(f: Framing) -> Body {
        let state = match f {
            Framing::None | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Data(n),
            Framing::Chunked => State::ChunkSize,
            Framing::Close => State::UntilClose,
        };
        Body {
            state,
            chunked: f == Framing::Chunked,
            bytes: 0,
        }
    }

    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// The server closed: the end of a close-delimited body, or a broken answer.
    pub fn eof(&mut self) -> Result<(), WireError> {
        match self.state {
            State::UntilClose | State::Done => {
                self.state = State::Done;
                Ok(())
            }
            _ => Err(WireError::Malformed),
        }
    }

    /// Consume what it can of `buf`; returns the bytes used. Stops at the body's end, so
    /// bytes after it are left to the caller.
    pub fn feed(&mut self, buf: &[u8]) -> Result<usize, WireError> {
        let mut at = 0;
        while at < buf.len() && !self.done() {
            let used = self.step(&buf[at..])?;
            if used == 0 {
                break; // needs more bytes
            }
            at += used;
        }
        Ok(at)
    }

    fn step(&mut self, b: &[u8]) -> Result<usize, WireError> {
        match self.state {
            State::Data(n) => {
                let k = (b.len() as u64).min(n);
                self.bytes += k;
                self.state = match (n - k, self.chunked) {
                    (0, true) => State::ChunkEnd,
                    (0, false) => State::Done,
                    (left, _) => State::Data(left),
                };
                Ok(k as usize)
            }
            State::ChunkSize => match httparse::parse_chunk_size(b) {
                Ok(httparse::Status::Complete((used, 0))) => {
                    self.state = State::Trailers(0);
                    Ok(used)
                }
                Ok(httparse::Status::Complete((used, n))) => {
                    self.state = State::Data(n);
                    Ok(used)
                }
                Ok(httparse::Status::Partial) if b.len() > 1024 => Err(WireError::Malformed),
                Ok(httparse::Status::Partial) => Ok(0),
                Err(_) => Err(WireError::Malformed),
            },
            State::ChunkEnd => match b {
                [b'\r', b'\n', ..] => {
                    self.state = State::ChunkSize;
                    Ok(2)
                }
                [b'\r'] => Ok(0),
                _ => Err(WireError::Malformed),
            },
            State::Trailers(seen) => self.trailer_line(b, seen),
            State::UntilClose => {
                self.bytes += b.len() as u64;
                Ok(b.len())
            }
            State::Done => Ok(0),
        }
    }

    /// One trailer line (ignored); the empty line ends the body.
    fn trailer_line(&mut self, b: &[u8], seen: usize) -> Result<usize, WireError> {
        let Some(nl) = b.iter().position(|&c| c == b'\n') else {
            return if seen + b.len() > MAX_TRAILERS {
                Err(WireError::TooLarge)
            } else {
                Ok(0)
            };
        };
        let line = &b[..nl];
        if line.is_empty() || line == b"\r" {
            self.state = State::Done;
        } else {
            self.state = State::Trailers(seen + nl + 1);
        }
        Ok(nl + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Head {
        parse_head(s.as_bytes(), false).unwrap().unwrap()
    }

    fn body(f: Framing, wire: &[u8]) -> (Result<usize, WireError>, Body) {
        let mut b = Body::new(f);
        (b.feed(wire), b)
    }

    #[test]
    fn content_length_head_and_body() {
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        assert_eq!(h.status, 200);
        assert_eq!(h.framing, Framing::Length(5));
        assert!(!h.close);
        assert_eq!(h.len, 38);
        let (used, b) = body(h.framing, b"helloEXTRA");
        assert_eq!(used, Ok(5));
        assert!(b.done());
        assert_eq!(b.bytes, 5);
    }

    #[test]
    fn partial_head_waits_and_huge_head_fails() {
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Ok(None)
        );
        let big = format!("HTTP/1.1 200 OK\r\nX: {}", "a".repeat(MAX_HEAD));
        assert_eq!(parse_head(big.as_bytes(), false), Err(WireError::TooLarge));
        assert_eq!(
            parse_head(b"SSH-2.0-OpenSSH\r\n\r\n", false),
            Err(WireError::Malformed)
        );
    }

    #[test]
    fn framing_rules() {
        let f = |s: &str| head(s).framing;
        assert_eq!(
            f("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n"),
            Framing::None
        );
        assert_eq!(f("HTTP/1.1 304 Not Modified\r\n\r\n"), Framing::None);
        assert_eq!(f("HTTP/1.1 100 Continue\r\n\r\n"), Framing::None);
        assert_eq!(
            f("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n"),
            Framing::Chunked
        );
        assert_eq!(
            f("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
            Framing::Close
        );
        assert_eq!(f("HTTP/1.1 200 OK\r\n\r\n"), Framing::Close);
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", true).unwrap();
        assert_eq!(h.unwrap().framing, Framing::None);
        let bad = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n";
        assert_eq!(parse_head(bad, false), Err(WireError::Malformed));
        let neg = b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n";
        assert_eq!(parse_head(neg, false), Err(WireError::Malformed));
        let same = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(
            parse_head(same, false).unwrap().unwrap().framing,
            Framing::Length(3)
        );
        let up = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
        assert_eq!(parse_head(up, false), Err(WireError::Upgrade));
    }

    #[test]
    fn connection_reuse_rules() {
        assert!(head("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").close);
        assert!(
            head("HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n")
                .close
        );
        assert!(head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").close);
        assert!(
            !head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").close
        );
        assert!(head("HTTP/1.1 200 OK\r\n\r\n").close, "close-delimited");
        assert!(!head("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").close);
    }

    #[test]
    fn chunked_body_in_pieces() {
        let wire = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
        // Fed one byte at a time, as a slow peer would send it.
        let mut b = Body::new(Framing::Chunked);
        let mut pending: Vec<u8> = Vec::new();
        let mut total = 0;
        for &c in wire.iter() {
            if b.done() {
                break;
            }
            pending.push(c);
            let used = b.feed(&pending).unwrap();
            pending.drain(..used);
            total += used;
        }
        assert!(b.done());
        assert_eq!(b.bytes, 11);
        assert_eq!(total, wire.len() - 4, "stops before the next answer");
    }

    #[test]
    fn broken_bodies() {
        assert_eq!(
            body(Framing::Chunked, b"zz\r\n").0,
            Err(WireError::Malformed)
        );
        assert_eq!(
            body(Framing::Chunked, b"2\r\nabXY").0,
            Err(WireError::Malformed)
        );
        let mut b = Body::new(Framing::Length(10));
        assert_eq!(b.feed(b"abc"), Ok(3));
        assert_eq!(b.eof(), Err(WireError::Malformed), "closed mid-body");
        let mut c = Body::new(Framing::Close);
        assert_eq!(c.feed(b"abc"), Ok(3));
        assert_eq!(c.eof(), Ok(()));
        assert_eq!(c.bytes, 3);
    }

    proptest::proptest! {
        /// Any body, chunked any way and delivered in any pieces, is counted exactly and
        /// the reader stops where the next answer begins.
        #[test]
        fn chunked_any_split(
            chunks in proptest::collection::vec(proptest::collection::vec(0u8..=255, 1..300), 0..8),
            cuts in proptest::collection::vec(1usize..64, 1..40),
        ) {
            let mut wire = Vec::new();
            for c in &chunks {
                wire.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
                wire.extend_from_slice(c);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(b"0\r\n\r\n");
            let end = wire.len();
            wire.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
            let mut b = Body::new(Framing::Chunked);
            let (mut pending, mut at, mut used_all) = (Vec::new(), 0, 0);
            for cut in cuts.iter().cycle() {
                if b.done() || at >= wire.len() {
                    break;
                }
                let to = (at + cut).min(wire.len());
                pending.extend_from_slice(&wire[at..to]);
                at = to;
                let used = b.feed(&pending).unwrap();
                pending.drain(..used);
                used_all += used;
            }
            proptest::prop_assert!(b.done());
            proptest::prop_assert_eq!(used_all, end);
            proptest::prop_assert_eq!(b.bytes, chunks.iter().map(|c| c.len() as u64).sum::<u64>());
        }

        /// A Content-Length body fed in pieces is counted exactly, whatever follows it.
        #[test]
        fn length_any_split(n in 0u64..5000, cut in 1usize..700) {
            let wire = vec![b'x'; n as usize + 100];
            let mut b = Body::new(Framing::Length(n));
            let mut used_all = 0;
            for piece in wire.chunks(cut) {
                used_all += b.feed(piece).unwrap();
                if b.done() { break; }
            }
            proptest::prop_assert!(b.done());
            proptest::prop_assert_eq!(used_all as u64, n);
            proptest::prop_assert_eq!(b.bytes, n);
        }
    }

    fn target(url: &str) -> Target {
        super::super::client::parse_url(url).unwrap()
    }

    #[test]
    fn request_encoding() {
        let t = target("http://127.0.0.1:8080/work?ms=20");
        assert_eq!(
            &encode(&t)[..],
            b"GET /work?ms=20 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\r\n"
        );
        let mut p = target("http://localhost/x");
        p.method = http::Method::POST;
        p.body = Bytes::from_static(b"{}");
        p.headers
            .push(("x-a".parse().unwrap(), "1".parse().unwrap()));
        assert_eq!(
            &encode(&p)[..],
            b"POST /x HTTP/1.1\r\nhost: localhost\r\nx-a: 1\r\ncontent-length: 2\r\n\r\n{}"
        );
        p.body = Bytes::new();
        assert!(encode(&p).ends_with(b"content-length: 0\r\n\r\n"));
        p.headers
            .push(("host".parse().unwrap(), "example".parse().unwrap()));
        let e = encode(&p);
        assert_eq!(
            e.windows(5)
                .filter(|w| w.eq_ignore_ascii_case(b"host:"))
                .count(),
            1
        );
    }
}
