//! HTTP/1.1 responses as a client reads them: the head (httparse, hyper's parser), how its
//! body is framed (RFC 9112 section 6.3) and a body reader fed bytes as they arrive, split
//! anywhere. Used by every client in the tree: load's hot loop (no allocation:
//! [`parse_framed`] and [`Body`]), probe, verify delivery, the bench load generator and
//! the control client ([`parse_head`] and [`Reader`]). Limits are the caller's.
//!
//! The rules: every Content-Length value must be the same run of digits; the last
//! transfer coding decides chunked (another coding: until close); chunked bodies take
//! extensions and trailers; 1xx, 204, 304 and answers to HEAD have no body; HTTP/1.0
//! closes unless it says keep-alive.

/// What a caller accepts from a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest head (status line and header fields).
    pub max_head: usize,
    /// Most header fields (at most [`MAX_HEADERS`]).
    pub max_headers: usize,
}

/// The most header fields any caller may allow (the parser's stack array).
pub const MAX_HEADERS: usize = 128;

impl Limits {
    /// 64 KiB and 100 fields: what a browser or hyper takes.
    pub const DEFAULT: Limits = Limits {
        max_head: 64 * 1024,
        max_headers: 100,
    };
    /// `max_head` bytes, the default number of fields.
    pub const fn head(max_head: usize) -> Limits {
        Limits {
            max_head,
            max_headers: Limits::DEFAULT.max_headers,
        }
    }
}

/// Largest trailer section accepted (after a chunked body).
pub const MAX_TRAILERS: usize = 16 * 1024;
/// Longest chunk-size line (size, extensions) accepted.
pub const MAX_CHUNK_LINE: usize = 1024;

/// Why bytes are not an acceptable answer. The texts are what clients print after the
/// peer's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("response head larger than {0} bytes")]
    HeadTooLarge(usize),
    #[error("more than {0} header fields")]
    TooManyHeaders(usize),
    #[error("not an HTTP response ({0})")]
    NotHttp(httparse::Error),
    #[error("bad Content-Length `{0}`")]
    BadLength(String),
    #[error("conflicting Content-Length values")]
    ConflictingLength,
    /// 101 Switching Protocols where an answer was expected ([`parse_framed`]).
    #[error("101 Switching Protocols instead of an answer")]
    Upgrade,
    #[error("bad chunk size `{0}`")]
    BadChunkSize(String),
    #[error("chunk size line longer than {MAX_CHUNK_LINE} bytes")]
    ChunkLineTooLong,
    #[error("missing CRLF after chunk data")]
    ChunkEnd,
    #[error("trailers larger than {MAX_TRAILERS} bytes")]
    TrailersTooLarge,
    #[error("truncated body: {got} of {want} bytes")]
    TruncatedBody { got: u64, want: u64 },
    #[error("truncated chunk")]
    TruncatedChunk,
    #[error("truncated chunk size")]
    TruncatedChunkSize,
    #[error("truncated trailers")]
    TruncatedTrailers,
    /// The peer closed before the head was complete ([`Answer::eof`]).
    #[error("closed before the end of the response head")]
    NoHead,
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

/// A parsed response head, for callers that look at its fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Head {
    pub status: u16,
    pub reason: String,
    /// Names lower-cased, values trimmed, in order.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The first field named `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    /// Does any `name` field list `token` (comma-separated, case-insensitive)?
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .any(|(_, v)| has_token(v.as_bytes(), token))
    }
    fn fields(&self) -> Result<Fields, Error> {
        Fields::of(self.headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())))
    }
    /// How the body ends (`head_request`: this answers a HEAD). 101 has no HTTP body.
    pub fn framing(&self, head_request: bool) -> Result<Framing, Error> {
        Ok(framing_of(self.status, &self.fields()?, head_request))
    }
}

/// What load's hot loop needs of a final head, found without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framed {
    pub status: u16,
    pub framing: Framing,
    /// The server will close (or may: HTTP/1.0 without keep-alive): do not reuse.
    pub close: bool,
    /// Bytes of `buf` the head used.
    pub len: usize,
}

/// The header fields that decide framing and reuse.
#[derive(Debug, Default)]
struct Fields {
    length: Option<u64>,
    te: bool,
    chunked: bool,
    close: bool,
    keep: bool,
}

