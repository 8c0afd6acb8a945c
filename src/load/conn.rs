//! A virtual user's connection by engine: the wire loop (default: the request's bytes
//! written as encoded once, the answer read by `wire`) or hyper's client (`--engine
//! hyper`, feature `hyper`, kept as a cross-check of the first). Both time the head and
//! the body's end. The wire connection also carries load's one-off requests (`single`).
use super::client::{self, Answer, ErrorKind, Target};
#[cfg(feature = "hyper")]
use super::hyper_engine;
use super::wire;
use bytes::{Buf, Bytes, BytesMut};
use rtcheck_wire::http::response::{self, Limits};
use serde::{Deserialize, Serialize};
use std::pin::Pin;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// Which HTTP client the sweep's users run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The request encoded once and written as is; answers read with httparse.
    Wire,
    /// hyper's HTTP/1.1 client connection (a cross-check: about 4x the user CPU per request).
    /// Built with the `hyper` feature only; without it `load` refuses it before any request.
    Hyper,
}

impl Engine {
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Wire => "wire",
            Engine::Hyper => "hyper",
        }
    }
}

/// What every request of a sweep sends.
#[derive(Debug, Clone)]
pub struct Request {
    pub target: Target,
    pub engine: Engine,
    /// The wire engine's bytes, encoded once.
    pub bytes: Bytes,
    pub head_only: bool,
}

impl Request {
    pub fn new(target: Target, engine: Engine) -> Request {
        Request {
            bytes: wire::encode(&target),
            head_only: target.method == http::Method::HEAD,
            target,
            engine,
        }
    }
}

/// Read buffer per connection: an answer head fits, and it is reused, not reallocated.
const READ_BUF: usize = 8 * 1024;

/// A connection of the wire engine: TCP (load's own), or any stream (bench's publisher
/// over TLS).
pub struct WireConn<S = TcpStream> {
    stream: S,
    buf: BytesMut,
    /// The last answer said the server closes (or the peer did): open a new one.
    spent: bool,
}

impl WireConn<TcpStream> {
    /// Open a connection to `addr` with TCP_NODELAY on (the caller bounds it in time).
    pub async fn open(addr: std::net::SocketAddr) -> Result<WireConn, ErrorKind> {
        let s = TcpStream::connect(addr)
            .await
            .map_err(|e| client::connect_error(&e))?;
        Ok(WireConn::new(s))
    }

    /// A connection on `stream`, TCP_NODELAY set.
    pub fn new(stream: TcpStream) -> WireConn {
        let _ = stream.set_nodelay(true);
        WireConn::over(stream)
    }
}

impl<S: crate::sys::tls::OnTcp> WireConn<S> {
    /// Whether the next request may go here and the peer has not closed this idle
    /// connection (a server's keep-alive timeout ends it between requests): a non-blocking
    /// read on the TCP socket (under TLS too), for callers with time between requests,
    /// not the sweep's hot loop.
    pub fn open_still(&self) -> bool {
        !self.spent && idle_open(self.stream.tcp())
    }
}