impl Fields {
    fn of<'a>(headers: impl Iterator<Item = (&'a str, &'a [u8])>) -> Result<Fields, Error> {
        let mut f = Fields::default();
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("content-length") {
                f.length = Some(content_length(value, f.length)?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                f.te = true;
                // Only the last coding decides whether the body is chunked.
                f.chunked = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.rsplit(',').next())
                    .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
            } else if name.eq_ignore_ascii_case("connection") {
                f.close |= has_token(value, "close");
                f.keep |= has_token(value, "keep-alive");
            }
        }
        Ok(f)
    }
}

/// How a body ends (RFC 9112 6.3): none for 1xx, 204, 304 and a HEAD's answer; the last
/// transfer coding if any (chunked, or until close); else Content-Length or until close.
fn framing_of(status: u16, f: &Fields, head_request: bool) -> Framing {
    match status {
        100..=199 | 204 | 304 => Framing::None,
        _ if head_request => Framing::None,
        _ if f.te && f.chunked => Framing::Chunked,
        _ if f.te => Framing::Close,
        _ => f.length.map_or(Framing::Close, Framing::Length),
    }
}

fn has_token(v: &[u8], token: &str) -> bool {
    std::str::from_utf8(v).is_ok_and(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
}

/// One Content-Length field (a list of equal values is one value, RFC 9110 8.6); it must
/// agree with an earlier one.
fn content_length(v: &[u8], seen: Option<u64>) -> Result<u64, Error> {
    let shown = || Error::BadLength(String::from_utf8_lossy(v).trim().escape_debug().to_string());
    let s = std::str::from_utf8(v).map_err(|_| shown())?;
    let mut len = seen;
    for part in s.split(',') {
        let t = part.trim();
        if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
            return Err(shown());
        }
        let n: u64 = t.parse().map_err(|_| shown())?;
        if len.is_some_and(|m| m != n) {
            return Err(Error::ConflictingLength);
        }
        len = Some(n);
    }
    len.ok_or_else(shown)
}

/// Run httparse over `buf` within `limits`; `f` reads the parsed response.
fn parse_with<R>(
    buf: &[u8],
    limits: Limits,
    f: impl FnOnce(&httparse::Response, usize) -> Result<R, Error>,
) -> Result<Option<R>, Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let n = limits.max_headers.min(MAX_HEADERS);
    let mut r = httparse::Response::new(&mut headers[..n]);
    match r.parse(buf) {
        Ok(httparse::Status::Complete(len)) if len > limits.max_head => {
            Err(Error::HeadTooLarge(limits.max_head))
        }
        Ok(httparse::Status::Complete(len)) => f(&r, len).map(Some),
        Ok(httparse::Status::Partial) if buf.len() >= limits.max_head => {
            Err(Error::HeadTooLarge(limits.max_head))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(Error::TooManyHeaders(n)),
        Err(e) => Err(Error::NotHttp(e)),
    }
}

/// Parse the response head at the start of `buf`: `Ok(None)` while more bytes are needed,
/// else the head and the bytes it used. Any status comes back (1xx and 101 included).
pub fn parse_head(buf: &[u8], limits: Limits) -> Result<Option<(Head, usize)>, Error> {
    parse_with(buf, limits, |r, len| {
        let headers = r
            .headers
            .iter()
            .map(|h| {
                let v = String::from_utf8_lossy(h.value).trim().to_string();
                (h.name.to_ascii_lowercase(), v)
            })
            .collect();
        let head = Head {
            status: r.code.unwrap_or(0),
            reason: r.reason.unwrap_or("").to_string(),
            headers,
        };
        Ok((head, len))
    })
}

/// Parse a head and its framing without allocating (`head_request`: this answers a
/// HEAD). 1xx interim heads come back as they are (status < 200) for the caller to skip;
/// 101 is [`Error::Upgrade`]; a bad Content-Length is an error, not a guess.
pub fn parse_framed(
    buf: &[u8],
    limits: Limits,
    head_request: bool,
) -> Result<Option<Framed>, Error> {
    parse_with(buf, limits, |r, len| {
        let fields = Fields::of(r.headers.iter().map(|h| (h.name, h.value)))?;
        let status = r.code.unwrap_or(0);
        if status == 101 {
            return Err(Error::Upgrade);
        }
        let framing = framing_of(status, &fields, head_request);
        let http10 = r.version == Some(0);
        let close = framing == Framing::Close || fields.close || (http10 && !fields.keep);
        Ok(Framed {
            status,
            framing,
            close,
            len,
        })
    })
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

/// A body as it arrives: counts its bytes and, when asked, hands them out. Stops at the
/// body's end, so bytes after it are left to the caller (for a client that asked for one
/// answer, they are an error).
#[derive(Debug, Clone, Copy)]
pub struct Body {
    state: State,
    chunked: bool,
    /// Length framing: the whole body's length (for the truncation message).
    want: Option<u64>,
    /// Body bytes so far (decoded: chunk framing not counted).
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
        let want = match f {
            Framing::Length(n) => Some(n),
            _ => None,
        };
        Body {
            state,
            chunked: f == Framing::Chunked,
            want,
            bytes: 0,
        }
    }

    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// The server closed: the end of a close-delimited body, or a truncated one.
    pub fn eof(&mut self) -> Result<(), Error> {
        match self.state {
            State::UntilClose | State::Done => {
                self.state = State::Done;
                Ok(())
            }
            State::Data(_) if !self.chunked => Err(Error::TruncatedBody {
                got: self.bytes,
                want: self.want.unwrap_or(0),
            }),
            State::Data(_) | State::ChunkEnd => Err(Error::TruncatedChunk),
            State::ChunkSize => Err(Error::TruncatedChunkSize),
            State::Trailers(_) => Err(Error::TruncatedTrailers),
        }
    }

    /// Consume what it can of `buf`, counting the body's bytes; returns the bytes used.
    pub fn feed(&mut self, buf: &[u8]) -> Result<usize, Error> {
        self.feed_to(buf, None)
    }

    /// [`Body::feed`], appending the body's bytes (chunk framing removed) to `out`.
    pub fn feed_into(&mut self, buf: &[u8], out: &mut Vec<u8>) -> Result<usize, Error> {
        self.feed_to(buf, Some(out))
    }

    fn feed_to(&mut self, buf: &[u8], mut out: Option<&mut Vec<u8>>) -> Result<usize, Error> {
        let mut at = 0;
        while at < buf.len() && !self.done() {
            let used = self.step(&buf[at..], out.as_deref_mut())?;
            if used == 0 {
                break; // needs more bytes
            }
            at += used;
        }
        Ok(at)
    }

    fn step(&mut self, b: &[u8], out: Option<&mut Vec<u8>>) -> Result<usize, Error> {
        match self.state {
            State::Data(n) => {
                let k = (b.len() as u64).min(n);
                self.bytes += k;
                if let Some(o) = out {
                    o.extend_from_slice(&b[..k as usize]);
                }
                self.state = match (n - k, self.chunked) {
                    (0, true) => State::ChunkEnd,
                    (0, false) => State::Done,
                    (left, _) => State::Data(left),
                };
                Ok(k as usize)
            }
            State::ChunkSize => self.chunk_size(b),
            State::ChunkEnd => match b {
                [b'\r', b'\n', ..] => {
                    self.state = State::ChunkSize;
                    Ok(2)
                }
                [b'\r'] => Ok(0),
                _ => Err(Error::ChunkEnd),
            },
            State::Trailers(seen) => self.trailer_line(b, seen),
            State::UntilClose => {
                self.bytes += b.len() as u64;
                if let Some(o) = out {
                    o.extend_from_slice(b);
                }
                Ok(b.len())
            }
            State::Done => Ok(0),
        }
    }

    /// A chunk-size line (extensions ignored); size 0 starts the trailers.
    fn chunk_size(&mut self, b: &[u8]) -> Result<usize, Error> {
        match httparse::parse_chunk_size(b) {
            Ok(httparse::Status::Complete((used, 0))) => {
                self.state = State::Trailers(0);
                Ok(used)
            }
            Ok(httparse::Status::Complete((used, n))) => {
                self.state = State::Data(n);
                Ok(used)
            }
            Ok(httparse::Status::Partial) if b.len() > MAX_CHUNK_LINE => {
                Err(Error::ChunkLineTooLong)
            }
            Ok(httparse::Status::Partial) => Ok(0),
            Err(_) => {
                let line = b.split(|&c| c == b'\r' || c == b'\n').next().unwrap_or(b);
                let shown: String = String::from_utf8_lossy(line).chars().take(20).collect();
                Err(Error::BadChunkSize(shown.escape_debug().to_string()))
            }
        }
    }

    /// One trailer line (ignored); the empty line ends the body.
    fn trailer_line(&mut self, b: &[u8], seen: usize) -> Result<usize, Error> {
        let Some(nl) = b.iter().position(|&c| c == b'\n') else {
            return if seen + b.len() > MAX_TRAILERS {
                Err(Error::TrailersTooLarge)
            } else {
                Ok(0)
            };
        };
        let line = &b[..nl];
        if line.is_empty() || line == b"\r" {
            self.state = State::Done;
        } else if seen + nl + 1 > MAX_TRAILERS {
            return Err(Error::TrailersTooLarge);
        } else {
            self.state = State::Trailers(seen + nl + 1);
        }
        Ok(nl + 1)
    }
}