/// Whether nothing is readable on an idle socket (no FIN, no stray bytes): a
/// non-blocking read, which may take a byte, after which the connection is not reused.
fn idle_open(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(s.try_read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> WireConn<S> {
    /// A connection on `stream` as it is (its socket options set by the caller).
    pub fn over(stream: S) -> WireConn<S> {
        WireConn {
            stream,
            buf: BytesMut::with_capacity(READ_BUF),
            spent: false,
        }
    }

    /// The stream under it.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// Whether the next request may go on this connection (no `Connection: close` yet).
    pub fn reusable(&self) -> bool {
        !self.spent
    }

    /// Write `bytes` (one request) and read its whole answer, unbounded in time (the caller
    /// bounds it). `keep` gets the answer's bytes as they came (final head and body).
    pub async fn exchange(
        &mut self,
        bytes: &[u8],
        head_only: bool,
        keep: Option<&mut Vec<u8>>,
    ) -> Result<Answer, ErrorKind> {
        wire_exchange(self, bytes, head_only, keep).await
    }
}

pub enum UserConn {
    Wire(WireConn),
    #[cfg(feature = "hyper")]
    Hyper(hyper_engine::Conn),
}

impl UserConn {
    /// Whether the next request may go on this connection.
    pub fn reusable(&self) -> bool {
        match self {
            UserConn::Wire(c) => c.reusable(),
            #[cfg(feature = "hyper")]
            UserConn::Hyper(c) => c.reusable(),
        }
    }
}

/// Open a connection (TCP_NODELAY on) before `timer` fires.
pub async fn connect(r: &Request, timer: Pin<&mut Sleep>) -> Result<UserConn, ErrorKind> {
    match r.engine {
        #[cfg(feature = "hyper")]
        Engine::Hyper => hyper_engine::connect_by(&r.target, timer)
            .await
            .map(UserConn::Hyper),
        // Refused by cmd/load.rs before any request; an error here, never a panic.
        #[cfg(not(feature = "hyper"))]
        Engine::Hyper => Err(ErrorKind::Protocol),
        Engine::Wire => {
            tokio::select! {
                biased;
                c = WireConn::open(r.target.addr) => c.map(UserConn::Wire),
                _ = timer => Err(ErrorKind::Timeout),
            }
        }
    }
}

/// One request and its whole answer before `timer` fires. After an error the connection
/// must be dropped: a late answer would be read as the next one's.
pub async fn exchange(
    c: &mut UserConn,
    r: &Request,
    timer: Pin<&mut Sleep>,
) -> Result<Answer, ErrorKind> {
    match c {
        #[cfg(feature = "hyper")]
        UserConn::Hyper(c) => hyper_engine::exchange(c, &r.target, timer).await,
        UserConn::Wire(c) => {
            tokio::select! {
                biased;
                a = wire_exchange(c, &r.bytes, r.head_only, None) => a,
                _ = timer => Err(ErrorKind::Timeout),
            }
        }
    }
}

/// One attempt on `conn` (connecting first when needed) before `timer` fires; the
/// connection is dropped after an error (a late answer would be read as the next one's)
/// and replaced after an answer that closes it.
pub async fn attempt(
    conn: &mut Option<UserConn>,
    r: &Request,
    mut timer: Pin<&mut Sleep>,
) -> Result<Answer, ErrorKind> {
    if !conn.as_ref().is_some_and(UserConn::reusable) {
        *conn = Some(connect(r, timer.as_mut()).await?);
    }
    let c = conn.as_mut().expect("connected above");
    let a = exchange(c, r, timer).await;
    if a.is_err() {
        *conn = None;
    }
    a
}

/// Read more bytes; 0 means the peer closed.
async fn fill<S: tokio::io::AsyncRead + Unpin>(c: &mut WireConn<S>) -> Result<usize, ErrorKind> {
    c.buf.reserve(READ_BUF);
    c.stream
        .read_buf(&mut c.buf)
        .await
        .map_err(|_| ErrorKind::Protocol)
}

async fn wire_exchange<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    c: &mut WireConn<S>,
    bytes: &[u8],
    head_only: bool,
    mut keep: Option<&mut Vec<u8>>,
) -> Result<Answer, ErrorKind> {
    c.stream
        .write_all(bytes)
        .await
        .map_err(|_| ErrorKind::Protocol)?;
    // Over TLS the request may still sit in rustls' buffer (a read never flushes it); a
    // no-op on plain TCP.
    c.stream.flush().await.map_err(|_| ErrorKind::Protocol)?;
    let head = loop {
        match response::parse_framed(&c.buf, Limits::DEFAULT, head_only) {
            // 1xx interim answers (100 Continue, 103 Early Hints) precede the real one.
            Ok(Some(h)) if h.status < 200 => c.buf.advance(h.len),
            Ok(Some(h)) => break h,
            Ok(None) if fill(c).await? == 0 => return Err(ErrorKind::Protocol),
            Ok(None) => {}
            Err(_) => return Err(ErrorKind::Protocol),
        }
    };
    let at = Instant::now();
    if let Some(k) = keep.as_deref_mut() {
        k.extend_from_slice(&c.buf[..head.len]);
    }
    c.buf.advance(head.len);
    let mut body = response::Body::new(head.framing);
    loop {
        let used = body.feed(&c.buf).map_err(|_| ErrorKind::Protocol)?;
        if let Some(k) = keep.as_deref_mut() {
            k.extend_from_slice(&c.buf[..used]);
        }
        c.buf.advance(used);
        if body.done() {
            break;
        }
        if fill(c).await? == 0 {
            body.eof().map_err(|_| ErrorKind::Protocol)?;
        }
    }
    // Nothing was asked for beyond this answer (no pipelining): extra bytes mean the
    // framing disagrees with the server's, so the connection cannot be trusted.
    c.spent = head.close || !c.buf.is_empty();
    if !c.buf.is_empty() {
        return Err(ErrorKind::Protocol);
    }
    Ok(Answer {
        status: head.status,
        head: at,
        body_bytes: body.bytes as usize,
    })
}