/// A body read as a stream (an event stream, an answer read to its end): bytes in as they
/// arrive, split anywhere, the body's bytes out. A partial chunk-size line or CRLF is kept
/// until its rest comes; bytes after the body's end are ignored (see [`Reader::done`]).
#[derive(Debug, Clone)]
pub struct Reader {
    body: Body,
    carry: Vec<u8>,
}

impl Reader {
    pub fn new(f: Framing) -> Reader {
        Reader {
            body: Body::new(f),
            carry: Vec::new(),
        }
    }

    /// Feed bytes; the body's bytes among them are appended to `out`.
    pub fn feed_into(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        if self.carry.is_empty() {
            let used = self.body.feed_into(bytes, out)?;
            if !self.body.done() {
                self.carry.extend_from_slice(&bytes[used..]);
            }
        } else {
            self.carry.extend_from_slice(bytes);
            let used = self.body.feed_into(&self.carry, out)?;
            self.carry.drain(..used);
        }
        if self.body.done() {
            self.carry = Vec::new();
        }
        Ok(())
    }

    /// The body ended (its length, its last chunk, or [`Reader::eof`]).
    pub fn done(&self) -> bool {
        self.body.done()
    }

    /// Body bytes so far.
    pub fn bytes(&self) -> u64 {
        self.body.bytes
    }

    /// Bytes held between feeds: a partial chunk-size line, CRLF or trailer (bounded by
    /// the chunk-line and trailer limits).
    pub fn held_bytes(&self) -> usize {
        self.carry.len()
    }

    /// The server closed: fine for a close-delimited body, else it was cut short.
    pub fn eof(&mut self) -> Result<(), Error> {
        self.body.eof()
    }
}

/// One whole answer read as it arrives, kept (small answers: control, status and session
/// requests): its head (1xx interim heads skipped), then its body. Bytes after the body
/// are ignored (one request per connection).
#[derive(Debug, Clone)]
pub struct Answer {
    limits: Limits,
    head_request: bool,
    /// Bytes not yet used: the head while it is incomplete, a partial chunk line.
    buf: Vec<u8>,
    head: Option<(Head, Body)>,
    body: Vec<u8>,
}

impl Answer {
    pub fn new(limits: Limits, head_request: bool) -> Answer {
        Answer {
            limits,
            head_request,
            buf: Vec::new(),
            head: None,
            body: Vec::new(),
        }
    }

    /// Feed bytes; true once the answer is complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<bool, Error> {
        if self.complete() {
            return Ok(true);
        }
        self.buf.extend_from_slice(bytes);
        while self.head.is_none() {
            let Some((head, used)) = parse_head(&self.buf, self.limits)? else {
                return Ok(false);
            };
            self.buf.drain(..used);
            // 1xx interim answers (100 Continue, 103 Early Hints) precede the real one.
            if !(100..200).contains(&head.status) || head.status == 101 {
                let body = Body::new(head.framing(self.head_request)?);
                self.head = Some((head, body));
            }
        }
        if let Some((_, body)) = self.head.as_mut() {
            let used = body.feed_into(&self.buf, &mut self.body)?;
            self.buf.drain(..used);
        }
        Ok(self.complete())
    }

    /// The peer closed: the end of a close-delimited body, or an answer cut short.
    pub fn eof(&mut self) -> Result<(), Error> {
        match self.head.as_mut() {
            None => Err(Error::NoHead),
            Some((_, body)) => body.eof(),
        }
    }

    pub fn complete(&self) -> bool {
        self.head.as_ref().is_some_and(|(_, b)| b.done())
    }

    /// The final head, once it came.
    pub fn head(&self) -> Option<&Head> {
        self.head.as_ref().map(|(h, _)| h)
    }

    /// The body so far (chunk framing removed).
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

#[cfg(test)]
mod tests;
